//! The SPDX 2.3 SBOM of one release binary, generated from `cargo metadata`, never written
//! by hand.
//!
//! What it lists:
//! - every crate compiled into the binary: the closure of metron's *normal* dependencies
//!   for the target with default features. Build scripts' dependencies and
//!   dev-dependencies are left out: they run on the build machine and put no code into the
//!   binary. Proc-macro crates (and what they depend on) are normal dependencies and stay
//!   in: they generate code that is in it.
//!
//!   Which crates and edges that is comes from `cargo tree -e normal --target T -p metron`,
//!   and every field of each crate from `cargo metadata --filter-platform T`. The metadata
//!   graph alone over-reports: it unifies features across the host and the target, so a
//!   feature a build-dependency turns on (tree-sitter's build script enables serde_json's
//!   `preserve_order`) shows up as edges (to indexmap, hashbrown...) that the target build
//!   never compiles. `cargo tree` resolves features the way the build does.
//! - the C code crates vendor and compile (libgit2, zlib, the tree-sitter runtime and
//!   grammars, and the TLS crates' C if one is in the graph), each as its own package that
//!   the crate CONTAINS, with the license of that code.
//!
//! Each crate has its version, declared license (`NOASSERTION` when the crate states none),
//! download location, a `pkg:cargo/NAME@VERSION` purl and, for registry crates, the
//! SHA-256 that Cargo.lock pins. The document is deterministic: `created` is the commit
//! time and the namespace is derived from name, version, target and commit.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::target::Target;

/// What the SBOM is for.
pub(crate) struct Subject<'a> {
    /// The root package's name (`metron`).
    pub(crate) root: &'a str,
    pub(crate) target: Target,
    /// The full commit hash the binary was built from (or `unknown`).
    pub(crate) commit: &'a str,
    /// `SOURCE_DATE_EPOCH`: the document's creation time.
    pub(crate) epoch: u64,
}

