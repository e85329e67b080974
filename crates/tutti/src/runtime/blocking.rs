//! The blocking pool: threads apart from the workers for closures that block
//! (a file read, a C library call, a lock held by foreign code), so that the
//! blocking call does not hold a worker hostage (principle 2).
//!
//! A blocking closure is spawned as an ordinary task (`task::spawn_blocking_on`)
//! whose future runs the closure in its one poll; its job is handed here
//! instead of to the workers. So its handle is an ordinary [`JoinHandle`]
//! (awaitable, `join()`-able, re-raising a panic, reporting an abort before
//! the closure started as `Cancelled`), and the task is on the runtime's live
//! list while it is queued or running.
//!
//! # The pool's rules
//!
//! All of the pool's state sits under one mutex (`State`); a condition
//! variable wakes idle threads.
//!
//! * **B1, bounded.** At most `cap` threads exist (`threads` counts them,
//!   incremented under the lock *before* a thread is started and decremented
//!   under the lock by the thread as its last step). A job that finds every
//!   thread busy and the cap reached waits in the FIFO `queue`.
//! * **B2, a queued job is taken.** When a job is queued, either an idle
//!   thread is told to come (`idle > wakeups`: one more wake-up is owed, and
//!   the thread that consumes it looks at the queue before waiting again), or
//!   a thread is started, or every thread is busy — and a busy thread looks at
//!   the queue before it waits. So no job waits while a thread waits.
//! * **B3, shrinking.** A thread that waited `keep_alive` without a job (and
//!   owes no wake-up) leaves.
//! * **B4, shutdown.** When the runtime terminates, queued jobs are discarded
//!   (their handles report `Cancelled`), idle threads leave, and a running
//!   closure finishes on its thread, which then leaves (it is not joined: a
//!   blocking call may never return, and the runtime's drop must).

use std::collections::VecDeque;
use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use super::registry::{with_current_registry, Registry};
use super::task::{JoinHandle, RawTask};
use super::worker::WorkerThread;
use crate::loom::{lock, Condvar, Mutex};

/// Default cap on blocking threads per runtime.
pub(crate) const DEFAULT_MAX_THREADS: usize = 512;
/// Default time an idle blocking thread waits for a job before it leaves.
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Runs the blocking closure `f` on a thread of the current runtime's blocking pool,
/// apart from the workers, so that it does not stall the tasks of the runtime.
///
/// The pool starts threads on demand, up to
/// [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads) (default
/// 512; more closures wait in FIFO order), and a thread left idle for
/// [`Builder::blocking_keep_alive`](crate::Builder::blocking_keep_alive) (default 10 s)
/// exits. The returned handle is a task's: await it or `join()` it for `f`'s value (a
/// panic in `f` is re-raised there); aborting it before `f` started cancels the call
/// (a started call cannot be interrupted). Inside `f` the runtime is entered:
/// [`spawn`](crate::spawn) and [`block_on`](crate::block_on) work as on any thread.
/// When the runtime shuts down, closures not started yet are cancelled; a running
/// one finishes on its thread, which the shutdown does not wait for.
///
/// Use it for calls that block (files, foreign libraries, `std::sync` waits), not for
/// computation, which belongs on the workers ([`join`](crate::join), parallel
/// iterators).
///
/// ```
/// let len = tutti::block_on(async {
///     let h = tutti::spawn_blocking(|| std::fs::read_to_string("Cargo.toml").map(|s| s.len()));
///     h.await
/// });
/// assert!(len.unwrap() > 0);
/// ```
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    match WorkerThread::current() {
        Some(w) => super::task::spawn_blocking_on(w.registry(), f),
        None => with_current_registry(|r| super::task::spawn_blocking_on(r, f)),
    }
}

/// A runtime's blocking pool.
pub(crate) struct BlockingPool {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Idle threads wait here for a job (or for shutdown, or `keep_alive`).
    job_ready: Condvar,
    cap: usize,
    keep_alive: Duration,
    /// Thread names: `tutti-blocking-<n>`.
    name_prefix: String,
}

struct State {
    /// Jobs waiting for a thread (B1), each a task holding its job.
    queue: VecDeque<RawTask>,
    /// Threads started and not yet gone (B1).
    threads: usize,
    /// Threads waiting on `job_ready`.
    idle: usize,
    /// Wake-ups owed to idle threads: notified and not yet consumed (B2).
    wakeups: usize,
    /// The runtime terminated (B4).
    shutdown: bool,
    /// Threads ever started, numbering their names.
    started: usize,
    /// Most threads alive at once (for tests and diagnosis).
    peak: usize,
}

