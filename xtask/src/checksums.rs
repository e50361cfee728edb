//! `SHA256SUMS`: one line per release file, in the format `sha256sum` writes and
//! `sha256sum -c` checks (`<hex>  <name>`), sorted by name.
//!
//! It is rewritten from what is in `dist/` each time, so building one target at a time
//! still ends with a file that covers every archive and SBOM there.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The name of the checksum file in `dist/`.
pub(crate) const FILE_NAME: &str = "SHA256SUMS";

/// The lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `name` is a release file that the sums cover.
fn is_release_file(name: &str) -> bool {
    name.starts_with("metron_") && (name.ends_with(".tar.gz") || name.ends_with(".spdx.json"))
}

/// The sums for every release file in `dir`, sorted by name.
pub(crate) fn sums_text(dir: &Path) -> Result<String> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if is_release_file(&name) {
            names.push(name);
        }
    }
    names.sort();
    let mut text = String::new();
    for name in names {
        let bytes = fs::read(dir.join(&name)).with_context(|| format!("cannot read {name}"))?;
        text.push_str(&format!("{}  {name}\n", sha256_hex(&bytes)));
    }
    Ok(text)
}

/// Rewrites `dir/SHA256SUMS` to cover every release file in `dir`; returns how many.
pub(crate) fn write(dir: &Path) -> Result<usize> {
    let text = sums_text(dir)?;
    fs::write(dir.join(FILE_NAME), &text)
        .with_context(|| format!("cannot write {FILE_NAME} in {}", dir.display()))?;
    Ok(text.lines().count())
}

/// Checks `dir/SHA256SUMS` against the files, like `sha256sum -c`, and that it covers
/// every release file in `dir`.
pub(crate) fn verify(dir: &Path) -> Result<usize> {
    let path = dir.join(FILE_NAME);
    let recorded = fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {}; run `cargo xtask dist` to write it",
            path.display()
        )
    })?;
    let actual = sums_text(dir)?;
    if recorded != actual {
        bail!(
            "{FILE_NAME} does not match the files in {}:\nrecorded:\n{recorded}actual:\n{actual}",
            dir.display()
        );
    }
    Ok(actual.lines().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sums_cover_every_release_file_and_verify() {
        let dir = std::env::temp_dir().join(format!("xtask-sums-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(dir.join("metron_0.1.0_linux_amd64.tar.gz"), b"archive").expect("write");
        fs::write(dir.join("metron_0.1.0_linux_amd64.spdx.json"), b"{}").expect("write");
        fs::write(dir.join("notes.txt"), b"not a release file").expect("write");
        assert_eq!(write(&dir).expect("write sums"), 2);
        let text = fs::read_to_string(dir.join(FILE_NAME)).expect("read");
        assert_eq!(
            text,
            format!(
                "{}  metron_0.1.0_linux_amd64.spdx.json\n{}  metron_0.1.0_linux_amd64.tar.gz\n",
                sha256_hex(b"{}"),
                sha256_hex(b"archive"),
            )
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        verify(&dir).expect("verifies");

        // `sha256sum -c` agrees, where it exists.
        if let Ok(out) = std::process::Command::new("sha256sum")
            .args(["-c", FILE_NAME])
            .current_dir(&dir)
            .output()
        {
            assert!(out.status.success(), "{out:?}");
        }

        fs::write(dir.join("metron_0.1.0_linux_amd64.tar.gz"), b"tampered").expect("write");
        let err = verify(&dir).unwrap_err().to_string();
        assert!(err.contains("does not match"), "{err}");
        fs::write(dir.join("metron_0.1.0_darwin_arm64.tar.gz"), b"new").expect("write");
        write(&dir).expect("rewrite");
        assert_eq!(verify(&dir).expect("verifies"), 3);
        let _ = fs::remove_dir_all(&dir);
    }
}
