//! Deciding cheaply which files could define a name, before anything is parsed.
//!
//! Parsing is about a hundred times slower than reading, so a lookup parses only files
//! that contain the name as a whole identifier. Two tests answer "does this file
//! contain `name`?":
//!
//! - [`contains_ident`]: a `memmem` scan of the bytes with an identifier-boundary check,
//!   for a file whose bytes are at hand;
//! - [`Summary`]: a Bloom filter of every identifier-like token in the file, built the
//!   first time the file is read and kept with it. Later lookups of any name consult the
//!   filter instead of reading the file again. It can say "maybe" for a name that is
//!   not there (about one lookup in a few hundred per file), never "no" for one that is.
//!
//! Tokens are the maximal runs of ASCII letters, digits and `_`. A definition's name
//! is always such a run when it is pure ASCII: the bytes around it cannot be identifier
//! characters, or the identifier would be longer. Names with non-ASCII characters have
//! no [`Key`], and every file counts as a candidate for them; the `memmem` scan then
//! decides. Both tests treat a non-ASCII byte next to the name as a boundary, so they err
//! towards "maybe".
//!
//! Some names are not one token: Ruby `ready?` and `name=`, C++ `~Stack` and
//! `operator==`. The source may even not spell them whole (`attr_writer :name` defines
//! `name=`; `operator ==` has a space), so both tests look for the identifier inside
//! them instead ([`token`]: `ready`, `name`, `Stack`, `operator`). A Ruby operator
//! method (`<=>`) has none: no summary rules a file out, and [`may_define`] looks for
//! its text, which `def <=>` and `alias_method :<=>` both hold.

use memchr::memmem;

/// Which bytes tokens are made of: ASCII letters, digits and `_`.
static IDENT: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_';
        byte += 1;
    }
    table
};

/// True for the bytes tokens are made of.
pub(crate) fn is_ident_byte(byte: u8) -> bool {
    IDENT[usize::from(byte)]
}

/// True when `haystack` contains `name` with no identifier byte right before or after.
pub(crate) fn contains_ident(haystack: &[u8], name: &str) -> bool {
    let needle = name.as_bytes();
    if needle.is_empty() {
        return false;
    }
    memmem::find_iter(haystack, needle).any(|at| {
        let before = at.checked_sub(1).and_then(|i| haystack.get(i));
        let after = haystack.get(at + needle.len());
        !before.is_some_and(|b| is_ident_byte(*b)) && !after.is_some_and(|b| is_ident_byte(*b))
    })
}

/// The identifier a file must contain to define `name`: the name itself, or the
/// identifier in a Ruby `ready?`/`save!`/`name=`, a C++ destructor `~Stack`, or
/// `operator` for a C++ operator. `None` for a name with no identifier (Ruby `<=>`).
pub(crate) fn token(name: &str) -> Option<&str> {
    let is_word = |text: &str| {
        text.chars()
            .next()
            .is_some_and(|c| !c.is_ascii_digit() && (c == '_' || c.is_alphanumeric()))
            && text.chars().all(|c| c == '_' || c.is_alphanumeric())
    };
    if is_word(name) {
        return Some(name);
    }
    let stem = name
        .strip_suffix(['?', '!', '='])
        .or_else(|| name.strip_prefix('~'));
    if let Some(stem) = stem
        && is_word(stem)
    {
        return Some(stem);
    }
    name.starts_with("operator").then_some("operator")
}

/// False only when `haystack` (a whole file) cannot define `name`: it lacks the name's
/// [`token`] as a whole identifier, or, for a name without one, the name's text. A
/// non-ASCII name may also be spelled with `\u` escapes (JavaScript's `\u00e9_2` defines
/// `é_2`), so a file holding one may define any non-ASCII name.
pub(crate) fn may_define(haystack: &[u8], name: &str) -> bool {
    let spelled = match token(name) {
        Some(token) => contains_ident(haystack, token),
        None => !name.is_empty() && memmem::find(haystack, name.as_bytes()).is_some(),
    };
    spelled || (!name.is_ascii() && memmem::find(haystack, b"\\u").is_some())
}

