//! C through find_symbol: one of every default ctags C kind, struct/union/enum scopes
//! (nested, and a typedef'd anonymous struct named by its typedef), qualified lookups.

use crate::suite::symbols::Fixture;

pub(super) const POINT_C: &str = "\
#define MAX 10
#define SQUARE(x) ((x) * (x))
struct point {
    int x;
    int (*on_move)(struct point *p);
    struct inner { int depth; } in;
};
typedef struct { int width; } size_t2;
union value { int i; float f; };
enum color { RED, GREEN = 2 };
typedef int (*handler_t)(int);
int counter = 0;
static char *names[4];
int (*hook)(int);
extern int elsewhere;
char *prototype(void);
static char *make_name(int n) { int local = n; return names[local]; }
int main(void) { return 0; }
";

fn fixture() -> Fixture {
    Fixture::new(&[("src/point.c", POINT_C)])
}

#[test]
fn c_every_default_kind_is_found_with_its_scope() {
    let f = fixture();
    let cases: &[(&str, &[&str])] = &[
        ("MAX", &["MAX [macro] -> src/point.c:1"]),
        ("SQUARE", &["SQUARE [macro] -> src/point.c:2"]),
        ("point", &["point [struct] -> src/point.c:3"]),
        ("x", &["x [member] point -> src/point.c:4"]),
        ("on_move", &["on_move [member] point -> src/point.c:5"]),
        ("inner", &["inner [struct] point -> src/point.c:6"]),
        ("depth", &["depth [member] point::inner -> src/point.c:6"]),
        ("in", &["in [member] point -> src/point.c:6"]),
        ("width", &["width [member] size_t2 -> src/point.c:8"]),
        ("size_t2", &["size_t2 [typedef] -> src/point.c:8"]),
        ("value", &["value [union] -> src/point.c:9"]),
        ("f", &["f [member] value -> src/point.c:9"]),
        ("color", &["color [enum] -> src/point.c:10"]),
        ("GREEN", &["GREEN [enumerator] color -> src/point.c:10"]),
        ("handler_t", &["handler_t [typedef] -> src/point.c:11"]),
        ("counter", &["counter [variable] -> src/point.c:12"]),
        ("names", &["names [variable] -> src/point.c:13"]),
        ("hook", &["hook [variable] -> src/point.c:14"]),
        ("make_name", &["make_name [function] -> src/point.c:17"]),
        ("main", &["main [function] -> src/point.c:18"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
}

#[test]
fn c_declarations_that_define_nothing_are_not_found() {
    let f = fixture();
    // An extern declaration, a prototype, a local and a parameter: ctags tags none of
    // them by default.
    for name in ["elsewhere", "prototype", "local", "n", "p"] {
        let lines = f.lines(name);
        assert!(
            lines
                .iter()
                .all(|line| !line.starts_with(&format!("{name} ["))),
            "find_symbol({name}): {lines:?}"
        );
    }
}

#[test]
fn c_qualified_names_narrow_the_answer() {
    let f = fixture();
    for query in ["point.x", "point::x"] {
        assert_eq!(
            f.lines(query),
            ["x [member] point -> src/point.c:4"],
            "{query}"
        );
    }
    for query in ["point::inner::depth", "inner.depth"] {
        assert_eq!(
            f.lines(query),
            ["depth [member] point::inner -> src/point.c:6"],
            "{query}"
        );
    }
    assert_eq!(
        f.lines("size_t2.width"),
        ["width [member] size_t2 -> src/point.c:8"]
    );
    assert_eq!(
        f.lines("color::GREEN"),
        ["GREEN [enumerator] color -> src/point.c:10"]
    );
}

#[test]
fn c_variable_with_a_trailing_attribute_is_found() {
    // The grammar takes no attribute after a top-level declarator and makes up a `;`
    // before it; the variable is still one. A pre-ANSI parameter macro in the same
    // place (`__P((…))`) makes a prototype, which ctags does not tag by default, and
    // so does a macro before a function's name, where the type is no variable.
    // One file each: tree-sitter's recovery from one such line reaches into the next.
    let f = Fixture::new(&[
        (
            "src/counter.c",
            "static int counter __attribute__((unused));\n",
        ),
        (
            "src/slots.c",
            "struct table *slots[MAX_SLOTS] __cacheline_aligned;\n",
        ),
        ("src/legacy.c", "void legacy __P((int a));\n"),
        (
            "src/zip.c",
            "API_EXTERN long API_CALL compress_all(int level);\n",
        ),
        ("src/setup.c", "static char __init setup_all(void);\n"),
    ]);
    assert_eq!(
        f.lines("counter"),
        ["counter [variable] -> src/counter.c:1"]
    );
    assert_eq!(f.lines("slots"), ["slots [variable] -> src/slots.c:1"]);
    for name in ["legacy", "long", "char"] {
        let lines = f.lines(name);
        assert!(
            lines
                .iter()
                .all(|line| !line.starts_with(&format!("{name} ["))),
            "find_symbol({name}): {lines:?}"
        );
    }
}

#[test]
fn c_weak_symbol_of_a_pragma_is_a_macro() {
    // ctags tags the weak symbol `#pragma weak` declares as a macro; the target is
    // only referred to.
    let f = Fixture::new(&[(
        "src/weak.c",
        "#pragma once\n#pragma weak fast_copy = slow_copy\n#pragma weak spare_hook\n",
    )]);
    assert_eq!(f.lines("fast_copy"), ["fast_copy [macro] -> src/weak.c:2"]);
    assert_eq!(
        f.lines("spare_hook"),
        ["spare_hook [macro] -> src/weak.c:3"]
    );
    let lines = f.lines("slow_copy");
    assert!(
        lines.iter().all(|line| !line.starts_with("slow_copy [")),
        "{lines:?}"
    );
}

#[test]
fn c_type_written_by_a_macro_still_names_its_typedef_and_variable() {
    let f = Fixture::new(&[
        ("src/chain.c", "typedef ARRAY_OF(struct link) link_chain;\n"),
        ("src/data.c", "EXPORTED_DATA(struct table) default_table;\n"),
    ]);
    assert_eq!(
        f.lines("link_chain"),
        ["link_chain [typedef] -> src/chain.c:1"]
    );
    assert_eq!(
        f.lines("default_table"),
        ["default_table [variable] -> src/data.c:1"]
    );
}

#[test]
fn c_trigraph_define_is_a_macro() {
    // `??=` is `#` (C11 5.2.1.1); the grammar has no token for it, so the file is read
    // with it respelled, at the same offsets.
    let f = Fixture::new(&[(
        "src/tri.c",
        "??=define LIMIT 8\n??=define TWICE(x) ((x) * 2)\nint after_them;\n",
    )]);
    assert_eq!(f.lines("LIMIT"), ["LIMIT [macro] -> src/tri.c:1"]);
    assert_eq!(f.lines("TWICE"), ["TWICE [macro] -> src/tri.c:2"]);
    assert_eq!(
        f.lines("after_them"),
        ["after_them [variable] -> src/tri.c:3"]
    );
}

#[test]
fn c_trigraph_brackets_and_braces_make_a_struct_and_an_array_typedef() {
    let f = Fixture::new(&[(
        "src/cells.c",
        "typedef int row??(3??);\nstruct cell ??<\n    int value;\n??>;\n",
    )]);
    assert_eq!(f.lines("row"), ["row [typedef] -> src/cells.c:1"]);
    assert_eq!(f.lines("cell"), ["cell [struct] -> src/cells.c:2"]);
    assert_eq!(f.lines("value"), ["value [member] cell -> src/cells.c:3"]);
}

#[test]
fn c_trigraph_backslash_continues_the_macro() {
    // `??/` at the end of a line is a line continuation: the next line is the macro's
    // body, not a directive of its own.
    let f = Fixture::new(&[(
        "src/cont.c",
        "??=define SPAN 4 ??/\n#define inside_span\n??=define AFTER_SPAN 1\n",
    )]);
    assert_eq!(f.lines("SPAN"), ["SPAN [macro] -> src/cont.c:1"]);
    assert_eq!(
        f.lines("AFTER_SPAN"),
        ["AFTER_SPAN [macro] -> src/cont.c:3"]
    );
    let lines = f.lines("inside_span");
    assert!(
        lines.iter().all(|line| !line.starts_with("inside_span [")),
        "{lines:?}"
    );
}

#[test]
fn c_digraph_define_struct_body_and_function_body() {
    // `%:` is `#`, `<%` `%>` are braces and `<:` `:>` brackets (C11 6.4.6).
    let f = Fixture::new(&[(
        "src/di.c",
        "%:define PAIR_MAX 2\n\
         struct pair <%\n    int left;\n%>;\n\
         typedef int grid<:4:>;\n\
         int first(void)\n<%\n    return 0;\n%>\n",
    )]);
    assert_eq!(f.lines("PAIR_MAX"), ["PAIR_MAX [macro] -> src/di.c:1"]);
    assert_eq!(f.lines("pair"), ["pair [struct] -> src/di.c:2"]);
    assert_eq!(f.lines("left"), ["left [member] pair -> src/di.c:3"]);
    assert_eq!(f.lines("grid"), ["grid [typedef] -> src/di.c:5"]);
    assert_eq!(f.lines("first"), ["first [function] -> src/di.c:6"]);
}

#[test]
fn c_header_read_as_c_is_respelled_too() {
    // In a project with C sources and no C++ ones, `.h` is C, digraphs included.
    let f = Fixture::new(&[
        ("src/use.c", "int use_it;\n"),
        ("include/limits2.h", "%:define HEADER_LIMIT 2\n"),
    ]);
    assert_eq!(
        f.lines("HEADER_LIMIT"),
        ["HEADER_LIMIT [macro] -> include/limits2.h:1"]
    );
}

#[test]
fn c_array_with_call_like_attribute_macros_is_a_variable() {
    // After an array declarator and a reserved attribute word, a macro that reads as a
    // call is one more attribute: an array cannot be a function. The same words after a
    // plain name still make a function's name after a macro, not a variable.
    let f = Fixture::new(&[
        (
            "src/slots.c",
            "static int slot_table[SLOTS] __hot PLACED IN_SECTION(2, 3);\n",
        ),
        ("src/boot.c", "static int __cold BOOT_FN start_up(void);\n"),
    ]);
    assert_eq!(
        f.lines("slot_table"),
        ["slot_table [variable] -> src/slots.c:1"]
    );
    for name in ["PLACED", "IN_SECTION", "start_up", "BOOT_FN"] {
        let lines = f.lines(name);
        assert!(
            lines
                .iter()
                .all(|line| !line.starts_with(&format!("{name} ["))),
            "find_symbol({name}): {lines:?}"
        );
    }
}