/// The SPDX document for `subject`, from `metadata` (`cargo metadata --format-version 1
/// --filter-platform TARGET`), `tree` (the output of [`TREE_ARGS`] for the target) and the
/// text of Cargo.lock.
pub(crate) fn generate(
    metadata: &Value,
    tree: &str,
    lockfile: &str,
    subject: &Subject,
) -> Result<Value> {
    let graph = Graph::new(metadata)?.restricted_to(tree)?;
    let root_id = graph.root_id(subject.root)?;
    let ids = graph.reachable(&root_id)?;
    let checksums = lock_checksums(lockfile);

    let mut spdx_ids: BTreeMap<&str, String> = BTreeMap::new();
    let mut taken = BTreeSet::new();
    for id in &ids {
        let pkg = graph.package(id)?;
        let spdx_id = format!("SPDXRef-Package-{}-{}", pkg.name, pkg.version);
        let spdx_id = spdx_ref(&spdx_id);
        if !taken.insert(spdx_id.clone()) {
            bail!(
                "two packages map to the SPDX id {spdx_id}; make the ids in xtask/src/sbom.rs distinguish them"
            );
        }
        spdx_ids.insert(id.as_str(), spdx_id);
    }

    // Root first, then by name and version.
    let mut order: Vec<&String> = ids.iter().collect();
    order.sort_by_key(|id| {
        let pkg = graph.package(id).ok();
        (
            id.as_str() != root_id,
            pkg.map(|p| (p.name.to_owned(), p.version.to_owned())),
        )
    });

    let mut packages = Vec::new();
    let mut relationships = vec![json!({
        "spdxElementId": "SPDXRef-DOCUMENT",
        "relationshipType": "DESCRIBES",
        "relatedSpdxElement": spdx_ids[root_id.as_str()],
    })];
    for id in order {
        let pkg = graph.package(id)?;
        let spdx_id = &spdx_ids[id.as_str()];
        let mut entry = json!({
            "SPDXID": spdx_id,
            "name": pkg.name,
            "versionInfo": pkg.version,
            "downloadLocation": download_location(pkg),
            "filesAnalyzed": false,
            "licenseConcluded": "NOASSERTION",
            "licenseDeclared": license_expression(pkg.license),
            "copyrightText": "NOASSERTION",
            "primaryPackagePurpose": if *id == root_id { "APPLICATION" } else { "LIBRARY" },
            "externalRefs": [{
                "referenceCategory": "PACKAGE-MANAGER",
                "referenceType": "purl",
                "referenceLocator": purl(pkg.name, pkg.version),
            }],
        });
        if let Some(sum) = checksums.get(&(pkg.name.to_owned(), pkg.version.to_owned())) {
            entry["checksums"] = json!([{"algorithm": "SHA256", "checksumValue": sum}]);
        }
        packages.push(entry);
        let mut deps: Vec<&String> = graph.normal_deps(id)?.iter().collect();
        deps.sort_by_key(|d| &spdx_ids[d.as_str()]);
        for dep in deps {
            relationships.push(json!({
                "spdxElementId": spdx_id,
                "relationshipType": "DEPENDS_ON",
                "relatedSpdxElement": spdx_ids[dep.as_str()],
            }));
        }
        for part in native_parts(pkg)? {
            let part_id = spdx_ref(&format!("SPDXRef-C-{}-{}", part.name, part.version));
            packages.push(json!({
                "SPDXID": part_id,
                "name": part.name,
                "versionInfo": part.version,
                "downloadLocation": part.download,
                "filesAnalyzed": false,
                "licenseConcluded": "NOASSERTION",
                "licenseDeclared": part.license,
                "copyrightText": "NOASSERTION",
                "primaryPackagePurpose": "SOURCE",
                "comment": part.comment,
            }));
            relationships.push(json!({
                "spdxElementId": spdx_id,
                "relationshipType": "CONTAINS",
                "relatedSpdxElement": part_id,
            }));
        }
    }

    let root = graph.package(&root_id)?;
    let name = format!("{}-{}-{}", root.name, root.version, subject.target.triple());
    Ok(json!({
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": name,
        "documentNamespace": format!("https://spdx.org/spdxdocs/{name}-{}", subject.commit),
        "creationInfo": {
            "created": rfc3339(subject.epoch),
            "creators": ["Tool: metron-xtask"],
        },
        "comment": format!(
            "The crates compiled into {} for {}: the normal-dependency closure in cargo metadata's resolve graph (default features; build and dev dependencies excluded), and the C code vendored in them as packages they CONTAIN. Built from commit {}.",
            root.name,
            subject.target.triple(),
            subject.commit
        ),
        "packages": packages,
        "relationships": relationships,
    }))
}

/// One package's fields from `cargo metadata`.
pub(crate) struct Package<'a> {
    pub(crate) name: &'a str,
    pub(crate) version: &'a str,
    license: Option<&'a str>,
    source: Option<&'a str>,
    repository: Option<&'a str>,
    manifest_path: &'a str,
    links: Option<&'a str>,
}

/// The packages and the resolve graph of a `cargo metadata` document.
pub(crate) struct Graph<'a> {
    packages: BTreeMap<&'a str, Package<'a>>,
    /// Package id → the ids of its normal (not build, not dev) dependencies.
    normal: BTreeMap<&'a str, BTreeSet<String>>,
}

