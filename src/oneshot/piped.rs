//! stdin as context for `-p "REQUEST"`: `git diff | metron -p "review this diff"`.
//!
//! When stdin is not a terminal and the request is text (not `-`), what is piped in is
//! attached after the request as a fenced block, for the model to read. Reading it is
//! bounded twice, because stdin is whatever the caller left there:
//!
//! - in bytes: at most [`STDIN_CAP`] bytes are attached, and at most one byte more is
//!   read into memory (that byte is how metron knows the input was longer). Longer input
//!   is cut at the last whole line within the cap, and both the person (stderr) and the
//!   model (in the request) are told. A pipe's remainder is then read and thrown away in
//!   the background while the turn runs, so the writer is not killed by a broken pipe
//!   (`set -o pipefail` would fail the CI step); a file's is never read.
//! - in time: a CI runner may hand metron a pipe that stays open and never carries a
//!   byte. metron waits at most [`STDIN_WAIT`] for input to start, and as long again for
//!   each pause in it; then the request goes with what arrived (nothing, or the part before
//!   the pause), and stderr says so. `</dev/null` and an empty pipe end at once.
//!
//! Bytes that are not UTF-8 are shown to the model as U+FFFD (one per run of them), and
//! stderr counts them; nothing panics on them.

use std::fmt::Write as _;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::tools::count;

/// The most bytes of stdin attached to a request: 32 KiB, about 8,000 tokens, half of
/// the default `num_ctx`, so the system prompt, the tools and their results still fit.
pub(crate) const STDIN_CAP: usize = 32 * 1024;

/// How long metron waits for stdin to start, and for it to go on after a pause.
pub(crate) const STDIN_WAIT: Duration = Duration::from_secs(3);

/// How reading stdin ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It closed (end of file): everything was read.
    Closed,
    /// More than the cap arrived; the rest was not read into memory.
    OverCap,
    /// Nothing arrived within the wait, and it did not close.
    Silent,
    /// It paused for longer than the wait after some bytes, and did not close.
    Paused,
}

/// What was read from stdin: at most the cap plus one byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gathered {
    /// The bytes read.
    pub(crate) bytes: Vec<u8>,
    /// How reading ended.
    pub(crate) ending: Ending,
}

