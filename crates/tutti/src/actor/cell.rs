//! The per-actor cell: everything addresses share with the actor's task.
//!
//! One `Arc<Cell<A>>` per actor. Addresses ([`Addr`](super::Addr),
//! [`Recipient`](super::Recipient)) and the actor's task hold it; so do system-internal
//! handles (monitors, links, the system's member list), which do not count as addresses.
//!
//! # Fields and who may touch them
//!
//! * `mailbox` — the state word, the unbounded queue and the consumer's count of popped
//!   messages (see `mailbox/`). The count lives outside the context so that the loop
//!   can retire messages while a suspended handler borrows the context.
//! * `waker` — the task's waker: written **once** by the consumer on its first poll,
//!   before it retires the start token; read by whoever must wake the actor, which it can
//!   only learn from the state word after that retire or after `AWAITING` was set (both
//!   later, with Release; the reader's read-modify-write acquires). Dropped with the
//!   cell.
//! * `addrs` — the number of live addresses; the actor stops when it is zero and the
//!   mailbox is empty (checked by the consumer whenever it goes idle; the last address
//!   to go signals it so that it looks).
//! * `bounded` — the bounded flavor, fixed at spawn.
//! * `aux` — rarely used state behind a lock, allocated on first use (one pointer,
//!   installed once with a compare-exchange): the priority lane, stop requests,
//!   monitors, links, names, stop waiters, the final stop reason.
//! * `actor`, `ctx` — **consumer only**: the actor's state and its [`Context`]. Touched
//!   only by the actor's task, and by it only while no handler future borrows them.
//! * `run` — **consumer only**: the actor loop's own state (the running handler, the
//!   lifecycle phase), so that the task's future is just a pointer to this cell.

use crate::loom::AtomicPtr;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::task::Waker;

use super::mailbox::bounded::{Bounded, Overflow, Refusal};
use super::mailbox::queue::Pop;
use super::mailbox::state::Retired;
use super::mailbox::Mailbox;
use super::monitor::{Down, DownSink, Signals};
use super::registry::Name;
use super::run::RunState;
use super::system::SystemInner;
use super::{Actor, ActorId, Context, StopReason};
use crate::loom::{lock, AtomicUsize, Mutex, Ordering};
use crate::msg::{Envelope, Handler};

/// Rare per-actor state; see the module documentation.
pub(crate) struct Aux<A: Actor> {
    pub(crate) inner: Mutex<AuxInner<A>>,
}

pub(crate) struct AuxInner<A: Actor> {
    /// Priority lane: down notices, trapped exits, `tell_priority` messages.
    pub(crate) lane: VecDeque<Envelope<A>>,
    /// The pending stop: requested from outside (interrupts a suspended handler) or by
    /// the actor itself with `Context::stop` (waits for the handler to return). An
    /// outside request replaces a self-stop; otherwise the first one wins.
    pub(crate) stop: Option<StopReason>,
    /// `stop` came from outside.
    pub(crate) stop_interrupts: bool,
    /// Who gets a [`Down`] when this actor stops: (monitor ref id, sink).
    pub(crate) watchers: Vec<(u64, Arc<dyn DownSink>)>,
    /// Linked actors.
    pub(crate) links: Vec<Arc<dyn Signals>>,
    /// Names registered for this actor.
    pub(crate) names: Vec<Name>,
    /// Set by `trap_exits`: turns an exit signal into a `Down` message.
    pub(crate) trap: Option<fn(Down) -> Envelope<A>>,
    /// Why the actor stopped, once it has begun stopping (set at the start of
    /// the stop sequence: from then on it refuses names, monitors and links).
    pub(crate) finished: Option<StopReason>,
    /// The whole stop sequence is over: hook ran, names removed, monitors and
    /// links told. `wait` resolves on this, not on `finished`.
    pub(crate) stop_complete: bool,
    /// Futures waiting for the stop sequence to complete.
    pub(crate) stop_waiters: Vec<Waker>,
}

impl<A: Actor> AuxInner<A> {
    /// Records a stop request from outside (see `stop`).
    pub(crate) fn request_stop(&mut self, reason: StopReason) {
        if self.stop.is_none() || !self.stop_interrupts {
            self.stop = Some(reason);
            self.stop_interrupts = true;
        }
    }
}

/// The lazily allocated aux state: one pointer, set once (null until then).
struct AuxPtr<A: Actor>(AtomicPtr<Aux<A>>);

