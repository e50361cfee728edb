; Definitions in Go source, for find_symbol.
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, where <kind> is the Universal Ctags kind name that ctags
; --fields=+nK prints. When several patterns capture the same name node, the
; pattern written first wins, so the specific patterns come before the general
; ones (struct and interface before the plain `type`).
;
; ctags tags only package-level declarations: locals, local constants and types
; declared inside function bodies are not definitions here either. The
; `source_file` anchors below and the cursor's start-depth limit (5, set in
; lang.rs) keep patterns out of function bodies.

(package_clause (package_identifier) @name) @definition.package

(function_declaration name: (identifier) @name) @definition.func

; ctags prints methods as `func` (with the receiver as scope).
(method_declaration name: (field_identifier) @name) @definition.func

(source_file
  (type_declaration
    (type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct))

(source_file
  (type_declaration
    (type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface))

(source_file
  (type_declaration
    (type_spec name: (type_identifier) @name) @definition.type))

(source_file
  (type_declaration
    (type_alias name: (type_identifier) @name) @definition.talias))

; The grammar puts the commas of `const A, B = 1, 2` inside the `name` field,
; so `name: (identifier)` would match only A. A plain child pattern matches
; every name; the values are wrapped in an expression_list, so they are not
; direct children.
(source_file
  (const_declaration
    (const_spec (identifier) @name) @definition.const))

(source_file
  (var_declaration
    (var_spec name: (identifier) @name) @definition.var))

(source_file
  (var_declaration
    (var_spec_list
      (var_spec name: (identifier) @name) @definition.var)))

; tree-sitter-go wants a `;` or a newline after the last spec of a group, so a
; group on one line (`const (A = 1)`, valid Go) holds its spec in an ERROR node;
; it is the same definition.
(source_file
  (const_declaration
    (ERROR (const_spec (identifier) @name) @definition.const)))

(source_file
  (var_declaration
    (var_spec_list
      (ERROR (var_spec name: (identifier) @name) @definition.var))))

(field_declaration name: (field_identifier) @name) @definition.member

; Embedded fields: `T`, `*T`, `pkg.T`, `T[int]`, `*pkg.T[int]`.
(field_declaration
  !name
  type: [
    (type_identifier) @name
    (qualified_type name: (type_identifier) @name)
    (generic_type type: (type_identifier) @name)
    (generic_type type: (qualified_type name: (type_identifier) @name))
  ]) @definition.anonMember

(method_elem name: (field_identifier) @name) @definition.methodSpec

(import_spec name: (package_identifier) @name) @definition.packageName
