//! `search_text(pattern)`: a deliberately budgeted ripgrep, in process.
//!
//! The matches are exactly those of `rg -n --sort path --max-count=<per file> PATTERN .`:
//! the same regex engine, the same walk and ignore rules, the same binary-file rule (stop
//! at the first NUL byte). Two budgets apply: `search_max_per_file` inside the searcher,
//! and `search_max_matches` in total, which ripgrep cannot do and we do ourselves: once one
//! match more than the budget is found, the walk stops.
//! Each file is opened through the project boundary before it is read.

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde::Deserialize;
use serde_json::Value;

use super::text::clip_line;
use super::{Access, Budgets, ToolError, ToolSpec, Toolbox, parse_args, walk};
use crate::project::{Project, ProjectPath};

/// The registry entry.
pub static SPEC: ToolSpec = ToolSpec {
    name: "search_text",
    description: "Regex search (ripgrep syntax) over project files; prints path:line:text. Few matches per file and in total; narrow the pattern if truncated.",
    parameters: r#"{"type":"object","properties":{"pattern":{"type":"string","description":"regex"}},"required":["pattern"]}"#,
    access: Access::Read,
    run,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
}

fn run(toolbox: &Toolbox, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args(SPEC.name, args)?;
    search_text(&toolbox.project, &toolbox.budgets, &args.pattern)
}

/// One matching line.
struct Hit {
    path: ProjectPath,
    line: u64,
    text: String,
}

/// Searches the project for `pattern`, within the budgets.
pub fn search_text(
    project: &Project,
    budgets: &Budgets,
    pattern: &str,
) -> Result<String, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| ToolError::Refused(format!("bad regex `{pattern}`: {e}")))?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\0'))
        .line_number(true)
        .max_matches(Some(budgets.search_max_per_file as u64))
        .build();

    let limit = budgets.search_max_matches;
    let wanted = limit.saturating_add(1);
    let mut hits: Vec<Hit> = Vec::new();
    for path in walk::files(project, walk::builder(project).build()) {
        // A file that vanished or cannot be read is skipped, as ripgrep skips it.
        let Ok(file) = project.open_file(&path) else {
            continue;
        };
        let mut sink = Collect {
            path: &path,
            hits: &mut hits,
            wanted,
            max_line_chars: budgets.max_line_chars,
        };
        // A read error part-way through a file is skipped too, as ripgrep does after
        // reporting it; the matches found before it stand.
        let _ = searcher.search_file(&matcher, &file, &mut sink);
        if hits.len() >= wanted {
            break;
        }
    }

    if hits.is_empty() {
        return Ok("No matches found.".to_owned());
    }
    let mut out = String::new();
    for hit in hits.iter().take(limit) {
        out.push_str(&format!("{}:{}:{}\n", hit.path, hit.line, hit.text));
    }
    if hits.len() > limit {
        out.push_str(&format!(
            "[truncated to {limit} matches; narrow the pattern]\n"
        ));
    }
    Ok(out)
}

/// Collects matches from one file until the global budget (plus one) is reached.
struct Collect<'a> {
    path: &'a ProjectPath,
    hits: &'a mut Vec<Hit>,
    wanted: usize,
    max_line_chars: usize,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let bytes = mat.bytes();
        let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        self.hits.push(Hit {
            path: self.path.clone(),
            line: mat.line_number().unwrap_or(0),
            text: clip_line(line, self.max_line_chars),
        });
        Ok(self.hits.len() < self.wanted)
    }
}