/// A name, hashed the way [`Summary`] hashes tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key(u64);

impl Key {
    /// The key of `name`'s [`token`] (`ready` for `ready?`), or `None` when it has no
    /// token or the token is not ASCII (then no summary can rule a file out).
    pub(crate) fn of(name: &str) -> Option<Key> {
        let bytes = token(name)?.as_bytes();
        let is_token = bytes.first().is_some_and(|b| !b.is_ascii_digit())
            && bytes.iter().all(|b| is_ident_byte(*b));
        is_token.then(|| Key(hash_token(bytes)))
    }
}

/// A Bloom filter of the identifier tokens in one file: three probes per token, one bit
/// per two bytes of source. Source code has roughly one distinct identifier per 30–50
/// bytes, so that is 15–25 bits per token and a false-positive rate well under 1 %.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    words: Box<[u64]>,
}

/// Smallest and largest filter, in 64-bit words.
const MIN_WORDS: usize = 4;
const MAX_WORDS: usize = 1 << 16;
/// Bytes of source per filter word (64 bits for 128 bytes: a bit per two bytes).
const BYTES_PER_WORD: usize = 128;

impl Summary {
    /// Summarises a file's bytes.
    pub(crate) fn build(source: &[u8]) -> Summary {
        let words = (source.len() / BYTES_PER_WORD).clamp(MIN_WORDS, MAX_WORDS);
        let mut summary = Summary {
            words: vec![0; words].into_boxed_slice(),
        };
        let len = source.len();
        let mut at = 0;
        while at < len {
            if !is_ident_byte(source[at]) {
                at += 1;
                continue;
            }
            let start = at;
            while at < len && is_ident_byte(source[at]) {
                at += 1;
            }
            // Identifiers never start with a digit, so numbers need no room.
            if !source[start].is_ascii_digit() {
                summary.insert(hash_token(&source[start..at]));
            }
        }
        summary
    }

    /// A summary that may contain every name: for a file whose bytes are not read (too
    /// large), so that no lookup rules it out unseen.
    pub(crate) fn unknown() -> Summary {
        Summary {
            words: vec![u64::MAX; MIN_WORDS].into_boxed_slice(),
        }
    }

    /// False only when the file certainly does not contain the name as a token. A name
    /// without a key may be anywhere.
    pub(crate) fn may_contain(&self, key: Option<Key>) -> bool {
        let Some(Key(hash)) = key else {
            return true;
        };
        probes(self.bits(), hash).all(|(word, bit)| self.words[word] & bit != 0)
    }

    fn insert(&mut self, hash: u64) {
        for (word, bit) in probes(self.bits(), hash) {
            self.words[word] |= bit;
        }
    }

