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
    assert_eq!(found.notes[0].problem, Problem::Cut { kept: 18, cap: 20 });
    assert!(
        found
            .block()
            .contains("[metron: the instructions were cut here at the 20-byte cap")
    );
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
    assert!(
        found
            .block()
            .contains("\n[metron: 1 more instruction file(s) were not read: the 6-byte cap was reached]\n--- end"),
        "{}",
        found.block()
    );
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
    assert!(
        found
            .block()
            .contains("--- AGENTS.md ---\nUse tabs.\n--- end")
    );
    assert_eq!(Instructions::off().block(), "");
}

#[test]
fn at_most_the_cap_and_one_byte_is_read_from_a_huge_file() {
    let (dir, project) = project_with(&[]);
    let file = std::fs::File::create(dir.path().join("AGENTS.md")).expect("create");
    file.set_len(1 << 30).expect("a sparse gibibyte");
    let path = project.resolve("AGENTS.md").expect("resolve");
    let bytes = project.read_prefix(&path, 100).expect("read");
    assert_eq!(bytes.len(), 101);
}

#[test]
fn the_users_file_is_refused_when_it_is_a_device_or_a_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("AGENTS.md");
    std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
    assert_eq!(read::user_file(&link, 100), Err(Problem::NotRegular));
    let sub = dir.path().join("sub");
    std::fs::create_dir_all(sub.join("AGENTS.md")).expect("mkdir");
    assert_eq!(
        read::user_file(&sub.join("AGENTS.md"), 100),
        Err(Problem::Directory)
    );
    assert_eq!(read::user_file(&dir.path().join("none"), 100), Ok(None));
    std::fs::write(dir.path().join("mine.md"), "x".repeat(500)).expect("write");
    let read = read::user_file(&dir.path().join("mine.md"), 100).expect("read");
    assert_eq!(read.map(|b| b.len()), Some(101));
}
