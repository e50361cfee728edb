//! `--set KEY=VALUE`: one setting for one run, typed on the command line.
//!
//! Benchmarks and experiments vary a budget from run to run; writing a config file for
//! each value (and pointing `$METRON_CONFIG` at it) is what this replaces. A `--set` acts
//! with the authority of the person typing it, so it may give exactly the keys their own
//! config file may set (every key of the settings table, privileged ones included), and
//! nothing else: an unknown key is refused with the nearest one, as in the user's file.
//!
//! Each argument is checked here, before any config file is read, so that a typo or a
//! value of the wrong type is a usage error (exit 2) naming the key in every mode (the
//! session, `-p`, `--doctor`, `metron tool`), and applying it later cannot fail on its
//! type. How many may be given is bounded by the operating system's argument limit only:
//! each is one small value, applied once.

use serde_json::Value;

use super::settings::{Config, KEYS, Key};
use super::{ConfigError, Source, check_key, closest_key, set};

/// The flag, as `/config`, `--doctor` and `session_start` name the layer of its keys.
pub(crate) const SET_FLAG: &str = "--set";

/// One `--set`: a key and its value as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Override {
    /// The key, as the config file spells it.
    pub(crate) key: Key,
    /// The value: the text after `=` read as JSON when it is JSON, else that text as a
    /// string, so `model=qwen3:8b` needs no quotes and `num_ctx=8192` is a number.
    pub(crate) value: Value,
}

/// Reads one `--set` argument, `KEY=VALUE`, and checks the value as the user's own file's
/// would be checked; the error is the whole message, ending with the next step.
pub(crate) fn parse(arg: &str) -> Result<Override, String> {
    // The argument itself is never quoted back: a value may hold a password
    // (`endpoint=http://me:secret@host`), and an error goes to the terminal and to logs.
    let Some((name, raw)) = arg.split_once('=') else {
        return Err(format!(
            "a `{SET_FLAG}` argument has no `=`; give it the form KEY=VALUE, such as `{SET_FLAG} max_turns=20`"
        ));
    };
    let Some(key) = Key::from_name(name) else {
        let hint = match closest_key(name) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!("`metron --example-config` prints all {} keys", KEYS.len()),
        };
        return Err(format!(
            "unknown key {} in `{SET_FLAG} KEY=VALUE`; {hint}",
            shown_name(name)
        ));
    };
    let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
    check(key, &value).map_err(|message| {
        format!(
            "`{key}` in `{SET_FLAG} {key}=VALUE` {message}; give another value, such as `{SET_FLAG} {key}={}` (its default)",
            as_typed(&Config::default().value(key))
        )
    })?;
    Ok(Override { key, value })
}

/// The longest unknown key name quoted back in an error.
const NAME_SHOWN_MAX: usize = 64;

/// An unknown key as an error may show it: quoted when it looks like a setting's name (a
/// short run of letters, digits, `_`, `-` and `.`), otherwise not at all, since text
/// before a `=` that is no name may be a mistyped secret (`http://me:secret@host=`).
fn shown_name(name: &str) -> String {
    let name_like = !name.is_empty()
        && name.len() <= NAME_SHOWN_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if name_like {
        format!("`{name}`")
    } else {
        "(not shown: it is not a setting's name)".to_owned()
    }
}

/// Checks `value` for `key` on a scratch copy of the defaults: its type, then the ranges
/// the type cannot express. The message is the end of a sentence ("must be ...").
fn check(key: Key, value: &Value) -> Result<(), String> {
    let source = Source::Flag(SET_FLAG);
    let mut trial = Config::default();
    let checked =
        set(&mut trial, key, value, &source).and_then(|()| check_key(&trial, key, &source));
    match checked {
        Ok(()) => Ok(()),
        // A string key given something that reads as JSON (`model=123`): say how to quote.
        Err(ConfigError::Invalid { message, .. })
            if Config::default().value(key).is_string() && !value.is_string() =>
        {
            // The value itself is never quoted back: it may be an endpoint with a password.
            Err(format!(
                "{message} (the value reads as JSON, not as text; to mean the text, put it in double quotes inside single ones: '{key}=\"...\"')"
            ))
        }
        Err(ConfigError::Invalid { message, .. }) => Err(message),
        Err(other) => Err(other.to_string()),
    }
}

