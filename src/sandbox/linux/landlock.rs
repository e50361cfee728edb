//! Landlock, through its three system calls: the ruleset is built in metron (where
//! opening paths and allocating are fine) and only `landlock_restrict_self` runs in the
//! child, between fork and exec.
//!
//! Landlock only grants: a ruleset names the kinds of access it handles, and every
//! handled access is denied except beneath the paths a rule grants it on. Rights given
//! on a directory hold for everything beneath it, so "everything but `~/.ssh`" is
//! realised by [`super::super::carve`] as rules on the siblings along the way.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

/// `LANDLOCK_ACCESS_FS_*`, as the kernel numbers them.
pub(crate) mod fs {
    pub(crate) const EXECUTE: u64 = 1 << 0;
    pub(crate) const WRITE_FILE: u64 = 1 << 1;
    pub(crate) const READ_FILE: u64 = 1 << 2;
    pub(crate) const READ_DIR: u64 = 1 << 3;
    pub(crate) const REMOVE_DIR: u64 = 1 << 4;
    pub(crate) const REMOVE_FILE: u64 = 1 << 5;
    pub(crate) const MAKE_CHAR: u64 = 1 << 6;
    pub(crate) const MAKE_DIR: u64 = 1 << 7;
    pub(crate) const MAKE_REG: u64 = 1 << 8;
    pub(crate) const MAKE_SOCK: u64 = 1 << 9;
    pub(crate) const MAKE_FIFO: u64 = 1 << 10;
    pub(crate) const MAKE_BLOCK: u64 = 1 << 11;
    pub(crate) const MAKE_SYM: u64 = 1 << 12;
    /// ABI 2: link or rename into another directory.
    pub(crate) const REFER: u64 = 1 << 13;
    /// ABI 3: truncate, including `open(O_TRUNC)`.
    pub(crate) const TRUNCATE: u64 = 1 << 14;
    /// ABI 5: ioctl on device files.
    pub(crate) const IOCTL_DEV: u64 = 1 << 15;

    /// Reading and running.
    pub(crate) const READ: u64 = EXECUTE | READ_FILE | READ_DIR;
    /// Everything that changes a tree (device nodes excepted: nothing here may make one).
    pub(crate) const WRITE: u64 = WRITE_FILE
        | REMOVE_DIR
        | REMOVE_FILE
        | MAKE_DIR
        | MAKE_REG
        | MAKE_SOCK
        | MAKE_FIFO
        | MAKE_SYM
        | REFER
        | TRUNCATE;
    /// What the kernel accepts in a rule on a file that is not a directory.
    pub(crate) const ON_FILES: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
}

/// `LANDLOCK_ACCESS_NET_*` (ABI 4).
const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;

/// `LANDLOCK_SCOPE_*` (ABI 6).
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

const CREATE_RULESET_VERSION: u32 = 1 << 0;
const RULE_PATH_BENEATH: u32 = 1;

/// The oldest ABI the policy can be enforced with: before ABI 3, `truncate` of a file
/// outside the writable set was not handled, so a command could empty any file the user
/// owns.
pub(crate) const MIN_ABI: u32 = 3;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version this kernel offers, or the errno that says it offers none
/// (`ENOSYS`: not built in; `EOPNOTSUPP`: built in but not enabled at boot).
pub(crate) fn abi() -> Result<u32, i32> {
    // SAFETY: the documented way to ask for the version: no attribute, size 0.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if version < 0 {
        Err(errno())
    } else {
        Ok(u32::try_from(version).unwrap_or(0))
    }
}

/// Every file-system right this ABI knows: all of them are handled, so none is left
/// unchecked.
pub(crate) fn handled_fs(abi: u32) -> u64 {
    let mut rights = fs::READ | fs::WRITE_FILE | fs::REMOVE_DIR | fs::REMOVE_FILE;
    rights |= fs::MAKE_CHAR | fs::MAKE_DIR | fs::MAKE_REG | fs::MAKE_SOCK;
    rights |= fs::MAKE_FIFO | fs::MAKE_BLOCK | fs::MAKE_SYM;
    if abi >= 2 {
        rights |= fs::REFER;
    }
    if abi >= 3 {
        rights |= fs::TRUNCATE;
    }
    if abi >= 5 {
        rights |= fs::IOCTL_DEV;
    }
    rights
}

/// A ruleset being built, owned by metron until the child applies it.
#[derive(Debug)]
pub(crate) struct Ruleset {
    fd: OwnedFd,
    handled: u64,
}

impl Ruleset {
    /// A ruleset handling every file-system right of `abi`; TCP too when `deny_network`
    /// and the ABI has it, and (ABI 6) scoping signals and, when `deny_network`, abstract
    /// unix sockets to the sandbox.
    pub(crate) fn new(abi: u32, deny_network: bool) -> std::io::Result<Ruleset> {
        let handled = handled_fs(abi);
        let mut attr = RulesetAttr {
            handled_access_fs: handled,
            handled_access_net: 0,
            scoped: 0,
        };
        if deny_network && abi >= 4 {
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
        }
        if abi >= 6 {
            attr.scoped = SCOPE_SIGNAL;
            if deny_network {
                attr.scoped |= SCOPE_ABSTRACT_UNIX_SOCKET;
            }
        }
        // An older kernel rejects a larger struct it does not know, so pass only the part
        // the ABI has: `scoped` came with 6, `handled_access_net` with 4.
        let size = match abi {
            0..=3 => std::mem::size_of::<u64>(),
            4 | 5 => 2 * std::mem::size_of::<u64>(),
            _ => std::mem::size_of::<RulesetAttr>(),
        };
        // SAFETY: `attr` is a valid ruleset attribute of at least `size` bytes.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                size,
                0u32,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = RawFd::try_from(fd).map_err(|_| std::io::Error::other("bad ruleset fd"))?;
        // SAFETY: the kernel just returned this descriptor (close-on-exec) to us alone.
        let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        Ok(Ruleset { fd, handled })
    }

    /// Grants `access` beneath `path`. A symlink is skipped (a rule opened through it would
    /// land on its target, which may be a place the policy denies; what it points to gets
    /// its own rules), a path that does not exist too. On a file that is not a directory
    /// only the rights files can carry are granted.
    pub(crate) fn allow(&self, path: &Path, access: u64) -> std::io::Result<()> {
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::ACCESS) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let kind = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
        let allowed = match kind {
            FileType::Symlink => return Ok(()),
            FileType::Directory => access,
            _ => access & fs::ON_FILES,
        } & self.handled;
        if allowed == 0 {
            return Ok(());
        }
        let attr = PathBeneathAttr {
            allowed_access: allowed,
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: `attr` is a valid path-beneath attribute holding an open descriptor.
        let done = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0u32,
            )
        };
        if done < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The descriptor the child hands to [`restrict_self`].
    pub(crate) fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Applies the ruleset to the calling thread and everything it starts. Called in the child
/// between fork and exec, so it only makes system calls; `no_new_privs` must be set
/// first. Returns 0 or the errno.
pub(crate) fn restrict_self(ruleset: RawFd) -> i32 {
    // SAFETY: a plain system call on a descriptor the parent opened.
    let done = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
    if done < 0 { errno() } else { 0 }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
