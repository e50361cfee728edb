//! find_symbol against Universal Ctags' own parser unit tests: per language, the share of
//! the definitions in each unit's `expected.tags` that our extractor finds at the same
//! name and line.
//!
//! The units are GPL-2 and never copied into this repository: they are read from
//! `../shared/reference/ctags-units` beside the checkout (or `$METRON_CTAGS_UNITS`), at
//! tag p5.9.20210829.0, the version Debian's universal-ctags is. A missing directory
//! skips outside CI and fails under `CI=true`. What counts:
//!
//! - every unit directory of the language, except `.b` ones (known ctags bugs, whose
//!   expected output is a wish);
//! - every tag of `expected.tags` whose kind ctags enables by default and is not a
//!   reference-only kind (`ctags --list-kinds-full`), so the kinds a unit switches on
//!   (prototypes, locals, parameters) are left out, as are reference tags (`roles:`
//!   other than `def`), qualified copies (`extras:qualified`, or a dotted name whose last
//!   part is tagged on the same line) and ctags' invented
//!   names for anonymous constructs (`__anon…` in C, `AnonymousClass…` in PHP,
//!   `anonFunc…` for a Python lambda, `AnonymousFunction…` in JavaScript: a hash nobody
//!   can search for);
//! - tag names are read back from the tags file's escapes (`\\`, `\t`, `\x21`), which
//!   ctags writes for a backslash, a tab or a leading `!` or space in a name;
//! - units whose output is not a tags file (`-x`, `-e`, `--output-format`) are skipped
//!   and counted.
//!
//! A tag is found when our definitions of the input hold its name at its line (the
//! `line:` field, a numeric address, or any line its search pattern matches: ctags wrote
//! the pattern of one of them, and a tags file cannot say which), or,
//! for a dotted or `::` name, when a lookup of that qualified name finds one there: its
//! last part, scoped by the rest (ctags names TypeScript's `namespace a.b` `a.b`; we
//! name it `b` in `a`, which a lookup of `a.b` finds). The
//! test prints the table and asserts each language's floor; `METRON_SHOW_MISSES=N` prints
//! N misses per language.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use metron::testing::{Definitions, ScopedDefinition};

use super::common::{ctags_available, skip};

/// The units directory, or `None` (after a skip that fails under CI) when it is missing.
fn units_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("METRON_CTAGS_UNITS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/ctags-units")
        })
        .join("Units");
    if dir.is_dir() {
        return Some(dir);
    }
    skip(
        test,
        "Universal Ctags' unit tests are not beside the checkout (../shared/reference/ctags-units); set METRON_CTAGS_UNITS to their directory",
    );
    None
}

/// One language's units: where they are, how ctags names the language, which input
/// extensions belong to it, and the extension we read them as (a C unit's `.h` is C).
struct Suite {
    dir: &'static str,
    ctags_language: &'static str,
    inputs: &'static [&'static str],
    read_as: &'static str,
}

/// A tag of `expected.tags` that counts: name, the input file, and its line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Expected {
    unit: String,
    name: String,
    line: usize,
    /// The later lines its search pattern matches too (none for a line address).
    later: Vec<usize>,
    kind: String,
}

/// What the units of one language gave.
#[derive(Debug, Default)]
struct Measured {
    units: usize,
    skipped_units: Vec<String>,
    expected: usize,
    found: usize,
    misses: Vec<Expected>,
    /// Per kind: (expected, found).
    kinds: BTreeMap<String, (usize, usize)>,
}

/// The kinds ctags enables by default for `language` and that are definitions, by letter
/// and by name.
fn default_kinds(language: &str) -> HashSet<String> {
    let out = Command::new("ctags")
        .arg(format!("--list-kinds-full={language}"))
        .output()
        .expect("run ctags --list-kinds-full");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut kinds = HashSet::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if let [letter, name, enabled, refonly, ..] = cols[..]
            && enabled == "yes"
            && refonly == "no"
        {
            kinds.insert(letter.to_owned());
            kinds.insert(name.to_owned());
        }
    }
    assert!(!kinds.is_empty(), "ctags lists no kinds for {language}");
    kinds
}

