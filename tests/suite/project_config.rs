//! A project's `.metron.json` never locks the person out: an unknown key or an invalid
//! value in it is a warning (with "did you mean"), that key is ignored and the rest of the
//! file applies; the user's own file stays strict (exit 2). Driven through the real binary
//! against the fake Ollama server, in `-p`, in the session and in `--doctor`.

use serde_json::Value;

use super::common::{Run, TestProject, metron};
use super::fake_ollama::{FakeOllama, answer};

/// `metron -p hello` in `p`, answered by `fake`.
fn ask(p: &TestProject, fake: &FakeOllama) -> Run {
    metron(p.root())
        .args(["-p", "hello"])
        .env("OLLAMA_HOST", fake.base_url())
        .run()
}

/// The `options` of the only chat request `fake` received.
#[track_caller]
fn options(fake: &FakeOllama) -> Value {
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "one chat request: {bodies:?}");
    bodies[0]["options"].clone()
}

#[test]
fn a_typo_in_the_projects_file_is_a_warning_with_did_you_mean_and_the_run_goes_on() {
    let p = TestProject::git();
    p.file(
        ".metron.json",
        r#"{"max_trns": 1, "max_reslt_bytes": 9, "max_output_tokens": 77}"#,
    );
    let fake = FakeOllama::start(vec![answer("Hi.", 10, 1)]);
    let run = ask(&p, &fake);

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Hi.\n", "{run:?}");
    let typo = run
        .stderr
        .lines()
        .find(|l| l.contains("`max_trns`"))
        .unwrap_or_else(|| panic!("no warning about max_trns: {run:?}"));
    assert!(
        typo.starts_with("metron: warning: ignoring unknown key `max_trns` in ")
            && typo.ends_with("did you mean `max_turns`? Rename it in that file"),
        "{typo}"
    );
    // A key near no other is named, with where to find them all.
    assert!(
        run.stderr
            .contains("ignoring unknown key `max_reslt_bytes`")
            && run.stderr.contains("`metron --example-config` prints all"),
        "{run:?}"
    );
    // The rest of the file applied.
    assert_eq!(options(&fake)["num_predict"], 77, "{run:?}");
}

#[test]
fn an_invalid_value_in_the_projects_file_is_a_warning_and_the_key_is_ignored() {
    let p = TestProject::git();
    p.file(
        ".metron.json",
        r#"{"top_p": 2, "num_ctx": 0, "max_output_tokens": 77}"#,
    );
    let fake = FakeOllama::start(vec![answer("Hi.", 10, 1)]);
    let run = ask(&p, &fake);

    assert_eq!(run.code, 0, "{run:?}");
    for needle in [
        "metron: warning: ignoring `top_p` must be in (0, 1], got 2 in ",
        "metron: warning: ignoring `num_ctx` must be positive, got 0 in ",
    ] {
        assert_eq!(run.stderr.matches(needle).count(), 1, "{needle}: {run:?}");
    }
    assert!(run.stderr.contains("fix that value in the file"), "{run:?}");
    let options = options(&fake);
    // The bad keys keep the layer below (the defaults); the good one applies.
    assert_eq!(options["top_p"], 0.95, "{options}");
    assert_eq!(options["num_ctx"], 16384, "{options}");
    assert_eq!(options["num_predict"], 77, "{options}");
}

#[test]
fn a_projects_disabled_tool_that_is_no_tool_is_dropped_with_a_warning() {
    let p = TestProject::git();
    p.file(
        ".metron.json",
        r#"{"disabled_tools": ["search_txt", "list_files"]}"#,
    );
    let fake = FakeOllama::start(vec![answer("Hi.", 10, 1)]);
    let run = ask(&p, &fake);

    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("warning: ignoring `search_txt` in `disabled_tools` of "),
        "{run:?}"
    );
    let offered: Vec<String> = fake.chat_bodies()[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(!offered.iter().any(|n| n == "list_files"), "{offered:?}");
    assert!(offered.iter().any(|n| n == "search_text"), "{offered:?}");
}

#[test]
fn the_users_own_file_stays_strict() {
    for (text, needle) in [
        (
            r#"{"max_trns": 1}"#,
            "unknown key `max_trns` in config file ",
        ),
        (r#"{"top_p": 2}"#, "`top_p` from "),
    ] {
        let p = TestProject::git();
        let fake = FakeOllama::start(vec![answer("Hi.", 10, 1)]);
        let run = metron(p.root())
            .args(["-p", "hello"])
            .env("OLLAMA_HOST", fake.base_url());
        let user = run.home().join(".metron").join("config.json");
        std::fs::create_dir_all(user.parent().expect("parent")).expect("mkdir");
        std::fs::write(&user, text).expect("write the user config");
        let run = run.run();

        assert_eq!(run.code, 2, "{text}: {run:?}");
        assert!(run.stderr.contains(needle), "{text}: {run:?}");
        assert!(run.stderr.contains("config.json"), "{text}: {run:?}");
        assert!(fake.chat_bodies().is_empty(), "{text}: the model was asked");
    }
}

#[test]
fn the_projects_warnings_are_shown_once_at_the_start_of_a_session() {
    let p = TestProject::git();
    p.file(".metron.json", r#"{"max_trns": 1}"#);
    let fake = FakeOllama::start(vec![answer("Hi.", 10, 1), answer("Again.", 10, 1)]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("hello\nonce more\n")
        .run();

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stderr.matches("unknown key `max_trns`").count(),
        1,
        "{run:?}"
    );
    assert!(run.stderr.starts_with("metron: warning: "), "{run:?}");
    assert!(run.stdout.contains("Again."), "{run:?}");
}

#[test]
fn the_doctor_shows_a_projects_unknown_key_as_a_warning_row() {
    let p = TestProject::git();
    p.file(".metron.json", r#"{"max_trns": 1}"#);
    let fake = FakeOllama::builder().start();
    let run = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();

    assert_eq!(run.code, 0, "{run:?}");
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("warn") && l.contains("`max_trns`"))
        .unwrap_or_else(|| panic!("no warn row for max_trns: {}", run.stdout));
    assert!(row.contains("config"), "{row}");
    assert!(
        run.stdout
            .contains("did you mean `max_turns`? Rename it in that file"),
        "{}",
        run.stdout
    );
}
