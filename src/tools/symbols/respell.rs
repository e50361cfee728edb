//! What a language's files are turned into before its grammar reads them.
//!
//! A grammar that has no tokens for a spelling (C's trigraphs, PHP 5's script tags) or
//! whose scanner misreads a construct that defines nothing (bash's regular expressions
//! and glob patterns) loses the rest of the file to one error, or reads the code after
//! it as text, and every definition there with it. Each rewrite here
//! makes a copy of the same length that the grammar reads as the language means it:
//! every byte offset, line and column stays the file's own, so a definition found in
//! the copy has the name and line it has as written. A file without the construct is
//! not copied.

use super::{php_script, shell_source, trigraphs};

/// How a language's files are respelled before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Respell {
    /// Parsed as written.
    AsWritten,
    /// C's trigraphs and digraphs replaced by the punctuation they stand for.
    CTrigraphsAndDigraphs,
    /// The punctuation of the shell patterns tree-sitter-bash misreads overwritten.
    ShellPatterns,
    /// PHP 5's `<script language="php">` and `</script>` read as `<?php` and `?>`.
    PhpScriptTags,
}

impl Respell {
    /// The bytes to parse for `source`: a respelled copy, or `None` when `source` is
    /// parsed as it is (this language is not respelled, or the file has nothing to
    /// respell).
    pub(crate) fn apply(self, source: &[u8]) -> Option<Vec<u8>> {
        match self {
            Respell::AsWritten => None,
            Respell::CTrigraphsAndDigraphs => trigraphs::respelled(source),
            Respell::ShellPatterns => shell_source::parseable(source),
            Respell::PhpScriptTags => php_script::parseable(source),
        }
    }
}