    /// The number of bits in the filter.
    fn bits(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    /// Heap bytes held, for memory accounting in tests and benches.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// The three (word index, bit mask) probes of a hash into a filter of `bits` bits: double
/// hashing, each probe mapped into range by a multiply-shift instead of a division.
fn probes(bits: u64, hash: u64) -> impl Iterator<Item = (usize, u64)> {
    let step = hash.rotate_left(32) | 1;
    (0..3u64).map(move |i| {
        let probe = hash.wrapping_add(i.wrapping_mul(step));
        let bit = ((u128::from(probe) * u128::from(bits)) >> 64) as u64;
        ((bit / 64) as usize, 1u64 << (bit % 64))
    })
}

/// A fast 64-bit hash of a short token: word-at-a-time multiply-rotate, then the
/// MurmurHash3 finaliser so every output bit depends on every input bit.
fn hash_token(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut hash = (bytes.len() as u64) ^ 0x243F_6A88_85A3_08D3;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        hash = (hash ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(29);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        // Byte by byte: a variable-length copy would be a call to memcpy per token.
        let word = tail
            .iter()
            .enumerate()
            .fold(0u64, |word, (i, b)| word | (u64::from(*b) << (8 * i)));
        hash = (hash ^ word).wrapping_mul(K).rotate_left(29);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_identifiers_only() {
        let src = b"func NewReaderSize() {}\n// x.NewReader(\nfoo_bar";
        assert!(contains_ident(src, "NewReader"));
        assert!(contains_ident(src, "NewReaderSize"));
        assert!(!contains_ident(src, "Reader"));
        assert!(!contains_ident(src, "foo"));
        assert!(contains_ident(src, "foo_bar"));
        assert!(contains_ident(b"r#match", "match"));
        assert!(!contains_ident(b"", "x"));
        assert!(!contains_ident(b"x", ""));
    }

    #[test]
    fn non_ascii_names_may_be_spelled_with_escapes() {
        let js = b"function \\u00e9_2() {}\n";
        assert!(may_define(js, "\u{e9}_2"));
        assert!(!may_define(b"function e_2() {}\n", "\u{e9}_2"));
        assert!(!may_define(js, "other"));
    }

    #[test]
    fn summary_never_misses_a_token() {
        let src = "package p\nfunc Größe() {}\ntype T_1 struct{ r#fn int }\nconst x=0x1F\n";
        let summary = Summary::build(src.as_bytes());
        for name in [
            "package", "p", "func", "Gr", "e", "type", "T_1", "struct", "r", "fn",
        ] {
            assert!(summary.may_contain(Key::of(name)), "{name}");
        }
        // Non-ASCII names have no key: every file is a candidate.
        assert_eq!(Key::of("Größe"), None);
        assert!(summary.may_contain(Key::of("Größe")));
        assert_eq!(Key::of("1x"), None);
    }

    #[test]
    fn names_that_are_not_one_token_are_found_by_their_identifier() {
        let ruby = b"class A\n  attr_writer :name\n  def ready?; end\n  def <=>(o); end\nend\n";
        let cpp = b"struct Stack { ~ Stack(); bool operator == (const Stack&); };";
        let summary = Summary::build(ruby);
        for name in ["name=", "ready?", "ready!", "A="] {
            assert!(summary.may_contain(Key::of(name)), "{name}");
            assert!(may_define(ruby, name), "{name}");
        }
        assert_eq!(token("<=>"), None);
        assert!(summary.may_contain(Key::of("<=>")));
        assert!(may_define(ruby, "<=>"));
        assert!(!may_define(ruby, "[]"));
        assert!(!may_define(ruby, "other?"));
        let summary = Summary::build(cpp);
        for name in ["~Stack", "operator==", "operator()", "Stack"] {
            assert!(summary.may_contain(Key::of(name)), "{name}");
            assert!(may_define(cpp, name), "{name}");
        }
        assert_eq!(token("~Stack"), Some("Stack"));
        assert_eq!(token("operator bool"), Some("operator"));
        assert!(!may_define(cpp, "~Queue"));
        assert!(!summary.may_contain(Key::of("~Queue")));
    }

    #[test]
    fn summary_rules_out_absent_names() {
        // About one distinct identifier per 35 bytes, as in real code.
        let src: String = (0..2000)
            .map(|i| format!("let ident{i} = f(ident{i}, x);\n"))
            .collect();
        let summary = Summary::build(src.as_bytes());
        assert!((0..2000).all(|i| summary.may_contain(Key::of(&format!("ident{i}")))));
        let false_positives = (0..10_000)
            .filter(|i| summary.may_contain(Key::of(&format!("other{i}"))))
            .count();
        // 16 bits per token and three probes: 0.5 % in theory.
        assert!(
            false_positives < 100,
            "{false_positives} false positives in 10,000"
        );
        assert!(!Summary::build(b"").may_contain(Key::of("x")));
    }
}
