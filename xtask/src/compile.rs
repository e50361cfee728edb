//! Running cargo: the workspace's facts, the reproducible release build of one target, and
//! a host build of metron when no release binary can run here.
//!
//! A release build is `cargo zigbuild --release --locked` (zig links musl statically and
//! links for macOS without an SDK), or plain `cargo build` for a darwin target on a Mac.
//! It is made independent of the machine that runs it:
//! - `SOURCE_DATE_EPOCH` is the commit time, for anything that stamps a date;
//! - `--remap-path-prefix` (Rust) and `-ffile-prefix-map` (the vendored C) rewrite the
//!   workspace, `CARGO_HOME`, `RUSTUP_HOME` and the target directory to fixed names, so
//!   no path of the build machine ends up in the binary (`inspect::check_no_build_paths`
//!   then checks that none did).
//!
//! For darwin targets on another OS, two text stubs stand in for the Security and
//! CoreFoundation frameworks that libgit2-sys links: they name only the frameworks'
//! install paths, which is all the linker records. libgit2 as configured references none
//! of their symbols; if it ever did, the link would fail rather than produce a broken
//! binary.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::target::Target;

/// The workspace as cargo sees it.
pub(crate) struct Workspace {
    pub(crate) root: PathBuf,
    pub(crate) target_dir: PathBuf,
    /// metron's version, from its Cargo.toml.
    pub(crate) version: String,
}

/// `cargo`, as the one that runs this xtask (`$CARGO`), in the workspace root.
fn cargo(root: &Path) -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(root);
    command
}

/// Runs `command` and returns its stdout; the error shows its stderr.
fn output(mut command: Command, what: &str) -> Result<Vec<u8>> {
    let out = command
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out.stdout)
}