/// The lines a search pattern (`/^text$/`) matches in `source`, 1-based, in order.
fn pattern_lines(pattern: &str, source: &str) -> Vec<usize> {
    let Some(inner) = pattern
        .strip_prefix('/')
        .or_else(|| pattern.strip_prefix('?'))
    else {
        return Vec::new();
    };
    let inner = inner
        .strip_suffix('/')
        .or_else(|| inner.strip_suffix('?'))
        .unwrap_or(inner);
    let anchored_start = inner.starts_with('^');
    let inner = inner.strip_prefix('^').unwrap_or(inner);
    let anchored_end = inner.ends_with('$') && !inner.ends_with("\\$");
    let inner = if anchored_end {
        &inner[..inner.len() - 1]
    } else {
        inner
    };
    let text = inner.replace("\\/", "/").replace("\\\\", "\\");
    source
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            match (anchored_start, anchored_end) {
                (true, true) => line == text,
                (true, false) => line.starts_with(&text),
                (false, true) => line.ends_with(&text),
                (false, false) => line.contains(&text),
            }
        })
        .map(|(at, _)| at + 1)
        .collect()
}

/// The tags of one unit's `expected.tags` that count, for the input `input` (its name as
/// the tags file writes it) whose text is `source`.
fn expected_tags(
    unit: &str,
    tags: &str,
    input: &str,
    source: &str,
    kinds: &HashSet<String>,
) -> Vec<Expected> {
    let mut out = Vec::new();
    for line in tags.lines().filter(|l| !l.starts_with("!_")) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [name, file, ..] = cols[..] else {
            continue;
        };
        if file != input || invented(name) {
            continue;
        }
        // ctags' own tags format (`!_TAG_OUTPUT_MODE u-ctags`) writes a backslash of a
        // name as `\\` (PHP's `namespace A\B` is `A\\B` there) and a tab as `\t`.
        let name = unescaped_name(name);
        // The address runs up to `;"`; it may itself hold tabs (a pattern of a line
        // with tabs), so the fields are what follows the first `;"`.
        let after_file = &line[cols[0].len() + file.len() + 2..];
        let (address, fields) = match after_file.find(";\"\t") {
            Some(end) => (&after_file[..end], &after_file[end + 3..]),
            None => (after_file.trim_end_matches(";\""), ""),
        };
        let mut kind = None;
        let mut line_field = None;
        let mut counts = true;
        for field in fields.split('\t').filter(|f| !f.is_empty()) {
            match field.split_once(':') {
                None => kind = Some(field.to_owned()),
                Some(("kind", k)) => kind = Some(k.to_owned()),
                Some(("line", n)) => line_field = n.parse().ok(),
                Some(("roles", roles)) => counts &= roles.split(',').any(|r| r == "def"),
                Some(("extras", extras)) => {
                    counts &= !extras
                        .split(',')
                        .any(|e| e == "qualified" || e == "anonymous");
                }
                Some(_) => {}
            }
        }
        let Some(kind) = kind else { continue };
        if !counts || !kinds.contains(&kind) {
            continue;
        }
        let mut lines = match line_field.or_else(|| address.parse().ok()) {
            Some(line) => vec![line],
            None => pattern_lines(address, source),
        }
        .into_iter();
        let Some(line) = lines.next() else { continue };
        out.push(Expected {
            unit: unit.to_owned(),
            name,
            line,
            later: lines.collect(),
            kind,
        });
    }
    // `--extras=+q` adds a qualified copy of a tag (`Class.method`) on the same line, with
    // no field to tell it apart unless `+E` is on: a dotted or `::` name whose last part
    // is another tag on its line is that copy.
    let plain: HashSet<(String, usize)> = out.iter().map(|t| (t.name.clone(), t.line)).collect();
    out.retain(|t| {
        let last = t.name.rsplit(['.', ':', '\\']).next().unwrap_or(&t.name);
        last == t.name || !plain.contains(&(last.to_owned(), t.line))
    });
    out
}

