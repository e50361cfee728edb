//! How long parsing may go on, and whether someone asked it to stop.
//!
//! A pathological file (tens of thousands of nested `mod a {`) once kept a lookup busy
//! for minutes and Ctrl-C could not end it: nothing between one file and the next asked
//! whether to go on. A [`Budget`] is asked at every such point, and inside a file too:
//! tree-sitter's parse and query cursor call back into it as they progress, and the
//! definition walk asks it every few hundred definitions. A halted file is not kept
//! (its next visit parses it again), and the lookup says what it did not get to.

use std::time::{Duration, Instant};

/// The longest one lookup of the model's parses before it answers with what it has and
/// says what it did not get to. Far above a cold lookup on the largest corpus measured (seconds); a file
/// that needs more is pathological, and the model is better told than kept waiting.
pub(crate) const LOOKUP_TIME: Duration = Duration::from_secs(20);

/// How often (in calls) the progress callbacks read the clock: tree-sitter calls the
/// parser's every 100 parse operations and the query cursor's after a bounded amount of
/// matching work, and a clock read costs more than the rest of a call.
const CLOCK_EVERY: u32 = 64;

/// Why parsing stopped before the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// The time budget ran out.
    OutOfTime,
    /// The person pressed Ctrl-C (or the warm-up was asked to give way).
    Stopped,
}

/// A deadline and a stop flag, checked wherever parsing can take long.
#[derive(Clone, Copy)]
pub(crate) struct Budget<'a> {
    deadline: Option<Instant>,
    stop: Option<&'a (dyn Fn() -> bool + Sync)>,
}

impl std::fmt::Debug for Budget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl<'a> Budget<'a> {
    /// No deadline and nothing to stop it: lookups for benchmarks and tests, which parse
    /// whole trees on purpose.
    pub(crate) fn unlimited() -> Budget<'static> {
        Budget {
            deadline: None,
            stop: None,
        }
    }

    /// Until `deadline`, or until `stop` says so.
    pub(crate) fn until(deadline: Instant, stop: &'a (dyn Fn() -> bool + Sync)) -> Budget<'a> {
        Budget {
            deadline: Some(deadline),
            stop: Some(stop),
        }
    }

    /// Whether to stop now, and why. A stop request wins over the clock: the person's
    /// Ctrl-C is what the answer should name.
    pub(crate) fn check(&self) -> Option<Halt> {
        if self.stop.is_some_and(|stop| stop()) {
            return Some(Halt::Stopped);
        }
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return Some(Halt::OutOfTime);
        }
        None
    }

    /// A check for a progress callback: reads the clock only every [`CLOCK_EVERY`]th call.
    pub(crate) fn ticker(&self) -> impl FnMut() -> bool + '_ {
        let mut calls = 0u32;
        move || {
            calls = calls.wrapping_add(1);
            calls.is_multiple_of(CLOCK_EVERY) && self.check().is_some()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_request_wins_over_the_clock() {
        let stop = || true;
        let past = Instant::now();
        assert_eq!(Budget::until(past, &stop).check(), Some(Halt::Stopped));
        let go_on = || false;
        assert_eq!(Budget::until(past, &go_on).check(), Some(Halt::OutOfTime));
        let later = Instant::now() + Duration::from_secs(3600);
        assert_eq!(Budget::until(later, &go_on).check(), None);
        assert_eq!(Budget::unlimited().check(), None);
    }

    #[test]
    fn the_ticker_reads_the_clock_only_now_and_then() {
        let stop = || true;
        let budget = Budget::until(Instant::now(), &stop);
        let mut tick = budget.ticker();
        let halts = (0..CLOCK_EVERY).filter(|_| tick()).count();
        assert_eq!(halts, 1);
    }
}
