; Definitions in Kotlin, for find_symbol.
;
; Each pattern captures the defined name as @name and the construct as
; @definition.<kind>, a Universal Ctags Kotlin kind: package, class, interface,
; object, method, constant, variable and typealias. ctags calls every `fun` a
; method (top-level, member, local or extension), every `val` a constant and every
; `var` a variable, at any depth (a function's locals too), and the properties
; of a primary constructor (`class P(val x: Int)`) as well; so does this query.

(package_header (qualified_identifier) @name) @definition.package

; An interface first: when two patterns capture the same name the first one
; written wins, and every other class_declaration is a class (`enum class`,
; `data class`, `annotation class`, whose keyword the grammar folds away).
(class_declaration "interface" name: (identifier) @name) @definition.interface

(class_declaration name: (identifier) @name) @definition.class

(object_declaration name: (identifier) @name) @definition.object

; ctags names an unnamed companion object `Companion`, a name not in the source;
; only a named one is tagged.
(companion_object name: (identifier) @name) @definition.object

(function_declaration name: (identifier) @name) @definition.method

(type_alias type: (identifier) @name) @definition.typealias

(property_declaration "val" (variable_declaration (identifier) @name)) @definition.constant

(property_declaration "var" (variable_declaration (identifier) @name)) @definition.variable

(class_parameter "val" (identifier) @name) @definition.constant

(class_parameter "var" (identifier) @name) @definition.variable
