; Definitions in PHP source, for find_symbol.
;
; Each pattern captures the defined name as @name and the construct as
; @definition.<kind>, a Universal Ctags PHP kind: namespace, class, interface,
; trait, function (methods too, scoped by their class), define (`define()`,
; `const` and class constants), alias (`use` imports) and variable (class
; properties and variables assigned at the top level). When several patterns
; capture the same name node the first one written wins: a closure assigned to
; a variable is a function before it is a variable.
;
; ctags tags a variable only where it is global: assigned in the file or a
; namespace body, including inside if/foreach/while/try blocks there, never in a
; function or method. A query cannot say "no function above", so those patterns
; list the chains of ancestors up to the program or the namespace body, spelling
; out the statements in between (up to two blocks deep). In a chain
; (`#has-ancestors?`, tested in Rust: see lang.rs, AncestorTest) `_` is any
; named node without a `name` field: any statement but a named declaration,
; since a function, class or method has a `name` field. Written as nested
; patterns (`(program (_ !name (compound_statement …)))`), the chains cost most
; of this query's compile time.

; `namespace App\Models;` is named `App\Models` as a whole, as ctags names it.
(namespace_definition name: (namespace_name) @name) @definition.namespace

(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait

(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name) @definition.function

; `const X = 1;` at the top level or in a class, interface or enum.
(const_declaration (const_element (name) @name)) @definition.define

; `define('X', 1)` anywhere, at the line of `define`, as ctags tags it: a one-line
; heredoc or nowdoc names the constant too (`define(<<<K` with the name on the next
; line), without its indentation (a PHP 7.3 closing marker's; trimmed in extract.rs).
; The function's name is captured as the construct so a predicate can test its text.
((function_call_expression
  function: (name) @definition.define
  (#eq? @definition.define "define")
  arguments: (arguments . (argument [
    (string (string_content) @name)
    (encapsed_string (string_content) @name)
    (heredoc (heredoc_body . (string_content) @name .))
    (nowdoc (nowdoc_body . (nowdoc_string) @name .))
  ])))
 (#set! line "construct"))

; `use Foo\Bar as Baz;` is Baz; `use Foo\Bar;` is Bar; also inside a group
; `use Foo\{Bar, Baz as Q}` and for `use function`/`use const`.
(namespace_use_clause alias: (name) @name) @definition.alias
(namespace_use_clause !alias (qualified_name (name) @name)) @definition.alias
(namespace_use_clause !alias (name) @name) @definition.alias

; Properties: `public $a = 1, $b;`, `private static ?int $c;`.
(property_declaration (property_element name: (variable_name (name) @name))) @definition.variable

; A non-static closure assigned to a global variable is a function for ctags;
; `static function () {}` stays a variable.
((assignment_expression
   left: (variable_name (name) @name)
   right: (anonymous_function !static_modifier)) @definition.function
 (#has-ancestors? @definition.function
  "expression_statement program"
  "expression_statement _ program"
  "expression_statement compound_statement _ program"
  "expression_statement compound_statement _ _ program"
  "expression_statement compound_statement _ compound_statement _ program"
  "expression_statement compound_statement namespace_definition"
  "expression_statement _ compound_statement namespace_definition"
  "expression_statement compound_statement _ compound_statement namespace_definition"
  "expression_statement compound_statement _ _ compound_statement namespace_definition"
  "expression_statement compound_statement _ compound_statement _ compound_statement namespace_definition"))

; Global variables: `$x = ...` and each name of `$a = $b = ...` (ctags tags
; both); `$a['k'] = ...` and `[$a, $b] = ...` are not tagged by ctags.
([
   (assignment_expression left: (variable_name (name) @name))
   (assignment_expression right: (assignment_expression left: (variable_name (name) @name)))
 ] @definition.variable
 (#has-ancestors? @definition.variable
  "expression_statement program"
  "expression_statement _ program"
  "expression_statement compound_statement _ program"
  "expression_statement compound_statement _ _ program"
  "expression_statement compound_statement _ compound_statement _ program"
  "expression_statement compound_statement namespace_definition"
  "expression_statement _ compound_statement namespace_definition"
  "expression_statement compound_statement _ compound_statement namespace_definition"
  "expression_statement compound_statement _ _ compound_statement namespace_definition"
  "expression_statement compound_statement _ compound_statement _ compound_statement namespace_definition"))
