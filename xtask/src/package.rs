//! The release archive: a `.tar.gz` whose bytes depend only on the files' contents and the
//! commit time, so the same commit gives the same archive on any machine.
//!
//! Entries are sorted by path, with parent directories listed explicitly; every entry has
//! mtime `SOURCE_DATE_EPOCH`, uid and gid 0 with empty user and group names, and mode 0755
//! (the binary and directories) or 0644 (everything else), whatever the files on disk
//! have. The gzip header carries no file name and mtime 0 (as `gzip -n` writes it), and
//! the compression level is fixed.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use anyhow::{Context, Result, bail, ensure};
use flate2::{Compression, GzBuilder};

/// The name of the binary inside the archive, the one entry that is executable.
pub(crate) const BINARY: &str = "metron";

/// Every file an archive holds, besides the directories that contain them.
pub(crate) const FILES: [&str; 8] = [
    BINARY,
    "README.md",
    "LICENSE",
    "SECURITY.md",
    "completions/metron.bash",
    "completions/_metron",
    "completions/metron.fish",
    "man/metron.1",
];

/// Permission bits for a file at `path` in the archive.
fn file_mode(path: &str) -> u32 {
    if path == BINARY { 0o755 } else { 0o644 }
}

/// Permission bits for every directory in the archive.
const DIR_MODE: u32 = 0o755;

/// Builds the archive from `files` (path in the archive → contents), stamped `mtime`.
/// The paths must be exactly [`FILES`].
pub(crate) fn tar_gz(files: &BTreeMap<String, Vec<u8>>, mtime: u64) -> Result<Vec<u8>> {
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    let mut expected = FILES.to_vec();
    expected.sort_unstable();
    ensure!(
        names == expected,
        "the archive must hold exactly {expected:?}, not {names:?}"
    );
    let mut entries: BTreeMap<String, Option<&[u8]>> = BTreeMap::new();
    for (path, data) in files {
        let mut parent = path.as_str();
        while let Some((dir, _)) = parent.rsplit_once('/') {
            entries.insert(format!("{dir}/"), None);
            parent = dir;
        }
        entries.insert(path.clone(), Some(data));
    }

    let mut tar = tar::Builder::new(Vec::new());
    for (path, data) in &entries {
        let mut header = tar::Header::new_ustar();
        header.set_path(path)?;
        match data {
            Some(data) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(data.len() as u64);
                header.set_mode(file_mode(path));
            }
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                header.set_mode(DIR_MODE);
            }
        }
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(mtime);
        header.set_username("")?;
        header.set_groupname("")?;
        header.set_cksum();
        tar.append(&header, data.unwrap_or_default())
            .with_context(|| format!("cannot add {path} to the archive"))?;
    }
    let tar = tar.into_inner().context("cannot finish the tar stream")?;

    let mut gz = GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), Compression::best());
    gz.write_all(&tar).context("cannot compress the archive")?;
    gz.finish().context("cannot finish the gzip stream")
}

/// One entry as read back from an archive, for the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) path: String,
    pub(crate) is_dir: bool,
    pub(crate) mode: u32,
    pub(crate) data: Vec<u8>,
}

