; Definitions in Java source, for find_symbol.
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, where <kind> is the Universal Ctags kind name that ctags
; --fields=+nK prints.
;
; ctags tags the package, top-level types, and the members of named types, at
; any nesting depth; it does not tag anything inside a method body (local
; classes, and the methods of anonymous classes and lambdas) nor the methods in
; the body of an enum constant (`RED { void f() {} }`). So members are matched
; only as direct children of the body of a named type declaration, and types
; at the top level, as such members, or (unlike ctags) as local types: each
; container below lists what it may hold. An anonymous class has no name to
; find its methods by, so its body is no container.

; The whole dotted name, as ctags prints it (`java.util.concurrent`);
; principal_name keeps a package's scoped_identifier whole. It names the
; file's namespace (file_scope_kind in lang.rs), so `util.HashMap.put` narrows.
(package_declaration
  [(identifier) (scoped_identifier)] @name) @definition.package

(program
  [
    (class_declaration name: (identifier) @name) @definition.class
    ; ctags 5.9 does not know records (it tags one as a method named after
    ; it, on the same line); a record is a class.
    (record_declaration name: (identifier) @name) @definition.class
    (interface_declaration name: (identifier) @name) @definition.interface
    (enum_declaration name: (identifier) @name) @definition.enum
    (annotation_type_declaration name: (identifier) @name) @definition.annotation
  ])

; A file cut short (`class C {` then end of input, as while it is being written)
; parses as one ERROR node holding the tokens: the identifier after the `class`,
; `interface` or `enum` keyword is still the type it declares, as ctags tags it.
(ERROR "class" . (identifier) @name) @definition.class
(ERROR "interface" . (identifier) @name) @definition.interface
(ERROR "enum" . (identifier) @name) @definition.enum

; Local types, declared in a method body. ctags skips them, but the members
; of a named type are matched wherever that type is, so their members are
; tagged (a query cannot tell a local class's body from any other); tagging
; the type too keeps the answer whole: `Itr` and `Itr.hasNext` both resolve.
(block
  [
    (class_declaration name: (identifier) @name) @definition.class
    (record_declaration name: (identifier) @name) @definition.class
    (interface_declaration name: (identifier) @name) @definition.interface
    (enum_declaration name: (identifier) @name) @definition.enum
  ])

(class_declaration
  body: (class_body
    [
      (class_declaration name: (identifier) @name) @definition.class
      (record_declaration name: (identifier) @name) @definition.class
      (interface_declaration name: (identifier) @name) @definition.interface
      (enum_declaration name: (identifier) @name) @definition.enum
      (annotation_type_declaration name: (identifier) @name) @definition.annotation
      ; Constructors are methods to ctags, and so is a record's compact
      ; constructor here.
      (method_declaration name: (identifier) @name) @definition.method
      (constructor_declaration name: (identifier) @name) @definition.method
      (compact_constructor_declaration name: (identifier) @name) @definition.method
      ; One match per declarator: `int a, b;` defines two fields.
      (field_declaration
        declarator: (variable_declarator name: (identifier) @name)) @definition.field
    ]))

(record_declaration
  body: (class_body
    [
      (class_declaration name: (identifier) @name) @definition.class
      (record_declaration name: (identifier) @name) @definition.class
      (interface_declaration name: (identifier) @name) @definition.interface
      (enum_declaration name: (identifier) @name) @definition.enum
      (annotation_type_declaration name: (identifier) @name) @definition.annotation
      (method_declaration name: (identifier) @name) @definition.method
      (constructor_declaration name: (identifier) @name) @definition.method
      (compact_constructor_declaration name: (identifier) @name) @definition.method
      (field_declaration
        declarator: (variable_declarator name: (identifier) @name)) @definition.field
    ]))

; An enum's constants come first; its other members follow the `;`.
(enum_declaration
  body: (enum_body
    (enum_constant name: (identifier) @name) @definition.enumConstant))

(enum_declaration
  body: (enum_body
    (enum_body_declarations
      [
        (class_declaration name: (identifier) @name) @definition.class
        (record_declaration name: (identifier) @name) @definition.class
        (interface_declaration name: (identifier) @name) @definition.interface
        (enum_declaration name: (identifier) @name) @definition.enum
        (annotation_type_declaration name: (identifier) @name) @definition.annotation
        (method_declaration name: (identifier) @name) @definition.method
        (constructor_declaration name: (identifier) @name) @definition.method
        (compact_constructor_declaration name: (identifier) @name) @definition.method
        (field_declaration
          declarator: (variable_declarator name: (identifier) @name)) @definition.field
      ])))

; Interface constants are fields; its methods (abstract, default or static)
; are methods.
(interface_declaration
  body: (interface_body
    [
      (class_declaration name: (identifier) @name) @definition.class
      (record_declaration name: (identifier) @name) @definition.class
      (interface_declaration name: (identifier) @name) @definition.interface
      (enum_declaration name: (identifier) @name) @definition.enum
      (annotation_type_declaration name: (identifier) @name) @definition.annotation
      (method_declaration name: (identifier) @name) @definition.method
      (constant_declaration
        declarator: (variable_declarator name: (identifier) @name)) @definition.field
    ]))

; An annotation type's elements (`String value() default "";`) are methods to
; ctags; its constants are fields.
(annotation_type_declaration
  body: (annotation_type_body
    [
      (class_declaration name: (identifier) @name) @definition.class
      (record_declaration name: (identifier) @name) @definition.class
      (interface_declaration name: (identifier) @name) @definition.interface
      (enum_declaration name: (identifier) @name) @definition.enum
      (annotation_type_declaration name: (identifier) @name) @definition.annotation
      (annotation_type_element_declaration name: (identifier) @name) @definition.method
      (constant_declaration
        declarator: (variable_declarator name: (identifier) @name)) @definition.field
    ]))
