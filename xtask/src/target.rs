//! The four release targets and the names they go by: Rust's target triple for the build,
//! and the `<os>_<arch>` pair users see in archive names.

use std::fmt;

/// A platform metron ships a release archive for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Target {
    LinuxAmd64,
    LinuxArm64,
    DarwinAmd64,
    DarwinArm64,
}

/// The CPU a target's binary must be built for, as the ELF and Mach-O checks test it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arch {
    X86_64,
    Aarch64,
}

impl Target {
    /// Every target, in the order `cargo xtask dist` builds them when given none.
    pub(crate) const ALL: [Target; 4] = [
        Target::LinuxAmd64,
        Target::LinuxArm64,
        Target::DarwinArm64,
        Target::DarwinAmd64,
    ];

    /// Rust's name for the target.
    pub(crate) fn triple(self) -> &'static str {
        match self {
            Target::LinuxAmd64 => "x86_64-unknown-linux-musl",
            Target::LinuxArm64 => "aarch64-unknown-linux-musl",
            Target::DarwinAmd64 => "x86_64-apple-darwin",
            Target::DarwinArm64 => "aarch64-apple-darwin",
        }
    }

    /// Finds the target for `triple`; the error lists the ones there are.
    pub(crate) fn from_triple(triple: &str) -> anyhow::Result<Target> {
        Target::ALL
            .into_iter()
            .find(|t| t.triple() == triple)
            .ok_or_else(|| {
                let known: Vec<&str> = Target::ALL.iter().map(|t| t.triple()).collect();
                anyhow::anyhow!(
                    "there is no release target `{triple}`; choose from {}",
                    known.join(", ")
                )
            })
    }

    /// Finds the target from the `<os>_<arch>` pair of an archive name.
    pub(crate) fn from_os_arch(os_arch: &str) -> Option<Target> {
        Target::ALL
            .into_iter()
            .find(|t| format!("{}_{}", t.os(), t.arch_name()) == os_arch)
    }

    /// `linux` or `darwin`, as archive names spell it.
    pub(crate) fn os(self) -> &'static str {
        if self.is_darwin() { "darwin" } else { "linux" }
    }

    /// `amd64` or `arm64`, as archive names spell it.
    pub(crate) fn arch_name(self) -> &'static str {
        match self.arch() {
            Arch::X86_64 => "amd64",
            Arch::Aarch64 => "arm64",
        }
    }

    /// The CPU the binary runs on.
    pub(crate) fn arch(self) -> Arch {
        match self {
            Target::LinuxAmd64 | Target::DarwinAmd64 => Arch::X86_64,
            Target::LinuxArm64 | Target::DarwinArm64 => Arch::Aarch64,
        }
    }

    /// Whether the binary is Mach-O for macOS (otherwise a static Linux ELF).
    pub(crate) fn is_darwin(self) -> bool {
        matches!(self, Target::DarwinAmd64 | Target::DarwinArm64)
    }

    /// Whether this machine can run the target's binary, so the completions and the man
    /// page can be taken from it instead of from a separate host build.
    pub(crate) fn runs_here(self) -> bool {
        let os_matches = (self.is_darwin() && cfg!(target_os = "macos"))
            || (!self.is_darwin() && cfg!(target_os = "linux"));
        let arch_matches = match self.arch() {
            Arch::X86_64 => cfg!(target_arch = "x86_64"),
            Arch::Aarch64 => cfg!(target_arch = "aarch64"),
        };
        os_matches && arch_matches
    }

    /// The archive's base name: `metron_<version>_<os>_<arch>`.
    pub(crate) fn dist_name(self, version: &str) -> String {
        format!("metron_{version}_{}_{}", self.os(), self.arch_name())
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.triple())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for target in Target::ALL {
            assert_eq!(Target::from_triple(target.triple()).ok(), Some(target));
            let name = target.dist_name("1.2.3");
            let os_arch = name.trim_start_matches("metron_1.2.3_");
            assert_eq!(Target::from_os_arch(os_arch), Some(target));
        }
        assert_eq!(
            Target::DarwinArm64.dist_name("0.1.0"),
            "metron_0.1.0_darwin_arm64"
        );
        let err = Target::from_triple("x86_64-unknown-linux-gnu").unwrap_err();
        assert!(
            err.to_string().contains("x86_64-unknown-linux-musl"),
            "{err}"
        );
    }
}
