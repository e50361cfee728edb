//! Evidence that knows when it is stale (issue 28, section 3).
//!
//! The ledger says what the session did; some of it is a claim about files: "I wrote
//! a.txt", "I read b.go", "`go test` passed". Before each new turn (and so at the first
//! turn of a resumed session) those claims are checked against the files now, and one
//! compact note tells the model and the person what no longer holds, so neither goes on
//! believing a "tests passed" from before an edit.
//!
//! Bounded: at most [`MAX_FILES_CHECKED`] files hashed per turn (the newest facts
//! first), each only if it is at most [`MAX_HASH_BYTES`] (a larger one is not checked);
//! and for commands, one walk of the project that stops after [`MAX_FILES_WALKED`]
//! entries. A fact found stale is reported once.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::project::Project;

/// The most bytes read to hash one file. A source file is far smaller; a file over it is
/// left unchecked rather than read whole at every turn.
pub(crate) const MAX_HASH_BYTES: u64 = 1024 * 1024;

/// The most files hashed per turn: a turn start must stay instant (64 files of 1 MiB
/// at most is 64 MiB read in the worst case, a few milliseconds for source files).
pub(crate) const MAX_FILES_CHECKED: usize = 64;

/// The most entries the walk for "files changed since the command passed" looks at.
pub(crate) const MAX_FILES_WALKED: usize = 10_000;

/// The most claims a session keeps: far more than the calls of a long session make, so
/// only a runaway one reaches it; the oldest go first (the newest are what is checked).
pub(crate) const MAX_FACTS: usize = 4096;

/// Adds `fact` to `facts`, dropping the oldest beyond [`MAX_FACTS`].
pub(crate) fn remember(facts: &mut Vec<Fact>, fact: Fact) {
    facts.push(fact);
    let excess = facts.len().saturating_sub(MAX_FACTS);
    facts.drain(..excess);
}

/// What a fact claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Claim {
    /// metron wrote the file, leaving this content.
    Wrote,
    /// The model read the file while it held this content.
    Read,
    /// The command exited 0.
    Passed,
}

/// One claim about the project, from a ledger entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Fact {
    /// What it claims.
    pub(crate) claim: Claim,
    /// The file (relative to the root) or the command.
    pub(crate) subject: String,
    /// The file's content id then (git's blob id); `None` for a command.
    pub(crate) hash: Option<String>,
    /// When, in milliseconds since the Unix epoch.
    pub(crate) at_ms: u64,
    /// The ledger's number for the call (0 when the ledger was not restored).
    pub(crate) call: usize,
    /// Already reported as no longer true.
    #[serde(default)]
    pub(crate) stale: bool,
}

