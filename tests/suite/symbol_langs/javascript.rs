//! JavaScript (and JSX) through find_symbol: every default ctags kind, scopes and
//! qualified lookups.

use crate::suite::symbols::Fixture;

/// One of every default ctags JavaScript kind, a nested class, an object literal used as
/// a class (ctags' reading), a prototype method and a JSX component.
pub(super) const APP_JS: &str = "\
export const LIMIT = 10;
let counter = 0;

export class Greeter {
  static count = 0;
  #secret = 1;
  constructor(name) { this.name = name; }
  greet() { return 'hi ' + this.name; }
  get size() { return 1; }
  set size(value) {}
  *ids() { yield 1; }
}

function helper() {
  function inner() {}
  return inner;
}

function* sequence() {}

const Shapes = {
  circle: 1,
  area() { return 0; },
};

Greeter.prototype.wave = function () {};
";

pub(super) const VIEW_JSX: &str = "\
export function Badge({ label }) {
  return <span className=\"badge\">{label}</span>;
}

export class Panel extends Component {
  greet() { return <div />; }
}
";

#[test]
fn every_javascript_kind_is_found() {
    let f = Fixture::new(&[("app.js", APP_JS), ("ui/view.jsx", VIEW_JSX)]);
    let cases: &[(&str, &[&str])] = &[
        ("LIMIT", &["LIMIT [constant] -> app.js:1"]),
        ("counter", &["counter [variable] -> app.js:2"]),
        ("Greeter", &["Greeter [class] -> app.js:4"]),
        ("count", &["count [field] Greeter -> app.js:5"]),
        ("secret", &["secret [field] Greeter -> app.js:6"]),
        ("constructor", &["constructor [method] Greeter -> app.js:7"]),
        (
            "size",
            &[
                "size [getter] Greeter -> app.js:9",
                "size [setter] Greeter -> app.js:10",
            ],
        ),
        ("ids", &["ids [generator] Greeter -> app.js:11"]),
        ("helper", &["helper [function] -> app.js:14"]),
        ("inner", &["inner [function] helper -> app.js:15"]),
        ("sequence", &["sequence [generator] -> app.js:19"]),
        ("Shapes", &["Shapes [constant] -> app.js:21"]),
        ("circle", &["circle [property] Shapes -> app.js:22"]),
        ("area", &["area [method] Shapes -> app.js:23"]),
        ("wave", &["wave [method] Greeter -> app.js:26"]),
        ("Badge", &["Badge [function] -> ui/view.jsx:1"]),
        ("Panel", &["Panel [class] -> ui/view.jsx:5"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
    // `this.name = name` assigns a field; it is not a definition, as for ctags.
    assert!(f.lines("name").iter().all(|l| !l.contains("app.js:7")));
}

#[test]
fn javascript_methods_show_their_class_and_qualified_names_narrow() {
    let f = Fixture::new(&[("app.js", APP_JS), ("ui/view.jsx", VIEW_JSX)]);
    assert_eq!(
        f.lines("greet"),
        [
            "greet [method] Greeter -> app.js:8",
            "greet [method] Panel -> ui/view.jsx:6",
        ]
    );
    assert_eq!(
        f.lines("Greeter.greet"),
        ["greet [method] Greeter -> app.js:8"]
    );
    assert_eq!(
        f.lines("Panel.greet"),
        ["greet [method] Panel -> ui/view.jsx:6"]
    );
    assert_eq!(
        f.lines("Shapes.area"),
        ["area [method] Shapes -> app.js:23"]
    );
    assert_eq!(
        f.lines("helper.inner"),
        ["inner [function] helper -> app.js:15"]
    );
}

#[test]
fn names_with_a_dollar_sign_are_names_to_ask_for() {
    let f = Fixture::new(&[(
        "src/stream.js",
        "export const destroy$ = makeSubject();\nfunction $(selector) { return selector; }\nclass $Store { $get() {} }\n",
    )]);
    assert_eq!(
        f.lines("destroy$"),
        ["destroy$ [constant] -> src/stream.js:1"]
    );
    assert_eq!(f.lines("$"), ["$ [function] -> src/stream.js:2"]);
    assert_eq!(
        f.lines("$Store.$get"),
        ["$get [method] $Store -> src/stream.js:3"]
    );
}