/// Reads an archive back and checks it is what [`tar_gz`] writes: the layout, modes,
/// owners and mtimes. Returns its entries in order.
pub(crate) fn check_archive(bytes: &[u8], mtime: Option<u64>) -> Result<Vec<Listed>> {
    ensure!(
        bytes.get(..4) == Some(&[0x1f, 0x8b, 8, 0]),
        "not a gzip stream without a file name (header {:02x?})",
        bytes.get(..4)
    );
    ensure!(
        bytes.get(4..8) == Some(&[0; 4]),
        "the gzip header carries an mtime; it must be 0"
    );
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut listed = Vec::new();
    let mut first_mtime = None;
    for entry in tar.entries().context("cannot read the archive")? {
        let mut entry = entry.context("cannot read an archive entry")?;
        let header = entry.header().clone();
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let is_dir = header.entry_type() == tar::EntryType::Directory;
        let mode = header.mode()?;
        let expected_mode = if is_dir { DIR_MODE } else { file_mode(&path) };
        ensure!(
            mode == expected_mode,
            "{path} has mode {mode:o}, not {expected_mode:o}"
        );
        ensure!(
            header.uid()? == 0 && header.gid()? == 0,
            "{path} is not owned by uid/gid 0"
        );
        let user = header.username_bytes().unwrap_or_default();
        let group = header.groupname_bytes().unwrap_or_default();
        ensure!(
            user.is_empty() && group.is_empty(),
            "{path} names an owner ({}:{})",
            String::from_utf8_lossy(user),
            String::from_utf8_lossy(group)
        );
        let entry_mtime = header.mtime()?;
        let wanted = *first_mtime.get_or_insert(mtime.unwrap_or(entry_mtime));
        ensure!(
            entry_mtime == wanted,
            "{path} has mtime {entry_mtime}, not {wanted}"
        );
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        listed.push(Listed {
            path,
            is_dir,
            mode,
            data,
        });
    }
    let paths: Vec<&str> = listed.iter().map(|l| l.path.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    ensure!(paths == sorted, "the entries are not sorted: {paths:?}");
    let files: Vec<&str> = listed
        .iter()
        .filter(|l| !l.is_dir)
        .map(|l| l.path.as_str())
        .collect();
    let mut expected = FILES.to_vec();
    expected.sort_unstable();
    if files != expected {
        bail!("the archive holds {files:?}, not {expected:?}");
    }
    Ok(listed)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    use super::*;

    fn sample() -> BTreeMap<String, Vec<u8>> {
        FILES
            .iter()
            .map(|path| {
                (
                    (*path).to_owned(),
                    format!("contents of {path}\n").into_bytes(),
                )
            })
            .collect()
    }

    #[test]
    fn the_layout_modes_owners_and_mtimes_are_fixed() {
        let bytes = tar_gz(&sample(), 1_700_000_000).expect("archive");
        let listed = check_archive(&bytes, Some(1_700_000_000)).expect("checks");
        let layout: Vec<(&str, u32)> = listed.iter().map(|l| (l.path.as_str(), l.mode)).collect();
        assert_eq!(
            layout,
            [
                ("LICENSE", 0o644),
                ("README.md", 0o644),
                ("SECURITY.md", 0o644),
                ("completions/", 0o755),
                ("completions/_metron", 0o644),
                ("completions/metron.bash", 0o644),
                ("completions/metron.fish", 0o644),
                ("man/", 0o755),
                ("man/metron.1", 0o644),
                ("metron", 0o755),
            ]
        );
        assert_eq!(listed[9].data, b"contents of metron\n");
        // The standard reader agrees on owners and times.
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
        for entry in tar.entries().expect("entries") {
            let entry = entry.expect("entry");
            let header = entry.header();
            assert_eq!(header.mtime().ok(), Some(1_700_000_000));
            assert_eq!(header.username().ok().flatten(), Some(""));
            assert!(header.as_ustar().is_some(), "ustar headers");
        }
        assert!(check_archive(&bytes, Some(1)).is_err(), "another mtime");
    }

    #[test]
    fn a_wrong_file_set_is_refused() {
        let mut files = sample();
        files.remove("man/metron.1");
        let err = tar_gz(&files, 0).unwrap_err().to_string();
        assert!(err.contains("must hold exactly"), "{err}");
    }

    /// Writes the sample files under `dir` with the given mtime and permissions, then
    /// packages them the way `dist` does: read from disk.
    fn package_from_disk(dir: &Path, mtime: SystemTime, mode: u32) -> Vec<u8> {
        let mut read = BTreeMap::new();
        for (path, data) in sample() {
            let file = dir.join(&path);
            fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            fs::write(&file, &data).expect("write");
            let handle = fs::File::options().write(true).open(&file).expect("open");
            handle.set_modified(mtime).expect("set mtime");
            fs::set_permissions(&file, fs::Permissions::from_mode(mode)).expect("chmod");
            read.insert(path, fs::read(&file).expect("read back"));
        }
        tar_gz(&read, 1_600_000_000).expect("archive")
    }

    #[test]
    fn the_same_inputs_give_the_same_bytes() {
        let base = std::env::temp_dir().join(format!("xtask-repro-{}", std::process::id()));
        let (one, two) = (base.join("one"), base.join("two/deeper"));
        let first = package_from_disk(&one, SystemTime::UNIX_EPOCH, 0o600);
        let later = SystemTime::now() - Duration::from_secs(3600);
        let second = package_from_disk(&two, later, 0o777);
        let _ = fs::remove_dir_all(&base);
        assert!(first == second, "the archives differ");
        // And the content matters: one changed byte changes the archive.
        let mut changed = sample();
        changed.insert("LICENSE".into(), b"contents of LICENSF\n".to_vec());
        assert_ne!(tar_gz(&changed, 1_600_000_000).expect("archive"), first);
    }
}
