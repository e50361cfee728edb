//! Cases on programs the repository configures (issue 25, M1 and M2): an allowed program
//! whose configuration in the project makes it run something the repository chose. Each
//! spelling and each key is a case of its own. Most run `metron -p` without `--yes`
//! (nobody to ask): the call is refused, and the warning must reach stderr. The git cases
//! that git itself can exercise run the real `git` under `--yes` with a repository config
//! whose program would leave a file in the project: the warning is on stderr, git ran,
//! and the file is not there, because metron reset the key for the run; one case shows
//! the reset reaching the git that an allowed `go list` starts itself.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::*;
use crate::suite::common::{Live, rejoined, script_available};
use crate::suite::fake_ollama::{FakeOllama, answer, call};

cases! {
    "repository-configured cargo at the question" => cargo_configured_by_the_repository: a_repository_configured_cargo_at_the_question;
    "repository-configured make and npm" => make_and_npm_configured_by_the_repository: repository_configured_make_and_npm;
    "git: core.fsmonitor under git status" => git_fsmonitor_is_reset_for_the_run: git_core_fsmonitor;
    "git: diff.external under git diff" => git_diff_external_is_reset_for_the_run: git_diff_external;
    "git: a filter driver's clean under git diff" => git_filter_clean_is_reset_for_the_run: git_filter_driver;
    "git: core.sshCommand under git ls-remote" => git_ssh_command_is_reset_for_the_run: git_core_ssh_command;
    "git: core.hooksPath" => git_hooks_path_is_warned: git_core_hooks_path;
    "git: gpg.program with commit.gpgsign under git log --show-signature" => git_gpg_program_is_reset_for_the_run: git_gpg_program;
    "git: core.pager" => git_core_pager_is_warned: git_core_pager;
    "git: an alias that runs a shell" => git_shell_alias_is_warned: git_shell_alias;
    "git: spellings of the section and key" => git_spellings_are_warned: git_spellings;
    "git: a separate git dir (.git is a file)" => git_separate_dir_config_is_reset: git_separate_git_dir;
    "git: a linked worktree's common config" => git_worktree_common_config_is_reset: git_linked_worktree;
    "git: core.fsmonitor under go list (go runs git status)" => git_fsmonitor_is_reset_for_go_too: go_runs_git;
    "cargo: alias . fmt" => cargo_alias_with_spaced_dots: cargo_alias_spaced_dots;
    "cargo: \"alias\".fmt" => cargo_alias_with_a_quoted_segment: cargo_alias_double_quoted;
    "cargo: 'alias'.fmt" => cargo_alias_with_a_literal_segment: cargo_alias_single_quoted;
    "cargo: [ \"alias\" ] and [[alias]]" => cargo_alias_quoted_headers: cargo_alias_headers;
    "cargo: an escaped alias key" => cargo_alias_escaped_key: cargo_alias_escaped;
    "make: define SHELL" => make_define_shell: make_define;
    "make: override define and export" => make_prefixed_define_and_export: make_prefixes;
    "make: a computed SHELL" => make_computed_shell_name: make_computed_name;
    "make: a target-specific SHELL" => make_target_specific_shell: make_target_specific;
    "yarn: plugins in .yarnrc.yml" => yarn_plugins_are_warned: yarn_plugins;
    "yarn: a quoted yarnPath" => yarn_quoted_yarn_path: yarn_path_quoted;
    "gradle: org.gradle.java.home" => gradle_java_home_is_warned: gradle_java_home;
    "gradle: the wrapper" => gradle_wrapper_is_refused_or_warned: gradle_wrapper;
    "git: a backslash before CRLF continues the value" => git_crlf_continuation_is_read_as_git_reads_it: git_crlf_continuation;
    "git: a line metron cannot read warns" => git_unreadable_line_warns: git_unreadable_line;
    "git: a gitdir with a trailing space" => git_gitdir_trailing_space_is_reset: git_gitdir_trailing_space;
    "git: a gitdir with a newline inside" => git_gitdir_with_newline_is_reset: git_gitdir_newline;
    "git: a .git file git would not follow" => git_bad_gitfile_warns: git_bad_gitfile;
    "git: an absorbed submodule's config" => git_submodule_config_is_reset: git_absorbed_submodule;
    "git: a nested submodule's config" => git_nested_submodule_config_is_reset: git_nested_submodule;
    "git: a checked-out submodule's .git directory" => git_gitmodules_path_config_is_reset: git_gitmodules_path;
    "git: the project root is itself a git directory" => git_root_git_dir_config_is_reset: git_root_is_git_dir;
    "git: tar.tgz.command under git archive" => git_tar_command_is_reset: git_tar_tgz_command;
    "git: a tar format the repository invents" => git_tar_custom_format_is_warned: git_tar_custom_format;
    "git: imap.tunnel" => git_imap_tunnel_is_warned: git_imap_tunnel;
    "git: interactive.diffFilter" => git_interactive_diff_filter_is_warned: git_interactive_diff_filter;
    "git: gc.recentObjectsHook" => git_gc_recent_objects_hook_is_warned: git_gc_recent_objects_hook;
    "git: a sendemail identity's sendmailCmd" => git_sendemail_identity_is_warned: git_sendemail_identity;
    "git: instaweb.httpd" => git_instaweb_httpd_is_warned: git_instaweb_httpd;
    "git: guitool.<name>.cmd" => git_guitool_cmd_is_warned: git_guitool_cmd;
    "npm: a key computed from the environment" => npm_computed_key_is_warned: npm_computed_key;
    "yarn: a .yarnrc key computed from the environment" => yarn_computed_key_is_warned: yarn_computed_key;
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Runs `command` as the model's one call in `metron -p` without `--yes`, the user allowing
/// `allowed` (their config's JSON), with fake programs `fakes` first on PATH: the call must
/// be refused, nothing may change, and every one of `warnings` must be on stderr.
fn refused_with_warning(
    fx: &Fixture,
    allowed: &str,
    fakes: &[&str],
    command: &str,
    warnings: &[&str],
) -> Verdict {
    fx.user_config(allowed);
    let mut path = std::env::var("PATH").unwrap_or_default();
    for name in fakes {
        path = fake_program(fx, name);
    }
    let fake = FakeOllama::start(script(vec![("run_command", json!({ "command": command }))]));
    let mut run = None;
    let m = measure(fx, || {
        run = Some(
            metron(&fx.root())
                .env("HOME", fx.home())
                .env("METRON_CONFIG_DIR", fx.home())
                .env("OLLAMA_HOST", fake.base_url())
                .env("PATH", &path)
                .args(["-p", "run it"])
                .run(),
        );
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_all_refused(&fake, 1, &run);
    for warning in warnings {
        assert!(
            run.stderr.contains(warning),
            "no {warning:?} warning: {run:?}"
        );
    }
    Verdict::Measured(m)
}

/// Runs `git` in the fixture's project with a fixed identity and no system config.
fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?} in {}", dir.display());
}

/// A script the repository ships: it leaves `pwned-<what>` in the project when it runs.
fn planted(fx: &Fixture, what: &str) -> String {
    let rel = format!("tools/{what}.sh");
    fx.write(
        &rel,
        format!(
            "#!/bin/sh\ntouch \"{}/pwned-{what}\"\n",
            fx.root().display()
        ),
    );
    let path = fx.root().join(&rel);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

/// Appends `text` to the git config at `config`.
fn append(config: &Path, text: &str) {
    let mut old = std::fs::read_to_string(config).expect("read the git config");
    old.push_str(text);
    std::fs::write(config, old).expect("write the git config");
}

/// A git project with greet.go committed and then edited, so `git status` and `git diff`
/// have a modified tracked file to look at.
fn committed_and_edited() -> Fixture {
    let fx = Fixture::new(true);
    git(&fx.root(), &["add", "greet.go"]);
    git(&fx.root(), &["commit", "-qm", "greet"]);
    fx.write("greet.go", GREET_HOLA);
    fx
}

/// Runs the real `git` as the model's call under `--yes`, the user allowing `allowed`:
/// git must have run (an exit status came back), `warning` must be on stderr, and nothing
/// may change (the planted program, had it run, leaves a file in the project).
fn git_under_yes(fx: &Fixture, allowed: &str, command: &str, warning: &str) -> Verdict {
    fx.user_config(&format!(r#"{{"allowed_commands": ["{allowed}"]}}"#));
    let fake = FakeOllama::start(script(vec![("run_command", json!({ "command": command }))]));
    let mut run = None;
    let m = measure(fx, || {
        run = Some(fx.oneshot(&fake, "look at the repository", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 1, "{results:#?}\n{run:?}");
    assert!(
        results[0].contains("exit status"),
        "git did not run: {}\n{run:?}",
        results[0]
    );
    assert!(run.stderr.contains(warning), "no {warning:?}: {run:?}");
    let mut m = m;
    m.notes.push(first_line(&results[0]));
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// The cases that were in `commands`
// ---------------------------------------------------------------------------------------

/// An allowed `cargo` whose toolchain the repository points at a directory inside
///      the project: the question on a terminal warns before the person answers (no).
pub(super) fn a_repository_configured_cargo_at_the_question() -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["cargo"]}"#);
    let path = fake_program(&fx, "cargo");
    fx.write(
        "rust-toolchain.toml",
        format!("[toolchain]\npath = \"{}/tools\"\n", fx.root().display()),
    );
    fx.write("tools/bin/cargo", "#!/bin/sh\ntouch pwned\n");
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "cargo build"}), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut shown = String::new();
    let m = measure(&fx, || {
        let (mut command, home) = fx.command("script");
        metron_in_script(&mut command, &[]);
        command
            .env("OLLAMA_HOST", fake.base_url())
            .env("PATH", &path);
        let mut live = Live::start(command, home);
        live.wait_stdout("metron > ", 1);
        live.send("build it\r");
        live.wait_stdout("Run this command? [y/N", 1);
        // The warning is wrapped to the terminal: read back whole.
        shown = rejoined(&live.stdout().replace('\r', "")).join("\n");
        decline_and_exit(live);
        (Expect::nothing().typed(&["build it", "/exit"]), Some(&fake))
    });
    assert!(
        shown.contains("this repository configures cargo: rust-toolchain.toml line 2 sets `path`"),
        "no warning at the question:\n{shown}"
    );
    Verdict::Measured(m)
}

/// `make` with a Makefile that sets `SHELL`, and `npm` with an `.npmrc` that sets
///      `script-shell`, in `-p` without `--yes` (nobody to ask): refused, and the
///      warning reaches stderr.
pub(super) fn repository_configured_make_and_npm() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["make", "npm"]}"#);
    let path = fake_program(&fx, "make");
    fake_program(&fx, "npm");
    fx.write("Makefile", "SHELL := ./tools/sh\nall:\n\t@true\n");
    fx.write(".npmrc", "script-shell=./tools/sh\n");
    let fake = FakeOllama::start(script(vec![
        ("run_command", json!({"command": "make all"})),
        ("run_command", json!({"command": "npm test"})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "build and test"])
            .env("OLLAMA_HOST", fake.base_url())
            .env("PATH", &path);
        run = Some(Live::start(command, home).finish());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_all_refused(&fake, 2, &run);
    for warned in ["configures make: Makefile", "configures npm: .npmrc"] {
        assert!(
            run.stderr.contains(warned),
            "no {warned:?} warning: {run:?}"
        );
    }
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// M1: git's own configuration
// ---------------------------------------------------------------------------------------

/// `.git/config` sets `core.fsmonitor` to a script in the repository; an allowed
///      `git status` under `--yes` runs without it.
pub(super) fn git_core_fsmonitor() -> Verdict {
    let fx = committed_and_edited();
    let evil = planted(&fx, "fsmonitor");
    append(
        &fx.root().join(".git/config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        "sets `core.fsmonitor`; metron resets it for this run",
    )
}

/// `.git/config` sets `diff.external`; an allowed `git diff` under `--yes` fails
///      instead of running it.
pub(super) fn git_diff_external() -> Verdict {
    let fx = committed_and_edited();
    let evil = planted(&fx, "external");
    append(
        &fx.root().join(".git/config"),
        &format!("[diff]\n\texternal = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git diff",
        "git diff",
        "sets `diff.external`; metron resets it for this run",
    )
}

/// `.gitattributes` selects a filter driver whose `clean` command `.git/config`
///      names; `git diff` reads the edited file through it, without it.
pub(super) fn git_filter_driver() -> Verdict {
    let fx = committed_and_edited();
    let evil = planted(&fx, "clean");
    fx.write(".gitattributes", "*.go filter=tidy\n");
    append(
        &fx.root().join(".git/config"),
        &format!("[filter \"tidy\"]\n\tclean = {evil}\n\tsmudge = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git diff",
        "git diff",
        "sets `filter.tidy.clean`; metron resets it for this run",
    )
}

/// `.git/config` sets `core.sshCommand`; an allowed `git ls-remote` of an ssh URL
///      under `--yes` starts plain `ssh` (and fails without a network), not the script.
pub(super) fn git_core_ssh_command() -> Verdict {
    let fx = Fixture::new(true);
    let evil = planted(&fx, "ssh");
    append(
        &fx.root().join(".git/config"),
        &format!("[core]\n\tsshCommand = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git ls-remote",
        "git ls-remote ssh://example.invalid/greet.git",
        "sets `core.sshcommand`; metron resets it for this run",
    )
}

/// `.git/config` points `core.hooksPath` at a directory of the repository's hooks.
pub(super) fn git_core_hooks_path() -> Verdict {
    let fx = Fixture::new(true);
    planted(&fx, "pre-commit");
    append(
        &fx.root().join(".git/config"),
        "[core]\n\thooksPath = tools\n",
    );
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["git commit"]}"#,
        &[],
        "git commit -m x",
        &["sets `core.hookspath`; metron resets it for this run (`core.hookspath=/dev/null`"],
    )
}

/// `.git/config` turns on commit signing and names the repository's `gpg.program`;
///      HEAD is a signed commit, so an allowed `git log --show-signature` under `--yes`
///      would run it to verify the signature, and runs git's own `gpg` instead.
pub(super) fn git_gpg_program() -> Verdict {
    let fx = Fixture::new(true);
    signed_head(&fx.root());
    let evil = planted(&fx, "gpg");
    append(
        &fx.root().join(".git/config"),
        &format!("[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git log",
        "git log --show-signature -1",
        "sets `gpg.program`; metron resets it for this run (`gpg.program=gpg`",
    )
}

/// Makes HEAD of the repository at `dir` a commit of greet.go carrying a (bogus) PGP
/// signature, which `git log --show-signature` hands to `gpg.program` to verify.
fn signed_head(dir: &Path) {
    use std::io::Write;
    git(dir, &["add", "greet.go"]);
    let output = |args: &[&str], input: Option<&str>| {
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.unwrap_or_default().as_bytes())
            .expect("write to git");
        drop(stdin);
        let out = child.wait_with_output().expect("git");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let tree = output(&["write-tree"], None);
    let commit = format!(
        "tree {tree}\nauthor t <t@example.invalid> 0 +0000\ncommitter t <t@example.invalid> 0 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n c2lnbmVk\n -----END PGP SIGNATURE-----\n\ngreet\n"
    );
    let id = output(
        &["hash-object", "-t", "commit", "-w", "--stdin"],
        Some(&commit),
    );
    git(dir, &["update-ref", "HEAD", &id]);
}

/// `.git/config` sets `core.pager` (a pager only starts on a terminal, and metron
///      sets GIT_PAGER=cat, which git prefers; the warning says so).
pub(super) fn git_core_pager() -> Verdict {
    let fx = Fixture::new(true);
    let evil = planted(&fx, "pager");
    append(
        &fx.root().join(".git/config"),
        &format!("[core]\n\tpager = {evil}\n"),
    );
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["git log"]}"#,
        &[],
        "git log",
        &["sets `core.pager`; commands run with GIT_PAGER=cat"],
    )
}

/// `.git/config` defines an alias that runs a shell command.
pub(super) fn git_shell_alias() -> Verdict {
    let fx = Fixture::new(true);
    let evil = planted(&fx, "alias");
    append(
        &fx.root().join(".git/config"),
        &format!("[alias]\n\tst = !{evil}\n"),
    );
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["git st"]}"#,
        &[],
        "git st",
        &["sets `alias.st`; approving runs a program the repository chose"],
    )
}

/// The same keys spelled as git also reads them: upper case, the old
///      `[section.sub]` header, a key on the header's line, a continued value.
pub(super) fn git_spellings() -> Verdict {
    let fx = Fixture::new(true);
    let evil = planted(&fx, "spelled");
    append(
        &fx.root().join(".git/config"),
        &format!(
            "[CORE] FsMonitor = {evil}\n[Diff]\n  EXTERNAL\t=\\\n {evil}\n[filter.Tidy]\n\tprocess = {evil} ; c\n"
        ),
    );
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["git status"]}"#,
        &[],
        "git status",
        &[
            "sets `core.fsmonitor`",
            "sets `diff.external`",
            "sets `filter.tidy.process`",
        ],
    )
}

/// `.git` is a file (`git init --separate-git-dir`) naming a git directory outside
///      the project whose config sets `core.fsmonitor`: found there and reset.
pub(super) fn git_separate_git_dir() -> Verdict {
    let fx = Fixture::new(false);
    let meta = fx.base().join("meta.git");
    git(
        &fx.root(),
        &[
            "init",
            "-q",
            "--separate-git-dir",
            &meta.display().to_string(),
        ],
    );
    git(&fx.root(), &["add", "greet.go"]);
    git(&fx.root(), &["commit", "-qm", "greet"]);
    fx.write("greet.go", GREET_HOLA);
    let evil = planted(&fx, "fsmonitor");
    append(
        &meta.join("config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        "meta.git/config line",
    )
}

/// The project is a linked worktree (`git worktree add`): its `.git` file names a
///      directory whose `commondir` leads to the main repository, whose config sets
///      `core.fsmonitor`: found there and reset.
pub(super) fn git_linked_worktree() -> Verdict {
    let fx = Fixture::new(false);
    let main = fx.base().join("main");
    std::fs::create_dir_all(&main).expect("mkdir main");
    git(&main, &["init", "-q"]);
    std::fs::write(main.join("greet.go"), GREET_GO).expect("write");
    git(&main, &["add", "greet.go"]);
    git(&main, &["commit", "-qm", "greet"]);
    std::fs::remove_dir_all(fx.root()).expect("rm proj");
    git(
        &main,
        &["worktree", "add", "-q", &fx.root().display().to_string()],
    );
    fx.write("greet.go", GREET_HOLA);
    let evil = planted(&fx, "fsmonitor");
    append(
        &main.join(".git/config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        "main/.git/worktrees/proj/../../config line",
    )
}

/// `.git/config` sets `core.fsmonitor`, and an allowed `go list` under `--yes` runs
///      `git status` itself to stamp the module's version: the reset reaches that git.
pub(super) fn go_runs_git() -> Verdict {
    if std::process::Command::new("go")
        .arg("version")
        .output()
        .is_err()
    {
        return Verdict::Skipped("`go` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    fx.write("go.mod", "module example.invalid/greet\n\ngo 1.19\n");
    fx.write("cmd/hello/main.go", "package main\n\nfunc main() {}\n");
    git(&fx.root(), &["add", "."]);
    git(&fx.root(), &["commit", "-qm", "greet"]);
    let evil = planted(&fx, "fsmonitor");
    append(
        &fx.root().join(".git/config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
    // go needs a build cache it can write: one outside the measured tree, granted by the
    // user's own config.
    let cache = tempfile::Builder::new()
        .prefix("metron-gocache-")
        .tempdir()
        .expect("temp dir");
    fx.user_config(
        &json!({
            "allowed_commands": ["go list"],
            "command_env_passthrough": ["GOCACHE"],
            "command_writable_paths": [cache.path()],
        })
        .to_string(),
    );
    let fake = FakeOllama::start(script(vec![(
        "run_command",
        json!({ "command": "go list ./cmd/hello" }),
    )]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(
            metron(&fx.root())
                .env("HOME", fx.home())
                .env("METRON_CONFIG_DIR", fx.home())
                .env("OLLAMA_HOST", fake.base_url())
                .env("GOCACHE", cache.path())
                .args(["-p", "list the package", "--yes"])
                .run(),
        );
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 1, "{results:#?}\n{run:?}");
    assert!(
        results[0].contains("exit status 0"),
        "go list did not run: {}\n{run:?}",
        results[0]
    );
    let mut m = m;
    m.notes.push(first_line(&results[0]));
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// M2: spellings the scanner missed, and the families it lacked
// ---------------------------------------------------------------------------------------

/// A cargo alias key for `cargo fmt` written as `line` in `.cargo/config.toml`.
fn cargo_alias(line: &str, what: &str) -> Verdict {
    let fx = Fixture::new(true);
    fx.write(".cargo/config.toml", format!("{line}\n"));
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["cargo fmt"]}"#,
        &["cargo"],
        "cargo fmt",
        &[&format!("configures cargo: .cargo/config.toml line {what}")],
    )
}

/// `alias . fmt = "run"`: whitespace around the dot.
pub(super) fn cargo_alias_spaced_dots() -> Verdict {
    cargo_alias("alias . fmt = \"run\"", "1 sets `[alias]`")
}

/// `"alias".fmt = "run"`: a quoted first segment.
pub(super) fn cargo_alias_double_quoted() -> Verdict {
    cargo_alias("\"alias\".fmt = \"run\"", "1 sets `[alias]`")
}

/// `'alias'.fmt = "run"`: a literal-string first segment.
pub(super) fn cargo_alias_single_quoted() -> Verdict {
    cargo_alias("'alias'.fmt = \"run\"", "1 sets `[alias]`")
}

/// `[ "alias" ]` as a header, then `fmt = "run"`, and an array-of-tables header.
pub(super) fn cargo_alias_headers() -> Verdict {
    cargo_alias(
        "[build]\njobs = 2\n[ \"alias\" ]\nfmt = \"run\"\n[[ 'alias' ]]",
        "3 sets `[alias]`",
    )
}

/// `"\u0061lias".fmt = "run"`: the key spelled with an escape, decoded as TOML does.
pub(super) fn cargo_alias_escaped() -> Verdict {
    cargo_alias(
        "\"\\u0061lias\".\"fm\\u0074\" = \"run\"",
        "1 sets `[alias]`",
    )
}

/// A Makefile written as `text` for an allowed `make all`.
fn makefile(text: &str, warning: &str) -> Verdict {
    let fx = Fixture::new(true);
    fx.write("Makefile", text);
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["make all"]}"#,
        &["make"],
        "make all",
        &[warning],
    )
}

/// `define SHELL` ... `endef`.
pub(super) fn make_define() -> Verdict {
    makefile(
        "define SHELL\n./tools/sh\nendef\nall:\n\t@true\n",
        "configures make: Makefile line 1 sets `SHELL`",
    )
}

/// `override define SHELL =` and `export SHELL := ...` after unrelated lines.
pub(super) fn make_prefixes() -> Verdict {
    makefile(
        "CC = cc\noverride define SHELL =\n./tools/sh\nendef\nexport SHELL := ./tools/sh\nall:\n\t@true\n",
        "configures make: Makefile line 2 sets `SHELL`",
    )
}

/// `X := SH`, `Y := ELL`, `$(X)$(Y) := ./evilsh`: a name computed when make reads it.
pub(super) fn make_computed_name() -> Verdict {
    makefile(
        "X := SH\nY := ELL\n$(X)$(Y) := ./evilsh\nall:\n\t@true\n",
        "Makefile line 3 sets a variable whose name is computed",
    )
}

/// `all: SHELL = ./tools/sh`, a target-specific assignment, continued over a
///      backslash-newline.
pub(super) fn make_target_specific() -> Verdict {
    makefile(
        "all: SHELL \\\n  = ./tools/sh\nall:\n\t@true\n",
        "configures make: Makefile line 1 sets `SHELL`",
    )
}

/// `.yarnrc.yml` with `plugins:` (code Yarn loads into itself).
pub(super) fn yarn_plugins() -> Verdict {
    let fx = Fixture::new(true);
    fx.write(
        ".yarnrc.yml",
        "nodeLinker: node-modules\nplugins:\n  - path: .yarn/plugins/p.cjs\n",
    );
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["yarn install"]}"#,
        &["yarn"],
        "yarn install",
        &["configures npm: .yarnrc.yml line 2 sets `plugins`"],
    )
}

/// `.yarnrc.yml` with `"yarnPath": ...`, the key quoted.
pub(super) fn yarn_path_quoted() -> Verdict {
    let fx = Fixture::new(true);
    fx.write(".yarnrc.yml", "\"yarnPath\" : .yarn/releases/y.cjs\n");
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["yarn install"]}"#,
        &["yarn"],
        "yarn install",
        &["configures npm: .yarnrc.yml line 1 sets `yarnPath`"],
    )
}

/// `gradle.properties` points `org.gradle.java.home` at a JDK in the repository.
pub(super) fn gradle_java_home() -> Verdict {
    let fx = Fixture::new(true);
    fx.write(
        "gradle.properties",
        "org.gradle.jvmargs=-Xmx2g\norg.gradle.java.home = tools/jdk\n",
    );
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["gradle build"]}"#,
        &["gradle"],
        "gradle build",
        &["configures gradle: gradle.properties line 2 sets `org.gradle.java.home`"],
    )
}

