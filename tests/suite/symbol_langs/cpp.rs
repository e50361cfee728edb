//! C++ through find_symbol: one of every default ctags C++ kind, namespace and class
//! scopes (nested, and out-of-class definitions scoped by their qualified name), `.h`
//! headers parsed as C++, and qualified lookups with `::` and `.`.

use crate::suite::symbols::Fixture;

pub(super) const STACK_HPP: &str = "\
#define STACK_MAX 64
namespace outer { namespace inner {
class Stack {
public:
    Stack();
    ~Stack() {}
    void push(int v);
    int top() const { return data[0]; }
    static int count;
    int data[10];
    bool operator==(const Stack& o) const { return true; }
    struct Node { int value; };
    enum class Mode { Fast, Slow };
    using size_type = unsigned;
private:
    int (*hook)(int);
};
} }
union Cell { int i; float f; };
int global_depth = 3;
template <typename T> T biggest(T a, T b) { return a > b ? a : b; }
";

pub(super) const STACK_CPP: &str = "\
#include \"stack.h\"
void outer::inner::Stack::push(int v) { typedef int local_t; }
int outer::inner::Stack::count = 0;
namespace outer {
inner::Stack::Stack() {}
}
";

fn fixture() -> Fixture {
    Fixture::new(&[("src/stack.h", STACK_HPP), ("src/stack.cpp", STACK_CPP)])
}

