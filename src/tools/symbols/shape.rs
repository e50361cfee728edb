//! Telling, from the bytes around it, that a mention of a name is a use and not a
//! definition, so a lookup need not parse a file that only uses the name.
//!
//! The prefilter ([`super::prefilter`]) keeps every file that contains the name. For a
//! type or a method name that is most of the files of a project, and parsing them is
//! most of a first lookup: `Vector3` is in 187 of three.js's files and defined in one.
//! Most of those mentions have a shape no definition has in that language: `new
//! Vector3(`, `v.copy(`, `import { Vector3 }`, `git_oid *out`, a line of a comment. A
//! file is parsed only when at least one mention is not such a use.
//!
//! Each rule looks only at the mention's own line (at most 4 KB either side of it),
//! never at a parse, so it can be fooled only by the shapes it names. That the rules
//! drop no real definition is checked on every corpus of the differential tests
//! (`tests/suite/differential`): the definitions the parser finds but [`may_define`]
//! would skip are left out of what the tests compare, and a test fails if ctags lists
//! one of them. Those left out are all misreadings of unexpanded C and C++ macros.

use memchr::memmem;

use super::lang::Lang;
use super::prefilter::{self, is_ident_byte};

/// A language's use shapes: which of the rules of this module apply to it, and the
/// words that make exceptions.
#[derive(Debug)]
pub(crate) struct UseShapes {
    /// What starts a comment that runs to the end of the line (`//`, `#`). A mention
    /// after one on the same line is in a comment, unless a quote comes before it (the
    /// opener may be inside a string).
    pub(crate) line_comments: &'static [&'static str],
    /// C's `/* */`: a line starting with `/*`, or with `*` and a space (the body of a
    /// block comment) is a comment up to a `*/` on it.
    pub(crate) block_comments: bool,
    /// Operators of member access (`.`, `->`): a name right after one is used, not
    /// defined, unless it is assigned to ([`UseShapes::assigned_by`]).
    pub(crate) member_access: &'static [&'static str],
    /// Bytes that, right after `x.name`, make it a definition: `=` (`this.x = 1`,
    /// `X.prototype.m = function`), and in Python `:` (an annotated attribute) and `,`
    /// or `)` (`self.a, self.b = …`). `==` and `=>` are never assignments.
    pub(crate) assigned_by: &'static [u8],
    /// A name followed by `.` is a receiver (`Vector3.prototype`, `HashMap.Entry`).
    pub(crate) receiver_dot: bool,
    /// Followers that make a name a receiver too (PHP's `Name::CONST`).
    pub(crate) receiver_ops: &'static [&'static str],
    /// Lines declaring dotted names, `package a.b`, `namespace A.B`, `import a.b`, by
    /// their first word: neither dot rule applies on them.
    pub(crate) dotted_lines: &'static [&'static str],
    /// Lines that import names, by their first word (Java's `import`, Python's `import`
    /// and `from`): a name on one is used, unless it follows `as` (Python's
    /// `import a as b` defines `b`).
    pub(crate) import_lines: &'static [&'static str],
    /// A name after `::` and before one of these bytes is a qualified use
    /// (`is_same<T, U>::value,`); before anything else, even the end of the line, it
    /// may be an out-of-class definition (`void Stack<T>::push(`, `int Stack::count =
    /// 0;`).
    pub(crate) qualified_use_before: &'static [u8],
    /// A type argument (`List<Name>`, `Map<K, Name>`): Java and C# never name a
    /// definition there.
    pub(crate) type_arguments: bool,
    /// `Name[] a` is an array type: C# has no C-style `int a[]` (Java has).
    pub(crate) array_types: bool,
    /// `new Name` constructs a value.
    pub(crate) new_keyword: bool,
    /// `x: Name` and `{ key: Name }`: a type or a value (JavaScript, TypeScript).
    pub(crate) colon_before: bool,
    /// `import Name`, `import { Name }`, `export { Name }` (JavaScript, TypeScript).
    pub(crate) import_lists: bool,
    /// A name followed by an identifier is the type of a declaration (`git_oid id`,
    /// `HashMap m`, `PyObject o`), as are names followed by these bytes (`git_oid *p`,
    /// `HashMap<K, V> m`). `None` where a definition's name may be followed by another
    /// word (Go's `Name int` fields, Python, Ruby).
    pub(crate) type_before: Option<&'static [u8]>,
    /// Words after which a name is declared whatever follows it (`class N extends`,
    /// `#define N x`): the type rule does not apply after them.
    pub(crate) declaring: &'static [&'static str],
    /// Words that may follow a declared name (`class N final`, `int n
    /// __attribute__((unused))`): the type rule does not apply before them.
    pub(crate) declared_before: &'static [&'static str],
    /// A member access whose receiver follows a type may declare an explicit interface
    /// member (C#'s `void IFoo.Bar()`): kept unless the receiver follows an
    /// expression keyword or punctuation.
    pub(crate) interface_members: bool,
    /// `def` before the receiver defines the name after the dot (Ruby's `def
    /// self.name`, `def obj.name`).
    pub(crate) def_receivers: bool,
    /// A qualified type alone in a struct is an embedded field named by its last part
    /// (Go's `sync.Mutex` or `*pkg.T` on a line of its own, or after `{` or `;`).
    pub(crate) embedded_fields: bool,
    /// The bytes that open a string (`"`, and `'` and `` ` `` where they do): a mention
    /// inside a string on its line (`"Request timed out"`, `describe('subscribe'`) is
    /// text, and a comment opener inside one opens nothing. Empty where a string may
    /// name a definition (PHP's `define('NAME', 1)`, Ruby's `attr_reader "name"`) or a
    /// line cannot be read alone (Go's raw strings, Rust's lifetimes).
    pub(crate) quotes: &'static [u8],
    /// `'x'` is a character, not a string (C, C++, Java, C#); a `'` that starts none
    /// (C++14's `1'000`) is skipped.
    pub(crate) char_literals: bool,
    /// Words after which a name is always used: `return Name`, `typeof Name`, `extends
    /// Name`, `raise Name`.
    pub(crate) use_after: &'static [&'static str],
    /// A name right after `=` (or `==`, `+=`, `<=`) is a value, unless another `=` or a
    /// word follows it (`a = Name = 1` assigns it too).
    pub(crate) assigned_value: bool,
    /// A name whose innermost open bracket on its line is a `(` is a parameter or an
    /// argument (`f(int Name)`, `g(Name, 2)`, `typeof(Name)`), unless it may be a
    /// declarator there: after a `*`, `&` or `^` and perhaps qualifiers (`void
    /// (*Name)(int)`, `int (* const Name)(void)`), or alone in parentheses that follow
    /// no word (`int (isdigit)(int c)`). C, C++, Java and C#: in TypeScript
    /// `constructor(private name: string)` declares a property.
    pub(crate) in_parens: bool,
    /// `struct Name;` and `friend class Name;` declare without defining (C, C++).
    pub(crate) forward_declarations: bool,
}

