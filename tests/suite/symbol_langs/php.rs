//! PHP through find_symbol: one of every default ctags kind, scopes of methods,
//! properties and constants, and qualified lookups.

use crate::suite::symbols::Fixture;

/// One of every kind ctags emits for PHP by default (namespace, alias, define, class,
/// interface, trait, function, variable). Line numbers matter.
pub(super) const APP_PHP: &str = "\
<?php
namespace App\\Models;

use Foo\\Bar as Baz;
use Foo\\Qux;

define('MAX_USERS', 100);
const VERSION = '1.0';
$registry = [];
$factory = function () { $inside = 1; return 2; };

interface Shape
{
    const SIDES = 0;
    public function area(): float;
}

trait Greets
{
    public $greeting = 'hi';
    public function greet() { return $this->greeting; }
}

class Greeter implements Shape
{
    use Greets;
    private static $count = 0;

    public function area(): float
    {
        $local = 1;
        return 0.0;
    }

    public function greet() { return 'hello'; }
}

function helper($x)
{
    return $x;
}
";

#[test]
fn every_php_kind() {
    let f = Fixture::new(&[("src/app.php", APP_PHP)]);
    let cases: &[(&str, &[&str])] = &[
        ("Baz", &["Baz [alias] -> src/app.php:4"]),
        ("Qux", &["Qux [alias] -> src/app.php:5"]),
        ("MAX_USERS", &["MAX_USERS [define] -> src/app.php:7"]),
        ("VERSION", &["VERSION [define] -> src/app.php:8"]),
        ("registry", &["registry [variable] -> src/app.php:9"]),
        ("factory", &["factory [function] -> src/app.php:10"]),
        ("Shape", &["Shape [interface] -> src/app.php:12"]),
        ("SIDES", &["SIDES [define] Shape -> src/app.php:14"]),
        (
            "area",
            &[
                "area [function] Shape -> src/app.php:15",
                "area [function] Greeter -> src/app.php:29",
            ],
        ),
        ("Greets", &["Greets [trait] -> src/app.php:18"]),
        (
            "greeting",
            &["greeting [variable] Greets -> src/app.php:20"],
        ),
        (
            "greet",
            &[
                "greet [function] Greets -> src/app.php:21",
                "greet [function] Greeter -> src/app.php:35",
            ],
        ),
        ("Greeter", &["Greeter [class] -> src/app.php:24"]),
        ("count", &["count [variable] Greeter -> src/app.php:27"]),
        ("helper", &["helper [function] -> src/app.php:38"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
    // Locals of functions, methods and closures are not definitions, as in ctags.
    for name in ["inside", "local", "x"] {
        let lines = f.lines(name);
        assert!(
            lines.len() == 1 && lines[0].starts_with("No definition of"),
            "find_symbol({name}): {lines:?}"
        );
    }
}

#[test]
fn qualified_php_names_narrow_the_answer() {
    let f = Fixture::new(&[("src/app.php", APP_PHP)]);
    for query in ["Greeter::greet", "Greeter.greet"] {
        assert_eq!(
            f.lines(query),
            ["greet [function] Greeter -> src/app.php:35"],
            "{query}"
        );
    }
    assert_eq!(
        f.lines("Shape::area"),
        ["area [function] Shape -> src/app.php:15"]
    );
    assert_eq!(f.lines("greet").len(), 2);
}

/// A closure held by a local of a method is a local: ctags 5.9 tags none on real trees
/// (one of its units expects one). A closure held by a global is a function.
#[test]
fn php_closure_held_by_a_local_is_no_definition() {
    let source = "<?php\n$top = function () { return 1; };\nclass Box\n{\n    public function make(): int\n    {\n        $adder = function ($n) use ($top) : int {\n            return $n;\n        };\n        return $adder(1);\n    }\n}\n";
    let f = Fixture::new(&[("src/box.php", source)]);
    assert_eq!(f.lines("top"), ["top [function] -> src/box.php:2"]);
    assert!(f.lines("adder")[0].starts_with("No definition of"));
}

/// A PHP 7.3 heredoc whose closing marker is followed by an operator on its line ends
/// there: what follows is code again (tree-sitter-php before 0.25 read the rest of the
/// file as the heredoc's text).
#[test]
fn php_heredoc_closed_before_an_operator() {
    let source = "<?php\n$greeting = <<<TXT\n    hello\n    TXT . \"!\";\n$sum = <<<N\n  1\n  N+2;\nfunction after_heredocs() {}\n";
    let f = Fixture::new(&[("src/docs.php", source)]);
    assert_eq!(
        f.lines("greeting"),
        ["greeting [variable] -> src/docs.php:2"]
    );
    assert_eq!(f.lines("sum"), ["sum [variable] -> src/docs.php:5"]);
    assert_eq!(
        f.lines("after_heredocs"),
        ["after_heredocs [function] -> src/docs.php:8"]
    );
}

/// `define()` named by a one-line heredoc or nowdoc defines the constant written in it,
/// without the indentation PHP 7.3 strips; a heredoc that interpolates names nothing.
#[test]
fn php_define_named_by_a_heredoc() {
    let source = "<?php\ndefine(<<<K\nFIRST_KEY\nK, 1);\ndefine(<<<K\n    INDENTED_KEY\n    K, 2);\ndefine(<<<'K'\n  NOWDOC_KEY\n  K, 3);\ndefine(<<<K\n  KEY_$suffix\n  K, 4);\n";
    let f = Fixture::new(&[("src/keys.php", source)]);
    assert_eq!(
        f.lines("FIRST_KEY"),
        ["FIRST_KEY [define] -> src/keys.php:2"]
    );
    assert_eq!(
        f.lines("INDENTED_KEY"),
        ["INDENTED_KEY [define] -> src/keys.php:5"]
    );
    assert_eq!(
        f.lines("NOWDOC_KEY"),
        ["NOWDOC_KEY [define] -> src/keys.php:8"]
    );
    assert!(f.lines("KEY_")[0].starts_with("No definition of"));
}

/// PHP 5's `<script language="php">` … `</script>` encloses PHP code as `<?php` … `?>`
/// does; what follows the close tag is HTML again, and a close tag in a comment or
/// string does not end the code.
#[test]
fn php_script_language_php_tags() {
    let source = "<html>\n<script language=\"php\">\nfunction in_script() {}\n// </script> in a comment\n$tag = '</script>';\nfunction after_comment() {}\n</script>\nfunction not_php() {}\n<SCRIPT\n  LANGUAGE = php\n>\nclass AcrossLines {}\n</script\n>\n</html>\n";
    let f = Fixture::new(&[("src/page.php", source)]);
    assert_eq!(
        f.lines("in_script"),
        ["in_script [function] -> src/page.php:3"]
    );
    assert_eq!(
        f.lines("after_comment"),
        ["after_comment [function] -> src/page.php:6"]
    );
    assert_eq!(f.lines("tag"), ["tag [variable] -> src/page.php:5"]);
    assert!(f.lines("not_php")[0].starts_with("No definition of"));
    assert_eq!(
        f.lines("AcrossLines"),
        ["AcrossLines [class] -> src/page.php:12"]
    );
}
