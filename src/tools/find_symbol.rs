//! `find_symbol(symbol)`: where a name is defined, one line per definition.
//!
//! The answer comes from the session's [`SymbolIndex`](super::symbols::SymbolIndex),
//! which is never stale. Lines read `Name [kind] Scope -> path:line` (`Name [kind] ->
//! path:line` at top level), with Universal Ctags kind and scope names, sorted by path
//! then line and capped at `list_max_entries`, with a final line saying so when more
//! exist. A miss says so plainly and names the languages covered, so the model knows to
//! fall back to search_text for anything else; a qualified miss points at the bare name.
//!
//! A lookup never misses silently: a file that mentions the name but that the index's
//! bounds cut (nesting too deep, too many definitions: [`Cut`]) is named in the answer,
//! and so is a lookup that stopped early, on Ctrl-C or when its time budget ran out,
//! with how many files it did not get to.
//!
//! The tool is offered only when the project holds a file in a supported language: in a
//! project of other languages every call would be a wasted round trip.

use serde::Deserialize;

use super::symbols::lang::names;
use super::symbols::{Cut, Halt, Lookup, SymbolQuery, parse_query};
use super::text::clip_line;
use super::{
    Access, Account, ReadTool, Reads, ToolContext, ToolEnv, ToolError, ToolResult, ToolSpec, arg,
};

/// The registry entry.
pub(crate) static SPEC: ToolSpec = ToolSpec {
    name: "find_symbol",
    description: "Where an identifier is defined (exact name; `Type.method` narrows by scope).",
    parameters: r#"{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}"#,
    access: Access::Read,
    scope: "source files in the project tree that a grammar covers",
    available,
    run: &Reads(FindSymbol),
    purged_after_turn: false,
    shown: |args| format!("definitions of {}", arg(args, "symbol")),
    ledger_arguments: None,
    subject: |args| super::subject_arg(args, "symbol"),
    schema: std::sync::OnceLock::new(),
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    symbol: String,
}

/// Offered only when the project holds a file some grammar covers.
fn available(env: &ToolEnv) -> Result<(), String> {
    if env.symbols.has_supported_files() {
        return Ok(());
    }
    Err(format!(
        "no supported source files were found in the project (find_symbol reads {}); search_text finds definitions in any file",
        super::symbols::lang::names()
    ))
}

struct FindSymbol;

impl ReadTool for FindSymbol {
    type Args = Args;

    fn run(&self, context: &ToolContext<'_>, args: Args) -> Result<ToolResult, ToolError> {
        find_symbol(context.env, &args.symbol, context.cancel_token())
    }
}

/// Looks up the definitions of `symbol`, stopping on Ctrl-C, and formats them for the
/// model.
fn find_symbol(
    env: &ToolEnv,
    symbol: &str,
    cancel: &crate::authority::CancelToken,
) -> Result<ToolResult, ToolError> {
    let limit = env.budgets.list_max_entries;
    // The walker would read an unsafe ignore file at the root before skipping anything.
    super::walk::check_root(&env.project)?;
    let lookup = env.symbols.lookup_until(symbol, limit, cancel)?;
    let query = parse_query(symbol)?;
    let text = format(&lookup, &query, limit, env.budgets.max_line_chars);
    let account = Account::Definitions {
        found: lookup.definitions.len(),
        first: (lookup.definitions.first()).map(|def| format!("{}:{}", def.path, def.line)),
        // A cut file or an early stop leaves the list short too.
        truncated: lookup.truncated || !lookup.cut.is_empty() || lookup.halted.is_some(),
    };
    Ok(ToolResult::new(text, account))
}

/// Renders a lookup: one line per definition, then the truncation or unreadable notes.
fn format(lookup: &Lookup, query: &SymbolQuery, limit: usize, max_line_chars: usize) -> String {
    let mut out = String::new();
    if lookup.definitions.is_empty() && !lookup.truncated {
        if lookup.halted.is_some() {
            // Not "no definition": the notes below say what was not searched.
            out.push_str(&format!(
                "No definition of `{}` found in the files searched.\n",
                query.name
            ));
        } else {
            out.push_str(&miss(lookup, query));
            out.push_str(&other_case_hint(lookup));
            out.push('\n');
        }
    }
    for def in &lookup.definitions {
        let scope = if def.scope.is_empty() {
            String::new()
        } else {
            format!(" {}", def.scope)
        };
        let line = format!(
            "{} [{}]{scope} -> {}:{}",
            def.name, def.kind, def.path, def.line
        );
        out.push_str(&clip_line(line.as_bytes(), max_line_chars));
        out.push('\n');
    }
    if lookup.truncated {
        out.push_str(&format!(
            "[truncated to {limit} definitions; more exist in later paths]\n"
        ));
    }
    if lookup.unreadable > 0 {
        let files = if lookup.unreadable == 1 {
            "file"
        } else {
            "files"
        };
        out.push_str(&format!(
            "[{} {files} could not be read]\n",
            lookup.unreadable
        ));
    }
    out.push_str(&incomplete(lookup, query));
    out
}

