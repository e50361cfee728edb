//! TypeScript and TSX through find_symbol: every default ctags kind, scopes and
//! qualified lookups.

use crate::suite::symbols::Fixture;

/// One of every default ctags TypeScript kind, members of a class, an interface, an
/// enum and a namespace, and a constructor parameter property.
pub(super) const STORE_TS: &str = "\
export const LIMIT = 10;
export let counter = 0;

export type Key = string | number;

export interface Cache {
  size: number;
  get(key: Key): unknown;
}

export enum Color {
  Red,
  Green = 2,
}

export class Store implements Cache {
  size = 0;
  #secret = 1;
  constructor(private readonly name: string) {}
  get(key: Key): unknown {
    const found = key;
    return found;
  }
  *entries() {}
}

export function createStore(): Store {
  return new Store('x');
}

function* ids() {}

export namespace Util {
  export function clamp(n: number): number {
    return n;
  }
}
";

pub(super) const VIEW_TSX: &str = "\
export interface BadgeProps {
  label: string;
}

export function Badge({ label }: BadgeProps) {
  return <span className=\"badge\">{label}</span>;
}

export class Panel {
  get(): JSX.Element {
    return <div />;
  }
}
";

#[test]
fn every_typescript_kind_is_found() {
    let f = Fixture::new(&[("src/store.ts", STORE_TS), ("src/view.tsx", VIEW_TSX)]);
    let cases: &[(&str, &[&str])] = &[
        ("LIMIT", &["LIMIT [constant] -> src/store.ts:1"]),
        ("counter", &["counter [variable] -> src/store.ts:2"]),
        ("Key", &["Key [alias] -> src/store.ts:4"]),
        ("Cache", &["Cache [interface] -> src/store.ts:6"]),
        (
            "size",
            &[
                "size [property] Cache -> src/store.ts:7",
                "size [property] Store -> src/store.ts:17",
            ],
        ),
        ("Color", &["Color [enum] -> src/store.ts:11"]),
        ("Red", &["Red [enumerator] Color -> src/store.ts:12"]),
        ("Green", &["Green [enumerator] Color -> src/store.ts:13"]),
        ("Store", &["Store [class] -> src/store.ts:16"]),
        ("secret", &["secret [property] Store -> src/store.ts:18"]),
        ("name", &["name [property] Store -> src/store.ts:19"]),
        ("found", &["found [constant] Store.get -> src/store.ts:21"]),
        // ctags' TypeScript parser has no generator methods: a method.
        ("entries", &["entries [method] Store -> src/store.ts:24"]),
        (
            "createStore",
            &["createStore [function] -> src/store.ts:27"],
        ),
        ("ids", &["ids [generator] -> src/store.ts:31"]),
        ("Util", &["Util [namespace] -> src/store.ts:33"]),
        ("clamp", &["clamp [function] Util -> src/store.ts:34"]),
        ("BadgeProps", &["BadgeProps [interface] -> src/view.tsx:1"]),
        ("label", &["label [property] BadgeProps -> src/view.tsx:2"]),
        ("Badge", &["Badge [function] -> src/view.tsx:5"]),
        ("Panel", &["Panel [class] -> src/view.tsx:9"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
}

#[test]
fn typescript_members_show_their_scope_and_qualified_names_narrow() {
    let f = Fixture::new(&[("src/store.ts", STORE_TS), ("src/view.tsx", VIEW_TSX)]);
    assert_eq!(
        f.lines("get"),
        [
            "get [method] Cache -> src/store.ts:8",
            "get [method] Store -> src/store.ts:20",
            "get [method] Panel -> src/view.tsx:10",
        ]
    );
    assert_eq!(
        f.lines("Store.get"),
        ["get [method] Store -> src/store.ts:20"]
    );
    assert_eq!(
        f.lines("Cache.get"),
        ["get [method] Cache -> src/store.ts:8"]
    );
    assert_eq!(
        f.lines("Panel.get"),
        ["get [method] Panel -> src/view.tsx:10"]
    );
    assert_eq!(
        f.lines("Util.clamp"),
        ["clamp [function] Util -> src/store.ts:34"]
    );
    assert_eq!(
        f.lines("Color.Red"),
        ["Red [enumerator] Color -> src/store.ts:12"]
    );
}

#[test]
fn loop_variables_of_top_level_code_are_variables() {
    let f = Fixture::new(&[(
        "script.ts",
        "for (let item of items) {\n  for (let key in item) {\n    log(key);\n  }\n}\nfunction f() {\n  for (let inner of items) {}\n}\n",
    )]);
    assert_eq!(f.lines("item"), ["item [variable] -> script.ts:1"]);
    assert_eq!(f.lines("key"), ["key [variable] -> script.ts:2"]);
    let inner = f.lines("inner");
    assert!(inner[0].starts_with("No definition"), "{inner:?}");
}

#[test]
fn a_dotted_namespace_scopes_its_members_by_its_whole_name() {
    let f = Fixture::new(&[(
        "config.ts",
        "namespace app.settings {\n  export const depth = 2;\n}\n",
    )]);
    assert_eq!(
        f.lines("settings"),
        ["settings [namespace] app -> config.ts:1"]
    );
    assert_eq!(
        f.lines("app.settings"),
        ["settings [namespace] app -> config.ts:1"]
    );
    assert_eq!(
        f.lines("app.settings.depth"),
        ["depth [constant] app.settings -> config.ts:2"]
    );
}

#[test]
fn enum_members_written_without_commas_are_found() {
    // As while an enum is typed: names on one line, and one a line with and without
    // values, none separated by commas.
    let f = Fixture::new(&[(
        "flags.ts",
        "enum Mode { Read Write Exec }\nenum Level {\n  Low = 1\n  Mid\n  High = Low | Mid\n  Top = -1\n}\n",
    )]);
    for (name, line) in [
        ("Read", "Read [enumerator] Mode -> flags.ts:1"),
        ("Write", "Write [enumerator] Mode -> flags.ts:1"),
        ("Exec", "Exec [enumerator] Mode -> flags.ts:1"),
        ("Low", "Low [enumerator] Level -> flags.ts:3"),
        ("Mid", "Mid [enumerator] Level -> flags.ts:4"),
        ("High", "High [enumerator] Level -> flags.ts:5"),
        ("Top", "Top [enumerator] Level -> flags.ts:6"),
    ] {
        assert_eq!(f.lines(name), [line], "{name}");
    }
}

#[test]
fn an_assignment_in_an_enum_value_call_is_not_a_member() {
    // Only the chain tree-sitter builds from missing commas names members: an
    // assignment passed to a call, or one outside any enum, names none.
    let f = Fixture::new(&[(
        "calls.ts",
        "enum Size {\n  Small = 1\n  Large = pick(chosen = 2)\n}\nlet seen = 0;\nseen = 3;\n",
    )]);
    assert_eq!(f.lines("Large"), ["Large [enumerator] Size -> calls.ts:3"]);
    assert!(
        f.lines("chosen")[0].starts_with("No definition"),
        "{:?}",
        f.lines("chosen")
    );
    assert_eq!(f.lines("seen"), ["seen [variable] -> calls.ts:5"]);
}

#[test]
fn a_declaration_after_an_unterminated_string_is_found() {
    // The strings on lines 1, 4 and 6 are left open, as while they are typed: the
    // declarations on the next lines are still definitions, by their own keyword (a
    // `const` in a function too, as any local constant).
    let f = Fixture::new(&[(
        "typing.ts",
        "let greeting = \"hello\nvar retries = 3\nfunction f() {\n  let u = \"x\n  const limit = 1;\n  let v = \"y\n  let local = 2;\n}\n",
    )]);
    assert_eq!(f.lines("retries"), ["retries [variable] -> typing.ts:2"]);
    assert_eq!(f.lines("limit"), ["limit [constant] f -> typing.ts:5"]);
    let local = f.lines("local");
    assert!(local[0].starts_with("No definition"), "{local:?}");
}