/// Reads `input` until it closes, `cap` + 1 bytes have arrived, or it stays silent for
/// `wait`. Memory is the bytes read plus one fixed buffer.
pub(crate) fn gather(input: impl AsFd, cap: usize, wait: Duration) -> std::io::Result<Gathered> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut last_byte = Instant::now();
    loop {
        if bytes.len() > cap {
            return Ok(Gathered {
                bytes,
                ending: Ending::OverCap,
            });
        }
        let left = wait.saturating_sub(last_byte.elapsed());
        if !readable(&input, left)? {
            if last_byte.elapsed() < wait {
                // Interrupted by a signal: wait out the rest.
                continue;
            }
            let ending = if bytes.is_empty() {
                Ending::Silent
            } else {
                Ending::Paused
            };
            return Ok(Gathered { bytes, ending });
        }
        let want = chunk.len().min(cap + 1 - bytes.len());
        match rustix::io::read(&input, &mut chunk[..want]) {
            Ok(0) => {
                return Ok(Gathered {
                    bytes,
                    ending: Ending::Closed,
                });
            }
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                last_byte = Instant::now();
            }
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Waits up to `wait` for `input` to have bytes or to be closed; `false` when the time
/// ran out (or a signal came first).
fn readable(input: &impl AsFd, wait: Duration) -> std::io::Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    // The wait is seconds, so the conversion cannot fail; not waiting is the safe side.
    let timeout = Timespec::try_from(wait).unwrap_or_default();
    let mut fds = [PollFd::new(input, PollFlags::IN)];
    match poll(&mut fds, Some(&timeout)) {
        Ok(ready) => Ok(ready > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Reads and throws away the rest of a pipe on a thread of its own, for as long as the
/// process lives, so its writer ends normally instead of on a broken pipe. A regular file
/// is left alone (nobody is writing it). Memory: one fixed buffer.
pub(crate) fn discard_rest_of_pipe() {
    let stdin = std::io::stdin();
    let is_pipe = rustix::fs::fstat(&stdin).is_ok_and(|stat| {
        let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
        matches!(
            kind,
            rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket
        )
    });
    if !is_pipe {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("stdin-discard".to_owned())
        .spawn(|| {
            let stdin = std::io::stdin();
            let mut chunk = [0u8; 8192];
            loop {
                match rustix::io::read(&stdin, &mut chunk) {
                    Ok(0) => break,
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(_) => break,
                }
            }
        });
    // Without the thread the writer may see a broken pipe when metron exits; that is all.
    drop(spawned);
}

/// The request with `gathered` attached, and the notes for the person (stderr), one per
/// line. Nothing is attached when nothing arrived.
pub(crate) fn attach(request: &str, gathered: &Gathered, cap: usize) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let wait = STDIN_WAIT.as_secs();
    if gathered.bytes.is_empty() {
        if gathered.ending == Ending::Silent {
            notes.push(format!(
                "nothing arrived on stdin within {wait} s, so the request goes without it; when there is nothing to pipe in, run metron with </dev/null, and for a slow command, save its output first (cmd > out.txt; metron -p \"...\" < out.txt)"
            ));
        }
        return (request.to_owned(), notes);
    }
    let kept = kept_bytes(&gathered.bytes, cap);
    let (text, not_utf8) = shown_text(kept);
    let mut header = format!("The input piped to metron (stdin, {} bytes", kept.len());
    if not_utf8 > 0 {
        let bytes = count(not_utf8, "byte", "bytes");
        let _ = write!(
            header,
            "; not UTF-8: {bytes}, each run of them shown as \u{FFFD}"
        );
        notes.push(format!(
            "stdin holds bytes that are not UTF-8 ({bytes}); the model sees each run of them as \u{FFFD} (U+FFFD); to send binary data, encode it first (base64, xxd)"
        ));
    }
    match gathered.ending {
        Ending::Closed | Ending::Silent => header.push_str("):"),
        Ending::OverCap => {
            let _ = write!(
                header,
                "): it was longer than {cap} bytes, so it is cut after its last whole line within them, and the rest was not read:"
            );
            notes.push(format!(
                "stdin is longer than {cap} bytes: the model gets its first {} bytes (up to the last whole line), not the rest; to send another part, filter the input first (git diff -- PATH | metron -p \"...\")",
                kept.len()
            ));
        }
        Ending::Paused => {
            let _ = write!(
                header,
                "): it paused for {wait} s without closing, so this is what arrived before the pause, and more may have followed:"
            );
            notes.push(format!(
                "stdin paused for {wait} s without closing, so the model gets the {} bytes that arrived before it, not what came later; for a slow command, save its output first (cmd > out.txt; metron -p \"...\" < out.txt)",
                kept.len()
            ));
        }
    }
    let fence = fence_for(&text);
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    let message = format!("{request}\n\n{header}\n{fence}\n{text}{newline}{fence}");
    (message, notes)
}

/// The bytes attached: all of them within the cap; past it, the first `cap` bytes cut
/// after their last newline (or, for one long line, before a character the cut would
/// split).
fn kept_bytes(bytes: &[u8], cap: usize) -> &[u8] {
    if bytes.len() <= cap {
        return bytes;
    }
    let head = &bytes[..cap];
    if let Some(newline) = head.iter().rposition(|&b| b == b'\n') {
        return &head[..=newline];
    }
    // Back off over UTF-8 continuation bytes (at most three) to a character's start.
    let mut end = cap;
    while end > cap.saturating_sub(3) && end > 0 && bytes[end] & 0b1100_0000 == 0b1000_0000 {
        end -= 1;
    }
    &bytes[..end]
}

/// `bytes` as text, each run of bytes that are not UTF-8 shown as U+FFFD, with the count
/// of such bytes.
fn shown_text(bytes: &[u8]) -> (String, usize) {
    let mut text = String::with_capacity(bytes.len());
    let mut not_utf8 = 0;
    // Whether the text ends in a run's U+FFFD, which the next invalid chunk joins.
    let mut in_run = false;
    for chunk in bytes.utf8_chunks() {
        if !chunk.valid().is_empty() {
            text.push_str(chunk.valid());
            in_run = false;
        }
        if !chunk.invalid().is_empty() {
            not_utf8 += chunk.invalid().len();
            if !in_run {
                text.push('\u{FFFD}');
            }
            in_run = true;
        }
    }
    (text, not_utf8)
}

/// A code fence longer than any run of backticks in `text`, so the input (a diff of a
/// Markdown file) cannot close the block early.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(bytes: &[u8]) -> Gathered {
        Gathered {
            bytes: bytes.to_vec(),
            ending: Ending::Closed,
        }
    }

    #[test]
    fn piped_text_follows_the_request_in_a_fence() {
        let (message, notes) = attach("review this", &closed(b"+a\n-b\n"), 100);
        assert_eq!(
            message,
            "review this\n\nThe input piped to metron (stdin, 6 bytes):\n```\n+a\n-b\n```"
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn nothing_piped_leaves_the_request_alone() {
        assert_eq!(attach("hi", &closed(b""), 100), ("hi".to_owned(), vec![]));
        let silent = Gathered {
            bytes: Vec::new(),
            ending: Ending::Silent,
        };
        let (message, notes) = attach("hi", &silent, 100);
        assert_eq!(message, "hi");
        assert!(notes[0].contains("</dev/null"), "{notes:?}");
    }

    #[test]
    fn a_fence_inside_the_input_gets_a_longer_fence() {
        let (message, _) = attach("r", &closed(b"```rust\nx\n````\n"), 100);
        assert!(
            message.ends_with("`````\n```rust\nx\n````\n`````"),
            "{message}"
        );
    }

    #[test]
    fn input_at_the_cap_is_whole_and_one_byte_more_is_cut_at_a_line() {
        let at_cap = closed(b"one\ntwo\n");
        let (message, notes) = attach("r", &at_cap, 8);
        assert!(message.contains("one\ntwo\n```"), "{message}");
        assert!(notes.is_empty());
        let over = Gathered {
            bytes: b"one\ntwo\nt".to_vec(),
            ending: Ending::OverCap,
        };
        let (message, notes) = attach("r", &over, 8);
        assert!(message.contains("(stdin, 8 bytes): it was longer than 8 bytes"));
        assert!(message.ends_with("one\ntwo\n```"), "{message}");
        assert!(
            notes[0].starts_with("stdin is longer than 8 bytes"),
            "{notes:?}"
        );
        let cut_line = Gathered {
            bytes: b"one\ntwo three".to_vec(),
            ending: Ending::OverCap,
        };
        assert!(attach("r", &cut_line, 10).0.ends_with("```\none\n```"));
    }

    #[test]
    fn one_long_line_is_cut_before_a_split_character() {
        // "é" is two bytes; a cap of 2 would split the second one.
        assert_eq!(kept_bytes("aéé".as_bytes(), 4), "aé".as_bytes());
        assert_eq!(kept_bytes("aéé".as_bytes(), 3), "aé".as_bytes());
        assert_eq!(kept_bytes("aéé".as_bytes(), 2), b"a");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_and_counted() {
        let (message, notes) = attach("r", &closed(b"ok \xff\xfe end \xc3\n"), 100);
        assert!(message.contains("ok \u{FFFD} end \u{FFFD}\n"), "{message}");
        assert!(message.contains(
            "(stdin, 12 bytes; not UTF-8: 3 bytes, each run of them shown as \u{FFFD}):"
        ));
        assert!(notes[0].starts_with("stdin holds bytes that are not UTF-8 (3 bytes)"));
    }

    #[test]
    fn a_pause_keeps_what_arrived_and_says_so() {
        let paused = Gathered {
            bytes: b"partial".to_vec(),
            ending: Ending::Paused,
        };
        let (message, notes) = attach("r", &paused, 100);
        assert!(
            message.ends_with("more may have followed:\n```\npartial\n```"),
            "{message}"
        );
        assert!(notes[0].starts_with("stdin paused for 3 s"), "{notes:?}");
    }

    #[test]
    fn gathering_stops_one_byte_past_the_cap() {
        let (reader, mut writer) = std::io::pipe().expect("pipe");
        std::io::Write::write_all(&mut writer, &[b'x'; 100]).expect("write");
        let gathered = gather(&reader, 10, Duration::from_secs(5)).expect("read");
        assert_eq!(gathered.bytes.len(), 11);
        assert_eq!(gathered.ending, Ending::OverCap);
    }

    #[test]
    fn gathering_ends_at_once_when_the_pipe_closes() {
        let (reader, mut writer) = std::io::pipe().expect("pipe");
        std::io::Write::write_all(&mut writer, b"all").expect("write");
        drop(writer);
        let started = Instant::now();
        let gathered = gather(&reader, 10, Duration::from_secs(30)).expect("read");
        assert_eq!(gathered, closed(b"all"));
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn gathering_gives_up_on_a_silent_pipe_after_the_wait() {
        let (reader, writer) = std::io::pipe().expect("pipe");
        let wait = Duration::from_millis(200);
        let started = Instant::now();
        let gathered = gather(&reader, 10, wait).expect("read");
        assert!(started.elapsed() >= wait);
        assert_eq!(gathered.ending, Ending::Silent);
        drop(writer);
    }
}
