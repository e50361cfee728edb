//! A run's peak memory, measured from outside: `VmHWM` sampled from /proc until the
//! process exits.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{PATIENCE, Run};

/// A finished run with its peak resident memory (when it could be measured) and duration.
pub struct Peak {
    pub run: Run,
    pub rss_kib: Option<u64>,
    pub took: Duration,
}

/// The peak resident set of process `pid` so far (`VmHWM`), or `None` when it cannot be
/// read (no /proc, or the process is gone).
fn high_water_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `command` (stdin empty) to its end, sampling its peak resident set (`VmHWM`, which
/// only grows) every millisecond or so until it exits; kills it and fails if it outlives
/// [`PATIENCE`]. The last sample is a lower bound of the true peak: a run that grows to
/// gigabytes over seconds, as an unbounded read does, cannot slip between samples, while a
/// bounded one stays bounded by construction. (`wait4`'s `ru_maxrss` cannot serve: Linux
/// carries the spawning test process's own peak across `exec` into the child's, so it
/// measures the test binary, whose memory depends on the other tests running beside it.)
pub fn run_with_peak(command: Command) -> Peak {
    run_with_peak_within(command, PATIENCE)
}

/// [`run_with_peak`] for a run that may take up to `limit`.
pub fn run_with_peak_within(mut command: Command, limit: Duration) -> Peak {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn metron");
    let read_all = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = from.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().expect("stdout")));
    let stderr = read_all(Box::new(child.stderr.take().expect("stderr")));
    let deadline = started + limit;
    let mut rss_kib = None;
    let status = loop {
        // Sampled before asking whether it exited, so the last sample is as late as any.
        if let Some(now) = high_water_kib(child.id()) {
            rss_kib = Some(rss_kib.map_or(now, |seen: u64| seen.max(now)));
        }
        if let Some(status) = child.try_wait().expect("poll metron") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("metron did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let took = started.elapsed();
    let run = Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    };
    Peak { run, rss_kib, took }
}
