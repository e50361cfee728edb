//! Standing approvals: what the person allowed for the rest of the session by answering
//! `a` at a question.
//!
//! A grant is narrow on purpose. For patches it covers only files already approved in
//! this session (a created file, a same-named file elsewhere or a rename out of an
//! approved file is asked about again); for commands it covers exactly the
//! `allowed_commands` entry that admitted the command, run as the same resolved program
//! (so `a` at `go test` run as `/usr/bin/go` does not cover a `go` found elsewhere later,
//! nor a project program with the same words), under the same sandbox (so `a` at
//! `npm test` without network does not cover `npm install`, which `command_network`
//! lets out). A command with warnings is never covered,
//! and answering `a` at one grants nothing: the repository chose its program.

use std::collections::BTreeSet;

use super::approval::Request;

/// What one `a` at a command question covers: the same resolved program (the absolute
/// path the question showed) with the same allowlist entry. Keyed by both because the
/// entry alone names words, not a file: `gradlew test` admits a PATH `gradlew` and, as
/// an `allowed_project_programs` entry, the project's `./gradlew`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct CommandGrant {
    /// The absolute program, `argv[0]` of the request.
    program: String,
    /// The entry that admitted it.
    prefix: String,
    /// What the sandbox let it reach: `a` at a command without network does not cover a
    /// later one with the same prefix that `command_network` lets out (`npm` admits both
    /// `npm test` and `npm install`).
    sandbox: String,
}

impl CommandGrant {
    /// The grant a command request would need (or create); `None` for a patch or an
    /// empty argv.
    fn of(request: &Request<'_>) -> Option<CommandGrant> {
        match request {
            Request::Patch { .. } => None,
            Request::Command {
                argv,
                prefix,
                sandbox,
                ..
            } => argv.first().map(|program| CommandGrant {
                program: program.clone(),
                prefix: (*prefix).to_owned(),
                sandbox: (*sandbox).to_owned(),
            }),
        }
    }
}

/// The session's standing approvals.
#[derive(Debug, Default)]
pub(crate) struct Grants {
    /// Every file of every patch approved in this session.
    approved_files: BTreeSet<String>,
    /// `a` was answered at a patch question: patches touching only `approved_files` go
    /// ahead without asking.
    patches: bool,
    /// Commands approved with `a`: the resolved program and the allowlist entry.
    commands: BTreeSet<CommandGrant>,
}

impl Grants {
    /// The scope of the standing approval that covers `request`, if one does.
    pub(crate) fn covering(&self, request: &Request<'_>) -> Option<String> {
        match request {
            Request::Patch { files, .. } => (self.patches
                && !files.is_empty()
                && files.iter().all(|f| self.approved_files.contains(f)))
            .then(|| request.standing_scope()),
            Request::Command { .. } => (request.offers_standing()
                && CommandGrant::of(request).is_some_and(|g| self.commands.contains(&g)))
            .then(|| request.standing_scope()),
        }
    }

    /// Records an approval, and a standing grant when the person answered `a`.
    pub(crate) fn approved(&mut self, request: &Request<'_>, for_session: bool) {
        match request {
            Request::Patch { files, .. } => {
                self.approved_files.extend(files.iter().cloned());
                self.patches |= for_session;
            }
            Request::Command { .. } => {
                if let Some(grant) =
                    CommandGrant::of(request).filter(|_| for_session && request.offers_standing())
                {
                    self.commands.insert(grant);
                }
            }
        }
    }

    /// Every grant, in words (for `/ledger`).
    pub(crate) fn scopes(&self) -> Vec<String> {
        let mut scopes = Vec::new();
        if self.patches {
            let files: Vec<_> = self.approved_files.iter().map(String::as_str).collect();
            scopes.push(format!(
                "patches that touch only files already approved in this session (now: {})",
                files.join(", ")
            ));
        }
        for CommandGrant {
            program,
            prefix,
            sandbox,
        } in &self.commands
        {
            scopes.push(format!(
                "commands starting with `{prefix}`, run as {program} (sandbox: {sandbox})"
            ));
        }
        scopes
    }
}