/// `gradlew` is a program inside the project: allowed by name it is not found (PATH
///      skips the project), `./gradlew` is refused unless the user lists it in
///      `allowed_project_programs`, and then the question names the wrapper's
///      `distributionUrl` and the project's JVM.
pub(super) fn gradle_wrapper() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("gradlew", "#!/bin/sh\ntouch pwned-gradlew\n");
    std::fs::set_permissions(
        fx.root().join("gradlew"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    fx.write(
        "gradle/wrapper/gradle-wrapper.properties",
        "distributionUrl=https\\://example.invalid/gradle.zip\n",
    );
    fx.write("gradle.properties", "org.gradle.java.home=tools/jdk\n");
    fx.user_config(r#"{"allowed_commands": ["gradlew build"]}"#);
    let fake = FakeOllama::start(script(vec![
        ("run_command", json!({"command": "gradlew build"})),
        ("run_command", json!({"command": "./gradlew build"})),
    ]));
    // The project's root is even first on PATH: it is skipped.
    let path = format!(
        "{}:{}",
        fx.root().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(
            metron(&fx.root())
                .env("HOME", fx.home())
                .env("METRON_CONFIG_DIR", fx.home())
                .env("OLLAMA_HOST", fake.base_url())
                .env("PATH", &path)
                .args(["-p", "build it", "--yes"])
                .run(),
        );
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 2, "{results:#?}\n{run:?}");
    assert!(
        results[0].contains("`gradlew` was found only inside the project"),
        "{}",
        results[0]
    );
    assert!(is_refusal(&results[1]), "{}", results[1]);
    let mut m = m;
    m.notes.extend(results.iter().map(|r| first_line(r)));
    let listed = refused_with_warning(
        &fx,
        r#"{"allowed_project_programs": ["./gradlew build"]}"#,
        &[],
        "./gradlew build",
        &[
            "configures the Gradle wrapper: gradle/wrapper/gradle-wrapper.properties line 1 sets `distributionUrl`",
            "configures gradle: gradle.properties line 1 sets `org.gradle.java.home`",
        ],
    );
    if let Verdict::Measured(more) = listed {
        m.unauthorized.extend(more.unauthorized);
    }
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// Issue 25, M1 follow-up: what the security review found the git scan missed
// ---------------------------------------------------------------------------------------

/// `.git/config` ends with a value continued by a backslash before CRLF, then a line
///      metron's old reader took for an error (`!junk`), then `core.fsmonitor`: git
///      drops the CR, so the `!junk` line is part of the value and the fsmonitor is set.
pub(super) fn git_crlf_continuation() -> Verdict {
    let fx = committed_and_edited();
    let evil = planted(&fx, "fsmonitor");
    append(
        &fx.root().join(".git/config"),
        &format!("[a]\r\n\tx = 1 \\\r\n!junk\r\n[core]\r\n\tfsmonitor = {evil}\r\n"),
    );
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        "sets `core.fsmonitor`; metron resets it for this run",
    )
}

/// A line metron's reader cannot read (a stray `!junk` line, which git itself refuses)
///      warns instead of ending the scan silently; the key after it is still found.
pub(super) fn git_unreadable_line() -> Verdict {
    let fx = Fixture::new(true);
    let evil = planted(&fx, "fsmonitor");
    append(
        &fx.root().join(".git/config"),
        &format!("!junk\n[core]\n\tfsmonitor = {evil}\n"),
    );
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["git status"]}"#,
        &[],
        "git status",
        &[
            "is a line metron cannot read as git does",
            "sets `core.fsmonitor`; metron resets it",
        ],
    )
}

