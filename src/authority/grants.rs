//! Standing approvals: what the person allowed for the rest of the session by answering
//! `a` at a question.
//!
//! A grant is narrow on purpose. For patches it covers only files already approved in
//! this session (a created file, a same-named file elsewhere or a rename out of an
//! approved file is asked about again); for commands it covers exactly the
//! `allowed_commands` entry that admitted the command.

use std::collections::BTreeSet;

use super::approval::Request;

/// The session's standing approvals.
#[derive(Debug, Default)]
pub(crate) struct Grants {
    /// Every file of every patch approved in this session.
    approved_files: BTreeSet<String>,
    /// `a` was answered at a patch question: patches touching only `approved_files` go
    /// ahead without asking.
    patches: bool,
    /// `allowed_commands` entries approved with `a`.
    command_prefixes: BTreeSet<String>,
}

impl Grants {
    /// The scope of the standing approval that covers `request`, if one does.
    pub(crate) fn covering(&self, request: &Request<'_>) -> Option<String> {
        match request {
            Request::Patch { files, .. } => (self.patches
                && !files.is_empty()
                && files.iter().all(|f| self.approved_files.contains(f)))
            .then(|| request.standing_scope()),
            Request::Command {
                prefix, warnings, ..
            } => (warnings.is_empty() && self.command_prefixes.contains(*prefix))
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
            Request::Command { prefix, .. } => {
                if for_session {
                    self.command_prefixes.insert((*prefix).to_owned());
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
        for prefix in &self.command_prefixes {
            scopes.push(format!("commands starting with `{prefix}`"));
        }
        scopes
    }
}
