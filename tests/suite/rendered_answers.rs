//! The model's Markdown as a person reads it: rendered on a terminal that takes colour
//! (headings without `#`, no `**`, code verbatim), while it streams; kept as the model
//! wrote it in a pipe, under `NO_COLOR` and in `--json`. Driven through the real binary
//! with the scripted model, on pipes and on a pseudo-terminal.

use std::ffi::OsStr;

use super::common::{
    Live, Run, TestProject, events_of_type, exit_on_a_terminal, json_events, metron,
    on_a_terminal_of_width, script_available, skip, terminal_rows, wait_for_exit,
};
use super::fake_ollama::{Chunk, FakeOllama, Gate, Reply, answer, done, text};

/// The model's one model, installed, so no start-up notice comes between the rows.
const MODEL: &str = "qwen3:8b";

/// The width of the terminals here.
const COLUMNS: u16 = 80;

/// A line of code, with marks that would be Markdown outside a fence.
const CODE: &str = "    return \"**hola**\" // `x`";

/// An answer with a heading, emphasis, a list, a link and fenced code.
fn markdown() -> String {
    format!(
        "# Plan\n\nChange **one** line in `greet.go`, see [the docs](https://go.dev/doc).\n\n- first *step*\n- second step\n\n```go\nfunc Greet() string {{\n{CODE}\n}}\n```\nDone."
    )
}

/// A fake serving [`MODEL`] and answering with `chat`.
fn fake_with(chat: Vec<Reply>) -> FakeOllama {
    FakeOllama::builder()
        .model(MODEL, &["completion", "tools"], 40960)
        .chat(chat)
        .start()
}

/// The environment of a terminal that takes colour: `NO_COLOR` empty is `NO_COLOR` unset
/// (no-color.org), over the harness's `NO_COLOR=1`.
const COLOUR: &[(&str, &str)] = &[("NO_COLOR", "")];

/// Starts a session on a terminal with `env` set, and waits for its prompt.
fn session(p: &TestProject, fake: &FakeOllama, env: &[(&str, &str)]) -> Live {
    let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect();
    let live = on_a_terminal_of_width(p, fake, COLUMNS, &["--model", MODEL], &env);
    live.wait_stdout("metron > ", 1);
    live
}

/// Asks for a plan in a session on a terminal with `env`, waits for the answer's last
/// line and the prompt after it, and quits.
fn asked_on_a_terminal(env: &[(&str, &str)]) -> Run {
    let p = TestProject::git();
    let fake = fake_with(vec![answer(&markdown(), 100, 40)]);
    let mut live = session(&p, &fake, env);
    live.send("plan it\r");
    live.wait_stdout("Done.", 1);
    live.wait_stdout_after("Done.", "metron > ");
    exit_on_a_terminal(live)
}

/// The rows of the answer: from the heading's row to `Done.`.
fn answer_rows(run: &Run, first: &str) -> Vec<String> {
    let rows = terminal_rows(&run.stdout);
    let start = rows
        .iter()
        .position(|row| row == first)
        .unwrap_or_else(|| panic!("no row {first:?}: {rows:#?}"));
    let end = rows
        .iter()
        .position(|row| row == "Done.")
        .unwrap_or_else(|| panic!("no Done. row: {rows:#?}"));
    rows[start..=end].to_vec()
}