impl Workspace {
    /// Asks cargo where the workspace and its target directory are.
    pub(crate) fn load() -> Result<Workspace> {
        let here = std::env::current_dir().context("cannot read the current directory")?;
        let mut command = cargo(&here);
        command.args(["metadata", "--format-version", "1", "--no-deps", "--locked"]);
        let meta: Value = serde_json::from_slice(&output(command, "cargo metadata")?)
            .context("cargo metadata printed something that is not JSON")?;
        let text = |key: &str| {
            meta[key]
                .as_str()
                .map(PathBuf::from)
                .with_context(|| format!("cargo metadata has no {key}"))
        };
        let version = meta["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == "metron")
            .and_then(|p| p["version"].as_str())
            .context("the workspace has no metron package")?
            .to_owned();
        Ok(Workspace {
            root: text("workspace_root")?,
            target_dir: text("target_directory")?,
            version,
        })
    }

    /// `cargo metadata` with the dependency graph filtered for `target`, for the SBOM.
    pub(crate) fn metadata_for(&self, target: Target) -> Result<Value> {
        let mut command = cargo(&self.root);
        command.args(["metadata", "--format-version", "1", "--locked"]);
        command.args(["--filter-platform", target.triple()]);
        serde_json::from_slice(&output(command, "cargo metadata --filter-platform")?)
            .context("cargo metadata printed something that is not JSON")
    }

    /// `cargo tree` for `target` in the form [`sbom::generate`](crate::sbom::generate) reads.
    pub(crate) fn tree_for(&self, target: Target) -> Result<String> {
        let mut command = cargo(&self.root);
        command.args(crate::sbom::TREE_ARGS).arg(target.triple());
        let out = output(command, "cargo tree")?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The commit time, unless `SOURCE_DATE_EPOCH` is already set.
    pub(crate) fn source_date_epoch(&self) -> Result<u64> {
        if let Ok(value) = std::env::var("SOURCE_DATE_EPOCH") {
            return value.trim().parse().with_context(|| {
                format!("SOURCE_DATE_EPOCH={value:?} is not a number of seconds; unset it to use the commit time")
            });
        }
        let mut git = Command::new("git");
        git.current_dir(&self.root)
            .args(["log", "-1", "--format=%ct"]);
        let out = output(git, "git log").context(
            "cannot read the commit time; set SOURCE_DATE_EPOCH or run from a git checkout",
        )?;
        String::from_utf8_lossy(&out)
            .trim()
            .parse()
            .context("git log printed no commit time; set SOURCE_DATE_EPOCH")
    }

    /// The full hash of HEAD, or `unknown` outside a git checkout.
    pub(crate) fn commit(&self) -> String {
        let mut git = Command::new("git");
        git.current_dir(&self.root).args(["rev-parse", "HEAD"]);
        output(git, "git rev-parse")
            .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
            .unwrap_or_else(|_| "unknown".to_owned())
    }

    /// Directories of this machine that must not appear in a release binary, each with
    /// the fixed name the build rewrites it to. The most specific come last, because the
    /// last matching rewrite wins.
    pub(crate) fn remaps(&self) -> Vec<(PathBuf, &'static str)> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let from_env = |var: &str, default: &str| {
            std::env::var_os(var)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(default)))
        };
        let mut remaps = vec![(self.root.clone(), "/metron")];
        if !self.target_dir.starts_with(&self.root) {
            remaps.push((self.target_dir.clone(), "/target"));
        }
        if let Some(cargo_home) = from_env("CARGO_HOME", ".cargo") {
            remaps.push((cargo_home, "/cargo"));
        }
        if let Some(rustup_home) = from_env("RUSTUP_HOME", ".rustup") {
            remaps.push((rustup_home, "/rustup"));
        }
        remaps
    }

    /// The paths [`inspect::check_no_build_paths`](crate::inspect::check_no_build_paths)
    /// looks for: the remapped directories, and the home directory.
    pub(crate) fn build_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .remaps()
            .into_iter()
            .map(|(path, _)| path.display().to_string())
            .collect();
        if let Some(home) = std::env::var_os("HOME") {
            let home = PathBuf::from(home);
            if home.components().count() > 1 {
                paths.push(format!("{}/", home.display()));
            }
        }
        paths
    }

    /// Builds metron for `target` and returns the binary's path. Progress goes to stderr.
    pub(crate) fn build(&self, target: Target, epoch: u64) -> Result<PathBuf> {
        let cross = !target.is_darwin() || !cfg!(target_os = "macos");
        let mut command = cargo(&self.root);
        command.arg(if cross { "zigbuild" } else { "build" });
        command.args(["--release", "--locked", "-p", "metron", "--bin", "metron"]);
        command.args(["--target", target.triple()]);
        command.env("SOURCE_DATE_EPOCH", epoch.to_string());

        let remaps = self.remaps();
        // One flag per remap, separated by 0x1f as CARGO_ENCODED_RUSTFLAGS wants.
        let mut rustflags = OsString::new();
        for (i, (from, to)) in remaps.iter().enumerate() {
            if i > 0 {
                rustflags.push("\x1f");
            }
            rustflags.push("--remap-path-prefix=");
            rustflags.push(from);
            rustflags.push("=");
            rustflags.push(to);
        }
        command.env("CARGO_ENCODED_RUSTFLAGS", rustflags);
        command.env_remove("RUSTFLAGS");
        // cc splits these on whitespace: a directory with a space in its name would break
        // them, so refuse that rather than build a binary that leaks it.
        let mut cflags = Vec::new();
        for (from, to) in &remaps {
            let from = from.display().to_string();
            ensure!(
                !from.contains(char::is_whitespace),
                "{from} contains whitespace, which CFLAGS cannot carry; build from a path without spaces"
            );
            cflags.push(format!("-ffile-prefix-map={from}={to}"));
        }
        let suffix = target.triple().replace('-', "_");
        command.env(format!("CFLAGS_{suffix}"), cflags.join(" "));
        command.env(format!("CXXFLAGS_{suffix}"), cflags.join(" "));
        if target.is_darwin() && cross {
            command.env("SDKROOT", self.write_sdk_stubs()?);
        }

        let started = Instant::now();
        let status = command
            .status()
            .with_context(|| format!("cannot run cargo for {target}"))?;
        if !status.success() {
            bail!(
                "building {target} failed ({status}); cargo's messages are above. Cross builds need zig and cargo-zigbuild (`pip install ziglang cargo-zigbuild`) and the Rust target (`rustup target add {target}`)"
            );
        }
        crate::progress(&format!(
            "{target}: built in {}",
            crate::elapsed(started.elapsed())
        ));
        Ok(self
            .target_dir
            .join(target.triple())
            .join("release")
            .join("metron"))
    }

    /// Writes the two framework stubs under the target directory and returns the SDK root
    /// to hand the linker.
    fn write_sdk_stubs(&self) -> Result<PathBuf> {
        let sdk = self.target_dir.join("xtask").join("sdk");
        for framework in ["Security", "CoreFoundation"] {
            let dir = sdk
                .join("System/Library/Frameworks")
                .join(format!("{framework}.framework"));
            fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let stub = format!(
                "--- !tapi-tbd\ntbd-version:     4\ntargets:         [ x86_64-macos, arm64-macos ]\ninstall-name:    '/System/Library/Frameworks/{framework}.framework/Versions/A/{framework}'\n...\n"
            );
            let path = dir.join(format!("{framework}.tbd"));
            fs::write(&path, stub).with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(sdk)
    }

    /// Builds metron for this machine (the ordinary debug build) and returns its path, for
    /// the completions and man page when no release binary runs here.
    pub(crate) fn host_metron(&self) -> Result<PathBuf> {
        crate::progress("building metron for this machine, for the completions and man page");
        let mut command = cargo(&self.root);
        command.args(["build", "--locked", "-p", "metron", "--bin", "metron"]);
        let status = command.status().context("cannot run cargo build")?;
        ensure!(
            status.success(),
            "cargo build failed ({status}); its messages are above"
        );
        Ok(self.target_dir.join("debug").join("metron"))
    }
}
