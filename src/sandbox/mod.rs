//! The command sandbox: every approved command runs confined by the operating system,
//! with rights no wider than its question said.
//!
//! Approval decides *whether* a command runs; the sandbox decides what it can reach
//! while it does. An allowed `go test` or `make` runs code the repository controls (tests,
//! build scripts), so without it an approved command could read `~/.ssh`, write
//! `.git/hooks` or reach the network. Under the default policy a command:
//!
//! - writes only the project (never `.git`, nor metron's own files in the tree), a private
//!   temporary directory of the session (TMPDIR, TMP and TEMP), a few device files, and
//!   what the user's own config adds (`command_writable_paths`);
//! - reads everything the user can, except credentials and metron's own configuration
//!   ([`policy::DEFAULT_PROTECTED`], plus `command_protected_paths`);
//! - has no network, unless its allowlist entry is in `command_network`.
//!
//! The [`policy::Policy`] is data, built per command from the user's own config; the
//! platforms enforce it: Linux with Landlock, seccomp and a mount namespace, in process
//! ([`linux`]); macOS with a Seatbelt profile through `/usr/bin/sandbox-exec`
//! ([`seatbelt`]). It fails closed: where the platform cannot enforce the policy,
//! run_command refuses, and only `command_sandbox: "off"` in the user's own config runs
//! commands unconfined, said in the banner, the doctor and every question.

#[cfg(any(target_os = "linux", test))]
mod carve;
#[cfg(target_os = "linux")]
mod linux;
mod policy;
#[cfg(any(target_os = "macos", test))]
mod seatbelt;
mod temp;

use std::ffi::OsString;
use std::fmt;
use std::path::Path;

pub(crate) use policy::{Places, Policy, protected_places};
pub use policy::{SandboxMode, SandboxSettings, Summary};
pub(crate) use temp::SessionTemp;

/// What this machine offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Support {
    /// Landlock at a usable ABI, and seccomp.
    #[cfg(target_os = "linux")]
    Linux(linux::Kernel),
    /// Seatbelt, through `/usr/bin/sandbox-exec`.
    #[cfg(target_os = "macos")]
    Seatbelt,
    /// Nothing that can enforce the policy.
    Unsupported(Unsupported),
}

/// Why commands cannot be confined here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unsupported {
    /// The kernel has no Landlock, or it is not enabled (`lsm=` at boot).
    #[cfg(target_os = "linux")]
    NoLandlock { errno: i32 },
    /// Landlock is older than the policy needs.
    #[cfg(target_os = "linux")]
    OldLandlock { abi: u32 },
    /// A confined trial child was refused by the kernel.
    #[cfg(target_os = "linux")]
    Refused { errno: i32 },
    /// The trial rules could not be built.
    #[cfg(target_os = "linux")]
    Setup(String),
    /// Not Linux, and not macOS with `/usr/bin/sandbox-exec`.
    #[cfg(not(target_os = "linux"))]
    Platform,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(target_os = "linux")]
        let kernel = kernel_release();
        match self {
            #[cfg(target_os = "linux")]
            Unsupported::NoLandlock { errno } => write!(
                f,
                "this kernel ({kernel}) offers no Landlock ({}); boot a kernel built with CONFIG_SECURITY_LANDLOCK and `landlock` in its `lsm=` list, or, inside a container, allow the landlock_* system calls in its seccomp profile",
                std::io::Error::from_raw_os_error(*errno)
            ),
            #[cfg(target_os = "linux")]
            Unsupported::OldLandlock { abi } => write!(
                f,
                "this kernel ({kernel}) has Landlock ABI {abi}, and metron needs ABI 3 or later (Linux 6.2) to keep commands from truncating files outside the project; upgrade the kernel"
            ),
            #[cfg(target_os = "linux")]
            Unsupported::Refused { errno } => write!(
                f,
                "this kernel ({kernel}) refused to confine a trial process ({}); a container's seccomp profile may forbid Landlock or seccomp: allow them, or run metron outside the container",
                std::io::Error::from_raw_os_error(*errno)
            ),
            #[cfg(target_os = "linux")]
            Unsupported::Setup(why) => write!(f, "the sandbox could not be set up: {why}"),
            #[cfg(not(target_os = "linux"))]
            Unsupported::Platform => f.write_str(
                "commands can be confined only on Linux (Landlock) and macOS (Seatbelt)",
            ),
        }
    }
}

