//! Sessions saved as they go, so that `metron -c` and `metron --resume ID` continue one.
//!
//! docs/sessions.md is the design: one append-only JSON Lines file per session under the
//! user's metron directory, grouped by project ([`place`]); one record per line
//! ([`format`]), each written with one call through the [`store`] trait; a reader that
//! skips a line cut by a crash and keeps the rest ([`read`]). The agent saves history as
//! it changes ([`log`]), compaction included, so a resumed session sends the same prompt
//! prefix as before. Standing approvals are never saved: authority is per session.

pub(crate) mod format;
pub(crate) mod log;
pub(crate) mod place;
pub(crate) mod prune;
pub(crate) mod read;
pub(crate) mod store;

use std::path::{Path, PathBuf};

pub(crate) use log::SessionLog;
pub(crate) use read::Saved;

/// Which session a run continues.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Resume {
    /// A new one.
    #[default]
    New,
    /// The last one written in this project (`-c`).
    Last,
    /// This one (`--resume ID`).
    Id(String),
}

/// The directory of the project's sessions, or `None` when there is no user directory
/// (neither `$METRON_CONFIG_DIR` nor `$HOME`).
pub(crate) fn project_dir(root: &Path) -> Option<PathBuf> {
    let user = crate::config::user_dir(&crate::config::ConfigEnv::from_process())?;
    Some(place::project_dir(&user, root))
}

/// The session `resume` names among those in `dir`, read back. Errors say what to do.
pub(crate) fn find(resume: &Resume, dir: &Path) -> Result<(PathBuf, Saved), String> {
    let path = match resume {
        Resume::New => return Err("no session was asked for".to_owned()),
        Resume::Last => {
            let (listed, _) = read::list(dir, 1);
            match listed.into_iter().next() {
                Some(last) => last.path,
                None => return Err(NOTHING_SAVED.to_owned()),
            }
        }
        Resume::Id(id) => {
            let path = dir.join(format!("{id}.{}", place::EXTENSION));
            if !place::valid_id(id) || !path.is_file() {
                return Err(format!(
                    "this project has no session `{}`; `metron --resume` lists them",
                    crate::display::one_line_safe(id)
                ));
            }
            path
        }
    };
    let saved = read::read(&path, format::Limits::default())?;
    Ok((path, saved))
}

/// The error for `-c` where nothing was saved.
pub(crate) const NOTHING_SAVED: &str =
    "this project has no saved session to continue; start one with `metron` or `metron -p`";

/// The one line a resume prints: what came back, what did not, and any lines skipped.
pub(crate) fn resumed_line(saved: &Saved) -> String {
    let skipped = match saved.skipped {
        0 => String::new(),
        1 => "; 1 unreadable line (cut by a crash?) was skipped".to_owned(),
        n => format!("; {n} unreadable lines (cut by a crash?) were skipped"),
    };
    format!(
        "resumed session {} ({} {}, {} messages){skipped}. Standing approvals are not carried over: authority is per session.",
        saved.id,
        saved.turns,
        if saved.turns == 1 {
            "request"
        } else {
            "requests"
        },
        saved.messages.len(),
    )
}

/// The `--resume` and `/sessions` list: one line per session, newest first, with its
/// time (UTC), model, requests and first request; a note for those left out.
pub(crate) fn list_lines(dir: &Path) -> Vec<String> {
    let (listed, more) = read::list(dir, read::LIST_LIMIT);
    let mut lines: Vec<String> = listed
        .iter()
        .map(|l| {
            let (date, time) = place::utc(l.modified);
            let first = l.saved.first_request.as_deref().unwrap_or("");
            let first: String = crate::display::one_line_safe(first)
                .chars()
                .take(60)
                .collect();
            format!(
                "{}  {date} {} UTC  {}  {}{} {}  {first}",
                l.saved.id,
                &time[..5],
                crate::display::one_line_safe(&l.saved.model),
                l.saved.turns,
                if l.partial { "+" } else { "" },
                if l.saved.turns == 1 && !l.partial {
                    "request "
                } else {
                    "requests"
                },
            )
        })
        .collect();
    if more > 0 {
        lines.push(format!("({more} older sessions not shown)"));
    }
    lines
}
