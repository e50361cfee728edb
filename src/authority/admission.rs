//! Admission: whether a command the model asks for may be proposed at all, before
//! anything is resolved or asked.
//!
//! The user's own config lists what may run: `allowed_commands`, argv prefixes matched on
//! whole tokens (`go test` admits `go test ./...`, not `go tool` or `env go test`), and
//! `allowed_project_programs`, programs inside the project run by path (`.venv/bin/pytest`).
//! A command no entry admits is refused with both lists in words, so the model does not
//! guess variants; one with control or bidirectional-format characters is refused, since
//! it could make the question show something other than what runs. run_command then
//! resolves the admitted program and asks (see `tools::run_command`).

/// A command admission let through: which list admitted it depends on whether the program
/// was named or given as a path.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admitted<'t> {
    /// A bare name, admitted by an `allowed_commands` entry (the prefix), to be looked up
    /// on PATH outside the project.
    Named {
        name: &'t str,
        args: &'t [&'t str],
        prefix: String,
    },
    /// A path, admitted by an `allowed_project_programs` entry: the program's normalised
    /// path relative to the root, and the entry in words (the standing-approval scope).
    Project {
        relative: String,
        args: &'t [&'t str],
        prefix: String,
    },
}

/// Admits `tokens` (the command split on whitespace) or says why not: an empty command,
/// control characters, a named program no `allowed_commands` entry covers, a path no
/// `allowed_project_programs` entry covers. Refusals name the entries of both lists, so a
/// model allowed only project programs is not told an empty list.
pub(crate) fn admit<'t>(
    tokens: &'t [&'t str],
    allowed: &[String],
    project: &[String],
) -> Result<Admitted<'t>, String> {
    let refuse = |text: String| Err(text);
    let listed = || allowlists(allowed, project);
    let Some((&program, args)) = tokens.split_first() else {
        return refuse(format!(
            "the command is empty; give a program and its arguments. Allowed prefixes (whole words): {}",
            listed()
        ));
    };
    if tokens.iter().any(|t| t.chars().any(is_deceptive_char)) {
        return refuse(
            "the command contains a control or bidirectional-format character; use plain text"
                .to_owned(),
        );
    }
    if program.contains('/') {
        let Some((relative, prefix)) = project_entry(tokens, project) else {
            return refuse(format!(
                "`{program}` is a path and is refused: run_command runs only programs found by name on PATH outside the project, or the project programs the user lists in `allowed_project_programs`, with their arguments. Allowed prefixes (whole words): {}. Do not try variants; ask the user if you need it.",
                listed()
            ));
        };
        return Ok(Admitted::Project {
            relative,
            args,
            prefix,
        });
    }
    let Some(prefix) = allowing_entry(tokens, allowed) else {
        return refuse(format!(
            "`{}` is not an allowed command. Allowed prefixes (whole words): {}. Do not try variants; if you need something else, ask the user.",
            tokens.join(" "),
            listed()
        ));
    };
    Ok(Admitted::Named {
        name: program,
        args,
        prefix,
    })
}

