; Definitions in Ruby source, for find_symbol.
;
; Each pattern captures the defined name as @name and the construct as
; @definition.<kind>, a Universal Ctags Ruby kind: module, class, method,
; singletonMethod, constant, accessor and alias. When several patterns capture
; the same name node the first one written wins, so the methods of a
; `class << self` block (singleton methods, for ctags) come before the plain
; method.
;
; ctags tags definitions wherever they are, inside blocks (`included do ... end`,
; `Class.new do ... end`) and method bodies too, so nothing here is anchored to
; the top level.

(module name: [
  (constant) @name
  (scope_resolution name: (constant) @name)
]) @definition.module

; `class A::B::C` is named C, as ctags names it.
(class name: [
  (constant) @name
  (scope_resolution name: (constant) @name)
]) @definition.class

(singleton_class
  value: (self)
  body: (body_statement (method name: (_) @name) @definition.singletonMethod))

; `def self.x`, `def Const.x` and `def obj.x` alike.
(singleton_method name: (_) @name) @definition.singletonMethod

(method name: (_) @name) @definition.method

; `X = ...` anywhere; `X ||= ...`, `A, B = ...` and `::X = ...` are not tagged
; by ctags.
(assignment left: (constant) @name) @definition.constant

; `attr_reader :a, :b`: one accessor per name. The method name is captured as the
; construct, which lets a predicate test its text without a capture find_symbol
; would not know. attr_reader and attr_accessor define the reader `a`;
; attr_writer and attr_accessor the writer `a=`, a name not in the source, which
; the `suffix` property makes (extract.rs). ctags tags both, as accessors.
; `attr_writer (:a)`, with a space before the parenthesis, parses as one
; parenthesised argument; ctags tags it the same.
(call
  method: (identifier) @definition.accessor
  (#match? @definition.accessor "^attr_(reader|accessor)$")
  arguments: (argument_list [
    (simple_symbol) @name
    (string (string_content) @name)
    (parenthesized_statements (simple_symbol) @name)
    (parenthesized_statements (string (string_content) @name))
  ]))

(call
  method: (identifier) @definition.accessor
  (#match? @definition.accessor "^attr_(writer|accessor)$")
  arguments: (argument_list [
    (simple_symbol) @name
    (string (string_content) @name)
    (parenthesized_statements (simple_symbol) @name)
    (parenthesized_statements (string (string_content) @name))
  ])
  (#set! suffix "="))

; `alias new old`, `alias :new :old`, `alias $new $old`: the new name.
(alias name: (_) @name) @definition.alias

; `alias_method :new, :old`: the first argument.
(call
  method: (identifier) @definition.alias
  (#eq? @definition.alias "alias_method")
  arguments: (argument_list .
    [
      (simple_symbol) @name
      (string (string_content) @name)
    ]))
