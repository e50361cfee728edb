//! `cargo xtask`: metron's release tooling, in Rust so it runs wherever cargo does.
//!
//! - `cargo xtask dist [--target TRIPLE ...]` builds the release binaries (all four
//!   targets by default), checks each one (static ELF, or Mach-O loading only system
//!   libraries and signed), and writes into `dist/` a reproducible
//!   `metron_<version>_<os>_<arch>.tar.gz`, its SPDX SBOM `.spdx.json`, and `SHA256SUMS`.
//! - `cargo xtask check-dist [DIR]` re-checks what is in `dist/` (or DIR).
//!
//! Cross builds need zig and cargo-zigbuild (`pip install ziglang cargo-zigbuild`) and the
//! Rust targets (`rustup target add TRIPLE`). The modules, in the order `dist` uses them:
//! [`target`], [`compile`], [`inspect`], [`package`], [`sbom`], [`checksums`], [`dist`].

mod checksums;
mod compile;
mod dist;
mod inspect;
mod package;
mod sbom;
mod target;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::target::Target;

const USAGE: &str = "\
usage: cargo xtask dist [--target TRIPLE ...]   build, check and package into dist/
       cargo xtask check-dist [DIR]             re-check the archives, SBOMs and SHA256SUMS

targets: x86_64-unknown-linux-musl, aarch64-unknown-linux-musl, aarch64-apple-darwin,
x86_64-apple-darwin (all four when none is given). SOURCE_DATE_EPOCH defaults to the
HEAD commit time.";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let Some((command, rest)) = args.split_first() else {
        println!("{USAGE}");
        return Ok(());
    };
    match command.as_str() {
        "dist" => dist::dist(&parse_targets(rest)?),
        "check-dist" => match rest {
            [] => dist::check_dist(None),
            [dir] => dist::check_dist(Some(PathBuf::from(dir))),
            _ => bail!("check-dist takes at most one directory\n{USAGE}"),
        },
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown command `{other}`\n{USAGE}"),
    }
}

/// The targets named by `--target TRIPLE` (or `--target=TRIPLE`), in the order given,
/// each once; all four when none is.
fn parse_targets(args: &[String]) -> Result<Vec<Target>> {
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let triple = match arg.strip_prefix("--target=") {
            Some(triple) => triple,
            None if arg == "--target" => match args.next() {
                Some(triple) => triple.as_str(),
                None => bail!("--target needs a triple\n{USAGE}"),
            },
            None => bail!("unexpected argument `{arg}`\n{USAGE}"),
        };
        let target = Target::from_triple(triple)?;
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    Ok(if targets.is_empty() {
        Target::ALL.to_vec()
    } else {
        targets
    })
}

/// One progress line on stderr.
pub(crate) fn progress(message: &str) {
    eprintln!("xtask: {message}");
}

/// `1m52s` or `8.3s`.
pub(crate) fn elapsed(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!(
            "{}m{:02}s",
            duration.as_secs() / 60,
            duration.as_secs() % 60
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn targets_default_to_all_and_parse_both_spellings() {
        assert_eq!(parse_targets(&[]).expect("none"), Target::ALL.to_vec());
        let picked = parse_targets(&strings(&[
            "--target",
            "aarch64-apple-darwin",
            "--target=x86_64-unknown-linux-musl",
            "--target=aarch64-apple-darwin",
        ]))
        .expect("two");
        assert_eq!(picked, [Target::DarwinArm64, Target::LinuxAmd64]);
        assert!(parse_targets(&strings(&["--target"])).is_err());
        assert!(parse_targets(&strings(&["--release"])).is_err());
        assert_eq!(elapsed(Duration::from_secs(112)), "1m52s");
    }
}
