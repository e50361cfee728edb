; Definitions in shell scripts (sh, bash, ksh, zsh), for find_symbol.
;
; Each pattern captures the defined name as @name and the construct as
; @definition.<kind>, a Universal Ctags Sh kind. ctags enables four: function,
; alias, heredoc and script. script is reference-only (the file a `source`
; line reads), and heredoc names the end marker of a here-document (`EOF`),
; a delimiter nobody looks up, which every script repeats; neither is tagged.
;
; ctags tags functions and aliases wherever they are (in an `if`, a `case`
; arm, another function's body), so nothing is anchored to the top level.

; `f() {`, `function f {`, `function f() {`, with a body of `{ }`, `( )`,
; `[[ ]]` or `if`: the grammar gives all of them the same node.
(function_definition name: (word) @name) @definition.function

; `alias ll='ls -l'`, `alias la="ls -a" lt=ls`: each word that assigns is an
; alias, named by what is before its `=` (extract.rs cuts a `word` there).
; `alias name` alone prints an alias rather than defining one, and an option
; (`alias -g`) is not a name, so both are left out.
(command
  name: (command_name) @definition.alias
  (#eq? @definition.alias "alias")
  argument: [
    (word) @name
    (concatenation . (word) @name)
  ]
  (#match? @name "^[^-=][^=]*="))

; The grammar does not parse some of bash. The patterns that lost the rest of a
; file are rewritten before parsing (src/tools/symbols/shell_source.rs); what is
; left, an extended glob group with a blank inside (`@(a|b )`) or a `;;&` case
; terminator, can leave the function around it an ERROR in which `name ( )` and
; `function name` may still stand as tokens. A word right before `( )` is
; nothing else in shell but an empty array assignment (`COMPREPLY=()`), and
; `function` is a reserved word.
(ERROR
  (word) @name . "(" . ")"
  (#not-match? @name "=")) @definition.function

(ERROR "function" . (word) @name) @definition.function

; The error may start right after the name, which then reads as a command.
(
  (command name: (command_name (word) @name)) @definition.function
  .
  (ERROR . "(" . ")")
)

; A `[ ]` test whose operator is a variable (`[ "$op" "$path" ]`) also starts an
; error that runs on, in which a later header's name may be left as a word right
; before an ERROR opening with `( )`, or as the last word of a command the error
; joined it to. Either way the `( )` right after a word can only be a header.
(
  (word) @name @definition.function
  .
  (ERROR . "(" . ")")
  (#not-match? @name "=")
)

(ERROR
  (command argument: (word) @name .) @definition.function
  .
  "(" . ")"
  (#not-match? @name "="))
