//! C# through find_symbol: one of every default ctags kind, the scopes shown (which,
//! as ctags prints them, start with the namespace), what ctags leaves out (local
//! functions, operators, indexers), and qualified lookups, also through a file-scoped
//! namespace.

use crate::suite::symbols::{Fixture, not_found};

pub(super) const APP_CS: &str = r#"#define TRACE_APP
using System;
using Text = System.Text;

namespace Company.App
{
    public delegate void Handler(int x);

    public interface IGreeter
    {
        void Greet();
        string Name { get; }
        event Handler Changed;
    }

    public class Greeter : IGreeter
    {
        private int count, other = 2;
        public const string NAME = "x";
        public event Handler Changed;
        public event Handler Custom { add {} remove {} }
        public string Name { get; set; }
        public int this[int i] => i;
        public Greeter() {}
        ~Greeter() {}
        public void Greet() { void LocalFn() {} var anon = new { A = 1 }; }
        public static Greeter operator +(Greeter a, Greeter b) => a;
        public class Inner { void Deep() {} }
        enum Color { Red, Green = 2 }
    }

    struct Point { public int X; public Point(int x) { X = x; } }
    record Rec(int A, int B) { public int Sum() => A + B; }
    namespace Nested { class Leaf { void Greet() {} } }
}
"#;

pub(super) const TOOLS_CS: &str = r#"namespace Tools.Cli;

class Greeter
{
    void Greet() {}
}
"#;

const APP: &str = "src/App.cs";
const TOOLS: &str = "src/Tools.cs";

fn fixture() -> Fixture {
    Fixture::new(&[(APP, APP_CS), (TOOLS, TOOLS_CS)])
}

#[test]
fn every_csharp_kind() {
    let f = fixture();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("TRACE_APP", vec![format!("TRACE_APP [macro] -> {APP}:1")]),
        ("Text", vec![format!("Text [typedef] -> {APP}:3")]),
        (
            "Handler",
            vec![format!("Handler [method] Company.App -> {APP}:7")],
        ),
        (
            "IGreeter",
            vec![format!("IGreeter [interface] Company.App -> {APP}:9")],
        ),
        (
            "Name",
            vec![
                format!("Name [property] Company.App.IGreeter -> {APP}:12"),
                format!("Name [property] Company.App.Greeter -> {APP}:22"),
            ],
        ),
        (
            "Changed",
            vec![
                format!("Changed [event] Company.App.IGreeter -> {APP}:13"),
                format!("Changed [event] Company.App.Greeter -> {APP}:20"),
            ],
        ),
        (
            "Custom",
            vec![format!("Custom [event] Company.App.Greeter -> {APP}:21")],
        ),
        (
            "Greeter",
            vec![
                format!("Greeter [class] Company.App -> {APP}:16"),
                format!("Greeter [method] Company.App.Greeter -> {APP}:24"),
                // A destructor is named by its class (ctags: `~Greeter`).
                format!("Greeter [method] Company.App.Greeter -> {APP}:25"),
                format!("Greeter [class] -> {TOOLS}:3"),
            ],
        ),
        (
            "count",
            vec![format!("count [field] Company.App.Greeter -> {APP}:18")],
        ),
        (
            "other",
            vec![format!("other [field] Company.App.Greeter -> {APP}:18")],
        ),
        (
            "NAME",
            vec![format!("NAME [field] Company.App.Greeter -> {APP}:19")],
        ),
        (
            "Inner",
            vec![format!("Inner [class] Company.App.Greeter -> {APP}:28")],
        ),
        (
            "Deep",
            vec![format!(
                "Deep [method] Company.App.Greeter.Inner -> {APP}:28"
            )],
        ),
        (
            "Color",
            vec![format!("Color [enum] Company.App.Greeter -> {APP}:29")],
        ),
        (
            "Green",
            vec![format!(
                "Green [enumerator] Company.App.Greeter.Color -> {APP}:29"
            )],
        ),
        (
            "Point",
            vec![
                // One line: ordered by kind.
                format!("Point [method] Company.App.Point -> {APP}:32"),
                format!("Point [struct] Company.App -> {APP}:32"),
            ],
        ),
        (
            "X",
            vec![format!("X [field] Company.App.Point -> {APP}:32")],
        ),
        // A record is a class.
        ("Rec", vec![format!("Rec [class] Company.App -> {APP}:33")]),
        (
            "Sum",
            vec![format!("Sum [method] Company.App.Rec -> {APP}:33")],
        ),
        (
            "Nested",
            vec![format!("Nested [namespace] Company.App -> {APP}:34")],
        ),
        (
            "Leaf",
            vec![format!("Leaf [class] Company.App.Nested -> {APP}:34")],
        ),
    ];
    for (name, expected) in &cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
}

