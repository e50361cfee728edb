//! The person's "stop": one token per session that Ctrl-C (or a Ctrl-C typed at a
//! question) raises and everything that could act on the turn checks.
//!
//! The front end turns Ctrl-C into [`CancelToken::cancel`] in one place
//! (`frontend::ctrl_c`); library code never installs a signal handler. Tools receive the
//! token in their context: a running command is killed, a question is declined, a write
//! is not started (one in progress finishes), and the agent closes the turn instead of
//! asking the model again. Async code waits on [`CancelToken::cancelled`], blocking code
//! polls [`CancelToken::is_cancelled`].
//!
//! Presses are counted, and [`CancelToken::forget`] moves the baseline to the current
//! count: a press that a tool already acted on can never also end the next wait (at the
//! idle prompt, where Ctrl-C shows how to quit), without waiting to drain it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// A shared, resettable "the person asked to stop" flag with an async wait.
#[derive(Debug, Clone, Default)]
pub(crate) struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Every press since the token was made.
    presses: AtomicU64,
    /// The press count at the last [`CancelToken::forget`]: only later presses count.
    baseline: AtomicU64,
    /// Wakes async waiters.
    notify: Notify,
}

impl CancelToken {
    /// A token nothing has pressed yet.
    pub(crate) fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Records a press and wakes every waiter. Safe to call from any thread.
    pub(crate) fn cancel(&self) {
        self.inner.presses.fetch_add(1, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether a press came since the last [`CancelToken::forget`].
    pub(crate) fn is_cancelled(&self) -> bool {
        self.inner.presses.load(Ordering::SeqCst) > self.inner.baseline.load(Ordering::SeqCst)
    }

    /// Forgets every press so far: a new turn, or the idle prompt, starts uncancelled.
    pub(crate) fn forget(&self) {
        let now = self.inner.presses.load(Ordering::SeqCst);
        self.inner.baseline.store(now, Ordering::SeqCst);
    }

    /// Resolves once [`CancelToken::is_cancelled`] is true.
    pub(crate) async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a press between the two still wakes us.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_press_counts_until_forgotten() {
        let token = CancelToken::new();
        assert!(!token.is_cancelled());
        token.clone().cancel();
        assert!(token.is_cancelled());
        token.forget();
        assert!(!token.is_cancelled());
        token.cancel();
        assert!(token.is_cancelled());
    }

    #[test]
    fn an_async_wait_wakes_on_a_press_from_another_thread() {
        let token = CancelToken::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let presser = token.clone();
        let thread = std::thread::spawn(move || presser.cancel());
        runtime.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(10), token.cancelled())
                .await
                .unwrap_or_else(|_| panic!("the wait never woke"));
        });
        let _ = thread.join();
    }
}
