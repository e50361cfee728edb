//! The session's private temporary directory: the one place outside the project a
//! confined command may write by default.
//!
//! Commands get TMPDIR, TMP and TEMP pointed at it. It is made on the first command
//! (mode 0700, under the system's temp dir) and removed with everything in it when the
//! session ends, so test runs that leave files behind do not pile up, and nothing one
//! session's commands wrote is seen by another's.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The directory, made when first asked for.
#[derive(Debug, Default)]
pub(crate) struct SessionTemp {
    dir: OnceLock<PathBuf>,
}

impl SessionTemp {
    /// The directory, making it on first use. The error says what failed and what to do.
    pub(crate) fn path(&self) -> Result<&Path, String> {
        if let Some(dir) = self.dir.get() {
            return Ok(dir);
        }
        let made = make()?;
        // Another thread may have made one meanwhile: keep the first, drop ours.
        if let Err(unused) = self.dir.set(made) {
            let _ = std::fs::remove_dir_all(unused);
        }
        self.dir
            .get()
            .map(PathBuf::as_path)
            .ok_or_else(|| "the session's temp dir was not recorded".to_owned())
    }
}

impl Drop for SessionTemp {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A fresh private directory `metron-tmp-PID-N` under the system's temp dir.
fn make() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let pid = std::process::id();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut last = None;
    for attempt in 0..16u32 {
        let dir = base.join(format!(
            "metron-tmp-{pid}-{:08x}",
            seed.wrapping_add(attempt)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir.canonicalize().unwrap_or(dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(format!(
                    "cannot make the commands' temp dir in {}: {e}; set TMPDIR to a writable directory",
                    base.display()
                ));
            }
        }
    }
    Err(format!(
        "cannot make the commands' temp dir in {}: {}; set TMPDIR to a writable directory",
        base.display(),
        last.map_or_else(|| "no free name".to_owned(), |e| e.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dir_is_private_made_once_and_removed_with_the_session() {
        use std::os::unix::fs::PermissionsExt;
        let temp = SessionTemp::default();
        let dir = temp.path().expect("temp dir").to_path_buf();
        assert_eq!(temp.path().expect("again"), dir);
        let mode = std::fs::metadata(&dir).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(dir.join("left-behind"), "x").expect("write");
        drop(temp);
        assert!(!dir.exists());
    }
}