/// A language with none of the rules: every mention may define.
pub(crate) const NO_SHAPES: UseShapes = UseShapes {
    line_comments: &[],
    block_comments: false,
    member_access: &[],
    assigned_by: b"=",
    receiver_dot: false,
    receiver_ops: &[],
    dotted_lines: &[],
    import_lines: &[],
    qualified_use_before: &[],
    type_arguments: false,
    array_types: false,
    new_keyword: false,
    colon_before: false,
    import_lists: false,
    type_before: None,
    declaring: &[],
    declared_before: &[],
    interface_members: false,
    def_receivers: false,
    embedded_fields: false,
    quotes: b"",
    char_literals: false,
    use_after: &[],
    assigned_value: false,
    in_parens: false,
    forward_declarations: false,
};

/// Go: comments, member access and receivers. No type rule: a struct field is
/// `Name Type`.
pub(crate) const GO: UseShapes = UseShapes {
    line_comments: &["//"],
    block_comments: true,
    member_access: &["."],
    receiver_dot: true,
    dotted_lines: &["import", "package"],
    embedded_fields: true,
    ..NO_SHAPES
};

/// Rust: as Go. `::` is not a use: `impl Trait for a::Name` defines `Name`.
pub(crate) const RUST: UseShapes = UseShapes {
    line_comments: &["//"],
    block_comments: true,
    member_access: &["."],
    receiver_dot: true,
    dotted_lines: &["use", "mod"],
    ..NO_SHAPES
};

/// Python: `#` comments; `self.x = …`, `self.x: int` and tuple targets define.
pub(crate) const PYTHON: UseShapes = UseShapes {
    line_comments: &["#"],
    member_access: &["."],
    assigned_by: b"=:,)",
    receiver_dot: true,
    dotted_lines: &["import", "from"],
    import_lines: &["import", "from"],
    quotes: b"\"'",
    use_after: &[
        "return", "raise", "assert", "elif", "not", "del", "await", "yield", "is", "in",
    ],
    assigned_value: true,
    ..NO_SHAPES
};

/// JavaScript and TypeScript (and their JSX forms).
pub(crate) const JAVASCRIPT: UseShapes = UseShapes {
    line_comments: &["//"],
    block_comments: true,
    member_access: &[".", "?."],
    receiver_dot: true,
    dotted_lines: &["namespace", "module", "declare"],
    new_keyword: true,
    colon_before: true,
    import_lists: true,
    type_arguments: true,
    quotes: b"\"'`",
    use_after: &[
        "return",
        "throw",
        "await",
        "yield",
        "typeof",
        "instanceof",
        "keyof",
        "extends",
        "implements",
        "in",
        "of",
        "void",
        "delete",
    ],
    assigned_value: true,
    ..NO_SHAPES
};

/// Java: the type rule, with `<` (a generic type is used as `HashMap<K, V> m`; a
/// generic method's type parameters come before its return type).
pub(crate) const JAVA: UseShapes = UseShapes {
    line_comments: &["//"],
    block_comments: true,
    member_access: &[".", "::"],
    receiver_dot: true,
    receiver_ops: &["::"],
    dotted_lines: &["package"],
    import_lines: &["import"],
    type_arguments: true,
    new_keyword: true,
    colon_before: true,
    type_before: Some(b"<"),
    declaring: &["class", "interface", "enum", "record"],
    quotes: b"\"",
    char_literals: true,
    use_after: &[
        "return",
        "throw",
        "instanceof",
        "extends",
        "implements",
        "throws",
        "assert",
        "permits",
    ],
    assigned_value: true,
    in_parens: true,
    ..NO_SHAPES
};

/// C and C++: the type rule, with `*` and `&` (`git_oid *out`). `::` is not a use:
/// `Stack::push` defines `push`.
pub(crate) const C: UseShapes = UseShapes {
    line_comments: &["//"],
    block_comments: true,
    member_access: &[".", "->"],
    receiver_dot: true,
    qualified_use_before: b",)>&|?",
    new_keyword: true,
    type_before: Some(b"*&"),
    declaring: &[
        "class",
        "struct",
        "union",
        "enum",
        "namespace",
        "typedef",
        "define",
    ],
    declared_before: &[
        "final",
        "__attribute__",
        "__attribute",
        "__declspec",
        "alignas",
        "asm",
    ],
    import_lines: &["include", "import", "using"],
    colon_before: true,
    quotes: b"\"",
    char_literals: true,
    use_after: &[
        "return",
        "throw",
        "sizeof",
        "alignof",
        "decltype",
        "co_return",
        "co_await",
        "co_yield",
        "goto",
        "public",
        "protected",
        "private",
        "virtual",
    ],
    assigned_value: true,
    in_parens: true,
    forward_declarations: true,
    ..NO_SHAPES
};

/// C#: the type rule without `<` (a generic method is `void Name<T>()`), and explicit
/// interface members.
pub(crate) const CSHARP: UseShapes = UseShapes {
    line_comments: &["//"],
    block_comments: true,
    member_access: &[".", "?."],
    receiver_dot: true,
    dotted_lines: &["namespace", "using"],
    type_arguments: true,
    array_types: true,
    new_keyword: true,
    type_before: Some(b"?"),
    declaring: &[
        "class",
        "struct",
        "interface",
        "enum",
        "record",
        "namespace",
    ],
    interface_members: true,
    colon_before: true,
    quotes: b"\"",
    char_literals: true,
    use_after: &[
        "return", "throw", "await", "typeof", "nameof", "sizeof", "is", "as",
    ],
    assigned_value: true,
    in_parens: true,
    ..NO_SHAPES
};

/// Ruby: `#` comments; `def self.name` and `def obj.name` define after a dot.
pub(crate) const RUBY: UseShapes = UseShapes {
    line_comments: &["#"],
    member_access: &[".", "&."],
    receiver_dot: true,
    def_receivers: true,
    use_after: &[
        "return", "raise", "not", "unless", "elsif", "until", "when", "in",
    ],
    assigned_value: true,
    ..NO_SHAPES
};

/// PHP: both comment styles (`#[` is an attribute, not a comment), `->`, `?->` and
/// `::` access members, `new`, and `Name::` is a receiver.
pub(crate) const PHP: UseShapes = UseShapes {
    line_comments: &["//", "#"],
    block_comments: true,
    member_access: &["->", "?->", "::"],
    receiver_ops: &["::"],
    new_keyword: true,
    use_after: &[
        "return",
        "throw",
        "instanceof",
        "extends",
        "implements",
        "echo",
    ],
    assigned_value: true,
    ..NO_SHAPES
};

