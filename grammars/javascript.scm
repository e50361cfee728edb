; Definitions in JavaScript (and JSX) source, for find_symbol.
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, a Universal Ctags JavaScript kind. When several patterns
; capture the same name node, the pattern written first wins, so the specific
; patterns (a variable holding a function or class) come before the general
; ones (any top-level variable).
;
; ctags' JavaScript parser is a heuristic reader, and the patterns follow what
; it reports where that is what a user jumps to:
; - classes, functions, generators, methods, getters, setters and class fields;
; - top-level `const` (constant) and `let`/`var` (variable) names, and any
;   variable, even a local one, that holds an object literal, a function or a
;   class: ctags treats such an object as a class and its keys as properties
;   (that is how pre-class JavaScript spelled classes), so their keys are
;   properties here too, and their function-valued keys methods;
; - `X.prototype.m = function` (a method of X) and `X.f = function`;
; - the keys of an object assigned to a member (`X.y = { ... }`).
; Other locals are not definitions, as for ctags.

(class_declaration name: (identifier) @name) @definition.class

(class name: (identifier) @name) @definition.class

(function_declaration name: (identifier) @name) @definition.function

(generator_function_declaration name: (identifier) @name) @definition.generator

; ctags tags the name of a named function expression as well as the variable.
(function_expression name: (identifier) @name) @definition.function

; And of a named generator expression (`var g = function* gen() {}`).
(generator_function name: (identifier) @name) @definition.generator

(method_definition "get" name: (_) @name) @definition.getter

(method_definition "set" name: (_) @name) @definition.setter

(method_definition "*" name: (_) @name) @definition.generator

(method_definition name: (_) @name) @definition.method

(field_definition property: (_) @name) @definition.field

; A variable holding a function or a class is one, wherever it is declared.
(variable_declarator
  name: (identifier) @name
  value: [(function_expression) (generator_function)]) @definition.function

(variable_declarator
  name: (identifier) @name
  value: (class)) @definition.class

; A variable holding an object literal: ctags calls it a class; it is a
; constant or a variable by its declaration here.
(lexical_declaration
  kind: "const"
  (variable_declarator name: (identifier) @name value: (object (_))) @definition.constant)

(lexical_declaration
  kind: "let"
  (variable_declarator name: (identifier) @name value: (object (_))) @definition.variable)

(variable_declaration
  (variable_declarator name: (identifier) @name value: (object (_))) @definition.variable)

; A `var` in a block of top-level code (`if (...) { var v = 1; }`) is a global
; all the same: `var` is scoped by functions, not blocks.
((variable_declarator name: (identifier) @name) @definition.variable
 (#has-ancestors? @definition.variable
   "variable_declaration statement_block _ program"
   "variable_declaration statement_block else_clause if_statement program"
   "variable_declaration statement_block statement_block _ program"
   "variable_declaration statement_block statement_block program"
   "variable_declaration statement_block program"))

; Top-level variables, exported or not.
(program
  (lexical_declaration
    kind: "const"
    (variable_declarator name: (identifier) @name) @definition.constant))

(program
  (export_statement
    declaration: (lexical_declaration
      kind: "const"
      (variable_declarator name: (identifier) @name) @definition.constant)))

(program
  (lexical_declaration
    kind: "let"
    (variable_declarator name: (identifier) @name) @definition.variable))

(program
  (export_statement
    declaration: (lexical_declaration
      kind: "let"
      (variable_declarator name: (identifier) @name) @definition.variable)))

(program
  (variable_declaration
    (variable_declarator name: (identifier) @name) @definition.variable))

(program
  (export_statement
    declaration: (variable_declaration
      (variable_declarator name: (identifier) @name) @definition.variable)))

; The keys of an object literal that a variable or a member holds, and of the
; objects nested in it by key (four levels, enough for the shader uniform
; tables of three.js); not of objects passed as arguments, which ctags skips.
; Function-valued keys are methods.
([
  (variable_declarator value: (object (pair key: (_) @name value: [(function_expression) (generator_function) (arrow_function)]) @definition.method))
  (assignment_expression right: (object (pair key: (_) @name value: [(function_expression) (generator_function) (arrow_function)]) @definition.method))
  (variable_declarator value: (object (pair value: (object (pair key: (_) @name value: [(function_expression) (generator_function) (arrow_function)]) @definition.method))))
  (assignment_expression right: (object (pair value: (object (pair key: (_) @name value: [(function_expression) (generator_function) (arrow_function)]) @definition.method))))
])