impl<'a> Graph<'a> {
    pub(crate) fn new(metadata: &'a Value) -> Result<Graph<'a>> {
        let mut packages = BTreeMap::new();
        for pkg in metadata["packages"]
            .as_array()
            .context("cargo metadata has no packages")?
        {
            let text = |key: &str| pkg[key].as_str();
            let id = text("id").context("a package without an id")?;
            packages.insert(
                id,
                Package {
                    name: text("name").context("a package without a name")?,
                    version: text("version").context("a package without a version")?,
                    license: text("license"),
                    source: text("source"),
                    repository: text("repository"),
                    manifest_path: text("manifest_path").unwrap_or_default(),
                    links: text("links"),
                },
            );
        }
        let mut normal = BTreeMap::new();
        for node in metadata["resolve"]["nodes"]
            .as_array()
            .context("cargo metadata has no resolve graph (was it run with --no-deps?)")?
        {
            let id = node["id"].as_str().context("a node without an id")?;
            let mut deps = BTreeSet::new();
            for dep in node["deps"].as_array().into_iter().flatten() {
                let is_normal = dep["dep_kinds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["kind"].is_null());
                if is_normal {
                    let pkg = dep["pkg"].as_str().context("a dependency without an id")?;
                    deps.insert(pkg.to_owned());
                }
            }
            normal.insert(id, deps);
        }
        Ok(Graph { packages, normal })
    }

    /// The same graph with only the packages and edges in `tree` (`cargo tree` output with
    /// `--prefix depth --format {p}`); the error names a crate the metadata lacks.
    pub(crate) fn restricted_to(mut self, tree: &str) -> Result<Graph<'a>> {
        let edges = tree_edges(tree)?;
        let mut by_name: BTreeMap<(&str, &str), &'a str> = BTreeMap::new();
        for (id, pkg) in &self.packages {
            by_name.insert((pkg.name, pkg.version), id);
        }
        let id_of = |(name, version): &(String, String)| {
            by_name
                .get(&(name.as_str(), version.as_str()))
                .map(|id| (*id).to_owned())
                .with_context(|| {
                    format!("cargo tree lists {name} {version}, which cargo metadata lacks")
                })
        };
        let mut normal: BTreeMap<&'a str, BTreeSet<String>> = BTreeMap::new();
        for (parent, children) in &edges {
            let parent_id = id_of(parent)?;
            let key = self
                .packages
                .get_key_value(parent_id.as_str())
                .map(|(k, _)| *k)
                .with_context(|| format!("no package {parent_id}"))?;
            let deps = children
                .iter()
                .map(id_of)
                .collect::<Result<BTreeSet<_>>>()?;
            // Every edge cargo tree shows must be a normal edge of the metadata graph.
            let known = self.normal.get(key).cloned().unwrap_or_default();
            if let Some(stray) = deps.difference(&known).next() {
                bail!("cargo tree has an edge {parent_id} -> {stray} that cargo metadata lacks");
            }
            normal.insert(key, deps);
        }
        self.normal = normal;
        Ok(self)
    }

    fn package(&self, id: &str) -> Result<&Package<'a>> {
        self.packages
            .get(id)
            .with_context(|| format!("cargo metadata has no package {id}"))
    }

    /// The id of the workspace package called `name`.
    pub(crate) fn root_id(&self, name: &str) -> Result<String> {
        self.packages
            .iter()
            .find(|(_, p)| p.name == name && p.source.is_none())
            .map(|(id, _)| (*id).to_owned())
            .with_context(|| format!("cargo metadata has no local package {name}"))
    }

    fn normal_deps(&self, id: &str) -> Result<&BTreeSet<String>> {
        self.normal
            .get(id)
            .with_context(|| format!("the resolve graph has no node {id}"))
    }

    /// `root` and every package reachable from it through normal dependencies.
    pub(crate) fn reachable(&self, root: &str) -> Result<BTreeSet<String>> {
        let mut seen = BTreeSet::from([root.to_owned()]);
        let mut queue = vec![root.to_owned()];
        while let Some(id) = queue.pop() {
            for dep in self.normal_deps(&id)? {
                if seen.insert(dep.clone()) {
                    queue.push(dep.clone());
                }
            }
        }
        Ok(seen)
    }

    /// (name, version) of every package reachable from `root`.
    #[cfg(test)]
    pub(crate) fn reachable_names(&self, root: &str) -> Result<BTreeSet<(String, String)>> {
        self.reachable(root)?
            .iter()
            .map(|id| {
                let pkg = self.package(id)?;
                Ok((pkg.name.to_owned(), pkg.version.to_owned()))
            })
            .collect()
    }
}

/// The arguments after `cargo` that give [`generate`] its `tree`, followed by the triple.
pub(crate) const TREE_ARGS: [&str; 11] = [
    "tree", "--locked", "-p", "metron", "-e", "normal", "--prefix", "depth", "--format", "{p}",
    "--target",
];

/// A crate as `cargo tree` names it.
type NameVersion = (String, String);

