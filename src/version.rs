//! The version and build stamp printed by `metron --version`.

/// The crate version, plus the git commit it was built from when built from a checkout
/// (set by `build.rs`), so a bug report pins down the exact code.
pub(crate) fn long_version() -> &'static str {
    match option_env!("METRON_BUILD_COMMIT") {
        Some(commit) if !commit.is_empty() => {
            concat!(
                env!("CARGO_PKG_VERSION"),
                " (commit ",
                env!("METRON_BUILD_COMMIT"),
                ")"
            )
        }
        _ => concat!(
            env!("CARGO_PKG_VERSION"),
            " (not built from a git checkout)"
        ),
    }
}
