//! The action ledger through the real binary: `-p --json` events, `/ledger`, `/context`,
//! standing approvals, and that a request is never shown as done.

use serde_json::{Value, json};

use super::common::{
    GREET_GO, GREET_HOLA, PATIENCE, exit_on_a_terminal, greet_patch, greet_project, greet_session,
    on_a_terminal, script_available,
};
use super::common::{Run, TestProject, events_of_type, json_events, metron, skip};
use super::fake_ollama::{Chunk, FakeOllama, Reply, answer, call, text};

fn json_run(p: &TestProject, fake: &FakeOllama, extra: &[&str]) -> (Run, Vec<Value>) {
    json_events(
        metron(p.root())
            .args(["-p", "make Greet return \"hola\"", "--json"])
            .args(extra)
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    )
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?"))
        .collect()
}

#[test]
fn json_events_trace_every_stage_and_the_hashes_match_the_files() {
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("Greet now returns \"hola\"."));
    let (run, events) = json_run(&p, &fake, &["--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    let kinds = types(&events);
    assert_eq!(kinds[0], "session_start");
    assert_eq!(kinds[1], "turn_start");
    assert_eq!(kinds.last(), Some(&"turn_end"));
    // Per call: proposed, decision, (approval, effect,) result, in that order.
    let per_call: Vec<&str> = kinds
        .iter()
        .copied()
        .filter(|k| {
            !matches!(
                *k,
                "session_start" | "turn_start" | "model_reply" | "turn_end"
            )
        })
        .collect();
    assert_eq!(
        per_call,
        [
            "tool_proposed",
            "decision",
            "tool_result",
            "tool_proposed",
            "decision",
            "tool_result",
            "tool_proposed",
            "decision",
            "approval",
            "effect",
            "tool_result"
        ]
    );
    assert_eq!(events_of_type(&events, "model_reply").len(), 4);
    let start = &events[0];
    assert_eq!(start["model"], "qwen2.5-coder:7b");
    assert_eq!(start["endpoint_local"], true);
    assert_eq!(start["config_sources"]["endpoint"], "$OLLAMA_HOST");
    assert!(
        start["tools_withdrawn"]
            .as_array()
            .is_some_and(|w| w.iter().any(|t| t["name"] == "run_command"))
    );
    let approval = events_of_type(&events, "approval")[0];
    assert_eq!(approval["by"], "--yes");
    assert_eq!(approval["answer"], "yes");
    let effect = events_of_type(&events, "effect")[0];
    assert_eq!(effect["kind"], "wrote");
    assert_eq!(effect["files"][0]["path"], "greet.go");
    assert_eq!(effect["files"][0]["before"], blob_id(GREET_GO));
    assert_eq!(effect["files"][0]["after"], blob_id(GREET_HOLA));
    let end = events_of_type(&events, "turn_end")[0];
    assert_eq!(end["status"], "ok");
    assert_eq!(end["answer"], "Greet now returns \"hola\".");
    assert_eq!(end["tool_calls"], 3);
    assert_eq!(end["round_trips"], 4);
    assert_eq!(end["prompt_tokens"], 600);
    assert_eq!(end["generated_tokens"], 71);
    for key in ["first_token_ms", "generation_ms", "tools_ms", "approval_ms"] {
        assert!(end["latency"][key].is_u64(), "{key}: {end}");
    }
    // Every event of a call names the same id as its proposal.
    let ids: Vec<&str> = events_of_type(&events, "tool_proposed")
        .iter()
        .filter_map(|e| e["call_id"].as_str())
        .collect();
    for kind in ["decision", "tool_result"] {
        let theirs: Vec<&str> = events_of_type(&events, kind)
            .iter()
            .filter_map(|e| e["call_id"].as_str())
            .collect();
        assert_eq!(theirs, ids, "{kind}");
    }
}

#[test]
fn a_refused_patch_is_never_shown_as_done() {
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("I could not apply it."));
    let (run, events) = json_run(&p, &fake, &[]);
    // The patch did not land, so the answer is no edit: 3, and `incomplete`.
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        events_of_type(&events, "turn_end")[0]["status"],
        "incomplete"
    );
    assert!(events_of_type(&events, "effect").is_empty(), "{events:#?}");
    let approval = events_of_type(&events, "approval")[0];
    assert_eq!(approval["by"], "nobody to ask");
    assert_eq!(approval["answer"], "refused (nobody to ask)");
    let results = events_of_type(&events, "tool_result");
    assert_eq!(results[2]["tool"], "apply_patch");
    assert_eq!(results[2]["outcome"], "refused");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).ok().as_deref(),
        Some(GREET_GO)
    );
}