/// A project whose `.git` file names, byte for byte, `git_dir` (made with
/// `--separate-git-dir` elsewhere and moved there), greet.go committed and edited, and
/// `core.fsmonitor` in that directory's config.
fn separate_git_dir_at(fx: &Fixture, git_dir: &Path) {
    let made = fx.base().join("made.git");
    git(
        &fx.root(),
        &[
            "init",
            "-q",
            "--separate-git-dir",
            &made.display().to_string(),
        ],
    );
    std::fs::rename(&made, git_dir).expect("move the git dir");
    let mut pointer = b"gitdir: ".to_vec();
    pointer.extend_from_slice(git_dir.as_os_str().as_encoded_bytes());
    pointer.push(b'\n');
    std::fs::write(fx.root().join(".git"), pointer).expect("write .git");
    git(&fx.root(), &["add", "greet.go"]);
    git(&fx.root(), &["commit", "-qm", "greet"]);
    fx.write("greet.go", GREET_HOLA);
    let evil = planted(fx, "fsmonitor");
    append(
        &git_dir.join("config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
}

/// `.git` is `gitdir: <base>/meta.git ` with a trailing space, which git keeps (it
///      strips only CR and LF): that directory's config is scanned and reset.
pub(super) fn git_gitdir_trailing_space() -> Verdict {
    let fx = Fixture::new(false);
    separate_git_dir_at(&fx, &fx.base().join("meta.git "));
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        "meta.git /config line",
    )
}

/// `.git` names a directory whose name holds a newline (`meta` LF `x.git`): git reads
///      the path to the end of the file, not the first line.
pub(super) fn git_gitdir_newline() -> Verdict {
    let fx = Fixture::new(false);
    separate_git_dir_at(&fx, &fx.base().join("meta\nx.git"));
    git_under_yes(&fx, "git status", "git status --short", "x.git/config line")
}

/// `.git` is a file git would not follow (no `gitdir: ` prefix): warned about, not
///      passed over in silence.
pub(super) fn git_bad_gitfile() -> Verdict {
    let fx = Fixture::new(false);
    fx.write(".git", "  gitdir:../elsewhere\n");
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["git status"]}"#,
        &[],
        "git status",
        &[".git is a file that does not start with `gitdir: `"],
    )
}