/// A value as it would be typed after `KEY=`: a string bare (unless it would read as
/// JSON), anything else as JSON.
fn as_typed(value: &Value) -> String {
    match value {
        Value::String(text) if serde_json::from_str::<Value>(text).is_err() => text.clone(),
        other => other.to_string(),
    }
}

/// Lays the overrides onto `loaded` in order (a key given twice keeps the last value), each
/// recorded as coming from `--set`.
pub(crate) fn apply(loaded: &mut super::Loaded, overrides: &[Override]) -> Result<(), ConfigError> {
    let source = Source::Flag(SET_FLAG);
    for item in overrides {
        set(&mut loaded.config, item.key, &item.value, &source)?;
        loaded.sources.insert(item.key.name(), source.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_error_repeats_a_value_that_may_hold_a_password() {
        for arg in [
            "endpoint=http://me:hunter2@gpu:99999",
            "endpoint=http://me:hunter2@[::1",
            "endpont=http://me:hunter2@h",
            "http://me:hunter2@h",
            "http://me:hunter2@h=1",
            "endpoint=http://gpu:11434/?token=hunter2",
        ] {
            let message = parse(arg).expect_err(arg);
            assert!(!message.contains("hunter2"), "{arg}: {message}");
        }
    }

    #[test]
    fn an_unknown_key_is_named_only_when_it_looks_like_one() {
        assert_eq!(shown_name("endpont"), "`endpont`");
        assert_eq!(
            shown_name(&"k".repeat(NAME_SHOWN_MAX)),
            format!("`{}`", "k".repeat(64))
        );
        assert!(!shown_name(&"k".repeat(NAME_SHOWN_MAX + 1)).contains('k'));
        assert!(!shown_name("http://me:pw@h").contains("pw"));
        assert!(!shown_name("").contains('`'));
    }

    #[test]
    fn values_are_json_when_they_parse_and_text_otherwise() {
        let given = |arg: &str| parse(arg).map(|o| (o.key, o.value));
        assert_eq!(
            given("model=qwen3:8b"),
            Ok((Key::model, Value::from("qwen3:8b")))
        );
        assert_eq!(given("num_ctx=8192"), Ok((Key::num_ctx, Value::from(8192))));
        assert_eq!(given("stream=false"), Ok((Key::stream, Value::from(false))));
        assert_eq!(
            given(r#"allowed_commands=["go test"]"#),
            Ok((Key::allowed_commands, Value::from(vec!["go test"])))
        );
        // Only the first `=` separates: the value may hold more.
        assert_eq!(
            given(r#"model="a=b""#),
            Ok((Key::model, Value::from("a=b")))
        );
    }

    #[test]
    fn a_bad_argument_is_named_with_the_next_step() {
        let err = parse("max_turn=3").unwrap_err();
        assert!(err.contains("unknown key `max_turn`"), "{err}");
        assert!(err.contains("did you mean `max_turns`?"), "{err}");
        let err = parse("max_turns").unwrap_err();
        assert!(err.contains("give it the form KEY=VALUE"), "{err}");
        let err = parse("max_turns=ten").unwrap_err();
        assert!(err.contains("must be a positive integer"), "{err}");
        assert!(err.ends_with("`--set max_turns=10` (its default)"), "{err}");
        let err = parse("max_turns=0").unwrap_err();
        assert!(err.contains("must be positive, got 0"), "{err}");
        let err = parse("model=123").unwrap_err();
        assert!(
            err.contains(r#"'model="..."'"#) && !err.contains("123"),
            "{err}"
        );
        let err = parse("endpoint=ftp://x").unwrap_err();
        assert!(err.contains("`endpoint`"), "{err}");
    }

    #[test]
    fn every_key_of_the_users_file_may_be_given() {
        for &key in Key::ALL {
            let default = Config::default().value(key);
            let arg = format!("{key}={}", as_typed(&default));
            assert_eq!(
                parse(&arg).map(|o| o.key),
                Ok(key),
                "{arg} is the default and must be accepted"
            );
        }
    }
}
