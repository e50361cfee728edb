//! Asking the person before anything changes.
//!
//! Tools that write or execute describe what they are about to do as a [`Request`] and
//! hand it to the session's [`Approver`]. Only an explicit yes approves: `n`, a bare
//! Return, end of input, and "nobody can answer here" all decline, and the decline goes
//! back to the model as text so it explains rather than retries. Any other answer (`ok`,
//! `sure`) is neither: the question is asked again with the answers it takes
//! ([`valid_answers`]), because a decline tells the model not to retry, which is not what
//! a person typing `ok` meant.

pub(crate) use super::journal::ApprovalSource;

/// Something a tool wants to do, as shown to the person.
#[derive(Debug)]
pub enum Request<'a> {
    /// Apply a patch.
    Patch {
        /// One line per file: what changes (`M src/a.go (+3 -1)`).
        summary: &'a str,
        /// The exact patch that will be applied, after repair.
        diff: &'a [u8],
        /// Every path the patch writes or removes (the scope of a standing approval).
        files: &'a [String],
    },
    /// Run a program.
    Command {
        /// The program, resolved to an absolute path, then its arguments.
        argv: &'a [String],
        /// The `allowed_commands` entry that admitted it (the scope of a standing
        /// approval).
        prefix: &'a str,
        /// What the person must know first: the repository chose the program (one inside
        /// the project, or one whose configuration in the project swaps what runs). Plain
        /// text; whoever shows it escapes it. A standing approval never covers a command
        /// with warnings, so each one is seen.
        warnings: &'a [String],
        /// What the command may reach while it runs, in one line (`writes the project
        /// (not .git) and a temp dir; no network`), or the notice that it runs unconfined.
        sandbox: &'a str,
    },
}

impl Request<'_> {
    /// The warnings to show with the question (none for a patch).
    pub fn warnings(&self) -> &[String] {
        match self {
            Request::Patch { .. } => &[],
            Request::Command { warnings, .. } => warnings,
        }
    }

    /// Whether `a` (a standing approval) may be offered and granted for this request: not
    /// when it carries warnings, since each warned command must be seen and answered.
    pub fn offers_standing(&self) -> bool {
        self.warnings().is_empty()
    }

    /// What a standing approval for this request covers, in words.
    pub(crate) fn standing_scope(&self) -> String {
        match self {
            Request::Patch { .. } => {
                "patches that touch only files already approved in this session".to_owned()
            }
            Request::Command { argv, prefix, .. } => {
                let program = argv.first().map_or("", String::as_str);
                format!(
                    "commands starting with `{prefix}` (allowlisted), run as {program}, in this session"
                )
            }
        }
    }
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Approved,
    /// Go ahead, and do not ask again in this session for requests of the same scope
    /// (the person answered `a`; see [`Request::standing_scope`]).
    ApprovedForSession,
    /// The person said no (or pressed Return, or closed the input), with the reason they
    /// typed, if any (`n use the existing helper`); the model reads it with the refusal.
    Declined(Option<String>),
    /// The person pressed Ctrl-C at the question: no, and the turn is cancelled, so no
    /// other call of it may run (see [`super::Authority::turn_cancelled`]).
    Interrupted,
    /// Nobody can answer (not a terminal, and `--yes` not given); the text says how to
    /// allow it.
    Unanswerable(String),
}

/// Decides whether a write or an execution may go ahead.
pub trait Approver: Send + Sync + std::fmt::Debug {
    /// Shows the request and returns the decision.
    fn decide(&self, request: &Request<'_>) -> Decision;

    /// Who decides, for the ledger.
    fn source(&self) -> ApprovalSource {
        ApprovalSource::Person
    }
}

/// Approves everything: `--yes`, or `auto_approve_patches` from a trusted config.
#[derive(Debug, Default)]
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn decide(&self, _request: &Request<'_>) -> Decision {
        Decision::Approved
    }

    fn source(&self) -> ApprovalSource {
        ApprovalSource::YesFlag
    }
}

/// Declines everything because nobody can be asked; the default when stdin is not a
/// terminal, so scripts fail closed.
#[derive(Debug, Default)]
pub(crate) struct NobodyToAsk;

impl Approver for NobodyToAsk {
    fn decide(&self, request: &Request<'_>) -> Decision {
        let what = match request {
            Request::Patch { .. } => "applying a patch",
            Request::Command { .. } => "running a command",
        };
        Decision::Unanswerable(format!(
            "{what} needs the user's approval, and nobody can answer here (one-shot mode, or input that is not a terminal); the user can rerun with --yes to allow it"
        ))
    }

