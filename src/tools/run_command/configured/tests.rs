use proptest::prelude::*;

use super::*;

fn file(syntax: Syntax, keys: &'static [&'static str]) -> ConfigFile {
    ConfigFile {
        path: "f",
        syntax,
        keys,
        tables: CARGO_TABLES,
    }
}

#[test]
fn toml_assignments_are_found_in_every_spelling() {
    let toml = file(Syntax::Toml, CARGO_KEYS);
    for line in [
        "runner = \"tools/run\"",
        "  runner=\"x\"",
        "target.x86_64-unknown-linux-gnu.runner = \"x\"",
        "target.'cfg(unix)'.runner = 'x'",
        "\"runner\" = \"x\"",
        "target = { x = { runner = \"x\" } }",
        "rustc-wrapper = \"x\"",
        "build.rustc = \"x\"",
        "[alias]",
        "[ alias ]",
        "[ \"alias\" ]",
        "[ 'alias' ]",
        "[[alias]]",
        "alias.t = \"run\"",
        "alias . fmt = \"run\"",
        "\"alias\".fmt = \"run\"",
        "'alias'.fmt = \"run\"",
        "alias = { t = \"run\" }",
        "rustflags = [\"-Clinker=./ld\"]",
        "build.rustflags = [",
        "target.x.rustflags = [\"-C\", \"target-cpu=native\"]",
        "rustdocflags = [\"-Clinker=./ld\"]",
        "\"runn\\u0065r\" = \"./x\"",
        "\"runn\\U00000065r\" = \"./x\"",
        "target.\"x\".\"runn\\u0065r\" = \"./x\"",
        "target = { x = { \"link\\u0065r\" = \"./x\" } }",
        "[\"ali\\u0061s\"]",
        "\"b\\u0075ild\".rustc = \"x\"",
        "\"runn\\q\" = 1",
    ] {
        assert!(line_sets(line, &toml).is_some(), "{line}");
    }
    for line in [
        "# runner = \"x\"",
        "runners = 1",
        "myrunner = 1",
        "[target.x]",
        "jobs = 4",
        "rustflagsx = 1",
        "[aliases]",
        "\"alias.fmt\" = 1",
        "name = \"caf\\u00e9\"",
        "x = [\"a\\\"b\", \"c\"]",
        "x = \"runner = 1\"",
    ] {
        assert_eq!(line_sets(line, &toml), None, "{line}");
    }
    let legacy = file(Syntax::Toolchain, &["path"]);
    assert!(line_sets("/opt/toolchains/mine", &legacy).is_some());
    assert!(line_sets("path = \"tools\"", &legacy).is_some());
    assert_eq!(line_sets("stable", &legacy), None);
    assert_eq!(line_sets("1.80.0", &legacy), None);
}

#[test]
fn other_syntaxes_are_read_as_their_programs_read_them() {
    let npmrc = file(
        Syntax::Ini,
        &["script-shell", "git", "node-gyp", "userconfig"],
    );
    for line in [
        "git=./tools/git",
        "node-gyp = ./tools/gyp",
        "userconfig=./other.npmrc",
        "\"scr\\u0069pt-shell\"=./x",
        "script_shell=./x",
        "'git' = ./x",
    ] {
        assert!(line_sets(line, &npmrc).is_some(), "{line}");
    }
    for line in ["github-token=x", "git-tag-version=false", "; git=./x"] {
        assert_eq!(line_sets(line, &npmrc), None, "{line}");
    }
    let yarn = file(Syntax::Spaced, &["yarn-path"]);
    assert!(line_sets("yarn-path \"./x.js\"", &yarn).is_some());
    assert_eq!(line_sets("yarn-path", &yarn), None);
    let yaml = file(Syntax::Yaml, &["yarnPath", "plugins"]);
    for line in [
        "yarnPath: .yarn/releases/y.cjs",
        "\"yarnPath\": x",
        "plugins:",
        "plugins: [a.cjs]",
        "{plugins: [a.cjs]}",
    ] {
        assert!(line_sets(line, &yaml).is_some(), "{line}");
    }
    assert_eq!(line_sets("nodeLinker: pnp", &yaml), None);
    let props = file(Syntax::Properties, &["org.gradle.java.home"]);
    assert!(line_sets("org.gradle.java.home=tools/jdk", &props).is_some());
    assert!(line_sets("org.gradle.java\\u002ehome tools/jdk", &props).is_some());
    assert_eq!(line_sets("org.gradle.jvmargs=-Xmx2g", &props), None);
    let make = file(Syntax::Make, &["SHELL", ".SHELLFLAGS"]);
    for (line, says) in [
        ("define SHELL", "`SHELL`"),
        ("$(X)$(Y) := ./evilsh", "computed"),
        ("include x.mk", "include"),
        ("$(eval SHELL := x)", "eval"),
    ] {
        let found = line_sets(line, &make).unwrap_or_default();
        assert!(found.contains(says), "{line}: {found}");
    }
}

