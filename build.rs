//! Stamps the binary with the git commit it was built from, read straight from `.git`
//! so building needs no git binary. Outside a checkout the stamp is simply absent.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
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
