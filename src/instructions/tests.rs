use super::*;

fn project_with(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, bytes) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }
    let project = Project::open(dir.path(), false).expect("open");
    (dir, project)
}

fn config(cap: u64) -> Config {
    Config {
        instructions_max_bytes: cap,
        ..Config::default()
    }
}

#[test]
fn directories_run_from_the_root_down_to_the_working_directory() {
    let root = Path::new("/r");
    assert_eq!(directories(root, Path::new("/r")), [""]);
    assert_eq!(directories(root, Path::new("/r/a/b")), ["", "a", "a/b"]);
    assert_eq!(directories(root, Path::new("/elsewhere")), [""]);
}

#[test]
fn a_cut_lands_on_a_line_break_and_says_so() {
    let text = b"line one\nline two\nline three\n";
    let (dir, project) = project_with(&[("AGENTS.md", text)]);
    let found = Instructions::load(&project, dir.path(), None, &config(20));
    let [file] = found.files.as_slice() else {
        panic!("{found:?}");
    };
    assert_eq!(file.text, "line one\nline two\n");
    assert!(file.cut);
    assert_eq!(
        found.notes[0].problem,
        Problem::Cut { kept: 18, cap: 20 }
    );
    assert!(found.block().contains("[metron: the instructions were cut here at the 20-byte cap"));
}

#[test]
fn a_cut_inside_a_long_line_lands_on_a_character_boundary() {
    // "é" is two bytes: a cap of 5 falls inside the third one.
    let (dir, project) = project_with(&[("AGENTS.md", "ééééé".as_bytes())]);
    let found = Instructions::load(&project, dir.path(), None, &config(5));
    assert_eq!(found.files[0].text, "éé");
}

#[test]
fn a_file_exactly_at_the_cap_is_whole_and_the_next_is_over_it() {
    let (dir, project) = project_with(&[("AGENTS.md", b"12345\n"), ("a/AGENTS.md", b"x\n")]);
    let found = Instructions::load(&project, &dir.path().join("a"), None, &config(6));
    assert_eq!(found.files.len(), 1, "{found:?}");
    assert!(!found.files[0].cut);
    assert_eq!(found.notes[0].problem, Problem::OverCap { cap: 6 });
}

#[test]
fn not_utf8_is_a_note_and_the_fallback_is_read() {
    let (dir, project) = project_with(&[("AGENTS.md", b"\xff\xfe bad"), ("CLAUDE.md", b"ok\n")]);
    let found = Instructions::load(&project, dir.path(), None, &config(100));
    assert_eq!(found.notes[0].problem, Problem::NotUtf8);
    assert_eq!(found.files[0].text, "ok\n");
    assert_eq!(found.files[0].origin.shown(), "CLAUDE.md");
}

#[test]
fn the_block_is_the_same_bytes_every_time_and_empty_without_files() {
    let (dir, project) = project_with(&[("AGENTS.md", b"Use tabs.\n")]);
    let found = Instructions::load(&project, dir.path(), None, &config(100));
    assert_eq!(found.block(), found.clone().block());
    assert!(found.block().contains("--- AGENTS.md ---\nUse tabs.\n--- end"));
    assert_eq!(Instructions::off().block(), "");
}
