; Definitions in Rust source, for find_symbol.
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, where <kind> is the Universal Ctags kind name that ctags
; --fields=+nK prints (a trait is `interface`, an impl block is
; `implementation`, a static is `variable`). ctags has no kind for `const`
; items and unions; they are `constant` and `union` here. When several
; patterns capture the same name node, the pattern written first wins, so the
; method patterns come before the plain function ones.

; Functions inside impl and trait blocks are methods.
(impl_item
  body: (declaration_list
    (function_item name: (identifier) @name) @definition.method))

(trait_item
  body: (declaration_list
    [
      (function_item name: (identifier) @name)
      (function_signature_item name: (identifier) @name)
    ] @definition.method))

; Free functions, nested functions, and declarations in extern blocks.
(function_item name: (identifier) @name) @definition.function

(function_signature_item name: (identifier) @name) @definition.function

(mod_item name: (identifier) @name) @definition.module

(struct_item name: (type_identifier) @name) @definition.struct

(enum_item name: (type_identifier) @name) @definition.enum

(union_item name: (type_identifier) @name) @definition.union

(enum_variant name: (identifier) @name) @definition.enumerator

(field_declaration name: (field_identifier) @name) @definition.field

(trait_item name: (type_identifier) @name) @definition.interface

(type_item name: (type_identifier) @name) @definition.typedef

(associated_type name: (type_identifier) @name) @definition.typedef

; An impl block is named after the implementing type, as ctags names it: the
; capture is the whole self type, and extract.rs reduces it to one identifier
; (`Point` for `impl Point`, `impl<T> Tr for Pair<T>`, `impl fmt::Display for
; crate::Point`, `impl Tr for &'a Point`; `u8` for `[u8]`; the last element of a
; tuple and the last bound of `dyn A + B`, like ctags). Its line is the line of
; `impl`, like ctags, which matters for headers split over several lines.
(impl_item type: (_) @name) @definition.implementation

(macro_definition name: (identifier) @name) @definition.macro

(static_item name: (identifier) @name) @definition.variable

(const_item name: (identifier) @name) @definition.constant
