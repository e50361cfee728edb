//! What a Makefile line sets, as GNU make reads the line.
//!
//! `SHELL := ./x` is the plain spelling; make also takes `define SHELL` ... `endef`,
//! `override`/`export`/`private` before the name, a target-specific `all: SHELL = ./x`,
//! a line continued with a backslash, and a name computed when the line is read
//! (`$(X)$(Y) := ./x` with `X := SH` and `Y := ELL`). A computed name cannot be checked
//! without running make, so any assignment to one warns, and so does `$(eval ...)`, which
//! assigns whatever its text says.

/// What a logical Makefile line does that is worth a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Sets {
    /// Assigns (or `define`s) this listed variable.
    Variable(String),
    /// Assigns a variable whose name is computed (holds `$`).
    Computed,
    /// Reads another makefile (`include`, `-include`, `sinclude`).
    Include(&'static str),
    /// Calls `eval`, which can assign anything.
    Eval,
}

/// GNU make directives that read another makefile, which can set `SHELL` where this scan
/// does not look.
const INCLUDES: &[&str] = &["include", "-include", "sinclude"];

/// Words make allows before a variable name in an assignment.
const PREFIXES: &[&str] = &["override", "export", "private", "define", "unexport"];

/// The logical lines of a makefile (backslash-newline joins a line to the next), each with
/// the 1-based number of its first physical line.
pub(super) fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let (number, mut joined) = current.take().unwrap_or((i + 1, String::new()));
        let trailing = line.len() - line.trim_end_matches('\\').len();
        if trailing % 2 == 1 {
            joined.push_str(&line[..line.len() - 1]);
            joined.push(' ');
            current = Some((number, joined));
        } else {
            joined.push_str(line);
            lines.push((number, joined));
        }
    }
    lines.extend(current);
    lines
}

/// What the logical line `line` sets among `variables`, if anything worth a warning.
pub(super) fn line_sets(line: &str, variables: &[&str]) -> Option<Sets> {
    let line = strip_comment(line);
    let trimmed = line.trim_start();
    if let Some(directive) = INCLUDES.iter().find(|d| {
        trimmed
            .strip_prefix(**d)
            .is_some_and(|r| r.starts_with(char::is_whitespace))
    }) {
        return Some(Sets::Include(directive));
    }
    if trimmed.contains("$(eval") || trimmed.contains("${eval") {
        return Some(Sets::Eval);
    }
    let (lhs, assigned) = match top_level_equals(trimmed) {
        Some(at) => (trimmed[..at].trim_end_matches([':', '?', '+', '!']), true),
        None => (trimmed, false),
    };
    // A target-specific assignment: `targets: [prefixes] NAME = value`.
    let lhs = match last_top_level_colon(lhs) {
        Some(at) if assigned => &lhs[at + 1..],
        _ => lhs,
    };
    let mut words: Vec<&str> = lhs.split_whitespace().collect();
    let mut defined = false;
    while let Some(first) = words.first() {
        if !PREFIXES.contains(first) {
            break;
        }
        defined |= *first == "define";
        words.remove(0);
    }
    if !assigned && !defined {
        return None;
    }
    if words.iter().any(|w| w.contains('$')) {
        return Some(Sets::Computed);
    }
    words
        .iter()
        .find(|w| variables.contains(w))
        .map(|w| Sets::Variable((*w).to_owned()))
}

/// The line up to its first `#` that is not escaped with a backslash.
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'#' {
            let backslashes = bytes[..i].iter().rev().take_while(|c| **c == b'\\').count();
            if backslashes % 2 == 0 {
                return &line[..i];
            }
        }
    }
    line
}

/// The offset of the first `=` outside `$(...)` and `${...}`.
fn top_level_equals(line: &str) -> Option<usize> {
    top_level(line).find(|(_, c)| *c == '=').map(|(i, _)| i)
}

/// The offset of the last `:` outside `$(...)` and `${...}`.
fn last_top_level_colon(line: &str) -> Option<usize> {
    top_level(line)
        .filter(|(_, c)| *c == ':')
        .last()
        .map(|(i, _)| i)
}

/// The characters of `line` that are not inside a variable reference, with their offsets.
fn top_level(line: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut depth = 0usize;
    let mut previous = None;
    line.char_indices().filter(move |(_, c)| {
        let opens = previous == Some('$') && matches!(c, '(' | '{');
        previous = Some(*c);
        if opens || (depth > 0 && matches!(c, '(' | '{')) {
            depth += 1;
            return false;
        }
        if depth > 0 {
            if matches!(c, ')' | '}') {
                depth -= 1;
            }
            return false;
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHELL: &[&str] = &["SHELL", ".SHELLFLAGS"];

    fn sets(line: &str) -> Option<Sets> {
        line_sets(line, SHELL)
    }

    #[test]
    fn every_spelling_of_an_assignment_to_shell_is_found() {
        for line in [
            "SHELL = /bin/bash",
            "SHELL := ./tools/sh",
            "SHELL::=x",
            "SHELL:::=x",
            "SHELL ?= x",
            "SHELL += -x",
            "SHELL != echo ./x",
            "override SHELL = x",
            "export SHELL := x",
            "private SHELL = x",
            "override export SHELL = x",
            ".SHELLFLAGS = -ec",
            "define SHELL",
            "define SHELL =",
            "define SHELL :=",
            "override define SHELL",
            "export define SHELL",
            "all: SHELL = ./x",
            "all: override SHELL := ./x",
            "%.o: SHELL = ./x",
            "a b:: SHELL = ./x",
            "\tSHELL = ./x",
        ] {
            assert_eq!(sets(line), Some(Sets::Variable(line_var(line))), "{line}");
        }
        for line in [
            "$(X)$(Y) := ./evilsh",
            "${X}ELL = x",
            "SH$(E)LL = x",
            "define $(X)",
            "all: $(X) = y",
        ] {
            assert_eq!(sets(line), Some(Sets::Computed), "{line}");
        }
        assert_eq!(sets("$(eval SHELL := x)"), Some(Sets::Eval));
        assert_eq!(sets("x: ; $(eval $(V))"), Some(Sets::Eval));
        for line in [
            "include other.mk",
            "-include $(wildcard *.mk)",
            "sinclude l.mk",
        ] {
            assert!(matches!(sets(line), Some(Sets::Include(_))), "{line}");
        }
        for line in [
            "\t$(SHELL) -c true",
            "MYSHELL = x",
            "# SHELL = x",
            "x = 1 # SHELL = 2",
            "includes = x",
            "INCLUDE_DIRS = a",
            "export SHELL",
            "all: build",
            "CFLAGS = $(shell echo SHELL = x)",
            "X := SH",
        ] {
            assert_eq!(sets(line), None, "{line}");
        }
    }

    fn line_var(line: &str) -> String {
        if line.contains(".SHELLFLAGS") {
            ".SHELLFLAGS".to_owned()
        } else {
            "SHELL".to_owned()
        }
    }

    #[test]
    fn continued_lines_are_joined() {
        let lines = logical_lines("SH\\\nELL = x\nA = 1 \\\\\nSHELL \\\n  = y\n");
        assert_eq!(lines[0], (1, "SH ELL = x".to_owned()));
        assert_eq!(lines[1].0, 3);
        assert_eq!(sets(&lines[2].1), Some(Sets::Variable("SHELL".to_owned())));
        assert_eq!(lines[2].0, 4);
    }
}