impl Fact {
    /// A fact made now.
    pub(crate) fn now(claim: Claim, subject: String, hash: Option<String>, call: usize) -> Fact {
        Fact {
            claim,
            subject,
            hash,
            at_ms: now_ms(),
            call,
            stale: false,
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The content id of the file at `path` now: `Ok(None)` when it is gone, `Err(())` when
/// it cannot be checked (over [`MAX_HASH_BYTES`], unreadable).
pub(crate) fn hash_now(project: &Project, path: &str) -> Result<Option<String>, ()> {
    let resolved = project.resolve(path).map_err(|_| ())?;
    match project.read_capped(&resolved, MAX_HASH_BYTES) {
        Ok(bytes) => Ok(Some(
            crate::authority::journal::content_hash(&bytes).to_string(),
        )),
        // Asked through the boundary, which is the only code that looks at the files.
        Err(crate::project::BoundaryError::NotFound(_)) => Ok(None),
        Err(_) => Err(()),
    }
}

/// Checks `facts` against the project now, marks the ones found stale, and returns the
/// one note for the model and the person (`None` when everything still holds).
pub(crate) fn check(project: &Project, facts: &mut [Fact]) -> Option<String> {
    let mut parts = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut hashed = 0;
    // The newest fact about a file is what the session last knew of it.
    for i in (0..facts.len()).rev() {
        let fact = &facts[i];
        if fact.claim == Claim::Passed || !seen.insert(fact.subject.clone()) {
            continue;
        }
        if fact.stale || hashed >= MAX_FILES_CHECKED {
            continue;
        }
        hashed += 1;
        let Ok(now) = hash_now(project, &fact.subject) else {
            continue;
        };
        if now == fact.hash {
            continue;
        }
        let verb = match fact.claim {
            Claim::Wrote => "you wrote it",
            _ => "you read it",
        };
        let what = if now.is_none() {
            "was deleted"
        } else {
            "changed"
        };
        parts.push(format!(
            "{} {what} outside metron ({verb} at {})",
            fact.subject,
            clock(fact.at_ms)
        ));
        let subject = fact.subject.clone();
        for older in facts[..=i].iter_mut().filter(|f| f.subject == subject) {
            older.stale = true;
        }
    }
    // Commands: the newest pass of each, against the files changed since.
    let mut commands_seen: HashSet<String> = HashSet::new();
    let mut walked: Option<Vec<SystemTime>> = None;
    for i in (0..facts.len()).rev() {
        let fact = &facts[i];
        if fact.claim != Claim::Passed || !commands_seen.insert(fact.subject.clone()) || fact.stale
        {
            continue;
        }
        let times = walked.get_or_insert_with(|| modification_times(project));
        let ran = UNIX_EPOCH + Duration::from_millis(fact.at_ms);
        let changed = times.iter().filter(|t| **t > ran).count();
        if changed == 0 {
            continue;
        }
        parts.push(format!(
            "`{}` passed before {changed} {} changed",
            fact.subject,
            if changed == 1 { "file" } else { "files" }
        ));
        let subject = fact.subject.clone();
        for older in facts[..=i]
            .iter_mut()
            .filter(|f| f.claim == Claim::Passed && f.subject == subject)
        {
            older.stale = true;
        }
    }
    (!parts.is_empty()).then(|| format!("since the last turn: {}", parts.join("; ")))
}

/// The modification times of the project's files, by the read tools' walk (ignore rules,
/// `.git` never entered), at most [`MAX_FILES_WALKED`] of them.
fn modification_times(project: &Project) -> Vec<SystemTime> {
    let Ok((builder, _)) = crate::tools::walk::builder(project, None) else {
        return Vec::new();
    };
    builder
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .take(MAX_FILES_WALKED)
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .collect()
}

/// `HH:MM` UTC for the note.
fn clock(ms: u64) -> String {
    let secs = ms / 1000;
    format!("{:02}:{:02} UTC", secs % 86_400 / 3600, secs % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(dir: &std::path::Path) -> Project {
        Project::discover(dir).expect("a project")
    }

    fn read_fact(project: &Project, path: &str) -> Fact {
        let hash = hash_now(project, path).expect("checkable");
        Fact::now(Claim::Read, path.to_owned(), hash, 1)
    }

    #[test]
    fn at_most_max_facts_are_kept_the_newest() {
        let mut facts = Vec::new();
        for n in 0..=MAX_FACTS {
            remember(
                &mut facts,
                Fact::now(Claim::Passed, format!("c{n}"), None, n),
            );
        }
        assert_eq!(facts.len(), MAX_FACTS);
        assert_eq!(facts[0].subject, "c1");
        assert_eq!(facts[MAX_FACTS - 1].subject, format!("c{MAX_FACTS}"));
    }

    #[test]
    fn a_file_at_the_hash_bound_is_checked_and_one_past_it_is_not() {
        let dir = tempfile::tempdir().expect("temp dir");
        let at = vec![b'a'; MAX_HASH_BYTES as usize];
        std::fs::write(dir.path().join("at.bin"), &at).expect("write");
        std::fs::write(dir.path().join("past.bin"), [at.as_slice(), b"a"].concat()).expect("write");
        let p = project(dir.path());
        assert!(matches!(hash_now(&p, "at.bin"), Ok(Some(_))));
        assert_eq!(hash_now(&p, "past.bin"), Err(()));
        assert_eq!(hash_now(&p, "gone.bin"), Ok(None));
        let mut facts = vec![read_fact(&p, "at.bin")];
        std::fs::write(dir.path().join("at.bin"), &at[1..]).expect("edit");
        let note = check(&p, &mut facts).expect("a note");
        assert!(
            note.contains("at.bin changed outside metron (you read it at "),
            "{note}"
        );
        assert!(facts[0].stale);
        assert_eq!(check(&p, &mut facts), None, "said once");
    }

    #[test]
    fn at_most_the_newest_files_up_to_the_bound_are_hashed_in_one_turn() {
        let dir = tempfile::tempdir().expect("temp dir");
        let p = project(dir.path());
        let mut facts = Vec::new();
        for n in 0..=MAX_FILES_CHECKED {
            let name = format!("f{n}.txt");
            std::fs::write(dir.path().join(&name), "before").expect("write");
            facts.push(read_fact(&p, &name));
        }
        for n in 0..=MAX_FILES_CHECKED {
            std::fs::write(dir.path().join(format!("f{n}.txt")), "after").expect("edit");
        }
        let note = check(&p, &mut facts).expect("a note");
        assert_eq!(
            note.matches("changed outside metron").count(),
            MAX_FILES_CHECKED
        );
        assert!(!facts[0].stale, "the oldest is left for the next turn");
        let next = check(&p, &mut facts).expect("the rest");
        assert!(
            next.starts_with("since the last turn: f0.txt changed"),
            "{next}"
        );
    }
}