#[test]
fn cpp_every_default_kind_is_found_with_its_scope() {
    let f = fixture();
    let cases: &[(&str, &[&str])] = &[
        ("STACK_MAX", &["STACK_MAX [macro] -> src/stack.h:1"]),
        (
            "outer",
            &[
                "outer [namespace] -> src/stack.cpp:4",
                "outer [namespace] -> src/stack.h:2",
            ],
        ),
        ("inner", &["inner [namespace] outer -> src/stack.h:2"]),
        (
            "Stack",
            &[
                "Stack [function] outer::inner::Stack -> src/stack.cpp:5",
                "Stack [class] outer::inner -> src/stack.h:3",
            ],
        ),
        (
            "push",
            &["push [function] outer::inner::Stack -> src/stack.cpp:2"],
        ),
        (
            "top",
            &["top [function] outer::inner::Stack -> src/stack.h:8"],
        ),
        (
            "count",
            &[
                "count [member] outer::inner::Stack -> src/stack.cpp:3",
                "count [member] outer::inner::Stack -> src/stack.h:9",
            ],
        ),
        (
            "data",
            &["data [member] outer::inner::Stack -> src/stack.h:10"],
        ),
        (
            "Node",
            &["Node [struct] outer::inner::Stack -> src/stack.h:12"],
        ),
        (
            "value",
            &["value [member] outer::inner::Stack::Node -> src/stack.h:12"],
        ),
        (
            "Mode",
            &["Mode [enum] outer::inner::Stack -> src/stack.h:13"],
        ),
        (
            "Slow",
            &["Slow [enumerator] outer::inner::Stack::Mode -> src/stack.h:13"],
        ),
        (
            "size_type",
            &["size_type [typedef] outer::inner::Stack -> src/stack.h:14"],
        ),
        (
            "hook",
            &["hook [member] outer::inner::Stack -> src/stack.h:16"],
        ),
        ("Cell", &["Cell [union] -> src/stack.h:19"]),
        ("f", &["f [member] Cell -> src/stack.h:19"]),
        (
            "global_depth",
            &["global_depth [variable] -> src/stack.h:20"],
        ),
        ("biggest", &["biggest [function] -> src/stack.h:21"]),
        // A function scopes what its body defines by its own name (ctags prints the
        // qualified `outer::inner::Stack::push` here).
        ("local_t", &["local_t [typedef] push -> src/stack.cpp:2"]),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(name, expected)| f.lines(name) != *expected)
        .map(|(name, expected)| format!("{name}: {:?}, expected {expected:?}", f.lines(name)))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn cpp_destructors_and_operators_are_names_to_ask_for() {
    // `~Stack` and `operator==` are stored as ctags names them, and asked for so; an
    // operator matches however it is spaced, and a qualifier narrows as usual.
    let f = fixture();
    let destructor = ["~Stack [function] outer::inner::Stack -> src/stack.h:6"];
    let operator = ["operator== [function] outer::inner::Stack -> src/stack.h:11"];
    let cases: &[(&str, &[&str])] = &[
        ("~Stack", &destructor),
        ("Stack::~Stack", &destructor),
        ("outer::inner::Stack::~Stack", &destructor),
        ("operator==", &operator),
        ("operator ==", &operator),
        ("Stack::operator==", &operator),
        ("inner::Stack::operator ==", &operator),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
    for elsewhere in ["Node::~Stack", "Node::operator=="] {
        assert!(
            !f.lines(elsewhere).iter().any(|line| line.contains("->")),
            "{elsewhere}"
        );
    }
    let lines = f.lines("operator = = x");
    assert!(
        lines.len() == 1 && lines[0].contains("is not an identifier"),
        "{lines:?}"
    );
}

#[test]
fn cpp_qualified_names_narrow_the_answer() {
    let f = fixture();
    let push = ["push [function] outer::inner::Stack -> src/stack.cpp:2"];
    for query in [
        "outer::inner::Stack::push",
        "inner::Stack::push",
        "Stack::push",
        "Stack.push",
    ] {
        assert_eq!(f.lines(query), push, "{query}");
    }
    assert_eq!(
        f.lines("Stack::Stack"),
        ["Stack [function] outer::inner::Stack -> src/stack.cpp:5"]
    );
    assert_eq!(
        f.lines("Mode::Fast"),
        ["Fast [enumerator] outer::inner::Stack::Mode -> src/stack.h:13"]
    );
    assert_eq!(
        f.lines("outer::inner"),
        ["inner [namespace] outer -> src/stack.h:2"]
    );
}

#[test]
fn cpp_destructor_written_with_a_space_is_named_without_it() {
    let f = Fixture::new(&[(
        "src/widget.cpp",
        "Widget:: ~ Widget() { }\nclass Pane {\npublic: ~ Pane() { }\n};\n",
    )]);
    assert_eq!(
        f.lines("~Widget"),
        ["~Widget [function] Widget -> src/widget.cpp:1"]
    );
    assert_eq!(
        f.lines("~Pane"),
        ["~Pane [function] Pane -> src/widget.cpp:3"]
    );
}

#[test]
fn cpp_function_with_an_empty_body_and_a_semicolon_is_found() {
    // `void f() { };` reads as a declaration initialized with `{ }`, in a namespace
    // and in a class alike.
    let f = Fixture::new(&[(
        "src/ui.cpp",
        "namespace ui {\nvoid reset() { };\n}\nstruct Pane {\n  void clear() { };\n};\n",
    )]);
    assert_eq!(f.lines("reset"), ["reset [function] ui -> src/ui.cpp:2"]);
    assert_eq!(f.lines("clear"), ["clear [function] Pane -> src/ui.cpp:5"]);
}

#[test]
fn cpp_variable_and_member_with_a_trailing_attribute_are_found() {
    let f = Fixture::new(&[(
        "src/attr.cpp",
        "int hits __attribute__((aligned(8)));\n\
         struct Tag {\n  char code __attribute__((deprecated));\n};\n",
    )]);
    assert_eq!(f.lines("hits"), ["hits [variable] -> src/attr.cpp:1"]);
    assert_eq!(f.lines("code"), ["code [member] Tag -> src/attr.cpp:3"]);
}

#[test]
fn cpp_typedef_of_a_function_with_a_calling_convention_macro_is_named() {
    // The macro (`WINAPI`, `CALLBACK`) before the name inside the parentheses is read as
    // a type or an ERROR; the typedef is the name after it.
    let f = Fixture::new(&[(
        "src/calls.cpp",
        "typedef void (CALLCONV handler_t)(void);\ntypedef int (CALLCONV* hook_t)(int);\n",
    )]);
    assert_eq!(
        f.lines("handler_t"),
        ["handler_t [typedef] -> src/calls.cpp:1"]
    );
    assert_eq!(f.lines("hook_t"), ["hook_t [typedef] -> src/calls.cpp:2"]);
    let lines = f.lines("CALLCONV");
    assert!(
        lines.iter().all(|line| !line.starts_with("CALLCONV [")),
        "{lines:?}"
    );
}

#[test]
fn cpp_variable_built_by_a_constructor_call_is_found() {
    // A literal after the `(` makes it a constructor's arguments, not a prototype's
    // parameters.
    let f = Fixture::new(&[(
        "src/words.cpp",
        "std::string greeting(\"hi\"), farewell(\"bye\");\nstd::string shout(const char* s);\n",
    )]);
    assert_eq!(
        f.lines("greeting"),
        ["greeting [variable] -> src/words.cpp:1"]
    );
    assert_eq!(
        f.lines("farewell"),
        ["farewell [variable] -> src/words.cpp:1"]
    );
    let lines = f.lines("shout");
    assert!(
        lines.iter().all(|line| !line.starts_with("shout [")),
        "{lines:?}"
    );
}

#[test]
fn cpp_nested_namespace_before_a_macro_is_found() {
    // A macro between the name and the brace breaks the parse; both namespaces are
    // still named right after the keyword.
    let f = Fixture::new(&[(
        "src/ns.cpp",
        "namespace outer::inner EXPORT_TAG(\"v1\")\n{\n}\n",
    )]);
    assert_eq!(f.lines("outer"), ["outer [namespace] -> src/ns.cpp:1"]);
    assert_eq!(f.lines("inner"), ["inner [namespace] -> src/ns.cpp:1"]);
}

#[test]
fn cpp_typedef_of_a_type_written_by_a_macro_is_named() {
    // tree-sitter-cpp reads `WRAP(struct node)` as parentheses around a declarator and
    // the name after it as an ERROR; the typedef is that name, not `node`.
    let f = Fixture::new(&[("src/node.cpp", "typedef WRAP(struct node) node_ptr;\n")]);
    assert_eq!(
        f.lines("node_ptr"),
        ["node_ptr [typedef] -> src/node.cpp:1"]
    );
    let lines = f.lines("node");
    assert!(
        lines.iter().all(|line| !line.starts_with("node [")),
        "{lines:?}"
    );
}

#[test]
fn cpp_function_between_macros_in_a_broken_region_is_found() {
    // A macro for the return type and one after the parameters leave tree-sitter an
    // ERROR holding both calls and the trailing macro before the body.
    let f = Fixture::new(&[(
        "src/err.cpp",
        "RETURNS(struct report *) on_failure(int code) NEVER_RETURNS\n{\n\tif (code == 0)\n\t\texit (1);\n\treturn 0;\n}\n",
    )]);
    assert_eq!(
        f.lines("on_failure"),
        ["on_failure [function] -> src/err.cpp:1"]
    );
}
