//! The Linux sandbox: Landlock for files and TCP, seccomp for sockets and terminal
//! injection, a private mount namespace for read-only places inside the project, and a
//! session of its own, all applied in the child between fork and exec.
//!
//! Everything that opens paths or allocates happens in metron ([`Prepared::new`]); the
//! child ([`Prepared::enter`]) only makes system calls, since after a fork of a threaded
//! process only async-signal-safe work is allowed. What the child sets up is inherited
//! through exec by every process the command starts, detached ones included.

mod landlock;
mod namespace;
mod seccomp;

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::carve;
use super::policy::{DEVICES, Policy};
use super::{Support, Unsupported};

/// The variable that turns mount namespaces off (see [`probe`]).
const NO_MOUNTS: &str = "METRON_SANDBOX_NO_MOUNTS";

/// What this kernel can do, found out once per process by [`probe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kernel {
    /// The Landlock ABI.
    pub(crate) abi: u32,
    /// Unprivileged user and mount namespaces work, so read-only places are mounts.
    pub(crate) mounts: bool,
}

/// The sandbox this kernel offers: Landlock at [`landlock::MIN_ABI`] or later, seccomp,
/// and whether mount namespaces work. Probed once, by confining a forked child exactly as
/// a command would be.
pub(crate) fn probe() -> Support {
    static PROBED: OnceLock<Support> = OnceLock::new();
    PROBED.get_or_init(probe_now).clone()
}

fn probe_now() -> Support {
    let abi = match landlock::abi() {
        Ok(abi) if abi >= landlock::MIN_ABI => abi,
        Ok(abi) => return Support::Unsupported(Unsupported::OldLandlock { abi }),
        Err(errno) => return Support::Unsupported(Unsupported::NoLandlock { errno }),
    };
    // Confine one child exactly as a command would be (with a read-only mount of a
    // scratch place); where the mount namespace is refused, try once more without.
    // `METRON_SANDBOX_NO_MOUNTS` makes metron behave as on a system that forbids
    // unprivileged namespaces (to try the fallback); it can only narrow what commands may do.
    let scratch = std::env::temp_dir();
    let policy = Policy::probe(&scratch);
    let with_mounts = std::env::var_os(NO_MOUNTS).is_none();
    let mut last = Support::Unsupported(Unsupported::Refused { errno: libc::EPERM });
    for mounts in [true, false] {
        if mounts && !with_mounts {
            continue;
        }
        let kernel = Kernel { abi, mounts };
        last = match Prepared::new(&policy, kernel) {
            Ok(prepared) => match prepared.trial() {
                Ok(()) => return Support::Linux(kernel),
                Err(errno) => Support::Unsupported(Unsupported::Refused { errno }),
            },
            Err(e) => Support::Unsupported(Unsupported::Setup(e.to_string())),
        };
    }
    last
}

/// Runs `child` in a forked child and returns what it reports: 0 is success, anything else
/// an errno. `child` must only make system calls.
///
/// The child reports through a pipe before it exits, and is reaped on another thread: a
/// child that made namespaces takes milliseconds to tear them down at exit, which nobody
/// needs to wait for.
fn fork_and_wait(child: impl Fn() -> i32) -> Result<(), i32> {
    let (reader, writer) = std::io::pipe().map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    // SAFETY: the child only makes system calls and exits with `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(libc::EAGAIN);
    }
    if pid == 0 {
        let code = child().clamp(0, 255) as u8;
        // SAFETY: a write on a descriptor the child holds, then leaving the forked child
        // without running anything of the parent's.
        unsafe {
            libc::write(writer.as_raw_fd(), (&code as *const u8).cast(), 1);
            libc::_exit(0);
        }
    }
    drop(writer);
    let mut code = [0u8; 1];
    let reported = std::io::Read::read_exact(&mut &reader, &mut code);
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: reaps the child forked above, which nothing else waits for.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    });
    match (reported, code[0]) {
        (Err(_), _) => Err(libc::ECHILD),
        (Ok(()), 0) => Ok(()),
        (Ok(()), errno) => Err(i32::from(errno)),
    }
}

/// Why a policy could not be turned into rules.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PrepareError {
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(std::io::Error),
    #[error("cannot grant access to {path}: {error}")]
    Rule {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "{} has too many entries to carve a protected path out of it (more than {} rules)",
        .0.display(),
        carve::MAX_GRANTS
    )]
    TooMany(PathBuf),
}

impl From<carve::TooMany> for PrepareError {
    fn from(too_many: carve::TooMany) -> PrepareError {
        PrepareError::TooMany(too_many.0)
    }
}

