//! Authority: every decision between a model's proposal and an effect, in one place.
//!
//! A tool call moves through fixed stages, and this module owns all the ones that decide:
//!
//! 1. **policy** ([`policy`]): was the tool offered, is this the same call a third time,
//!    did the person stop the turn;
//! 2. the tool *plans* the call without any effect (the canonical diff with its
//!    preconditions, or the resolved argv) and states it as a [`Request`];
//! 3. **approval** ([`Authority::authorize`]): `auto_approve_patches` from a trusted
//!    config, a standing grant of this session ([`grants`]), or the session's
//!    [`Approver`] (a person, `--yes`, or nobody); a Ctrl-C before the effect starts
//!    stops it;
//! 4. the tool *executes* only an approved plan, holding writes to the revisions the model
//!    read ([`revisions`], the preconditions);
//! 5. **evidence** ([`journal`]): approvals and effects are journaled as they happen, and
//!    the agent turns them into the ledger. Nothing is ever inferred from the model's
//!    words.
//!
//! The tools never see the approver or the grants: they hold a request up to
//! [`Authority::authorize`] and get a [`Verdict`]. Nothing outside this module can swap
//! the approver or write evidence except through the methods below.

pub(crate) mod activity;
pub(crate) mod admission;
pub(crate) mod applied;
pub mod approval;
mod cancel;
mod grants;
pub mod journal;
pub(crate) mod policy;
pub(crate) mod revisions;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use applied::{AppliedPatch, AppliedPatches};
pub(crate) use approval::{Approver, Decision, Request};
pub(crate) use cancel::CancelToken;
use grants::Grants;
use journal::{ApprovalOutcome, ApprovalRecord, ApprovalSource, Effect, Journal};
use revisions::{Revision, Revisions};

use crate::project::ProjectPath;

/// What authority decided about a request, for the tool to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Go ahead.
    Approved,
    /// The person said no (or pressed Ctrl-C at the question), with their reason if they
    /// gave one.
    Declined(Option<String>),
    /// Nobody can answer; the text says how the user can allow it.
    Unanswerable(String),
    /// Approved, but the person pressed Ctrl-C in this turn before the effect started.
    Cancelled,
}

/// The session's authority: the approver, the grants, the revisions the model read, the
/// journal of evidence, and the person's Ctrl-C.
#[derive(Debug)]
pub struct Authority {
    approver: Box<dyn Approver>,
    auto_approve_patches: bool,
    cancel: CancelToken,
    activity: activity::Activity,
    state: Mutex<State>,
}

/// Everything that changes during a session, behind one lock (the agent and the tool
/// thread take turns with it; they never hold it across a question or an effect).
#[derive(Debug, Default)]
struct State {
    applied: AppliedPatches,
    grants: Grants,
    journal: Journal,
    revisions: Revisions,
    /// The person pressed Ctrl-C at a question of the current turn.
    turn_cancelled: bool,
}

impl Authority {
    /// An authority asking `approver`, with `auto_approve_patches` from a trusted config
    /// (the front ends pass `false` where it must not apply), and the session's Ctrl-C.
    pub(crate) fn new(
        approver: Box<dyn Approver>,
        auto_approve_patches: bool,
        cancel: CancelToken,
    ) -> Authority {
        Authority {
            approver,
            auto_approve_patches,
            cancel,
            activity: activity::Activity::default(),
            state: Mutex::default(),
        }
    }

