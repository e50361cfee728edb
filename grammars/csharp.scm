; Definitions in C# source, for find_symbol.
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, where <kind> is the Universal Ctags kind name that ctags
; --fields=+nK prints.
;
; C# has no local types, and members live only in the declaration_list of a
; type (a local function is a local_function_statement, which ctags does not
; tag either, except at the top level: see below), so no pattern needs anchoring
; to keep out of method bodies.
; What ctags names by punctuation is left out: an operator (`operator +`) and an
; indexer (`this[int i]`) have no identifier. A conversion operator is named by
; its type, `operator byte`, as ctags names it (extract.rs reads the name from
; the `operator` keyword to the parameters).

; The whole dotted name, as ctags prints it (`Python.Runtime.Codecs`);
; principal_name keeps a namespace's qualified_name whole. A file-scoped
; namespace (`namespace A.B;`) is unknown to ctags 5.9 but is the same thing.
(namespace_declaration
  name: [(identifier) (qualified_name)] @name) @definition.namespace

(file_scoped_namespace_declaration
  name: [(identifier) (qualified_name)] @name) @definition.namespace

(class_declaration name: (identifier) @name) @definition.class

; ctags 5.9 does not know records (it tags one as a method named after it, on
; the same line); a record is a class.
(record_declaration name: (identifier) @name) @definition.class

(struct_declaration name: (identifier) @name) @definition.struct

(interface_declaration name: (identifier) @name) @definition.interface

(enum_declaration name: (identifier) @name) @definition.enum

(enum_member_declaration name: (identifier) @name) @definition.enumerator

; ctags has no delegate kind and tags a delegate as a method; so does this.
; Constructors are methods too. A destructor is named by its class here
; (ctags names it `~Greeter`, which no identifier in the tree spells).
[
  (method_declaration name: (identifier) @name)
  (constructor_declaration name: (identifier) @name)
  (destructor_declaration name: (identifier) @name)
  (delegate_declaration name: (identifier) @name)
] @definition.method

(conversion_operator_declaration "operator" @name) @definition.method

; One match per declarator: `int a, b;` defines two fields.
(field_declaration
  (variable_declaration
    (variable_declarator name: (identifier) @name))) @definition.field

(property_declaration name: (identifier) @name) @definition.property

; A field-like event, and one with add/remove accessors (which ctags calls a
; property).
(event_field_declaration
  (variable_declaration
    (variable_declarator name: (identifier) @name))) @definition.event

(event_declaration name: (identifier) @name) @definition.event

; `using Alias = System.Text;`
(using_directive name: (identifier) @name) @definition.typedef

(preproc_define (preproc_arg) @name) @definition.macro

; A function written at the top level of a file (C# 9's top-level statements,
; or a script) is a local function of the program to the grammar, but it is
; called like a method and ctags tags it as one. Local functions inside bodies
; stay out.
(global_statement
  (local_function_statement name: (identifier) @name) @definition.method)
