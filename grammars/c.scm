; Definitions in C source, for find_symbol.
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, where <kind> is the Universal Ctags C kind name. Only the
; kinds ctags enables by default: no prototypes, no `extern` declarations, no
; locals, labels or parameters (and not `header`, which names an #include).
;
; C buries a name inside its declarator (`*name`, `name[4]`, `(*name)(int)`,
; `name = 1`), so most patterns capture the whole declarator and extract.rs
; reduces it to the one identifier inside (principal_name).

(preproc_def name: (identifier) @name) @definition.macro

(preproc_function_def name: (identifier) @name) @definition.macro

; `#pragma weak name` and `#pragma weak name = target` define the weak symbol
; `name`, a macro to ctags. extract.rs names it by the word after `weak`.
((preproc_call argument: (preproc_arg) @name) @definition.macro
 (#match? @definition.macro "^#\\s*pragma\\s+weak\\s"))

; A function definition, whatever its return type wraps the declarator in
; (`char *f(void)`, `int (*f(void))[4]`).
(function_definition declarator: (_) @name) @definition.function

; Only definitions with a body: `struct s;` and `struct s *p` merely name one.
; Anonymous ones have no name to find (ctags makes one up, `__anon…`).
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct

(union_specifier name: (type_identifier) @name body: (_)) @definition.union

(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum

(enumerator name: (identifier) @name) @definition.enumerator

; Members, including function pointers (`int (*cb)(int)`), arrays and
; bit-fields.
(field_declaration declarator: (_) @name) @definition.member

; Every name a typedef introduces, function pointer types included.
(type_definition declarator: (_) @name) @definition.typedef

; Variables: declarations outside any function body (at the top level, inside
; preprocessor conditionals or an `extern "C"` block) whose declarator is not a
; plain function declarator (a prototype, which ctags does not tag by default).
; A function declarator inside parentheses is a function pointer variable.
; `extern` declarations are not definitions (ctags' `externvar`, off by default).
; A prototype's declarator reads `name(` after any `*`s; a function pointer's
; starts with `(`, an initialized variable's has ` = ` before any `(`. A
; declaration that does not end with its own `;` is tree-sitter's recovery from
; an unexpanded macro (it made up a MISSING `;`), not a variable, unless an
; attribute after the declarator (`int v __attribute__((unused));`, `int
; fb[N] __read_mostly;`) made it stop there: `#ends-statement?`, tested in Rust
; (lang.rs).
((declaration declarator: (_) @name) @definition.variable
 (#has-parent? @definition.variable
  translation_unit
  preproc_if
  preproc_ifdef
  preproc_else
  preproc_elif
  declaration_list
  linkage_specification)
 (#not-match? @definition.variable "^extern\\s")
 (#not-match? @name "^[*\\s]*[A-Za-z_][A-Za-z0-9_]*\\s*\\(")
 (#ends-statement? @definition.variable))

; `typedef MACRO(T) name;` and `MACRO(T) name;`, a type written by a macro:
; tree-sitter ends the typedef, or reads a call, before the name, which is left
; alone in a statement of its own on the same line (`#after-macro?`, lang.rs).
; An upper-case word after a call is a macro itself (`f() NOEXCEPT;`).
((expression_statement . (identifier) @name .) @definition.typedef
 (#after-macro? @definition.typedef type_definition))

((expression_statement . (identifier) @name .) @definition.variable
 (#has-parent? @definition.variable translation_unit declaration_list linkage_specification)
 (#not-match? @name "^[A-Z][A-Z0-9_]*$")
 (#after-macro? @definition.variable expression_statement))