/// Parent (name, version) → its direct dependencies, from `cargo tree --prefix depth
/// --format {p}` lines such as `3rustix v1.1.6` (a crate already shown ends in `(*)`).
fn tree_edges(tree: &str) -> Result<BTreeMap<NameVersion, BTreeSet<NameVersion>>> {
    let mut edges: BTreeMap<_, BTreeSet<_>> = BTreeMap::new();
    let mut stack: Vec<NameVersion> = Vec::new();
    for line in tree.lines().filter(|l| !l.trim().is_empty()) {
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        let depth: usize = line[..digits]
            .parse()
            .with_context(|| format!("not a `cargo tree --prefix depth` line: {line:?}"))?;
        let mut words = line[digits..].split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            bail!("not a `cargo tree` package line: {line:?}");
        };
        let version = version.strip_prefix('v').unwrap_or(version);
        let node = (name.to_owned(), version.to_owned());
        ensure!(
            depth <= stack.len(),
            "cargo tree skipped a level at {line:?}"
        );
        stack.truncate(depth);
        if let Some(parent) = stack.last() {
            edges
                .entry(parent.clone())
                .or_default()
                .insert(node.clone());
        }
        edges.entry(node.clone()).or_default();
        stack.push(node);
    }
    ensure!(!edges.is_empty(), "cargo tree printed no packages");
    Ok(edges)
}

/// `text` made into a valid SPDX id (letters, digits, `.` and `-`).
fn spdx_ref(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The crate's license as an SPDX expression: the old `MIT/Apache-2.0` spelling becomes
/// `MIT OR Apache-2.0`; no license is `NOASSERTION`.
fn license_expression(license: Option<&str>) -> String {
    match license.map(str::trim) {
        None | Some("") => "NOASSERTION".to_owned(),
        Some(text) => text
            .split('/')
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" OR "),
    }
}

/// The purl of a crate; `+` in a version (build metadata) is percent-encoded.
fn purl(name: &str, version: &str) -> String {
    format!("pkg:cargo/{name}@{}", version.replace('+', "%2B"))
}

/// Where the crate's source can be fetched.
fn download_location(pkg: &Package) -> String {
    match pkg.source {
        Some(source)
            if source.starts_with("registry+https://github.com/rust-lang/crates.io-index")
                || source.starts_with("sparse+https://index.crates.io/") =>
        {
            format!(
                "https://crates.io/api/v1/crates/{}/{}/download",
                pkg.name, pkg.version
            )
        }
        Some(source) if source.starts_with("git+") => match source.split_once('#') {
            Some((url, rev)) => format!("{}@{rev}", url.split('?').next().unwrap_or(url)),
            None => source.to_owned(),
        },
        _ => match pkg.repository {
            Some(repo) if repo.starts_with("https://") => format!("git+{repo}"),
            _ => "NOASSERTION".to_owned(),
        },
    }
}

/// (name, version) → checksum, for every `[[package]]` in Cargo.lock that has one.
fn lock_checksums(lockfile: &str) -> BTreeMap<(String, String), String> {
    let mut sums = BTreeMap::new();
    for block in lockfile.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block.lines().find_map(|line| {
                let (k, v) = line.split_once('=')?;
                (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
            })
        };
        if let (Some(name), Some(version), Some(sum)) =
            (field("name"), field("version"), field("checksum"))
        {
            sums.insert((name, version), sum);
        }
    }
    sums
}

/// C code a crate vendors and compiles into the binary.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NativePart {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) license: String,
    download: String,
    comment: String,
}

/// Crates that declare `links` but compile no code for a native target.
const LINKS_WITHOUT_NATIVE_CODE: &[&str] = &[
    // Passes wasm headers to grammar crates' build scripts; compiles nothing itself.
    "tree-sitter-language",
];

