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

#[test]
fn a_named_generator_expression_is_a_generator() {
    let f = Fixture::new(&[(
        "gen.js",
        "var counter = function* count() {\n  yield 1;\n};\n",
    )]);
    assert_eq!(f.lines("count"), ["count [generator] counter -> gen.js:1"]);
}

#[test]
fn a_var_in_a_top_level_block_is_a_global() {
    let f = Fixture::new(&[(
        "setup.js",
        "if (typeof window !== 'undefined') {\n  var host = window;\n} else {\n  var host2 = global;\n}\nfunction f() {\n  if (true) {\n    var local = 1;\n  }\n}\n",
    )]);
    assert_eq!(f.lines("host"), ["host [variable] -> setup.js:2"]);
    assert_eq!(f.lines("host2"), ["host2 [variable] -> setup.js:4"]);
    let local = f.lines("local");
    assert!(local[0].starts_with("No definition"), "{local:?}");
}

#[test]
fn keys_of_a_parenthesised_object_are_properties() {
    let f = Fixture::new(&[("opts.js", "var defaults = ({ depth: 3 });\n")]);
    assert_eq!(f.lines("depth"), ["depth [property] defaults -> opts.js:1"]);
}

#[test]
fn an_object_assigned_to_a_prototype_makes_a_class() {
    let f = Fixture::new(&[(
        "shape.js",
        "function Shape() {}\nShape.prototype = {\n  area: function () { return 0; },\n};\n",
    )]);
    assert_eq!(
        f.lines("Shape"),
        [
            "Shape [function] -> shape.js:1",
            "Shape [class] -> shape.js:2"
        ]
    );
}

#[test]
fn the_methods_of_a_ui5_controller_are_found() {
    let f = Fixture::new(&[(
        "Main.controller.js",
        "sap.ui.controller(\"shop.Main\", {\n  onInit: function () {},\n});\nother.call(\"x\", {\n  skipped: function () {},\n});\n",
    )]);
    assert_eq!(f.lines("onInit").len(), 1, "{:?}", f.lines("onInit"));
    let skipped = f.lines("skipped");
    assert!(skipped[0].starts_with("No definition"), "{skipped:?}");
}

#[test]
fn names_spelled_with_unicode_escapes_are_found_decoded() {
    let f = Fixture::new(&[(
        "escaped.js",
        "function caf\\u00e9() {}\nvar table = {\n  'na\\u{ef}ve': function () {},\n};\n",
    )]);
    assert_eq!(f.lines("café"), ["café [function] -> escaped.js:1"]);
    assert_eq!(f.lines("naïve"), ["naïve [method] table -> escaped.js:3"]);
}

#[test]
fn a_prototype_member_assigned_inside_a_function_is_a_method() {
    let f = Fixture::new(&[(
        "widget.js",
        "function Widget() {\n  Widget.prototype.isWidget = true;\n  Widget.prototype.render = this.draw;\n}\nfunction g() {\n  a.b.notMethod = 1;\n}\n",
    )]);
    assert_eq!(f.lines("isWidget").len(), 1, "{:?}", f.lines("isWidget"));
    assert!(f.lines("isWidget")[0].contains("[method]"));
    assert!(f.lines("render")[0].contains("[method]"));
    let other = f.lines("notMethod");
    assert!(other[0].starts_with("No definition"), "{other:?}");
}

#[test]
fn a_declaration_after_an_unterminated_string_is_found() {
    // The strings on lines 1 and 3 are left open, as while they are typed: the declarations on the
    // next lines are still definitions, by their own keyword. Tree-sitter nests each in
    // the value of the declaration whose string is open, so that one is its scope.
    let f = Fixture::new(&[(
        "typing.js",
        "var greeting = \"hello\nvar retries = 3\nlet open = \"x\nconst depth = 2;\nfunction f() {\n  var u = \"x\n  var local = 1;\n}\n",
    )]);
    assert_eq!(
        f.lines("retries"),
        ["retries [variable] greeting -> typing.js:2"]
    );
    assert_eq!(f.lines("depth"), ["depth [constant] open -> typing.js:4"]);
    assert_eq!(f.lines("greeting"), ["greeting [variable] -> typing.js:1"]);
    // A function's locals are not definitions, open string or not.
    let local = f.lines("local");
    assert!(local[0].starts_with("No definition"), "{local:?}");
}