/// Runs `git` with local submodule clones allowed (git 2.38 refuses `file://` by default).
fn git_sub(dir: &Path, args: &[&str]) {
    let mut all = vec!["-c", "protocol.file.allow=always"];
    all.extend_from_slice(args);
    git(dir, &all);
}

/// A committed repository at `dir` with one file.
fn small_repo(dir: &Path, file: &str) {
    std::fs::create_dir_all(dir).expect("mkdir");
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join(file), "x\n").expect("write");
    git(dir, &["add", file]);
    git(dir, &["commit", "-qm", file]);
}

/// A project with the submodule `lib` (itself holding the submodule `inner`), both
/// absorbed into `.git/modules/`, and greet.go committed and edited.
fn with_submodules() -> Fixture {
    let fx = committed_and_edited();
    let inner = fx.base().join("src-inner");
    let lib = fx.base().join("src-lib");
    small_repo(&inner, "i.txt");
    small_repo(&lib, "l.txt");
    // Absolute URLs: a relative one resolves against the fixture's `origin`.
    let url = |p: &Path| p.display().to_string();
    git_sub(&lib, &["submodule", "add", "-q", &url(&inner), "inner"]);
    git(&lib, &["commit", "-qm", "inner"]);
    git_sub(&fx.root(), &["submodule", "add", "-q", &url(&lib), "lib"]);
    git_sub(
        &fx.root(),
        &["submodule", "update", "-q", "--init", "--recursive"],
    );
    git(&fx.root(), &["commit", "-qm", "lib"]);
    settle(&fx.root().join("lib/inner"), &[], &["i.txt"]);
    settle(&fx.root().join("lib"), &[], &["l.txt"]);
    settle(&fx.root(), &[], &["greet.go"]);
    fx
}

