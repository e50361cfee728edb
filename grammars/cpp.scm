; Definitions in C++ source (and in `.h` headers, C ones included), for
; find_symbol.
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, where <kind> is the Universal Ctags C++ kind name. Only the
; kinds ctags enables by default: no prototypes (a method declared in its class
; and defined elsewhere is found at its definition), no `extern` declarations,
; no locals, parameters or template parameters, no `using` imports.
;
; C++ buries a name inside its declarator (`*name`, `&name`, `name[4]`,
; `(*name)(int)`, `Class::name`, `~Class`), so most patterns capture the whole
; declarator and extract.rs reduces it to the one name inside (principal_name).
; The scope of an out-of-class definition (`void Stack::push(int) {}`) comes
; from its qualified name, as ctags gives it (`qualified_identifier` is a scope
; rule in lang.rs).

(preproc_def name: (identifier) @name) @definition.macro

(preproc_function_def name: (identifier) @name) @definition.macro

; A #define inside a region that macros kept from parsing is still a macro.
(ERROR
  "#define"
  .
  [
    (identifier) @name
    (function_declarator declarator: (identifier) @name)
  ]) @definition.macro

; Function and method definitions with a body, in or out of their class;
; `= default` and `= delete` are declarations to ctags. The declarator must be
; a function's: an unexpanded macro after the parameters (`f() const
; BOOST_NOEXCEPT {`) makes tree-sitter read the macro as the declarator and the
; real one as an ERROR, which the last alternative recovers.
;
; Conversion operators (`operator bool() const {`, `A::operator int() {`) have no
; function declarator: tree-sitter reads `operator T()` as one operator_cast,
; which extract.rs names `operator T`, as ctags does.
;
; One pattern with alternatives, not one per form: tree-sitter analyses each
; pattern rooted at a function_definition against the whole grammar when the
; query is compiled (60 to 85 million instructions each, see lang.rs), and
; alternatives inside one cost far less. Each alternative carries its own
; field: a field on an alternation nested in another (`[declarator: [(a) (b)]
; (c)]`) matched only its first choice in tree-sitter 0.27, losing every
; `T* C::f() {}`.
(function_definition
  [
    declarator: (function_declarator) @name
    declarator: (pointer_declarator) @name
    declarator: (reference_declarator) @name
    declarator: (operator_cast) @name
    declarator: (qualified_identifier
      name: [(operator_cast) (qualified_identifier name: (operator_cast))]) @name
    (ERROR (function_declarator) @name)
  ]
  body: (_)) @definition.function

; An empty body after the parameters followed by a `;` (`void f() { };`) reads
; as a declaration initialized with an empty braced list (`int n{};`), but a
; function declarator takes no initializer: it is a definition. Its text ends
; with the parameters, qualifiers, `{ }` and its own `;`, without a `) :`: a
; constructor's initializer list after a macro (`API S() : a(0), b(0) {}` reads
; `b(0) {}` as a declarator) is no such function.
([
   (declaration
     declarator: (init_declarator
       declarator: (function_declarator) @name
       value: (initializer_list)))
   (field_declaration
     declarator: (function_declarator) @name
     default_value: (initializer_list))
 ] @definition.function
 (#match? @definition.function "\\)[\\s\\w&]*\\{\\s*\\}\\s*;$")
 (#not-match? @definition.function "\\)\\s*:[^:]"))

; A macro call after the parameters (`bool f() const LOCKS_EXCLUDED(mu) {`)
; makes tree-sitter end the declaration there with a made-up (MISSING) `;`, so
; its text does not end with one, and read the macro as a function (with no
; return type) defined with the real one's body: the declaration is the
; definition.
; `#before-macro-body?` (tested in Rust, see lang.rs) says what `. (function_definition
; !type declarator: (function_declarator declarator: (identifier)))` after the
; declaration would, for a fraction of the compile time.
([
   (declaration declarator: (function_declarator) @name)
   (field_declaration declarator: (function_declarator) @name)
 ] @definition.function
 (#not-match? @definition.function ";$")
 (#before-macro-body? @definition.function))

; Where macros broke the parse of a whole region, a function declarator
; followed by its body (`{`), perhaps after a trailing macro, is a definition.
(ERROR (function_declarator) @name @definition.function . "{")

; A macro after the parameters may also read as a type (`static LOCAL(T *) f(int a)
; MAY_EXIT {`).
(ERROR
  (function_declarator) @name @definition.function
  .
  [(ERROR) (type_identifier)]
  .
  "{")

(namespace_definition name: (namespace_identifier) @name) @definition.namespace

; `namespace a::b {` defines both.
(namespace_definition
  name: (nested_namespace_specifier (namespace_identifier) @name)) @definition.namespace

; Only definitions with a body: `class C;` merely names one. A specialization
; (`class Box<int> {`) is named by its template.
(class_specifier name: (_) @name body: (_)) @definition.class

(struct_specifier name: (_) @name body: (_)) @definition.struct

; An export macro before the name (`class BOOST_SYMBOL_VISIBLE archive {`)
; makes tree-sitter read the macro as the class name and the rest as a function
; definition: the real name is its declarator or, with a base class list
; (`… archive : base {`), the first word of an ERROR. The kind is captured on the
; `class` or `struct` part, so that one pattern covers both.
(function_definition
  type: [
    (class_specifier !body) @definition.class
    (struct_specifier !body) @definition.struct
  ]
  declarator: (identifier) @name)

(function_definition
  type: [
    (class_specifier !body) @definition.class
    (struct_specifier !body) @definition.struct
  ]
  .
  (ERROR . (identifier) @name))

; A C header's `extern "C"` macro before a struct (`GIT_BEGIN_DECL struct
; git_credential {`, `__BEGIN_DECLS`) turns `struct` into an ERROR of a
; function definition named by the struct.
((function_definition
  (ERROR)
  declarator: (identifier) @name) @definition.struct
 (#match? @definition.struct "^\\w+(\\s|/\\*[\\s\\S]*?\\*/|//[^\\n]*)*struct\\s"))

;;; part: what follows compiles as a query of its own, beside what comes before, so
;;; the two halves of the compile run on two threads (PART_MARKER in lang.rs).

(union_specifier name: (_) @name body: (_)) @definition.union

(enum_specifier name: (_) @name body: (_)) @definition.enum

(enumerator name: (identifier) @name) @definition.enumerator

; A statement-like macro without a `;` before an enum (`FMT_END_NAMESPACE
; enum class align : unsigned char { left, right };`) makes tree-sitter read
; the macro as a type, `enum class` as an ERROR, and the rest as a variable
; initialized with a braced list: the variable is the enum, the list's names
; (`left`, or `left = 1`) its enumerators.
((declaration
  (ERROR)
  .
  declarator: (init_declarator
    declarator: (identifier) @name
    value: (initializer_list))) @definition.enum
 (#match? @definition.enum "^[A-Z][A-Z0-9_]*\\s+enum\\s"))

((declaration
  (ERROR)
  .
  declarator: (init_declarator
    value: (initializer_list
      [
        (identifier) @name
        (assignment_expression left: (identifier) @name)
      ]))) @definition.enumerator
 (#match? @definition.enumerator "^[A-Z][A-Z0-9_]*\\s+enum\\s"))

; Data members, including function pointers (`int (*cb)(int)`) and arrays, but
; not member function declarations (prototypes): their declarator reads
; `name(`, the word `operator` or `~name` after any `*`/`&` (`operator_count` is
; a member), where a function pointer's starts with `(`.
;
; An unexpanded macro before the type (`static BOOST_FORCEINLINE storage_type
; f(…) BOOST_NOEXCEPT;`) makes tree-sitter take the type, or the macro after
; the parameters, for the member's name: such a declaration, whose text has a
; word followed by `(` (not `(*`, a function pointer, nor `__attribute__((`:
; `char c __attribute__((deprecated));`) before any `=`, `<`, `[`,
; `{` or `;`, is a member function declaration too. So is a declaration that
; tree-sitter ended at the misread name with a made-up (MISSING) `;`: a real one
; ends with its own `;`.
((field_declaration declarator: (_) @name) @definition.member
 (#not-match? @name "^[*&\\s]*(operator\\b|~|[A-Za-z_][A-Za-z0-9_]*\\s*\\()")
 (#not-match? @definition.member "^[^=;{(<\\[]*(\\w\\s*\\(\\s*[^*&^\\s(]|[A-Za-z0-9]\\s*\\(\\s*\\()")
 (#match? @definition.member ";$"))

; An export macro before a class name (`class GTEST_API_ TestResult {`, see
; above) makes the class body a function body:
;
; - its data members are declarations there, the first after `public:` inside a
;   labeled statement, kept out of member function declarations by the same tests
;   as field declarations (the two on @definition.member);
; - a constructor defined in place (`TestPartResultArray() {}`) reads as a call in
;   an ERROR after `public:`, or as a call ended by a made-up `;` (a real statement
;   ends with its own), followed by a block. The ERROR's text is the call alone, so
;   the `;$` test on @definition.function passes it too.
;
; One pattern for all of them: tree-sitter analyses each pattern rooted at a
; function_definition against the whole grammar when the query is compiled (60 to
; 85 million instructions each), where alternatives inside one cost far less. A
; text predicate on a capture that an alternative lacks holds for it.
((function_definition
  type: [(class_specifier !body) (struct_specifier !body)]
  body: (compound_statement
    [
      (declaration declarator: (_) @name) @definition.member
      (labeled_statement (declaration declarator: (_) @name) @definition.member)
      (labeled_statement
        (ERROR (call_expression function: (identifier) @name)) @definition.function
        .
        (compound_statement))
      ((expression_statement
        (call_expression function: (identifier) @name)) @definition.function
       .
       (compound_statement))
      ((labeled_statement
        (expression_statement
          (call_expression function: (identifier) @name)) @definition.function)
       .
       (compound_statement))
    ]))
 (#not-match? @name "^[*&\\s]*(operator\\b|~|[A-Za-z_][A-Za-z0-9_]*\\s*\\()")
 (#not-match? @definition.member "^[^=;{(<\\[]*(\\w\\s*\\(\\s*[^*&^\\s(]|[A-Za-z0-9]\\s*\\(\\s*\\()")
 (#match? @definition.member ";$")
 (#not-match? @definition.function ";$"))

; A static data member defined outside its class (`int Stack::count = 0;`) is
; a member, as ctags has it.
((declaration
   declarator: [
     (qualified_identifier)
     (init_declarator declarator: (qualified_identifier))
   ] @name) @definition.member
 (#has-parent? @definition.member translation_unit declaration_list)
 (#not-match? @name "^[A-Za-z0-9_:<>, ]*\\("))

; Variable templates (`template <typename T> constexpr bool is_x_v = …;`):
; members inside a class, variables outside.
((field_declaration_list
  (template_declaration
    (declaration declarator: (_) @name) @definition.member))
 (#not-match? @name "^[*&\\s]*(operator\\b|~|[A-Za-z_][A-Za-z0-9_:]*\\s*\\()"))

((template_declaration
  (declaration declarator: (_) @name) @definition.variable)
 (#not-match? @name "^[*&\\s]*(operator\\b|~|[A-Za-z_][A-Za-z0-9_:]*\\s*\\()"))

; A namespace or class whose block tree-sitter could not parse (unexpanded
; macros inside) is still named right after its keyword.
; `namespace a::b MACRO(…) {` defines both.
(ERROR
  "namespace"
  .
  [
    (identifier) @name
    (namespace_identifier) @name
    (nested_namespace_specifier (namespace_identifier) @name)
  ]) @definition.namespace

(type_definition declarator: (_) @name) @definition.typedef

; `using size_type = unsigned;` is a typedef to ctags.
(alias_declaration name: (type_identifier) @name) @definition.typedef

; Variables: declarations outside any function body (at the top level, in a
; namespace, a preprocessor conditional or an `extern "C"` block) that are not
; prototypes or `extern`s, as in grammars/c.scm (with its `#ends-statement?`
; for an attribute after the declarator), nor prototypes misread because of a
; macro (as for members above). A literal after the `(` (`std::string
; name("x");`) makes it a constructor call, not a parameter list, and a second
; `(` an attribute (`char *__attribute__((aligned(8))) *p;`).
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
 (#not-match? @name "^[*&\\s]*(operator\\b|~|[A-Za-z_][A-Za-z0-9_:]*\\s*\\(\\s*[^\"'0-9\\s(])")
 (#not-match? @definition.variable "^[^=;{(<\\[]*(\\w\\s*\\(\\s*[^*&^\\s(\"'0-9]|[A-Za-z0-9]\\s*\\(\\s*\\()")
 (#ends-statement? @definition.variable))

; `typedef MACRO(T) name;` may also read as a parenthesized declarator, and the
; name as an ERROR after it (tree-sitter-c reads a macro type, so C needs no such
; pattern, which there would take the last parameter of a broken function-pointer
; typedef).
(type_definition
  declarator: (parenthesized_declarator)
  (ERROR . (identifier) @name .)) @definition.typedef

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
