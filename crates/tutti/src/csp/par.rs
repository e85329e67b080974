//! `par`: run processes in parallel and wait for all of them (occam `PAR`).
//!
//! * [`par`] — `PAR` over any number of processes (futures of one type).
//! * [`par_for_each`] — the replicated `PAR i = 0 FOR n`: process `i` is `process(i)`.
//! * [`par_named`] and the [`Par`] builder — processes with names (the builder also takes
//!   processes of different types), so that a failure says which process it was.
//!
//! Each returns a [`ParFuture`]: await it from an async process, or call
//! [`wait_blocking`](ParFuture::wait_blocking) from a plain thread. When polled it spawns
//! every process as a task on the current runtime (so they run in parallel on its
//! workers, not on the awaiting task), in batches of 128 between which it yields (so the
//! first processes run before the millionth is queued), and completes when all have
//! ended.
//!
//! **Panics.** A panic in a process does not stop the others: once every process has
//! ended, the `par` panics with a message naming the process that panicked (the first to
//! do so, with its message) and how many others did. A process cancelled by its runtime
//! shutting down is reported the same way.
//!
//! **Deadlock.** The future's output is `Result<(), Deadlock>`: if the processes' network
//! (this `par`'s processes and those of the `par`s they run) can no longer progress, the
//! runtime cancels them and the outermost `par` returns [`Deadlock`], a report of who
//! waits on what (see [`deadlock`](super::deadlock) for exactly when). A `par` run by a
//! process of the network returns `Ok` (its processes are cancelled with the rest).
//!
//! **Cost.** A process is one task holding the user's future plus 32 bytes (its `par`,
//! its index, and what the deadlock detector reads) and the task's 40-byte header; the
//! replicated and iterator forms allocate nothing else per process. Dropping a `ParFuture` after it started
//! detaches the processes: they keep running.
//!
//! The count-down protocol that completes a `par` is described in `par/process.rs`.
//!
//! ```
//! use tutti::csp::{channel, par_for_each};
//!
//! // PAR i = 0 FOR 4: each process sends its id to a collector.
//! let (tx, rx) = channel::<usize>();
//! let collector = std::thread::spawn(move || (0..4).map(|_| rx.recv_blocking().unwrap()).sum::<usize>());
//! par_for_each(0..4, |i| {
//!     let tx = tx.clone();
//!     async move { tx.send(i).await.unwrap() }
//! })
//! .wait_blocking()
//! .unwrap();
//! assert_eq!(collector.join().unwrap(), 6);
//! ```

mod process;

#[cfg(all(test, not(loom)))]
mod tests;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::deadlock::{self, Deadlock, Network};
use super::Arc;
use crate::runtime::context::RuntimeRef;
pub(crate) use process::Shared;
use process::{Failure, Process};

/// Runs `processes` in parallel; the returned future completes when every one of them
/// has ended (occam `PAR`).
///
/// Processes are numbered from 0 in iteration order; a panic names the process by number.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let count = Arc::new(Mutex::new(0));
/// let processes: Vec<_> = (0..3)
///     .map(|_| {
///         let count = count.clone();
///         async move {
///             *count.lock().unwrap() += 1;
///         }
///     })
///     .collect();
/// tutti::block_on(tutti::csp::par(processes)).unwrap();
/// assert_eq!(*count.lock().unwrap(), 3);
/// ```
pub fn par<'a, I>(processes: I) -> ParFuture<'a>
where
    I: IntoIterator,
    I::IntoIter: Send + 'a,
    I::Item: Future<Output = ()> + Send + 'static,
{
    let mut processes = processes.into_iter().enumerate();
    ParFuture::new(Box::new(move |shared: &Arc<Shared>, batch| {
        spawn_batch(&mut processes, batch, |(i, p)| spawn(shared, i, p)).then_some(Names::Numbered)
    }))
}

