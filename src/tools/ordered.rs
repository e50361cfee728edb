//! An ordered parallel map with early stop: the one way the read tools spread a walk over
//! several threads.
//!
//! search_text and the symbol index both visit files in walk order, a batch at a time,
//! and both can stop early: their output is sorted by path and capped, so once the
//! results of the first batches settle the answer, later batches cannot change it. Both
//! must answer exactly as a sequential visit would, use every core when the whole tree
//! has to be read, waste little work past the point where the answer settled, and never
//! hang when a worker fails. [`map`] does that once for both:
//!
//! - items are pulled from one iterator, in order, by whichever worker is free (under a
//!   lock of their own, so pulling never holds up a worker handing back its result); a
//!   source too slow to pull in line, such as the directory walk, is put on a thread of
//!   its own with [`read_ahead`], so the workers find its items ready;
//! - results are merged back in item order, and a caller's test on the merged prefix
//!   says when the answer has settled; then nothing more is handed out, and results past
//!   the cut are dropped;
//! - an item is handed out only while it is less than a window past the merged prefix,
//!   so a worker stalled on an early item (descheduled on a busy machine) cannot let the
//!   others run through the whole tree before the answer settles;
//! - each worker has its own state (parsers, buffers, open directories), passed in by the
//!   caller so it can outlive one call;
//! - an error stops the run, and the caller gets the error a sequential visit would have
//!   met first (none when the answer settled before it);
//! - a worker that panics stops the others, and the panic reaches the caller instead of
//!   leaving them waiting for a result that will never come.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError, mpsc};
use std::thread::Scope;

/// How many threads the machine offers (one per core). Asked once, since on Linux the
/// answer comes from reading cgroup files; callers cap it at what they can use.
pub(crate) fn available_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Pulls `items` on a thread of its own in `scope`, at most `ahead` items (at least one)
/// before they are asked for, and yields them in order. For a source that costs real
/// work per item (the directory walk): [`map`] pulls under a lock, so pulled in line,
/// such a source would keep every other worker waiting for its next item, where read
/// ahead it runs beside them. The thread stops at the end of `items`, or at its next item
/// once the returned iterator is dropped (when [`map`] returns), so it runs at most
/// `ahead` + 1 items past the last one taken. A panic in `items` ends the returned
/// iterator early and is resumed when `scope` ends.
pub(crate) fn read_ahead<'scope, I>(
    scope: &'scope Scope<'scope, '_>,
    items: I,
    ahead: usize,
) -> impl Iterator<Item = I::Item> + Send + 'scope
where
    I: Iterator + Send + 'scope,
    I::Item: Send + 'scope,
{
    let (sender, receiver) = mpsc::sync_channel(ahead.max(1));
    scope.spawn(move || {
        for item in items {
            if sender.send(item).is_err() {
                // Nobody is taking items any more.
                break;
            }
        }
    });
    receiver.into_iter()
}

/// Whether the run has stopped (the answer settled, an item failed, or a worker
/// panicked). Passed to the work so a long item can give up early: its result is past
/// the cut and will be dropped anyway.
pub(crate) struct Stop(AtomicBool);

impl Stop {
    /// True once nothing this item could produce can matter any more.
    pub(crate) fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The items not yet handed out, behind their own lock.
struct Source<I> {
    items: I,
    /// How many items have been taken: the index of the next one.
    taken: usize,
}

/// What the workers share about results, behind the other lock.
struct Progress<R, E, F> {
    /// How many items have been claimed (each claim is one item taken, or one attempt
    /// that found the source empty). Bounded by `merged + window`.
    claimed: usize,
    /// Results of finished items whose predecessors are not all finished, by index.
    pending: BTreeMap<usize, R>,
    /// Results of the merged prefix, in item order.
    merged: Vec<R>,
    /// Told each result as it joins the prefix; true once the answer is settled.
    settles: F,
    /// The prefix settled the answer: nothing after it matters.
    settled: bool,
    /// The source ran out.
    exhausted: bool,
    /// The earliest failure so far, with its item's index.
    error: Option<(usize, E)>,
}

/// Runs its closure when dropped during a panic.
struct OnUnwind<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnUnwind<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}

