//! Reading the user's own AGENTS.md, in their metron directory (outside the project, so
//! not through the project's boundary).

use std::io::Read;
use std::path::Path;

use super::Problem;

/// At most `limit + 1` bytes of the user's file at `path`: `Ok(None)` when there is none.
///
/// The user's file is theirs, so a symlink is followed wherever it leads (dotfile managers
/// link it), but what is read is bounded all the same: the open does not block on a FIFO
/// (`O_NONBLOCK`), anything but a regular file is refused from the open handle's own
/// `fstat` before a byte is read, and no more than the cap allows is ever read.
pub(super) fn user_file(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, Problem> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC).bits() as i32)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
            return Err(Problem::Directory);
        }
        Err(e) => return Err(Problem::Unreadable(e.to_string())),
    };
    let metadata = file
        .metadata()
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    if metadata.is_dir() {
        return Err(Problem::Directory);
    }
    if !metadata.is_file() {
        return Err(Problem::NotRegular);
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    Ok(Some(bytes))
}