/// One spelling of a TOML key segment that TOML reads as `name`: bare, quoted, literal,
/// or quoted with some characters escaped.
fn spelled(name: &'static str) -> impl Strategy<Value = String> {
    let escaped = proptest::collection::vec(0u8..3, name.len()).prop_map(move |how| {
        let body: String = name
            .chars()
            .zip(how)
            .map(|(c, h)| match h {
                0 => c.to_string(),
                1 => format!("\\u{:04X}", c as u32),
                _ => format!("\\U{:08x}", c as u32),
            })
            .collect();
        format!("\"{body}\"")
    });
    prop_oneof![
        Just(name.to_owned()),
        Just(format!("\"{name}\"")),
        Just(format!("'{name}'")),
        escaped,
    ]
}

fn blank() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(""), Just(" "), Just("\t"), Just(" \t ")]
}

proptest! {
    /// Any spelling of the key `alias.fmt` (or the table `[alias]`) that TOML reads as
    /// that key is flagged.
    #[test]
    fn every_toml_spelling_of_alias_fmt_is_flagged(
        alias in spelled("alias"),
        fmt in spelled("fmt"),
        b in proptest::collection::vec(blank(), 6),
        form in 0u8..5,
    ) {
        let line = match form {
            0 => format!("{}{alias}{}.{}{fmt}{}={}\"run\"", b[0], b[1], b[2], b[3], b[4]),
            1 => format!("{}[{}{alias}{}]{}", b[0], b[1], b[2], b[3]),
            2 => format!("{}[[{}{alias}{}]]", b[0], b[1], b[2]),
            3 => format!("{alias}{}={}{{{}{fmt}{}={}\"run\"}}", b[0], b[1], b[2], b[3], b[4]),
            _ => format!("x = 1{}#{}\n{alias}.{fmt}{}= \"run\"", b[0], b[1], b[5]),
        };
        let toml = file(Syntax::Toml, CARGO_KEYS);
        let flagged = line.lines().any(|l| line_sets(l, &toml).is_some());
        prop_assert!(flagged, "{}", line);
    }
}

proptest! {
    /// The files are the repository's: no content makes a reader panic.
    #[test]
    fn no_content_makes_a_reader_panic(text in "(?s)[\\PC\\s\"'\\\\=:.\\[\\]{},#$()-]{0,80}") {
        for syntax in [
            Syntax::Toml,
            Syntax::Toolchain,
            Syntax::Ini,
            Syntax::Make,
            Syntax::Spaced,
            Syntax::Yaml,
            Syntax::Properties,
        ] {
            let f = file(syntax, &["SHELL", "runner", "yarnPath", "org.gradle.java.home"]);
            for line in text.lines() {
                let _ = line_sets(line, &f);
            }
        }
        let _ = make::logical_lines(&text);
        let _ = lines::properties_lines(&text);
        let _ = git::entries(&text);
    }
}

#[test]
fn git_resets_go_after_the_users_own() {
    let configured = Configured {
        warnings: Vec::new(),
        resets: vec![("core.fsmonitor".to_owned(), "false".to_owned())],
    };
    let mut env: Vec<(OsString, OsString)> = vec![("GIT_CONFIG_COUNT".into(), "1".into())];
    configured.apply(&mut env);
    let get = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    assert_eq!(get("GIT_CONFIG_COUNT").as_deref(), Some("2"));
    assert_eq!(get("GIT_CONFIG_KEY_1").as_deref(), Some("core.fsmonitor"));
    assert_eq!(get("GIT_CONFIG_VALUE_1").as_deref(), Some("false"));
    let mut huge: Vec<(OsString, OsString)> =
        vec![("GIT_CONFIG_COUNT".into(), usize::MAX.to_string().into())];
    configured.apply(&mut huge);
    let mut empty = Vec::new();
    Configured::default().apply(&mut empty);
    assert!(empty.is_empty());
}

#[test]
fn git_config_outside_the_project_is_read_capped_and_never_blocks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let big = dir.path().join("big");
    std::fs::write(&big, vec![b'x'; 11]).expect("write");
    assert!(git::read_outside(&big, 10).is_err_and(|e| e.contains("larger than 10")));
    assert_eq!(
        git::read_outside(&big, 11).ok().flatten().map(|b| b.len()),
        Some(11)
    );
    assert_eq!(git::read_outside(&dir.path().join("none"), 10), Ok(None));
    assert!(git::read_outside(dir.path(), 10).is_err());
    let fifo = dir.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    assert!(git::read_outside(&fifo, 10).is_err_and(|e| e.contains("not a regular file")));
}

#[test]
fn excerpts_are_clipped_on_characters() {
    assert_eq!(excerpt("  a = 1  "), "a = 1");
    let long = "é".repeat(100);
    assert_eq!(excerpt(&long), format!("{}...", "é".repeat(80)));
}

