//! Stamps the binary with the git commit it was built from, read straight from `.git`
//! so building needs no git binary. Outside a checkout the stamp is simply absent.
//!
//! On glibc Linux it also packs the binary's relative relocations (RELR), when that
//! cannot cost the machine it is built on anything: see `pack_relative_relocations`.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    pack_relative_relocations();
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let git = manifest.join(".git");
    println!("cargo:rerun-if-changed=build.rs");
    if let Some(commit) = head_commit(&git) {
        println!(
            "cargo:rustc-env=METRON_BUILD_COMMIT={}",
            &commit[..commit.len().min(12)]
        );
    } else {
        println!("cargo:rustc-env=METRON_BUILD_COMMIT=");
    }
}

fn head_commit(git: &Path) -> Option<String> {
    let head_path = git.join("HEAD");
    println!("cargo:rerun-if-changed={}", head_path.display());
    let head = fs::read_to_string(&head_path).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned());
    };
    let ref_path = git.join(reference);
    println!("cargo:rerun-if-changed={}", ref_path.display());
    if let Ok(commit) = fs::read_to_string(&ref_path) {
        return Some(commit.trim().to_owned());
    }
    let packed_path = git.join("packed-refs");
    println!("cargo:rerun-if-changed={}", packed_path.display());
    let packed = fs::read_to_string(packed_path).ok()?;
    packed.lines().find_map(|line| {
        let (commit, name) = line.split_once(' ')?;
        (name == reference).then(|| commit.to_owned())
    })
}

/// A glibc Linux binary is position-independent, so every pointer in its tables (the
/// grammars' symbol names, vtables, the root certificates) carries a 24-byte dynamic
/// relocation: about 420 KB of the binary. `-z pack-relative-relocs` stores them as a
/// bitmap instead (DT_RELR), which glibc understands from 2.36 on; the linker then
/// records that need, so an older glibc refuses the binary by name instead of crashing.
///
/// It is used only where that cannot hurt: a native build (the binary runs against the
/// glibc it was linked with) whose glibc is 2.36 or later. Such a binary already needs
/// glibc 2.34 for its start-up code. Cross builds, musl and macOS are left alone (the
/// static release binaries have no dynamic relocations), as is a build with its own
/// linker (`RUSTC_LINKER`: zig or a sysroot may link against an older glibc than this
/// script sees), and `METRON_NO_RELR=1` turns it off for a binary meant for older
/// systems.
fn pack_relative_relocations() {
    println!("cargo:rerun-if-env-changed=METRON_NO_RELR");
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let wanted = env("CARGO_CFG_TARGET_OS") == "linux"
        && env("CARGO_CFG_TARGET_ENV") == "gnu"
        && env("TARGET") == env("HOST")
        && env("RUSTC_LINKER").is_empty()
        && env("METRON_NO_RELR").is_empty();
    if wanted && host_glibc().is_some_and(|version| version >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The glibc this build script runs on, which for a native build is the one the binary
/// links against.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn host_glibc() -> Option<(u32, u32)> {
    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }
    // SAFETY: glibc returns a pointer to a static, NUL-terminated version string.
    let version = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = version.to_str().ok()?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn host_glibc() -> Option<(u32, u32)> {
    None
}
