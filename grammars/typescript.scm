; Definitions in TypeScript and TSX source, for find_symbol (one query for both
; grammars: TSX is TypeScript plus JSX, with the same node kinds).
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, a Universal Ctags TypeScript kind. When several patterns
; capture the same name node, the pattern written first wins.
;
; ctags' TypeScript parser differs from its JavaScript one, and the patterns
; follow it: getters and setters are methods, class fields and interface
; members are properties, constructor parameters with an access modifier
; (`constructor(private x: number)`) are properties of the class, and every
; `const` is a constant, a local one too (scoped by its function or method),
; destructured names included (by their keys, as ctags names them), and the
; loop constants of `for (const x of xs)`. `let` and `var` are variables at the top level
; only: inside functions and methods ctags skips them (it reports some when it
; has lost its place, see the differential test), and so do we.

(class_declaration name: (type_identifier) @name) @definition.class

(abstract_class_declaration name: (type_identifier) @name) @definition.class

(class name: (type_identifier) @name) @definition.class

(interface_declaration name: (type_identifier) @name) @definition.interface

(type_alias_declaration name: (type_identifier) @name) @definition.alias

(enum_declaration name: (identifier) @name) @definition.enum

(enum_body name: (_) @name @definition.enumerator)

(enum_body (enum_assignment name: (_) @name) @definition.enumerator)

; Members written without commas, as while an enum is being typed (`enum Color {
; Red Green Blue }`, or one a line): tree-sitter reads the names before the last
; as an error in the body, and the members after one with a value as a chain of
; assignments inside that value (`A = 1⏎B = 2⏎C = 3` as `A = 1 (B = (C = 3))`,
; with errors between). Valid TypeScript has none of these errors, and an enum
; value cannot assign.
(enum_body (ERROR [(identifier) (property_identifier)] @name @definition.enumerator))

; A member without a value after one with a value (`A = 1⏎B⏎C = 3`): the names
; after the value in the error that holds it.
((ERROR (_) (identifier) @name @definition.enumerator)
 (#inside? @name enum_assignment
   ERROR assignment_expression binary_expression unary_expression))

((assignment_expression left: (identifier) @name @definition.enumerator)
 (#inside? @name enum_assignment
   assignment_expression binary_expression unary_expression ERROR))

; `namespace A.B {}` and `module A {}` (not `declare module 'name'`, which
; names a module to augment, not a definition).
(internal_module name: (identifier) @name) @definition.namespace

; `namespace a.b` is `b` in the scope `a` (ctags names it `a.b`; so a lookup finds
; it by either), and its members are in the scope `a.b`.
(internal_module name: (nested_identifier property: (_) @name)) @definition.namespace

(module name: (identifier) @name) @definition.namespace

(function_declaration name: (identifier) @name) @definition.function

(generator_function_declaration name: (identifier) @name) @definition.generator

; Overload signatures and `declare function`.
(function_signature name: (identifier) @name) @definition.function

(method_definition name: (_) @name) @definition.method

; Members of interfaces; not of object types in type expressions
; (`{ data: infer T }` in a conditional type), which ctags does not tag either.
(interface_body (method_signature name: (_) @name) @definition.method)

; Overload signatures of methods (`do(next: ...): void;` before `do(...) {}`).
(class_body (method_signature name: (_) @name) @definition.method)

(abstract_method_signature name: (_) @name) @definition.method

(public_field_definition name: (_) @name) @definition.property

(interface_body (property_signature name: (_) @name) @definition.property)

; `constructor(private readonly x: T)` declares the property x.
(required_parameter (accessibility_modifier) pattern: (identifier) @name) @definition.property

(optional_parameter (accessibility_modifier) pattern: (identifier) @name) @definition.property

; A variable holding a function is one for ctags, unless it is an arrow.
(variable_declarator
  name: (identifier) @name
  value: [(function_expression) (generator_function)]) @definition.function

(lexical_declaration
  "const"
  (variable_declarator name: (identifier) @name) @definition.constant)

(lexical_declaration
  "const"
  (variable_declarator
    name: (object_pattern
      [
        (shorthand_property_identifier_pattern) @name
        (pair_pattern key: (_) @name)
        (object_assignment_pattern left: (shorthand_property_identifier_pattern) @name)
      ])) @definition.constant)

(lexical_declaration
  "const"
  (variable_declarator name: (array_pattern (identifier) @name)) @definition.constant)

(for_in_statement "const" left: (identifier) @name) @definition.constant

; ctags also reads the keys of an object literal that a constant holds as
; constants (`const config = { onError: null }`); they are properties here.
(lexical_declaration
  "const"
  (variable_declarator
    value: (object
      [
        (pair key: (_) @name)
        (shorthand_property_identifier) @name
      ] @definition.property)))

(program
  (lexical_declaration
    (variable_declarator name: (identifier) @name) @definition.variable))

(program
  (export_statement
    declaration: (lexical_declaration
      (variable_declarator name: (identifier) @name) @definition.variable)))

(program
  (variable_declaration
    (variable_declarator name: (identifier) @name) @definition.variable))

(program
  (export_statement
    declaration: (variable_declaration
      (variable_declarator name: (identifier) @name) @definition.variable)))

; The loop variable of a `for (let x of xs)` or `for (var k in o)` of top-level
; code, in a loop nested in one too: a variable of the script, as ctags reads it.
((for_in_statement ["let" "var"] left: (identifier) @name) @definition.variable
 (#has-ancestors? @definition.variable "program" "statement_block for_in_statement program"))

; `declare const x: T` and `declare let x: T`.
(ambient_declaration
  (lexical_declaration
    (variable_declarator name: (identifier) @name) @definition.variable))

(ambient_declaration
  (variable_declaration
    (variable_declarator name: (identifier) @name) @definition.variable))

; An unterminated string (`var s = "…` while it is being typed) ends at its line;
; tree-sitter reads the next line's keyword into an error and that line's
; declaration as the string's value, so `var s = "…⏎var t = 1` still defines
; `t`: a variable at the top level, or a constant anywhere, by the keyword the
; error ends with, as for any declaration. Valid code has no error there.
((variable_declarator
   (ERROR (identifier) @_keyword .)
   value: (assignment_expression left: (identifier) @name) @definition.variable)
 (#any-of? @_keyword "var" "let")
 (#has-ancestors? @definition.variable
   "variable_declarator variable_declaration program"
   "variable_declarator lexical_declaration program"))

((variable_declarator
   (ERROR (identifier) @_keyword .)
   value: (assignment_expression left: (identifier) @name) @definition.constant)
 (#eq? @_keyword "const"))
