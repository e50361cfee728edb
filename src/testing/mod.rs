//! Internals that the integration tests and benches reach directly. Not an API: hidden
//! from the docs, and free to change. Each entry is a thin wrapper, so the internals stay
//! `pub(crate)`. Tests of tool behaviour go through [`crate::tools::Toolbox::call`], the
//! path a model's call takes; these exist for the stages that tests and benches check on
//! their own (the extractor against ctags, the prefilter, the stream parser). [`fuzz`]
//! holds the properties the fuzz targets check, which the corpus replay test checks too.

pub mod fuzz;

use std::ffi::OsString;
use std::time::Duration;

use crate::project::{Project, ProjectPath};
use crate::tools::symbols::extract::Extractor;
use crate::tools::symbols::lang::Lang;
use crate::tools::{ToolError, Toolbox};

/// Runs `command` through run_command's whole path (plan, authority, execute) with
/// `parent_env` standing for metron's environment.
pub fn run_command(
    toolbox: &Toolbox,
    command: &str,
    parent_env: &[(OsString, OsString)],
) -> Result<String, ToolError> {
    toolbox
        .run_command_with_env(command, parent_env)
        .map(|result| result.text)
}

/// apply_patch up to the question (parse, check paths, read, repair, apply in memory):
/// the canonical patch and the summary the person would be shown.
pub fn prepare_patch(project: &Project, diff: &str) -> Result<(Vec<u8>, String), ToolError> {
    crate::tools::apply_patch::prepare(project, diff).map(|p| (p.patch, p.summary))
}

