//! Read-only places inside the writable project, through a private mount namespace.
//!
//! Landlock cannot make `.git` read-only while its parent, the project, stays writable
//! for new files: a right to create files in a directory holds for everything beneath it.
//! So the child enters a new user and mount namespace (unprivileged, mapping the user to
//! themselves), bind-mounts each read-only place onto itself and marks that mount
//! read-only. Nothing leaks back: mounts made in a namespace owned by a new user namespace
//! do not propagate to the parent's. Landlock then forbids the command to unmount or
//! remount anything, so the read-only mounts stay.
//!
//! Where the kernel or a security module refuses unprivileged user namespaces (Ubuntu
//! 24.04's AppArmor default, for one), [`super::probe`] finds out once and the policy
//! falls back to Landlock alone, carving the read-only places out of the grants; the
//! price is that a command cannot create new entries at the top of the project.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `MOUNT_ATTR_RDONLY` for `mount_setattr`.
const MOUNT_ATTR_RDONLY: u64 = 0x1;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Everything the child needs, made in metron: the child may not allocate.
#[derive(Debug)]
pub(crate) struct MountPlan {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Places that stay writable in a read-only tree.
    writable: Vec<CString>,
    /// Places inside those made read-only again.
    read_only: Vec<CString>,
    /// Where the command starts (the project root), entered again once the mounts are
    /// made: std changes directory before the set-up runs, and that directory is the
    /// mount from before, now read-only.
    cwd: Option<CString>,
}

/// The step of the child's set-up that failed, for the probe's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Unshare,
    Maps,
    Bind,
    ReadOnly,
    Writable,
    Cwd,
}

impl MountPlan {
    /// A plan that makes the whole tree read-only but `writable`, then `read_only` inside
    /// those. Only existing paths count; a path with a NUL byte cannot be named to the
    /// kernel and is left out (no such file can exist).
    pub(crate) fn new<'a>(
        cwd: &Path,
        writable: impl IntoIterator<Item = &'a Path>,
        read_only: impl IntoIterator<Item = &'a Path>,
    ) -> MountPlan {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let existing = |paths: &mut dyn Iterator<Item = &'a Path>| -> Vec<CString> {
            paths
                .filter(|p| p.exists())
                .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
                .collect()
        };
        MountPlan {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            writable: existing(&mut writable.into_iter()),
            read_only: existing(&mut read_only.into_iter()),
            cwd: CString::new(cwd.as_os_str().as_bytes()).ok(),
        }
    }

    /// Enters the namespaces and mounts: each writable place bound onto itself, the whole
    /// tree made read-only (which closes what Landlock does not cover: `chmod`, `utimes`
    /// and extended attributes on files outside the writable places), the writable binds
    /// made writable again, then the read-only places inside them bound read-only. Child
    /// side: system calls only. Returns the failed step with its errno.
    pub(crate) fn apply(&self) -> Result<(), (Step, i32)> {
        // SAFETY: plain system calls on buffers that outlive them.
        unsafe {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                return Err((Step::Unshare, errno()));
            }
            write_file(c"/proc/self/setgroups", b"deny").map_err(|e| (Step::Maps, e))?;
            write_file(c"/proc/self/uid_map", &self.uid_map).map_err(|e| (Step::Maps, e))?;
            write_file(c"/proc/self/gid_map", &self.gid_map).map_err(|e| (Step::Maps, e))?;
            for path in &self.writable {
                bind(path).map_err(|e| (Step::Bind, e))?;
            }
            set_read_only(c"/", true).map_err(|e| (Step::ReadOnly, e))?;
            for path in &self.writable {
                set_read_only(path, false).map_err(|e| (Step::Writable, e))?;
            }
            for path in &self.read_only {
                bind(path).map_err(|e| (Step::Bind, e))?;
                set_read_only(path, true).map_err(|e| (Step::ReadOnly, e))?;
            }
            if let Some(cwd) = &self.cwd
                && libc::chdir(cwd.as_ptr()) != 0
            {
                return Err((Step::Cwd, errno()));
            }
        }
        Ok(())
    }
}

/// Bind-mounts `path` onto itself, with everything mounted beneath it. Child side.
///
/// # Safety
/// Only system calls; safe to call between fork and exec.
unsafe fn bind(path: &std::ffi::CStr) -> Result<(), i32> {
    let flags = libc::MS_BIND | libc::MS_REC;
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let bound = unsafe {
        libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if bound == 0 { Ok(()) } else { Err(errno()) }
}

/// Sets or clears the read-only flag of the mount at `path` and every mount beneath it.
/// Child side.
///
/// # Safety
/// Only system calls; safe to call between fork and exec.
unsafe fn set_read_only(path: &std::ffi::CStr, read_only: bool) -> Result<(), i32> {
    let (attr_set, attr_clr) = if read_only {
        (MOUNT_ATTR_RDONLY, 0)
    } else {
        (0, MOUNT_ATTR_RDONLY)
    };
    let attr = MountAttr {
        attr_set,
        attr_clr,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is NUL-terminated and `attr` a valid mount_attr; both outlive it.
    let set = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if set == 0 { Ok(()) } else { Err(errno()) }
}

/// Writes `bytes` to the file at `path` in one call. Child side.
///
/// # Safety
/// Only system calls; safe to call between fork and exec.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated; `bytes` outlives the write.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let failed = written < 0 || written as usize != bytes.len();
        let error = errno();
        libc::close(fd);
        if failed { Err(error) } else { Ok(()) }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
