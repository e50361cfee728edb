//! Ordinary work under the default sandbox: real toolchains build and test small projects
//! through `metron tool --yes run_command`, the path a model's call takes, with nothing
//! granted beyond the defaults but what each tool is documented to need
//! (`~/.cache/go-build` for Go).
//!
//! Each test makes a small project in a temp git repository, runs one allowed command and
//! checks that it passed and that what it wrote is reported as evidence. A missing
//! toolchain skips outside CI and fails under it (`.ci/run` installs them all).

use std::path::{Path, PathBuf};

use super::common::{Run, git_init, metron, skip};

/// A temp project holding `files`, a git work tree.
fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("metron-work-")
        .tempdir()
        .expect("temp dir");
    git_init(dir.path());
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir
}

/// Runs `command` as the model would, approved with `--yes`, under the user config
/// `config`, with extra environment for metron itself.
fn run(root: &Path, config: &str, command: &str, env: &[(&str, PathBuf)]) -> Run {
    let mut metron = metron(root);
    let dir = metron.home().join(".metron");
    std::fs::create_dir_all(&dir).expect("mkdir .metron");
    std::fs::write(dir.join("config.json"), config).expect("write the user config");
    for (name, value) in env {
        metron = metron.env(name, value);
    }
    let args = serde_json::json!({ "command": command }).to_string();
    metron.args(["tool", "--yes", "run_command", &args]).run()
}

/// Whether `program` is on PATH; otherwise the test skips (and fails under CI).
fn have(program: &str, test: &str) -> bool {
    let found = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false);
    if !found {
        skip(test, &format!("`{program}` is not installed"));
    }
    found
}

#[track_caller]
fn assert_passed(run: &Run, evidence: &[&str]) {
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("exit status 0"), "{run:?}");
    for file in evidence {
        assert!(
            run.stdout.contains(file),
            "{file} is not reported as changed: {run:?}"
        );
    }
    assert!(!run.stdout.contains("[sandbox]"), "a sandbox hint: {run:?}");
}

#[test]
fn cargo_test_of_a_small_crate_offline() {
    if !have("cargo", "cargo_test_of_a_small_crate_offline") {
        return;
    }
    let dir = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn add(a: u32, b: u32) -> u32 { a + b }\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(1, 2), 3); }\n}\n",
        ),
        (".gitignore", "/target\n"),
    ]);
    // rustup's proxy finds its toolchains through these; they live under the real HOME,
    // which the test's HOME is not. Reading them is what the default policy allows.
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let var = |name: &str, default: &str| {
        std::env::var_os(name).map_or_else(|| home.join(default), PathBuf::from)
    };
    let env = [
        ("RUSTUP_HOME", var("RUSTUP_HOME", ".rustup")),
        ("CARGO_HOME", var("CARGO_HOME", ".cargo")),
    ];
    let config = r#"{"allowed_commands": ["cargo test"],
        "command_env_passthrough": ["RUSTUP_HOME", "CARGO_HOME"]}"#;
    let run = run(dir.path(), config, "cargo test --offline", &env);
    assert_passed(&run, &["Cargo.lock (new)"]);
    assert!(run.stdout.contains("test tests::adds ... ok"), "{run:?}");
    assert!(
        dir.path().join("target").is_dir(),
        "no target/ in the project"
    );
}

#[test]
fn python_unittest_with_bytecode_and_temp_files() {
    if !have("python3", "python_unittest_with_bytecode_and_temp_files") {
        return;
    }
    let dir = project(&[
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        (
            "test_calc.py",
            "import tempfile, unittest\nimport calc\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        with tempfile.TemporaryDirectory() as d:\n            open(d + '/x', 'w').write('y')\n        self.assertEqual(calc.add(1, 2), 3)\n",
        ),
    ]);
    let config = r#"{"allowed_commands": ["python3 -m unittest"]}"#;
    let run = run(dir.path(), config, "python3 -m unittest", &[]);
    assert_passed(&run, &[]);
    assert!(run.stdout.contains("OK"), "{run:?}");
    assert!(
        dir.path().join("__pycache__").is_dir(),
        "Python could not write its bytecode at the top of the project"
    );
}

#[test]
fn make_builds_and_runs_a_c_program() {
    if !have("make", "make_builds_and_runs_a_c_program") || !have("cc", "make_builds") {
        return;
    }
    let dir = project(&[
        (
            "Makefile",
            "check: hello\n\t./hello > out.txt\nhello: hello.c\n\tcc -o hello hello.c\n",
        ),
        (
            "hello.c",
            "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n",
        ),
    ]);
    let config = r#"{"allowed_commands": ["make"]}"#;
    let run = run(dir.path(), config, "make check", &[]);
    assert_passed(&run, &["hello (new)", "out.txt (new)"]);
    let out = std::fs::read_to_string(dir.path().join("out.txt")).unwrap_or_default();
    assert_eq!(out, "hi\n");
}

#[test]
fn npm_test_of_a_tiny_package() {
    if !have("npm", "npm_test_of_a_tiny_package") {
        return;
    }
    let dir = project(&[
        (
            "package.json",
            r#"{"name": "tiny", "version": "1.0.0", "scripts": {"test": "node test.js"}}"#,
        ),
        (
            "test.js",
            "const fs = require('fs'), os = require('os');\nfs.writeFileSync(os.tmpdir() + '/scratch', 'x');\nfs.writeFileSync('result.txt', String(1 + 2));\nconsole.log('passed');\n",
        ),
    ]);
    let config = r#"{"allowed_commands": ["npm test"]}"#;
    let run = run(dir.path(), config, "npm test", &[]);
    assert_passed(&run, &["result.txt (new)"]);
    assert!(run.stdout.contains("passed"), "{run:?}");
}

#[test]
fn go_test_with_its_build_cache_granted() {
    if !have("go", "go_test_with_its_build_cache_granted") {
        return;
    }
    let dir = project(&[
        ("go.mod", "module example.com/tiny\n\ngo 1.19\n"),
        (
            "add.go",
            "package tiny\n\nfunc Add(a, b int) int { return a + b }\n",
        ),
        (
            "add_test.go",
            "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
        ),
    ]);
    // The build cache is the documented grant; it does not exist yet, and metron makes it.
    let config = r#"{"allowed_commands": ["go test"],
        "command_writable_paths": ["~/.cache/go-build"]}"#;
    let run = run(dir.path(), config, "go test ./...", &[]);
    assert_passed(&run, &[]);
    assert!(run.stdout.contains("ok"), "{run:?}");
}

#[test]
fn go_test_without_the_grant_fails_with_a_hint_naming_the_setting() {
    if !have(
        "go",
        "go_test_without_the_grant_fails_with_a_hint_naming_the_setting",
    ) {
        return;
    }
    let dir = project(&[
        ("go.mod", "module example.com/tiny\n\ngo 1.19\n"),
        ("add.go", "package tiny\n"),
    ]);
    let config = r#"{"allowed_commands": ["go test"]}"#;
    let run = run(dir.path(), config, "go test ./...", &[]);
    assert!(!run.stdout.contains("exit status 0"), "{run:?}");
    assert!(
        run.stdout.contains("[sandbox]") && run.stdout.contains("command_writable_paths"),
        "no hint: {run:?}"
    );
}
