//! What several benches need: the criterion settings, a git work tree to run in, and the
//! release binary. Each bench includes this module and uses part of it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::Criterion;

/// Criterion with a one-second warm-up and `measure` of measurement per bench, still
/// overridable from the command line.
pub fn criterion(measure: Duration) -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(measure)
        .configure_from_args()
}

/// Makes `root` a git work tree (apply_patch needs one). Without a `git` binary a bare
/// `.git` directory stands in, which is all metron checks; returns whether git ran.
pub fn git_init(root: &Path) -> bool {
    let ran = Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ran {
        std::fs::create_dir_all(root.join(".git")).expect("create .git");
    }
    ran
}

/// The `metron` binary `cargo bench` built alongside the bench (release profile).
pub fn metron_binary() -> Option<PathBuf> {
    let from_cargo = option_env!("CARGO_BIN_EXE_metron").map(PathBuf::from);
    let next_to_bench = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("metron")));
    from_cargo
        .into_iter()
        .chain(next_to_bench)
        .find(|path| path.is_file())
}