/// False only when every mention of `name` in `source` has a use shape of `lang`, so
/// the file cannot define it. Names that are not a plain identifier (Ruby `ready?`,
/// C++ `~Stack`, `operator==`) are decided by the prefilter alone.
pub(crate) fn may_define(lang: Lang, source: &[u8], name: &str) -> bool {
    if !is_plain(name) {
        return prefilter::may_define(source, name);
    }
    first_kept(lang, source, name).is_some()
}

/// The offset of the first mention of the plain name `name` that is not a use.
fn first_kept(lang: Lang, source: &[u8], name: &str) -> Option<usize> {
    let shapes = lang.spec().uses;
    let needle = name.as_bytes();
    memmem::find_iter(source, needle).find(|&at| {
        let end = at + needle.len();
        let before = at.checked_sub(1).and_then(|i| source.get(i));
        let after = source.get(end);
        if before.is_some_and(|b| is_ident_byte(*b)) || after.is_some_and(|b| is_ident_byte(*b)) {
            return false;
        }
        Mention::new(source, at, end).is_none_or(|mention| !mention.is_use(shapes))
    })
}

/// The longest stretch of a line, on either side of a mention, that the rules read. A
/// mention in a longer line (a minified bundle, a file with bare `\r` line ends) is
/// kept, so that the work per mention stays bounded and a whole file is never read as
/// one line.
const MAX_LINE_SIDE: usize = 4096;

/// True for the names the rules apply to: an ASCII identifier, the whole name.
pub(crate) fn is_plain(name: &str) -> bool {
    name.is_ascii() && prefilter::token(name) == Some(name)
}

/// One mention of the name: where it is, and its line.
struct Mention<'s> {
    source: &'s [u8],
    /// Start and end of the name.
    start: usize,
    end: usize,
    /// Start of its line, and its end (the `\n` or the end of the source).
    line_start: usize,
    line_end: usize,
}

