//! The SBOM against cargo's own view of the dependency graph.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use super::*;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(workspace());
    command
}

fn metadata(target: Target) -> Value {
    let out = cargo()
        .args(["metadata", "--format-version", "1", "--locked"])
        .args(["--filter-platform", target.triple()])
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("metadata JSON")
}

/// (name, version) of every crate `cargo tree` says a build of metron for `target`
/// compiles into it: normal edges only, features resolved for metron alone.
fn cargo_tree(target: Target) -> BTreeSet<(String, String)> {
    let out = cargo()
        .args(["tree", "--locked", "-p", "metron", "-e", "normal"])
        .args([
            "--target",
            target.triple(),
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let version = words.next()?.strip_prefix('v')?;
            Some((name.to_owned(), version.to_owned()))
        })
        .collect()
}

fn sbom(target: Target, metadata: &Value) -> Value {
    let lockfile = std::fs::read_to_string(workspace().join("Cargo.lock")).expect("Cargo.lock");
    let subject = Subject {
        root: "metron",
        target,
        commit: "0123456789abcdef",
        epoch: 1_700_000_000,
    };
    let out = cargo()
        .args(TREE_ARGS)
        .arg(target.triple())
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "{out:?}");
    let tree = String::from_utf8_lossy(&out.stdout);
    generate(metadata, &tree, &lockfile, &subject).expect("sbom")
}

fn crate_packages(doc: &Value) -> BTreeSet<(String, String)> {
    doc["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| {
            p["externalRefs"][0]["referenceLocator"]
                .as_str()
                .is_some_and(|l| l.starts_with("pkg:cargo/"))
        })
        .map(|p| {
            (
                p["name"].as_str().expect("name").to_owned(),
                p["versionInfo"].as_str().expect("version").to_owned(),
            )
        })
        .collect()
}

#[test]
fn every_crate_in_the_binary_is_listed_with_its_version_and_nothing_else() {
    for target in [Target::LinuxAmd64, Target::DarwinArm64] {
        let metadata = metadata(target);
        let doc = sbom(target, &metadata);
        let listed = crate_packages(&doc);
        let expected = cargo_tree(target);
        let missing: Vec<_> = expected.difference(&listed).collect();
        let extra: Vec<_> = listed.difference(&expected).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{target}: missing {missing:?}, extra {extra:?}"
        );
        // Every crate is in cargo metadata's resolve graph for the target, reachable from
        // metron through normal dependencies, with that version. (The metadata closure is
        // larger: it unifies features that only build scripts turn on; see the module doc.)
        let graph = Graph::new(&metadata).expect("graph");
        let root = graph.root_id("metron").expect("root");
        let closure = graph.reachable_names(&root).expect("closure");
        let outside: Vec<_> = listed.difference(&closure).collect();
        assert!(
            outside.is_empty(),
            "{target}: not in the metadata graph: {outside:?}"
        );
        eprintln!(
            "{target}: {} crates; the metadata closure adds {:?}",
            listed.len(),
            closure.difference(&listed).collect::<Vec<_>>()
        );
        for dev_or_build in ["tempfile", "proptest", "criterion", "cc", "pkg-config"] {
            assert!(
                !listed.iter().any(|(name, _)| name == dev_or_build),
                "{target}: {dev_or_build} is not in the binary"
            );
        }
    }
}

