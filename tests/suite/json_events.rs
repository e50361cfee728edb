//! The `--json` event stream against its documentation, docs/usage.md ("JSON events").
//!
//! The real binary runs scripted sessions that between them emit every event and every
//! field; every (event, field path) emitted is collected with the JSON type it had, and
//! compared with the tables in the docs, read generically (nothing here lists the fields):
//! a field emitted but not listed, listed but never emitted, of a type the docs do not
//! give, or missing where the docs say it is always there, fails the test with the row to
//! add, fix or remove. So a field added to an event shows up here until it is documented,
//! and a field documented but gone shows up until the row goes.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};

use serde_json::{Map, Value, json};

use super::common::{
    GREET_HOLA, Metron, Run, TestProject, events_of_type, greet_patch, greet_project, json_events,
    metron, skip, user_config,
};
use super::fake_ollama::{
    Chunk, DEFAULT_MODEL, FakeOllama, Reply, answer, call, done, text, tool_calls,
};

/// The docs the stream is checked against.
fn usage_md() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/usage.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

// ---------------------------------------------------------------------------------------
// What the docs say
// ---------------------------------------------------------------------------------------

/// A documented type: one alternative of a type cell such as `string or null`.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    String,
    Integer,
    Boolean,
    Null,
    /// An object whose fields have rows of their own.
    Object,
    /// An object whose keys are data; its values all have this type.
    Map(Box<Ty>),
    Array(Box<Ty>),
    /// Any JSON, not looked into (what the model wrote).
    Json,
}

/// One row of a table: the field's types, and whether it may be left out.
#[derive(Debug, Clone, PartialEq)]
struct FieldDoc {
    types: Vec<Ty>,
    optional: bool,
    /// The cell as written, for messages.
    cell: String,
}

/// Every documented event, with its fields by path (`latency.tools_ms`, `files[].path`).
type Docs = BTreeMap<String, BTreeMap<String, FieldDoc>>;

fn parse_ty(word: &str) -> Result<Ty, String> {
    let word = word.trim();
    if let Some(inner) = word.strip_prefix("array of ") {
        return Ok(Ty::Array(Box::new(parse_ty(inner)?)));
    }
    if let Some(inner) = word.strip_prefix("map of ") {
        return Ok(Ty::Map(Box::new(parse_ty(inner)?)));
    }
    // `array of strings` reads better than `array of string`; both mean the same.
    Ok(match word.strip_suffix('s').unwrap_or(word) {
        "string" => Ty::String,
        "integer" => Ty::Integer,
        "boolean" => Ty::Boolean,
        "null" => Ty::Null,
        "object" => Ty::Object,
        "JSON" => Ty::Json,
        _ => return Err(format!("unknown type `{word}`")),
    })
}

/// `string or null, optional` and the like.
fn parse_type_cell(cell: &str) -> Result<FieldDoc, String> {
    let (types, optional) = match cell.strip_suffix(", optional") {
        Some(types) => (types, true),
        None => (cell, false),
    };
    let types = types
        .split(" or ")
        .map(parse_ty)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(FieldDoc {
        types,
        optional,
        cell: cell.to_owned(),
    })
}

/// The tables of the "JSON events" section: a `### `name`` heading per event, then a
/// `| field | type | meaning |` table whose first two cells are read.
fn parse_docs(markdown: &str) -> Result<Docs, String> {
    let section = markdown
        .split("\n## ")
        .find(|s| s.starts_with("JSON events\n"))
        .ok_or("docs/usage.md has no `## JSON events` section")?;
    let mut docs = Docs::new();
    let mut event: Option<String> = None;
    for (n, line) in section.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("### ") {
            let name = heading.trim().trim_matches('`').to_owned();
            docs.entry(name.clone()).or_default();
            event = Some(name);
            continue;
        }
        let Some(row) = line.strip_prefix('|') else {
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if cells.len() < 3 || cells[0] == "field" || cells[0].starts_with("---") {
            continue;
        }
        let Some(event) = &event else {
            continue;
        };
        let field = cells[0].trim_matches('`').to_owned();
        let doc = parse_type_cell(cells[1])
            .map_err(|e| format!("JSON events, line {}: `{field}`: {e}", n + 1))?;
        let fields = docs.entry(event.clone()).or_default();
        if fields.insert(field.clone(), doc).is_some() {
            return Err(format!("`{event}` lists `{field}` twice"));
        }
    }
    Ok(docs)
}

