//! find_symbol per language, through the model's path (the `find_symbol` tool call): one
//! module per language with a fixture holding one of every default Universal Ctags kind,
//! the scope each answer shows, and qualified lookups. Go's and Rust's fixtures are in `symbols.rs`.

#[cfg(feature = "lang-bash")]
mod bash;
#[cfg(feature = "lang-c")]
mod c;
#[cfg(feature = "lang-cpp")]
mod cpp;
#[cfg(feature = "lang-csharp")]
mod csharp;
#[cfg(feature = "lang-go")]
mod go;
#[cfg(feature = "lang-java")]
mod java;
#[cfg(feature = "lang-javascript")]
mod javascript;
#[cfg(feature = "lang-kotlin")]
mod kotlin;
#[cfg(feature = "lang-php")]
mod php;
#[cfg(feature = "lang-python")]
mod python;
#[cfg(feature = "lang-ruby")]
mod ruby;
#[cfg(feature = "lang-typescript")]
mod typescript;

use std::collections::BTreeSet;

use metron::testing::Definitions;

use crate::suite::symbols::Fixture;

/// Every fixture of these tests and of `symbols.rs`: (path, language as find_symbol names
/// it, source). Together they hold one of every kind of every language.
fn fixtures() -> Vec<(&'static str, &'static str, &'static str)> {
    #[allow(unused_mut, reason = "empty when no grammar is compiled in")]
    let mut all = Vec::new();
    #[cfg(feature = "lang-go")]
    all.extend([
        ("greet.go", "Go", crate::suite::symbols::GO_EVERY_KIND),
        ("gin/context.go", "Go", crate::suite::symbols::GIN_GO),
    ]);
    #[cfg(feature = "lang-rust")]
    all.extend([
        ("src/lib.rs", "Rust", crate::suite::symbols::LIB_RS),
        ("src/parse.rs", "Rust", crate::suite::symbols::PARSE_RS),
    ]);
    #[cfg(feature = "lang-bash")]
    all.push(("sh/lib.sh", "Shell", bash::LIB_SH));
    #[cfg(feature = "lang-c")]
    all.push(("c/point.c", "C", c::POINT_C));
    #[cfg(feature = "lang-cpp")]
    all.extend([
        ("cpp/stack.hpp", "C++", cpp::STACK_HPP),
        ("cpp/stack.cpp", "C++", cpp::STACK_CPP),
    ]);
    #[cfg(feature = "lang-csharp")]
    all.extend([
        ("cs/App.cs", "C#", csharp::APP_CS),
        ("cs/Tools.cs", "C#", csharp::TOOLS_CS),
    ]);
    #[cfg(feature = "lang-java")]
    all.extend([
        ("java/app/Greeter.java", "Java", java::APP_JAVA),
        ("java/other/Greeter.java", "Java", java::OTHER_JAVA),
    ]);
    #[cfg(feature = "lang-javascript")]
    all.extend([
        ("js/app.js", "JavaScript", javascript::APP_JS),
        ("js/view.jsx", "JavaScript", javascript::VIEW_JSX),
    ]);
    #[cfg(feature = "lang-kotlin")]
    all.push(("kt/Shapes.kt", "Kotlin", kotlin::SHAPES_KT));
    #[cfg(feature = "lang-php")]
    all.push(("php/app.php", "PHP", php::APP_PHP));
    #[cfg(feature = "lang-python")]
    all.push(("py/app.py", "Python", python::APP_PY));
    #[cfg(feature = "lang-ruby")]
    all.push(("rb/app.rb", "Ruby", ruby::APP_RB));
    #[cfg(feature = "lang-typescript")]
    all.extend([
        ("ts/store.ts", "TypeScript", typescript::STORE_TS),
        ("ts/view.tsx", "TSX", typescript::VIEW_TSX),
    ]);
    all
}

/// This crate's own files in a supported language (its sources, tests and benches).
fn repository_sources() -> Vec<(String, Vec<u8>)> {
    fn collect(dir: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                collect(&path, out);
            } else if metron::testing::symbol_file(&path.to_string_lossy())
                && let Ok(bytes) = std::fs::read(&path)
            {
                out.push((path.display().to_string(), bytes));
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for sub in ["src", "tests", "benches"] {
        collect(&root.join(sub), &mut out);
    }
    out
}

/// The one test a lookup uses to pass over a file (the prefilter: the name's identifier
/// is not in it) never passes over a file in which the grammar query finds a definition
/// of the name: checked on every fixture and on this crate's own sources.
#[test]
fn the_prefilter_never_rules_out_a_file_that_defines_the_name() {
    let mut extractor = Definitions::new();
    let mut checked = 0;
    let mut sources: Vec<(String, Option<&str>, Vec<u8>)> = fixtures()
        .into_iter()
        .map(|(path, lang, source)| (path.to_owned(), Some(lang), source.as_bytes().to_vec()))
        .collect();
    sources.extend(
        repository_sources()
            .into_iter()
            .map(|(path, bytes)| (path, None, bytes)),
    );
    for (path, lang, bytes) in &sources {
        let Some(defs) = extractor.of_scoped(path, *lang, bytes) else {
            panic!("{path}: no grammar");
        };
        let dropped = metron::testing::prefilter_drops(bytes, defs.iter().map(|d| d.name.as_str()));
        for def in defs {
            checked += 1;
            assert!(
                !dropped.contains(&def.name),
                "{path}:{}: the prefilter rules out `{}`",
                def.line,
                def.name
            );
        }
    }
    assert!(checked > 1000, "only {checked} definitions checked");
}

/// On the fixtures, every name the grammar queries define is found by find_symbol at
/// exactly the places the queries give, through the model's path: the index passes
/// over nothing it should parse.
#[test]
fn lookups_find_exactly_what_the_grammar_queries_find_in_every_fixture() {
    let fixtures = fixtures();
    let files: Vec<(&str, &str)> = fixtures
        .iter()
        .map(|(path, _, source)| (*path, *source))
        .collect();
    let f = Fixture::new(&files);
    let mut extractor = Definitions::new();
    let mut expected: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for (path, lang, source) in &fixtures {
        let Some(defs) = extractor.of_scoped(path, Some(lang), source.as_bytes()) else {
            panic!("{path}: no grammar");
        };
        for def in defs {
            expected
                .entry(def.name)
                .or_default()
                .insert(format!("{path}:{}", def.line));
        }
    }
    for (name, places) in &expected {
        // C++ operators are stored as written (`operator ==`), and a dotted namespace
        // (C#'s `Company.App`) reads as a qualified name; their lookups are covered in
        // the languages' own tests.
        if name.contains(char::is_whitespace)
            || name.starts_with("operator")
            || name.contains(['.', ':'])
        {
            continue;
        }
        let lines = f.lines(name);
        if lines.len() == 1 && lines[0].contains("is not an identifier") {
            // A PHP namespace (`App\Models`) is a definition no lookup can name.
            continue;
        }
        let found: BTreeSet<String> = lines
            .iter()
            .filter_map(|line| line.rsplit_once(" -> ").map(|(_, place)| place.to_owned()))
            .collect();
        if lines.iter().any(|line| line.starts_with("[truncated")) {
            assert!(found.is_subset(places), "find_symbol({name}): {lines:?}");
        } else {
            assert_eq!(&found, places, "find_symbol({name}): {lines:?}");
        }
    }
}