/// Moves the modification times of `files` (in the work tree `dir`) a minute back and
/// refreshes the index (`git_args` first, for a git directory found elsewhere): no entry
/// is then "racily clean", so the allowed `git status` has no reason to rewrite an index,
/// and any change it makes is the repository's program at work.
fn settle(dir: &Path, git_args: &[&str], files: &[&str]) {
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for file in files {
        std::fs::File::options()
            .write(true)
            .open(dir.join(file))
            .and_then(|f| f.set_modified(past))
            .expect("set the modification time");
    }
    let mut args = vec!["-c", "core.fsmonitor=false"];
    args.extend_from_slice(git_args);
    args.extend(["status", "--short"]);
    git(dir, &args);
}

/// `.git/modules/lib/config` (an absorbed submodule's git directory) sets
///      `core.fsmonitor`; the top-level `git status` recurses into `lib`, and its git
///      reads the reset from the environment too.
pub(super) fn git_absorbed_submodule() -> Verdict {
    let fx = with_submodules();
    let evil = planted(&fx, "fsmonitor");
    append(
        &fx.root().join(".git/modules/lib/config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        ".git/modules/lib/config line",
    )
}

/// `.git/modules/lib/modules/inner/config`, a submodule of a submodule, sets it.
pub(super) fn git_nested_submodule() -> Verdict {
    let fx = with_submodules();
    let evil = planted(&fx, "fsmonitor");
    append(
        &fx.root().join(".git/modules/lib/modules/inner/config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        ".git/modules/lib/modules/inner/config line",
    )
}

/// `.gitmodules` lists `vendor/dep`, whose `.git` is a directory of its own (cloned in
///      place, not absorbed); its config sets `core.fsmonitor`.
pub(super) fn git_gitmodules_path() -> Verdict {
    let fx = committed_and_edited();
    let dep = fx.root().join("vendor/dep");
    small_repo(&dep, "d.txt");
    git(&fx.root(), &["add", "vendor/dep"]);
    fx.write(
        ".gitmodules",
        "[submodule \"dep\"]\n\tpath = vendor/dep\n\turl = ./vendor/dep\n",
    );
    git(&fx.root(), &["add", ".gitmodules"]);
    git(&fx.root(), &["commit", "-qm", "dep"]);
    settle(&dep, &[], &["d.txt"]);
    settle(&fx.root(), &[], &["greet.go", ".gitmodules"]);
    let evil = planted(&fx, "fsmonitor");
    append(
        &dep.join(".git/config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        "vendor/dep/.git/config line",
    )
}

/// The project root has no `.git` but is itself a git directory (`HEAD`, `objects/`,
///      `refs/`, a `config` with `core.bare = false` and `core.worktree` at the root):
///      `git status` uses it, and its `core.fsmonitor` is found and reset.
pub(super) fn git_root_is_git_dir() -> Verdict {
    let fx = Fixture::new(false);
    let root = fx.root().display().to_string();
    let here = ["--git-dir=.", "--work-tree=."];
    git(&fx.root(), &["--git-dir=.", "init", "-q"]);
    git(&fx.root(), &["--git-dir=.", "config", "core.bare", "false"]);
    git(
        &fx.root(),
        &["--git-dir=.", "config", "core.worktree", &root],
    );
    // An index entry stamped in the same second as the index is "racily clean", and
    // every `git status` rewrites the index to smudge it: the file is made older first.
    settle(&fx.root(), &here, &["greet.go"]);
    git(&fx.root(), &[here[0], here[1], "add", "greet.go"]);
    git(&fx.root(), &[here[0], here[1], "commit", "-qm", "greet"]);
    fx.write("greet.go", GREET_HOLA);
    let evil = planted(&fx, "fsmonitor");
    append(
        &fx.root().join("config"),
        &format!("[core]\n\tfsmonitor = {evil}\n"),
    );
    settle(&fx.root(), &here, &["greet.go"]);
    git_under_yes(
        &fx,
        "git status",
        "git status --short",
        "the project root (itself a git directory)/config line",
    )
}

/// `.git/config` sets `tar.tgz.command`; an allowed `git archive --format=tgz` under
///      `--yes` compresses with git's own `gzip -cn` instead.
pub(super) fn git_tar_tgz_command() -> Verdict {
    let fx = Fixture::new(true);
    git(&fx.root(), &["add", "greet.go"]);
    git(&fx.root(), &["commit", "-qm", "greet"]);
    let evil = planted(&fx, "tar");
    append(
        &fx.root().join(".git/config"),
        &format!("[tar \"tgz\"]\n\tcommand = {evil}\n"),
    );
    git_under_yes(
        &fx,
        "git archive",
        "git archive --format=tgz HEAD",
        "sets `tar.tgz.command`; metron resets it for this run (`tar.tgz.command=gzip -cn`",
    )
}

/// A key that only warns: `text` appended to `.git/config`, `command` allowed and
///      refused (nobody to ask), `warning` on stderr.
fn git_key_warned(text: &str, command: &str, warning: &str) -> Verdict {
    let fx = Fixture::new(true);
    let evil = planted(&fx, "program");
    append(&fx.root().join(".git/config"), &text.replace("EVIL", &evil));
    refused_with_warning(
        &fx,
        &json!({ "allowed_commands": [command] }).to_string(),
        &[],
        command,
        &[warning],
    )
}

/// `tar.xz.command`, a format the repository invents: no default to reset it to.
pub(super) fn git_tar_custom_format() -> Verdict {
    git_key_warned(
        "[tar \"xz\"]\n\tcommand = EVIL\n",
        "git archive --format=xz HEAD",
        "sets `tar.xz.command`; approving runs a program the repository chose",
    )
}

/// `imap.tunnel`, the command `git imap-send` talks IMAP through.
pub(super) fn git_imap_tunnel() -> Verdict {
    git_key_warned(
        "[imap]\n\ttunnel = EVIL\n",
        "git imap-send",
        "sets `imap.tunnel`; approving runs",
    )
}

/// `interactive.diffFilter`, which `git add -p` pipes every diff through.
pub(super) fn git_interactive_diff_filter() -> Verdict {
    git_key_warned(
        "[interactive]\n\tdiffFilter = EVIL\n",
        "git add -p",
        "sets `interactive.difffilter`; approving runs",
    )
}

/// `gc.recentObjectsHook`, which `git gc` runs.
pub(super) fn git_gc_recent_objects_hook() -> Verdict {
    git_key_warned(
        "[gc]\n\trecentObjectsHook = EVIL\n",
        "git gc",
        "sets `gc.recentobjectshook`; approving runs",
    )
}

/// `sendemail.<identity>.sendmailCmd`, the identity form of the key.
pub(super) fn git_sendemail_identity() -> Verdict {
    git_key_warned(
        "[sendemail \"work\"]\n\tsendmailCmd = EVIL\n",
        "git send-email",
        "sets `sendemail.work.sendmailcmd`; approving runs",
    )
}

/// `instaweb.httpd`, the web server `git instaweb` starts.
pub(super) fn git_instaweb_httpd() -> Verdict {
    git_key_warned(
        "[instaweb]\n\thttpd = EVIL\n",
        "git instaweb",
        "sets `instaweb.httpd`; approving runs",
    )
}

/// `guitool.<name>.cmd`, a command git gui and gitk offer.
pub(super) fn git_guitool_cmd() -> Verdict {
    git_key_warned(
        "[guitool \"tidy\"]\n\tcmd = EVIL\n",
        "git gui",
        "sets `guitool.tidy.cmd`; approving runs",
    )
}

/// `.npmrc` with `script${UNSET_X?}-shell = ./evilsh`: npm expands the variable (to
///      nothing) in the key, which is then `script-shell`.
pub(super) fn npm_computed_key() -> Verdict {
    let fx = Fixture::new(true);
    fx.write(".npmrc", "script${UNSET_X?}-shell = ./evilsh\n");
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["npm test"]}"#,
        &["npm"],
        "npm test",
        &["configures npm: .npmrc line 1 sets a key whose name is computed from the environment"],
    )
}

/// `.yarnrc` with `yarn${EMPTY}-path ./y.js`: a key built from the environment.
pub(super) fn yarn_computed_key() -> Verdict {
    let fx = Fixture::new(true);
    fx.write(".yarnrc", "yarn${EMPTY}-path \"./y.js\"\n");
    refused_with_warning(
        &fx,
        r#"{"allowed_commands": ["yarn install"]}"#,
        &["yarn"],
        "yarn install",
        &["configures npm: .yarnrc line 1 sets a key whose name is computed from the environment"],
    )
}