    fn source(&self) -> ApprovalSource {
        ApprovalSource::Nobody
    }
}

/// Reads a typed answer: only an explicit yes approves; `a` approves for the session when
/// that was offered; `n` or `no` (followed by words, which are the reason) or a bare
/// Return declines. Anything else (`ok`, `yes please`, an `a` that was not offered) is
/// `None`: not an answer, to be asked again with [`valid_answers`].
pub(crate) fn decision_for(answer: &str, offer_standing: bool) -> Option<Decision> {
    let answer = answer.trim();
    match answer {
        "y" | "Y" | "yes" | "Yes" | "YES" => return Some(Decision::Approved),
        "a" | "A" if offer_standing => return Some(Decision::ApprovedForSession),
        "" => return Some(Decision::Declined(None)),
        _ => {}
    }
    let (first, rest) = answer
        .split_once(char::is_whitespace)
        .unwrap_or((answer, ""));
    let first = first.trim_end_matches([',', ':', '.']);
    if !matches!(first, "n" | "N" | "no" | "No" | "NO") {
        return None;
    }
    let reason = Some(rest.trim()).filter(|rest| !rest.is_empty());
    Some(Decision::Declined(reason.map(str::to_owned)))
}

/// What is said after an answer [`decision_for`] does not take, before the question is
/// asked again: the answers it does take, `a` only where it was offered.
pub(crate) fn valid_answers(offer_standing: bool) -> &'static str {
    if offer_standing {
        "not an answer: type y to go ahead, n to decline (`n REASON` also tells the model why), or a for yes and not asking again for what is named above; Return alone declines"
    } else {
        "not an answer: type y to go ahead or n to decline (`n REASON` also tells the model why); Return alone declines"
    }
}

/// True when the answer was a bare `n`/`no` (or a bare Return): the person may want to say
/// why at a follow-up prompt.
pub(crate) fn may_add_reason(answer: &str) -> bool {
    matches!(answer.trim(), "" | "n" | "N" | "no" | "No" | "NO")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nobody_to_ask_declines_and_says_how_to_allow() {
        let argv = vec!["/usr/bin/go".to_owned()];
        match NobodyToAsk.decide(&Request::Command {
            argv: &argv,
            prefix: "go",
            warnings: &[],
            sandbox: "no network",
        }) {
            Decision::Unanswerable(text) => assert!(text.contains("--yes"), "{text}"),
            other => panic!("expected Unanswerable, got {other:?}"),
        }
    }

    #[test]
    fn only_an_explicit_yes_approves() {
        assert_eq!(decision_for("y\n", false), Some(Decision::Approved));
        assert_eq!(decision_for("YES", true), Some(Decision::Approved));
        assert_eq!(
            decision_for("a\n", true),
            Some(Decision::ApprovedForSession)
        );
        assert_eq!(decision_for("\n", true), Some(Decision::Declined(None)));
    }

    /// Only a recognised decline declines: anything else is asked again, so `ok` is never
    /// taken for a no that the model is told not to retry.
    #[test]
    fn an_unrecognised_answer_is_neither_yes_nor_no() {
        for typed in ["ok\n", "sure", "yes please\n", "nope", "y y", "ja", "1"] {
            assert_eq!(decision_for(typed, true), None, "{typed:?}");
        }
        // `a` is an answer only where it was offered.
        assert_eq!(decision_for("a\n", false), None);
        assert!(valid_answers(true).contains("a for yes"));
        assert!(!valid_answers(false).contains(" a "));
        for offered in [true, false] {
            let text = valid_answers(offered);
            assert!(text.contains("y to go ahead") && text.contains("n to decline"));
            assert!(text.ends_with("Return alone declines"), "{text}");
        }
    }

    #[test]
    fn a_decline_can_carry_a_reason() {
        assert_eq!(
            decision_for("n use the existing helper\n", true),
            Some(Decision::Declined(Some(
                "use the existing helper".to_owned()
            )))
        );
        assert_eq!(
            decision_for("no, keep the old name", false),
            Some(Decision::Declined(Some("keep the old name".to_owned())))
        );
        assert_eq!(decision_for("n\n", true), Some(Decision::Declined(None)));
        assert!(may_add_reason("n\n") && may_add_reason("\n"));
        assert!(!may_add_reason("n because") && !may_add_reason("y"));
    }
}
