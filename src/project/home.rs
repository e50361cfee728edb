//! Where the user's home directory is: for the refusal to run there
//! (`Project::too_wide`) and for the places commands and the read tools may not reach
//! (`sandbox::protected_places`), which both ask [`user_homes`], so they cannot disagree.
//!
//! HOME alone is not enough: a session started with `env -u HOME` or `HOME=` in the home
//! directory would find no home to refuse and no `~/.npmrc` to protect, and one started
//! with HOME pointing elsewhere would protect that other place only. So the home the
//! password database gives the real user counts too, always: both are refused as a
//! project and both keep their credentials protected.

use std::path::{Path, PathBuf};

/// Every home directory of the user, HOME first (when it is absolute), then the one the
/// password database gives the real uid when that differs. Empty only when neither is
/// known (a minimal container), which the start-up check warns about.
pub(crate) fn user_homes(env_home: Option<&Path>) -> Vec<PathBuf> {
    homes_from(env_home, passwd_home())
}

/// [`user_homes`] with the password database's answer given: the pure part, tested.
/// A relative HOME names no place (it would move with the working directory), so it is
/// not a home; an empty one was already dropped when the environment was read.
pub(crate) fn homes_from(env_home: Option<&Path>, passwd: Option<PathBuf>) -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = env_home
        .filter(|home| home.is_absolute())
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    if let Some(passwd) = passwd.filter(|home| home.is_absolute())
        && !homes.iter().any(|home| same_place(home, &passwd))
    {
        homes.push(passwd);
    }
    homes
}

/// The same directory, as written or as real paths (a symlinked HOME is still the home).
fn same_place(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// The real user's home from the password database (`getpwuid_r`), which does not depend
/// on anything the environment says. `None` when there is no entry or no home in it.
#[cfg(target_os = "linux")]
fn passwd_home() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt as _;

    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    // A buffer that grows on ERANGE, bounded: no real entry needs 1 MiB.
    let mut size = 1024;
    while size <= 1 << 20 {
        let mut buffer = vec![0 as libc::c_char; size];
        // SAFETY: passwd is plain data that getpwuid_r fills in.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and the buffer's length is given.
        let status =
            unsafe { libc::getpwuid_r(uid, &mut entry, buffer.as_mut_ptr(), size, &mut found) };
        if status == libc::ERANGE {
            size *= 2;
            continue;
        }
        if status != 0 || found.is_null() || entry.pw_dir.is_null() {
            return None;
        }
        // SAFETY: pw_dir points into `buffer`, NUL-terminated, alive until the end of
        // this iteration.
        let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
        let dir = std::ffi::OsStr::from_bytes(dir.to_bytes());
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    None
}

/// Elsewhere HOME is the only source.
#[cfg(not(target_os = "linux"))]
fn passwd_home() -> Option<PathBuf> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_unset_empty_or_relative_falls_back_to_the_password_database() {
        let passwd = || Some(PathBuf::from("/home/me"));
        assert_eq!(homes_from(None, passwd()), [PathBuf::from("/home/me")]);
        assert_eq!(
            homes_from(Some(Path::new("relative")), passwd()),
            [PathBuf::from("/home/me")]
        );
    }

    #[test]
    fn home_elsewhere_keeps_the_password_database_home_too() {
        let homes = homes_from(Some(Path::new("/tmp/other")), Some("/home/me".into()));
        assert_eq!(
            homes,
            [PathBuf::from("/tmp/other"), PathBuf::from("/home/me")]
        );
        // The same place once, not twice.
        let homes = homes_from(Some(Path::new("/home/me")), Some("/home/me".into()));
        assert_eq!(homes, [PathBuf::from("/home/me")]);
    }

    #[test]
    fn no_home_anywhere_is_empty_and_a_relative_passwd_home_is_ignored() {
        assert!(homes_from(None, None).is_empty());
        assert!(homes_from(None, Some("relative".into())).is_empty());
    }

    #[test]
    fn the_password_database_answers_for_the_user_running_the_tests() {
        // The test user has an entry (containers included); its home is absolute.
        if let Some(home) = passwd_home() {
            assert!(home.is_absolute(), "{}", home.display());
        }
    }
}