#[test]
fn the_document_is_valid_spdx_shaped_and_deterministic() {
    let target = Target::LinuxAmd64;
    let metadata = metadata(target);
    let doc = sbom(target, &metadata);
    assert_eq!(doc, sbom(target, &metadata), "same input, same document");
    assert_eq!(doc["spdxVersion"], "SPDX-2.3");
    assert_eq!(doc["creationInfo"]["created"], "2023-11-14T22:13:20Z");
    assert_eq!(
        doc["documentNamespace"],
        "https://spdx.org/spdxdocs/metron-0.1.0-x86_64-unknown-linux-musl-0123456789abcdef"
            .replace("0.1.0", env_version().as_str())
    );

    let packages = doc["packages"].as_array().expect("packages");
    let ids: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["SPDXID"].as_str().expect("id"))
        .collect();
    assert_eq!(ids.len(), packages.len(), "unique ids");
    for id in &ids {
        assert!(
            id.starts_with("SPDXRef-")
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'),
            "{id}"
        );
    }
    let relationships = doc["relationships"].as_array().expect("relationships");
    for rel in relationships {
        let from = rel["spdxElementId"].as_str().expect("from");
        let to = rel["relatedSpdxElement"].as_str().expect("to");
        assert!(from == "SPDXRef-DOCUMENT" || ids.contains(from), "{rel}");
        assert!(ids.contains(to), "{rel}");
    }
    assert_eq!(relationships[0]["relationshipType"], "DESCRIBES");
    assert_eq!(packages[0]["name"], "metron");
    assert_eq!(packages[0]["primaryPackagePurpose"], "APPLICATION");

    let find = |name: &str| {
        packages
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no package {name}"))
    };
    // A registry crate: purl, download location, the checksum Cargo.lock pins.
    let serde = find("serde");
    let version = serde["versionInfo"].as_str().expect("version");
    assert_eq!(
        serde["externalRefs"][0]["referenceLocator"],
        format!("pkg:cargo/serde@{version}")
    );
    assert_eq!(
        serde["downloadLocation"],
        format!("https://crates.io/api/v1/crates/serde/{version}/download")
    );
    let lockfile = std::fs::read_to_string(workspace().join("Cargo.lock")).expect("lock");
    let pinned = lock_checksums(&lockfile)[&("serde".to_owned(), version.to_owned())].clone();
    assert_eq!(serde["checksums"][0]["checksumValue"], pinned.as_str());
    assert_eq!(pinned.len(), 64);

    // The vendored C code, each contained by its crate, with its own license.
    let libgit2 = find("libgit2");
    let sys = find("libgit2-sys");
    let sys_version = sys["versionInfo"].as_str().expect("version");
    assert_eq!(
        Some(libgit2["versionInfo"].as_str().expect("version")),
        sys_version.split('+').nth(1)
    );
    assert_eq!(
        libgit2["licenseDeclared"],
        "GPL-2.0-only WITH GCC-exception-2.0"
    );
    assert!(
        sys["externalRefs"][0]["referenceLocator"]
            .as_str()
            .is_some_and(|l| l.contains("%2B")),
        "{sys}"
    );
    let zlib = find("zlib");
    assert_eq!(zlib["licenseDeclared"], "Zlib");
    assert!(
        zlib["versionInfo"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.")),
        "{zlib}"
    );
    find("tree-sitter C runtime");
    for grammar in ["go", "rust", "python", "cpp", "typescript"] {
        let part = find(&format!("tree-sitter-{grammar} C parser"));
        let owner = find(&format!("tree-sitter-{grammar}"));
        assert_eq!(part["licenseDeclared"], owner["licenseDeclared"]);
        assert!(
            relationships
                .iter()
                .any(|r| r["relationshipType"] == "CONTAINS"
                    && r["spdxElementId"] == owner["SPDXID"]
                    && r["relatedSpdxElement"] == part["SPDXID"])
        );
    }
    let contains = relationships
        .iter()
        .filter(|r| r["relationshipType"] == "CONTAINS")
        .count();
    assert_eq!(
        contains,
        2 + 1 + 12 + 1,
        "libgit2, zlib, the runtime, twelve grammars, ring's C and assembly"
    );
    let ring = find("ring C and assembly");
    assert_eq!(ring["licenseDeclared"], find("ring")["licenseDeclared"]);
}

fn env_version() -> String {
    let manifest = std::fs::read_to_string(workspace().join("Cargo.toml")).expect("Cargo.toml");
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .expect("version line")
        .trim_matches('"')
        .to_owned()
}

#[test]
fn a_native_crate_nobody_classified_is_an_error() {
    let pkg = Package {
        name: "openssl-sys",
        version: "0.9.0",
        license: Some("MIT"),
        source: None,
        repository: None,
        manifest_path: "/nowhere/Cargo.toml",
        links: Some("openssl"),
    };
    let err = native_parts(&pkg).unwrap_err().to_string();
    assert!(err.contains("classify it in xtask/src/sbom.rs"), "{err}");
}

#[test]
fn licenses_dates_and_purls_are_spelled_the_spdx_way() {
    assert_eq!(
        license_expression(Some("MIT/Apache-2.0")),
        "MIT OR Apache-2.0"
    );
    assert_eq!(
        license_expression(Some("MIT OR Apache-2.0")),
        "MIT OR Apache-2.0"
    );
    assert_eq!(license_expression(None), "NOASSERTION");
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_825_600), "2000-02-29T12:00:00Z");
    assert_eq!(rfc3339(1_798_761_599), "2026-12-31T23:59:59Z");
    assert_eq!(purl("a", "1.0.0+x"), "pkg:cargo/a@1.0.0%2Bx");
    assert_eq!(
        spdx_ref("SPDXRef-Package-a_b-1.0+x"),
        "SPDXRef-Package-a-b-1.0-x"
    );
}