/// The replicated `PAR i = 0 FOR n`: runs `process(i)` for every `i` in `range`, in
/// parallel. The processes are created one by one as they are spawned; nothing per
/// process is allocated besides its task.
///
/// ```
/// use tutti::csp::{par_for_each, Barrier};
///
/// // BARRIER b: PAR i = 0 FOR 8 ENROLL b — each process syncs twice. All enroll before
/// // any starts, as with occam's ENROLL (processes start while later ones are created).
/// let b = Barrier::new();
/// let mut parties: Vec<_> = (0..8).map(|_| b.enroll()).collect();
/// par_for_each(0..8, |_i| {
///     let mut me = parties.pop().unwrap();
///     async move {
///         me.sync().await;
///         me.sync().await;
///     }
/// })
/// .wait_blocking();
/// ```
pub fn par_for_each<'a, F, P>(range: Range<usize>, mut process: F) -> ParFuture<'a>
where
    F: FnMut(usize) -> P + Send + 'a,
    P: Future<Output = ()> + Send + 'static,
{
    let mut range = range;
    ParFuture::new(Box::new(move |shared: &Arc<Shared>, batch| {
        spawn_batch(&mut range, batch, |i| spawn(shared, i, process(i)))
            .then_some(Names::Replicated)
    }))
}

/// Runs named processes in parallel; a panic report names the process.
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
/// use tutti::csp::{channel, par_named};
///
/// let (tx, rx) = channel::<u32>();
/// let sender = async move { tx.send(5).await.unwrap() };
/// let receiver = async move { assert_eq!(rx.recv().await, Ok(5)) };
/// // One future type per `par_named`: box them (or use the `Par` builder).
/// let processes: Vec<(&str, Pin<Box<dyn Future<Output = ()> + Send>>)> =
///     vec![("sender", Box::pin(sender)), ("receiver", Box::pin(receiver))];
/// par_named(processes).wait_blocking().unwrap();
/// ```
pub fn par_named<'a, I, N, P>(processes: I) -> ParFuture<'a>
where
    I: IntoIterator<Item = (N, P)>,
    I::IntoIter: Send + 'a,
    N: Into<Cow<'static, str>>,
    P: Future<Output = ()> + Send + 'static,
{
    let mut processes = processes.into_iter().enumerate();
    let mut names = Vec::new();
    ParFuture::new(Box::new(move |shared: &Arc<Shared>, batch| {
        let all = spawn_batch(&mut processes, batch, |(i, (name, p))| {
            names.push(name.into());
            spawn(shared, i, p);
        });
        all.then(|| Names::Given(std::mem::take(&mut names)))
    }))
}

/// Spawns up to `batch` more of a `par`'s processes (counting each in the shared state);
/// once every one is spawned, says how they are named. One allocation per `par`, none
/// per process.
type Start<'a> = Box<dyn FnMut(&Arc<Shared>, usize) -> Option<Names> + Send + 'a>;

/// Processes a `par` spawns before it yields (and goes behind them in its worker's
/// FIFO). A `par` of millions of processes thus never has them all queued at once: the
/// first batches run (and block, or end) while the rest are still unspawned, so the
/// queues hold `batch` entries per starting `par` instead of every process (16 bytes
/// each, plus the queue's growth) — hello v1's peak memory on one worker.
const SPAWN_BATCH: usize = 128;

/// Calls `spawn` on the next `batch` items of `items`; true once `items` is exhausted.
fn spawn_batch<I: Iterator>(items: &mut I, batch: usize, mut spawn: impl FnMut(I::Item)) -> bool {
    for _ in 0..batch {
        match items.next() {
            Some(item) => spawn(item),
            None => return true,
        }
    }
    false
}

/// Spawns one process of a [`Par`] builder.
type Starter = Box<dyn FnOnce(&Arc<Shared>, usize) + Send>;