impl<'s> Mention<'s> {
    /// The mention at `start..end`, or `None` when its line runs further than
    /// [`MAX_LINE_SIDE`] on either side.
    fn new(source: &'s [u8], start: usize, end: usize) -> Option<Mention<'s>> {
        let window = start.saturating_sub(MAX_LINE_SIDE);
        let line_start = match memchr::memrchr(b'\n', &source[window..start]) {
            Some(at) => window + at + 1,
            None if window == 0 => 0,
            None => return None,
        };
        let limit = source.len().min(end.saturating_add(MAX_LINE_SIDE));
        let line_end = match memchr::memchr(b'\n', &source[end..limit]) {
            Some(at) => end + at,
            None if limit == source.len() => limit,
            None => return None,
        };
        Some(Mention {
            source,
            start,
            end,
            line_start,
            line_end,
        })
    }

    /// True when the mention has one of the use shapes.
    fn is_use(&self, shapes: &UseShapes) -> bool {
        if self.in_comment(shapes) {
            return true;
        }
        let before = self.before();
        let after = self.after();
        match self.scan(shapes) {
            None => {}
            Some(LineScan::Comment) => return true,
            Some(LineScan::Code {
                in_string,
                open_bracket,
            }) => {
                if in_string.is_some_and(|quote| self.string_use(quote)) {
                    return true;
                }
                if shapes.in_parens && open_bracket == Some(b'(') && !self.paren_declarator() {
                    return true;
                }
            }
        }
        // A line declaring a dotted name (`package a.b.C`) may define any part of it,
        // before any `=` or `(` (`using var v = A.B(…)` is a statement).
        let first_word = first_word(&self.source[self.line_start..self.start]);
        let dotted = shapes
            .dotted_lines
            .iter()
            .any(|word| first_word == word.as_bytes())
            && !before.iter().any(|b| matches!(b, b'=' | b'('));
        let member = shapes
            .member_access
            .iter()
            .any(|op| before.ends_with(op.as_bytes()));
        if member && !dotted && !self.member_defined(shapes, after) {
            return true;
        }
        let dot_follows = after.first() == Some(&b'.') && after.get(1) != Some(&b'.');
        if shapes.receiver_dot && dot_follows && !dotted {
            return true;
        }
        if shapes
            .receiver_ops
            .iter()
            .any(|op| after.starts_with(op.as_bytes()))
        {
            return true;
        }
        if shapes
            .import_lines
            .iter()
            .any(|word| first_word == word.as_bytes())
            && last_word(before) != b"as"
            && !before.contains(&b';')
            // C++'s `using Name = T;` (perhaps with `=` on the next line) defines.
            && (first_word != b"using" || matches!(after.first(), Some(b';' | b',')))
        {
            return true;
        }
        if before.ends_with(b"::")
            && !shapes.qualified_use_before.is_empty()
            && after
                .first()
                .is_some_and(|b| shapes.qualified_use_before.contains(b))
        {
            return true;
        }
        let (last, next) = (before.last(), after.first());
        let type_argument = last == Some(&b'<') || (last == Some(&b',') && next == Some(&b'>'));
        if shapes.type_arguments && type_argument {
            return true;
        }
        if shapes.array_types && after.starts_with(b"[]") {
            return true;
        }
        // A path (`'../math/Vector3.js'`, `#include <git2/oid.h>`) or a division.
        if before.ends_with(b"/") && !before.ends_with(b"*/") {
            return true;
        }
        let word_before = last_word(before);
        // The rules below read past a qualifier: `return fmt::format(`, `: public
        // ns::Base`, `= is_same<T, U>::value`.
        let unqualified = without_qualifier(before);
        let word_before_qualifier = last_word(unqualified);
        if shapes.new_keyword && word_before_qualifier == b"new" {
            return true;
        }
        if shapes.colon_before
            && unqualified.ends_with(b":")
            && !unqualified.ends_with(b"::")
            && !is_access_label(&unqualified[..unqualified.len() - 1])
        {
            return true;
        }
        if shapes
            .use_after
            .iter()
            .any(|word| word_before_qualifier == word.as_bytes())
        {
            return true;
        }
        if shapes.assigned_value && unqualified.ends_with(b"=") && !self.assigned_again(after) {
            return true;
        }
        // A declaration that is not a definition: `struct Name;`, `friend class Name;`.
        if shapes.forward_declarations
            && after.first() == Some(&b';')
            && matches!(
                word_before_qualifier,
                b"struct" | b"class" | b"union" | b"enum"
            )
        {
            return true;
        }
        if shapes.import_lists && self.imported(word_before) {
            return true;
        }
        if let Some(bytes) = shapes.type_before {
            let declared = shapes
                .declaring
                .iter()
                .any(|word| word_before == word.as_bytes());
            let next = leading_word(after);
            let is_type = if next.is_empty() {
                after.first().is_some_and(|b| bytes.contains(b))
            } else {
                !shapes
                    .declared_before
                    .iter()
                    .any(|word| next == word.as_bytes())
                    && !is_attribute_like(next)
            };
            if is_type && !declared {
                return true;
            }
        }
        false
    }

    /// For `… = Name`: true when something other than a value's end follows the name:
    /// another assignment (`a = Name = 1`), a word, or a single `:`.
    fn assigned_again(&self, after: &[u8]) -> bool {
        match after.first() {
            None => false,
            Some(b'=') => !matches!(after.get(1), Some(b'=' | b'>')),
            Some(b':') => after.get(1) != Some(&b':'),
            Some(b) => is_ident_byte(*b),
        }
    }

    /// For a mention inside parentheses: true when it may be a declarator there, as in
    /// `void (*Name)(int)`, `int (* const Name)(void)`, `int (&Name)[4]`, `void
    /// (^Name)(void)`, `int (isdigit)(int c)` or `int (Name);`. A call's argument
    /// (`typeof(Name)`, `f(Name)`) has a word right before its `(`.
    fn paren_declarator(&self) -> bool {
        let before = self.before();
        if let Some(open) = before.strip_suffix(b"(") {
            return self.after().starts_with(b")")
                && !open.last().is_some_and(|b| is_ident_byte(*b));
        }
        // Qualifiers may stand between the `*` and the name: `* const`, `* _Nonnull`.
        let mut rest = before;
        loop {
            let word = last_word(rest);
            let qualifier = matches!(word, b"const" | b"volatile" | b"restrict")
                || (word.first() == Some(&b'_') && word.len() > 1);
            if !qualifier {
                break;
            }
            rest = trim_end(&rest[..rest.len() - word.len()]);
        }
        matches!(rest.last(), Some(b'*' | b'&' | b'^'))
    }

    /// For a mention inside a string that starts before it on its line: true when the
    /// string also ends on the line, after it, and is not a JavaScript key, method or
    /// field name (`'Default': 0`, `'delete'(id) {`, `'Foo' = 1`). A string that does not
    /// end on the line may be the end of one that began on an earlier line (a template,
    /// a docstring) with code before the mention, or a regular expression or a raw
    /// string the line reading took for one: the mention is kept.
    fn string_use(&self, quote: u8) -> bool {
        let rest = &self.source[self.end..self.line_end];
        let mut at = 0;
        while let Some(&byte) = rest.get(at) {
            if byte == b'\\' {
                at += 2;
                continue;
            }
            if byte == quote {
                let next = trim_start(&rest[at + 1..]);
                let names = match next.first() {
                    Some(b':') => next.get(1) != Some(&b':'),
                    Some(b'(') => true,
                    Some(b'=') => !matches!(next.get(1), Some(b'=' | b'>')),
                    _ => false,
                };
                return !names;
            }
            at += 1;
        }
        self.opens_docstring(quote)
    }

    /// True when the mention's line starts with a triple quote (a Python docstring's
    /// first line, `"""Request that this task…`) followed by text: what follows is inside
    /// the string even though it ends on a later line. A closing triple quote at the
    /// start of a line is followed by code (`"""; x = 1`, `""")`).
    fn opens_docstring(&self, quote: u8) -> bool {
        let line = trim_start(&self.source[self.line_start..self.line_end]);
        // After a string prefix, if any: `r"""`, `f'''`, `rb"""`.
        let unprefixed = match line.iter().position(|b| !b.is_ascii_alphabetic()) {
            Some(at) if at <= 2 => &line[at..],
            _ => line,
        };
        unprefixed
            .strip_prefix(&[quote; 3])
            .and_then(|rest| rest.first())
            .is_some_and(|b| !matches!(b, b';' | b')' | b',' | b']' | b'}' | b'.'))
    }

    /// Reads the mention's line up to the mention: strings, comments and brackets, for
    /// the languages whose strings a line shows ([`UseShapes::quotes`]). The line is
    /// assumed to start outside any string or comment.
    fn scan(&self, shapes: &UseShapes) -> Option<LineScan> {
        if shapes.quotes.is_empty() {
            return None;
        }
        let line = &self.source[self.line_start..self.start];
        // The open brackets, innermost last; deeper than the array holds, the innermost
        // is unknown (and taken for none).
        let mut open = [0u8; 32];
        let mut depth = 0usize;
        let mut quote: Option<u8> = None;
        let mut verbatim = false;
        let mut at = 0;
        while let Some(&byte) = line.get(at) {
            if let Some(closing) = quote {
                if byte == b'\\' && !verbatim {
                    at += 2;
                    continue;
                }
                if byte == closing {
                    quote = None;
                }
                at += 1;
                continue;
            }
            let rest = &line[at..];
            let comment = shapes.line_comments.iter().any(|opener| {
                rest.starts_with(opener.as_bytes()) && opens_comment(line, at, opener)
            });
            if comment {
                return Some(LineScan::Comment);
            }
            if shapes.block_comments && rest.starts_with(b"/*") {
                match memmem::find(&rest[2..], b"*/") {
                    Some(end) => {
                        at += end + 4;
                        continue;
                    }
                    None => return Some(LineScan::Comment),
                }
            }
            match byte {
                _ if shapes.quotes.contains(&byte) => {
                    quote = Some(byte);
                    // C#'s `@"C:\dir\"` and `$@"…"`: a backslash escapes nothing.
                    verbatim =
                        byte == b'"' && (line[..at].ends_with(b"@") || line[..at].ends_with(b"@$"));
                }
                b'\'' if shapes.char_literals => {
                    at += char_literal_len(rest);
                    continue;
                }
                b'(' | b'[' | b'{' => {
                    if let Some(slot) = open.get_mut(depth) {
                        *slot = byte;
                    }
                    depth += 1;
                }
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            at += 1;
        }
        Some(LineScan::Code {
            in_string: quote,
            open_bracket: depth.checked_sub(1).and_then(|top| open.get(top).copied()),
        })
    }

    /// For `x.name`: true when this member access may define the name: an assignment,
    /// or one of the language's shapes that define after a dot.
    fn member_defined(&self, shapes: &UseShapes, after: &[u8]) -> bool {
        assigned(after, shapes.assigned_by)
            || (shapes.def_receivers && self.word_before_receiver() == b"def")
            || (shapes.interface_members && self.receiver_follows_a_type())
            || (shapes.embedded_fields && self.embedded_field())
    }

    /// The line before the mention, without trailing blanks.
    fn before(&self) -> &'s [u8] {
        trim_end(&self.source[self.line_start..self.start])
    }

    /// The rest of the line after the mention, without leading blanks.
    fn after(&self) -> &'s [u8] {
        trim_start(trim_end(&self.source[self.end..self.line_end]))
    }