/// Both allowlists in words, for refusals and `/config`: whichever list admits what the
/// model may run, it learns all of it, so it does not guess (`go test`, `cargo clippy` by
/// name; project programs by path as listed). Each entry is normalised to single spaces.
pub(crate) fn allowlists(allowed: &[String], project: &[String]) -> String {
    let words = |list: &[String]| {
        list.iter()
            .map(|a| format!("`{}`", a.split_whitespace().collect::<Vec<_>>().join(" ")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (allowed.is_empty(), project.is_empty()) {
        (true, true) => "none".to_owned(),
        (false, true) => words(allowed),
        (true, false) => format!(
            "none by name on PATH; project programs, run by the path as listed: {}",
            words(project)
        ),
        (false, false) => format!(
            "{} by name on PATH; project programs, run by the path as listed: {}",
            words(allowed),
            words(project)
        ),
    }
}

/// The longest allowlist entry whose tokens are a prefix of `tokens`, token by token,
/// normalised to single spaces (the scope a standing approval covers).
fn allowing_entry(tokens: &[&str], allowed: &[String]) -> Option<String> {
    allowed
        .iter()
        .map(|entry| entry.split_whitespace().collect::<Vec<_>>())
        .filter(|prefix| !prefix.is_empty() && tokens.starts_with(prefix))
        .max_by_key(Vec::len)
        .map(|prefix| prefix.join(" "))
}

/// Characters that could make the approval question show something other than what runs:
/// terminal control (escape sequences, carriage returns) and bidirectional overrides.
fn is_deceptive_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The `allowed_project_programs` entry that admits `tokens`, as the program's normalised
/// relative path and the entry in words (the standing-approval scope). The program token
/// and each entry's first word are compared after dropping `./` and repeated slashes, so
/// `./gradlew` and `gradlew` name one file; the other words are compared as they are,
/// whole, like `allowed_commands`. `None` when no entry matches, or the path is absolute
/// or has a `..` component.
fn project_entry(tokens: &[&str], entries: &[String]) -> Option<(String, String)> {
    let (program, args) = tokens.split_first()?;
    let relative = normal_relative(program)?;
    entries
        .iter()
        .filter_map(|entry| {
            let words: Vec<&str> = entry.split_whitespace().collect();
            let (first, rest) = words.split_first()?;
            (normal_relative(first)? == relative && args.starts_with(rest)).then(|| {
                let scope = std::iter::once(relative.as_str())
                    .chain(rest.iter().copied())
                    .collect::<Vec<_>>()
                    .join(" ");
                (rest.len(), scope)
            })
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, scope)| (relative.clone(), scope))
}

/// `path` relative to the project root with `.` components and empty ones dropped; `None`
/// for an absolute path, a `..` component, or nothing left.
pub(crate) fn normal_relative(path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn check(command: &str, list: &[&str]) -> Result<(), String> {
        let tokens: Vec<&str> = command.split_whitespace().collect();
        admit(&tokens, &allowed(list), &[]).map(|_| ())
    }

    #[test]
    fn allowlist_matches_whole_tokens() {
        let list = ["go test", "cargo  clippy "];
        for ok in [
            "go test",
            "go test ./...",
            "  go   test\t./... ",
            "cargo clippy --all-targets",
        ] {
            assert_eq!(check(ok, &list), Ok(()), "{ok}");
        }
        for refused in [
            "go tool",
            "gotcha test",
            "env go test",
            "go",
            "go testx",
            "GO test",
        ] {
            let err = check(refused, &list).expect_err(refused);
            assert!(
                err.to_string().contains("is not an allowed command")
                    && err.to_string().contains("`go test`, `cargo clippy`"),
                "{refused}: {err}"
            );
        }
        let empty = check(" \t ", &list).expect_err("empty");
        assert!(empty.to_string().contains("empty"), "{empty}");
    }

    #[test]
    fn programs_given_as_paths_are_left_to_project_programs_and_control_characters_refused() {
        let named = allowed(&["./go", "bin/go", "go"]);
        for command in ["./go test", "bin/go test"] {
            let tokens: Vec<&str> = command.split_whitespace().collect();
            let admitted = admit(&tokens, &named, &allowed(&["go", "bin/go"]));
            assert!(
                matches!(admitted, Ok(Admitted::Project { args: ["test"], .. })),
                "{command}: {admitted:?}"
            );
        }
        for command in ["./go test", "bin/go test", "/usr/bin/go test"] {
            let tokens: Vec<&str> = command.split_whitespace().collect();
            let refused = admit(&tokens, &named, &[]).expect_err(command);
            assert!(refused.contains("is a path and is refused"), "{refused}");
        }
        for sneaky in ["go test \u{1b}[2K", "go test a\u{202e}b", "go test \u{7f}"] {
            let err = check(sneaky, &["go test"]).expect_err(sneaky);
            assert!(err.to_string().contains("control"), "{err}");
        }
    }

    #[test]
    fn project_programs_match_whole_words_on_a_normalised_path() {
        let entries = allowed(&[
            ".venv/bin/pytest",
            "./gradlew test",
            "./gradlew  test --offline",
        ]);
        let entry = |command: &str| {
            let tokens: Vec<&str> = command.split_whitespace().collect();
            project_entry(&tokens, &entries)
        };
        let found = |path: &str, scope: &str| Some((path.to_owned(), scope.to_owned()));
        assert_eq!(
            entry(".venv/bin/pytest -x"),
            found(".venv/bin/pytest", ".venv/bin/pytest")
        );
        assert_eq!(
            entry("./.venv//bin/pytest"),
            found(".venv/bin/pytest", ".venv/bin/pytest")
        );
        assert_eq!(entry("gradlew/ test"), found("gradlew", "gradlew test"));
        assert_eq!(
            entry("./gradlew test --offline x"),
            found("gradlew", "gradlew test --offline")
        );
        for refused in [
            "./gradlew",
            "./gradlew build",
            "./gradlew testx",
            ".venv/bin/../bin/pytest",
            "/abs/.venv/bin/pytest",
            ".venv/bin/pytest3",
            "./",
        ] {
            assert_eq!(entry(refused), None, "{refused}");
        }
    }
}
