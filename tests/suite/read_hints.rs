//! What the read tools say about what they left out, exactly as the model reads it
//! (`metron -p` against the scripted model, the tool result taken from the next request):
//! search_text names where its per-file cap dropped matches, bounded, and find_symbol's
//! miss names the definitions that differ only in capitals.

use serde_json::json;

use super::common::{TestProject, metron, tool_messages, user_config};
use super::fake_ollama::{FakeOllama, answer, call};

/// Runs `metron -p` in `p` against a model that makes `calls` in turn and then answers;
/// returns the text of each tool result, in order, as the last request carried them.
fn results_of(
    p: &TestProject,
    calls: &[(&str, serde_json::Value)],
    env: &[(&str, &str)],
) -> Vec<String> {
    let mut script: Vec<_> = calls
        .iter()
        .map(|(name, args)| call(name, args.clone(), 100, 10))
        .collect();
    script.push(answer("Seen.", 150, 3));
    let fake = FakeOllama::start(script);
    let mut command = metron(p.root())
        .args(["-p", "look around"])
        .env("OLLAMA_HOST", fake.base_url());
    for (key, value) in env {
        command = command.env(key, value);
    }
    let run = command.run();
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    let last = bodies.last().expect("requests");
    tool_messages(last)
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A Python file with three `return`s, one more than the default per-file cap.
const CALC_PY: &str = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef neg(a):\n    return -a\n";

#[test]
fn search_text_says_where_the_per_file_cap_left_matches_out() {
    let p = TestProject::git();
    p.file("calc.py", CALC_PY);
    p.file("other.py", "def one():\n    return 1\n");
    let search = [("search_text", json!({"pattern": "return"}))];
    let results = results_of(&p, &search, &[]);
    assert_eq!(
        results,
        [
            "calc.py:2:    return a + b\ncalc.py:5:    return a - b\n[+1 more in calc.py]\nother.py:2:    return 1\n"
        ]
    );
    // With room for all three, nothing is left out and nothing is said.
    let (_dir, config) = user_config(r#"{"search_max_per_file": 3}"#);
    let config = config.to_string_lossy().into_owned();
    let results = results_of(&p, &search, &[("METRON_CONFIG", &config)]);
    assert_eq!(
        results,
        [
            "calc.py:2:    return a + b\ncalc.py:5:    return a - b\ncalc.py:8:    return -a\nother.py:2:    return 1\n"
        ]
    );
}

/// Past three capped files the note is one closing count, so it stays a few lines
/// however many files the cap cut.
#[test]
fn search_text_names_three_capped_files_and_counts_the_rest() {
    let p = TestProject::git();
    for i in 1..=6 {
        p.file(&format!("f{i}.py"), CALC_PY);
    }
    let results = results_of(&p, &[("search_text", json!({"pattern": "return"}))], &[]);
    let mut expected = String::new();
    for i in 1..=5 {
        expected.push_str(&format!(
            "f{i}.py:2:    return a + b\nf{i}.py:5:    return a - b\n"
        ));
        if i <= 3 {
            expected.push_str(&format!("[+1 more in f{i}.py]\n"));
        }
    }
    expected.push_str(
        "[+2 more in 2 other files past the cap of 2 per file; narrow the pattern or view_slice a file]\n",
    );
    expected.push_str("[truncated to 10 matches; narrow the pattern]\n");
    assert_eq!(results, [expected]);
}

#[test]
fn find_symbol_names_the_definition_a_wrong_capital_missed() {
    let p = TestProject::git();
    p.file(
        "render.go",
        "package render\n\nfunc JSON(v any) string {\n\treturn \"\"\n}\n\nfunc Text() {}\n",
    );
    let results = results_of(
        &p,
        &[
            ("find_symbol", json!({"symbol": "JSON"})),
            ("find_symbol", json!({"symbol": "Json"})),
            ("find_symbol", json!({"symbol": "Yaml"})),
        ],
        &[],
    );
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].contains("-> render.go:3"), "{results:?}");
    assert_eq!(
        results[1],
        "No definition of `Json` found in the project's Go files. Defined with other capitals: `JSON` (1 definition); ask for the exact name.\n"
    );
    // A name with no other spelling gets the plain miss.
    assert_eq!(
        results[2],
        "No definition of `Yaml` found in the project's Go files.\n"
    );
}