/// Whether `name` is one ctags makes up for an anonymous construct: `__anon…`, or a fixed
/// prefix then a hash of hex digits (`AnonymousClass…` in PHP and JavaScript,
/// `AnonymousFunction…` and `AnonymousObject…` in JavaScript, `anonFunc…` for a Python
/// lambda). No one asks for those by name, so they do not count.
fn invented(name: &str) -> bool {
    name.starts_with("__anon")
        || [
            "AnonymousClass",
            "AnonymousFunction",
            "AnonymousObject",
            "anonFunc",
        ]
        .iter()
        .any(|prefix| {
            name.strip_prefix(prefix)
                .is_some_and(|hash| !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()))
        })
}

/// A tag name as the source spells it, from the escapes ctags writes in the name field
/// (`\\` a backslash, `\t` a tab, `\n` a newline, `\xHH` a byte such as a leading `!`
/// or space). Any other backslash is kept as it is.
fn unescaped_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (decoded, used) = match after.as_bytes().first() {
            Some(b'\\') => (Some('\\'), 1),
            Some(b't') => (Some('\t'), 1),
            Some(b'n') => (Some('\n'), 1),
            Some(b'r') => (Some('\r'), 1),
            Some(b'x') => (
                after
                    .get(1..3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                    .filter(u8::is_ascii)
                    .map(char::from),
                3,
            ),
            _ => (None, 0),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[used..];
            }
            None => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A name as find_symbol matches it: a C++ operator however it is spaced (ctags writes
/// `operator -=` and `operator int*` where the source, and so our name, may read
/// `operator-=` or `operator int *`; a lookup of either finds both, see `same_name`).
fn lookup_key(name: &str) -> String {
    if name.starts_with("operator") {
        name.chars().filter(|c| !c.is_whitespace()).collect()
    } else {
        name.to_owned()
    }
}

/// The segments of a qualified name or scope path (`a.b`, `a::b`), empty ones left out.
fn segments(path: &str) -> Vec<&str> {
    path.split("::")
        .flat_map(|part| part.split('.'))
        .filter(|segment| !segment.is_empty())
        .collect()
}

/// Whether a lookup of the qualified `name` (`a.b`) finds one of `ours` at `line`: a
/// definition of its last part whose scope path ends with the rest, as find_symbol
/// narrows a qualified name.
fn found_qualified(ours: &[ScopedDefinition], name: &str, line: usize) -> bool {
    let parts = segments(name);
    let Some((last, qualifier)) = parts.split_last() else {
        return false;
    };
    !qualifier.is_empty()
        && ours.iter().any(|def| {
            def.line == line && def.name == *last && segments(&def.scope).ends_with(qualifier)
        })
}

/// Whether a unit's options make ctags print something other than a tags file.
fn other_output(args: &str) -> bool {
    args.lines().any(|a| {
        let a = a.trim();
        a == "-x" || a == "-e" || a.starts_with("--output-format") || a.starts_with("--_xformat")
    })
}

/// Measures one language over its units.
fn measure(units: &Path, suite: &Suite) -> Measured {
    let kinds = default_kinds(suite.ctags_language);
    let mut measured = Measured::default();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(units.join(suite.dir))
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.sort();
    let mut definitions = Definitions::new();
    for dir in dirs {
        let unit = dir
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        if unit.ends_with(".b") || !dir.is_dir() {
            continue;
        }
        let args = std::fs::read_to_string(dir.join("args.ctags")).unwrap_or_default();
        let Ok(tags) = std::fs::read_to_string(dir.join("expected.tags")) else {
            continue;
        };
        if other_output(&args) {
            measured.skipped_units.push(unit);
            continue;
        }
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        inputs.retain(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("input"))
                && p.extension()
                    .is_some_and(|e| suite.inputs.contains(&e.to_string_lossy().as_ref()))
        });
        inputs.sort();
        if inputs.is_empty() {
            measured.skipped_units.push(unit);
            continue;
        }
        measured.units += 1;
        for input in inputs {
            let Ok(bytes) = std::fs::read(&input) else {
                continue;
            };
            let name = input
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned());
            let source = String::from_utf8_lossy(&bytes);
            let expected = expected_tags(&unit, &tags, &name, &source, &kinds);
            let scoped = definitions
                .of_scoped(&format!("input.{}", suite.read_as), None, &bytes)
                .unwrap_or_default();
            let ours: HashSet<(String, usize)> = scoped
                .iter()
                .map(|def| (lookup_key(&def.name), def.line))
                .collect();
            for tag in expected {
                let found = std::iter::once(&tag.line).chain(&tag.later).any(|&line| {
                    ours.contains(&(lookup_key(&tag.name), line))
                        || found_qualified(&scoped, &tag.name, line)
                });
                measured.expected += 1;
                let entry = measured.kinds.entry(tag.kind.clone()).or_default();
                entry.0 += 1;
                if found {
                    measured.found += 1;
                    entry.1 += 1;
                } else {
                    measured.misses.push(tag);
                }
            }
        }
    }
    measured
}

