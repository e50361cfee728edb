; Definitions in Python source, for find_symbol.
;
; Each pattern captures the defined identifier as @name and the construct as
; @definition.<kind>, a Universal Ctags Python kind: class, function, member
; (a function whose nearest enclosing definition is a class), variable,
; namespace (`import a.b as ab`) and unknown (`from m import p as q`). When
; several patterns capture the same name node the first one written wins, so
; the specific patterns come first (a lambda bound to a name before the plain
; variable, a method before the plain function).
;
; ctags tags assignments only where they define a module or class attribute:
; at module or class level, including inside if/for/while/with/try there, never
; inside a function. A query cannot say "no function above", so those patterns
; list the chains of ancestors up to the module or the class body, spelling out
; the compound statements in between: one or two levels of if/for/while/with/try
; (the statement's own block, or the block of its elif/else/except/finally
; clause). In a chain (`#has-ancestors?`, tested in Rust: see lang.rs,
; AncestorTest) `_` is any named node without a `name` field; above a block
; that is exactly a compound statement or one of its clauses, since a function
; or class has a name. Written as nested patterns (`(module (_ !name (block
; …)))`), the chains cost most of this query's compile time.

; A lambda bound to a name is a function (a method in a class body), wherever
; it is, as ctags reads it.
(class_definition body: (block
  (expression_statement (assignment left: (identifier) @name right: (lambda)) @definition.member)))
(expression_statement (assignment left: (identifier) @name right: (lambda)) @definition.function)

; Methods: functions in a class body, decorated or not, also under one or two
; levels of if/try there.
((function_definition name: (identifier) @name) @definition.member
 (#has-ancestors? @definition.member
  "block class_definition"
  "decorated_definition block class_definition"
  "block _ block class_definition"
  "decorated_definition block _ block class_definition"
  "block _ _ block class_definition"
  "decorated_definition block _ _ block class_definition"))

; Every other function, nested ones included (ctags scopes them by the
; enclosing function or method).
(function_definition name: (identifier) @name) @definition.function

(class_definition name: (identifier) @name) @definition.class

; `import a.b as ab` binds a module: ctags' namespace. A plain `import a.b`
; only refers to one (ctags' reference-only `module` kind, not emitted).
(import_statement name: (aliased_import alias: (identifier) @name) @definition.namespace)

; `from m import p as q`: ctags cannot tell whether `p` is a class, function
; or variable of `m`, and tags `q` as `unknown` (enabled by default). Where the
; name comes from is worth finding, so it is tagged too.
(import_from_statement name: (aliased_import alias: (identifier) @name) @definition.unknown)

; Module and class attributes: `A = 1`, `A: int = 1`, `A, B = 1, 2`, at the
; levels described at the top. An annotation without a value (`A: int`) binds
; nothing and ctags does not tag it; `(G, H) = ...` and the inner names of
; `t = u = 1` are not tagged by ctags either.
((assignment
   left: [(identifier) @name (pattern_list (identifier) @name)]
   right: (_)) @definition.variable
 (#has-ancestors? @definition.variable
  "expression_statement module"
  "expression_statement block _ module"
  "expression_statement block _ _ module"
  "expression_statement block _ block _ module"
  "expression_statement block _ _ block _ module"
  "expression_statement block _ block _ _ module"
  "expression_statement block _ _ block _ _ module"
  "expression_statement block class_definition"
  "expression_statement block _ block class_definition"
  "expression_statement block _ _ block class_definition"
  "expression_statement block _ block _ block class_definition"
  "expression_statement block _ _ block _ block class_definition"
  "expression_statement block _ block _ _ block class_definition"
  "expression_statement block _ _ block _ _ block class_definition"))