impl BlockingPool {
    /// A pool of at most `cap` (≥ 1) threads that leave after `keep_alive` idle.
    pub(crate) fn new(cap: usize, keep_alive: Duration, runtime_id: u16) -> BlockingPool {
        BlockingPool {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    threads: 0,
                    idle: 0,
                    wakeups: 0,
                    shutdown: false,
                    started: 0,
                    peak: 0,
                }),
                job_ready: Condvar::new(),
                cap: cap.max(1),
                keep_alive,
                name_prefix: if runtime_id <= 1 {
                    "tutti-blocking-".to_string()
                } else {
                    format!("tutti-blocking-r{runtime_id}-")
                },
            }),
        }
    }

    /// Hands the job of `task` (the caller holds it) to a blocking thread of
    /// `registry` (whose pool this is); discards it if the runtime is shutting
    /// down or no thread can be started.
    pub(crate) fn submit(&self, registry: &Arc<Registry>, task: RawTask) {
        let sh = &self.shared;
        let mut st = lock(&sh.state);
        if st.shutdown {
            drop(st);
            // SAFETY: we hold the task's job (the caller's), and discard it once.
            unsafe { task.discard() };
            return;
        }
        st.queue.push_back(task);
        if st.idle > st.wakeups {
            st.wakeups += 1;
            drop(st);
            sh.job_ready.notify_one();
            return;
        }
        if st.threads >= sh.cap {
            return; // B2: a busy thread takes it when its closure returns
        }
        st.threads += 1;
        st.started += 1;
        st.peak = st.peak.max(st.threads);
        let name = format!("{}{}", sh.name_prefix, st.started - 1);
        drop(st);
        self.start_thread(name, Arc::downgrade(registry));
    }

    #[cold]
    fn start_thread(&self, name: String, registry: Weak<Registry>) {
        let shared = Arc::clone(&self.shared);
        let started = std::thread::Builder::new()
            .name(name)
            .spawn(move || shared.run(registry));
        if let Err(e) = started {
            let orphans = {
                let mut st = lock(&self.shared.state);
                st.threads -= 1;
                if st.threads == 0 {
                    std::mem::take(&mut st.queue)
                } else {
                    VecDeque::new() // B2: the running threads take them
                }
            };
            if !orphans.is_empty() {
                eprintln!(
                    "tutti: cannot start a blocking thread ({e}); {} blocking call(s) cancelled",
                    orphans.len()
                );
            }
            for task in orphans {
                // SAFETY: a queued task holds its job; taken off the queue, it is ours.
                unsafe { task.discard() };
            }
        }
    }

    /// The runtime terminates (B4): discards the queued jobs and sends idle
    /// threads away.
    pub(crate) fn shutdown(&self) {
        let queued = {
            let mut st = lock(&self.shared.state);
            st.shutdown = true;
            std::mem::take(&mut st.queue)
        };
        self.shared.job_ready.notify_all();
        for task in queued {
            // SAFETY: a queued task holds its job; taken off the queue, it is ours.
            unsafe { task.discard() };
        }
    }

    /// Threads alive now, and most alive at once so far.
    pub(crate) fn threads(&self) -> (usize, usize) {
        let st = lock(&self.shared.state);
        (st.threads, st.peak)
    }
}

impl Shared {
    /// A blocking thread: runs queued jobs, waits for more up to `keep_alive`.
    fn run(&self, registry: Weak<Registry>) {
        let mut st = lock(&self.state);
        loop {
            if let Some(task) = st.queue.pop_front() {
                drop(st);
                run_job(&registry, task);
                st = lock(&self.state);
                continue;
            }
            if st.shutdown {
                break;
            }
            st.idle += 1;
            let (guard, waited) = self
                .job_ready
                .wait_timeout(st, self.keep_alive)
                .unwrap_or_else(PoisonError::into_inner);
            st = guard;
            st.idle -= 1;
            if st.wakeups > 0 {
                st.wakeups -= 1;
                continue; // owed to the queue (B2): look there first
            }
            if waited.timed_out() && st.queue.is_empty() {
                break; // B3
            }
        }
        st.threads -= 1;
    }
}

/// Runs the job of `task` on this blocking thread, with its runtime entered so
/// that what the closure spawns or blocks on goes to that runtime.
fn run_job(registry: &Weak<Registry>, task: RawTask) {
    // A queued task is live, so its runtime is allocated (T5) and the upgrade
    // succeeds; were it gone, running the job without it is still sound.
    let run = move || {
        // SAFETY: the task came off the queue, which held its job; we run it once.
        unsafe { task.run() }
    };
    match registry.upgrade() {
        Some(r) => super::with_entered(r, run),
        None => run(),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use crate::loom::{AtomicUsize, Ordering};
    use crate::runtime::Runtime;

    /// Idle threads leave after the keep-alive; the pool starts again on demand.
    #[test]
    fn idle_threads_leave_after_the_keep_alive() {
        let rt = Runtime::builder()
            .workers(1)
            .blocking_keep_alive(Duration::from_millis(20))
            .build()
            .unwrap();
        let ran = std::sync::Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    let ran = ran.clone();
                    rt.spawn_blocking(move || {
                        std::thread::sleep(Duration::from_millis(5));
                        ran.fetch_add(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for h in handles {
                h.join();
            }
            while rt.registry.blocking.threads().0 != 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        assert_eq!(ran.load(Ordering::SeqCst), 6);
        assert!(rt.registry.blocking.threads().1 >= 1);
    }
}
