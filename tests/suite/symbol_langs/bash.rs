//! Shell scripts through find_symbol: functions in every form the grammar reads, aliases,
//! what is not a definition, and the functions an unparsable construct leaves behind.

use metron::testing::Definitions;

use crate::suite::symbols::Fixture;

/// Functions written every way bash takes them, and aliases: the two kinds ctags tags
/// by default that find_symbol tags (heredoc markers and sourced scripts are not).
/// Line numbers matter.
pub(super) const LIB_SH: &str = "\
#!/bin/sh
alias ll='ls -l'
alias la=\"ls -a\" lt=ls

greet() {
    echo hi
}

function deploy {
    :
}

function build() {
    inner() { :; }
}

in_subshell() ( cd /tmp && ls )

checked() [[ -n $1 ]]

when() if true; then :; fi

  spaced   ()
{
    cat <<EOF
greet() is not defined here
EOF
}

. ./other.sh
";

#[test]
fn every_shell_kind() {
    let f = Fixture::new(&[("lib.sh", LIB_SH)]);
    let cases: &[(&str, &[&str])] = &[
        ("ll", &["ll [alias] -> lib.sh:2"]),
        ("la", &["la [alias] -> lib.sh:3"]),
        ("greet", &["greet [function] -> lib.sh:5"]),
        ("deploy", &["deploy [function] -> lib.sh:9"]),
        ("build", &["build [function] -> lib.sh:13"]),
        ("in_subshell", &["in_subshell [function] -> lib.sh:17"]),
        ("checked", &["checked [function] -> lib.sh:19"]),
        ("when", &["when [function] -> lib.sh:21"]),
        ("spaced", &["spaced [function] -> lib.sh:23"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
}

/// A function defined in another's body is defined globally when the outer one runs:
/// ctags gives it no scope, and neither does find_symbol.
#[test]
fn nested_shell_functions_have_no_scope() {
    let f = Fixture::new(&[("lib.sh", LIB_SH)]);
    assert_eq!(f.lines("inner"), ["inner [function] -> lib.sh:14"]);
}

/// Every word of an `alias` line that assigns is an alias (ctags tags only the first);
/// `alias name` alone prints one, and an option is no name.
#[test]
fn every_assigning_word_of_an_alias_line_is_an_alias() {
    let f = Fixture::new(&[("lib.sh", LIB_SH)]);
    assert_eq!(f.lines("lt"), ["lt [alias] -> lib.sh:3"]);
    let Some(defs) = Definitions::new().of("aliases.zsh", b"alias shown\nalias -g G='| grep'\n")
    else {
        panic!("the shell grammar is compiled in");
    };
    assert_eq!(defs, [("G".to_owned(), 2, "alias")]);
}

/// A here-document's end marker, a function in its text and a sourced file are not
/// definitions.
#[test]
fn heredocs_and_sourced_files_define_nothing() {
    let Some(defs) = Definitions::new().of("lib.sh", LIB_SH.as_bytes()) else {
        panic!("the shell grammar is compiled in");
    };
    for absent in ["EOF", "other.sh", "./other.sh"] {
        assert!(defs.iter().all(|(name, _, _)| name != absent), "{defs:?}");
    }
    assert_eq!(
        defs.iter().filter(|(name, _, _)| name == "greet").count(),
        1,
        "{defs:?}"
    );
}

/// ctags' extensions for the shell, `.SH` included; a script without one is not read.
#[test]
fn shell_scripts_by_extension() {
    for path in ["a.sh", "a.SH", "a.bsh", "a.bash", "a.ksh", "a.zsh", "a.ash"] {
        assert!(metron::testing::symbol_file(path), "{path}");
    }
    assert!(!metron::testing::symbol_file("bin/configure"));
}

/// The grammar cannot parse an extended glob group with a blank inside it in
/// `[[ == ]]` (`*@(asc|sig )*`), which the rewrite before parsing leaves alone: the
/// function header before it is left as a command followed by an error, or as loose
/// tokens in one, and is still found.
#[test]
fn a_function_around_an_unparsable_glob_is_still_found() {
    let source = "\
_tool()
{
    if [[ $line == *@(asc|sig )* ]]; then
        return
    fi
}
";
    let Some(defs) = Definitions::new().of("tool.bash", source.as_bytes()) else {
        panic!("the shell grammar is compiled in");
    };
    assert_eq!(defs, [("_tool".to_owned(), 1, "function")]);
    let commented = format!("# tool(1) completion\n\n{source}");
    let Some(defs) = Definitions::new().of("tool.bash", commented.as_bytes()) else {
        panic!("the shell grammar is compiled in");
    };
    assert_eq!(defs, [("_tool".to_owned(), 3, "function")]);
}

/// `COMPREPLY=()` in a region the grammar could not parse is an array assignment, not
/// a function `COMPREPLY`.
#[test]
fn an_empty_array_assignment_is_no_function() {
    let source = "\
# tool(1) completion

_tool()
{
    COMPREPLY=()
    if [[ $line == *@(asc|sig )* ]]; then
        return
    fi
}
";
    let Some(defs) = Definitions::new().of("tool.bash", source.as_bytes()) else {
        panic!("the shell grammar is compiled in");
    };
    assert!(
        defs.iter().all(|(name, _, _)| name != "COMPREPLY"),
        "{defs:?}"
    );
}

/// The functions of `source`, through the real extraction path, by name and line.
fn shell_functions(source: &str) -> Vec<(String, usize, &'static str)> {
    let Some(defs) = Definitions::new().of("lib.bash", source.as_bytes()) else {
        panic!("the shell grammar is compiled in");
    };
    defs
}

/// A `=~` bracket expression whose first member is `]` (`[^]]`): tree-sitter-bash
/// loses the function around it and every one after it unless the `]` is overwritten
/// before parsing.
#[test]
fn a_regex_bracket_opening_with_a_close_bracket_loses_nothing() {
    let source = "\
_pick()
{
    if [[ $1 =~ ^key\\[([^]]*)$ ]]; then
        echo \"${BASH_REMATCH[1]}\"
    fi
}

_after() { echo \"done\"; }
";
    assert_eq!(
        shell_functions(source),
        [
            ("_pick".to_owned(), 1, "function"),
            ("_after".to_owned(), 8, "function"),
        ]
    );
}

/// A line continuation between `=~` and its regular expression.
#[test]
fn a_regex_on_the_next_line_loses_nothing() {
    let source = "\
_split()
{
    while [[ $1 =~ \\
        ^([a-z]+)-(.*)$ ]]; do
        set -- \"${BASH_REMATCH[2]}\"
    done
}

_after() { echo \"done\"; }
";
    assert_eq!(
        shell_functions(source),
        [
            ("_split".to_owned(), 1, "function"),
            ("_after".to_owned(), 9, "function"),
        ]
    );
}

/// An extended glob group after other text of the word, in `[[ == ]]`.
#[test]
fn an_extglob_group_inside_a_word_loses_nothing() {
    let source = "\
_archive()
{
    [[ $1 == *.@(tar|zip) ]] && echo archive
}

_after() { echo \"done\"; }
";
    assert_eq!(
        shell_functions(source),
        [
            ("_archive".to_owned(), 1, "function"),
            ("_after".to_owned(), 6, "function"),
        ]
    );
}

/// A brace in a bracket expression of a parameter expansion's pattern.
#[test]
fn a_brace_in_an_expansion_pattern_loses_nothing() {
    let source = "\
_stem()
{
    local word=${1%%[({]*}
    echo \"$word\"
}

_after() { echo \"done\"; }
";
    assert_eq!(
        shell_functions(source),
        [
            ("_stem".to_owned(), 1, "function"),
            ("_after".to_owned(), 7, "function"),
        ]
    );
}

/// A `]` that opens a parameter expansion's pattern (`${1%]}`, a trailing bracket cut).
#[test]
fn a_close_bracket_opening_an_expansion_pattern_loses_nothing() {
    let source = "\
_host()
{
    local host=\"${1%]}\"
    echo \"$host\"
}

_after() { echo \"done\"; }
";
    assert_eq!(
        shell_functions(source),
        [
            ("_host".to_owned(), 1, "function"),
            ("_after".to_owned(), 7, "function"),
        ]
    );
}

/// An extended glob group that opens its word and holds a bracket expression
/// (`@(*/|[.~])*`, a path or not).
#[test]
fn an_extglob_group_with_brackets_loses_nothing() {
    let source = "\
_modules()
{
    if [[ $1 == @(*/|[.~])* ]]; then
        echo \"path\"
    fi
}

_after() { echo \"done\"; }
";
    assert_eq!(
        shell_functions(source),
        [
            ("_modules".to_owned(), 1, "function"),
            ("_after".to_owned(), 8, "function"),
        ]
    );
}

/// A `[ ]` test whose operator is a variable (`[ "$op" "$d" ]`) makes an error the
/// grammar does not recover from, and no rewrite helps: the headers after it are still
/// found in the error.
#[test]
fn functions_after_a_test_with_a_variable_operator_are_found() {
    let source = "\
find_dir()
{
  local op=$1
  shift
  for d in \"$@\"; do
    [ \"$op\" \"$d\" ] || continue
    echo \"$d\"
    return 0
  done
  return 1
}

running()
{
  [ -f \"$1\" ] || return 1
}

started()
{
  echo \"yes\"
}
";
    assert_eq!(
        shell_functions(source),
        [
            ("find_dir".to_owned(), 1, "function"),
            ("running".to_owned(), 13, "function"),
            ("started".to_owned(), 18, "function"),
        ]
    );
}
