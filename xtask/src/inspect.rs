//! Checks a built binary before it is packaged: the right format and CPU, and nothing it
//! loads at run time that a user's machine might lack.
//!
//! - Linux (ELF): the target's machine, no `PT_INTERP` (no dynamic loader) and no
//!   `DT_NEEDED` (no shared library), so it runs in an empty container.
//! - macOS (Mach-O): the target's CPU, every `LC_LOAD_DYLIB` (and its weak, re-export,
//!   lazy and upward twins) under `/usr/lib/` or `/System/Library/Frameworks/`, and on arm64
//!   an `LC_CODE_SIGNATURE`, without which Apple silicon refuses to start it.
//!
//! A small reader of the few header fields involved, rather than a general object-file
//! crate: every offset is bounds-checked, so truncated or hostile bytes give an error, never
//! a panic. Both targets' formats are read little-endian, as all four targets are.

use anyhow::{Context, Result, bail, ensure};

use crate::target::{Arch, Target};

/// What the check found, for the progress line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Verified {
    /// One line: the format and what was checked.
    pub(crate) summary: String,
}

/// Checks `bytes` as the binary for `target`; the error says what is wrong.
pub(crate) fn verify(bytes: &[u8], target: Target) -> Result<Verified> {
    if target.is_darwin() {
        verify_macho(bytes, target.arch())
    } else {
        verify_elf(bytes, target.arch())
    }
}