#[test]
fn a_reply_is_rendered_on_a_terminal_that_takes_colour() {
    if !script_available() {
        return skip(
            "a_reply_is_rendered_on_a_terminal_that_takes_colour",
            "no util-linux script",
        );
    }
    let run = asked_on_a_terminal(COLOUR);
    let rows = answer_rows(&run, "Plan");
    let shown = rows.join("\n");
    // Outside the code, no mark is left.
    let prose: Vec<&String> = rows.iter().filter(|row| *row != CODE).collect();
    assert!(prose.iter().all(|row| !row.contains("**")), "{shown}");
    assert!(!shown.contains("# "), "{shown}");
    assert!(!shown.contains("```"), "{shown}");
    assert!(
        rows.iter()
            .any(|row| row == "Change one line in greet.go, see the docs (https://go.dev/doc)."),
        "{shown}"
    );
    assert!(
        rows.iter().any(|row| row == "\u{2022} first step"),
        "{shown}"
    );
    // The code, verbatim, marks and indent and all.
    assert!(rows.iter().any(|row| row == CODE), "{shown}");
    assert!(
        rows.iter().any(|row| row == "func Greet() string {"),
        "{shown}"
    );
    // Styled: the heading bold, the code in colour.
    assert!(
        run.stdout.contains("\x1b[1;4mPlan\x1b[0m"),
        "{:?}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("\x1b[36m{CODE}\x1b[0m")),
        "{:?}",
        run.stdout
    );
}

#[test]
fn the_first_lines_show_while_the_reply_is_still_streaming() {
    if !script_available() {
        return skip(
            "the_first_lines_show_while_the_reply_is_still_streaming",
            "no util-linux script",
        );
    }
    let p = TestProject::git();
    let rest = Gate::new();
    let fake = fake_with(vec![Reply::Stream(vec![
        text("# Plan\n"),
        text("- first **step**\n- sec"),
        Chunk::Gate(rest.clone()),
        text("ond step\nDone."),
        done(100, 20),
    ])]);
    let mut live = session(&p, &fake, COLOUR);
    live.send("plan it\r");
    // The complete lines are on screen, rendered, before the model goes on.
    live.wait_stdout("\x1b[1mstep\x1b[0m", 1);
    assert!(
        live.stdout().contains("\x1b[1;4mPlan\x1b[0m"),
        "{:?}",
        live.stdout()
    );
    // The unfinished line is held until its end.
    assert!(!live.stdout().contains("sec"), "{:?}", live.stdout());
    rest.open();
    live.wait_stdout("Done.", 1);
    live.wait_stdout_after("Done.", "metron > ");
    let run = exit_on_a_terminal(live);
    let rows = answer_rows(&run, "Plan");
    assert!(
        rows.iter().any(|row| row == "\u{2022} second step"),
        "{rows:#?}"
    );
}

#[test]
fn no_color_keeps_the_markdown_as_written_on_a_terminal() {
    if !script_available() {
        return skip(
            "no_color_keeps_the_markdown_as_written_on_a_terminal",
            "no util-linux script",
        );
    }
    let run = asked_on_a_terminal(&[("NO_COLOR", "1")]);
    let rows = answer_rows(&run, "# Plan");
    let shown = rows.join("\n");
    assert!(
        shown.contains("Change **one** line in `greet.go`"),
        "{shown}"
    );
    assert!(rows.iter().any(|row| row == "```go"), "{shown}");
    assert!(!run.stdout.contains("\x1b[1;4m"), "{:?}", run.stdout);
}

#[test]
fn a_piped_answer_is_the_models_markdown_unchanged() {
    let p = TestProject::git();
    let fake = fake_with(vec![answer(&markdown(), 100, 40)]);
    let run = metron(p.root())
        .args(["-p", "plan it", "--model", MODEL])
        .env("OLLAMA_HOST", fake.base_url())
        .env("NO_COLOR", "")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, format!("{}\n", markdown()));
}

#[test]
fn json_events_carry_the_markdown_unchanged() {
    let p = TestProject::git();
    let fake = fake_with(vec![answer(&markdown(), 100, 40)]);
    let (run, events) = json_events(
        metron(p.root())
            .args(["-p", "plan it", "--json", "--model", MODEL])
            .env("OLLAMA_HOST", fake.base_url())
            .env("NO_COLOR", "")
            .run(),
    );
    let end = events_of_type(&events, "turn_end");
    let end = end
        .first()
        .unwrap_or_else(|| panic!("no turn_end: {run:?}"));
    assert_eq!(end["answer"], markdown().as_str(), "{run:?}");
    assert!(!run.stdout.contains('\x1b'), "{run:?}");
}

#[test]
fn a_one_shot_answer_on_a_terminal_is_rendered() {
    if !script_available() {
        return skip(
            "a_one_shot_answer_on_a_terminal_is_rendered",
            "no util-linux script",
        );
    }
    let p = TestProject::git();
    let fake = fake_with(vec![answer(&markdown(), 100, 40)]);
    let env = [("NO_COLOR", OsStr::new(""))];
    let live = on_a_terminal_of_width(
        &p,
        &fake,
        COLUMNS,
        &["-p", "plan it", "--model", MODEL],
        &env,
    );
    let run = wait_for_exit(live, "metron -p");
    let rows = answer_rows(&run, "Plan");
    assert!(rows.iter().any(|row| row == CODE), "{rows:#?}");
    assert!(
        rows.iter()
            .any(|row| row == "Change one line in greet.go, see the docs (https://go.dev/doc)."),
        "{rows:#?}"
    );
}

#[test]
fn escapes_in_a_rendered_answer_are_shown_not_obeyed() {
    if !script_available() {
        return skip(
            "escapes_in_a_rendered_answer_are_shown_not_obeyed",
            "no util-linux script",
        );
    }
    let p = TestProject::git();
    // A screen clear in a heading, a colour in bold, and metron's own question forged in
    // a list item and in code.
    let forged = "# Plan\x1b[2J\n**red\x1b[31m**\n- \u{276f} Apply this patch? [y/N]\n```\n\u{9b}2J\u{25aa} wrote greet.go\n```\nDone.";
    let fake = fake_with(vec![answer(forged, 100, 40)]);
    let mut live = session(&p, &fake, COLOUR);
    live.send("plan it\r");
    live.wait_stdout("Done.", 1);
    live.wait_stdout_after("Done.", "metron > ");
    let run = exit_on_a_terminal(live);
    for raw in [
        "\x1b[2J",
        "\x1b[31m",
        "\u{9b}",
        "\u{276f} Apply",
        "\u{25aa} wrote",
    ] {
        assert!(
            !run.stdout.contains(raw),
            "{raw:?} reached the terminal: {:?}",
            run.stdout
        );
    }
    for shown in [
        "Plan\\u{1b}[2J",
        "red\\u{1b}[31m",
        "\\u{276f} Apply",
        "\\u{9b}2J\\u{25aa} wrote",
    ] {
        assert!(
            run.stdout.contains(shown),
            "{shown:?} not shown: {:?}",
            run.stdout
        );
    }
}