    /// The same authority with some parts replaced: for the builders that set a session
    /// up, before any call (the state starts empty either way).
    pub(crate) fn rebuilt(
        self,
        approver: Option<Box<dyn Approver>>,
        auto_approve_patches: Option<bool>,
        cancel: Option<CancelToken>,
    ) -> Authority {
        Authority {
            approver: approver.unwrap_or(self.approver),
            auto_approve_patches: auto_approve_patches.unwrap_or(self.auto_approve_patches),
            cancel: cancel.unwrap_or(self.cancel),
            activity: self.activity,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state is append-only records; a panic elsewhere leaves it usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What is running now on the person's behalf (for the elapsed-time line).
    pub(crate) fn activity(&self) -> &activity::Activity {
        &self.activity
    }

    /// The session's Ctrl-C token.
    pub(crate) fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// Decides whether a planned write or execution may go ahead: `auto_approve_patches`
    /// for a patch, then a standing grant, then the approver. Every decision, who made it
    /// and how long it took are journaled; an `a` answer becomes a grant.
    pub(crate) fn authorize(&self, request: &Request<'_>) -> Verdict {
        let verdict = self.decide(request);
        if verdict == Verdict::Approved && self.cancel.is_cancelled() {
            return Verdict::Cancelled;
        }
        verdict
    }

    fn decide(&self, request: &Request<'_>) -> Verdict {
        if self.auto_approve_patches && matches!(request, Request::Patch { .. }) {
            self.journal_approval(
                ApprovalSource::TrustedConfig,
                ApprovalOutcome::Yes,
                None,
                &[],
            );
            return Verdict::Approved;
        }
        let covered = self.state().grants.covering(request);
        if let Some(scope) = covered {
            self.state().grants.approved(request, false);
            self.journal_approval(
                ApprovalSource::Standing,
                ApprovalOutcome::Yes,
                Some(scope),
                request.warnings(),
            );
            return Verdict::Approved;
        }
        let started = Instant::now();
        let decision = self.approver.decide(request);
        let waited = started.elapsed();
        // `a` is offered only where a grant may follow; an approver that answers it anyway
        // (at a warned command) gets a plain yes, so nothing is granted behind a warning.
        let decision = match decision {
            Decision::ApprovedForSession if !request.offers_standing() => Decision::Approved,
            decision => decision,
        };
        let (outcome, scope) = match &decision {
            Decision::Approved => (ApprovalOutcome::Yes, None),
            Decision::ApprovedForSession => (
                ApprovalOutcome::YesForSession,
                Some(request.standing_scope()),
            ),
            Decision::Declined(_) | Decision::Interrupted => (ApprovalOutcome::No, None),
            Decision::Unanswerable(_) => (ApprovalOutcome::Unanswerable, None),
        };
        {
            let mut state = self.state();
            if matches!(decision, Decision::Approved | Decision::ApprovedForSession) {
                state
                    .grants
                    .approved(request, decision == Decision::ApprovedForSession);
            }
            state.journal.approvals.push(ApprovalRecord {
                source: self.approver.source(),
                outcome,
                waited,
                scope,
                reason: match &decision {
                    Decision::Declined(reason) => reason.clone(),
                    _ => None,
                },
                warnings: request.warnings().to_vec(),
            });
        }
        match decision {
            Decision::Approved | Decision::ApprovedForSession => Verdict::Approved,
            Decision::Declined(reason) => Verdict::Declined(reason),
            Decision::Interrupted => {
                self.state().turn_cancelled = true;
                Verdict::Declined(None)
            }
            Decision::Unanswerable(why) => Verdict::Unanswerable(why),
        }
    }

    fn journal_approval(
        &self,
        source: ApprovalSource,
        outcome: ApprovalOutcome,
        scope: Option<String>,
        warnings: &[String],
    ) {
        self.state().journal.approvals.push(ApprovalRecord {
            source,
            outcome,
            waited: Duration::ZERO,
            scope,
            reason: None,
            warnings: warnings.to_vec(),
        });
    }

    /// Records a patch that was written (for `/diff` and `/undo`).
    pub(crate) fn record_applied(&self, patch: AppliedPatch) {
        self.state().applied.push(patch);
    }

    /// Numbers the newest applied patch with the ledger's call number.
    pub(crate) fn number_newest_applied(&self, call: usize) {
        self.state().applied.number_newest(call);
    }

    /// The newest applied patch not yet undone.
    pub(crate) fn newest_applied(&self) -> Option<AppliedPatch> {
        self.state().applied.newest().cloned()
    }

    /// Forgets the newest applied patch, once it has been undone.
    pub(crate) fn pop_applied(&self) -> Option<AppliedPatch> {
        self.state().applied.pop()
    }

    /// Every file written in this session, with its content and permission bits before
    /// metron's first write.
    pub(crate) fn originals(&self) -> Vec<(ProjectPath, applied::Original)> {
        self.state().applied.originals().to_vec()
    }

    /// Journals an effect (a write, a command run, a conflict) the moment it happened.
    pub(crate) fn journal_effect(&self, effect: Effect) {
        self.state().journal.effects.push(effect);
    }

    /// Takes everything journaled since the last call (the agent drains it after every
    /// call, so each entry belongs to exactly one call).
    pub fn take_journal(&self) -> Journal {
        std::mem::take(&mut self.state().journal)
    }

    /// A new turn starts: earlier presses and a question's Ctrl-C no longer count.
    pub(crate) fn start_turn(&self) {
        self.state().turn_cancelled = false;
        self.cancel.forget();
    }

    /// The person stopped this turn (Ctrl-C at a question, or while a tool ran): the
    /// calls left in the model's reply must not run, and nothing more goes to the model.
    pub(crate) fn turn_cancelled(&self) -> bool {
        self.state().turn_cancelled || self.cancel.is_cancelled()
    }

    /// The standing approvals granted in this session, in words (for `/ledger`).
    pub(crate) fn standing_approvals(&self) -> Vec<String> {
        self.state().grants.scopes()
    }

    /// Records an already computed revision (search_text hashes on its worker threads;
    /// apply_patch records what it wrote).
    pub(crate) fn record_revision(
        &self,
        key: &ProjectPath,
        hash: journal::BlobId,
        how: impl Into<String>,
    ) {
        self.state().revisions.record(key, hash, how);
    }

    /// Forgets the revision of `path` (the model's own patch deleted it).
    pub(crate) fn forget_revision(&self, path: &str) {
        self.state().revisions.forget(path);
    }

    /// The revision the model last read of `path`, if it read it.
    pub(crate) fn revision(&self, path: &str) -> Option<Revision> {
        self.state().revisions.get(path).cloned()
    }

    /// Whether `current` is still the revision the model read of `path` (`None`: it has
    /// not read it).
    pub(crate) fn is_current(&self, path: &str, current: Option<&[u8]>) -> Option<bool> {
        self.state().revisions.is_current(path, current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers from a script and counts the questions.
    #[derive(Debug)]
    struct Scripted {
        answers: Mutex<Vec<Decision>>,
        asked: AtomicUsize,
    }

    impl Approver for Scripted {
        fn decide(&self, _request: &Request<'_>) -> Decision {
            self.asked.fetch_add(1, Ordering::SeqCst);
            self.answers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(0)
        }
    }

    fn authority(answers: Vec<Decision>) -> Authority {
        Authority::new(
            Box::new(Scripted {
                answers: Mutex::new(answers),
                asked: AtomicUsize::new(0),
            }),
            false,
            CancelToken::new(),
        )
    }

    fn patch<'a>(files: &'a [String]) -> Request<'a> {
        Request::Patch {
            summary: "",
            diff: b"",
            files,
        }
    }

    #[test]
    fn a_standing_patch_approval_covers_only_files_already_approved() {
        let authority = authority(vec![
            Decision::Approved,
            Decision::ApprovedForSession,
            Decision::Declined(None),
        ]);
        let a = vec!["a.go".to_owned()];
        let b = vec!["b.go".to_owned()];
        let ab = vec!["a.go".to_owned(), "b.go".to_owned()];
        let c = vec!["a.go".to_owned(), "c.go".to_owned()];
        assert_eq!(authority.authorize(&patch(&a)), Verdict::Approved);
        assert_eq!(authority.authorize(&patch(&b)), Verdict::Approved); // `a`: standing
        assert_eq!(authority.authorize(&patch(&ab)), Verdict::Approved); // not asked
        assert_eq!(authority.authorize(&patch(&c)), Verdict::Declined(None)); // c.go is new
        let journal = authority.take_journal();
        let sources: Vec<_> = journal
            .approvals
            .iter()
            .map(|r| (r.source, r.outcome))
            .collect();
        assert_eq!(
            sources,
            [
                (ApprovalSource::Person, ApprovalOutcome::Yes),
                (ApprovalSource::Person, ApprovalOutcome::YesForSession),
                (ApprovalSource::Standing, ApprovalOutcome::Yes),
                (ApprovalSource::Person, ApprovalOutcome::No),
            ]
        );
        assert_eq!(authority.standing_approvals().len(), 1);
    }

    #[test]
    fn a_standing_command_approval_covers_exactly_its_prefix() {
        let authority = authority(vec![Decision::ApprovedForSession, Decision::Declined(None)]);
        let argv = vec!["/usr/bin/go".to_owned(), "test".to_owned()];
        let ask = |prefix: &str| {
            authority.authorize(&Request::Command {
                argv: &argv,
                prefix,
                warnings: &[],
                sandbox: "no network",
            })
        };
        assert_eq!(ask("go test"), Verdict::Approved);
        assert_eq!(ask("go test"), Verdict::Approved); // standing
        assert_eq!(ask("go vet"), Verdict::Declined(None)); // another prefix: asked
        assert_eq!(
            authority.standing_approvals(),
            ["commands starting with `go test`, run as /usr/bin/go (sandbox: no network)"]
        );
    }

    #[test]
    fn a_standing_command_approval_covers_only_the_same_program() {
        let authority = authority(vec![Decision::ApprovedForSession, Decision::Declined(None)]);
        let ask = |program: &str| {
            let argv = vec![program.to_owned(), "test".to_owned()];
            authority.authorize(&Request::Command {
                argv: &argv,
                prefix: "gradlew test",
                warnings: &[],
                sandbox: "no network",
            })
        };
        assert_eq!(ask("/usr/bin/gradlew"), Verdict::Approved); // `a`
        assert_eq!(ask("/usr/bin/gradlew"), Verdict::Approved); // standing
        // The same words resolved to another file (say the project's ./gradlew): asked.
        assert_eq!(ask("/project/gradlew"), Verdict::Declined(None));
    }

    #[test]
    fn warnings_are_journaled_and_never_covered_by_a_standing_approval() {
        let authority = authority(vec![
            Decision::ApprovedForSession,
            Decision::Approved,
            Decision::Declined(None),
        ]);
        let argv = vec!["/usr/bin/cargo".to_owned(), "test".to_owned()];
        let warnings = vec!["this repository configures cargo: ...".to_owned()];
        let ask = |warnings: &[String]| {
            authority.authorize(&Request::Command {
                argv: &argv,
                prefix: "cargo test",
                warnings,
                sandbox: "no network",
            })
        };
        // An `a` at a warned command (the front ends do not offer it) is a plain yes and
        // grants nothing: the same command without the warning is asked again.
        assert_eq!(ask(&warnings), Verdict::Approved); // `a`
        assert_eq!(ask(&warnings), Verdict::Approved); // asked again: it warns
        assert_eq!(ask(&[]), Verdict::Declined(None)); // asked: no grant was made
        assert!(authority.standing_approvals().is_empty());
        let journal = authority.take_journal();
        let records: Vec<_> = journal
            .approvals
            .iter()
            .map(|r| (r.source, r.outcome, r.warnings.clone()))
            .collect();
        assert_eq!(
            records,
            [
                (
                    ApprovalSource::Person,
                    ApprovalOutcome::Yes,
                    warnings.clone()
                ),
                (
                    ApprovalSource::Person,
                    ApprovalOutcome::Yes,
                    warnings.clone()
                ),
                (ApprovalSource::Person, ApprovalOutcome::No, Vec::new()),
            ]
        );
    }

    #[test]
    fn ctrl_c_at_a_question_cancels_the_turn_and_a_press_stops_an_approved_effect() {
        let authority = authority(vec![Decision::Interrupted, Decision::Approved]);
        let files = vec!["a.go".to_owned()];
        authority.start_turn();
        assert_eq!(authority.authorize(&patch(&files)), Verdict::Declined(None));
        assert!(authority.turn_cancelled());
        authority.start_turn();
        assert!(!authority.turn_cancelled());
        authority.cancel_token().cancel();
        assert_eq!(authority.authorize(&patch(&files)), Verdict::Cancelled);
    }

    #[test]
    fn auto_approve_covers_patches_only() {
        let authority = Authority::new(Box::new(approval::NobodyToAsk), true, CancelToken::new());
        let files = vec!["a.go".to_owned()];
        assert_eq!(authority.authorize(&patch(&files)), Verdict::Approved);
        let argv = vec!["/bin/echo".to_owned()];
        let command = Request::Command {
            argv: &argv,
            prefix: "echo",
            warnings: &[],
            sandbox: "no network",
        };
        assert!(matches!(
            authority.authorize(&command),
            Verdict::Unanswerable(_)
        ));
    }
}