/// `uname -r`, for messages about the kernel.
#[cfg(target_os = "linux")]
fn kernel_release() -> String {
    // SAFETY: `uname` fills the struct it is given.
    let mut name: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut name) } != 0 {
        return "unknown".to_owned();
    }
    // SAFETY: the kernel NUL-terminates `release`.
    unsafe { std::ffi::CStr::from_ptr(name.release.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The sandbox this machine offers (probed once per process).
pub(crate) fn support() -> Support {
    #[cfg(target_os = "linux")]
    {
        linux::probe()
    }
    #[cfg(target_os = "macos")]
    {
        if Path::new(seatbelt::SANDBOX_EXEC).is_file() {
            Support::Seatbelt
        } else {
            Support::Unsupported(Unsupported::Platform)
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        Support::Unsupported(Unsupported::Platform)
    }
}

impl Support {
    /// New top-level entries cannot be made in the project (Linux without mount
    /// namespaces, see `linux::namespace`).
    pub(crate) fn no_new_top_level(&self) -> bool {
        match self {
            #[cfg(target_os = "linux")]
            Support::Linux(kernel) => !kernel.mounts,
            _ => false,
        }
    }

    /// The mechanism, in words: `Landlock ABI 7 + seccomp`.
    pub(crate) fn mechanism(&self) -> String {
        match self {
            #[cfg(target_os = "linux")]
            Support::Linux(kernel) if kernel.mounts => {
                format!("Landlock ABI {} + seccomp + mount namespace", kernel.abi)
            }
            #[cfg(target_os = "linux")]
            Support::Linux(kernel) => format!("Landlock ABI {} + seccomp", kernel.abi),
            #[cfg(target_os = "macos")]
            Support::Seatbelt => "Seatbelt (/usr/bin/sandbox-exec)".to_owned(),
            Support::Unsupported(_) => "none".to_owned(),
        }
    }
}

/// The sandbox as the banner and the doctor state it: whether it is fine, and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    /// Commands run confined.
    Confined(String),
    /// `command_sandbox: "off"`: commands run with all of the user's rights.
    Off(String),
    /// On, but this machine cannot confine, so run_command refuses.
    Unavailable(String),
}

/// The banner's and the doctor's sentence about the sandbox under `mode`.
pub(crate) fn status(mode: SandboxMode) -> Status {
    if mode == SandboxMode::Off {
        return Status::Off(OFF_NOTICE.to_owned());
    }
    match support() {
        Support::Unsupported(why) => Status::Unavailable(format!(
            "commands cannot be confined, so run_command refuses them: {why} (or, knowing the risk, set \"command_sandbox\": \"off\" in your own config)"
        )),
        support => {
            let top = if support.no_new_top_level() {
                " (not new top-level entries: this system forbids unprivileged mount namespaces)"
            } else {
                ""
            };
            Status::Confined(format!(
                "{}: commands write only the project{top} and a temp dir, no network",
                support.mechanism()
            ))
        }
    }
}

/// What the banner, the doctor and every question say when the sandbox is off.
pub(crate) const OFF_NOTICE: &str = "off (command_sandbox in your config): approved commands run with all of your rights: they can read your keys, write anywhere you can, and use the network";

/// How an approved command will run: confined under a policy, or (only when the user's
/// own config says so) not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Confinement {
    /// Under this policy.
    Confined(Policy),
    /// `command_sandbox: "off"`.
    Off,
}

impl Confinement {
    /// The line the question shows after `sandbox: `.
    pub(crate) fn describe(&self) -> String {
        match self {
            Confinement::Confined(policy) => {
                policy.summary(support().no_new_top_level()).to_string()
            }
            Confinement::Off => OFF_NOTICE.to_owned(),
        }
    }

    /// What the ledger records: the summary, or `None` for an unconfined run.
    pub(crate) fn record(&self) -> Option<Summary> {
        match self {
            Confinement::Confined(policy) => Some(policy.summary(support().no_new_top_level())),
            Confinement::Off => None,
        }
    }

    /// The process to spawn for `program` with `args`, confined as decided; the caller
    /// adds the working directory, the environment and the pipes. Errors say why the
    /// command cannot run and what to do.
    pub(crate) fn command(
        &self,
        program: &Path,
        args: &[String],
    ) -> Result<std::process::Command, String> {
        match self {
            Confinement::Off => {
                let mut command = std::process::Command::new(program);
                command.args(args);
                own_session(&mut command);
                Ok(command)
            }
            Confinement::Confined(policy) => confined(policy, program, args),
        }
    }
}

#[cfg(target_os = "linux")]
fn confined(
    policy: &Policy,
    program: &Path,
    args: &[String],
) -> Result<std::process::Command, String> {
    let kernel = match support() {
        Support::Linux(kernel) => kernel,
        Support::Unsupported(why) => return Err(refusal(&why)),
    };
    make_writable_places(policy);
    let prepared = linux::Prepared::new(policy, kernel).map_err(|e| {
        format!("the sandbox for this command could not be built: {e}; tell the user")
    })?;
    let mut command = std::process::Command::new(program);
    command.args(args);
    prepared.install(&mut command);
    Ok(command)
}

#[cfg(target_os = "macos")]
fn confined(
    policy: &Policy,
    program: &Path,
    args: &[String],
) -> Result<std::process::Command, String> {
    if let Support::Unsupported(why) = support() {
        return Err(refusal(&why));
    }
    make_writable_places(policy);
    let (sandbox_exec, wrapped) = seatbelt::wrap(policy, program, args)?;
    let mut command = std::process::Command::new(sandbox_exec);
    command.args(wrapped);
    own_session(&mut command);
    Ok(command)
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn confined(
    _policy: &Policy,
    _program: &Path,
    _args: &[String],
) -> Result<std::process::Command, String> {
    Err(refusal(&Unsupported::Platform))
}

/// Makes the places the user's config grants (`command_writable_paths`) when they do not
/// exist yet: a grant holds only for what exists, and a cache such as `~/.cache/go-build`
/// is usually made by the first command that needs it, which the sandbox would refuse.
/// Failing to make one is not an error: the command then meets the refusal and its hint.
fn make_writable_places(policy: &Policy) {
    for place in &policy.writable {
        if !place.exists() {
            let _ = std::fs::create_dir_all(place);
        }
    }
}

/// The refusal when the sandbox is on but this machine cannot confine.
fn refusal(why: &Unsupported) -> String {
    format!(
        "not run: {why}. Commands run only inside the sandbox; the user can turn it off in their own config (\"command_sandbox\": \"off\") if they accept the risk. Tell the user."
    )
}

/// Starts the command in a session of its own: no controlling terminal (nothing to type
/// keys into), and a process group to kill as a whole.
fn own_session(command: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    linux::own_session(command);
    #[cfg(not(target_os = "linux"))]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                rustix::process::setsid()?;
                Ok(())
            });
        }
    }
}

