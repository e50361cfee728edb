//! Cases on find_symbol's resource bounds (issue 25, M6): a repository whose files nest
//! tens of thousands of levels deep once kept a lookup busy for minutes and gigabytes, and
//! Ctrl-C could not stop it, so the person killed metron and lost the session's `/undo`
//! stack. The model's lookup must answer within bounds and say what the bounds cut, and
//! Ctrl-C during a slow lookup must hand the session back with its undo stack intact.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::suite::common::{GREET_GO, Live, greet_patch};
use crate::suite::fake_ollama::{FakeOllama, answer, call};

cases! {
    "find_symbol in 4 MB of nested modules" => find_symbol_in_megabytes_of_nested_modules: a_lookup_in_deep_nesting_is_bounded_and_says_so;
    "Ctrl-C during a slow find_symbol in the REPL" => ctrl_c_during_a_slow_find_symbol_in_the_repl: ctrl_c_during_a_slow_lookup_keeps_the_session_and_undo;
    "Ctrl-C during a slow find_symbol under -p" => ctrl_c_during_a_slow_find_symbol_under_p: ctrl_c_during_a_slow_lookup_under_p_exits_130;
}

/// How soon after Ctrl-C the session must be back: a lookup checks its stop flag
/// between files, and tree-sitter calls back every 100 parse operations.
const PROMPTLY: Duration = Duration::from_secs(5);

/// `levels` nested Rust modules around `fn target() {}`.
fn nested_modules(levels: usize) -> String {
    let mut text = String::with_capacity(levels * 10 + 16);
    for _ in 0..levels {
        text.push_str("mod a {\n");
    }
    text.push_str("fn target() {}\n");
    for _ in 0..levels {
        text.push_str("}\n");
    }
    text
}

/// A file that takes seconds to parse even within the bounds (7 MB, under the 8 MiB
/// the index reads), so Ctrl-C lands while the lookup is still parsing it.
fn slow_file() -> String {
    nested_modules(700_000)
}

/// The tool result the model was sent for its `find_symbol` call, from any request.
fn find_symbol_result(fake: &FakeOllama) -> Option<String> {
    tool_results(fake)
        .into_iter()
        .find(|result| result.contains("target") || result.contains("interrupted"))
}

/// The model asks for a name defined in an ordinary file and at the bottom of 400,000
/// nested modules (4 MB): the answer comes within the time limit, lists the ordinary
/// definition, and names the nested file as cut (or the lookup as out of time), so the
/// model knows a definition may be missing there.
pub(super) fn a_lookup_in_deep_nesting_is_bounded_and_says_so() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("src/deep.rs", nested_modules(400_000));
    fx.write("src/plain.rs", "fn target() {}\n");
    let fake = FakeOllama::start(vec![
        call("find_symbol", json!({"symbol": "target"}), 100, 10),
        answer("Found it.", 150, 3),
    ]);
    let mut took = Duration::ZERO;
    let m = measure(&fx, || {
        let started = Instant::now();
        let run = fx.oneshot(&fake, "where is target defined?", &[]);
        took = started.elapsed();
        assert_eq!(run.code, 0, "{run:?}");
        (Expect::nothing(), Some(&fake))
    });
    let result = find_symbol_result(&fake).expect("the model's call reached metron");
    assert!(
        result.contains("target [function] -> src/plain.rs:1"),
        "{result}"
    );
    assert!(
        result.contains("[src/deep.rs is indexed only in part")
            || result.contains("[the lookup ran out of its"),
        "{result}"
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
    let mut m = m;
    m.notes.push(format!(
        "answered in {:.1} s: {}",
        took.as_secs_f64(),
        first_line(result.lines().last().unwrap_or_default())
    ));
    Verdict::Measured(m)
}

/// The model patches greet.go, then asks find_symbol for a name in a file that takes
/// seconds to parse; the person presses Ctrl-C while it runs. The turn ends within
/// [`PROMPTLY`], the model is told the lookup was interrupted, and `/undo` still undoes
/// the patch: the session, and its undo stack, survived.
pub(super) fn ctrl_c_during_a_slow_lookup_keeps_the_session_and_undo() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("deep.rs", slow_file());
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Patched.", 150, 2),
        call("find_symbol", json!({"symbol": "target"}), 200, 10),
        answer("Next answer.", 300, 3),
    ]);
    let mut stopped_in = Duration::MAX;
    let m = measure(&fx, || {
        let mut live = fx.repl(&fake, &["--yes"]);
        live.send("make Greet return hola\n");
        live.wait_stdout("Patched.", 1);
        live.send("where is target defined?\n");
        live.wait_stderr("[executing: find_symbol]");
        let pressed = Instant::now();
        live.interrupt();
        live.wait_stderr("[interrupted");
        stopped_in = pressed.elapsed();
        live.send("/undo\n");
        live.wait_stdout("undid the patch of call 1: wrote greet.go", 1);
        live.send("and now?\n");
        live.wait_stdout("Next answer.", 1);
        let run = live.finish();
        assert_eq!(run.code, 0, "{run:?}");
        (
            Expect::nothing().change("greet.go", Want::bytes(GREET_GO)),
            Some(&fake),
        )
    });
    assert!(
        stopped_in < PROMPTLY,
        "the turn ended {stopped_in:?} after Ctrl-C"
    );
    let result = find_symbol_result(&fake).expect("the lookup's result reached the model");
    assert!(
        result.contains("[interrupted by Ctrl-C:"),
        "the lookup was still running when Ctrl-C came: {result}"
    );
    let mut m = m;
    m.notes.push(format!(
        "the turn ended {:.2} s after Ctrl-C",
        stopped_in.as_secs_f64()
    ));
    Verdict::Measured(m)
}

/// `metron -p` with the same slow lookup: Ctrl-C ends the run with 130, as any other
/// interrupt does, within [`PROMPTLY`].
pub(super) fn ctrl_c_during_a_slow_lookup_under_p_exits_130() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("deep.rs", slow_file());
    let fake = FakeOllama::start(vec![
        call("find_symbol", json!({"symbol": "target"}), 100, 10),
        answer("Never asked.", 150, 3),
    ]);
    let mut stopped_in = Duration::MAX;
    let mut run = None;
    let m = measure(&fx, || {
        let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "where is target defined?"])
            .env("OLLAMA_HOST", fake.base_url());
        let live = Live::start(command, home);
        live.wait_stderr("[executing: find_symbol]");
        let pressed = Instant::now();
        live.interrupt();
        let finished = live.finish();
        stopped_in = pressed.elapsed();
        run = Some(finished);
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 130, "{run:?}");
    assert!(stopped_in < PROMPTLY, "exited {stopped_in:?} after Ctrl-C");
    assert_eq!(fake.chat_bodies().len(), 1, "{run:?}");
    let mut m = m;
    m.notes.push(format!(
        "exited 130 {:.2} s after Ctrl-C",
        stopped_in.as_secs_f64()
    ));
    Verdict::Measured(m)
}
