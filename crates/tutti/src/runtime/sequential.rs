//! Sequential task groups (Blip's `SequentialTasks`): tasks submitted to one
//! group run one at a time, in submission order, on the shared scheduler.
//!
//! Each submission is spawned at once as an ordinary task that first waits
//! for a gate opened by its predecessor and opens its own gate when it ends —
//! completes, panics or is cancelled — so the chain never stalls and the
//! group needs no thread or runner of its own.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::task::{spawn, JoinHandle};
use std::sync::Arc;

use crate::loom::{lock, Mutex};

/// A group whose tasks run one at a time, in the order they were submitted.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// let group = tutti::SequentialGroup::new();
/// let log = Arc::new(Mutex::new(Vec::new()));
/// let handles: Vec<_> = (0..5)
///     .map(|i| { let log = log.clone(); group.run(move || log.lock().unwrap().push(i)) })
///     .collect();
/// for h in handles { h.join(); }
/// assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3, 4]);
/// ```
#[derive(Default)]
pub struct SequentialGroup {
    last: Mutex<Option<Arc<Gate>>>,
}

impl std::fmt::Debug for SequentialGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SequentialGroup").finish_non_exhaustive()
    }
}

impl SequentialGroup {
    /// An empty group. Its tasks run on the runtime current at submission.
    pub fn new() -> Self {
        SequentialGroup::default()
    }

    /// Submits a future; it starts once every earlier submission has ended.
    ///
    /// ```
    /// let g = tutti::SequentialGroup::new();
    /// assert_eq!(g.spawn(async { 7 }).join(), 7);
    /// ```
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let mine = Arc::new(Gate::default());
        let prev = lock(&self.last).replace(Arc::clone(&mine));
        // Built outside the future so the gate opens even if the task is
        // cancelled before its first poll.
        let open = OpenOnDrop(mine);
        spawn(async move {
            let _open = open;
            if let Some(prev) = prev {
                GateWait { gate: &prev }.await;
            }
            future.await
        })
    }

    /// Submits a closure; it runs once every earlier submission has ended.
    ///
    /// ```
    /// let g = tutti::SequentialGroup::new();
    /// assert_eq!(g.run(|| 1 + 1).join(), 2);
    /// ```
    pub fn run<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.spawn(async move { f() })
    }
}

/// Opened once by the predecessor; awaited by at most one successor.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    open: bool,
    waiter: Option<Waker>,
}

struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        let waiter = {
            let mut s = lock(&self.0.state);
            s.open = true;
            s.waiter.take()
        };
        if let Some(w) = waiter {
            w.wake();
        }
    }
}

struct GateWait<'a> {
    gate: &'a Gate,
}

impl Future for GateWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = lock(&self.gate.state);
        if s.open {
            return Poll::Ready(());
        }
        match &mut s.waiter {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}