/// Fails when `bytes` contain any of `paths` (the build machine's directories): a path
/// there means the path remapping missed something and the build is not reproducible
/// elsewhere.
pub(crate) fn check_no_build_paths(bytes: &[u8], paths: &[String]) -> Result<()> {
    for path in paths.iter().filter(|p| p.len() > 1) {
        if let Some(at) = find(bytes, path.as_bytes()) {
            let end = (at + 120).min(bytes.len());
            let context = String::from_utf8_lossy(&bytes[at..end]);
            let context = context.split('\0').next().unwrap_or_default();
            bail!(
                "the binary contains the build machine path {path} (at byte {at}: {context:?}); add a --remap-path-prefix / -ffile-prefix-map for it in xtask/src/compile.rs"
            );
        }
    }
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn u16_at(bytes: &[u8], at: usize) -> Result<u16> {
    let raw = bytes
        .get(at..at + 2)
        .with_context(|| format!("truncated: no 2 bytes at offset {at}"))?;
    Ok(u16::from_le_bytes([raw[0], raw[1]]))
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32> {
    let raw = bytes
        .get(at..at + 4)
        .with_context(|| format!("truncated: no 4 bytes at offset {at}"))?;
    let mut word = [0; 4];
    word.copy_from_slice(raw);
    Ok(u32::from_le_bytes(word))
}

fn u64_at(bytes: &[u8], at: usize) -> Result<u64> {
    let raw = bytes
        .get(at..at + 8)
        .with_context(|| format!("truncated: no 8 bytes at offset {at}"))?;
    let mut word = [0; 8];
    word.copy_from_slice(raw);
    Ok(u64::from_le_bytes(word))
}

/// A file offset or size read from the file, as an index.
fn index(value: u64) -> Result<usize> {
    usize::try_from(value).context("an offset does not fit in memory")
}

/// The NUL-terminated string at `at`.
fn c_string(bytes: &[u8], at: usize) -> Result<String> {
    let tail = bytes
        .get(at..)
        .with_context(|| format!("truncated: no string at offset {at}"))?;
    let end = tail
        .iter()
        .position(|&b| b == 0)
        .with_context(|| format!("unterminated string at offset {at}"))?;
    Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;

/// One program header's fields that the check reads.
struct Segment {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

fn verify_elf(bytes: &[u8], arch: Arch) -> Result<Verified> {
    ensure!(
        bytes.starts_with(b"\x7fELF"),
        "not an ELF file (a Linux target must build an ELF executable)"
    );
    ensure!(
        bytes.get(4) == Some(&2) && bytes.get(5) == Some(&1),
        "not a 64-bit little-endian ELF file"
    );
    let machine = u16_at(bytes, 18)?;
    let expected = match arch {
        Arch::X86_64 => EM_X86_64,
        Arch::Aarch64 => EM_AARCH64,
    };
    ensure!(
        machine == expected,
        "ELF machine {machine} ({}), but the target needs {expected} ({})",
        elf_machine_name(machine),
        elf_machine_name(expected)
    );
    let phoff = index(u64_at(bytes, 32)?)?;
    let phentsize = usize::from(u16_at(bytes, 54)?);
    let phnum = usize::from(u16_at(bytes, 56)?);
    ensure!(phentsize >= 56, "ELF program headers of {phentsize} bytes");
    let mut segments = Vec::with_capacity(phnum);
    for i in 0..phnum {
        let at = phoff + i * phentsize;
        segments.push(Segment {
            kind: u32_at(bytes, at)?,
            offset: u64_at(bytes, at + 8)?,
            vaddr: u64_at(bytes, at + 16)?,
            filesz: u64_at(bytes, at + 32)?,
        });
    }
    if let Some(interp) = segments.iter().find(|s| s.kind == PT_INTERP) {
        let loader = c_string(bytes, index(interp.offset)?).unwrap_or_default();
        bail!(
            "not static: it asks for the dynamic loader {loader} (PT_INTERP); build the musl target through cargo zigbuild"
        );
    }
    let needed = needed_libraries(bytes, &segments)?;
    ensure!(
        needed.is_empty(),
        "not static: it needs the shared libraries {} (DT_NEEDED); build the musl target through cargo zigbuild",
        needed.join(", ")
    );
    Ok(Verified {
        summary: format!(
            "ELF {}, static (no PT_INTERP, no DT_NEEDED)",
            elf_machine_name(machine)
        ),
    })
}

fn elf_machine_name(machine: u16) -> &'static str {
    match machine {
        EM_X86_64 => "x86_64",
        EM_AARCH64 => "aarch64",
        _ => "another CPU",
    }
}

/// The names in the dynamic section's `DT_NEEDED` entries (empty without one).
fn needed_libraries(bytes: &[u8], segments: &[Segment]) -> Result<Vec<String>> {
    let Some(dynamic) = segments.iter().find(|s| s.kind == PT_DYNAMIC) else {
        return Ok(Vec::new());
    };
    let start = index(dynamic.offset)?;
    let mut needed = Vec::new();
    let mut strtab = None;
    for at in (start..start + index(dynamic.filesz)?).step_by(16) {
        let tag = u64_at(bytes, at)?;
        let value = u64_at(bytes, at + 8)?;
        match tag {
            DT_NULL => break,
            DT_NEEDED => needed.push(value),
            DT_STRTAB => strtab = Some(value),
            _ => {}
        }
    }
    // The string table is named by address; the loadable segment holding it gives the
    // offset. Without one, the count alone still fails the check.
    let table = strtab.and_then(|addr| {
        segments
            .iter()
            .find(|s| s.kind == PT_LOAD && s.vaddr <= addr && addr < s.vaddr + s.filesz)
            .map(|s| addr - s.vaddr + s.offset)
    });
    Ok(needed
        .into_iter()
        .map(|name| match table {
            Some(table) => index(table + name)
                .and_then(|at| c_string(bytes, at))
                .unwrap_or_else(|_| format!("#{name}")),
            None => format!("#{name}"),
        })
        .collect())
}

const MH_MAGIC_64: u32 = 0xfeed_facf;
const FAT_MAGIC: u32 = 0xcafe_babe;
const CPU_TYPE_X86_64: u32 = 0x0100_0007;
const CPU_TYPE_ARM64: u32 = 0x0100_000c;
const LC_LOAD_DYLIB: u32 = 0xc;
const LC_LOAD_WEAK_DYLIB: u32 = 0x8000_0018;
const LC_REEXPORT_DYLIB: u32 = 0x8000_001f;
const LC_LAZY_LOAD_DYLIB: u32 = 0x20;
const LC_LOAD_UPWARD_DYLIB: u32 = 0x8000_0023;
const LC_CODE_SIGNATURE: u32 = 0x1d;

/// Where a macOS binary may load code from: what every Mac has.
const SYSTEM_PREFIXES: [&str; 2] = ["/usr/lib/", "/System/Library/Frameworks/"];

fn verify_macho(bytes: &[u8], arch: Arch) -> Result<Verified> {
    let magic = u32_at(bytes, 0).context("not a Mach-O file")?;
    ensure!(
        magic != FAT_MAGIC && magic.swap_bytes() != FAT_MAGIC,
        "a universal (fat) Mach-O file; each darwin target must be a thin binary for its CPU"
    );
    ensure!(
        magic == MH_MAGIC_64,
        "not a 64-bit Mach-O file (magic {magic:#x}); a darwin target must build a Mach-O executable"
    );
    let cpu = u32_at(bytes, 4)?;
    let expected = match arch {
        Arch::X86_64 => CPU_TYPE_X86_64,
        Arch::Aarch64 => CPU_TYPE_ARM64,
    };
    ensure!(
        cpu == expected,
        "Mach-O CPU type {cpu:#x} ({}), but the target needs {expected:#x} ({})",
        macho_cpu_name(cpu),
        macho_cpu_name(expected)
    );
    let ncmds = u32_at(bytes, 16)?;
    let mut at = 32;
    let mut dylibs = Vec::new();
    let mut signed = false;
    for _ in 0..ncmds {
        let cmd = u32_at(bytes, at)?;
        let size = index(u64::from(u32_at(bytes, at + 4)?))?;
        ensure!(size >= 8, "a load command of {size} bytes at offset {at}");
        match cmd {
            LC_LOAD_DYLIB | LC_LOAD_WEAK_DYLIB | LC_REEXPORT_DYLIB | LC_LAZY_LOAD_DYLIB
            | LC_LOAD_UPWARD_DYLIB => {
                let name_offset = index(u64::from(u32_at(bytes, at + 8)?))?;
                ensure!(name_offset < size, "a dylib command's name lies outside it");
                dylibs.push(c_string(bytes, at + name_offset)?);
            }
            LC_CODE_SIGNATURE => signed = true,
            _ => {}
        }
        at += size;
    }
    let foreign: Vec<&String> = dylibs
        .iter()
        .filter(|d| !SYSTEM_PREFIXES.iter().any(|p| d.starts_with(p)))
        .collect();
    ensure!(
        foreign.is_empty(),
        "it loads libraries a stock Mac lacks: {} (only {} are allowed)",
        foreign
            .iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        SYSTEM_PREFIXES.join(" and ")
    );
    ensure!(
        signed || arch != Arch::Aarch64,
        "no LC_CODE_SIGNATURE: Apple silicon refuses to run an unsigned arm64 binary (zig's linker signs ad hoc; was it linked by another?)"
    );
    Ok(Verified {
        summary: format!(
            "Mach-O {}, loads only system libraries ({}){}",
            macho_cpu_name(cpu),
            dylibs.len(),
            if signed { ", signed" } else { "" }
        ),
    })
}

fn macho_cpu_name(cpu: u32) -> &'static str {
    match cpu {
        CPU_TYPE_X86_64 => "x86_64",
        CPU_TYPE_ARM64 => "arm64",
        _ => "another CPU",
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A minimal 64-bit little-endian ELF: header, the given program headers (type,
    /// offset, vaddr, size) and whatever `tail` holds from offset 0x200.
    fn elf(machine: u16, segments: &[(u32, u64, u64, u64)], tail: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0u8; 0x200];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2;
        bytes[5] = 1;
        bytes[18..20].copy_from_slice(&machine.to_le_bytes());
        bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
        bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
        bytes[56..58].copy_from_slice(&(segments.len() as u16).to_le_bytes());
        for (i, (kind, offset, vaddr, size)) in segments.iter().enumerate() {
            let at = 64 + i * 56;
            bytes[at..at + 4].copy_from_slice(&kind.to_le_bytes());
            bytes[at + 8..at + 16].copy_from_slice(&offset.to_le_bytes());
            bytes[at + 16..at + 24].copy_from_slice(&vaddr.to_le_bytes());
            bytes[at + 32..at + 40].copy_from_slice(&size.to_le_bytes());
        }
        bytes.extend_from_slice(tail);
        bytes
    }

    fn dynamic(entries: &[(u64, u64)]) -> Vec<u8> {
        entries
            .iter()
            .flat_map(|(tag, value)| [tag.to_le_bytes(), value.to_le_bytes()].concat())
            .collect()
    }

    #[test]
    fn a_static_elf_for_the_right_machine_passes() {
        let bytes = elf(EM_X86_64, &[(PT_LOAD, 0, 0, 0x200)], &[]);
        let verified = verify(&bytes, Target::LinuxAmd64).expect("static");
        assert!(verified.summary.contains("x86_64"), "{verified:?}");
        // A static-pie has a dynamic section, with relocations but nothing needed.
        let tail = dynamic(&[(7, 0), (DT_NULL, 0)]);
        let bytes = elf(EM_AARCH64, &[(PT_DYNAMIC, 0x200, 0, 32)], &tail);
        verify(&bytes, Target::LinuxArm64).expect("static-pie");
    }

    #[test]
    fn an_elf_with_a_loader_or_a_shared_library_fails() {
        let mut tail = b"/lib/ld-musl-x86_64.so.1\0".to_vec();
        tail.resize(32, 0);
        let bytes = elf(EM_X86_64, &[(PT_INTERP, 0x200, 0, 25)], &tail);
        let err = verify(&bytes, Target::LinuxAmd64).unwrap_err().to_string();
        assert!(
            err.contains("dynamic loader /lib/ld-musl-x86_64.so.1"),
            "{err}"
        );

        // DT_NEEDED "libc.so.6", its string table in a PT_LOAD at address 0x1000.
        let mut tail = dynamic(&[(DT_NEEDED, 1), (DT_STRTAB, 0x1000 + 48), (DT_NULL, 0)]);
        tail.extend_from_slice(b"\0libc.so.6\0");
        let bytes = elf(
            EM_X86_64,
            &[
                (PT_DYNAMIC, 0x200, 0x1000, 48),
                (PT_LOAD, 0x200, 0x1000, 64),
            ],
            &tail,
        );
        let err = verify(&bytes, Target::LinuxAmd64).unwrap_err().to_string();
        assert!(
            err.contains("shared libraries libc.so.6 (DT_NEEDED)"),
            "{err}"
        );
    }

    #[test]
    fn an_elf_for_another_machine_or_format_fails() {
        let bytes = elf(EM_X86_64, &[], &[]);
        let err = verify(&bytes, Target::LinuxArm64).unwrap_err().to_string();
        assert!(err.contains("ELF machine 62 (x86_64)"), "{err}");
        assert!(err.contains("183 (aarch64)"), "{err}");
        let err = verify(b"#!/bin/sh\n", Target::LinuxAmd64).unwrap_err();
        assert!(err.to_string().contains("not an ELF file"), "{err}");
        // Truncated anywhere: an error, never a panic.
        for cut in 0..bytes.len().min(200) {
            let _ = verify(&bytes[..cut], Target::LinuxAmd64);
            let _ = verify(&bytes[..cut], Target::DarwinArm64);
        }
    }

    /// This test program itself: on a glibc host, dynamically linked, so it must fail.
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
    fn a_glibc_dynamic_executable_fails_the_static_check() {
        let exe = std::env::current_exe().expect("test binary path");
        let bytes = std::fs::read(exe).expect("read the test binary");
        let err = verify(&bytes, Target::LinuxAmd64).unwrap_err().to_string();
        assert!(err.starts_with("not static"), "{err}");
    }

    /// A minimal thin Mach-O with the given load commands (command, payload after the
    /// 8-byte command header).
    fn macho(cpu: u32, commands: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&MH_MAGIC_64.to_le_bytes());
        bytes.extend_from_slice(&cpu.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(&(commands.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&[0; 12]);
        for (cmd, payload) in commands {
            let size = (8 + payload.len()).next_multiple_of(8);
            bytes.extend_from_slice(&cmd.to_le_bytes());
            bytes.extend_from_slice(&(size as u32).to_le_bytes());
            bytes.extend_from_slice(payload);
            bytes.resize(bytes.len() + size - 8 - payload.len(), 0);
        }
        bytes
    }

    fn dylib(cmd: u32, name: &str) -> (u32, Vec<u8>) {
        // name offset (24: after the command header and the dylib struct), timestamp,
        // current and compatibility versions, then the name.
        let mut payload = Vec::new();
        payload.extend_from_slice(&24u32.to_le_bytes());
        payload.extend_from_slice(&[0; 12]);
        payload.extend_from_slice(name.as_bytes());
        payload.push(0);
        (cmd, payload)
    }

    fn signature() -> (u32, Vec<u8>) {
        (LC_CODE_SIGNATURE, vec![0; 8])
    }

    #[test]
    fn a_signed_macho_loading_system_libraries_passes() {
        let bytes = macho(
            CPU_TYPE_ARM64,
            &[
                dylib(LC_LOAD_DYLIB, "/usr/lib/libSystem.B.dylib"),
                dylib(
                    LC_LOAD_DYLIB,
                    "/System/Library/Frameworks/Security.framework/Versions/A/Security",
                ),
                signature(),
            ],
        );
        let verified = verify(&bytes, Target::DarwinArm64).expect("fine");
        assert_eq!(
            verified.summary,
            "Mach-O arm64, loads only system libraries (2), signed"
        );
        // x86_64 needs no signature.
        let bytes = macho(
            CPU_TYPE_X86_64,
            &[dylib(LC_LOAD_DYLIB, "/usr/lib/libSystem.B.dylib")],
        );
        verify(&bytes, Target::DarwinAmd64).expect("fine");
    }

    #[test]
    fn a_macho_that_a_stock_mac_cannot_run_fails() {
        let system = dylib(LC_LOAD_DYLIB, "/usr/lib/libSystem.B.dylib");
        let bytes = macho(CPU_TYPE_ARM64, std::slice::from_ref(&system));
        let err = verify(&bytes, Target::DarwinArm64).unwrap_err().to_string();
        assert!(err.starts_with("no LC_CODE_SIGNATURE"), "{err}");

        let bytes = macho(
            CPU_TYPE_ARM64,
            &[
                system.clone(),
                dylib(LC_LOAD_WEAK_DYLIB, "/opt/homebrew/lib/libgit2.1.9.dylib"),
                signature(),
            ],
        );
        let err = verify(&bytes, Target::DarwinArm64).unwrap_err().to_string();
        assert!(
            err.contains("libraries a stock Mac lacks: /opt/homebrew/lib/libgit2.1.9.dylib"),
            "{err}"
        );

        let bytes = macho(CPU_TYPE_X86_64, &[system.clone(), signature()]);
        let err = verify(&bytes, Target::DarwinArm64).unwrap_err().to_string();
        assert!(err.contains("CPU type 0x1000007 (x86_64)"), "{err}");

        let mut fat = macho(CPU_TYPE_ARM64, &[system, signature()]);
        fat[..4].copy_from_slice(&FAT_MAGIC.to_be_bytes());
        let err = verify(&fat, Target::DarwinArm64).unwrap_err().to_string();
        assert!(err.contains("universal"), "{err}");

        let elf = elf(EM_AARCH64, &[], &[]);
        let err = verify(&elf, Target::DarwinArm64).unwrap_err().to_string();
        assert!(err.contains("not a 64-bit Mach-O"), "{err}");

        for cut in 0..bytes.len() {
            let _ = verify(&bytes[..cut], Target::DarwinArm64);
        }
    }

    #[test]
    fn a_build_machine_path_in_the_binary_fails() {
        let bytes = b"\0src/lib.rs\0/home/ci/metron/src/main.rs\0";
        check_no_build_paths(bytes, &["/elsewhere".into()]).expect("absent");
        let err = check_no_build_paths(bytes, &["/home/ci/metron".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"/home/ci/metron/src/main.rs\""), "{err}");
    }

    /// The binaries `cargo xtask dist` built, when it has run: the real check on real
    /// files. CI sets METRON_DIST_BUILT after running it (`1` for all four targets, or the
    /// triples it built, comma-separated), so under CI=true a missing one fails.
    #[test]
    fn the_binaries_the_dist_build_produced_pass() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        let built = std::env::var("METRON_DIST_BUILT").unwrap_or_default();
        for target in Target::ALL {
            let must_exist =
                in_ci && (built == "1" || built.split(',').any(|t| t.trim() == target.triple()));
            let path = target_dir
                .join(target.triple())
                .join("release")
                .join("metron");
            let Ok(bytes) = std::fs::read(&path) else {
                assert!(
                    !must_exist,
                    "METRON_DIST_BUILT={built} but {} is missing; run `cargo xtask dist` first",
                    path.display()
                );
                eprintln!(
                    "SKIP {target}: no {} (run `cargo xtask dist`)",
                    path.display()
                );
                continue;
            };
            let verified =
                verify(&bytes, target).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            eprintln!("{target}: {}", verified.summary);
            // And no other target's check accepts it.
            for other in Target::ALL.into_iter().filter(|&t| t != target) {
                assert!(verify(&bytes, other).is_err(), "{target} passes as {other}");
            }
        }
    }
}
