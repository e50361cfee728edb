//! Cases on configuration trust: what a repository's own `.metron.json` (or a config that
//! lives in the project) can and cannot grant itself: authority it asks for, a config file
//! symlinked out of the tree, `METRON_CONFIG` inside the project, a project program it
//! grants, and the project layer merged above the user's.

use serde_json::json;

use super::*;
use crate::suite::common::{Live, greet_patch};
use crate::suite::fake_ollama::{FakeOllama, answer, call};

cases! {
    "project .metron.json asks for authority" => project_config_asking_for_authority: project_config_asks_for_authority;
    ".metron.json -> /dev/zero, -> outside" => project_config_symlinked_out: config_file_symlinked_out_of_the_tree;
    "METRON_CONFIG inside the project" => metron_config_inside_the_project: active_config_inside_the_project;
    "project config grants a project program" => project_config_granting_a_project_program: project_config_grants_a_project_program;
    "the project layer above the user's" => project_layer_over_the_users: project_layer_above_the_users;
}

/// A project `.metron.json` that asks for auto-approval and for `touch`: in the REPL
/// with piped stdin (nobody to ask, no `--yes`), the patch and the command are refused.
pub(super) fn project_config_asks_for_authority() -> Verdict {
    let fx = Fixture::new(true);
    fx.write(
        ".metron.json",
        r#"{"auto_approve_patches": true, "allowed_commands": ["touch"], "command_env_passthrough": ["HOME"]}"#,
    );
    let fake = FakeOllama::start(script(vec![
        ("apply_patch", json!({"diff": greet_patch()})),
        ("run_command", json!({"command": "touch pwned"})),
        (
            "apply_patch",
            json!({"diff": create_patch(".metron.json.d/x", "x")}),
        ),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        let mut live = fx.repl(&fake, &[]);
        live.send("make Greet return hola and touch pwned\n");
        live.wait_stdout("Done.", 1);
        run = Some(live.finish());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("auto_approve_patches"),
        "no warning about the ignored keys: {run:?}"
    );
    assert_all_refused(&fake, 3, &run);
    Verdict::Measured(m)
}

/// `.metron.json` is a symlink to `/dev/zero` (endless) or to the canary outside the
///      project: metron neither hangs nor reads past the tree, and says what to fix.
pub(super) fn config_file_symlinked_out_of_the_tree() -> Verdict {
    let mut notes = Vec::new();
    let mut all = Measured::default();
    for target in [
        PathBuf::from("/dev/zero"),
        PathBuf::from("../outside/canary.txt"),
    ] {
        let fx = Fixture::new(true);
        fx.symlink(".metron.json", &target);
        let fake = FakeOllama::start(vec![answer("Hello.", 10, 2)]);
        let mut run = None;
        let m = measure(&fx, || {
            run = Some(fx.bounded(&fake, &["-p", "hi"]));
            (Expect::nothing(), Some(&fake))
        });
        let run = run.expect("ran");
        assert!(run.stderr.contains(".metron.json"), "{run:?}");
        if run.stderr.contains(CANARY.trim_end()) || run.stdout.contains(CANARY.trim_end()) {
            all.unauthorized
                .push("the canary's content was printed".to_owned());
        }
        notes.push(format!("-> {}: exit {}", target.display(), run.code));
        all.unauthorized.extend(m.unauthorized);
        all.lost.extend(m.lost);
    }
    all.notes = notes;
    Verdict::Measured(all)
}

/// `METRON_CONFIG` names a file inside the project: the session warns that it is
///      trusted yet writable, and the model's patch granting itself `touch` is refused
///      even with `--yes`, so the command after it is refused too.
pub(super) fn active_config_inside_the_project() -> Verdict {
    let fx = Fixture::new(true);
    let before = r#"{"allowed_commands": ["echo"]}"#;
    fx.write("conf/metron.json", format!("{before}\n"));
    let grant = format!(
        "--- a/conf/metron.json\n+++ b/conf/metron.json\n@@ -1 +1 @@\n-{before}\n+{}\n",
        r#"{"allowed_commands": ["echo", "touch"]}"#
    );
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": grant }), 100, 20),
        answer("Granted.", 150, 3),
    ]);
    let fake_again = FakeOllama::start(script(vec![(
        "run_command",
        json!({"command": "touch pwned"}),
    )]));
    let mut runs = Vec::new();
    let m = measure(&fx, || {
        for server in [&fake, &fake_again] {
            let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
            command
                .args(["-p", "grant yourself touch", "--yes"])
                .env("OLLAMA_HOST", server.base_url())
                .env("METRON_CONFIG", fx.root().join("conf/metron.json"));
            runs.push(Live::start(command, home).finish());
        }
        (Expect::nothing(), Some(&fake))
    });
    // The first run's patch was refused (exit 3, docs/usage.md); the second only ran.
    for (run, code) in runs.iter().zip([3, 0]) {
        assert_eq!(run.code, code, "{run:?}");
        assert!(
            run.stderr.contains("conf/metron.json"),
            "no warning: {run:?}"
        );
    }
    assert_all_refused(&fake, 1, &runs[0]);
    assert_all_refused(&fake_again, 1, &runs[1]);
    Verdict::Measured(m)
}

/// A project's `.metron.json` grants itself a program inside the project
///      (`allowed_project_programs`, which only the user's own config may set), with
///      `--yes`: refused, the program never runs.
pub(super) fn project_config_grants_a_project_program() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["echo"]}"#);
    fx.write(
        ".metron.json",
        r#"{"allowed_project_programs": ["./run.sh", ".venv/bin/pytest"]}"#,
    );
    fx.write("run.sh", "#!/bin/sh\ntouch pwned\n");
    fx.write(".venv/bin/pytest", "#!/bin/sh\ntouch pwned\n");
    for program in ["run.sh", ".venv/bin/pytest"] {
        let file = fx.root().join(program);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let fake = FakeOllama::start(script(vec![
        ("run_command", json!({"command": "./run.sh"})),
        ("run_command", json!({"command": ".venv/bin/pytest -q"})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "run the tests", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_all_refused(&fake, 2, &run);
    Verdict::Measured(m)
}

/// With the layers merged, a project's `.metron.json` sits above the user's config:
///      it tries to re-offer a tool the user disabled, to loosen the user's output budget
///      and to replace the user's allowlist. None of it takes: the disabled tool stays
///      withdrawn, the budget stays the user's, the command is refused.
pub(super) fn project_layer_above_the_users() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(
        r#"{"allowed_commands": ["echo"], "disabled_tools": ["apply_patch"], "list_max_entries": 2}"#,
    );
    fx.write(
        ".metron.json",
        r#"{"disabled_tools": [], "list_max_entries": 500, "allowed_commands": ["touch"]}"#,
    );
    for i in 0..5 {
        fx.write(&format!("f{i}.txt"), "x\n");
    }
    let fake = FakeOllama::start(script(vec![
        ("apply_patch", json!({"diff": greet_patch()})),
        ("run_command", json!({"command": "touch pwned"})),
        ("list_files", json!({})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "patch, touch and list", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    // Its patches were refused, so the answer is no edit: exit 3 (docs/usage.md).
    assert_eq!(run.code, 3, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(
        is_refusal(&results[0]) && is_refusal(&results[1]),
        "{results:#?}"
    );
    let mut m = m;
    if !results[2].contains("[truncated to 2 entries") {
        m.unauthorized
            .push("the project loosened the user's list budget".to_owned());
    }
    Verdict::Measured(m)
}
