//! Python through find_symbol: one of every default ctags kind, scopes of methods,
//! nested classes and nested functions, and qualified lookups.

use crate::suite::symbols::Fixture;

/// One of every kind ctags emits for Python by default (class, function, member,
/// variable, namespace, unknown), with nesting. Line numbers matter.
pub(super) const APP_PY: &str = "\
import os.path as osp
from collections import OrderedDict as OD
import sys

LIMIT = 10
WIDTH, HEIGHT = 80, 24
shout = lambda s: s.upper()

class Greeter:
    greeting: str = \"hi\"

    def __init__(self, name):
        self.name = name

    @property
    def greet(self):
        local = 1
        def helper():
            pass
        return helper

    class Inner:
        depth = 2

        def greet(self):
            pass

def main():
    count = 0
    class Local:
        pass
    return count

if __name__ == \"__main__\":
    RUNNING = True
";

#[test]
fn every_python_kind() {
    let f = Fixture::new(&[("app.py", APP_PY)]);
    let cases: &[(&str, &[&str])] = &[
        ("osp", &["osp [namespace] -> app.py:1"]),
        ("OD", &["OD [unknown] -> app.py:2"]),
        ("LIMIT", &["LIMIT [variable] -> app.py:5"]),
        ("WIDTH", &["WIDTH [variable] -> app.py:6"]),
        ("HEIGHT", &["HEIGHT [variable] -> app.py:6"]),
        ("shout", &["shout [function] -> app.py:7"]),
        ("Greeter", &["Greeter [class] -> app.py:9"]),
        ("greeting", &["greeting [variable] Greeter -> app.py:10"]),
        ("__init__", &["__init__ [member] Greeter -> app.py:12"]),
        (
            "greet",
            &[
                "greet [member] Greeter -> app.py:16",
                "greet [member] Greeter.Inner -> app.py:25",
            ],
        ),
        ("helper", &["helper [function] Greeter.greet -> app.py:18"]),
        ("Inner", &["Inner [class] Greeter -> app.py:22"]),
        ("depth", &["depth [variable] Greeter.Inner -> app.py:23"]),
        ("main", &["main [function] -> app.py:28"]),
        ("Local", &["Local [class] main -> app.py:30"]),
        ("RUNNING", &["RUNNING [variable] -> app.py:35"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
    // Plain imports, attributes set through `self`, function locals and bare
    // annotations are not definitions, as in ctags.
    for name in ["sys", "os", "name", "local", "count", "OrderedDict"] {
        let lines = f.lines(name);
        assert!(
            lines.len() == 1 && lines[0].starts_with("No definition of"),
            "find_symbol({name}): {lines:?}"
        );
    }
}

#[test]
fn qualified_python_names_narrow_the_answer() {
    let f = Fixture::new(&[("app.py", APP_PY)]);
    assert_eq!(
        f.lines("Greeter.greet"),
        ["greet [member] Greeter -> app.py:16"]
    );
    let inner = ["greet [member] Greeter.Inner -> app.py:25"];
    for query in ["Greeter.Inner.greet", "Inner.greet", "Inner::greet"] {
        assert_eq!(f.lines(query), inner, "{query}");
    }
    assert_eq!(
        f.lines("greet.helper"),
        ["helper [function] Greeter.greet -> app.py:18"]
    );
    assert_eq!(f.lines("greet").len(), 2);
}