/// How a `par` names its processes in a report.
pub(crate) enum Names {
    /// `process #i`.
    Numbered,
    /// `process i = …` of a replicated `PAR`.
    Replicated,
    /// Given names, by index.
    Given(Vec<Cow<'static, str>>),
}

impl Names {
    fn name(&self, index: usize) -> String {
        match self {
            Names::Numbered => format!("#{index}"),
            Names::Replicated => format!("i = {index}"),
            Names::Given(names) => names[index].to_string(),
        }
    }
}

/// The full name of process `index` of the `par` behind `shared`: the names of the
/// processes running the enclosing `par`s first, joined with `/`.
pub(crate) fn process_name(shared: &Shared, index: usize) -> String {
    let own = match shared.names.get() {
        Some(names) => names.name(index),
        None => format!("#{index}"),
    };
    match &shared.parent {
        Some((parent, i)) => format!("{}/{own}", process_name(parent, *i)),
        None => own,
    }
}

fn spawn<P>(shared: &Arc<Shared>, index: usize, process: P)
where
    P: Future<Output = ()> + Send + 'static,
{
    shared.add();
    let process = Process::new(process, Arc::clone(shared), index);
    // Detached: the process counts itself down when it ends. A process of a network is
    // tagged, so that the deadlock detector finds it on the runtime's live list.
    if shared.net.is_some() {
        crate::runtime::task::spawn_tagged(process).detach();
    } else {
        crate::runtime::spawn(process).detach();
    }
}

/// A `PAR` of named processes of any types, built one process at a time.
///
/// ```
/// use tutti::csp::{channel, Par};
///
/// let (tx, rx) = channel::<&str>();
/// Par::new()
///     .process("sender", async move { tx.send("hello").await.unwrap() })
///     .process("receiver", async move {
///         assert_eq!(rx.recv().await, Ok("hello"));
///     })
///     .run()
///     .wait_blocking()
///     .unwrap();
/// ```
#[derive(Default)]
#[must_use = "a Par does nothing until it is run"]
pub struct Par {
    processes: Vec<(Cow<'static, str>, Starter)>,
}

impl Par {
    /// A `PAR` without processes.
    ///
    /// ```
    /// tutti::csp::Par::new().run().wait_blocking().unwrap(); // an empty PAR ends at once
    /// ```
    pub fn new() -> Par {
        Par::default()
    }

    /// Adds a process called `name`.
    ///
    /// ```
    /// let par = tutti::csp::Par::new().process("idle", async {});
    /// assert_eq!(par.len(), 1);
    /// ```
    pub fn process<P>(mut self, name: impl Into<Cow<'static, str>>, process: P) -> Par
    where
        P: Future<Output = ()> + Send + 'static,
    {
        let start: Starter =
            Box::new(move |shared: &Arc<Shared>, index| spawn(shared, index, process));
        self.processes.push((name.into(), start));
        self
    }

    /// The number of processes added.
    ///
    /// ```
    /// assert_eq!(tutti::csp::Par::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.processes.len()
    }

    /// Whether no process was added.
    ///
    /// ```
    /// assert!(tutti::csp::Par::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
    }

    /// Runs the processes in parallel: the returned future starts them when first polled
    /// and completes when all have ended.
    ///
    /// ```
    /// let par = tutti::csp::Par::new().process("a", async {}).process("b", async {});
    /// tutti::block_on(par.run()).unwrap();
    /// ```
    pub fn run(self) -> ParFuture<'static> {
        let mut names = Vec::with_capacity(self.processes.len());
        let mut processes = self.processes.into_iter().enumerate();
        ParFuture::new(Box::new(move |shared: &Arc<Shared>, batch| {
            let all = spawn_batch(&mut processes, batch, |(i, (name, start))| {
                names.push(name);
                start(shared, i);
            });
            all.then(|| Names::Given(std::mem::take(&mut names)))
        }))
    }
}

impl fmt::Debug for Par {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.processes.iter().map(|(n, _)| n))
            .finish()
    }
}

/// The future of a `par`: starts the processes when first polled, completes when all
/// have ended, and re-raises a process's panic (naming the process) after that.
///
/// ```
/// let par = tutti::csp::par_for_each(0..2, |_| async {});
/// tutti::block_on(par).unwrap();
/// ```
///
/// A panic names the process:
///
/// ```
/// let r = std::panic::catch_unwind(|| {
///     tutti::csp::Par::new()
///         .process("calm", async {})
///         .process("grumpy", async { panic!("no") })
///         .run()
///         .wait_blocking()
/// });
/// let msg = r.unwrap_err().downcast::<String>().unwrap();
/// assert!(msg.contains("`grumpy`") && msg.contains("no"));
/// ```
#[must_use = "futures do nothing unless awaited: the processes have not started"]
pub struct ParFuture<'a> {
    /// Starts the processes, a batch per poll; dropped once all are spawned.
    start: Option<Start<'a>>,
    /// Created by the first poll, in the network of the process polling (if any).
    shared: Option<Arc<Shared>>,
    /// The runtime the first poll spawned on: a `par` dropped while still spawning
    /// spawns the rest there.
    runtime: Option<RuntimeRef>,
    /// The processes have all ended and the result was reported.
    done: bool,
}

impl<'a> ParFuture<'a> {
    fn new(start: Start<'a>) -> Self {
        ParFuture {
            start: Some(start),
            shared: None,
            runtime: None,
            done: false,
        }
    }

