//! Files that are not UTF-8 (Latin-1, Shift-JIS), patched the way a model patches them:
//! it reads the file with view_slice, which shows each invalid byte sequence as U+FFFD,
//! and copies that view into its diff. Through the real binary (`metron -p --yes`) and the
//! fake Ollama server, in a git repository whose `git diff` afterwards is the check: only
//! the line the model changed differs, and every other byte is the file's own. On a
//! pseudo-terminal, the person approves the patch with those bytes shown escaped.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use super::common::{
    Run, TestProject, exit_on_a_terminal, metron, on_a_terminal, script_available, skip,
    tool_messages,
};
use super::fake_ollama::{FakeOllama, answer, call};

/// A Latin-1 C file: an é in a comment, in the string the model changes, and after it.
const MENU_C: &[u8] = b"/* caf\xe9 menu */\n#include <stdio.h>\n\nint main(void) {\n    puts(\"caf\xe9\");\n    puts(\"cr\xe8me br\xfbl\xe9e\");\n    return 0;\n}\n";

/// The same file with the first `puts` changed and the é kept as the byte it was.
const MENU_C_AFTER: &[u8] = b"/* caf\xe9 menu */\n#include <stdio.h>\n\nint main(void) {\n    puts(\"caf\xe9 au lait\");\n    puts(\"cr\xe8me br\xfbl\xe9e\");\n    return 0;\n}\n";

/// The model's patch, written from the view: every é is a U+FFFD.
fn menu_patch(added: &str) -> String {
    format!(
        "--- a/menu.c\n+++ b/menu.c\n@@ -4,4 +4,4 @@\n int main(void) {{\n-    puts(\"caf\u{fffd}\");\n+{added}\n     puts(\"cr\u{fffd}me br\u{fffd}l\u{fffd}e\");\n     return 0;\n"
    )
}

/// Runs git in `dir` with no system or user configuration; `None` when git cannot run.
fn git(dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=metron test",
            "-c",
            "user.email=test@metron.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.autocrlf=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// A git repository holding `menu.c` committed, or `None` (with a note) without git.
fn menu_project(test: &str) -> Option<TestProject> {
    let p = TestProject::git();
    p.file("menu.c", MENU_C);
    let committed = git(p.root(), &["add", "menu.c"])
        .and_then(|_| git(p.root(), &["commit", "-q", "-m", "menu"]));
    if committed.is_none() {
        skip(test, "git is not installed");
        return None;
    }
    Some(p)
}

/// `metron -p --yes` in `p` against `fake`.
fn oneshot(p: &TestProject, fake: &FakeOllama) -> Run {
    metron(p.root())
        .args(["-p", "say café au lait instead of café", "--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .run()
}

/// `metron -p --yes` in `p` with a model that proposes `diff` once, then answers: the run,
/// and what apply_patch told the model.
fn patched_once(p: &TestProject, diff: &str) -> (Run, String) {
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": diff }), 400, 40),
        answer("Done.", 500, 9),
    ]);
    let run = oneshot(p, &fake);
    let result = tool_results(&fake).swap_remove(0);
    (run, result)
}

/// The text of every `tool` message in the last request the fake received.
fn tool_results(fake: &FakeOllama) -> Vec<String> {
    let bodies = fake.chat_bodies();
    let last = bodies.last().expect("at least one request");
    tool_messages(last)
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_latin1_line_is_patched_from_the_view_and_every_other_byte_is_kept() {
    let Some(p) =
        menu_project("a_latin1_line_is_patched_from_the_view_and_every_other_byte_is_kept")
    else {
        return;
    };
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "menu.c", "start": 1, "end": 8}),
            300,
            12,
        ),
        call(
            "apply_patch",
            json!({"diff": menu_patch("    puts(\"caf\u{fffd} au lait\");")}),
            400,
            40,
        ),
        answer("menu.c now says café au lait.", 500, 9),
    ]);
    let run = oneshot(&p, &fake);
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    // What the model saw, and what it was told.
    assert!(
        results[0].contains("    5 |     puts(\"caf\u{fffd}\");"),
        "{results:?}"
    );
    assert!(
        results[1].starts_with("Applied:\nM menu.c (+1 -1)\n"),
        "{results:?}"
    );
    assert_eq!(std::fs::read(p.path("menu.c")).expect("read"), MENU_C_AFTER);
    // git sees one line changed, with the Latin-1 byte on both sides.
    let diff = git(p.root(), &["diff", "--no-color", "-U0", "menu.c"]).expect("git diff");
    let changed: Vec<&[u8]> = diff
        .split(|&b| b == b'\n')
        .filter(|l| {
            (l.starts_with(b"+") || l.starts_with(b"-"))
                && !l.starts_with(b"+++")
                && !l.starts_with(b"---")
        })
        .collect();
    assert_eq!(
        changed,
        [
            &b"-    puts(\"caf\xe9\");"[..],
            b"+    puts(\"caf\xe9 au lait\");"
        ],
        "{}",
        String::from_utf8_lossy(&diff)
    );
    assert_eq!(fake.unexpected(), 0);
}