#[test]
fn policy_refusals_name_their_rule() {
    let p = greet_project();
    let same = json!({"symbol": "Greet"});
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "touch x"}), 10, 1),
        call("delete_everything", json!({}), 10, 1),
        call("find_symbol", same.clone(), 10, 1),
        call("find_symbol", same.clone(), 10, 1),
        call("find_symbol", same, 10, 1),
        answer("done", 10, 1),
    ]);
    let (run, events) = json_run(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let decisions: Vec<(bool, String)> = events_of_type(&events, "decision")
        .iter()
        .map(|d| {
            (
                d["allowed"].as_bool().unwrap_or(true),
                d["rule"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert!(!decisions[0].0 && decisions[0].1.starts_with("not offered in this session"));
    assert_eq!(decisions[1], (false, "no such tool".to_owned()));
    assert_eq!(decisions[2], (true, "offered".to_owned()));
    assert_eq!(decisions[3], (true, "offered".to_owned()));
    assert_eq!(
        decisions[4],
        (false, "identical call number 3 in one turn".to_owned())
    );
}

#[test]
fn an_interrupted_turn_ends_with_an_interrupted_event() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("find_symbol", json!({"symbol": "Greet"}), 10, 1),
        Reply::Stream(vec![text("thinking"), Chunk::Hang]),
    ]);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_metron"));
    let home = tempfile::tempdir().expect("home");
    command
        .current_dir(p.root())
        .args(["-p", "where is Greet?", "--json"])
        .env("HOME", home.path())
        .env("METRON_CONFIG_DIR", home.path())
        .env_remove("METRON_CONFIG")
        .env_remove("OLLAMA_MODEL")
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().expect("spawn");
    // Interrupted mid-reply: the text before the hang has been sent.
    assert!(
        fake.wait_for_hangs(1, PATIENCE),
        "the second reply never reached its hang"
    );
    // SAFETY: kill(2) with a pid this test spawned and a valid signal number.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    assert_eq!(last["type"], "turn_end", "{stdout}");
    assert_eq!(last["status"], "error", "{stdout}");
    assert_eq!(
        last["error"], "interrupted by the user (Ctrl-C)",
        "{stdout}"
    );
    assert_eq!(last["tool_calls"], 1, "{stdout}");
}

#[test]
fn ledger_and_context_in_the_repl() {
    let p = TestProject::git();
    let body: String = (1..=30)
        .map(|i| format!("line {i} of the notes\n"))
        .collect();
    p.file("notes.txt", &body);
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "notes.txt", "start": 1, "end": 30}),
            10,
            1,
        ),
        call("search_text", json!({"pattern": "line 7 "}), 10, 1),
        call(
            "apply_patch",
            json!({"diff": "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n-line 1 of the notes\n+line one of the notes\n line 2 of the notes\n"}),
            10,
            1,
        ),
        answer("Read them.", 10, 1),
    ]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("read the notes\n/ledger\n/context\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    // Its patch was refused (nobody to ask): the heading says the turn is incomplete.
    assert!(out.contains("turn 1: read the notes [incomplete]"), "{out}");
    assert!(out.contains("1. view_slice"), "{out}");
    assert!(out.contains("2. search_text"), "{out}");
    assert!(out.contains("3. apply_patch (diff of"), "{out}");
    assert!(
        out.contains("approval: nobody to ask -> refused (nobody to ask)"),
        "{out}"
    );
    assert!(
        out.contains("effect: none (nothing was written or run)"),
        "{out}"
    );
    assert!(out.contains("standing approvals: none"), "{out}");
    // The slice was purged after the turn; the search result is still carried.
    assert!(out.contains("file `notes.txt` lines 1-30"), "{out}");
    assert!(out.contains("purged after its turn"), "{out}");
    assert!(out.contains("search for `line 7 `"), "{out}");
    assert!(out.contains("still carried"), "{out}");
    assert!(out.contains("bytes carried on every request"), "{out}");
}

