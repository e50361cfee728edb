//! Ruby through find_symbol: one of every default ctags kind, scopes of methods in
//! nested modules and classes, and qualified lookups.

use metron::testing::Definitions;

use crate::suite::symbols::Fixture;

/// One of every kind ctags emits for Ruby by default (module, class, method,
/// singletonMethod, constant, accessor, alias). Line numbers matter.
pub(super) const APP_RB: &str = "\
module Shop
  VERSION = \"1.0\"

  class Greeter < Base
    attr_accessor :name
    attr_reader :age

    def initialize(name)
      @name = name
    end

    def greet
      \"hi\"
    end

    def self.create
    end

    class << self
      def build; end
    end

    alias hello greet
    alias_method :hi, :greet

    def ==(other); end
    def ready?; end
    def name=(value); end

    class Inner
      def greet; end
    end
  end
end

class Shop::Cart
  def add; end
end
";

#[test]
fn every_ruby_kind() {
    let f = Fixture::new(&[("app.rb", APP_RB)]);
    let cases: &[(&str, &[&str])] = &[
        ("Shop", &["Shop [module] -> app.rb:1"]),
        ("VERSION", &["VERSION [constant] Shop -> app.rb:2"]),
        ("Greeter", &["Greeter [class] Shop -> app.rb:4"]),
        ("age", &["age [accessor] Shop.Greeter -> app.rb:6"]),
        (
            "initialize",
            &["initialize [method] Shop.Greeter -> app.rb:8"],
        ),
        (
            "greet",
            &[
                "greet [method] Shop.Greeter -> app.rb:12",
                "greet [method] Shop.Greeter.Inner -> app.rb:31",
            ],
        ),
        (
            "create",
            &["create [singletonMethod] Shop.Greeter -> app.rb:16"],
        ),
        (
            "build",
            &["build [singletonMethod] Shop.Greeter -> app.rb:20"],
        ),
        ("hello", &["hello [alias] Shop.Greeter -> app.rb:23"]),
        ("hi", &["hi [alias] Shop.Greeter -> app.rb:24"]),
        ("Inner", &["Inner [class] Shop.Greeter -> app.rb:30"]),
        // `class Shop::Cart` is Cart in scope Shop; its methods are in Cart, as ctags
        // has them.
        ("Cart", &["Cart [class] Shop -> app.rb:36"]),
        ("add", &["add [method] Cart -> app.rb:37"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
    // The accessor `name` and the writer method `name=` are both answers for `name`.
    assert_eq!(
        f.lines("name"),
        ["name [accessor] Shop.Greeter -> app.rb:5"]
    );
    // Instance variables are not definitions, as in ctags.
    let lines = f.lines("@name");
    assert!(
        lines.len() == 1 && !lines[0].contains("->"),
        "find_symbol(@name): {lines:?}"
    );
}

#[test]
fn qualified_ruby_names_narrow_the_answer() {
    let f = Fixture::new(&[("app.rb", APP_RB)]);
    let outer = ["greet [method] Shop.Greeter -> app.rb:12"];
    for query in [
        "Greeter.greet",
        "Shop.Greeter.greet",
        "Shop::Greeter::greet",
    ] {
        assert_eq!(f.lines(query), outer, "{query}");
    }
    assert_eq!(
        f.lines("Inner::greet"),
        ["greet [method] Shop.Greeter.Inner -> app.rb:31"]
    );
    assert_eq!(f.lines("Shop::Cart"), ["Cart [class] Shop -> app.rb:36"]);
    assert_eq!(f.lines("greet").len(), 2);
}

/// Method names with `?`, `!` or `=`, and operators, are names to ask for, as ctags
/// names them; a qualifier narrows them like any other name.
#[test]
fn ruby_method_names_keep_their_punctuation() {
    let f = Fixture::new(&[("app.rb", APP_RB)]);
    let cases: &[(&str, &[&str])] = &[
        ("==", &["== [method] Shop.Greeter -> app.rb:26"]),
        ("ready?", &["ready? [method] Shop.Greeter -> app.rb:27"]),
        (
            "Greeter.ready?",
            &["ready? [method] Shop.Greeter -> app.rb:27"],
        ),
        (
            "Shop::Greeter::==",
            &["== [method] Shop.Greeter -> app.rb:26"],
        ),
        // attr_accessor defines the writer too, as ctags has it.
        (
            "name=",
            &[
                "name= [accessor] Shop.Greeter -> app.rb:5",
                "name= [method] Shop.Greeter -> app.rb:28",
            ],
        ),
        ("Inner.ready?", &[]),
    ];
    for (name, expected) in cases {
        let lines = f.lines(name);
        if expected.is_empty() {
            assert!(
                lines.len() == 1 && !lines[0].contains("->"),
                "find_symbol({name}): {lines:?}"
            );
        } else {
            assert_eq!(lines, *expected, "find_symbol({name})");
        }
    }
    // The extractor agrees.
    let Some(defs) = Definitions::new().of("app.rb", APP_RB.as_bytes()) else {
        panic!("Ruby is compiled in");
    };
    for (name, line) in [("==", 26), ("ready?", 27), ("name=", 28)] {
        assert!(
            defs.iter()
                .any(|(n, l, k)| n == name && *l == line && *k == "method"),
            "{name}: {defs:?}"
        );
    }
}

/// attr_reader defines `x`, attr_writer `x=`, attr_accessor both, as ctags tags them;
/// the writer is found though `size=` is nowhere in the source.
#[test]
fn ruby_attribute_writers_are_accessors() {
    let f = Fixture::new(&[(
        "box.rb",
        "class Box\n  attr_reader :width\n  attr_writer :height, \"depth\"\n  attr_accessor :size\nend\n",
    )]);
    let cases: &[(&str, &[&str])] = &[
        ("width", &["width [accessor] Box -> box.rb:2"]),
        ("height=", &["height= [accessor] Box -> box.rb:3"]),
        ("depth=", &["depth= [accessor] Box -> box.rb:3"]),
        ("size", &["size [accessor] Box -> box.rb:4"]),
        ("size=", &["size= [accessor] Box -> box.rb:4"]),
        ("Box.size=", &["size= [accessor] Box -> box.rb:4"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
    for absent in ["width=", "height", "depth"] {
        let lines = f.lines(absent);
        assert!(
            lines.len() == 1 && !lines[0].contains("->"),
            "find_symbol({absent}): {lines:?}"
        );
    }
}

/// `attr_accessor (:x)`, with a space before the parenthesis, is one parenthesised
/// argument to the grammar; it still defines `x` and `x=`.
#[test]
fn ruby_attribute_with_a_spaced_parenthesis() {
    let f = Fixture::new(&[(
        "pen.rb",
        "class Pen\n  attr_accessor ( :ink)\n  attr_writer (\"cap\")\nend\n",
    )]);
    assert_eq!(f.lines("ink"), ["ink [accessor] Pen -> pen.rb:2"]);
    assert_eq!(f.lines("ink="), ["ink= [accessor] Pen -> pen.rb:2"]);
    assert_eq!(f.lines("cap="), ["cap= [accessor] Pen -> pen.rb:3"]);
}