/// The most cut files named one by one; more are counted.
const CUT_FILES_NAMED: usize = 5;

/// The notes saying where the answer may be short: files the index holds only in part,
/// and a lookup that stopped early. Empty when the answer is whole.
fn incomplete(lookup: &Lookup, query: &SymbolQuery) -> String {
    let mut out = String::new();
    let name = &query.name;
    for (path, why) in lookup.cut.iter().take(CUT_FILES_NAMED) {
        out.push_str(&format!(
            "[{path} is indexed only in part ({}); a definition of `{name}` there may be missing: search_text finds every mention]\n",
            Cut::describe(*why)
        ));
    }
    if let Some(more) = lookup.cut.len().checked_sub(CUT_FILES_NAMED)
        && more > 0
    {
        let files = if more == 1 { "file" } else { "files" };
        out.push_str(&format!("[{more} more {files} indexed only in part]\n"));
    }
    if let Some(halted) = lookup.halted {
        let files = super::count(halted.unvisited, "file", "files");
        out.push_str(&match halted.why {
            Halt::Stopped => format!(
                "[interrupted by Ctrl-C: {files} not searched; definitions there are not listed]\n"
            ),
            Halt::OutOfTime => format!(
                "[the lookup ran out of its {} s budget: {files} not searched, definitions there are not listed; ask again to go on (what was parsed is kept), or use search_text]\n",
                super::symbols::LOOKUP_TIME.as_secs()
            ),
        });
    }
    out
}

/// `Go`, `Go and Rust`, `Go, Rust and Python`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// After a miss, the names the index holds that differ only in case (`JSON` for `Json`),
/// so a model that guessed the capitals asks again with the right ones instead of
/// concluding the name is not defined. Empty when there are none.
fn other_case_hint(lookup: &Lookup) -> String {
    if lookup.other_case.is_empty() {
        return String::new();
    }
    let named: Vec<String> = lookup
        .other_case
        .iter()
        .map(|(name, n)| {
            format!(
                "`{name}` ({})",
                super::count(*n, "definition", "definitions")
            )
        })
        .collect();
    let more = match lookup.other_case_more {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        " Defined with other capitals: {}{more}; ask for the exact name.",
        named.join(", ")
    )
}