/// A hint for output that looks like the sandbox refused something, naming the setting
/// that grants it; `None` when nothing in `output` suggests that.
pub(crate) fn hint(output: &str, summary: &Summary) -> Option<String> {
    // Lower case: tools spell errno texts both ways (`Permission denied`, Go's
    // `permission denied`).
    const WRITE_DENIED: &[&str] = &[
        "permission denied",
        "operation not permitted",
        "read-only file system",
        "eacces",
        "eperm",
        "erofs",
    ];
    const NETWORK_DENIED: &[&str] = &[
        "network is unreachable",
        "could not resolve",
        "temporary failure in name resolution",
        "getaddrinfo",
        "enotfound",
        "eai_again",
    ];
    let output = output.to_lowercase();
    let denied = WRITE_DENIED.iter().any(|w| output.contains(w));
    let offline = NETWORK_DENIED.iter().any(|w| output.contains(w));
    let mut hints = Vec::new();
    if denied {
        hints.push(
            "writes outside the project and its temp dir, into .git, and reads of protected paths are refused by the sandbox; the user can grant a path with `command_writable_paths` in their own config (or `command_git_writes` for .git)",
        );
    }
    if (offline || denied) && !summary.network {
        hints.push("the command had no network; the user can allow it for this allowlist entry with `command_network` in their own config");
    }
    (!hints.is_empty()).then(|| format!("[sandbox] {}", hints.join("; ")))
}

/// Arguments that tell a program where to write, for standing approvals: a later call
/// carrying one is asked again (see `authority::grants`).
pub(crate) fn names_output(arg: &str) -> bool {
    const FLAGS: &[&str] = &[
        "-o",
        "--output",
        "--output-file",
        "--output-directory",
        "--out",
        "--out-dir",
        "--outdir",
        "--target-dir",
        "--log-file",
        "--prefix",
    ];
    FLAGS.iter().any(|flag| {
        arg == *flag
            || arg
                .strip_prefix(flag)
                .is_some_and(|rest| rest.starts_with('='))
            || (*flag == "-o" && arg.starts_with("-o") && arg.len() > 2)
    })
}

/// The environment names pointed at the session's temp dir.
pub(crate) const TEMP_VARS: &[&str] = &["TMPDIR", "TMP", "TEMP"];

/// `(name, dir)` pairs for [`TEMP_VARS`].
pub(crate) fn temp_env(dir: &Path) -> Vec<(OsString, OsString)> {
    TEMP_VARS
        .iter()
        .map(|name| (OsString::from(name), dir.as_os_str().to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(network: bool) -> Summary {
        Summary {
            no_new_top_level: false,
            git_writes: false,
            network,
            extra_writable: Vec::new(),
        }
    }

    #[test]
    fn a_refused_write_gets_a_hint_naming_the_settings() {
        let hint = hint(
            "failed to initialize build cache: mkdir /home/me/.cache: permission denied",
            &summary(false),
        )
        .unwrap_or_default();
        assert!(hint.contains("command_writable_paths"), "{hint}");
        assert!(hint.contains("command_network"), "{hint}");
        let hint = hint_for("touch: cannot touch '.git/x': Read-only file system", true);
        assert!(hint.contains("command_git_writes") && !hint.contains("command_network"));
    }

    fn hint_for(output: &str, network: bool) -> String {
        hint(output, &summary(network)).unwrap_or_default()
    }

    #[test]
    fn ordinary_failures_get_no_hint() {
        assert_eq!(hint("--- FAIL: TestAdd (0.00s)", &summary(false)), None);
        assert_eq!(hint("assertion failed: 1 == 2", &summary(true)), None);
    }

    #[test]
    fn output_flags_are_recognised_in_every_spelling() {
        for arg in [
            "-o",
            "-ofile",
            "--output",
            "--output=x",
            "--output-directory=d",
            "--target-dir",
        ] {
            assert!(names_output(arg), "{arg}");
        }
        for arg in ["-v", "--outline", "--oneline", "output", "--format=%s"] {
            assert!(!names_output(arg), "{arg}");
        }
    }
}