#[test]
fn a_standing_patch_approval_is_granted_used_and_listed() {
    if !script_available() {
        return skip(
            "a_standing_patch_approval_is_granted_used_and_listed",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    let second = "--- a/greet.go\n+++ b/greet.go\n@@ -1,3 +1,3 @@\n-package greet\n+package greeting\n \n // Greet says hello.\n".to_owned();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("First done.", 150, 9),
        call("apply_patch", json!({"diff": second}), 100, 20),
        answer("Second done.", 150, 9),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("first\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    live.send("a\r");
    live.wait_stdout("First done.", 1);
    live.wait_stdout_after("First done.", "metron > ");
    live.send("second\r");
    live.wait_stdout("Second done.", 1);
    live.wait_stdout_after("Second done.", "metron > ");
    live.send("/ledger\r");
    live.wait_stdout("standing approval: patches", 1);
    let run = exit_on_a_terminal(live);
    let out = &run.stdout;
    // Asked once; the second patch went through on the standing approval.
    assert_eq!(out.matches("Apply this patch?").count(), 1, "{out}");
    assert!(out.contains("standing approval granted:"), "{out}");
    assert!(
        out.contains("approval: asked -> yes, for the session"),
        "{out}"
    );
    assert!(out.contains("approval: standing approval -> yes"), "{out}");
    let on_disk = std::fs::read_to_string(p.path("greet.go")).unwrap_or_default();
    assert!(
        on_disk.starts_with("package greeting\n") && on_disk.contains("\"hola\""),
        "{on_disk}"
    );
}

/// git's blob id of `text`: what `git hash-object` prints, and what the ledger records.
fn blob_id(text: &str) -> String {
    git2::Oid::hash_object(git2::ObjectType::Blob, text.as_bytes())
        .expect("hash")
        .to_string()
}

/// `/ledger` and `/context` quote the model (tool names, arguments) and the tools
/// (results, file names): escapes in them, C1 controls (CSI U+009B, OSC U+009D) and the
/// Arabic letter mark are shown, never obeyed, so an argument such as `\e[7F\e[J` cannot
/// move the cursor up and rewrite what the ledger appears to show.
#[test]
fn ledger_and_context_show_escapes_instead_of_obeying_them() {
    let p = TestProject::git();
    p.file("notes.txt", "line one\n");
    let forged = "\u{1b}[7F\u{1b}[J  1. view_slice notes.txt\u{9b}2J\u{9d}0;t\u{7}\u{61c}";
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "notes.txt", "start": 1, "end": 1}),
            10,
            1,
        ),
        call("search_text", json!({"pattern": forged}), 10, 1),
        call("list_files", json!({"glob": forged}), 10, 1),
        call("evil\u{1b}[2J\u{9b}H", json!({"x": forged}), 10, 1),
        answer("Read them.", 10, 1),
    ]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("read the notes\n/ledger\n/context\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("turn 1: read the notes [ok]"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("bytes carried on every request"),
        "{run:?}"
    );
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        for c in ['\u{1b}', '\u{9b}', '\u{9d}', '\u{61c}', '\u{7}'] {
            assert!(
                !text.contains(c),
                "{name} carries {:?}: {run:?}",
                c.escape_unicode().to_string()
            );
        }
    }
    assert!(run.stdout.contains("\\u{1b}[7F\\u{1b}[J"), "{run:?}");
}

#[test]
fn a_commands_sandbox_and_the_files_it_wrote_are_in_the_effect_and_turn_end() {
    let p = TestProject::git();
    p.file("Makefile", "gen:\n\techo 'package api' > gen.go\n");
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "make gen"}), 10, 2),
        answer("Generated.", 10, 2),
    ]);
    let metron = metron(p.root());
    let dir = metron.home().join(".metron");
    std::fs::create_dir_all(&dir).expect("mkdir .metron");
    std::fs::write(dir.join("config.json"), r#"{"allowed_commands": ["make"]}"#)
        .expect("write the user config");
    let (run, events) = json_events(
        metron
            .args(["-p", "generate", "--json", "--yes"])
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let effect = events_of_type(&events, "effect")
        .into_iter()
        .find(|e| e["kind"] == "ran")
        .unwrap_or_else(|| panic!("no ran effect: {events:#?}"));
    assert_eq!(effect["sandbox"]["mode"], "on", "{effect}");
    assert_eq!(effect["sandbox"]["network"], false, "{effect}");
    assert_eq!(
        effect["sandbox"]["summary"],
        "writes the project (not .git) and a temp dir; no network"
    );
    assert_eq!(
        effect["changed"]["created"],
        json!(["gen.go"]),
        "{effect}\n{run:?}"
    );
    let turn_end = events_of_type(&events, "turn_end")
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no turn_end: {events:#?}"));
    let command = &turn_end["commands"][0];
    assert_eq!(command["sandbox"]["mode"], "on", "{turn_end}");
    assert_eq!(
        command["changed"]["created"],
        json!(["gen.go"]),
        "{turn_end}"
    );
    assert!(
        run.stderr.contains("wrote: gen.go (new)"),
        "the evidence line does not name the file: {run:?}"
    );
}