/// What a lookup with no answer says: no files, no definition, or (qualified) none in
/// that scope, with how many the bare name has.
fn miss(lookup: &Lookup, query: &SymbolQuery) -> String {
    let name = &query.name;
    if lookup.files == 0 {
        return format!(
            "No {} files in the project; find_symbol covers only those.",
            names().replace(", ", " or ")
        );
    }
    if query.qualifier.is_empty() {
        return format!(
            "No definition of `{name}` found in the project's {} files.",
            and_list(&lookup.languages)
        );
    }
    let scope = query.qualifier.join(query.separator);
    match lookup.elsewhere {
        0 => format!(
            "No definition of `{name}` found in scope `{scope}`, nor anywhere else; search_text may find it."
        ),
        n => format!(
            "No definition of `{name}` found in scope `{scope}`; `{name}` alone has {}: ask for `{name}`.",
            super::count(n, "definition", "definitions")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::symbols::Definition;

    fn def(path: &str, line: usize) -> Definition {
        Definition {
            path: path.to_owned(),
            line,
            name: "Greet".to_owned(),
            kind: "func",
            scope: String::new(),
        }
    }

    fn query(raw: &str) -> SymbolQuery {
        parse_query(raw).expect("a valid name")
    }

    #[test]
    // Its expected text or files name both default languages.
    #[cfg(all(feature = "lang-go", feature = "lang-rust"))]
    fn lines_truncation_and_misses() {
        let lookup = Lookup {
            definitions: vec![def("a.go", 3), def("b/c.go", 10)],
            truncated: true,
            files: 5,
            ..Lookup::default()
        };
        assert_eq!(
            format(&lookup, &query("Greet"), 2, 200),
            "Greet [func] -> a.go:3\nGreet [func] -> b/c.go:10\n\
             [truncated to 2 definitions; more exist in later paths]\n"
        );
        let nothing = Lookup {
            files: 5,
            languages: vec!["Go", "Rust", "Python"],
            ..Lookup::default()
        };
        assert_eq!(
            format(&nothing, &query("Nope"), 2, 200),
            "No definition of `Nope` found in the project's Go, Rust and Python files.\n"
        );
        let go_only = Lookup {
            languages: vec!["Go"],
            ..nothing
        };
        assert_eq!(
            format(&go_only, &query("Nope"), 2, 200),
            "No definition of `Nope` found in the project's Go files.\n"
        );
        assert_eq!(
            format(&Lookup::default(), &query("Nope"), 2, 200),
            format!(
                "No {} files in the project; find_symbol covers only those.\n",
                names().replace(", ", " or ")
            )
        );
        let unreadable = Lookup {
            definitions: vec![def("a.go", 3)],
            files: 5,
            unreadable: 2,
            ..Lookup::default()
        };
        assert_eq!(
            format(&unreadable, &query("Greet"), 2, 200),
            "Greet [func] -> a.go:3\n[2 files could not be read]\n"
        );
    }

    #[test]
    fn scopes_follow_the_kind_and_qualified_misses_point_at_the_bare_name() {
        let lookup = Lookup {
            definitions: vec![Definition {
                scope: "Greeter".to_owned(),
                ..def("a.go", 3)
            }],
            files: 5,
            ..Lookup::default()
        };
        assert_eq!(
            format(&lookup, &query("Greeter.Greet"), 2, 200),
            "Greet [func] Greeter -> a.go:3\n"
        );
        let elsewhere = Lookup {
            files: 5,
            elsewhere: 2,
            ..Lookup::default()
        };
        assert_eq!(
            format(&elsewhere, &query("Other::Greet"), 2, 200),
            "No definition of `Greet` found in scope `Other`; `Greet` alone has 2 definitions: ask for `Greet`.\n"
        );
    }

    /// A cut file and an early stop are said, never a plain miss: the model is told
    /// where a definition may be missing and what to do.
    #[test]
    fn cut_files_and_early_stops_are_said() {
        use crate::tools::symbols::Halted;
        let cut = Lookup {
            definitions: vec![def("a.go", 3)],
            files: 9,
            cut: (0..7)
                .map(|i| (format!("deep{i}.go"), Cut::Depth))
                .collect(),
            ..Lookup::default()
        };
        let text = format(&cut, &query("Greet"), 10, 500);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + CUT_FILES_NAMED + 1, "{text}");
        assert_eq!(
            lines[1],
            "[deep0.go is indexed only in part (definitions nested more than 256 syntax levels deep are not indexed); a definition of `Greet` there may be missing: search_text finds every mention]"
        );
        assert_eq!(lines[6], "[2 more files indexed only in part]");

        let stopped = Lookup {
            files: 9,
            halted: Some(Halted {
                why: Halt::Stopped,
                unvisited: 4,
            }),
            ..Lookup::default()
        };
        assert_eq!(
            format(&stopped, &query("Greet"), 10, 500),
            "No definition of `Greet` found in the files searched.\n\
             [interrupted by Ctrl-C: 4 files not searched; definitions there are not listed]\n"
        );
        let out_of_time = Lookup {
            halted: Some(Halted {
                why: Halt::OutOfTime,
                unvisited: 1,
            }),
            ..stopped
        };
        assert!(
            format(&out_of_time, &query("Greet"), 10, 500).contains(
                "[the lookup ran out of its 20 s budget: 1 file not searched, definitions there are not listed; ask again to go on"
            )
        );
    }

    /// A miss names the spellings that differ only in case, at most the bound, and
    /// counts the rest.
    #[test]
    #[cfg(feature = "lang-go")]
    fn a_miss_names_other_capitals() {
        let hinted = Lookup {
            files: 3,
            languages: vec!["Go"],
            other_case: vec![("JSON".to_owned(), 2), ("json".to_owned(), 1)],
            ..Lookup::default()
        };
        assert_eq!(
            format(&hinted, &query("Json"), 10, 500),
            "No definition of `Json` found in the project's Go files. Defined with other capitals: `JSON` (2 definitions), `json` (1 definition); ask for the exact name.\n"
        );
        let more = Lookup {
            other_case_more: 4,
            ..hinted.clone()
        };
        assert!(
            format(&more, &query("Json"), 10, 500)
                .contains("`json` (1 definition) and 4 more; ask for the exact name.")
        );
        // A qualified miss with the bare name elsewhere points there instead.
        let elsewhere = Lookup {
            elsewhere: 1,
            other_case: Vec::new(),
            ..hinted
        };
        assert!(!format(&elsewhere, &query("A.Json"), 10, 500).contains("capitals"));
    }

    #[test]
    fn spec_is_small() {
        let bytes = SPEC.description.len() + SPEC.parameters.len();
        assert!(bytes <= 200, "{bytes} bytes of description and schema");
        assert!(!SPEC.description.contains("Go") && !SPEC.description.contains("Rust"));
    }
}