/// The vendored C code in `pkg`. A crate that declares `links` and is neither known here
/// nor in [`LINKS_WITHOUT_NATIVE_CODE`] is an error, so a new native dependency is
/// classified rather than silently missing from the SBOM.
pub(crate) fn native_parts(pkg: &Package) -> Result<Vec<NativePart>> {
    let dir = Path::new(pkg.manifest_path)
        .parent()
        .unwrap_or(Path::new("."));
    let crate_license = license_expression(pkg.license);
    let repository = match pkg.repository {
        Some(repo) if repo.starts_with("https://") => format!("git+{repo}"),
        _ => "NOASSERTION".to_owned(),
    };
    let part = match pkg.name {
        "libgit2-sys" => {
            let Some((_, version)) = pkg.version.split_once('+') else {
                bail!(
                    "libgit2-sys {} has no +LIBGIT2_VERSION in its version; read the vendored libgit2 version in xtask/src/sbom.rs another way",
                    pkg.version
                );
            };
            NativePart {
                name: "libgit2".into(),
                version: version.into(),
                license: "GPL-2.0-only WITH GCC-exception-2.0".into(),
                download: format!("git+https://github.com/libgit2/libgit2@v{version}"),
                comment: "Vendored in the libgit2-sys crate (libgit2/) and compiled by its build script, without https or ssh. GPL-2.0 with a linking exception; the bundled code under libgit2/deps carries its own licenses (see libgit2/COPYING).".into(),
            }
        }
        "libz-sys" => {
            let header = dir.join("src/zlib/zlib.h");
            let text = fs::read_to_string(&header).with_context(|| {
                format!(
                    "cannot read the vendored zlib version from {}",
                    header.display()
                )
            })?;
            let version = text
                .lines()
                .find_map(|l| l.strip_prefix("#define ZLIB_VERSION "))
                .map(|v| v.trim().trim_matches('"').to_owned())
                .with_context(|| format!("no ZLIB_VERSION in {}", header.display()))?;
            NativePart {
                name: "zlib".into(),
                download: format!("https://zlib.net/fossils/zlib-{version}.tar.gz"),
                version,
                license: "Zlib".into(),
                comment: "Vendored in the libz-sys crate (src/zlib/) and compiled statically by its build script.".into(),
            }
        }
        "tree-sitter" => NativePart {
            name: "tree-sitter C runtime".into(),
            version: pkg.version.into(),
            license: crate_license,
            download: repository,
            comment: "The parsing runtime in C (src/lib.c) that the tree-sitter crate compiles; same authors and license as the crate.".into(),
        },
        name if name.starts_with("tree-sitter-") && !grammar_sources(dir).is_empty() => {
            let files = grammar_sources(dir);
            NativePart {
                name: format!("{name} C parser"),
                version: pkg.version.into(),
                license: crate_license,
                download: repository,
                comment: format!(
                    "The grammar's generated parser in C ({}) that the crate compiles; same authors and license as the crate.",
                    files.join(", ")
                ),
            }
        }
        // A grammar crate whose C is somewhere this does not look: stop rather than leave
        // its parser out of the SBOM (grammar crates declare no `links` to catch below).
        name if name.starts_with("tree-sitter-") && name != "tree-sitter-language" => bail!(
            "crate {name} {} has no parser.c or scanner.c where xtask looks for a grammar's C; teach grammar_sources in xtask/src/sbom.rs where it is",
            pkg.version
        ),
        "ring" | "aws-lc-sys" | "aws-lc-fips-sys" => NativePart {
            name: format!("{} C and assembly", pkg.name),
            version: pkg.version.into(),
            license: crate_license,
            download: repository,
            comment: "Cryptography in C and assembly (derived from BoringSSL/OpenSSL) that the crate vendors and compiles; the crate's license expression covers it.".into(),
        },
        name => {
            if let Some(links) = pkg.links
                && !LINKS_WITHOUT_NATIVE_CODE.contains(&name)
            {
                bail!(
                    "crate {name} {} declares links = \"{links}\" and may compile native code that the SBOM must list; classify it in xtask/src/sbom.rs (native_parts)",
                    pkg.version
                );
            }
            return Ok(Vec::new());
        }
    };
    Ok(vec![part])
}

/// The C files of a grammar crate: `src/parser.c` and any scanner, or the same under each
/// dialect's directory (`typescript/src/`, `tsx/src/`), relative to the crate.
fn grammar_sources(dir: &Path) -> Vec<String> {
    let mut roots = vec![String::new()];
    if let Ok(entries) = fs::read_dir(dir) {
        let mut subdirs: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("src/parser.c").is_file())
            .map(|e| format!("{}/", e.file_name().to_string_lossy()))
            .collect();
        subdirs.sort();
        roots.extend(subdirs);
    }
    let mut files = Vec::new();
    for root in roots {
        for file in ["src/parser.c", "src/scanner.c", "src/scanner.cc"] {
            let path = format!("{root}{file}");
            if dir.join(&path).is_file() {
                files.push(path);
            }
        }
    }
    files
}

/// `epoch` (seconds since 1970, UTC) as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339(epoch: u64) -> String {
    let days = epoch / 86_400;
    let secs = epoch % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests;
