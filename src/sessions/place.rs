//! Where a project's sessions live, and what a new session is called.
//!
//! Sessions are grouped by project so that `-c` finds "the last session here" without
//! reading every file. The key must not change between metron versions, or every saved
//! session would be orphaned: hence FNV-1a written out here, not the standard library's
//! hasher, whose algorithm is not promised.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The directory under the user's metron directory that holds every project's sessions.
pub(crate) const SESSIONS_DIR: &str = "sessions";

/// The extension of a session file (JSON Lines).
pub(crate) const EXTENSION: &str = "jsonl";

/// The most bytes of the root's last component kept in the key: enough to recognise the
/// project in a listing of the directory, short enough for any file system.
const NAME_BYTES: usize = 32;

/// The directory holding the sessions of the project rooted at `root`, under the user's
/// metron directory `user_dir`.
pub(crate) fn project_dir(user_dir: &Path, root: &Path) -> PathBuf {
    user_dir.join(SESSIONS_DIR).join(project_key(root))
}

/// `NAME-HASH`: the root's last component made safe (for a person reading the directory)
/// and the FNV-1a hash of its canonical path (which decides).
pub(crate) fn project_key(root: &Path) -> String {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(NAME_BYTES)
        .collect();
    let bytes = canonical.as_os_str().as_encoded_bytes();
    format!("{}-{:016x}", name.trim_start_matches('.'), fnv1a(bytes))
}

/// 64-bit FNV-1a: stable by definition, which is all the key needs (it is not a defence
/// against anyone: the directory is the user's own).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Seconds since the Unix epoch (0 for a clock set before it).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A new session's id: `YYYYMMDD-HHMMSS-PID` in UTC, so ids sort by age and two sessions
/// started in the same second differ.
pub(crate) fn new_id(unix_seconds: u64, pid: u32) -> String {
    let (date, time) = utc(unix_seconds);
    format!("{}-{}-{pid}", date.replace('-', ""), time.replace(':', ""))
}

/// `YYYY-MM-DD` and `HH:MM:SS` in UTC, for the id and the list (no time-zone database
/// is needed for UTC, so none is pulled in).
pub(crate) fn utc(unix_seconds: u64) -> (String, String) {
    let days = i64::try_from(unix_seconds / 86_400).unwrap_or(0);
    let rest = unix_seconds % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}"),
        format!(
            "{:02}:{:02}:{:02}",
            rest / 3600,
            rest % 3600 / 60,
            rest % 60
        ),
    )
}

/// Whether `id` can name a session file: what [`new_id`] makes, and nothing that could
/// climb out of the directory.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_stable_and_names_the_project() {
        // FNV-1a's published test vectors: the key must never change.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let key = project_key(Path::new("/nonexistent/my project"));
        assert!(key.starts_with("my_project-"), "{key}");
        assert_eq!(key, project_key(Path::new("/nonexistent/my project")));
        assert_ne!(key, project_key(Path::new("/other/my project")));
    }

    #[test]
    fn ids_sort_by_time_and_are_utc() {
        assert_eq!(utc(0), ("1970-01-01".into(), "00:00:00".into()));
        assert_eq!(utc(1_796_644_800), ("2026-12-07".into(), "12:00:00".into()));
        assert_eq!(new_id(1_796_644_800, 42), "20261207-120000-42");
        assert!(valid_id("20261207-120000-42"));
        assert!(!valid_id("../x"));
        assert!(!valid_id(""));
    }
}