#[test]
fn files_are_found_through_the_project_with_a_byte_order_mark_skipped() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join(".cargo")).expect("mkdir");
    std::fs::write(
        dir.path().join(".cargo/config.toml"),
        "\u{feff}alias.fmt = \"run\"\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("GNUmakefile"), "all: SHELL \\\n = ./sh\n").expect("write");
    let project = Project::open(dir.path(), false).expect("open");
    let cargo = check(&project, "/usr/bin/cargo");
    assert_eq!(cargo.warnings.len(), 1, "{:?}", cargo.warnings);
    assert!(
        cargo.warnings[0].contains(".cargo/config.toml line 1 sets `[alias]`"),
        "{:?}",
        cargo.warnings
    );
    let make = check(&project, "make");
    assert!(
        make.warnings
            .iter()
            .any(|w| w.contains("GNUmakefile line 1 sets `SHELL`")),
        "{:?}",
        make.warnings
    );
    assert!(check(&project, "ls").warnings.is_empty());
}

#[test]
fn git_config_is_found_in_the_git_directory_and_reset() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join(".git")).expect("mkdir");
    std::fs::write(
        dir.path().join(".git/config"),
        "[core]\n\tbare = false\n\tfsmonitor = ./x\n[alias]\n\tst = !sh\n",
    )
    .expect("write");
    let found = check_git(dir.path());
    assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
    assert!(
        found.warnings[0].contains(".git/config line 3 sets `core.fsmonitor`; metron resets it")
    );
    assert!(found.warnings[1].contains("line 5 sets `alias.st`; approving runs"));
    assert_eq!(
        found.resets,
        [("core.fsmonitor".to_owned(), "false".to_owned())]
    );
    // Another program gets the resets (it may run git) but not the warnings.
    let project = Project::open(dir.path(), true).expect("open");
    let go = check(&project, "go");
    assert!(go.warnings.is_empty(), "{:?}", go.warnings);
    assert_eq!(go.resets, found.resets);
    // At most MAX_GIT_FINDINGS keys are named; the rest are counted.
    let aliases: String = (0..MAX_GIT_FINDINGS + 2)
        .map(|i| format!("\ta{i} = !sh\n"))
        .collect();
    std::fs::write(
        dir.path().join(".git/config"),
        format!("[alias]\n{aliases}"),
    )
    .expect("write");
    let many = check_git(dir.path()).warnings;
    assert_eq!(many.len(), MAX_GIT_FINDINGS + 1, "{many:?}");
    assert!(
        many[MAX_GIT_FINDINGS].contains("sets 2 more such keys"),
        "{many:?}"
    );
    // A `.git` file git would not follow (git refuses to run there): warned about.
    let other = tempfile::tempdir().expect("temp dir");
    std::fs::write(other.path().join(".git"), "gitdir: nowhere\n").expect("write");
    assert!(check_git(other.path()).warnings[0].contains("not a git directory"));
    std::fs::write(other.path().join(".git"), "nothing\n").expect("write");
    assert!(check_git(other.path()).warnings[0].contains("does not start with `gitdir: `"));
}

#[test]
fn a_line_metron_cannot_read_warns_and_the_scan_reads_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join(".git")).expect("mkdir");
    std::fs::write(
        dir.path().join(".git/config"),
        "[a]\n\tx = 1\n!junk\n[core]\n\tfsmonitor = ./x\n",
    )
    .expect("write");
    let found = check_git(dir.path());
    assert!(
        found.warnings[0].contains(".git/config line 3 is a line metron cannot read as git does"),
        "{:?}",
        found.warnings
    );
    assert!(found.warnings[1].contains("line 5 sets `core.fsmonitor`"));
    assert_eq!(
        found.resets,
        [("core.fsmonitor".to_owned(), "false".to_owned())]
    );
}

#[test]
fn a_submodule_config_is_warned_and_its_keys_reset_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    for sub in [".git/modules/a", ".git/modules/b"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        std::fs::write(
            dir.path().join(sub).join("config"),
            "[core]\n\tfsmonitor = ./x\n",
        )
        .expect("write");
    }
    let found = check_git(dir.path());
    assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
    assert!(
        found
            .warnings
            .iter()
            .any(|w| w.contains(".git/modules/a/config line 2 sets `core.fsmonitor`"))
    );
    assert_eq!(found.resets.len(), 1, "{:?}", found.resets);
}

#[test]
fn an_npmrc_key_computed_from_the_environment_warns() {
    let npmrc = file(Syntax::Ini, &["script-shell"]);
    for line in [
        "script${UNSET_X?}-shell = ./evilsh",
        "${A}=x",
        "\"scr${X}ipt-shell\" = y",
    ] {
        let found = line_sets(line, &npmrc).unwrap_or_default();
        assert!(
            found.contains("computed from the environment"),
            "{line}: {found}"
        );
    }
    let yarn = file(Syntax::Spaced, &["yarn-path"]);
    assert!(line_sets("yarn-${X}path ./y.js", &yarn).is_some());
    let yaml = file(Syntax::Yaml, &["yarnPath"]);
    assert!(line_sets("yarn${X}Path: ./y.cjs", &yaml).is_some());
    assert_eq!(line_sets("registry = ${REGISTRY}", &npmrc), None);
}