// ---------------------------------------------------------------------------------------
// What the binary emits, held against the docs
// ---------------------------------------------------------------------------------------

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `value` is of the type `ty`, on its outside (an array's elements and a map's
/// values are checked as they are walked).
fn fits(ty: &Ty, value: &Value) -> bool {
    matches!(
        (ty, value),
        (Ty::Json, _)
            | (Ty::String, Value::String(_))
            | (Ty::Boolean, Value::Bool(_))
            | (Ty::Null, Value::Null)
            | (Ty::Object | Ty::Map(_), Value::Object(_))
            | (Ty::Array(_), Value::Array(_))
    ) || (*ty == Ty::Integer && kind(value) == "integer")
}

/// Every (event, field path) emitted, and every disagreement with the docs.
#[derive(Default)]
struct Check {
    emitted: BTreeSet<(String, String)>,
    problems: BTreeSet<String>,
}

impl Check {
    fn event(&mut self, docs: &Docs, event: &Value) {
        let Some(name) = event["type"].as_str() else {
            self.problems
                .insert(format!("an event without a string `type`: {event}"));
            return;
        };
        let Some(object) = event.as_object() else {
            return;
        };
        if !docs.contains_key(name) {
            self.problems.insert(format!(
                "`{name}` events are emitted, but docs/usage.md has no ### `{name}` table"
            ));
            return;
        }
        self.emitted.insert((name.to_owned(), String::new()));
        self.object(docs, name, "", object);
    }

    /// The fields of an object at `parent` ("" for the event itself).
    fn object(&mut self, docs: &Docs, event: &str, parent: &str, object: &Map<String, Value>) {
        let fields = &docs[event];
        for (key, value) in object {
            if parent.is_empty() && key == "type" {
                continue;
            }
            let path = if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            };
            self.emitted.insert((event.to_owned(), path.clone()));
            match fields.get(&path) {
                Some(doc) => self.value(docs, event, &path, doc, &doc.types, value),
                None => {
                    self.problems.insert(format!(
                        "`{event}` emits `{path}` ({}), which the `{event}` table does not list: add its row",
                        kind(value)
                    ));
                }
            }
        }
        // Rows directly under this object that say "always there".
        for (path, doc) in fields {
            let (field_parent, name) = match path.rsplit_once('.') {
                Some((field_parent, name)) => (field_parent, name),
                None => ("", path.as_str()),
            };
            if field_parent == parent && !doc.optional && !object.contains_key(name) {
                self.problems.insert(format!(
                    "`{event}` was emitted without `{path}`, which the docs give as always there: mark it `optional`, or emit it always"
                ));
            }
        }
    }

    /// A value at `path`, of one of `types` (the row's, or an array's element type).
    fn value(
        &mut self,
        docs: &Docs,
        event: &str,
        path: &str,
        row: &FieldDoc,
        types: &[Ty],
        value: &Value,
    ) {
        let Some(ty) = types.iter().find(|ty| fits(ty, value)) else {
            self.problems.insert(format!(
                "`{event}` emits `{path}` as {} ({value}), which its row's type `{}` does not allow: fix the row or the event",
                kind(value),
                row.cell
            ));
            return;
        };
        match (ty, value) {
            (Ty::Object, Value::Object(object)) => self.object(docs, event, path, object),
            (Ty::Array(inner), Value::Array(items)) => {
                let element = format!("{path}[]");
                for item in items {
                    self.value(
                        docs,
                        event,
                        &element,
                        row,
                        std::slice::from_ref(inner),
                        item,
                    );
                }
            }
            (Ty::Map(inner), Value::Object(object)) => {
                for item in object.values() {
                    self.value(docs, event, path, row, std::slice::from_ref(inner), item);
                }
            }
            _ => {}
        }
    }

    /// Rows (and tables) no scripted session emitted.
    fn never_emitted(&mut self, docs: &Docs) {
        for (event, fields) in docs {
            if !self.emitted.contains(&(event.clone(), String::new())) {
                self.problems.insert(format!(
                    "the ### `{event}` table documents an event no scripted session emitted: remove it if it is gone, or add a session that emits it"
                ));
                continue;
            }
            for path in fields.keys() {
                if !self.emitted.contains(&(event.clone(), path.clone())) {
                    self.problems.insert(format!(
                        "`{event}.{path}` is documented but no scripted session emitted it: remove the row if the field is gone, or add a session that emits it"
                    ));
                }
            }
        }
    }
}

