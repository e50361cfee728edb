//! The names of staged files, and sweeping up the ones a killed metron left behind.
//!
//! A write first goes to `.NAME.metron-PID-SERIAL.tmp` beside its target. SIGKILL (or a
//! power cut) between staging and renaming strands that file, and no process can clean
//! up after its own SIGKILL, so the next write into the same directory does: it removes
//! staged files that are at least [`STALE_AFTER`] old and belong to no running metron.
//!
//! Serials count up from a random start in each process. A container often gives every
//! run the same pid, so a later process must neither collide with the names an earlier
//! one left nor mistake them for its own; the random start does both, and a collision
//! that still happens only costs a retry under the next serial.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use cap_std::fs::Dir;

/// How old a staged file must be before another process may remove it. Staging and
/// renaming take milliseconds to seconds; this leaves a wide margin for a metron this
/// one cannot see (another pid namespace, another host on a network file system).
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(60);

/// Serials above this many decimal digits are not metron's (the random start is below
/// 10^12), which keeps parsing within `u64`.
const MAX_SERIAL_DIGITS: usize = 19;

/// This process's first serial.
fn first_serial() -> u64 {
    static FIRST: OnceLock<u64> = OnceLock::new();
    // `RandomState` is seeded from the operating system's randomness.
    *FIRST.get_or_init(|| RandomState::new().hash_one(std::process::id()) % 1_000_000_000_000)
}

/// Serials handed out so far by this process.
static HANDED_OUT: AtomicU64 = AtomicU64::new(0);

/// A fresh name for a staged copy of `target` (the file name, not a path). The target's
/// name is shortened at a character boundary so the result stays within the 255-byte
/// limit on a name.
pub(crate) fn fresh_name(target: &str) -> String {
    let mut short = target.len().min(200);
    while !target.is_char_boundary(short) {
        short -= 1;
    }
    let serial = first_serial() + HANDED_OUT.fetch_add(1, Ordering::Relaxed);
    format!(
        ".{}.metron-{}-{serial}.tmp",
        &target[..short],
        std::process::id()
    )
}

/// The pid and serial in a staged file's name, `.NAME.metron-PID-SERIAL.tmp`.
pub(crate) fn parse(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, tail) = rest.rsplit_once(".metron-")?;
    let (pid, serial) = tail.split_once('-')?;
    let digits = |s: &str| {
        !s.is_empty() && s.len() <= MAX_SERIAL_DIGITS && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(pid) || !digits(serial) {
        return None;
    }
    Some((pid.parse().ok()?, serial.parse().ok()?))
}

/// Whether this process could have made a file with this pid and serial.
fn is_ours(pid: u32, serial: u64) -> bool {
    let first = first_serial();
    pid == std::process::id()
        && serial >= first
        && serial < first + HANDED_OUT.load(Ordering::Relaxed)
}

/// Removes from `dir` the staged files of metron processes that are gone. A file whose
/// process is alive or cannot be checked, one younger than [`STALE_AFTER`], anything
/// that is not a regular file, and every name not exactly of the form above stay.
/// Returns how many were removed.
pub(crate) fn sweep(dir: &Dir) -> usize {
    let Ok(entries) = dir.entries() else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, serial)) = name.to_str().and_then(parse) else {
            continue;
        };
        if is_ours(pid, serial) {
            continue;
        }
        // Our pid but not our serial: an earlier process that had this pid.
        if pid != std::process::id() && process_exists(pid) {
            continue;
        }
        let stale = entry.metadata().is_ok_and(|meta| {
            meta.is_file()
                && meta
                    .modified()
                    .ok()
                    .and_then(|modified| now.duration_since(modified.into_std()).ok())
                    .is_some_and(|age| age >= STALE_AFTER)
        });
        if stale && dir.remove_file(&name).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether a process with this id exists. Unsure means yes (a process of another user
/// answers "not permitted"), so only a definite "no such process" lets a file go.
fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return true;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_nothing_else_does() {
        let name = fresh_name("greet.go");
        let (pid, serial) = parse(&name).expect("parses");
        assert_eq!(pid, std::process::id());
        assert!(is_ours(pid, serial));
        assert_ne!(fresh_name("greet.go"), name, "every name is fresh");
        assert_eq!(parse(".greet.go.metron-1234-0.tmp"), Some((1234, 0)));
        assert_eq!(parse(".a.metron-b.metron-7-22.tmp"), Some((7, 22)));
        for name in [
            "greet.go.metron-1234-0.tmp",
            ".greet.go.metron-1234-0.tmp.bak",
            ".greet.go.metron-12x4-0.tmp",
            ".greet.go.metron-1234.tmp",
            ".greet.go.metron-1234-0-1.tmp",
            ".greet.go.metron--0.tmp",
            ".greet.go.metron-99999999999-0.tmp",
            ".greet.go.metron-1-99999999999999999999.tmp",
        ] {
            assert_eq!(parse(name), None, "{name}");
        }
    }

    #[test]
    fn a_long_multibyte_name_is_cut_at_a_character_boundary() {
        let name = fresh_name(&"é".repeat(150));
        assert!(name.len() <= 255, "{}", name.len());
        assert!(parse(&name).is_some());
    }

    #[test]
    fn an_earlier_process_with_our_pid_is_not_us() {
        let pid = std::process::id();
        assert!(!is_ours(pid, first_serial().wrapping_sub(1)));
        assert!(!is_ours(pid, first_serial() + 1_000_000));
        assert!(!is_ours(pid.wrapping_add(1), first_serial()));
        assert!(process_exists(pid));
        assert!(!process_exists(i32::MAX as u32));
    }
}