impl<A: Actor> AuxPtr<A> {
    /// The aux state, allocated now if it is not yet: of two threads that
    /// allocate at once, one installs its allocation and the other frees its
    /// own and takes the installed one.
    fn get_or_init(&self) -> &Aux<A> {
        match self.get() {
            Some(a) => a,
            None => self.init(),
        }
    }

    fn get(&self) -> Option<&Aux<A>> {
        // Acquire: see the initialised `Aux` behind a pointer installed by another thread.
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: a non-null pointer came from `Box::into_raw` below and stays valid
        // until the cell is dropped.
        unsafe { p.as_ref() }
    }

    #[cold]
    fn init(&self) -> &Aux<A> {
        let new = Box::into_raw(Box::new(Aux::new()));
        match self
            .0
            .compare_exchange(ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire)
        {
            // SAFETY: we installed it; valid until the cell is dropped.
            Ok(_) => unsafe { &*new },
            Err(theirs) => {
                // SAFETY: ours was never shared; theirs is installed and valid.
                unsafe {
                    drop(Box::from_raw(new));
                    &*theirs
                }
            }
        }
    }
}

impl<A: Actor> Drop for AuxPtr<A> {
    fn drop(&mut self) {
        // Exclusive access: the last value stored is the one read.
        let p = self.0.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: installed by `init`, dropped once, with exclusive access.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl<A: Actor> Aux<A> {
    fn new() -> Self {
        Aux {
            inner: Mutex::new(AuxInner {
                lane: VecDeque::new(),
                stop: None,
                stop_interrupts: false,
                watchers: Vec::new(),
                links: Vec::new(),
                names: Vec::new(),
                trap: None,
                finished: None,
                stop_complete: false,
                stop_waiters: Vec::new(),
            }),
        }
    }
}

/// The number of live addresses (see the module documentation). Once it is
/// zero it stays zero: an address is only added from an existing one
/// ([`add`](Self::add)) or by [`try_add`](Self::try_add), which refuses at
/// zero, so exactly one drop sees the last address go.
struct Addrs(AtomicUsize);

impl Addrs {
    /// One more address, made from a live one (so the count is not zero).
    fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// One more address unless none is left.
    fn try_add(&self) -> bool {
        let mut n = self.0.load(Ordering::Relaxed);
        while n > 0 {
            match self
                .0
                .compare_exchange_weak(n, n + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(m) => n = m,
            }
        }
        false
    }

    /// One address fewer; true if it was the last (the actor must look).
    fn drop_one(&self) -> bool {
        // Release: our sends happen before the consumer sees zero addresses.
        self.0.fetch_sub(1, Ordering::AcqRel) == 1
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

/// What the consumer found in its mailbox.
pub(crate) enum Next<A: Actor> {
    Env(Envelope<A>),
    Empty,
    /// A reserved message is still being pushed.
    Busy,
}

/// The cell; see the module documentation.
pub(crate) struct Cell<A: Actor> {
    pub(crate) mailbox: Mailbox,
    waker: UnsafeCell<Option<Waker>>,
    addrs: Addrs,
    pub(crate) id: ActorId,
    bounded: Option<Box<Bounded<A>>>,
    aux: AuxPtr<A>,
    pub(crate) system: Arc<SystemInner>,
    /// Initialised while the context's `LIVE` flag is set.
    actor: UnsafeCell<MaybeUninit<A>>,
    ctx: UnsafeCell<Context<A>>,
    run: UnsafeCell<RunState>,
    /// The actor in the wait-for graph (`crate::diag`).
    pub(crate) node: Arc<crate::diag::node::Node>,
}

// SAFETY: the consumer-only fields (`actor`, `ctx`, `run`) are touched by the actor's task
// only, one poll at a time (A: Send lets the task move between threads); `waker` is
// written once before any reader can exist (see the module documentation); every other
// field is atomic or locked.
unsafe impl<A: Actor> Sync for Cell<A> {}
// SAFETY: as above.
unsafe impl<A: Actor> Send for Cell<A> {}

impl<A: Actor> Cell<A> {
    /// A new cell holding `actor`, with one address (for the spawner).
    pub(crate) fn new(
        actor: A,
        bounded: Option<(usize, Overflow)>,
        system: Arc<SystemInner>,
    ) -> Arc<Self> {
        let id = ActorId::next();
        let node = crate::diag::node::Node::new(
            crate::diag::node::Kind::Actor,
            format!(
                "{id} ({})",
                super::addr::short_type_name(std::any::type_name::<A>())
            ),
            crate::diag::rank(),
            0,
            1,
            0,
            0,
        );
        let cell = Arc::new(Cell {
            mailbox: Mailbox::new(),
            waker: UnsafeCell::new(None),
            addrs: Addrs(AtomicUsize::new(1)),
            id,
            node,
            bounded: bounded.map(|(cap, policy)| Box::new(Bounded::new(cap, policy))),
            aux: AuxPtr(AtomicPtr::new(ptr::null_mut())),
            system,
            actor: UnsafeCell::new(MaybeUninit::new(actor)),
            ctx: UnsafeCell::new(Context::new(NonNull::dangling())),
            run: UnsafeCell::new(RunState::new()),
        });
        // SAFETY: the cell is not shared yet; the pointer comes from the Arc (valid for
        // as long as the cell, which contains the context, lives).
        unsafe {
            (*cell.ctx.get()).set_cell(NonNull::new_unchecked(Arc::as_ptr(&cell).cast_mut()))
        };
        cell
    }

    // ----- producers -----

    /// Queues `msg` (made into an envelope by `make` once accepted), or gives it back.
    /// `wait` lets a full `Block` mailbox queue the caller's waker.
    #[inline]
    pub(crate) fn offer<M>(
        &self,
        msg: M,
        make: impl FnOnce(M) -> Envelope<A>,
        wait: Option<(&Waker, &mut Option<u64>)>,
    ) -> Result<(), (M, Refusal)> {
        // A traced message's flow starts at a clock reading taken before the
        // message can be seen (so before its turn reads the clock; one this
        // slice took already, see `diag/trace/chain.rs`), and is recorded once
        // it is queued: not in between, where the actor would find a reserved
        // message still in flight and spin.
        let traced = crate::diag::trace::flow_begin();
        let mut flow = 0;
        let make = |m| {
            let e = make(m);
            if traced != 0 {
                flow = e.trace_id();
            }
            e
        };
        if let Some(b) = &self.bounded {
            let r = b.offer(&self.mailbox.state, msg, make, wait);
            if r.is_ok() {
                crate::diag::trace::flow_out_at(traced, flow);
            }
            return match r {
                Ok(wake) => {
                    if wake {
                        self.wake();
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            };
        }
        let mut msg = Some(msg);
        let offered = self.mailbox.offer(|| {
            let m = msg.take().expect("tutti: message made twice");
            make(m).into_link()
        });
        match offered {
            None => Err((
                msg.take().expect("tutti: refused message lost"),
                Refusal::Stopped,
            )),
            Some(wake) => {
                crate::diag::trace::flow_out_at(traced, flow);
                if wake {
                    self.wake();
                }
                Ok(())
            }
        }
    }

    /// A bounded sender waiting with `ticket` gave up.
    pub(crate) fn cancel_wait(&self, ticket: u64) {
        if let Some(b) = &self.bounded {
            b.cancel(ticket);
        }
    }

    /// Wakes the actor's task.
    #[inline]
    fn wake(&self) {
        // SAFETY: written once before any caller can get here (see the module doc).
        if let Some(w) = unsafe { &*self.waker.get() } {
            w.wake_by_ref();
        }
    }

    /// Flags a recorded system event, waking the actor if needed.
    pub(crate) fn signal(&self, interrupt: bool) {
        if self.mailbox.state.signal(interrupt) {
            self.wake();
        }
    }

    pub(crate) fn aux(&self) -> &Aux<A> {
        self.aux.get_or_init()
    }

    pub(crate) fn aux_if_any(&self) -> Option<&Aux<A>> {
        self.aux.get()
    }

    /// Asks the actor to stop (interrupting a suspended handler). The first request wins.
    pub(crate) fn request_stop(&self, reason: StopReason) {
        let mut g = lock(&self.aux().inner);
        if g.finished.is_some() {
            return;
        }
        g.request_stop(reason);
        drop(g);
        self.signal(true);
    }

    /// Queues an envelope on the priority lane (handled before the mailbox).
    pub(crate) fn push_priority(&self, env: Envelope<A>) -> Result<(), Envelope<A>> {
        let mut g = lock(&self.aux().inner);
        if g.finished.is_some() {
            return Err(env);
        }
        crate::diag::trace::flow_out(env.trace_id());
        g.lane.push_back(env);
        drop(g);
        self.signal(false);
        Ok(())
    }

    // ----- addresses -----

    pub(crate) fn add_addr(&self) {
        self.addrs.add();
    }

    /// Adds an address unless none is left (then the actor may be stopping for good).
    pub(crate) fn try_add_addr(&self) -> bool {
        self.addrs.try_add()
    }

    pub(crate) fn drop_addr(&self) {
        if self.addrs.drop_one() {
            self.signal(false);
        }
    }

    pub(crate) fn addrs(&self) -> usize {
        self.addrs.count()
    }

    // ----- observers -----

    /// Messages queued now. For the unbounded flavor this is the count of the state
    /// word, which also includes messages the actor took in its current turn and has
    /// not retired yet; between turns, and while a handler is suspended, it is exact.
    pub(crate) fn queued(&self) -> usize {
        match &self.bounded {
            Some(b) => b.len(),
            None if self.mailbox.state.is_closed() => 0,
            None => self.mailbox.state.count() as usize,
        }
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.bounded.as_ref().map_or(0, |b| b.dropped())
    }

    pub(crate) fn bounds(&self) -> Option<(usize, Overflow)> {
        self.bounded.as_ref().map(|b| (b.capacity(), b.policy()))
    }

    // ----- consumer -----

    /// Records the task's waker. Consumer, first poll only.
    pub(crate) fn publish_waker(&self, w: &Waker) {
        // SAFETY: consumer-only, before the start token is retired: no reader yet.
        unsafe { *self.waker.get() = Some(w.clone()) };
    }

    /// The context. Consumer only, while no handler borrows it.
    pub(crate) fn ctx_ptr(&self) -> *mut Context<A> {
        self.ctx.get()
    }

    /// The actor loop's state. Consumer only (and the spawner, before the task exists).
    pub(crate) fn run_ptr(&self) -> *mut RunState {
        self.run.get()
    }

    /// The actor state (initialised while the context's `LIVE` flag is set). Consumer
    /// only, while no handler borrows it.
    pub(crate) fn actor_ptr(&self) -> *mut A {
        self.actor.get().cast()
    }

    /// Pops the oldest queued message (counting it as popped); `dropped` accumulates
    /// `DropOldest` discards.
    ///
    /// # Safety
    /// Consumer only.
    pub(crate) unsafe fn pop(&self, dropped: &mut u64) -> Next<A> {
        match &self.bounded {
            Some(b) => {
                let (e, d) = b.pop();
                *dropped += d;
                match e {
                    Some(e) => {
                        self.mailbox.count_pop();
                        Next::Env(e)
                    }
                    None => Next::Empty,
                }
            }
            // SAFETY: the caller is the consumer.
            None => match unsafe { self.mailbox.pop() } {
                // SAFETY: every link in the queue is an `Envelope<A>` given up by `offer`.
                Pop::Item(link) => Next::Env(unsafe { Envelope::from_link(link) }),
                Pop::Busy => Next::Busy,
                Pop::Empty => Next::Empty,
            },
        }
    }

    /// The trace id of the message queued last in the unbounded mailbox (0:
    /// none, or the mailbox is bounded): the turns of a trace up to that message
    /// may share a clock reading taken after this call (`diag/trace/chain.rs`).
    #[inline]
    pub(crate) fn trace_mark(&self) -> usize {
        match &self.bounded {
            Some(_) => 0,
            None => self.mailbox.last(),
        }
    }

    /// Consumer: retires the popped messages.
    pub(crate) fn retire(&self) -> Retired {
        self.mailbox.retire()
    }

    /// Consumer, stopping: closes the mailbox and returns what was queued.
    pub(crate) fn close_mailbox(&self) -> Vec<Envelope<A>> {
        if let Some(b) = &self.bounded {
            self.mailbox.close_state();
            return b.close().into();
        }
        let mut out = Vec::new();
        // SAFETY: the consumer is the caller; every link is an `Envelope<A>`.
        unsafe {
            self.mailbox
                .close(|link| out.push(Envelope::from_link(link)))
        };
        out
    }
}

impl<A: Actor> Drop for Cell<A> {
    fn drop(&mut self) {
        // An actor that never ran (its spawn was refused) still holds its state.
        if self.ctx.get_mut().take_live() {
            // SAFETY: `LIVE` says the state is initialised; it is dropped once.
            unsafe { ptr::drop_in_place(self.actor.get_mut().as_mut_ptr()) };
        }
        // Normally empty (the stopping actor drained it); nobody else can push now.
        // SAFETY: exclusive access; every link is an `Envelope<A>`.
        unsafe {
            self.mailbox
                .drain(|link| drop(Envelope::<A>::from_link(link)))
        };
    }
}

impl<A: Actor> Signals for Cell<A> {
    fn id(&self) -> ActorId {
        self.id
    }

    fn request_stop(&self, reason: StopReason) {
        Cell::request_stop(self, reason);
    }

    fn exit_signal(&self, from: ActorId, reason: &StopReason) {
        let mut g = lock(&self.aux().inner);
        if g.finished.is_some() {
            return;
        }
        g.links.retain(|l| l.id() != from);
        match g.trap {
            Some(make) => {
                g.lane.push_back(make(Down {
                    id: from,
                    reason: reason.clone(),
                    link: true,
                }));
                drop(g);
                self.signal(false);
            }
            None => {
                g.request_stop(StopReason::Linked {
                    id: from,
                    reason: Box::new(reason.clone()),
                });
                drop(g);
                self.signal(true);
            }
        }
    }

    fn watch(&self, monitor: u64, sink: Arc<dyn DownSink>) {
        let mut g = lock(&self.aux().inner);
        match &g.finished {
            Some(reason) => {
                let reason = reason.clone();
                drop(g);
                sink.down(Down {
                    id: self.id,
                    reason,
                    link: false,
                });
            }
            None => g.watchers.push((monitor, sink)),
        }
    }

    fn unwatch(&self, monitor: u64) {
        if let Some(aux) = self.aux_if_any() {
            lock(&aux.inner).watchers.retain(|(m, _)| *m != monitor);
        }
    }

    fn link(&self, other: Arc<dyn Signals>) -> Option<StopReason> {
        let mut g = lock(&self.aux().inner);
        if let Some(reason) = &g.finished {
            return Some(reason.clone());
        }
        if !g.links.iter().any(|l| l.id() == other.id()) {
            g.links.push(other);
        }
        None
    }

    fn unlink(&self, other: ActorId) {
        if let Some(aux) = self.aux_if_any() {
            lock(&aux.inner).links.retain(|l| l.id() != other);
        }
    }
}

impl<A: Handler<Down> + Actor> DownSink for Cell<A> {
    fn down(&self, down: Down) {
        // A stopped watcher no longer cares.
        let _ = self.push_priority(Envelope::new(down));
    }
}

/// Loom models of the cell's two hand-written protocols, on their real code:
/// the aux state installed once, and the address count that reaches zero
/// once.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::{Addrs, AuxPtr};
    use crate::actor::Actor;
    use crate::loom::{lock, thread, Arc, AtomicPtr, AtomicUsize};

    struct Idle;
    impl Actor for Idle {}

    /// Two threads wanting the aux state at once: one allocation is
    /// installed, the other freed, and both write into the installed one.
    #[test]
    fn the_aux_state_is_installed_once() {
        loom::model(|| {
            let aux = Arc::new(AuxPtr::<Idle>(AtomicPtr::new(std::ptr::null_mut())));
            let other = {
                let aux = Arc::clone(&aux);
                thread::spawn(move || {
                    let a = aux.get_or_init();
                    lock(&a.inner).stop_interrupts = true;
                    a as *const _ as usize
                })
            };
            let mine = aux.get_or_init();
            lock(&mine.inner).stop_complete = true;
            let theirs = other.join().unwrap();
            assert_eq!(
                mine as *const _ as usize, theirs,
                "two aux states installed"
            );
            let g = lock(&aux.get().unwrap().inner);
            assert!(
                g.stop_interrupts && g.stop_complete,
                "a write went elsewhere"
            );
        });
    }

    /// The spawner's address is dropped while another thread makes one from
    /// a registry entry (`try_add`) and drops it: the count reaches zero
    /// exactly once, and an address refused at zero is never made.
    #[test]
    fn the_last_address_is_seen_once() {
        loom::model(|| {
            let addrs = Arc::new(Addrs(AtomicUsize::new(1)));
            let other = {
                let addrs = Arc::clone(&addrs);
                thread::spawn(move || {
                    if addrs.try_add() {
                        usize::from(addrs.drop_one())
                    } else {
                        0
                    }
                })
            };
            let last_here = usize::from(addrs.drop_one());
            let last_there = other.join().unwrap();
            assert_eq!(
                last_here + last_there,
                1,
                "the last address went twice or never"
            );
            assert_eq!(addrs.count(), 0);
            assert!(
                !addrs.try_add(),
                "an address was made after the last one went"
            );
        });
    }
}