/// Every disagreement between `docs` and `events`, as sentences.
fn disagreements(docs: &Docs, events: &[Value]) -> Vec<String> {
    let mut check = Check::default();
    for event in events {
        check.event(docs, event);
    }
    check.never_emitted(docs);
    check.problems.into_iter().collect()
}

// ---------------------------------------------------------------------------------------
// Scripted sessions that between them emit every event and field
// ---------------------------------------------------------------------------------------

/// The cloud model a project picks in [`setup_session`], and where it runs.
const CLOUD: &str = "qwen3-coder:480b-cloud";
const CLOUD_HOST: &str = "https://ollama.com:443";

fn json_run(m: Metron, fake: &FakeOllama, prompt: &str) -> (Run, Vec<Value>) {
    json_events(
        m.args(["-p", prompt, "--json"])
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    )
}

/// A final chunk with Ollama's cached-prompt count, which recent servers send.
fn done_with_cache(prompt: u64, cached: u64, eval: u64) -> Chunk {
    let Chunk::Line(mut last) = done(prompt, eval) else {
        unreachable!("done() is one line");
    };
    last["prompt_eval_cached_count"] = json!(cached);
    Chunk::Line(last)
}

/// Edits and a command with `--yes`: a call with cached tokens, a call written as text, a
/// patch that does not apply (its `-` line is not in the file), the one that does (and so
/// replaces it), and an
/// allowed `git` command whose repository sets `core.pager` (a warned approval), then the
/// answer.
fn work_session() -> (Run, Vec<Value>) {
    let p = greet_project();
    let git_config = p.path(".git/config");
    let mut config = std::fs::read_to_string(&git_config).unwrap_or_default();
    config.push_str("[core]\n\tpager = cat\n");
    std::fs::write(&git_config, config).expect("write .git/config");
    let (_dir, user) = user_config(r#"{"allowed_commands": ["git"]}"#);
    let as_text = r#"<tool_call>{"name": "view_slice", "arguments": {"path": "greet.go", "start": 1, "end": 6}}</tool_call>"#;
    let misremembered = greet_patch().replace("-\treturn \"hello\"", "-\treturn \"hi\"");
    assert_ne!(misremembered, greet_patch());
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            text("Let me find Greet."),
            tool_calls(&[("find_symbol", json!({"symbol": "Greet"}))]),
            done_with_cache(300, 250, 10),
        ]),
        Reply::Stream(vec![text(as_text), done(400, 12)]),
        call("apply_patch", json!({"diff": misremembered}), 500, 40),
        call("apply_patch", json!({"diff": greet_patch()}), 550, 40),
        call("run_command", json!({"command": "git --version"}), 600, 8),
        answer("Greet returns \"hola\" now.", 650, 9),
    ]);
    let m = metron(p.root()).args(["--yes"]).env("METRON_CONFIG", &user);
    let (run, events) = json_run(m, &fake, "make Greet return \"hola\"");
    // The fixture did what it is for: one patch did not apply, the other landed, and the
    // command ran. (The exit status is not this test's business.)
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read greet.go"),
        GREET_HOLA
    );
    let end = events_of_type(&events, "turn_end")[0];
    assert_eq!(
        end["patches_not_applied"].as_array().map(Vec::len),
        Some(1),
        "{end}"
    );
    assert!(
        end["patches_not_applied"][0]["replaced_by"].is_string(),
        "the patch that landed replaced the one that did not: {end}"
    );
    assert_eq!(end["commands"][0]["ran"], true, "{end}");
    assert!(
        events_of_type(&events, "approval")
            .iter()
            .any(|a| a.get("warnings").is_some()),
        "{events:#?}"
    );
    (run, events)
}