    /// Runs the `par` on the calling thread: blocks until every process has ended. On a
    /// worker thread (outside an async task) it keeps executing other work, such as the
    /// processes, meanwhile.
    ///
    /// Returns `Err(Deadlock)` if the processes' network deadlocked (see
    /// [`deadlock`](super::deadlock)).
    ///
    /// # Panics
    /// If a process panicked (after all have ended), or when called inside an async task
    /// (use `.await`).
    ///
    /// ```
    /// tutti::csp::par_for_each(0..10, |i| async move { assert!(i < 10) })
    ///     .wait_blocking()
    ///     .unwrap();
    /// ```
    pub fn wait_blocking(self) -> Result<(), Deadlock> {
        crate::runtime::block_on(self)
    }

    /// Creates the shared state, in the network of the process polling if there is one.
    fn make_shared() -> Arc<Shared> {
        let shared = match deadlock::current_process() {
            Some((net, parent, index)) => Shared::new(Some(net), Some((parent, index))),
            None => Shared::new(deadlock::enabled().then(Network::new_root), None),
        };
        Arc::new(shared)
    }

    #[cold]
    fn report(shared: &Shared, failures: Vec<(usize, Failure)>) -> ! {
        let mut failures = failures;
        failures.sort_by_key(|(i, _)| *i);
        let (index, failure) = &failures[0];
        let what = match failure {
            Failure::Panicked(p) => format!("panicked: {}", crate::runtime::payload_text(&**p)),
            Failure::Cancelled => "was cancelled (its runtime shut down)".to_string(),
            Failure::Deadlocked => "was cancelled (deadlock)".to_string(),
        };
        let mut msg = format!(
            "tutti::csp::par: process `{}` {what}",
            process_name(shared, *index)
        );
        if failures.len() > 1 {
            let others: Vec<String> = failures[1..]
                .iter()
                .take(8)
                .map(|(i, _)| format!("`{}`", process_name(shared, *i)))
                .collect();
            msg += &format!(
                " (and {} more failed: {}{})",
                failures.len() - 1,
                others.join(", "),
                if failures.len() > 9 { ", …" } else { "" }
            );
        }
        panic!("{msg}")
    }
}

impl Future for ParFuture<'_> {
    type Output = Result<(), Deadlock>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        assert!(!this.done, "tutti: ParFuture polled after completion");
        let shared = this.shared.get_or_insert_with(Self::make_shared);
        if let Some(start) = this.start.as_mut() {
            this.runtime.get_or_insert_with(RuntimeRef::current);
            let Some(names) = start(shared, SPAWN_BATCH) else {
                // More to spawn: let the batch run first (see `SPAWN_BATCH`).
                cx.waker().wake_by_ref();
                return Poll::Pending;
            };
            this.start = None;
            let _ = shared.names.set(names);
            shared.done(); // drop the hold
        }
        if !shared.poll_done(cx.waker()) {
            if shared.parent.is_some() {
                deadlock::note_par();
            }
            return Poll::Pending;
        }
        this.done = true;
        let mut failures = shared.take_failures();
        failures.retain(|(_, f)| !matches!(f, Failure::Deadlocked));
        if !failures.is_empty() {
            Self::report(shared, failures);
        }
        match (
            &shared.parent,
            shared.net.as_deref().and_then(Network::deadlock),
        ) {
            (None, Some(d)) => Poll::Ready(Err(d.clone())),
            _ => Poll::Ready(Ok(())),
        }
    }
}

impl Drop for ParFuture<'_> {
    /// A `par` dropped while it was still spawning its processes spawns the rest on the
    /// runtime it started on, so that, as documented, every process of a started `par`
    /// runs (detached). If that runtime is gone (its tasks were cancelled), the rest are
    /// dropped unstarted.
    fn drop(&mut self) {
        if let (Some(start), Some(shared)) = (self.start.as_mut(), self.shared.as_ref()) {
            let names = self
                .runtime
                .as_ref()
                .and_then(|rt| rt.enter(|| start(shared, usize::MAX)));
            if let Some(Some(names)) = names {
                let _ = shared.names.set(names);
            }
            shared.done(); // drop the hold
        }
    }
}

impl fmt::Debug for ParFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParFuture")
            .field("started", &self.start.is_none())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
