//! `/model NAME --save`: writing the chosen model to the user's own config file.
//!
//! This is the only place metron writes a config file, and only when the person asks
//! with `--save`: a choice made in a session then outlives it, without metron ever
//! changing a setting behind the person's back. A project's `.metron.json` is never
//! written (it is the repository's), and nothing but `model` changes in the user's file:
//! every other key is kept, in its order, with its value exactly as written.
//!
//! The write is atomic (a temporary file beside it, flushed, then renamed over it), so a
//! crash leaves the old file or the new one, never half of one; the file keeps its mode
//! (a new one is created readable by its owner only, since an `endpoint` may carry a
//! password). A file that is not valid JSON is refused, named, and left as it is: metron
//! will not guess what the person meant to write.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{ConfigEnv, MAX_CONFIG_BYTES, user_dir};

/// The mode a config file is created with: the owner's alone.
const NEW_FILE_MODE: u32 = 0o600;

/// The mode the user's metron directory is created with.
const NEW_DIR_MODE: u32 = 0o700;

/// The key this module writes.
const MODEL_KEY: &str = "model";

/// Where the model was saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Saved {
    /// The file written (the target of a symlink, when the user's file is one).
    pub(crate) path: PathBuf,
    /// Whether the file was created, rather than an existing one rewritten.
    pub(crate) created: bool,
}

/// Why the model was not saved; every message ends with the next step.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SaveError {
    /// Neither `$METRON_CONFIG`, `$METRON_CONFIG_DIR` nor `$HOME` says where the file is.
    #[error(
        "not saved: there is no config file to save to ($METRON_CONFIG, $METRON_CONFIG_DIR and $HOME are unset); set HOME, or pass --model NAME each time"
    )]
    NoPlace,
    /// The existing file could not be read.
    #[error("not saved: cannot read your config file {}: {source}; fix it, then save again", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The existing file is not a JSON object, so it is left alone.
    #[error(
        "not saved: your config file {} is not valid JSON ({message}), so metron leaves it as it is; fix it (or move it aside), then save again",
        path.display()
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with line and column.
        message: String,
    },
    /// The new file could not be written.
    #[error(
        "not saved: cannot write your config file {}: {source}; check the directory's permissions, or set `model` in the file yourself",
        path.display()
    )]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The user's own config file, whether or not it exists yet: the one `$METRON_CONFIG`
/// names, else `config.json` in the user's metron directory; `None` when no variable
/// says where that is.
fn user_config_path(env: &ConfigEnv) -> Option<PathBuf> {
    match &env.metron_config {
        Some(path) => Some(path.clone()),
        None => Some(user_dir(env)?.join("config.json")),
    }
}

/// Sets `model` to `model` in the user's own config file (see the module docs), creating
/// the file and its directory when needed.
pub(crate) fn save_model(env: &ConfigEnv, model: &str) -> Result<Saved, SaveError> {
    let named = user_config_path(env).ok_or(SaveError::NoPlace)?;
    // A dotfile manager's symlink stays a symlink: its target is what is rewritten.
    let path = match std::fs::symlink_metadata(&named) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(&named).map_err(|source| SaveError::Read {
                path: named.clone(),
                source,
            })?
        }
        _ => named,
    };
    let existing = read_existing(&path)?;
    let created = existing.is_none();
    let (text, mode) = match existing {
        Some((text, mode)) => (with_model(&text, model, &path)?, mode),
        None => (with_model("{}", model, &path)?, NEW_FILE_MODE),
    };
    write_atomic(&path, text.as_bytes(), mode).map_err(|source| SaveError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(Saved { path, created })
}

/// The file's text and permission bits, or `None` when there is no file yet.
fn read_existing(path: &Path) -> Result<Option<(String, u32)>, SaveError> {
    use std::os::unix::fs::PermissionsExt;
    let read_error = |source| SaveError::Read {
        path: path.to_owned(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read_error(e)),
    };
    let mode = file.metadata().map_err(read_error)?.permissions().mode() & 0o7777;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(read_error(std::io::Error::other(format!(
            "larger than {MAX_CONFIG_BYTES} bytes"
        ))));
    }
    let text = String::from_utf8(bytes).map_err(|_| SaveError::Parse {
        path: path.to_owned(),
        message: "not UTF-8 text".to_owned(),
    })?;
    Ok(Some((text, mode)))
}

/// The top-level entries of a JSON object in the order written, each value exactly as
/// written, so a rewrite changes nothing but the one key.
struct Entries(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object such as {\"model\": \"...\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Object)
    }
}

