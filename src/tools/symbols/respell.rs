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

#[cfg(feature = "lang-php")]
use super::php_script;
#[cfg(feature = "lang-bash")]
use super::shell_source;
#[cfg(feature = "lang-c")]
use super::trigraphs;

/// How a language's files are respelled before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Respell {
    /// Parsed as written.
    // Unused in a build of only the languages below.
    #[allow(dead_code)]
    AsWritten,
    /// C's trigraphs and digraphs replaced by the punctuation they stand for.
    #[cfg(feature = "lang-c")]
    CTrigraphsAndDigraphs,
    /// The punctuation of the shell patterns tree-sitter-bash misreads overwritten.
    #[cfg(feature = "lang-bash")]
    ShellPatterns,
    /// PHP 5's `<script language="php">` and `</script>` read as `<?php` and `?>`.
    #[cfg(feature = "lang-php")]
    PhpScriptTags,
}

impl Respell {
    /// The bytes to parse for `source`: a respelled copy, or `None` when `source` is
    /// parsed as it is (this language is not respelled, or the file has nothing to
    /// respell).
    // `source` is unused in a build without the languages below.
    #[allow(unused_variables)]
    pub(crate) fn apply(self, source: &[u8]) -> Option<Vec<u8>> {
        match self {
            Respell::AsWritten => None,
            #[cfg(feature = "lang-c")]
            Respell::CTrigraphsAndDigraphs => trigraphs::respelled(source),
            #[cfg(feature = "lang-bash")]
            Respell::ShellPatterns => shell_source::parseable(source),
            #[cfg(feature = "lang-php")]
            Respell::PhpScriptTags => php_script::parseable(source),
        }
    }
}
