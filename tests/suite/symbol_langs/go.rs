//! Go through find_symbol: regressions of shapes the grammar parses oddly (the fixture
//! with one of every kind is in `symbols.rs`).

use crate::suite::symbols::Fixture;

/// A parenthesised group on one line (`const (A = 1)`) is valid Go that tree-sitter-go
/// parses with its spec in an error node; the spec is still a definition, as for ctags.
#[test]
fn go_one_line_const_and_var_groups() {
    let f = Fixture::new(&[(
        "limits.go",
        "package limits\n\nconst (Max = 8)\nvar (count int)\n",
    )]);
    assert_eq!(f.lines("Max"), ["Max [const] -> limits.go:3"]);
    assert_eq!(f.lines("count"), ["count [var] -> limits.go:4"]);
}