/// `text` (a config file's) with `model` set to `model`: every `model` entry replaced, or
/// one appended; every other entry kept as written. Pure, so it is tested on strings.
fn with_model(text: &str, model: &str, path: &Path) -> Result<String, SaveError> {
    let Entries(mut entries) = serde_json::from_str(text).map_err(|e| SaveError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let value = RawValue::from_string(serde_json::Value::from(model).to_string()).map_err(|e| {
        SaveError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        }
    })?;
    let mut found = false;
    for (key, old) in &mut entries {
        if key == MODEL_KEY {
            *old = value.clone();
            found = true;
        }
    }
    if !found {
        entries.push((MODEL_KEY.to_owned(), value));
    }
    let lines: Vec<String> = entries
        .iter()
        .map(|(key, value)| {
            format!(
                "  {}: {}",
                serde_json::Value::from(key.as_str()),
                value.get()
            )
        })
        .collect();
    Ok(format!("{{\n{}\n}}\n", lines.join(",\n")))
}

/// Replaces (or creates) `path` with `bytes` and exactly the permission bits `mode`: a
/// temporary file in the same directory, flushed to disk, then renamed over it. The
/// directory is created (owner only) when missing.
fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(NEW_DIR_MODE)
        .create(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config.json".to_owned());
    let temp = dir.join(format!(".{name}.metron-save-{}", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)?;
        file.write_all(bytes)?;
        // The umask may have taken bits the old file had.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written?;
    // The rename itself is durable once the directory is flushed; best effort.
    if let Ok(dir) = std::fs::File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str, model: &str) -> Result<String, SaveError> {
        with_model(text, model, Path::new("/home/me/.metron/config.json"))
    }

    #[test]
    fn the_model_is_replaced_and_every_other_key_kept_in_order() {
        let text = "{\"num_ctx\": 8192, \"model\": \"old\",\n \"allowed_commands\": [\"go test\"]}";
        let saved = set(text, "qwen3:8b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            saved,
            "{\n  \"num_ctx\": 8192,\n  \"model\": \"qwen3:8b\",\n  \"allowed_commands\": [\"go test\"]\n}\n"
        );
    }

    #[test]
    fn a_missing_model_is_appended_and_an_empty_object_gets_one() {
        let saved = set(r#"{"z_last": true}"#, "m").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(saved, "{\n  \"z_last\": true,\n  \"model\": \"m\"\n}\n");
        let fresh = set("{}", "m").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fresh, "{\n  \"model\": \"m\"\n}\n");
    }

    #[test]
    fn a_name_is_written_as_a_json_string() {
        let saved = set("{}", "a\"b\\c").unwrap_or_else(|e| panic!("{e}"));
        let value: serde_json::Value = serde_json::from_str(&saved).expect("valid JSON");
        assert_eq!(value["model"], "a\"b\\c");
    }

    /// An environment whose user file is `path` (as `$METRON_CONFIG` names it).
    fn env_for(path: &Path) -> ConfigEnv {
        ConfigEnv {
            metron_config: Some(path.to_owned()),
            ..ConfigEnv::default()
        }
    }

    #[test]
    fn a_file_at_the_size_cap_is_saved_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.json");
        let body = r#"{"model": "old"}"#;
        let at_cap = format!(
            "{body}{}",
            " ".repeat(MAX_CONFIG_BYTES as usize - body.len())
        );
        std::fs::write(&path, &at_cap).expect("write");
        let saved = save_model(&env_for(&path), "new").unwrap_or_else(|e| panic!("{e}"));
        assert!(!saved.created);
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text, "{\n  \"model\": \"new\"\n}\n");

        std::fs::write(&path, format!("{at_cap} ")).expect("write");
        let err = save_model(&env_for(&path), "new").map(|_| ()).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("larger than {MAX_CONFIG_BYTES} bytes")),
            "{err}"
        );
    }

    #[test]
    fn a_symlinked_file_is_rewritten_where_it_points_and_stays_a_link() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("dotfiles-config.json");
        std::fs::write(&target, r#"{"num_ctx": 8192}"#).expect("write");
        let link = dir.path().join("config.json");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let saved = save_model(&env_for(&link), "m").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(saved.path, target.canonicalize().expect("real path"));
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("lstat")
                .file_type()
                .is_symlink()
        );
        let text = std::fs::read_to_string(&target).expect("read");
        assert_eq!(text, "{\n  \"num_ctx\": 8192,\n  \"model\": \"m\"\n}\n");
    }

    #[test]
    fn no_home_and_no_metron_config_is_no_place_to_save() {
        let err = save_model(&ConfigEnv::default(), "m")
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(err, SaveError::NoPlace), "{err}");
        assert!(
            err.to_string().ends_with("pass --model NAME each time"),
            "{err}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_json_object_is_refused_by_name() {
        for text in ["{", "[1]", "", "{\"model\": }"] {
            let err = set(text, "m").map(|_| ()).unwrap_err().to_string();
            assert!(
                err.contains("/home/me/.metron/config.json is not valid JSON")
                    && err.ends_with("then save again"),
                "{text:?}: {err}"
            );
        }
    }
}