    /// True when the mention is in a line comment or on a line of a block comment.
    fn in_comment(&self, shapes: &UseShapes) -> bool {
        let line = &self.source[self.line_start..self.start];
        for opener in shapes.line_comments {
            // The first opener not after a backslash (see `opens_comment`).
            let found = memmem::find_iter(line, opener.as_bytes())
                .find(|&at| at == 0 || line[at - 1] != b'\\');
            if let Some(at) = found {
                let quoted = line[..at].iter().any(|b| matches!(b, b'"' | b'\'' | b'`'));
                if opens_comment(line, at, opener) && !quoted {
                    return true;
                }
            }
        }
        if shapes.block_comments {
            let text = trim_start(line);
            // (`*Name` with nothing between is code: Go's embedded `*File`.)
            let opens = text.starts_with(b"/*")
                || (text.first() == Some(&b'*')
                    && text
                        .get(1)
                        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'/')));
            // A comment closed before the mention leaves code after it; `* name(` at
            // the start of a line is a generator method (or a C function returning a
            // pointer), not a comment.
            // So is `* name = …;`, a declarator continued from the line above
            // (`static const char\n    * name = "x";`).
            let starred_call = trim_end(text) == b"*"
                && matches!(self.after().first(), Some(b'(' | b'<' | b'=' | b';' | b'['));
            if opens && memmem::find(text, b"*/").is_none() && !starred_call {
                return true;
            }
        }
        false
    }

    /// True when the name is one of those an `import`/`export` statement lists:
    /// `import Name`, `import * as Name`, or inside the braces of `import { … }`.
    fn imported(&self, word_before: &[u8]) -> bool {
        if word_before == b"import" {
            return true;
        }
        let before = self.before();
        if word_before == b"as" {
            let rest = trim_end(&before[..before.len() - 2]);
            return rest.ends_with(b"*")
                && last_word(trim_end(&rest[..rest.len() - 1])) == b"import";
        }
        // Back over the list (names, commas, `as`, line breaks) to its brace.
        let mut at = self.start;
        while at > 0 {
            let b = self.source[at - 1];
            if is_ident_byte(b) || matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',' | b'$') {
                at -= 1;
            } else {
                break;
            }
        }
        if at == 0 || self.source[at - 1] != b'{' {
            return false;
        }
        let head = trim_end_all(&self.source[..at - 1]);
        let mut word = last_word(head);
        if word == b"type" {
            word = last_word(trim_end_all(&head[..head.len() - 4]));
        }
        word == b"import" || word == b"export"
    }

    /// For `x.Name`: the text before the receiver `x`, and the receiver (empty when the
    /// dot follows something else, as in `f().Name` or `List<T>.Name`). `None` when no
    /// dot comes right before the name.
    fn receiver(&self) -> Option<(&'s [u8], &'s [u8])> {
        let dot = trim_end(self.before().strip_suffix(b".")?);
        let receiver = last_word(dot);
        Some((&dot[..dot.len() - receiver.len()], receiver))
    }

    /// For `x.Name`: the word before the receiver `x` (`def` in `def self.name`).
    fn word_before_receiver(&self) -> &'s [u8] {
        let Some((ahead, _)) = self.receiver() else {
            return &[];
        };
        // A Ruby receiver may be an instance or global variable: `def @io.write`.
        let ahead = [b"@@".as_slice(), b"@", b"$"]
            .iter()
            .find_map(|sigil| ahead.strip_suffix(*sigil))
            .unwrap_or(ahead);
        last_word(trim_end(ahead))
    }

    /// For `pkg.Name`: true when it stands alone as a Go embedded field: nothing but `*`
    /// before it on its line or after a `{` or `;`, and nothing after it but a
    /// separator, a tag or a comment.
    fn embedded_field(&self) -> bool {
        let Some((ahead, _)) = self.receiver() else {
            return false;
        };
        let mut ahead = trim_end(ahead);
        if let Some(rest) = ahead.strip_suffix(b"*") {
            ahead = trim_end(rest);
        }
        let after = self.after();
        (ahead.is_empty() || ahead.ends_with(b"{") || ahead.ends_with(b";"))
            && (after.is_empty()
                || after.starts_with(b"//")
                || matches!(after[0], b';' | b'}' | b'"' | b'`' | b'['))
    }

    /// For `x.Name`: true when the receiver `x` follows a type or a modifier rather than
    /// an operator or an expression keyword, as in C#'s `void IFoo.Name()` or
    /// `IEnumerable<T>.GetEnumerator()`.
    fn receiver_follows_a_type(&self) -> bool {
        let Some((mut ahead, receiver)) = self.receiver() else {
            return false;
        };
        if receiver.is_empty() {
            return ends_with_type_close(ahead);
        }
        // The receiver may be qualified: `System.Collections.IEnumerable`,
        // `global::NS.IFoo`.
        while let Some(outer) = ahead
            .strip_suffix(b".")
            .or_else(|| ahead.strip_suffix(b"::"))
        {
            let part = last_word(outer);
            if part.is_empty() {
                return false;
            }
            ahead = &outer[..outer.len() - part.len()];
        }
        let ahead = trim_end(ahead);
        // A return type ending in `>`, `]`, `?`, `)` (a tuple) or `*`.
        if ends_with_type_close(ahead) || ahead.ends_with(b")") || ahead.ends_with(b"*") {
            return true;
        }
        let word = last_word(ahead);
        !word.is_empty()
            && !matches!(
                word,
                b"return"
                    | b"await"
                    | b"throw"
                    | b"new"
                    | b"in"
                    | b"is"
                    | b"as"
                    | b"yield"
                    | b"case"
                    | b"else"
                    | b"when"
                    | b"not"
                    | b"and"
                    | b"or"
                    | b"out"
                    | b"ref"
                    | b"var"
                    | b"using"
                    | b"lock"
                    | b"nameof"
                    | b"typeof"
            )
    }
}

/// `text` without the qualifier it ends with, if any: `return fmt_lib::` gives `return`,
/// `= std::is_same<T, U>::` gives `=`. A qualifier whose template arguments do not
/// close on the line is left whole.
fn without_qualifier(text: &[u8]) -> &[u8] {
    let mut rest = text;
    while let Some(head) = rest.strip_suffix(b"::") {
        let mut head = trim_end(head);
        if head.ends_with(b">") {
            let mut depth = 0usize;
            let Some(open) = head.iter().rposition(|b| {
                match b {
                    b'>' => depth += 1,
                    b'<' => depth = depth.saturating_sub(1),
                    _ => return false,
                }
                depth == 0
            }) else {
                return rest;
            };
            head = trim_end(&head[..open]);
        }
        let word = last_word(head);
        rest = trim_end(&head[..head.len() - word.len()]);
        if word.is_empty() {
            // A global `::name` (or something that is no qualifier): stop here.
            break;
        }
    }
    rest
}