/// The setup a session reports: the user's model replaced by the project's cloud model,
/// two config files, a withdrawn tool, and a prompt too long for `num_ctx`.
fn setup_session() -> (Run, Vec<Value>) {
    let p = TestProject::git();
    p.file(".metron.json", format!(r#"{{"model": "{CLOUD}"}}"#));
    p.file("AGENTS.md", "Run make check before answering.\n");
    let (_dir, user) = user_config(r#"{"model": "mine:7b", "num_ctx": 2048}"#);
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .cloud_model(CLOUD, CLOUD_HOST)
        .chat(vec![answer("An answer.", 2048, 4)])
        .start();
    let prompt = "explain this log line by line\n".repeat(400);
    let m = metron(p.root()).env("METRON_CONFIG", &user);
    let (run, events) = json_run(m, &fake, &prompt);
    assert_eq!(run.code, 0, "{run:?}");
    let start = &events[0];
    assert_eq!(start["model_replaced"], "mine:7b", "{start}");
    assert!(
        events_of_type(&events, "model_reply")[0]
            .get("prompt_truncated")
            .is_some(),
        "{events:#?}"
    );
    (run, events)
}

/// A prompt the server refuses as too long once, after a tool ran: metron trims and asks
/// again.
fn trimmed_session() -> (Run, Vec<Value>) {
    let p = TestProject::git();
    p.file(
        "a.txt",
        "a line that the model reads and then loses\n".repeat(20),
    );
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "a.txt", "start": 1, "end": 20}),
            100,
            5,
        ),
        Reply::Error(400, "the input length exceeds the context length".into()),
        answer("An answer.", 200, 4),
    ]);
    let (run, events) = json_run(metron(p.root()), &fake, "read a.txt");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        events_of_type(&events, "history_trimmed").len(),
        1,
        "{events:#?}"
    );
    (run, events)
}

/// A turn whose server sends no token counts at all (its final line has neither count).
fn uncounted_session() -> (Run, Vec<Value>) {
    let p = TestProject::git();
    let Chunk::Line(mut last) = done(0, 0) else {
        unreachable!("done() is one line");
    };
    if let Some(fields) = last.as_object_mut() {
        fields.remove("prompt_eval_count");
        fields.remove("eval_count");
    }
    let fake = FakeOllama::start(vec![Reply::Stream(vec![text("Hi."), Chunk::Line(last)])]);
    let (run, events) = json_run(metron(p.root()), &fake, "hi");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        events_of_type(&events, "model_reply")[0]["tokens_unreported"],
        true,
        "{events:#?}"
    );
    (run, events)
}

/// A turn that fails: the server answers the chat with an error.
fn failed_session() -> (Run, Vec<Value>) {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![Reply::Error(500, "model runner crashed".into())]);
    let (run, events) = json_run(metron(p.root()), &fake, "hi");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        events_of_type(&events, "turn_end")
            .first()
            .is_some_and(|end| end.get("error").is_some()),
        "{events:#?}"
    );
    (run, events)
}

fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[test]
fn every_emitted_field_is_documented_and_every_documented_field_is_emitted() {
    if !git_available() {
        skip(
            "every_emitted_field_is_documented_and_every_documented_field_is_emitted",
            "the scripted command is `git --version`, and git is not installed",
        );
        return;
    }
    let docs = parse_docs(&usage_md()).unwrap_or_else(|e| panic!("{e}"));
    let mut events = Vec::new();
    for session in [
        work_session,
        setup_session,
        failed_session,
        trimmed_session,
        uncounted_session,
    ] {
        events.extend(session().1);
    }
    let problems = disagreements(&docs, &events);
    assert!(
        problems.is_empty(),
        "docs/usage.md (\"JSON events\") and the emitted events disagree:\n- {}",
        problems.join("\n- ")
    );
}

