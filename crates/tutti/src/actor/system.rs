//! Actor systems: groups of actors that shut down together.
//!
//! Every actor belongs to one [`ActorSystem`]: the one it was spawned into explicitly,
//! else the system of the actor whose handler spawned it, else the process-wide
//! [global](ActorSystem::global) system. A system keeps a sharded list of its live
//! actors (as cell handles, which do not keep them running) and a count.
//!
//! # Shutdown
//!
//! [`ActorSystem::shutdown`] marks the system as closing, sends every member a stop
//! request ([`StopReason::Shutdown`]; it interrupts a suspended handler) and waits until
//! the count of live members is zero. Each stopping actor runs its full stop sequence —
//! its `stopped` hook, errors for pending asks, `Down`s to monitors — and leaves. An
//! actor spawned into a closing system is stopped right after its `started` hook. Once
//! the count reaches zero the system accepts new actors again.
//!
//! *No member is missed:* a spawn inserts itself under its shard's lock and then reads
//! `closing`; a shutdown raises `closing` and then reads every shard under its lock. If
//! the shutdown read the shard first, the spawn's later lock acquisition happens after
//! the raise and it sees `closing`; otherwise the shutdown sees the new member.
//!
//! *No wait is lost:* a shutdown checks the count and queues its waker under the
//! waiters' lock; the member that brings the count to zero takes the same lock to wake
//! the waiters.
//!
//! Dropping the [`Runtime`](crate::runtime::Runtime) that runs actors also ends them: the
//! runtime cancels their tasks, and each actor's task runs its stop sequence as it is
//! dropped.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};

use super::monitor::Signals;
use super::{Actor, ActorId, Addr, StopReason};
use crate::loom::{lock, AtomicUsize, Mutex, Ordering};

const SHARDS: usize = 16;

/// Slots per page of a member table.
const PAGE: usize = 64;

type Member = Option<Arc<dyn Signals>>;

/// One shard of the member table: fixed-size pages (no reallocation slack), with a
/// free list of slots.
#[derive(Default)]
struct Slab {
    // Boxed pages: growing the table moves page pointers, not pages, and leaves no
    // half-empty reallocation behind.
    #[allow(clippy::vec_box)]
    pages: Vec<Box<[Member; PAGE]>>,
    free: Vec<u32>,
    /// Slots handed out so far (the next fresh slot).
    used: u32,
}

impl Slab {
    fn insert(&mut self, m: Arc<dyn Signals>) -> u32 {
        let slot = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = self.used;
                self.used = i.checked_add(1).expect("tutti: too many actors");
                if i as usize / PAGE == self.pages.len() {
                    self.pages.push(Box::new([const { None }; PAGE]));
                }
                i
            }
        };
        self.pages[slot as usize / PAGE][slot as usize % PAGE] = Some(m);
        slot
    }

    fn remove(&mut self, slot: u32) -> Member {
        let m = self
            .pages
            .get_mut(slot as usize / PAGE)
            .and_then(|p| p[slot as usize % PAGE].take());
        if m.is_some() {
            self.free.push(slot);
        }
        m
    }

    fn all(&self) -> impl Iterator<Item = &Arc<dyn Signals>> {
        self.pages.iter().flat_map(|p| p.iter().flatten())
    }
}

/// The shared state of one system.
pub(crate) struct SystemInner {
    shards: Box<[Mutex<Slab>]>,
    live: AtomicUsize,
    /// Shutdowns in progress.
    closing: AtomicUsize,
    waiters: Mutex<Vec<Waker>>,
}

impl SystemInner {
    fn new() -> Self {
        SystemInner {
            shards: (0..SHARDS).map(|_| Mutex::new(Slab::default())).collect(),
            live: AtomicUsize::new(0),
            closing: AtomicUsize::new(0),
            waiters: Mutex::new(Vec::new()),
        }
    }

    fn shard(&self, id: ActorId) -> &Mutex<Slab> {
        &self.shards[(id.as_u64() as usize) % self.shards.len()]
    }

    /// Adds a member; returns its slot and whether the system is closing (then the
    /// caller stops the actor before it starts).
    pub(crate) fn join(&self, member: Arc<dyn Signals>) -> (u32, bool) {
        self.live.fetch_add(1, Ordering::SeqCst);
        let id = member.id();
        let slot = lock(self.shard(id)).insert(member);
        // SeqCst: see "No member is missed" in the module documentation.
        (slot, self.closing.load(Ordering::SeqCst) > 0)
    }