/// What reading a mention's line up to the mention found ([`Mention::scan`]).
enum LineScan {
    /// A comment opened before it on the line and is still open.
    Comment,
    /// It is in code, or in a string.
    Code {
        /// The quote of the string the mention is in, if it is in one.
        in_string: Option<u8>,
        /// The innermost bracket (`(`, `[` or `{`) still open at the mention, if any.
        open_bracket: Option<u8>,
    },
}

/// True when the line comment `opener`, found at `at` in `line`, opens one: not after a
/// backslash (`\//` ends a regular expression, `/^https?:\/\//`) and not `#[` (an
/// attribute).
fn opens_comment(line: &[u8], at: usize, opener: &str) -> bool {
    let escaped = at > 0 && line[at - 1] == b'\\';
    let attribute = opener == "#" && line.get(at + 1) == Some(&b'[');
    !escaped && !attribute
}

/// The length of the character literal that `text` starts with (`'x'`, `'\n'`,
/// `'\u00e9'`, `'é'`), or 1 for a `'` that starts none (`1'000`, `'abcd'`).
fn char_literal_len(text: &[u8]) -> usize {
    match text.get(1) {
        Some(b'\\') => text
            .iter()
            .take(12)
            .skip(3)
            .position(|b| *b == b'\'')
            .map_or(1, |at| at + 4),
        Some(&first) => {
            let width = match first {
                0xf0..=0xff => 4,
                0xe0..=0xef => 3,
                0xc0..=0xdf => 2,
                _ => 1,
            };
            if text.get(1 + width) == Some(&b'\'') {
                2 + width
            } else {
                1
            }
        }
        None => 1,
    }
}

/// True when `text` (what comes before a `:`) ends with an access specifier, so the
/// colon ends a label (`public: Name();`) rather than starting a base or a type.
fn is_access_label(text: &[u8]) -> bool {
    matches!(
        last_word(trim_end(text)),
        b"public" | b"protected" | b"private" | b"slots" | b"signals" | b"Q_SLOTS" | b"Q_SIGNALS"
    )
}

