//! Deadlock detection for process networks (occam-π's "deadlock" report, Go's "all
//! goroutines are asleep"): when the processes of a `par` can no longer progress, the
//! `par` returns a [`Deadlock`] report instead of hanging.
//!
//! # What is detected
//!
//! A **network** is the processes of a root `par` (one not itself run by a process) and,
//! recursively, of every `par` run by those processes. The network is **deadlocked**
//! when all of the following hold at once:
//!
//! 1. every process of it is blocked in a CSP operation — a send, receive, `Alt`,
//!    barrier sync or nested `par` — and none of those includes a timer;
//! 2. every channel and barrier those operations wait on is **internal** to the network:
//!    it was created by one of its processes, and no party outside the network (a plain
//!    thread, a task that is not one of its processes, another network) has ever acted
//!    on it — sent, received, cloned or dropped an end, poisoned it, enrolled or synced;
//! 3. the runtime is quiet: no task runs or is queued and no timer is armed.
//!
//! Then nothing can ever complete those operations, and the detector declares the
//! deadlock: it prints the report on stderr, cancels every process of the network
//! (dropping a process's future withdraws its pending operations, so no value is lost or
//! duplicated), and the root `par` returns `Err(Deadlock)`.
//!
//! The report names each blocked process (the names given by [`Par`](super::Par) /
//! [`par_named`](super::par_named), or numbers, outer `par` first) and what it waits on
//! (channels and barriers named by [`channel_named`](super::channel_named),
//! [`buffered_named`](super::buffered_named) and [`Barrier::named`](super::Barrier::named),
//! or numbered), and a wait-for cycle through channels when there is one: process A
//! waits on a channel whose other side was last waited on by B, which waits on …
//!
//! # Why it never reports a network that could progress (and its limits)
//!
//! The detector runs only from the idle hook of a quiet runtime and checks its
//! conditions with a double collect of the members' state words, see
//! `deadlock/network.rs`. Each condition rules out one way a blocked operation could
//! still complete: a running or queued task (3), a timer (1 and 3), another process of
//! the network (1: they are all blocked), a party outside the network (2: it could only
//! complete the operation by acting on the object). What the runtime cannot see:
//!
//! * an end handed to a **plain thread** (or a task that is not a process of the
//!   network) that has not used it yet, by a process that created the channel. The
//!   thread's first use marks the channel as outside — if the detector has not declared
//!   the deadlock before. Create channels that threads use outside the network, or use
//!   them from the thread before the network blocks on them.
//! * a process blocked on a CSP operation **and** a foreign future at once (a
//!   `select` of your own over a tutti channel and, say, a tokio timer).
//!
//! Actors and locations (the nodes of `diag`'s wait-for graph) are not processes of a
//! network; a receive of theirs waits for the one actor or location that sends on the
//! channel, when there is one (`deadlock/sender.rs`), so `diag` reports a cycle of asks
//! and receives.
//!
//! A deadlock among channels created outside every network (say, in `main` before the
//! `par`) is not reported: an end might be held by a thread that has not used it yet.
//! Run the whole network inside [`run`] (or a process) to have it checked.
//!
//! # Cost
//!
//! Per process: 24 bytes inside the process (its state word, the object of its first
//! wait, its notes), a few loads and stores per poll, and a read lock of the scan gate
//! when it ends; there is no registry of members (the detector finds them among the
//! runtime's live tasks). Per channel created inside a network, a small record; per
//! operation on such a channel, one thread-local read. Channels created outside networks
//! carry one pointer. [`set_deadlock_detection`] turns it off for processes started
//! afterwards.

mod home;
mod member;
mod network;
mod sender;

use std::future::Future;

pub use crate::diag::{BlockedProcess, Deadlock};
pub(crate) use home::{Home, Object, Side};
pub(crate) use member::{
    current_process, note, note_from, note_open, note_par, withdrawn, Member, Wait,
};
pub(crate) use network::Network;
pub(crate) use sender::SenderNode;

use super::par::ParFuture;

/// Turns deadlock detection on ([`DeadlockMode::Fail`](crate::diag::DeadlockMode::Fail))
/// or off, for every paradigm, from now on (it is on by default; the environment
/// variable `TUTTI_DEADLOCK=off` turns it off at start-up). The same switch as
/// [`crate::diag::set_deadlock_mode`], kept here for CSP programs.
///
/// ```
/// tutti::csp::set_deadlock_detection(true);
/// assert!(tutti::csp::deadlock_detection());
/// ```
pub fn set_deadlock_detection(on: bool) {
    crate::diag::set_deadlock_mode(if on {
        crate::diag::DeadlockMode::Fail
    } else {
        crate::diag::DeadlockMode::Off
    });
}

/// Whether deadlock detection is on for networks started now.
///
/// ```
/// let _ = tutti::csp::deadlock_detection();
/// ```
pub fn deadlock_detection() -> bool {
    enabled()
}

#[inline]
pub(crate) fn enabled() -> bool {
    crate::diag::deadlock_mode() != crate::diag::DeadlockMode::Off
}

/// Runs `body` as the one process of a new network (a root `par` of one process named
/// `run`): channels and barriers it creates, and the processes of the `par`s it runs,
/// belong to the network, so a deadlock among them is reported as `Err(Deadlock)`
/// instead of hanging.
///
/// ```
/// use tutti::csp::{channel, par_for_each, run};
///
/// run(async {
///     let (tx, rx) = channel::<u64>();
///     par_for_each(0..2, move |i| {
///         let (tx, rx) = (tx.clone(), rx.clone());
///         async move {
///             if i == 0 {
///                 tx.send(42).await.unwrap();
///             } else {
///                 assert_eq!(rx.recv().await, Ok(42));
///             }
///         }
///     })
///     .await
///     .unwrap();
/// })
/// .wait_blocking()
/// .unwrap();
/// ```
pub fn run<F>(body: F) -> ParFuture<'static>
where
    F: Future<Output = ()> + Send + 'static,
{
    super::Par::new().process("run", body).run()
}