#[test]
fn what_ctags_leaves_out_is_not_a_definition() {
    let f = fixture();
    // Local functions and variables, parameters, anonymous type members; an operator
    // and an indexer have no name to ask for.
    for name in ["LocalFn", "anon", "A", "i", "a"] {
        assert_eq!(f.lines(name), [not_found(name, "C#")], "{name}");
    }
    // The parameter `x` is no definition; the field `X` is, and the miss names it.
    assert_eq!(
        f.lines("x"),
        [format!(
            "{} Defined with other capitals: `X` (1 definition); ask for the exact name.",
            not_found("x", "C#")
        )]
    );
}

#[test]
fn csharp_methods_show_their_namespace_and_class() {
    let f = fixture();
    assert_eq!(
        f.lines("Greet"),
        [
            format!("Greet [method] Company.App.IGreeter -> {APP}:11"),
            format!("Greet [method] Company.App.Greeter -> {APP}:26"),
            format!("Greet [method] Company.App.Nested.Leaf -> {APP}:34"),
            // A file-scoped namespace is not shown (it holds no node), as Go's package.
            format!("Greet [method] Greeter -> {TOOLS}:5"),
        ]
    );
}

#[test]
fn csharp_qualified_names_narrow_by_class_and_namespace() {
    let f = fixture();
    let app = [format!("Greet [method] Company.App.Greeter -> {APP}:26")];
    for query in [
        "App.Greeter.Greet",
        "Company.App.Greeter.Greet",
        "Company::App::Greeter::Greet",
    ] {
        assert_eq!(f.lines(query), app, "{query}");
    }
    let tools = [format!("Greet [method] Greeter -> {TOOLS}:5")];
    for query in ["Cli.Greeter.Greet", "Tools.Cli.Greeter.Greet"] {
        assert_eq!(f.lines(query), tools, "{query}");
    }
    assert_eq!(
        f.lines("Greeter.Greet").len(),
        2,
        "both Greeter classes, not IGreeter or Leaf"
    );
    assert_eq!(
        f.lines("Nested.Leaf.Greet"),
        [format!(
            "Greet [method] Company.App.Nested.Leaf -> {APP}:34"
        )]
    );
    assert_eq!(
        f.lines("Color.Red"),
        [format!(
            "Red [enumerator] Company.App.Greeter.Color -> {APP}:29"
        )]
    );
}

#[test]
fn only_a_file_scoped_namespace_is_the_files_namespace() {
    // A block namespace before another is not a scope of what follows it.
    let f = Fixture::new(&[(
        "Two.cs",
        "namespace A { class X { } }\nnamespace B {\n    class Y {\n        void M() { }\n    }\n}\n",
    )]);
    let m = ["M [method] B.Y -> Two.cs:4"];
    assert_eq!(f.lines("B.Y.M"), m);
    assert_eq!(f.lines("Y.M"), m);
    assert_eq!(f.lines("A.B.Y.M").len(), 1, "{:?}", f.lines("A.B.Y.M"));
    assert!(
        f.lines("A.B.Y.M")[0].starts_with("No definition of `M` found in scope"),
        "{:?}",
        f.lines("A.B.Y.M")
    );
}

/// A function at the top level of a program file (top-level statements) is a method,
/// as ctags tags it; a local function inside it is not.
#[test]
fn csharp_top_level_function_is_a_method() {
    let f = Fixture::new(&[(
        "Program.cs",
        "using System;\n\nConsole.WriteLine(Twice(2));\n\nstatic int Twice(int n)\n{\n    int Inner(int m) => m;\n    return Inner(n) * 2;\n}\n",
    )]);
    assert_eq!(f.lines("Twice"), ["Twice [method] -> Program.cs:5"]);
    assert!(f.lines("Inner")[0].starts_with("No definition of"));
}

/// A conversion operator is named by the type it converts to, `operator byte`, as ctags
/// names it, at the line of its keyword.
#[test]
fn csharp_conversion_operators_are_named_by_their_type() {
    let f = Fixture::new(&[(
        "Digit.cs",
        "struct Digit\n{\n    [Pure]\n    public static implicit operator byte(Digit d) => 0;\n    public static explicit operator Digit(byte b) => default;\n}\n",
    )]);
    assert_eq!(
        f.lines("operator byte"),
        ["operator byte [method] Digit -> Digit.cs:4"]
    );
    assert_eq!(
        f.lines("Digit.operator Digit"),
        ["operator Digit [method] Digit -> Digit.cs:5"]
    );
}