#[test]
fn the_first_event_carries_the_schema_version_the_docs_state() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Hello.", 10, 2)]);
    let (run, events) = json_run(metron(p.root()), &fake, "hi");
    assert_eq!(run.code, 0, "{run:?}");
    // Right after `type` on the first line, so a reader meets it before anything else.
    let first = run.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(r#"{"type":"session_start","schema_version":"#),
        "{first}"
    );
    let version = events[0]["schema_version"]
        .as_u64()
        .unwrap_or_else(|| panic!("schema_version is not a number: {first}"));
    let stated = format!("The stream described here is schema version {version}.");
    assert!(
        usage_md().contains(&stated),
        "docs/usage.md does not say \"{stated}\": state the version the binary emits"
    );
}

/// The example stream in the docs is held to the same tables (its lines may be
/// shortened, but each field it shows is listed, of its type, and none it omits is one
/// the tables say is always there).
#[test]
fn the_example_in_the_docs_follows_the_tables() {
    let usage = usage_md();
    let docs = parse_docs(&usage).unwrap_or_else(|e| panic!("{e}"));
    let section = usage
        .split("\n## ")
        .find(|s| s.starts_with("JSON events\n"))
        .unwrap_or_default();
    let example: Vec<Value> = section
        .lines()
        .filter(|line| line.starts_with("{\"type\":"))
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("an example line is not JSON ({e}): {line}"))
        })
        .collect();
    assert!(example.len() >= 8, "{example:#?}");
    let mut check = Check::default();
    for event in &example {
        check.event(&docs, event);
    }
    let problems: Vec<String> = check.problems.into_iter().collect();
    assert!(
        problems.is_empty(),
        "the example in docs/usage.md (\"JSON events\") disagrees with the tables:\n- {}",
        problems.join("\n- ")
    );
}

#[test]
fn the_docs_check_flags_undocumented_missing_mistyped_and_gone_fields() {
    let docs = parse_docs(
        "# x\n## JSON events\n\n### `turn_end`\n\n| field | type | meaning |\n|---|---|---|\n\
         | `turn` | integer | n |\n| `status` | string | s |\n| `answer` | string, optional | a |\n\
         | `latency` | object | l |\n| `latency.tools_ms` | integer | t |\n\
         | `files` | array of objects | f |\n| `files[].path` | string | p |\n\
         | `gone` | boolean, optional | g |\n## next\n| `x` | string | not JSON events |\n",
    )
    .expect("parses");
    assert_eq!(docs.len(), 1, "{docs:?}");
    // Matches the docs exactly, apart from `gone`.
    let good = json!({"type": "turn_end", "turn": 1, "status": "ok", "answer": "a",
        "latency": {"tools_ms": 3}, "files": [{"path": "a.go"}]});
    assert_eq!(
        disagreements(&docs, std::slice::from_ref(&good)),
        [
            "`turn_end.gone` is documented but no scripted session emitted it: remove the row if the field is gone, or add a session that emits it"
        ]
    );
    let bad = json!({"type": "turn_end", "turn": "1", "status": "ok", "gone": true,
        "latency": {"tools_ms": 3, "extra_ms": 1}, "files": [{}], "new_field": 1});
    let problems = disagreements(&docs, &[good, bad, json!({"type": "surprise"})]);
    for needle in [
        "`turn_end` emits `turn` as string",
        "`turn_end` emits `latency.extra_ms` (integer), which the `turn_end` table does not list",
        "`turn_end` emits `new_field` (integer)",
        "`turn_end` was emitted without `files[].path`",
        "`surprise` events are emitted, but docs/usage.md has no ### `surprise` table",
    ] {
        assert!(
            problems.iter().any(|p| p.starts_with(needle)),
            "{needle}: {problems:#?}"
        );
    }
    // `answer` is optional: its absence from `bad` is not a problem.
    assert!(
        !problems.iter().any(|p| p.contains("`answer`")),
        "{problems:#?}"
    );
    assert!(parse_docs("## JSON events\n### `a`\n| `x` | float | y |\n").is_err());
}
