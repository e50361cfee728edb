//! What is running right now on the person's behalf (an approved command), so the front
//! end can show an elapsed-time line while it runs.
//!
//! The tool sets it only after approval, as the effect starts, so the line never draws
//! over an approval question; it clears it when the effect ends, even on an early return.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A shared "now running: LABEL since T" slot: the tool thread writes it, the front end
/// reads it on its timer.
#[derive(Debug, Clone, Default)]
pub(crate) struct Activity {
    current: Arc<Mutex<Option<(String, Instant)>>>,
}

/// Clears the activity when dropped: the effect is over however it ended.
#[derive(Debug)]
#[must_use = "the activity is cleared when this guard is dropped"]
pub(crate) struct Running<'a>(&'a Activity);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

impl Activity {
    /// Marks `label` as running from now until the guard is dropped.
    pub(crate) fn start(&self, label: &str) -> Running<'_> {
        *self.lock() = Some((label.to_owned(), Instant::now()));
        Running(self)
    }

    /// What is running and for how long, if anything.
    pub(crate) fn current(&self) -> Option<(String, Duration)> {
        self.lock()
            .as_ref()
            .map(|(label, since)| (label.clone(), since.elapsed()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(String, Instant)>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_activity_lasts_as_long_as_its_guard() {
        let activity = Activity::default();
        assert_eq!(activity.current(), None);
        {
            let _running = activity.start("go test ./...");
            let seen = activity.clone().current().map(|(label, _)| label);
            assert_eq!(seen.as_deref(), Some("go test ./..."));
        }
        assert_eq!(activity.current(), None);
    }
}