; The keys as properties: one pattern whose allowed parents, up to four objects
; deep, are tested in Rust (`#has-ancestors?`, see lang.rs): spelled out as nested
; patterns they were the costliest part of the query's compile. An object under a
; declarator, an assignment or a pair can only be its value (or right side), so
; the chains need no field names.
((pair key: (_) @name) @definition.property
 (#has-ancestors? @definition.property
   "object variable_declarator"
   "object assignment_expression"
   "object parenthesized_expression variable_declarator"
   "object pair object variable_declarator"
   "object pair object assignment_expression"
   "object pair object pair object variable_declarator"
   "object pair object pair object assignment_expression"
   "object pair object pair object pair object variable_declarator"
   "object pair object pair object pair object assignment_expression"))

; `X.prototype = { ... }` makes X a class (pre-class JavaScript's spelling), whose
; keys the patterns above tag.
((assignment_expression
   left: (member_expression
     object: (identifier) @name
     property: (property_identifier) @_prototype)
   right: (object)) @definition.class
 (#eq? @_prototype "prototype"))

; The controller of a SAP UI5 application, `sap.ui.controller("app.name", { ... })`:
; its function-valued keys are its methods (ctags knows this call too).
((call_expression
   function: (member_expression) @_callee
   arguments: (arguments
     (string)
     (object
       (pair
         key: (_) @name
         value: [(function_expression) (arrow_function)]) @definition.method)))
 (#eq? @_callee "sap.ui.controller"))

; `module.exports = { a, b }` lists what the module defines.
(assignment_expression
  right: (object (shorthand_property_identifier) @name @definition.field))

; `this.m = function` and `X.prototype.m = function` define methods; ctags
; reads any top-level `X.prototype.m = value` as a method of X. At the top level
; any `a.b.c = value` is one here (rare outside prototypes); deeper, only one
; whose middle name is `prototype` (next pattern but one).
(assignment_expression
  left: (member_expression
    object: [(member_expression) (this)]
    property: (property_identifier) @name)
  right: [(function_expression) (generator_function)]) @definition.method

(program
  (expression_statement
    (assignment_expression
      left: (member_expression
        object: (member_expression object: (identifier))
        property: (property_identifier) @name)) @definition.method))

; Anywhere, when the middle name is `prototype`: `X.prototype.isX = true` in a
; constructor, `A.B.prototype.alias = this.m` in a method.
((assignment_expression
   left: (member_expression
     object: (member_expression property: (property_identifier) @_prototype)
     property: (property_identifier) @name)) @definition.method
 (#eq? @_prototype "prototype"))

; `X.f = function`, `f = function`, and the same with a function called at
; once (`X.Geometry = ( function () { ... } )()`).
(assignment_expression
  left: [
    (member_expression property: (property_identifier) @name)
    (identifier) @name
  ]
  right: [
    (function_expression)
    (generator_function)
    (call_expression function: (parenthesized_expression (function_expression)))
  ]) @definition.function

(variable_declarator
  name: (identifier) @name
  value: (call_expression
    function: (parenthesized_expression (function_expression)))) @definition.function

; An object literal assigned to a name or a member (`entry = { ... }`,
; `X.y = { ... }`, `this.p = { ... }`) is a class for ctags, as a variable
; holding one is.
(assignment_expression
  left: [
    (member_expression property: (property_identifier) @name)
    (identifier) @name
  ]
  right: (object (_))) @definition.variable

; `X.e = new T()` at the top level is a static member of X (a variable for
; ctags, which skips other values such as `module.exports = f`).
(program
  (expression_statement
    (assignment_expression
      left: (member_expression
        object: (identifier)
        property: (property_identifier) @name)
      right: (new_expression)) @definition.variable))

; An unterminated string (`var s = "…` while it is being typed) ends at its line;
; tree-sitter reads the next line's keyword into an error and that line's
; declaration as the string's value, so `var s = "…⏎var t = 1` still defines
; `t`, a variable or a constant by the keyword the error ends with. Valid code
; has no error there, so nothing else matches.
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
 (#eq? @_keyword "const")
 (#has-ancestors? @definition.constant
   "variable_declarator variable_declaration program"
   "variable_declarator lexical_declaration program"))