/// Maps `work` over `items` on one thread per element of `workers` (the calling thread
/// is one of them; each thread gets one state) and returns the results of the merged
/// prefix, in item order: every item's when `settles` never says so, or the results up
/// to and including the one after which `settles` returned true. That is exactly what a
/// sequential loop stopping at the same test would return.
///
/// At most `window` items past the merged prefix are handed out at a time (at least one
/// always is). On an error, no new item is handed out, and the error of the earliest
/// failed item is returned unless the answer settled before it. A panic in `work` or
/// `settles` stops the run and is resumed on the calling thread once every worker has
/// returned. With no worker state, nothing is visited.
pub(crate) fn map<I, S, R, E, W, F>(
    items: I,
    workers: &mut [S],
    window: usize,
    work: W,
    settles: F,
) -> Result<Vec<R>, E>
where
    I: Iterator + Send,
    I::Item: Send,
    S: Send,
    R: Send,
    E: Send,
    W: Fn(&mut S, I::Item, &Stop) -> Result<R, E> + Sync,
    F: FnMut(&R) -> bool + Send,
{
    let window = window.max(1);
    let source = Mutex::new(Source { items, taken: 0 });
    let progress = Mutex::new(Progress {
        claimed: 0,
        pending: BTreeMap::new(),
        merged: Vec::new(),
        settles,
        settled: false,
        exhausted: false,
        error: None,
    });
    // Signalled whenever the merged prefix grows or the run stops, for workers waiting
    // at the edge of the window.
    let advanced = Condvar::new();
    let stop = Stop(AtomicBool::new(false));
    let lock = || progress.lock().unwrap_or_else(PoisonError::into_inner);

    let run = |state: &mut S| {
        // A worker that panics mid-item never finishes it; without this the others
        // would wait at the window's edge for ever instead of letting the panic surface.
        // The stop is raised under the lock, as everywhere, so a worker between its
        // check and its wait cannot miss the signal.
        let _unblock = OnUnwind(|| {
            let shared = lock();
            stop.raise();
            drop(shared);
            advanced.notify_all();
        });
        loop {
            {
                let mut shared = lock();
                while !stop.requested()
                    && !shared.exhausted
                    && shared.claimed >= shared.merged.len() + window
                {
                    shared = advanced
                        .wait(shared)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if stop.requested() || shared.exhausted {
                    return;
                }
                shared.claimed += 1;
            }
            // Claims come before takes, so an item's index is below the number of
            // claims made when it was taken: it is inside the window.
            let next = {
                let mut source = source.lock().unwrap_or_else(PoisonError::into_inner);
                let index = source.taken;
                source.items.next().map(|item| {
                    source.taken += 1;
                    (index, item)
                })
            };
            let Some((index, item)) = next else {
                lock().exhausted = true;
                advanced.notify_all();
                return;
            };
            let outcome = work(state, item, &stop);
            let mut shared = lock();
            let shared = &mut *shared;
            match outcome {
                // Past the cut (every item not yet merged is): it cannot matter.
                _ if shared.settled => {}
                Ok(result) => {
                    shared.pending.insert(index, result);
                    while let Some(result) = shared.pending.remove(&shared.merged.len()) {
                        let settled = (shared.settles)(&result);
                        shared.merged.push(result);
                        if settled {
                            shared.settled = true;
                            shared.pending.clear();
                            stop.raise();
                            break;
                        }
                    }
                }
                Err(error) => {
                    if shared
                        .error
                        .as_ref()
                        .is_none_or(|(first, _)| index < *first)
                    {
                        shared.error = Some((index, error));
                    }
                    stop.raise();
                }
            }
            advanced.notify_all();
        }
    };

    match workers {
        [] => {}
        [only] => run(only),
        [first, rest @ ..] => std::thread::scope(|scope| {
            for state in rest.iter_mut() {
                scope.spawn(|| run(state));
            }
            run(first);
        }),
    }

    let progress = progress
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    match progress.error {
        // The prefix stops short of a failed item, so an answer that settled did so
        // before the first failure, as a sequential visit would have.
        Some((_, error)) if !progress.settled => Err(error),
        _ => Ok(progress.merged),
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::{OnUnwind, Stop, map, read_ahead};

    /// Squares `0..n` on `threads` workers, with a delay that makes later items finish
    /// first, stopping once the merged squares sum past `cap`.
    fn squares(n: usize, threads: usize, window: usize, cap: usize) -> Vec<usize> {
        let mut workers = vec![0usize; threads];
        let mut sum = 0;
        let result: Result<Vec<usize>, ()> = map(
            0..n,
            &mut workers,
            window,
            |done: &mut usize, i: usize, _: &Stop| {
                *done += 1;
                std::thread::sleep(Duration::from_micros(((n - i) % 7) as u64 * 200));
                Ok(i * i)
            },
            |square| {
                sum += square;
                sum > cap
            },
        );
        result.expect("no item fails")
    }

    #[test]
    fn results_come_back_in_item_order() {
        for threads in [1, 2, 4] {
            for window in [1, 3, 100] {
                let expected: Vec<usize> = (0..50).map(|i| i * i).collect();
                assert_eq!(
                    squares(50, threads, window, usize::MAX),
                    expected,
                    "{threads} threads, window {window}"
                );
            }
        }
    }

    #[test]
    fn the_answer_settles_where_a_sequential_loop_would_stop() {
        // 0 + 1 + 4 + 9 + 16 + 25 = 55 > 50: the prefix ends at 25.
        for threads in [1, 2, 4] {
            assert_eq!(squares(1000, threads, 4, 50), [0, 1, 4, 9, 16, 25]);
        }
        assert_eq!(squares(0, 2, 4, 50), Vec::<usize>::new());
    }

    #[test]
    fn an_early_stop_skips_the_later_items() {
        let visited = AtomicUsize::new(0);
        let mut workers = vec![(); 3];
        let window = 4;
        let merged: Result<Vec<usize>, ()> = map(
            0..10_000,
            &mut workers,
            window,
            |_: &mut (), i: usize, _: &Stop| {
                visited.fetch_add(1, Ordering::SeqCst);
                Ok(i)
            },
            |&i| i == 10,
        );
        assert_eq!(merged, Ok((0..=10).collect::<Vec<_>>()));
        // Nothing is handed out past the window beyond the item that settled it.
        let visited = visited.load(Ordering::SeqCst);
        assert!(visited <= 11 + window, "visited {visited} items");
    }

    #[test]
    fn the_window_bounds_how_far_past_the_prefix_work_runs() {
        // Item 0 is slow; the others are instant. With a window of 3, no more than items
        // 0..3 may start before item 0 is merged.
        let started_early = AtomicUsize::new(0);
        let first_done = AtomicBool::new(false);
        let mut workers = vec![(); 4];
        let merged: Result<Vec<usize>, ()> = map(
            0..100,
            &mut workers,
            3,
            |_: &mut (), i: usize, _: &Stop| {
                if i == 0 {
                    std::thread::sleep(Duration::from_millis(50));
                    first_done.store(true, Ordering::SeqCst);
                } else if !first_done.load(Ordering::SeqCst) {
                    started_early.fetch_add(1, Ordering::SeqCst);
                }
                Ok(i)
            },
            |_| false,
        );
        assert_eq!(merged, Ok((0..100).collect::<Vec<_>>()));
        assert!(started_early.load(Ordering::SeqCst) <= 2);
    }

    #[test]
    fn an_error_stops_the_run_and_the_earliest_error_wins() {
        let visited = AtomicUsize::new(0);
        let mut workers = vec![(); 2];
        let result: Result<Vec<usize>, usize> = map(
            0..10_000,
            &mut workers,
            4,
            |_: &mut (), i: usize, _: &Stop| {
                visited.fetch_add(1, Ordering::SeqCst);
                // Item 5 fails late, item 6 at once: a sequential visit meets 5 first.
                if i == 5 {
                    std::thread::sleep(Duration::from_millis(20));
                    return Err(5);
                }
                if i >= 6 { Err(i) } else { Ok(i) }
            },
            |_| false,
        );
        assert_eq!(result, Err(5));
        assert!(visited.load(Ordering::SeqCst) < 100);
    }

    #[test]
    fn an_error_after_the_answer_settled_does_not_count() {
        let mut workers = vec![(); 2];
        let result: Result<Vec<usize>, usize> = map(
            0..100,
            &mut workers,
            8,
            |_: &mut (), i: usize, _: &Stop| {
                if i == 0 {
                    // Let later items fail before the settling one is merged.
                    std::thread::sleep(Duration::from_millis(20));
                }
                if i >= 3 { Err(i) } else { Ok(i) }
            },
            |&i| i == 2,
        );
        assert_eq!(result, Ok(vec![0, 1, 2]));
    }

    #[test]
    fn a_panicking_worker_surfaces_as_a_panic_not_a_hang() {
        for threads in [1, 2, 4] {
            // On a thread of its own, so a hang fails the test instead of stalling it.
            let (sender, receiver) = mpsc::channel();
            std::thread::spawn(move || {
                let mut workers = vec![(); threads];
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    map(
                        0..10_000,
                        &mut workers,
                        2,
                        |_: &mut (), i: usize, _: &Stop| -> Result<usize, ()> {
                            if i == 1 {
                                // The prefix never gets past item 1, so without the
                                // unwind guard the others would wait at the window's
                                // edge forever.
                                panic!("a worker failed");
                            }
                            Ok(i)
                        },
                        |_| false,
                    )
                }));
                let _ = sender.send(outcome.is_err());
            });
            let panicked = receiver
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("{threads} threads: the run hung"));
            assert!(panicked, "{threads} threads: the panic reached the caller");
        }
    }

    #[test]
    fn a_single_worker_runs_on_the_calling_thread_and_keeps_its_state() {
        let caller = std::thread::current().id();
        let mut workers = vec![Vec::new()];
        let result: Result<Vec<usize>, ()> = map(
            [3, 1, 2].into_iter(),
            &mut workers,
            1,
            |seen: &mut Vec<usize>, i: usize, _: &Stop| {
                assert_eq!(std::thread::current().id(), caller);
                seen.push(i);
                Ok(i * 10)
            },
            |_| false,
        );
        assert_eq!(result, Ok(vec![30, 10, 20]));
        assert_eq!(workers, [vec![3, 1, 2]], "the state outlives the call");
    }

    #[test]
    fn work_sees_the_stop_once_the_answer_settled() {
        let saw_stop = AtomicBool::new(false);
        let second_started = AtomicBool::new(false);
        let mut workers = vec![(); 2];
        let result: Result<Vec<usize>, ()> = map(
            0..4,
            &mut workers,
            4,
            |_: &mut (), i: usize, stop: &Stop| {
                if i == 0 {
                    // Settle only once the other worker is busy with item 1.
                    for _ in 0..1000 {
                        if second_started.load(Ordering::SeqCst) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                if i == 1 {
                    second_started.store(true, Ordering::SeqCst);
                    // Item 0 settles the answer meanwhile.
                    for _ in 0..1000 {
                        if stop.requested() {
                            saw_stop.store(true, Ordering::SeqCst);
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Ok(i)
            },
            |&i| i == 0,
        );
        assert_eq!(result, Ok(vec![0]));
        assert!(saw_stop.load(Ordering::SeqCst));
    }

    #[test]
    fn no_workers_visit_nothing() {
        let mut workers: Vec<()> = Vec::new();
        let result: Result<Vec<usize>, ()> = map(
            0..10,
            &mut workers,
            4,
            |_: &mut (), i, _: &Stop| Ok(i),
            |_| false,
        );
        assert_eq!(result, Ok(Vec::new()));
    }

    #[test]
    fn read_ahead_keeps_the_order_and_stops_once_dropped() {
        let pulled = AtomicUsize::new(0);
        let merged = std::thread::scope(|scope| {
            let items = read_ahead(
                scope,
                (0..100_000).inspect(|_| {
                    pulled.fetch_add(1, Ordering::SeqCst);
                }),
                3,
            );
            let mut workers = vec![(); 2];
            let merged: Result<Vec<usize>, ()> = map(
                items,
                &mut workers,
                4,
                |_: &mut (), i: usize, _: &Stop| Ok(i),
                |&i| i == 20,
            );
            merged
        });
        assert_eq!(merged, Ok((0..=20).collect::<Vec<_>>()));
        // Handed out: at most 21 + 4; read ahead: at most 3 more, and one being sent.
        let pulled = pulled.load(Ordering::SeqCst);
        assert!(pulled <= 21 + 4 + 3 + 1, "pulled {pulled} items");

        let all = std::thread::scope(|scope| read_ahead(scope, 0..1000, 1).collect::<Vec<_>>());
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_panic_while_reading_ahead_reaches_the_caller() {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            std::thread::scope(|scope| {
                let items = read_ahead(
                    scope,
                    (0..100).inspect(|&i| assert!(i < 10, "the source failed")),
                    2,
                );
                let mut workers = vec![(); 2];
                let _: Result<Vec<usize>, ()> = map(
                    items,
                    &mut workers,
                    4,
                    |_: &mut (), i: usize, _: &Stop| Ok(i),
                    |_| false,
                );
            });
        }));
        assert!(outcome.is_err());
    }

    #[test]
    fn the_unwind_guard_acts_only_during_a_panic() {
        let ran = AtomicBool::new(false);
        {
            let _guard = OnUnwind(|| ran.store(true, Ordering::SeqCst));
        }
        assert!(!ran.load(Ordering::SeqCst), "no panic, no action");
        let result = catch_unwind(AssertUnwindSafe(|| {
            let _guard = OnUnwind(|| ran.store(true, Ordering::SeqCst));
            panic!("a worker failed");
        }));
        assert!(result.is_err());
        assert!(ran.load(Ordering::SeqCst), "the panic ran the action");
    }
}