    /// Removes a member that has finished.
    pub(crate) fn leave(&self, id: ActorId, slot: u32) {
        let member = lock(self.shard(id)).remove(slot);
        drop(member);
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            let waiters = std::mem::take(&mut *lock(&self.waiters));
            for w in waiters {
                w.wake();
            }
        }
    }

    fn members(&self) -> Vec<Arc<dyn Signals>> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            all.extend(lock(shard).all().cloned());
        }
        all
    }
}

std::thread_local! {
    /// The system of the actor being polled on this thread, if any.
    static CURRENT: std::cell::Cell<*const SystemInner> = const { std::cell::Cell::new(ptr::null()) };
}

/// Makes `system` current on this thread while the guard lives.
pub(crate) fn enter(system: &Arc<SystemInner>) -> EnterGuard {
    EnterGuard(CURRENT.with(|c| c.replace(Arc::as_ptr(system))))
}

pub(crate) struct EnterGuard(*const SystemInner);

impl Drop for EnterGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

fn current_inner() -> Arc<SystemInner> {
    let p = CURRENT.with(std::cell::Cell::get);
    if p.is_null() {
        return Arc::clone(&ActorSystem::global().inner);
    }
    // SAFETY: `p` is set only while an actor of this system is polled on this thread,
    // and that actor's cell holds an `Arc` to the system.
    unsafe {
        Arc::increment_strong_count(p);
        Arc::from_raw(p)
    }
}

/// A group of actors that can be shut down together. Cheap to clone (a handle).
///
/// ```
/// use tutti::actor::{Actor, ActorSystem, StopReason};
///
/// struct Service(std::sync::Arc<std::sync::Mutex<usize>>);
/// impl Actor for Service {
///     fn stopped(&mut self, reason: &StopReason) {
///         assert_eq!(*reason, StopReason::Shutdown);
///         *self.0.lock().unwrap() += 1;
///     }
/// }
///
/// let stops = std::sync::Arc::new(std::sync::Mutex::new(0));
/// let system = ActorSystem::new();
/// let addrs: Vec<_> = (0..10).map(|_| system.spawn(Service(stops.clone()))).collect();
/// system.shutdown_blocking();
/// assert_eq!(*stops.lock().unwrap(), 10);
/// assert!(addrs.iter().all(|a| a.is_stopped()));
/// assert_eq!(system.live(), 0);
/// ```
#[derive(Clone)]
pub struct ActorSystem {
    inner: Arc<SystemInner>,
}

impl Default for ActorSystem {
    fn default() -> Self {
        ActorSystem::new()
    }
}

impl ActorSystem {
    /// A new, empty system.
    pub fn new() -> ActorSystem {
        ActorSystem {
            inner: Arc::new(SystemInner::new()),
        }
    }

    pub(crate) fn from_inner(inner: Arc<SystemInner>) -> ActorSystem {
        ActorSystem { inner }
    }

    pub(crate) fn inner(&self) -> &Arc<SystemInner> {
        &self.inner
    }

    /// The process-wide system that [`actor::spawn`](crate::actor::spawn) uses outside
    /// actors.
    ///
    /// ```
    /// # use tutti::actor::ActorSystem;
    /// let _ = ActorSystem::global().live();
    /// ```
    pub fn global() -> ActorSystem {
        static GLOBAL: OnceLock<ActorSystem> = OnceLock::new();
        GLOBAL.get_or_init(ActorSystem::new).clone()
    }

    /// The system of the actor whose handler is running on this thread, else the
    /// global one.
    ///
    /// ```
    /// # use tutti::actor::ActorSystem;
    /// assert!(ActorSystem::current().ptr_eq(&ActorSystem::global()));
    /// ```
    pub fn current() -> ActorSystem {
        ActorSystem {
            inner: current_inner(),
        }
    }