/// The share found, in percent.
fn percent(found: usize, of: usize) -> f64 {
    if of == 0 {
        return 100.0;
    }
    found as f64 * 100.0 / of as f64
}

/// Prints the language's line, its kinds and up to `$METRON_SHOW_MISSES` misses.
fn report(language: &str, m: &Measured) {
    eprintln!(
        "{language}: {}/{} ctags unit tags found ({:.1}%) in {} units; {} units skipped{}",
        m.found,
        m.expected,
        percent(m.found, m.expected),
        m.units,
        m.skipped_units.len(),
        if m.skipped_units.is_empty() {
            String::new()
        } else {
            format!(
                " (not a tags file or no input: {})",
                m.skipped_units.join(", ")
            )
        }
    );
    for (kind, (expected, found)) in &m.kinds {
        eprintln!("  {kind:<12} {found:>5}/{expected:<5}");
    }
    let show: usize = std::env::var("METRON_SHOW_MISSES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    for miss in m.misses.iter().take(show) {
        eprintln!(
            "  missed {} [{}] {}:{}",
            miss.name, miss.kind, miss.unit, miss.line
        );
    }
}

/// Measures `suite`, prints it, and asserts at least `floor` percent found.
fn check(test: &str, language: &str, suite: &Suite, floor: f64) {
    let Some(units) = units_dir(test) else {
        return;
    };
    if !ctags_available() {
        return skip(
            test,
            "Universal Ctags is not installed (its kind table is read)",
        );
    }
    let measured = measure(&units, suite);
    report(language, &measured);
    assert!(
        measured.expected > 0,
        "no {language} unit tags were read from {}",
        units.join(suite.dir).display()
    );
    let share = percent(measured.found, measured.expected);
    assert!(
        share >= floor,
        "{language}: {share:.1}% of ctags' unit tags found, under the floor of {floor}%; run with METRON_SHOW_MISSES=50 -- --nocapture to see the misses"
    );
}

macro_rules! units {
    ($($test:ident, $feature:literal, $language:literal, $dir:literal, $ctags:literal, [$($ext:literal),+], $read_as:literal, $floor:literal;)+) => {$(
        #[cfg(feature = $feature)]
        #[test]
        fn $test() {
            check(
                stringify!($test),
                $language,
                &Suite {
                    dir: $dir,
                    ctags_language: $ctags,
                    inputs: &[$($ext),+],
                    read_as: $read_as,
                },
                $floor,
            );
        }
    )+};
}