/// Every file the walking tools would see, in walk order.
pub fn walk_files(project: &Project) -> Vec<ProjectPath> {
    match crate::tools::walk::builder(project, None) {
        Ok((builder, _)) => crate::tools::walk::files(project, builder.build()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Whether find_symbol reads this file (its extension belongs to a compiled-in language).
pub fn symbol_file(path: &str) -> bool {
    Lang::of_path(path).is_some()
}

/// The languages find_symbol covers as its messages list them (`Go or Rust`), so tests
/// of those messages hold whichever grammars are compiled in.
pub fn symbol_languages() -> String {
    crate::tools::symbols::lang::names().replace(", ", " or ")
}

/// The symbol index's own extractor (one per thread), for the recall tests against ctags.
#[derive(Debug, Default)]
pub struct Definitions(Extractor);

impl Definitions {
    /// An extractor with no parser made yet.
    pub fn new() -> Definitions {
        Definitions(Extractor::new())
    }

    /// Every definition in `source`, read as the language of `path`, as (name, 1-based
    /// line, Universal Ctags kind); `None` when no grammar covers `path`.
    pub fn of(&mut self, path: &str, source: &[u8]) -> Option<Vec<(String, usize, &'static str)>> {
        let lang = Lang::of_path(path)?;
        let defs = self.0.extract(lang, source).ok()?;
        Some(
            defs.iter()
                .map(|def| (def.name.to_owned(), def.line, def.kind))
                .collect(),
        )
    }
}

/// Whether the symbol prefilter lets a lookup of `name` parse `source`: both of its
/// tests, the identifier summary and the whole-identifier scan, say the file may define
/// it. A definition in `source` for which this is false is one a lookup would not find.
pub fn prefilter_may_define(source: &[u8], name: &str) -> bool {
    use crate::tools::symbols::prefilter::{Key, Summary, may_define};
    Summary::build(source).may_contain(Key::of(name)) && may_define(source, name)
}

/// The names among `names` that the symbol prefilter would not let a lookup parse
/// `source` for ([`prefilter_may_define`] false), with the file's summary built once: the
/// differentials ask this for every definition of a large tree.
pub fn prefilter_drops<'n>(
    source: &[u8],
    names: impl IntoIterator<Item = &'n str>,
) -> std::collections::HashSet<String> {
    use crate::tools::symbols::prefilter::{Key, Summary, may_define};
    let summary = Summary::build(source);
    let unique: std::collections::HashSet<&str> = names.into_iter().collect();
    unique
        .into_iter()
        .filter(|name| !(summary.may_contain(Key::of(name)) && may_define(source, name)))
        .map(str::to_owned)
        .collect()
}

/// The language named `language`, or else the one of `path`'s extension.
fn language_of(path: &str, language: Option<&str>) -> Option<Lang> {
    match language {
        Some(name) => Lang::named(name),
        None => Lang::of_path(path),
    }
}

/// Builds the symbol prefilter's summary of `source` and returns the heap it holds.
pub fn prefilter_summary_bytes(source: &[u8]) -> usize {
    crate::tools::symbols::prefilter::Summary::build(source).heap_bytes()
}

/// The prefilter's whole-identifier test.
pub fn prefilter_contains(source: &[u8], name: &str) -> bool {
    crate::tools::symbols::prefilter::contains_ident(source, name)
}

/// The marker a clipped line ends with.
pub const CLIP_MARKER: &str = crate::tools::text::CLIP_MARKER;

/// How every tool clips a line.
pub fn clip_line(line: &[u8], max_chars: usize) -> String {
    crate::tools::text::clip_line(line, max_chars)
}

/// How old a leftover staged file must be before a write sweeps it.
pub const TEMP_FILE_STALE_AFTER: Duration = crate::project::temp_files::STALE_AFTER;

/// Whether `name` is one of metron's staged temporary files.
pub fn is_temp_file(name: &str) -> bool {
    crate::project::temp_files::parse(name).is_some()
}

/// Runs NDJSON `lines` through the client's stream parser, one read per line, the way the
/// client does with the body it receives (the agent bench's stand-in for the network).
pub fn parse_stream(
    lines: &[Vec<u8>],
    id_prefix: &str,
    on_delta: &mut dyn FnMut(crate::ollama::Delta<'_>),
) -> Result<crate::ollama::Reply, crate::ollama::OllamaError> {
    let mut parser = crate::ollama::StreamParser::new(id_prefix.to_owned());
    for bytes in lines {
        if parser.feed(bytes, on_delta)? {
            break;
        }
    }
    parser.finish(on_delta)
}

/// The models the server at `client` has whose template supports tools, in its order
/// (the live tier picks the first).
pub async fn models_with_tools(
    client: &crate::ollama::Client,
    limit: Duration,
) -> Result<Vec<String>, crate::ollama::OllamaError> {
    let mut found = Vec::new();
    for model in client.models(limit).await? {
        if client.show(&model, limit).await?.supports_tools() {
            found.push(model);
        }
    }
    Ok(found)
}

/// A read call's typed result, kept to describe it again and again in a bench.
pub struct CallResult(crate::tools::ToolResult);

/// Runs a read call the way the model's call runs, keeping its typed result.
pub fn run_tool(
    toolbox: &Toolbox,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<CallResult, ToolError> {
    toolbox.run(tool, arguments).map(CallResult)
}

/// The person's outcome line for a successful read call (what the agent adds to every
/// call), for the bench that measures its cost.
pub fn outcome_line(tool: &str, arguments: &serde_json::Value, result: &CallResult) -> String {
    crate::agent::outcome::describe(
        tool,
        arguments,
        &crate::authority::policy::Rule::Offered,
        crate::agent::CallOutcome::Ok,
        Some(&result.0.account),
        &result.0.text,
        &crate::authority::journal::Journal::default(),
    )
    .text
}

/// The evidence line of turn `turn` in `ledger` (what the agent adds to every turn's end),
/// for the same bench.
pub fn evidence_line(ledger: &crate::agent::Ledger, turn: u32) -> Option<String> {
    let evidence =
        crate::agent::outcome::Evidence::of(ledger.entries().iter().filter(|e| e.turn == turn));
    crate::agent::outcome::evidence_line(
        &evidence.files_changed,
        &evidence.patches_not_applied,
        &evidence.commands,
    )
}

impl Definitions {
    /// [`Definitions::of`] with each definition's scope as ctags names it (`Context`,
    /// `outer::inner::S`; empty at top level), for the scope agreement with ctags.
    /// `language` overrides the one `path`'s extension gives (`C` for the headers of
    /// a C project, see `HeaderVote`).
    pub fn of_scoped(
        &mut self,
        path: &str,
        language: Option<&str>,
        source: &[u8],
    ) -> Option<Vec<ScopedDefinition>> {
        let lang = language_of(path, language)?;
        let defs = self.0.extract(lang, source).ok()?;
        Some(
            defs.iter()
                .map(|def| ScopedDefinition {
                    name: def.name.to_owned(),
                    line: def.line,
                    kind: def.kind,
                    scope: def.scope.to_owned(),
                })
                .collect(),
        )
    }
}

/// One definition with its scope, from [`Definitions::of_scoped`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedDefinition {
    /// The defined name.
    pub name: String,
    /// 1-based line.
    pub line: usize,
    /// Universal Ctags kind.
    pub kind: &'static str,
    /// The scope path; empty at top level.
    pub scope: String,
}

/// The find_symbol line for a project's census (`find_symbol: Go 3 files; no grammar for
/// 2 .py files`), as `--doctor` and `/config` print it.
pub fn symbol_census(project: &Project) -> Option<String> {
    crate::tools::symbols::census::Census::of(project).map(|census| census.line())
}
