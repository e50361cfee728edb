//! Java through find_symbol: one of every default ctags kind, the scopes shown (nested,
//! enum and record members), what ctags leaves out (anonymous classes, lambdas), and
//! qualified lookups through the dotted package.

use crate::suite::symbols::Fixture;

pub(super) const APP_JAVA: &str = r#"package com.example.app;

import java.util.List;

@interface Marker {
    String value() default "";
    int LIMIT = 3;
}

public class Greeter<T> implements Runnable {
    private int count, other = 2;
    static final String NAME = "x";
    public Greeter() {}
    public void run() {
        Runnable anon = new Runnable() {
            public void hidden() {}
        };
        Runnable lambda = () -> {};
        class Local { void inLocal() {} }
    }
    static class Inner {
        void greet() {}
        enum Color { RED, GREEN { void shade() {} }; int hue; Color() {} void paint() {} }
    }
    interface Shape { default double area() { return 0; } double perimeter(); }
    record Point(int x, int y) {
        Point { }
        static int origin() { return 0; }
    }
}
enum Top { A, B }
"#;

pub(super) const OTHER_JAVA: &str = r#"package org.other;

class Greeter {
    void greet() {}
    void run() {}
}
"#;

fn fixture() -> Fixture {
    Fixture::new(&[
        ("src/com/example/app/Greeter.java", APP_JAVA),
        ("src/org/other/Greeter.java", OTHER_JAVA),
        ("src/tools/Main.java", "package tools;\n\nclass Main {}\n"),
    ])
}

const APP: &str = "src/com/example/app/Greeter.java";

#[test]
fn every_java_kind() {
    let f = fixture();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("Marker", vec![format!("Marker [annotation] -> {APP}:5")]),
        ("value", vec![format!("value [method] Marker -> {APP}:6")]),
        ("LIMIT", vec![format!("LIMIT [field] Marker -> {APP}:7")]),
        (
            "Greeter",
            vec![
                format!("Greeter [class] -> {APP}:10"),
                format!("Greeter [method] Greeter -> {APP}:13"),
                "Greeter [class] -> src/org/other/Greeter.java:3".to_owned(),
            ],
        ),
        ("count", vec![format!("count [field] Greeter -> {APP}:11")]),
        ("other", vec![format!("other [field] Greeter -> {APP}:11")]),
        ("NAME", vec![format!("NAME [field] Greeter -> {APP}:12")]),
        ("Inner", vec![format!("Inner [class] Greeter -> {APP}:21")]),
        (
            "Color",
            vec![
                format!("Color [enum] Greeter.Inner -> {APP}:23"),
                format!("Color [method] Greeter.Inner.Color -> {APP}:23"),
            ],
        ),
        (
            "RED",
            vec![format!(
                "RED [enumConstant] Greeter.Inner.Color -> {APP}:23"
            )],
        ),
        (
            "GREEN",
            vec![format!(
                "GREEN [enumConstant] Greeter.Inner.Color -> {APP}:23"
            )],
        ),
        (
            "hue",
            vec![format!("hue [field] Greeter.Inner.Color -> {APP}:23")],
        ),
        (
            "paint",
            vec![format!("paint [method] Greeter.Inner.Color -> {APP}:23")],
        ),
        (
            "Shape",
            vec![format!("Shape [interface] Greeter -> {APP}:25")],
        ),
        (
            "area",
            vec![format!("area [method] Greeter.Shape -> {APP}:25")],
        ),
        (
            "perimeter",
            vec![format!("perimeter [method] Greeter.Shape -> {APP}:25")],
        ),
        // A record is a class; its compact constructor a method, like a constructor.
        (
            "Point",
            vec![
                format!("Point [class] Greeter -> {APP}:26"),
                format!("Point [method] Greeter.Point -> {APP}:27"),
            ],
        ),
        (
            "origin",
            vec![format!("origin [method] Greeter.Point -> {APP}:28")],
        ),
        ("Top", vec![format!("Top [enum] -> {APP}:31")]),
        ("A", vec![format!("A [enumConstant] Top -> {APP}:31")]),
        // Local classes are tagged (ctags skips them), scoped by the enclosing type.
        ("Local", vec![format!("Local [class] Greeter -> {APP}:19")]),
        (
            "inLocal",
            vec![format!("inLocal [method] Greeter.Local -> {APP}:19")],
        ),
    ];
    for (name, expected) in &cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
    // A package is a definition under its whole name, as ctags names it; a dotted
    // one (`com.example.app`) cannot be asked for, since a dotted query is a
    // qualified name, but it narrows qualified lookups (below).
    assert_eq!(
        f.lines("tools"),
        ["tools [package] -> src/tools/Main.java:1"]
    );
}

#[test]
fn what_ctags_leaves_out_is_not_a_definition() {
    let f = fixture();
    // Methods of anonymous classes and of enum constant bodies, locals and lambdas,
    // parameters, imports.
    for name in ["hidden", "shade", "anon", "lambda", "x", "List"] {
        let lines = f.lines(name);
        assert_eq!(lines.len(), 1, "{name}: {lines:?}");
        assert!(lines[0].starts_with("No definition"), "{name}: {lines:?}");
    }
}

#[test]
fn java_methods_show_their_class() {
    let f = fixture();
    assert_eq!(
        f.lines("greet"),
        [
            format!("greet [method] Greeter.Inner -> {APP}:22"),
            "greet [method] Greeter -> src/org/other/Greeter.java:4".to_owned(),
        ]
    );
    assert_eq!(
        f.lines("run"),
        [
            format!("run [method] Greeter -> {APP}:14"),
            "run [method] Greeter -> src/org/other/Greeter.java:5".to_owned(),
        ]
    );
}

#[test]
fn java_qualified_names_narrow_by_class_and_package() {
    let f = fixture();
    let inner = [format!("greet [method] Greeter.Inner -> {APP}:22")];
    for query in [
        "Inner.greet",
        "Greeter.Inner.greet",
        "app.Greeter.Inner.greet",
        "com.example.app.Greeter.Inner.greet",
    ] {
        assert_eq!(f.lines(query), inner, "{query}");
    }
    let other_run = ["run [method] Greeter -> src/org/other/Greeter.java:5"];
    for query in ["other.Greeter.run", "org.other.Greeter.run"] {
        assert_eq!(f.lines(query), other_run, "{query}");
    }
    assert_eq!(
        f.lines("Greeter.Point.origin"),
        [format!("origin [method] Greeter.Point -> {APP}:28")]
    );
    assert_eq!(
        f.lines("Color.RED"),
        [format!(
            "RED [enumConstant] Greeter.Inner.Color -> {APP}:23"
        )]
    );
    // A top-level type is in its package's scope.
    assert_eq!(
        f.lines("example.app.Top"),
        [format!("Top [enum] -> {APP}:31")]
    );
    assert_eq!(
        f.lines("com.Greeter.run"),
        [
            "No definition of `run` found in scope `com.Greeter`; `run` alone has 2 definitions: ask for `run`."
        ]
    );
}

/// A file cut off in the middle of a class, as it is while being written, parses as
/// an error; the class it opens is still found, as ctags finds it.
#[test]
fn java_class_of_a_file_cut_short() {
    let f = Fixture::new(&[("src/Draft.java", "class Draft {\n  void start")]);
    assert_eq!(f.lines("Draft"), ["Draft [class] -> src/Draft.java:1"]);
    assert!(f.lines("start")[0].starts_with("No definition of"));
}
