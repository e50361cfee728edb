//! Kotlin through find_symbol: one of every default ctags kind, scopes by class, object
//! and function after the package, and qualified lookups.

use metron::testing::Definitions;

use crate::suite::symbols::Fixture;

/// One of every kind ctags emits for Kotlin by default (package, class, interface,
/// object, method, constant, variable, typealias). Line numbers matter.
pub(super) const SHAPES_KT: &str = "\
package org.shapes

typealias Scale = (Double) -> Double

const val LIMIT = 8
var counter = 0

interface Area {
    fun measure(): Double
}

class Disk(val radius: Double, var label: String) : Area {
    override fun measure(): Double {
        val squared = radius * radius
        return squared
    }

    companion object Factory {
        fun unit() = Disk(1.0, \"\")
    }
}

object Catalog {
    fun register(area: Area) {}
}

enum class Tone { LIGHT, DARK }

fun Disk.grow(by: Double): Disk {
    fun clamp(x: Double) = x
    return Disk(clamp(radius + by), label)
}
";

#[test]
fn every_kotlin_kind() {
    let f = Fixture::new(&[("Shapes.kt", SHAPES_KT)]);
    let cases: &[(&str, &[&str])] = &[
        ("Scale", &["Scale [typealias] -> Shapes.kt:3"]),
        ("LIMIT", &["LIMIT [constant] -> Shapes.kt:5"]),
        ("counter", &["counter [variable] -> Shapes.kt:6"]),
        ("Area", &["Area [interface] -> Shapes.kt:8"]),
        (
            "measure",
            &[
                "measure [method] Area -> Shapes.kt:9",
                "measure [method] Disk -> Shapes.kt:13",
            ],
        ),
        ("Disk", &["Disk [class] -> Shapes.kt:12"]),
        ("radius", &["radius [constant] Disk -> Shapes.kt:12"]),
        ("label", &["label [variable] Disk -> Shapes.kt:12"]),
        (
            "squared",
            &["squared [constant] Disk.measure -> Shapes.kt:14"],
        ),
        ("Factory", &["Factory [object] Disk -> Shapes.kt:18"]),
        ("unit", &["unit [method] Disk.Factory -> Shapes.kt:19"]),
        ("Catalog", &["Catalog [object] -> Shapes.kt:23"]),
        ("register", &["register [method] Catalog -> Shapes.kt:24"]),
        ("Tone", &["Tone [class] -> Shapes.kt:27"]),
        ("grow", &["grow [method] -> Shapes.kt:29"]),
        ("clamp", &["clamp [method] grow -> Shapes.kt:30"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
}

/// The package is the outermost scope, as for Java: a method is named by its class, its
/// package, or both.
#[test]
fn kotlin_qualified_names_narrow_by_class_and_package() {
    let f = Fixture::new(&[("Shapes.kt", SHAPES_KT)]);
    let disk = ["measure [method] Disk -> Shapes.kt:13"];
    for query in [
        "Disk.measure",
        "shapes.Disk.measure",
        "org.shapes.Disk.measure",
    ] {
        assert_eq!(f.lines(query), disk, "{query}");
    }
    assert_eq!(
        f.lines("Factory.unit"),
        ["unit [method] Disk.Factory -> Shapes.kt:19"]
    );
    assert_eq!(
        f.lines("org.shapes.Area.measure"),
        ["measure [method] Area -> Shapes.kt:9"]
    );
    assert_eq!(f.lines("shapes.grow"), ["grow [method] -> Shapes.kt:29"]);
}

/// The package is tagged by its whole dotted name, as ctags tags it; an import, a
/// parameter and an enum entry are not definitions (ctags 5.9 tags none of them).
#[test]
fn kotlin_packages_whole_and_no_imports_or_parameters() {
    let Some(defs) = Definitions::new().of("Shapes.kt", SHAPES_KT.as_bytes()) else {
        panic!("Kotlin is compiled in");
    };
    assert!(
        defs.iter()
            .any(|(n, l, k)| n == "org.shapes" && *l == 1 && *k == "package"),
        "{defs:?}"
    );
    for absent in ["by", "area", "x", "LIGHT", "DARK"] {
        assert!(
            defs.iter().all(|(n, _, _)| n != absent),
            "{absent}: {defs:?}"
        );
    }
}