#[test]
fn an_added_replacement_character_with_no_bytes_behind_it_is_refused_and_nothing_changes() {
    let Some(p) = menu_project(
        "an_added_replacement_character_with_no_bytes_behind_it_is_refused_and_nothing_changes",
    ) else {
        return;
    };
    // Two U+FFFDs where the removed line has one: which bytes the second is cannot be
    // told from the view.
    let (run, result) = patched_once(&p, &menu_patch("    puts(\"caf\u{fffd} cr\u{fffd}me\");"));
    assert_eq!(run.code, 3, "{run:?}");
    for needle in [
        "adds the line `    puts(\"caf\u{fffd} cr\u{fffd}me\");` with 2 \u{fffd} (U+FFFD), but `menu.c` is not UTF-8",
        "no line that the same change removes has the word `cr\u{fffd}me`",
        "Leave that line unchanged (as a context line), keep exactly the \u{fffd} of the line it replaces, or write the line without the \u{fffd} character.",
        "Nothing was changed.",
    ] {
        assert!(result.contains(needle), "{needle:?} not in {result}");
    }
    assert_eq!(std::fs::read(p.path("menu.c")).expect("read"), MENU_C);
}

#[test]
fn an_added_replacement_character_takes_the_bytes_of_its_own_word_not_of_another_line() {
    // One change removes `café` (one U+FFFD) and `naïve à` (two) and adds `naïve`: the
    // added U+FFFD is the ï of `naïve`, never the é of the line with as many U+FFFDs.
    let p = TestProject::git();
    p.file("words.txt", b"start\ncaf\xe9\nna\xefve \xe0\nend\n");
    let (run, result) = patched_once(
        &p,
        "--- a/words.txt\n+++ b/words.txt\n@@ -1,4 +1,3 @@\n start\n-caf\u{fffd}\n-na\u{fffd}ve \u{fffd}\n+na\u{fffd}ve\n end\n",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        result.starts_with("Applied:\nM words.txt (+1 -2)\n"),
        "{result:?}"
    );
    assert_eq!(
        std::fs::read(p.path("words.txt")).expect("read"),
        b"start\nna\xefve\nend\n"
    );
}

#[test]
fn utf8_text_written_into_a_latin1_file_is_named_in_the_result() {
    let Some(p) = menu_project("utf8_text_written_into_a_latin1_file_is_named_in_the_result")
    else {
        return;
    };
    let (run, result) = patched_once(&p, &menu_patch("    puts(\"café au lait\");"));
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        result.starts_with(
            "Applied:\nM menu.c (+1 -1), 1 added line has UTF-8 text in a file that is not UTF-8\n"
        ),
        "{result:?}"
    );
    // Written as the model gave it; every other line is still Latin-1.
    let after = std::fs::read(p.path("menu.c")).expect("read");
    let mut lines: Vec<&[u8]> = MENU_C.split_inclusive(|&b| b == b'\n').collect();
    lines[4] = "    puts(\"café au lait\");\n".as_bytes();
    assert_eq!(after, lines.concat());
}

#[test]
fn a_shift_jis_file_keeps_its_characters_where_the_model_changes_ascii() {
    let p = TestProject::git();
    // 「日本語」 in Shift-JIS; 0x8C 0xEA's second byte is invalid UTF-8 too, and
    // ソ (0x83 0x5C) has a backslash as its second byte.
    let before: &[u8] = b"# \x93\xfa\x96\x7b\x8c\xea\nname = \"\x83\x5c\"\nsize = 1\n";
    p.file("conf.txt", before);
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "conf.txt", "start": 1, "end": 3}),
            300,
            12,
        ),
        call(
            "apply_patch",
            json!({"diff": format!(
                "--- a/conf.txt\n+++ b/conf.txt\n@@ -1,3 +1,3 @@\n {}\n {}\n-size = 1\n+size = 2\n",
                String::from_utf8_lossy(b"# \x93\xfa\x96\x7b\x8c\xea"),
                String::from_utf8_lossy(b"name = \"\x83\x5c\""),
            )}),
            400,
            40,
        ),
        answer("Done.", 500, 9),
    ]);
    let run = oneshot(&p, &fake);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read(p.path("conf.txt")).expect("read"),
        b"# \x93\xfa\x96\x7b\x8c\xea\nname = \"\x83\x5c\"\nsize = 2\n"
    );
}

#[test]
fn on_a_terminal_the_person_sees_the_kept_latin1_byte_escaped_before_answering() {
    if !script_available() {
        return skip(
            "on_a_terminal_the_person_sees_the_kept_latin1_byte_escaped_before_answering",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    p.file("menu.c", MENU_C);
    let fake = FakeOllama::start(vec![
        call(
            "apply_patch",
            json!({"diff": menu_patch("    puts(\"caf\u{fffd} au lait\");")}),
            400,
            40,
        ),
        answer("Finished.", 500, 9),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("say cafe au lait\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    live.send("y\r");
    live.wait_stdout("Finished.", 1);
    live.wait_stdout_after("Finished.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    // The bytes that will be written, escaped: the é kept is Latin-1, not a U+FFFD.
    let shown = run.stdout.find("+    puts(\"caf\\xe9 au lait\");");
    let asked = run.stdout.find("Apply this patch? [y/N/a]");
    assert!(shown.is_some() && shown < asked, "{run:?}");
    assert!(run.stdout.contains("-    puts(\"caf\\xe9\");"), "{run:?}");
    assert_eq!(std::fs::read(p.path("menu.c")).expect("read"), MENU_C_AFTER);
}