/// A policy turned into what the child applies: the Landlock ruleset, the seccomp
/// program, and the mounts.
#[derive(Debug)]
pub(crate) struct Prepared {
    ruleset: landlock::Ruleset,
    filter: Vec<libc::sock_filter>,
    mounts: Option<namespace::MountPlan>,
}

impl Prepared {
    /// The rules for `policy` on `kernel`.
    pub(crate) fn new(policy: &Policy, kernel: Kernel) -> Result<Prepared, PrepareError> {
        let ruleset =
            landlock::Ruleset::new(kernel.abi, !policy.network).map_err(PrepareError::Ruleset)?;
        let allow = |path: &Path, access: u64| {
            ruleset
                .allow(path, access)
                .map_err(|error| PrepareError::Rule {
                    path: path.to_path_buf(),
                    error,
                })
        };
        let read = landlock::fs::READ;
        let write = read | landlock::fs::WRITE;
        for place in carve::all_but(Path::new("/"), &policy.protected)? {
            allow(&place, read)?;
        }
        // With mounts, the read-only places are mounts and the whole project is granted;
        // without, they are carved out of the grant.
        let mut not_writable = policy.protected.clone();
        if !kernel.mounts {
            not_writable.extend(policy.read_only.iter().cloned());
        }
        for place in carve::all_but(&policy.root, &not_writable)? {
            allow(&place, write)?;
        }
        for top in std::iter::once(&policy.temp).chain(&policy.writable) {
            for place in carve::all_but(top, &policy.protected)? {
                allow(&place, write)?;
            }
        }
        let device = landlock::fs::READ_FILE
            | landlock::fs::WRITE_FILE
            | landlock::fs::TRUNCATE
            | landlock::fs::IOCTL_DEV;
        for path in DEVICES {
            allow(Path::new(path), device)?;
        }
        let writable = std::iter::once(&policy.root)
            .chain(std::iter::once(&policy.temp))
            .chain(&policy.writable)
            .map(PathBuf::as_path);
        let mounts = kernel.mounts.then(|| {
            namespace::MountPlan::new(
                &policy.root,
                writable,
                policy.read_only.iter().map(PathBuf::as_path),
            )
        });
        Ok(Prepared {
            ruleset,
            filter: seccomp::filter(!policy.network),
            mounts,
        })
    }

    /// Makes `command` enter the sandbox in its child, before exec. The child also starts
    /// a session of its own: no controlling terminal to inject keys into, and one process
    /// group to kill.
    pub(crate) fn install(self, command: &mut std::process::Command) {
        // SAFETY: `enter` only makes system calls.
        unsafe {
            command.pre_exec(move || match self.enter() {
                0 => Ok(()),
                errno => Err(std::io::Error::from_raw_os_error(errno)),
            });
        }
    }

    /// Child side: the session, the namespaces, no_new_privs, Landlock, seccomp. Returns
    /// 0 or the errno of the step that failed.
    fn enter(&self) -> i32 {
        mark_inherited_descriptors_cloexec();
        // SAFETY: plain system calls.
        if unsafe { libc::setsid() } < 0 {
            return errno();
        }
        if let Some(mounts) = &self.mounts
            && let Err((_, errno)) = mounts.apply()
        {
            return errno;
        }
        // SAFETY: plain system call.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return errno();
        }
        match landlock::restrict_self(self.ruleset.raw()) {
            0 => seccomp::install(&self.filter),
            errno => errno,
        }
    }

    /// Confines a forked child with these rules and reports whether it got through.
    fn trial(&self) -> Result<(), i32> {
        fork_and_wait(|| self.enter())
    }
}

/// Starts a session of its own for an unconfined command (`command_sandbox: "off"`), so
/// it still has no controlling terminal and one process group.
pub(crate) fn own_session(command: &mut std::process::Command) {
    // SAFETY: setsid is a plain system call.
    unsafe {
        command.pre_exec(|| {
            mark_inherited_descriptors_cloexec();
            if libc::setsid() < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        });
    }
}

/// Marks every descriptor above stderr close-on-exec, so nothing metron inherited from
/// its own parent (a socket, a terminal, a pipe to another program) reaches the command.
/// std's own descriptors are close-on-exec already; the ruleset is used before the exec.
/// Child side: one system call. A kernel without `close_range` (before 5.11) cannot have
/// the Landlock ABI the sandbox needs, so its failure is not an error.
fn mark_inherited_descriptors_cloexec() {
    // SAFETY: a plain system call on the calling process's own descriptor table.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