// The floors are the share measured when the harness landed, rounded down: a change
// that loses a definition fails here. Raise a floor when a language improves.
units! {
    python_units, "lang-python", "Python", "parser-python.r", "Python", ["py"], "py", 98.9;
    javascript_units, "lang-javascript", "JavaScript", "parser-javascript.r", "JavaScript", ["js", "jsx"], "js", 98.0;
    typescript_units, "lang-typescript", "TypeScript", "parser-typescript.r", "TypeScript", ["ts"], "ts", 99.1;
    java_units, "lang-java", "Java", "parser-java.r", "Java", ["java"], "java", 100.0;
    c_units, "lang-c", "C", "parser-c.r", "C", ["c", "h"], "c", 98.3;
    cpp_units, "lang-cpp", "C++", "parser-cxx.r", "C++", ["cpp", "cc", "cxx", "h", "hpp", "hh"], "cpp", 98.0;
    csharp_units, "lang-csharp", "C#", "csharp-review-needed.r", "C#", ["cs"], "cs", 99.6;
    ruby_units, "lang-ruby", "Ruby", "parser-ruby.r", "Ruby", ["rb"], "rb", 100.0;
    php_units, "lang-php", "PHP", "parser-php.r", "PHP", ["php"], "php", 98.6;
    go_units, "lang-go", "Go", "parser-go.r", "Go", ["go"], "go", 99.4;
    rust_units, "lang-rust", "Rust", "parser-rust.r", "Rust", ["rs"], "rs", 100.0;
}

#[test]
fn a_search_pattern_finds_its_line() {
    let source = "int a;\nint main(void) {\n\treturn a/2;\n}\n";
    assert_eq!(pattern_lines("/^int main(void) {$/", source), [2]);
    assert_eq!(pattern_lines("/^\treturn a\\/2;$/", source), [3]);
    assert_eq!(pattern_lines("/^int b;$/", source), [0usize; 0]);
}

#[test]
fn a_search_pattern_matching_several_lines_keeps_them_all() {
    let kinds: HashSet<String> = ["d"].map(str::to_owned).into();
    let source = "#ifdef A\n#define X 1\n#else\n#define X 1\n#endif\n";
    let tags = "X\tinput.c\t/^#define X 1$/;\"\td\n";
    let got: Vec<(usize, Vec<usize>)> = expected_tags("u", tags, "input.c", source, &kinds)
        .into_iter()
        .map(|t| (t.line, t.later))
        .collect();
    assert_eq!(got, [(2, vec![4])]);
}

#[test]
fn only_default_definition_kinds_count_and_qualified_copies_do_not() {
    let kinds: HashSet<String> = ["f", "c", "function", "class"].map(str::to_owned).into();
    let source = "class A:\n    def f(self): pass\n";
    let tags = "!_TAG_FILE_FORMAT\t2\t/extended format/\n\
                A\tinput.py\t/^class A:$/;\"\tc\n\
                f\tinput.py\t/^    def f(self): pass$/;\"\tkind:function\tline:2\n\
                A.f\tinput.py\t/^    def f(self): pass$/;\"\tf\n\
                os\tinput.py\t/^import os$/;\"\tmodule\n\
                g\tinput.py\t2;\"\tf\troles:ref\n\
                h\tinput.py\t2;\"\tf\n";
    let got: Vec<(String, usize)> = expected_tags("u", tags, "input.py", source, &kinds)
        .into_iter()
        .map(|t| (t.name, t.line))
        .collect();
    assert_eq!(
        got,
        [
            ("A".to_owned(), 1),
            ("f".to_owned(), 2),
            ("h".to_owned(), 2)
        ]
    );
}

#[test]
fn escaped_names_are_read_and_invented_names_left_out() {
    let kinds: HashSet<String> = ["n", "c", "f"].map(str::to_owned).into();
    let source = "<?php\nnamespace A\\B;\nclass C {}\n$o = new class {};\n";
    let tags = "A\\\\B\tinput.php\t/^namespace A\\\\B;$/;\"\tn\n\
                C\tinput.php\t/^class C {}$/;\"\tc\n\
                A\\\\B\\\\C\tinput.php\t/^class C {}$/;\"\tc\n\
                AnonymousClass0a1b2c3d0100\tinput.php\t/^$o = new class {};$/;\"\tc\n";
    let got: Vec<(String, usize)> = expected_tags("u", tags, "input.php", source, &kinds)
        .into_iter()
        .map(|t| (t.name, t.line))
        .collect();
    assert_eq!(got, [("A\\B".to_owned(), 2), ("C".to_owned(), 3)]);
}