/// True for a word that may be a macro or an attribute written after a declarator
/// (`int n __read_mostly = 1;`, `} Foo GIT_ALIGN(8);`): one starting with `__`, or all
/// capitals.
fn is_attribute_like(word: &[u8]) -> bool {
    word.starts_with(b"__")
        || (word.iter().any(u8::is_ascii_uppercase)
            && word
                .iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_'))
}

/// True when `text` ends like a type: `>` (not `=>`), `]` or `?`.
fn ends_with_type_close(text: &[u8]) -> bool {
    (text.ends_with(b">") && !text.ends_with(b"=>")) || text.ends_with(b"]") || text.ends_with(b"?")
}

/// True when the text after a member name assigns to it: starts with one of `by` but
/// is not `==` or `=>`.
fn assigned(after: &[u8], by: &[u8]) -> bool {
    match after.first() {
        Some(b'=') => by.contains(&b'=') && !matches!(after.get(1), Some(b'=' | b'>')),
        Some(b) => by.contains(b),
        None => false,
    }
}

/// The identifier at the end of `text` (empty when it ends otherwise).
fn last_word(text: &[u8]) -> &[u8] {
    let start = text
        .iter()
        .rposition(|b| !is_ident_byte(*b))
        .map_or(0, |at| at + 1);
    &text[start..]
}

/// The identifier at the start of `text` (empty when it starts otherwise).
fn leading_word(text: &[u8]) -> &[u8] {
    let end = text
        .iter()
        .position(|b| !is_ident_byte(*b))
        .unwrap_or(text.len());
    if text.first().is_some_and(u8::is_ascii_digit) {
        return &[];
    }
    &text[..end]
}

/// The first word of a line, after its indentation, a C `#` (so `# define` and
/// `#define` both give `define`) and TypeScript's `export`, `declare` and `default`
/// (`export declare namespace A.B` gives `namespace`).
fn first_word(line: &[u8]) -> &[u8] {
    let mut text = trim_start(line);
    if let Some(rest) = text.strip_prefix(b"#") {
        text = trim_start(rest);
    }
    loop {
        let word = leading_word(text);
        if !matches!(word, b"export" | b"declare" | b"default") {
            return word;
        }
        text = trim_start(&text[word.len()..]);
    }
}

fn trim_start(text: &[u8]) -> &[u8] {
    let start = text
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(text.len());
    &text[start..]
}

fn trim_end(text: &[u8]) -> &[u8] {
    let end = text
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r'))
        .map_or(0, |at| at + 1);
    &text[..end]
}

/// [`trim_end`], across line breaks too.
fn trim_end_all(text: &[u8]) -> &[u8] {
    let end = text
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |at| at + 1);
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `may_define` for a language by name, for a source and a name.
    fn may(lang: &str, source: &str, name: &str) -> bool {
        let lang = Lang::all()
            .find(|l| l.name() == lang)
            .expect("language compiled in");
        may_define(lang, source.as_bytes(), name)
    }

    /// Each use shape rules a file out, and the definition shapes next to it keep it.
    #[test]
    #[cfg(all(feature = "lang-javascript", feature = "lang-c", feature = "lang-java"))]
    fn uses_are_ruled_out_and_definitions_kept() {
        let js = [
            ("const v = new Vector3(1, 2, 3);", false),
            ("a.copy(b).add(c);", false),
            ("import { Vector3, Color } from 'three';", false),
            ("import {\n  Box3,\n  Vector3\n} from 'three';", false),
            ("export { Vector3 };", false),
            ("// Vector3 is a point", false),
            (" * @param {Vector3} v", false),
            ("function f(v: Vector3) {}", false),
            ("Vector3.prototype.isVector3 = true;", false),
            ("class Vector3 {}", true),
            ("this.Vector3 = 1;", true),
            ("const { Vector3 } = THREE;", true),
            ("class A {\n\t* Vector3() {}\n}", true),
            ("/* c */ function Vector3() {}", true),
            ("const s = 'a//b'; function Vector3() {}", true),
            ("const s = 'http://x'; // Vector3", false),
            ("import V from '../math/Vector3.js';", false),
        ];
        for (source, kept) in js {
            assert_eq!(may("JavaScript", source, "Vector3"), kept, "{source:?}");
        }
        let c = [
            ("int f(git_oid *out, const git_oid *id);", false),
            ("git_oid id;", false),
            ("x = a->git_oid;", false),
            ("typedef struct git_oid git_oid;", true),
            ("struct git_oid { char id[20]; };", true),
            ("#define git_oid int", true),
            ("class git_oid final {};", true),
        ];
        for (source, kept) in c {
            assert_eq!(may("C", source, "git_oid"), kept, "{source:?}");
        }
        let java = [
            ("HashMap<String, Integer> m = new HashMap<>();", false),
            ("HashMap m;", false),
            ("x = HashMap.newHashMap(3);", false),
            (
                "public class HashMap<K, V> extends AbstractMap<K, V> {",
                true,
            ),
            ("package java.util.HashMap;", true),
            ("import java.util.HashMap;", false),
            ("Map<String, HashMap> m;", false),
            ("private final byte HashMap[] = x;", true),
            ("enum E { A, HashMap, B }", true),
        ];
        for (source, kept) in java {
            assert_eq!(may("Java", source, "HashMap"), kept, "{source:?}");
        }
    }

    /// The exceptions that let a definition follow a dot.
    #[test]
    #[cfg(all(
        feature = "lang-go",
        feature = "lang-ruby",
        feature = "lang-csharp",
        feature = "lang-cpp",
        feature = "lang-python"
    ))]
    fn definitions_after_a_dot_are_kept() {
        assert!(may("Go", "type S struct {\n\tsync.Mutex\n}", "Mutex"));
        assert!(may("Go", "type S struct {\n\t*os.File // f\n}", "File"));
        assert!(!may("Go", "m := sync.Mutex{}\nm.Lock()", "Mutex"));
        assert!(may("Ruby", "def self.parse(text)", "parse"));
        assert!(may(
            "Ruby",
            "private_class_method def @io.write(x)",
            "write"
        ));
        assert!(!may("Ruby", "JSON.parse(text)", "parse"));
        assert!(may(
            "C#",
            "IEnumerator IEnumerable.GetEnumerator() => x;",
            "GetEnumerator"
        ));
        assert!(!may("C#", "return list.GetEnumerator();", "GetEnumerator"));
        assert!(!may(
            "C#",
            "var l = new List<PyObject>();\nPyObject[] a; PyObject? b;",
            "PyObject"
        ));
        assert!(!may("C++", "enable_if<is_same<T, U>::value, int>", "value"));
        assert!(may("C++", "int Stack::value = 0;", "value"));
        assert!(may(
            "C++",
            "template <class T> void Stack<T>::value() {}",
            "value"
        ));
        assert!(!may(
            "Python",
            "from urllib.request import Request",
            "Request"
        ));
        assert!(may(
            "Python",
            "from urllib.request import Request as Request",
            "Request"
        ));
    }

    /// The rules that read a line up to the mention (strings, comments, brackets) and
    /// the words before it: each use is ruled out, each definition beside it kept.
    #[test]
    #[cfg(all(
        feature = "lang-python",
        feature = "lang-javascript",
        feature = "lang-typescript",
        feature = "lang-csharp",
        feature = "lang-cpp",
        feature = "lang-java"
    ))]
    fn line_and_keyword_rules() {
        let cases = [
            (
                "Python",
                "    \"\"\"Request that this task cancel itself.\"\"\"",
                false,
            ),
            // A docstring's first line, and the last line of a string with code after it.
            (
                "Python",
                "    \"\"\"Request that this task cancel itself.",
                false,
            ),
            ("Python", "\"\"\"; Request = 1", true),
            ("Python", "ret.append(f\"Request-rate: {rate}\")", false),
            (
                "Python",
                "request = Request(self.repository, data=body)",
                false,
            ),
            ("Python", "return Request(url)", false),
            ("Python", "raise Request", false),
            ("Python", "x = 'it''s'; Request = 1", true),
            ("Python", "a = Request = None", true),
            ("Python", "class Request(Base):  # 'quoted'", true),
            ("Python", "s = '#'; Request = 2", true),
            ("JavaScript", "describe('Request', () => {", false),
            ("JavaScript", "  'Request': 0,", true),
            ("JavaScript", "const s = `${Request}`;", false),
            ("JavaScript", "const s = \"a\"; class Request {}", true),
            ("JavaScript", "if (x instanceof Request) {", false),
            ("JavaScript", "const t = typeof Request;", false),
            ("JavaScript", "case 'a': // Request", false),
            ("TypeScript", "observers: Array<Request<any, any>>", false),
            ("TypeScript", "> extends Request<", false),
            ("TypeScript", "class A implements Request {", false),
            ("C#", "if (obType == typeof(Request))", false),
            // A cast reads like a declarator alone in parentheses (`int (isdigit)(int c)`).
            ("C#", "Value = (Request)info.GetValue(nameof(Value));", true),
            (
                "C#",
                "public class PyIter : Request, IEnumerator<Request>",
                false,
            ),
            ("C#", "where T : Request", false),
            ("C#", "using var value = Request.FromReference(r);", false),
            ("C#", "void M(Request o) {}", false),
            ("C#", "var p = @\"C:\\dir\\\"; class Request {}", true),
            ("C#", "char c = '\"'; class Request {}", true),
            ("C#", "class Request : Base", true),
            ("C++", "class Printer : public Request {", false),
            ("C++", "struct S : private ns::Request<T> {", false),
            ("C++", "using ::testing::Request;", false),
            ("C++", "#include <Request>", false),
            ("C++", "struct Request;", false),
            ("C++", "friend class Request;", false),
            ("C++", "return fmt_lib::Request(buf);", false),
            (
                "C++",
                "constexpr bool v = std::is_same<T, U>::Request;",
                false,
            ),
            ("C++", "f(Request, 2);", false),
            ("C++", "using Request = Base;", true),
            ("C++", "using Request", true),
            ("C++", "public: Request() {}", true),
            ("C++", "int (*Request)(int);", true),
            ("C++", "int (Request)(int c) {", true),
            ("C++", "int x = 1'000; int Request = 2;", true),
            ("C++", "char q = '\\''; int Request = 2;", true),
            ("C++", "int Stack::Request = 0;", true),
            ("C++", "struct Request {", true),
            ("C++", "auto s = \"a(\"; int Request = 2;", true),
            (
                "Java",
                "return groupingBy(classifier, Request::new, downstream);",
                false,
            ),
            ("Java", "StringBuilder::Request, CH_NOID);", false),
            ("Java", "case \"Request\" -> m.x();", false),
            (
                "Java",
                "foo(new Runnable() { public void Request() {} });",
                true,
            ),
        ];
        for (lang, source, kept) in cases {
            assert_eq!(may(lang, source, "Request"), kept, "{lang}: {source:?}");
        }
    }

    /// Definitions a review found the line-reading rules dropping at first (each is
    /// tagged by ctags and found by the queries): all kept.
    #[test]
    #[cfg(all(
        feature = "lang-python",
        feature = "lang-javascript",
        feature = "lang-typescript",
        feature = "lang-c",
        feature = "lang-cpp",
        feature = "lang-java"
    ))]
    fn reviewed_line_shapes_are_kept() {
        let kept = [
            ("C", "struct ops {\n  int (* const Foo)(int);\n};"),
            ("C", "static int (*const Foo[])(void) = { 0 };"),
            ("C", "void (* volatile Foo)(void) = 0;"),
            ("C", "void (* restrict Foo)(void);"),
            ("C", "typedef void (* _Nonnull Foo)(void);"),
            ("C", "int (Foo);"),
            ("C", "void (*(Foo))(int);"),
            ("C", "static const char\n    * Foo = \"x\";"),
            (
                "JavaScript",
                "const QUOTE = /\"/g; export function Foo() {}",
            ),
            (
                "JavaScript",
                "class A {\n  static re = /'/; static Foo = 1;\n}",
            ),
            (
                "JavaScript",
                "const api = {\n  'Foo'(id) { return id; },\n};",
            ),
            ("JavaScript", "class A {\n  get 'Foo'() { return 1; }\n}"),
            ("JavaScript", "class A {\n  'Foo' = 1;\n}"),
            ("JavaScript", "const q = `\n select 1\n`; function Foo() {}"),
            ("JavaScript", "/*\n * Don't touch */ function Foo() {}"),
            (
                "JavaScript",
                "const URL_RE = /^https?:\\/\\//; function Foo() {}",
            ),
            (
                "TypeScript",
                "const q = `\n select 1\n`; export class Foo {}",
            ),
            ("Java", "String s = \"\"\"\n  hi\n  \"\"\"; int Foo;"),
            ("Python", "X = \"\"\"\nabc\n\"\"\"; Foo = 1"),
            ("Python", "X = '''it's'''; Foo = 1"),
            ("C++", "const char* kQuote = R\"(\")\"; int Foo = 1;"),
        ];
        for (lang, source) in kept {
            assert!(may(lang, source, "Foo"), "{lang}: {source:?}");
        }
    }

    /// For tuning the rules: for every file under `METRON_SHAPE_TREE` that would be
    /// parsed for `METRON_SHAPE_NAME` but defines no such name (a parse the rules could
    /// have saved), the line of the first mention kept.
    /// `METRON_SHAPE_TREE=… METRON_SHAPE_NAME=Vector3 cargo test --release --lib
    /// kept_mentions -- --ignored --nocapture`
    #[test]
    #[ignore = "a diagnostic: needs METRON_SHAPE_TREE and METRON_SHAPE_NAME"]
    fn kept_mentions() {
        let (Some(tree), Ok(name)) = (
            std::env::var_os("METRON_SHAPE_TREE"),
            std::env::var("METRON_SHAPE_NAME"),
        ) else {
            return;
        };
        let mut extractor = crate::tools::symbols::extract::Extractor::new();
        let (mut wasted, mut kept, mut mentioned) = (0, 0, 0);
        for entry in ignore::Walk::new(tree).flatten() {
            let path = entry.path();
            let Some(lang) = path.to_str().and_then(Lang::of_path) else {
                continue;
            };
            let Ok(source) = std::fs::read(path) else {
                continue;
            };
            if !prefilter::contains_ident(&source, &name) {
                continue;
            }
            mentioned += 1;
            let Some(at) = first_kept(lang, &source, &name) else {
                continue;
            };
            kept += 1;
            let defines = extractor
                .extract(lang, &source)
                .is_ok_and(|defs| defs.named(&name).next().is_some());
            if defines {
                continue;
            }
            wasted += 1;
            let Some(mention) = Mention::new(&source, at, at + name.len()) else {
                println!("{}: (a line too long to read)", path.display());
                continue;
            };
            let end = memchr::memchr(b'\n', &source[at..]).map_or(source.len(), |n| at + n);
            let line = String::from_utf8_lossy(&source[mention.line_start..end]);
            println!("{}: {}", path.display(), line.trim());
        }
        println!(
            "{kept} of {mentioned} files mentioning {name} kept, {wasted} of them defining no {name}"
        );
    }

    /// Shapes a review found the first rules dropping: each is a definition.
    #[test]
    #[cfg(all(
        feature = "lang-go",
        feature = "lang-csharp",
        feature = "lang-typescript",
        feature = "lang-c",
        feature = "lang-cpp",
        feature = "lang-python"
    ))]
    fn reviewed_definition_shapes_are_kept() {
        let kept = [
            (
                "C#",
                "void System.IDisposable.Dispose()\n{\n    _inner.Dispose();\n}",
                "Dispose",
            ),
            (
                "C#",
                "IEnumerator System.Collections.IEnumerable.GetEnumerator() { }",
                "GetEnumerator",
            ),
            ("C#", "(int, int) IFoo.Pair() => (1, 2);", "Pair"),
            ("C#", "int* IFoo.P() { }", "P"),
            ("C#", "void global::NS.IFoo.Run() { }", "Run"),
            ("Go", "type S struct {\r\n\tsync.Mutex\r\n}\r\n", "Mutex"),
            ("Go", "type S struct {\n\t*pkg.List[int]\n}", "List"),
            ("TypeScript", "export namespace Outer.Inner {}", "Inner"),
            (
                "TypeScript",
                "export declare namespace Outer.Inner {}",
                "Inner",
            ),
            ("C", "static int foo_count __read_mostly = 1;", "foo_count"),
            ("C", "int foo asm(\"bar\");", "foo"),
            ("C", "typedef struct { int x; } Foo GIT_ALIGN(8);", "Foo"),
            (
                "C++",
                "template <typename T>\nvoid\nStack<T>::push\n    (const T& v) {}",
                "push",
            ),
            ("Python", "import os; Foo = 1", "Foo"),
            (
                "TypeScript",
                "class A {\n  * gen<T>() {}\n  *  two() {}\n}",
                "gen",
            ),
            ("TypeScript", "class A {\n  *  two() {}\n}", "two"),
        ];
        for (lang, source, name) in kept {
            assert!(may(lang, source, name), "{lang}: {source:?} defines {name}");
        }
        assert!(!may("C#", "x => _inner.Dispose();", "Dispose"));
    }

    /// A mention on a line longer than the rules read is kept, and a file of one huge
    /// line of uses is decided in time linear in its size.
    #[test]
    #[cfg(feature = "lang-javascript")]
    fn long_lines_are_kept_and_cheap() {
        let line = "e.render(x);".repeat(200_000);
        let started = std::time::Instant::now();
        assert!(
            may("JavaScript", &line, "render"),
            "a minified line is kept"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let lines = "e.render(x);\n".repeat(200_000);
        assert!(
            !may("JavaScript", &lines, "render"),
            "short lines of uses are not"
        );
    }

    /// Names that are not plain identifiers are left to the prefilter.
    #[test]
    #[cfg(feature = "lang-ruby")]
    fn names_that_are_not_identifiers_skip_the_rules() {
        assert!(may("Ruby", "x.ready?", "ready?"));
        assert!(!may("Ruby", "x.steady", "ready?"));
    }
}