    /// True if both handles name the same system.
    ///
    /// ```
    /// # use tutti::actor::ActorSystem;
    /// let s = ActorSystem::new();
    /// assert!(s.ptr_eq(&s.clone()) && !s.ptr_eq(&ActorSystem::new()));
    /// ```
    pub fn ptr_eq(&self, other: &ActorSystem) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Spawns an actor in this system (unbounded mailbox); see
    /// [`actor::Builder`](crate::actor::Builder) for options.
    ///
    /// ```
    /// # use tutti::actor::{Actor, ActorSystem};
    /// struct A;
    /// impl Actor for A {}
    /// let s = ActorSystem::new();
    /// let a = s.spawn(A);
    /// assert_eq!(s.live(), 1);
    /// # drop(a);
    /// ```
    #[must_use = "the actor stops as soon as no Addr to it remains"]
    pub fn spawn<A: Actor>(&self, actor: A) -> Addr<A> {
        super::Builder::new().system(self).spawn(actor)
    }

    /// Actors of this system that have not finished stopping.
    ///
    /// ```
    /// # use tutti::actor::ActorSystem;
    /// assert_eq!(ActorSystem::new().live(), 0);
    /// ```
    pub fn live(&self) -> usize {
        self.inner.live.load(Ordering::Acquire)
    }

    /// Stops every actor of the system (and any spawned meanwhile) with
    /// [`StopReason::Shutdown`], and completes when all have finished their stop
    /// sequence. Each actor's `stopped` hook runs; pending asks get
    /// [`AskError::Stopped`](crate::actor::AskError::Stopped).
    ///
    /// ```
    /// # use tutti::actor::{Actor, ActorSystem};
    /// # struct A; impl Actor for A {}
    /// let s = ActorSystem::new();
    /// let a = s.spawn(A);
    /// tutti::block_on(s.shutdown());
    /// assert!(a.is_stopped());
    /// ```
    pub fn shutdown(&self) -> Shutdown<'_> {
        Shutdown {
            system: self,
            state: ShutdownState::Start,
        }
    }

    /// [`shutdown`](ActorSystem::shutdown) for plain threads: blocks until every actor of
    /// the system has stopped.
    ///
    /// # Panics
    /// Inside an async task (including a handler); use `.await` there.
    ///
    /// ```
    /// # use tutti::actor::ActorSystem;
    /// ActorSystem::new().shutdown_blocking();
    /// ```
    pub fn shutdown_blocking(&self) {
        crate::runtime::block_on(self.shutdown());
    }
}

impl fmt::Debug for ActorSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActorSystem")
            .field("live", &self.live())
            .finish()
    }
}

/// Stops every actor of the [global](ActorSystem::global) system and waits until they
/// have all finished (Erlang's `init:stop`, the C task framework's clean system shutdown).
///
/// # Panics
/// Inside an async task; use `ActorSystem::global().shutdown().await` there.
///
/// ```
/// # use tutti::actor::{self, Actor};
/// # struct A; impl Actor for A {}
/// let a = actor::spawn(A);
/// actor::shutdown_all();
/// assert!(a.is_stopped());
/// ```
pub fn shutdown_all() {
    ActorSystem::global().shutdown_blocking();
}

enum ShutdownState {
    Start,
    Waiting,
    Done,
}

/// The future returned by [`ActorSystem::shutdown`].
#[must_use = "futures do nothing unless awaited"]
pub struct Shutdown<'a> {
    system: &'a ActorSystem,
    state: ShutdownState,
}

impl Future for Shutdown<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let inner = Arc::clone(&self.system.inner);
        if let ShutdownState::Start = self.state {
            // SeqCst: see "No member is missed".
            inner.closing.fetch_add(1, Ordering::SeqCst);
            self.state = ShutdownState::Waiting;
            for m in inner.members() {
                m.request_stop(StopReason::Shutdown);
            }
        }
        if let ShutdownState::Done = self.state {
            return Poll::Ready(());
        }
        let mut w = lock(&inner.waiters);
        if inner.live.load(Ordering::Acquire) == 0 {
            drop(w);
            inner.closing.fetch_sub(1, Ordering::SeqCst);
            self.state = ShutdownState::Done;
            return Poll::Ready(());
        }
        if !w.iter().any(|x| x.will_wake(cx.waker())) {
            w.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for Shutdown<'_> {
    fn drop(&mut self) {
        if let ShutdownState::Waiting = self.state {
            self.system.inner.closing.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl fmt::Debug for Shutdown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown")
            .field("live", &self.system.live())
            .finish()
    }
}
