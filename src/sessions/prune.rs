//! `metron sessions prune --older-than AGE`: the only way a session file is removed.
//!
//! Peers' users complain of transcripts deleted silently after 30 days; here nothing goes
//! unless the person asks, and every file removed is named.

use std::path::Path;
use std::time::Duration;

use super::store::SessionStore;

/// What a prune did.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Pruned {
    /// One line per session removed: its id, when it was last written, its first request.
    pub(crate) removed: Vec<String>,
    /// Sessions left in place.
    pub(crate) kept: usize,
    /// Files that could not be removed, with why and what to do.
    pub(crate) failed: Vec<String>,
}

/// Removes the sessions in `dir` last written before `cutoff` (Unix seconds), never
/// `keep` (a session being resumed).
pub(crate) fn prune(
    store: &dyn SessionStore,
    dir: &Path,
    cutoff: u64,
    keep: Option<&Path>,
) -> Pruned {
    let mut pruned = Pruned::default();
    // Only the files being removed are read (a summary each, one at a time, for the
    // line that names it): a directory of many sessions costs a listing, not their bytes.
    for file in super::read::files(dir) {
        if file.modified_secs() >= cutoff || keep == Some(file.path.as_path()) {
            pruned.kept += 1;
            continue;
        }
        let (date, time) = super::place::utc(file.modified_secs());
        let (id, first) = match super::read::summary(&file) {
            Some(session) => (
                session.saved.id,
                session.saved.first_request.unwrap_or_default(),
            ),
            None => (String::from("(unreadable)"), String::new()),
        };
        let first = crate::display::one_line_safe(&first);
        let first: String = first.chars().take(60).collect();
        let id = crate::display::one_line_safe(&id);
        match store.remove(&file.path) {
            Ok(()) => pruned.removed.push(format!(
                "{id} (last written {date} {} UTC): {first}",
                time.get(..5).unwrap_or(&time)
            )),
            Err(e) => pruned.failed.push(format!(
                "cannot remove {}: {e}; check the directory's permissions",
                file.path.display()
            )),
        }
    }
    pruned
}

/// The longest age `--older-than` takes: 100 years, so the arithmetic cannot overflow.
const MAX_DAYS: u64 = 36_500;

/// Parses `--older-than`: a whole number and `d`, `h` or `w` (`30d`).
pub(crate) fn parse_age(text: &str) -> Result<Duration, String> {
    let usage = || format!("`{text}` is not an age; write a number and d, h or w, for example 30d");
    let text = text.trim();
    let split = text.len().saturating_sub(1);
    let (number, unit) = (
        text.get(..split).unwrap_or(""),
        text.get(split..).unwrap_or(""),
    );
    let n: u64 = number.parse().map_err(|_| usage())?;
    let hours = match unit {
        "h" => n,
        "d" => n.saturating_mul(24),
        "w" => n.saturating_mul(24 * 7),
        _ => return Err(usage()),
    };
    if hours > MAX_DAYS * 24 {
        return Err(format!(
            "`{text}` is over {MAX_DAYS} days; write a smaller age"
        ));
    }
    Ok(Duration::from_secs(hours * 3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_a_number_and_a_unit() {
        assert_eq!(parse_age("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_age("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse_age("5h"), Ok(Duration::from_secs(5 * 3600)));
        assert_eq!(
            parse_age("36500d"),
            Ok(Duration::from_secs(36_500 * 86_400))
        );
        for bad in ["30", "d", "-1d", "1.5d", "30days", "", "36501d"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
    }
}
