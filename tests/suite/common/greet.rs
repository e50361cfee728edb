//! The Greet fixture most end-to-end tests share: a Go file whose function returns
//! "hello", the patch that makes it return "hola", the fake model's script for that
//! session, and readers for the requests the fake received.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::TestProject;
use crate::suite::fake_ollama::{Reply, answer, call, done, text, tool_calls};

pub const GREET_GO: &str =
    "package greet\n\n// Greet says hello.\nfunc Greet() string {\n\treturn \"hello\"\n}\n";
pub const GREET_HOLA: &str =
    "package greet\n\n// Greet says hello.\nfunc Greet() string {\n\treturn \"hola\"\n}\n";

pub fn greet_project() -> TestProject {
    let project = TestProject::git();
    project.file("greet.go", GREET_GO);
    project
}

pub fn greet_patch() -> String {
    "--- a/greet.go\n+++ b/greet.go\n@@ -3,4 +3,4 @@\n // Greet says hello.\n func Greet() string {\n-\treturn \"hello\"\n+\treturn \"hola\"\n }\n".to_owned()
}

/// The fake's script for "make Greet return hola": look the symbol up (saying so first),
/// read it, patch it, answer.
pub fn greet_session(final_answer: &str) -> Vec<Reply> {
    vec![
        text_then_call(
            "Let me find Greet.",
            "find_symbol",
            json!({"symbol": "Greet"}),
            300,
            10,
        ),
        call(
            "view_slice",
            json!({"path": "greet.go", "start": 1, "end": 6}),
            400,
            12,
        ),
        call("apply_patch", json!({"diff": greet_patch()}), 500, 40),
        answer(final_answer, 600, 9),
    ]
}

/// Writes a trusted user config in a directory of its own (outside every project) and
/// returns it with its path, for `METRON_CONFIG`.
pub fn user_config(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("metron-user-config-")
        .tempdir()
        .expect("temp dir for a user config");
    let path = dir.path().join("config.json");
    std::fs::write(&path, text).expect("write the user config");
    (dir, path)
}

/// The role of every message of a request body.
pub fn roles(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|m| m["role"].as_str().unwrap_or("?").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The `tool` messages of a request body.
pub fn tool_messages(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").cloned().collect())
        .unwrap_or_default()
}

/// The `content` of message `i` of a request body.
pub fn content(body: &Value, i: usize) -> String {
    body["messages"][i]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A round with text before its tool call, as some models stream it.
pub fn text_then_call(before: &str, name: &str, args: Value, prompt: u64, eval: u64) -> Reply {
    Reply::Stream(vec![
        text(before),
        tool_calls(&[(name, args)]),
        done(prompt, eval),
    ])
}
