//! "All of this tree but those places", in a form a grant-only mechanism can express.
//!
//! Landlock cannot deny: it grants rights beneath a directory, for everything beneath it.
//! To grant everything under `/` except `~/.ssh`, the grants go on the siblings along the
//! way instead: every entry of `/` but `home`, every entry of `/home` but `me`, every entry
//! of `/home/me` but `.ssh`. The directories on the way (`/`, `/home`, `/home/me`) get no
//! grant of their own, so they cannot be listed, while everything in them can be opened.
//!
//! Symlinks among the siblings get no grant (a rule opened through a symlink lands on its
//! target, which may be the place denied; the target has rules of its own wherever it is).
//! A directory on the way that cannot be listed gets nothing: the answer is only ever
//! narrower than asked.

use std::path::{Path, PathBuf};

/// The most grants one carve may produce. A directory on the way to a denied place with
/// more entries than this (a huge `/tmp`, say) would make building the ruleset slow; the
/// command is refused instead, with the reason.
pub(crate) const MAX_GRANTS: usize = 20_000;

/// Too many grants: the place whose listing went over [`MAX_GRANTS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooMany(pub(crate) PathBuf);

/// The places to grant so that all of `top` is covered except `excluded` and everything
/// beneath them. `excluded` paths must be absolute and real (as `policy::real` makes them).
pub(crate) fn all_but(top: &Path, excluded: &[PathBuf]) -> Result<Vec<PathBuf>, TooMany> {
    all_but_within(top, excluded, MAX_GRANTS)
}

/// [`all_but`] with the bound as a parameter (the tests use a small one).
fn all_but_within(top: &Path, excluded: &[PathBuf], max: usize) -> Result<Vec<PathBuf>, TooMany> {
    let mut grants = Vec::new();
    cover(top, excluded, max, &mut grants)?;
    Ok(grants)
}

fn cover(
    dir: &Path,
    excluded: &[PathBuf],
    max: usize,
    grants: &mut Vec<PathBuf>,
) -> Result<(), TooMany> {
    if excluded.iter().any(|e| dir.starts_with(e)) {
        return Ok(());
    }
    if !excluded.iter().any(|e| e.starts_with(dir)) {
        if grants.len() >= max {
            return Err(TooMany(dir.to_path_buf()));
        }
        grants.push(dir.to_path_buf());
        return Ok(());
    }
    // A denied place lies beneath `dir`: grant its entries one by one.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let is_symlink = entry.file_type().is_ok_and(|t| t.is_symlink());
        if !is_symlink {
            cover(&entry.path(), excluded, max, grants)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for d in ["home/me/.ssh", "home/me/src", "home/other", "etc"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        std::fs::write(dir.path().join("home/me/.bashrc"), "").expect("write");
        std::fs::write(dir.path().join("home/me/.ssh/id"), "").expect("write");
        dir
    }

    fn relative(top: &Path, grants: &[PathBuf]) -> Vec<String> {
        let mut names: Vec<String> = grants
            .iter()
            .map(|g| g.strip_prefix(top).unwrap_or(g).display().to_string())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn nothing_excluded_is_one_grant_of_the_top() {
        let dir = tree();
        let grants = all_but(dir.path(), &[]).expect("carve");
        assert_eq!(grants, vec![dir.path().to_path_buf()]);
    }

    #[test]
    fn siblings_along_the_way_are_granted_and_the_place_itself_is_not() {
        let dir = tree();
        let ssh = dir.path().join("home/me/.ssh");
        let grants = all_but(dir.path(), &[ssh]).expect("carve");
        assert_eq!(
            relative(dir.path(), &grants),
            ["etc", "home/me/.bashrc", "home/me/src", "home/other"]
        );
    }

    #[test]
    fn a_top_inside_an_excluded_place_gets_nothing() {
        let dir = tree();
        let grants = all_but(
            &dir.path().join("home/me/.ssh"),
            &[dir.path().join("home/me")],
        )
        .expect("carve");
        assert!(grants.is_empty(), "{grants:?}");
    }

    #[test]
    fn the_bound_on_grants_holds_exactly() {
        let dir = tree();
        let ssh = dir.path().join("home/me/.ssh");
        // Four grants are needed: at four it succeeds, at three it refuses.
        assert_eq!(
            all_but_within(dir.path(), std::slice::from_ref(&ssh), 4).map(|g| g.len()),
            Ok(4)
        );
        assert!(all_but_within(dir.path(), &[ssh], 3).is_err());
    }

    #[test]
    fn a_symlink_among_the_siblings_is_not_granted() {
        let dir = tree();
        let me = dir.path().join("home/me");
        std::os::unix::fs::symlink(me.join(".ssh"), me.join("keys")).expect("symlink");
        let grants = all_but(dir.path(), &[me.join(".ssh")]).expect("carve");
        assert!(!relative(dir.path(), &grants).contains(&"home/me/keys".to_owned()));
    }

    #[test]
    fn an_excluded_place_that_does_not_exist_only_narrows_its_parent() {
        let dir = tree();
        let missing = dir.path().join("home/me/.aws");
        let grants = all_but(dir.path(), &[missing]).expect("carve");
        assert_eq!(
            relative(dir.path(), &grants),
            [
                "etc",
                "home/me/.bashrc",
                "home/me/.ssh",
                "home/me/src",
                "home/other"
            ]
        );
    }
}
