//! [`Rmi`]: one location's RMI endpoint, its API — registration,
//! `async_rmi`, `sync_rmi`, `broadcast_rmi`, `reduce_rmi`, `poll`, `wait`,
//! `fence` — and what it owns ([`Inner`]). How requests travel is in
//! `wire.rs`, whether they may run now in `admission.rs`, how they run in
//! `execute.rs`.

use std::any::TypeId;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::admission::{Deferred, Entry, MethodFrame, Methods, Slot};
use super::request::{invoke, Chain, MethodReply, Rep, Request};
use super::wire::Open;
use super::{Handle, HandlerContext, Local, RmiError, DEFAULT_MAX_NESTING, DEFAULT_POLL_EVERY};
use crate::call::{Conversation, FrameBuf};
use crate::loom::{AtomicUsize, Ordering};
use crate::msg::{Handler, Object, Remote};
use crate::runtime::{CellOwner, TaskCell};
use crate::world;

/// The automatic poll drives the world's transport every this many times.
const AUTO_PROGRESS_EVERY: usize = 4;

/// On an oversubscribed host the automatic poll drives the transport at most
/// this often: there a progress call that finds nothing gives the core away
/// (Open MPI yields when idle once a host is oversubscribed), and a location
/// that is busy issuing requests would lose its core for a time slice each
/// time, hundreds of times per fence phase.
const OVERSUBSCRIBED_PROGRESS_EVERY: Duration = Duration::from_millis(1);

#[derive(Default)]
pub(super) struct State {
    /// The methods executing here, innermost last.
    pub(super) stack: Vec<MethodFrame>,
    pub(super) objects: Vec<Slot>,
    pub(super) deferred: VecDeque<Deferred>,
    /// Requests this location sent to itself: they bypass the world and run
    /// before anything else is received, in issue order.
    pub(super) own: VecDeque<Request>,
    /// Runs of statements being built, by destination (see `wire.rs`), and
    /// the destinations that have one.
    pub(super) out: Vec<Option<Open>>,
    pub(super) dirty: Vec<usize>,
    /// Emptied frame buffers of runs sent to other ranks, for the next runs.
    pub(super) frames: Vec<FrameBuf>,
    /// Cancelled scopes dropped before they returned, whose work is still
    /// to be answered (see `scope/`).
    pub(super) detached: Vec<super::scope::Detached>,
    /// When the automatic poll last drove the transport (oversubscribed
    /// hosts only, see [`OVERSUBSCRIBED_PROGRESS_EVERY`]).
    driven: Option<Instant>,
}

/// Everything one location's RMI endpoint owns; shared (through `Arc`) by the
/// SPMD body's [`Rmi`] and the contexts of the methods it executes, all of
/// which run in the location's one task.
pub(crate) struct Inner {
    /// The location's end of the request/reply core, over its world location:
    /// correlation ids, the questions waiting for answers, frames.
    pub(super) conv: Conversation<world::Location>,
    /// Owned by the location's task, the one that executes its requests
    /// ([`TaskCell`]: no lock). Used through [`Rmi::with_state`], never
    /// across an `.await` or a call into user code.
    pub(super) state: Arc<TaskCell<State>>,
    /// Methods of this location on the call stack now.
    pub(super) depth: AtomicUsize,
    pub(super) max_depth: AtomicUsize,
    /// Poll every n-th communication call (0: never).
    poll_every: AtomicUsize,
    calls: AtomicUsize,
    /// Automatic polls so far.
    autos: AtomicUsize,
    /// Statements per destination combined into one message.
    aggregation: AtomicUsize,
    /// Requests executed here so far, and how many of them the last `wait`
    /// or `fence` had seen (ARMI's `rmi_wait` semantics).
    pub(super) executed: AtomicUsize,
    waited: AtomicUsize,
    /// This location's rank, and the locations per rank.
    pub(super) rank: usize,
    pub(super) per_rank: usize,
    /// The host runs more ranks than it has cores (`WorldConfig::oversubscribed`).
    oversubscribed: bool,
}

impl world::RankDeath for Inner {
    /// Questions waiting on a location of the dead rank fail (a `sync_rmi`
    /// waiting for one panics naming the location and its rank).
    fn rank_died(&self, rank: usize) {
        let per_rank = self.per_rank;
        self.conv.rank_died(rank, |p| p.rank(per_rank));
    }
}

/// One location's RMI endpoint (ARMI's location), on a world
/// [`Location`](world::Location): the SPMD body gets one, and so does every
/// method executed here (as its [`Object::Context`]).
///
/// Communication calls take `&self`; [`local`](Self::local) — exclusive access
/// to this location's representative of a registered object — takes
/// `&mut self`, so no call that executes incoming requests can run while the
/// representative is borrowed (a compile-time rule):
///
/// A location's endpoint belongs to its task (the one [`run`](super::run)
/// makes for it): its queues and tables are single-owner, with no lock. A
/// `Rmi` (or a method's context) used from another task or thread is a
/// clear panic naming the location, never a data race.
///
/// ```compile_fail
/// # use tutti::rmi;
/// # struct Counter(u64);
/// # impl tutti::msg::Object for Counter { type Context = rmi::Rmi; }
/// # let world = tutti::world::World::builder().locations(1).workers(1).build().unwrap();
/// rmi::run(&world, |mut loc| async move {
///     let h = loc.register(Counter(0)).await.unwrap();
///     let mine = loc.local(&h);
///     loc.poll().await; // error: `loc` is mutably borrowed by `mine`
///     mine.0
/// });
/// ```
pub struct Rmi {
    pub(super) inner: Arc<Inner>,
}

impl fmt::Debug for Rmi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("rmi::Rmi")
            .field("id", &self.id())
            .field("depth", &self.depth())
            .finish()
    }
}

impl Rmi {
    /// The endpoint of `world`'s location, and the token that makes its
    /// task (see [`run`](super::run)).
    pub(crate) fn new(world: world::Location) -> (Rmi, CellOwner) {
        let (rank, per_rank) = (world.rank(), world.world().locations_per_rank());
        let aggregation = super::default_aggregation(world.world().config());
        let oversubscribed = world.world().config().oversubscribed();
        let (state, owner) = TaskCell::new(State::default());
        let location = Rmi {
            inner: Arc::new(Inner {
                rank,
                per_rank,
                oversubscribed,
                conv: Conversation::new(world),
                state,
                depth: AtomicUsize::new(0),
                max_depth: AtomicUsize::new(DEFAULT_MAX_NESTING),
                poll_every: AtomicUsize::new(DEFAULT_POLL_EVERY),
                calls: AtomicUsize::new(0),
                autos: AtomicUsize::new(0),
                aggregation: AtomicUsize::new(aggregation),
                executed: AtomicUsize::new(0),
                waited: AtomicUsize::new(0),
            }),
        };
        let watcher: Arc<dyn world::RankDeath> = Arc::clone(&location.inner) as _;
        location
            .inner
            .conv
            .link()
            .watch_deaths(Arc::downgrade(&watcher));
        (location, owner)
    }

    /// The location's end of the request/reply core.
    pub(super) fn conv(&self) -> &Conversation<world::Location> {
        &self.inner.conv
    }

    /// `f` on the location's state (which it cannot keep: no borrow spans an
    /// `.await`).
    ///
    /// # Panics
    /// Outside the location's task, and if `f` reaches the state again.
    #[inline]
    pub(super) fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        match self.inner.state.with(f) {
            Some(r) => r,
            None => self.not_owner(),
        }
    }

    #[cold]
    #[track_caller]
    fn not_owner(&self) -> ! {
        panic!(
            "tutti::rmi: the endpoint of location {} was used outside its location's task \
             (an rmi::Rmi, or a method's context, taken to another task or thread)",
            self.id()
        )
    }

    /// Another handle on the same endpoint (for a method's context, and for
    /// the closing fence of [`run`](super::run)).
    pub(crate) fn share(&self) -> Rmi {
        Rmi {
            inner: Arc::clone(&self.inner),
        }
    }

    /// This location's id (`0..count()`).
    pub fn id(&self) -> usize {
        self.world().id().index()
    }

    /// The number of locations.
    pub fn count(&self) -> usize {
        self.world().world().locations()
    }

    /// The world location underneath (aggregation settings, plain messages).
    pub fn world(&self) -> &world::Location {
        self.inner.conv.link()
    }

    /// How many methods of this location are executing now (0 in the SPMD body
    /// outside any method).
    pub fn depth(&self) -> usize {
        self.inner.depth.load(Ordering::Relaxed)
    }

    /// Sets the maximum nesting depth: how many methods may be executing on this
    /// location at once, each waiting in a `sync_rmi` (or `poll`/`wait`) for the
    /// next. Executing a request beyond it is an error (the location panics with
    /// a message naming the method). Default [`DEFAULT_MAX_NESTING`].
    ///
    /// # Panics
    /// If `depth` is 0.
    pub fn set_max_nesting(&self, depth: usize) {
        assert!(
            depth > 0,
            "tutti::rmi: the maximum nesting depth must be at least 1"
        );
        self.inner.max_depth.store(depth, Ordering::Relaxed);
    }

    /// Executes incoming requests automatically every `n`-th communication call
    /// (`async_rmi`, `sync_rmi`, `broadcast_rmi`); 0 turns it off. Default
    /// [`DEFAULT_POLL_EVERY`]. Unlike [`poll`](Self::poll), the automatic
    /// poll leaves the runs of statements being built for other locations to
    /// fill up to the aggregation factor: a loop that only issues `async_rmi`s
    /// and waits for their effect must call `poll`, `wait` or `fence` (as in
    /// ARMI, where aggregation buffers go when full or on those calls).
    pub fn set_poll_every(&self, n: usize) {
        self.inner.poll_every.store(n, Ordering::Relaxed);
    }

    /// Sets how many statements (`async_rmi`, `broadcast_rmi`) to one
    /// destination are combined into one message (ARMI's aggregation factor;
    /// 1 sends each at once), and the world location's factor with it. What
    /// is buffered is sent first. Default: the world's factor, except
    /// in-process, where the world's default is none and RMI's is
    /// [`DEFAULT_AGGREGATION`](super::DEFAULT_AGGREGATION). Buffered statements go whenever this location
    /// receives, waits, polls or takes part in a collective.
    ///
    /// # Panics
    /// If `factor` is 0.
    pub fn set_aggregation(&self, factor: usize) {
        assert!(
            factor > 0,
            "tutti::rmi: the aggregation factor must be at least 1"
        );
        self.flush_out();
        self.inner.aggregation.store(factor, Ordering::Relaxed);
        self.world().set_aggregation(factor);
    }

    /// This location's aggregation factor (see
    /// [`set_aggregation`](Self::set_aggregation)).
    #[inline]
    pub fn aggregation(&self) -> usize {
        self.inner.aggregation.load(Ordering::Relaxed)
    }

    /// Registers `obj` as this location's representative of a new distributed
    /// object (collective: every location calls it, in the same order, with the
    /// same type). Every location gets the same handle. Incoming requests keep
    /// executing while the locations agree.
    ///
    /// # Errors
    /// [`RmiError::RegistrationMismatch`] on every location if some registered
    /// a different type here.
    ///
    /// # Panics
    /// Inside a method (a collective cannot be nested in a request).
    pub async fn register<T>(&self, obj: T) -> Result<Handle<T>, RmiError>
    where
        T: Object,
        T::Context: HandlerContext,
    {
        self.collective_only("register");
        let name = std::any::type_name::<T>();
        let methods = Arc::new(Methods::of::<T>());
        let digest = methods.digest();
        let index = self.with_state(|st| {
            st.objects.push(Slot {
                entry: Entry::Here(Box::new(obj)),
                type_id: TypeId::of::<T>(),
                type_name: name,
                methods,
            });
            st.objects.len() - 1
        });
        let i = index as u64;
        let mine = (
            (i, i),
            (name.to_string(), name.to_string()),
            (digest, digest),
        );
        let seen = self
            .serve_until(self.world().all_reduce(mine, |a, b| {
                (
                    (a.0 .0.min(b.0 .0), a.0 .1.max(b.0 .1)),
                    (a.1 .0.min(b.1 .0), a.1 .1.max(b.1 .1)),
                    (a.2 .0.min(b.2 .0), a.2 .1.max(b.2 .1)),
                )
            }))
            .await;
        let ((low, high), (first, second), (d0, d1)) = seen;
        if low != high || first != second {
            self.with_state(|st| st.objects[index].entry = Entry::Gone);
            return Err(RmiError::RegistrationMismatch {
                index: low,
                first,
                second,
            });
        }
        if d0 != d1 {
            self.with_state(|st| st.objects[index].entry = Entry::Gone);
            return Err(RmiError::MethodsMismatch {
                index: low,
                object: first,
            });
        }
        Ok(Handle::new(index as u32))
    }

    /// Exclusive access to this location's representative of `h`, until the
    /// guard is dropped. Borrowing `self` mutably, it rules out every call that
    /// could execute a request meanwhile.
    ///
    /// # Panics
    /// If `h` was unregistered, or a method of the object is executing on this
    /// location (a method reaches its own representative through `&mut self`).
    pub fn local<T: Send + 'static>(&mut self, h: &Handle<T>) -> Local<'_, T> {
        let rep = self.take(h.id(), "local");
        let Ok(obj) = rep.downcast::<T>() else {
            unreachable!("a handle's type is its slot's type")
        };
        Local::new(self, h.id(), obj)
    }

    /// Puts a representative back (from a [`Local`] guard).
    pub(crate) fn put_back(&self, id: u32, rep: Rep) {
        self.with_state(|st| st.objects[id as usize].entry = Entry::Here(rep));
    }

    /// Replaces this location's representative of `h` (ARMI's `update`: the
    /// object moved) and returns the previous one. Local.
    ///
    /// # Panics
    /// As [`local`](Self::local).
    pub fn update<T: 'static + Send>(&mut self, h: &Handle<T>, obj: T) -> T {
        let old = std::mem::replace(&mut *self.local(h), obj);
        old
    }

    /// Removes this location's representative of `h` and returns it. Call it on
    /// every location after a [`fence`](Self::fence), when no request for the
    /// object is in flight: a request that arrives for an unregistered object is
    /// an error naming it (the location panics).
    ///
    /// # Panics
    /// As [`local`](Self::local).
    pub fn unregister<T: Send + 'static>(&mut self, h: Handle<T>) -> T {
        let rep = self.take(h.id(), "unregister");
        self.with_state(|st| st.objects[h.id() as usize].entry = Entry::Gone);
        let Ok(obj) = rep.downcast::<T>() else {
            unreachable!("a handle's type is its slot's type")
        };
        *obj
    }

    /// Sends `msg` to `dest`'s representative of `h`, to be executed there (a
    /// statement: returns at once; ARMI's `async_rmi`). Requests from one
    /// location to another execute in the order they were issued. Within a rank
    /// the message moves (it is not copied or serialized); to a location of
    /// another rank it is serialized through the `msg` codec. Every `n`-th
    /// communication call also executes what has arrived here
    /// ([`set_poll_every`](Self::set_poll_every)).
    ///
    /// # Panics
    /// If `dest` is not a location of the world; if `dest` is another location
    /// and `T` does not accept `M` from other locations (its
    /// [`Object::remote`] table does not list it); if `M` cannot be serialized.
    pub async fn async_rmi<T, M>(&self, dest: usize, h: &Handle<T>, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
    {
        self.statement::<T, M>(dest, h.id(), msg);
        if self.poll_due() {
            Box::pin(self.poll_incoming(self.auto_drive())).await;
        }
    }

    /// Calls `msg` on `dest`'s representative of `h` and waits for its reply (a
    /// question; ARMI's `sync_rmi`). While it waits, this location keeps
    /// executing incoming requests (nested RMI) up to the maximum nesting depth.
    ///
    /// # Panics
    /// As [`async_rmi`](Self::async_rmi); if executing a request while waiting
    /// would exceed the maximum nesting depth. A reply from another rank that
    /// does not decode takes the job down, naming the message type and cause.
    pub async fn sync_rmi<T, M>(&self, dest: usize, h: &Handle<T>, msg: M) -> M::Reply
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
    {
        let chain = self.waiting_chain();
        let corr = self.question::<T, M>(dest, h.id(), chain, msg);
        self.counted_call().await;
        loop {
            if let Some(r) = self.answer_to::<M>(dest, corr) {
                self.resume();
                return r;
            }
            if self.run_own().await > 0 {
                continue;
            }
            self.flush_out();
            // The answer comes as a delivery, or the question fails because
            // the rank it went to died (`RankDeath`): then `answer_to` panics.
            let mut recv = self.world().recv_claimed(super::execute::claims);
            let d = std::future::poll_fn(|cx| {
                if self.conv().pending().watch(corr, cx) {
                    return std::task::Poll::Ready(None);
                }
                std::future::Future::poll(std::pin::Pin::new(&mut recv), cx).map(Some)
            })
            .await;
            if let Some(d) = d {
                self.handle(d).await;
            }
        }
    }

    /// For a question issued by a method: the representative it holds and
    /// the chain waiting for it (the deadlock check, see `admission.rs`).
    pub(super) fn waiting_chain(&self) -> Option<Arc<Chain>> {
        self.with_state(|st| {
            st.stack.last().map(|f| {
                Arc::new(Chain {
                    location: self.id(),
                    object: f.object,
                    parent: f.waiting.clone(),
                })
            })
        })
    }

    /// Sends `msg` (cloned) to every location's representative of `h`,
    /// including this one's (ARMI's `broadcast_rmi`).
    ///
    /// # Panics
    /// As [`async_rmi`](Self::async_rmi).
    pub async fn broadcast_rmi<T, M>(&self, h: &Handle<T>, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote + Clone,
    {
        for dest in 0..self.count() {
            self.statement::<T, M>(dest, h.id(), msg.clone());
        }
        self.counted_call().await;
    }

    /// Collective: every location calls `msg` on its own representative of `h`
    /// and the replies are combined with `op` (associative, applied in location
    /// order, along the world's tree); every location gets the result (ARMI's
    /// `reduce_rmi`). Incoming requests keep executing while it waits.
    ///
    /// # Panics
    /// Inside a method.
    pub async fn reduce_rmi<T, M, F>(&self, h: &Handle<T>, msg: M, op: F) -> M::Reply
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
        M::Reply: Clone,
        F: Fn(M::Reply, M::Reply) -> M::Reply + Send + Sync + 'static,
    {
        self.collective_only("reduce_rmi");
        let rep = self.take(h.id(), "reduce_rmi");
        let req = Request {
            object: h.id(),
            corr: 0,
            call: invoke::<T, M>(msg),
            chain: None,
        };
        let a = self.with_state(|st| self.enter(st, req, rep));
        let (reply, deferred) = self.run_entered(a.object, a.call, a.rep).await;
        if deferred {
            self.drain_deferred().await;
        }
        let MethodReply::Value(reply) = reply else {
            unreachable!("a method called here replies with a value")
        };
        let Ok(mine) = reply.downcast::<M::Reply>() else {
            unreachable!("the method's reply has its message's reply type")
        };
        self.serve_until(self.world().all_reduce(*mine, op)).await
    }

    /// Executes the requests that have arrived (flushing this location's
    /// buffers first) and returns how many messages it handled (ARMI's
    /// `rmi_poll`).
    pub async fn poll(&self) -> usize {
        self.flush_out();
        let n = self.poll_incoming(true).await;
        self.flush_out();
        n
    }

    /// Executes what has arrived and this location's own requests (the
    /// automatic poll: runs to other locations being built stay, so that
    /// they fill up to the aggregation factor); `drive`: also flush the world
    /// location and drive its transport (the MPI engine's progress costs
    /// microseconds: the automatic poll does it every
    /// [`AUTO_PROGRESS_EVERY`]-th time only).
    async fn poll_incoming(&self, drive: bool) -> usize {
        let mut n = self.run_own().await;
        if drive {
            self.world().poll();
        }
        while let Some(d) = self.world().try_recv_claimed(super::execute::claims) {
            self.handle(d).await;
            n += 1 + self.run_own().await;
        }
        self.resume();
        n
    }

    /// Waits for the next request executed here since the previous `wait` or
    /// [`fence`](Self::fence), executing what arrives meanwhile (ARMI's
    /// `rmi_wait`). If a request has already arrived and run since then — in
    /// a [`poll`](Self::poll), an automatic poll of a communication call, a
    /// `sync_rmi` or a barrier — it returns at once. So a program that checks
    /// its state and then waits cannot miss a request that ran in between:
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
    /// # use tutti::rmi;
    /// # #[derive(Serialize, Deserialize)] struct Add(u64);
    /// # impl Message for Add { type Reply = (); }
    /// # impl Remote for Add { const NAME: &'static str = "doc.wait.Add"; }
    /// # struct Counter(u64);
    /// # impl Object for Counter {
    /// #     type Context = ();
    /// #     fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> { t.register::<Add>()?; Ok(()) }
    /// # }
    /// # impl Handler<Add> for Counter { async fn handle(&mut self, m: Add, _: &mut ()) { self.0 += m.0; } }
    /// let world = tutti::world::World::builder().locations(2).workers(1).build().unwrap();
    /// rmi::run(&world, |mut loc| async move {
    ///     let h = loc.register(Counter(0)).await.unwrap();
    ///     if loc.id() == 1 {
    ///         loc.async_rmi(0, &h, Add(1)).await;
    ///     } else {
    ///         while loc.local(&h).0 == 0 {
    ///             loc.poll().await; // runs the request…
    ///         }
    ///         loc.wait().await; // …so this returns at once
    ///     }
    /// });
    /// ```
    pub async fn wait(&self) {
        loop {
            let executed = self.inner.executed.load(Ordering::Relaxed);
            if executed != self.inner.waited.load(Ordering::Relaxed) {
                self.inner.waited.store(executed, Ordering::Relaxed);
                self.resume();
                return;
            }
            if self.run_own().await > 0 {
                continue;
            }
            self.flush_out();
            let d = self.world().recv_claimed(super::execute::claims).await;
            self.handle(d).await;
        }
    }

    /// Collective: returns on every location once all have called it and every
    /// RMI issued anywhere — including those issued by methods, to any depth,
    /// and those still in aggregation buffers — has executed (ARMI's
    /// `rmi_fence`). Executes incoming requests while it waits. It also
    /// separates phases: a request issued after some location's fence returned
    /// executes on another location only after that location's fence returned.
    ///
    /// # Panics
    /// Inside a method.
    pub async fn fence(&self) {
        self.collective_only("fence");
        self.drain_deferred().await;
        // Requests to itself are not counted by the world: each contribution
        // to a quiescence wave (inside `recv_until_quiet`) comes right after
        // they have all run, so what they sent is counted.
        // So are the runs this location has built: they are sent before.
        self.run_own().await;
        // A detached scope whose last answer has come is forgotten here at
        // the latest: its notices go before quiescence, so every rank has
        // forgotten it when the fence returns.
        self.sweep_detached();
        self.flush_out();
        // The world's detection also separates phases: a request issued after
        // another location's fence returned is handed out here only after
        // this fence returns (see the `world` module's quiescence section).
        while let Some(d) = self
            .world()
            .recv_until_quiet_claimed(super::execute::claims)
            .await
        {
            self.handle(d).await;
            self.run_own().await;
            self.sweep_detached();
            self.flush_out();
        }
        let executed = self.inner.executed.load(Ordering::Relaxed);
        self.inner.waited.store(executed, Ordering::Relaxed);
        self.resume();
    }

    /// A barrier over all locations that keeps executing incoming requests.
    pub async fn barrier(&self) {
        self.collective_only("barrier");
        self.serve_until(self.world().barrier()).await
    }

    /// The body goes on after an RMI call: a location it woke meanwhile (a
    /// peer that waited in the same collective, or for its requests) must not
    /// wait for this worker, which this location keeps busy, while other
    /// workers idle — it is handed to them (ARMI's locations each have their
    /// own thread; here they share the workers, and meeting at a collective
    /// must not pin two of them to one).
    #[inline]
    pub(super) fn resume(&self) {
        crate::runtime::share_woken();
    }

    #[track_caller]
    fn collective_only(&self, what: &str) {
        let depth = self.depth();
        if depth > 0 {
            panic!(
                "tutti::rmi: {what} is collective and cannot be called inside a method \
                 (location {} is {depth} method(s) deep)",
                self.id()
            );
        }
    }

    /// Counts a communication call and polls on every n-th.
    pub(super) async fn counted_call(&self) {
        if self.poll_due() {
            // Boxed: keeps the futures of the communication calls small (this
            // runs on every n-th call only).
            Box::pin(self.poll_incoming(self.auto_drive())).await;
        }
    }

    /// Whether this automatic poll drives the transport: every
    /// [`AUTO_PROGRESS_EVERY`]-th, and on an oversubscribed host at most every
    /// [`OVERSUBSCRIBED_PROGRESS_EVERY`].
    fn auto_drive(&self) -> bool {
        let n = self.inner.autos.load(Ordering::Relaxed) + 1;
        self.inner.autos.store(n, Ordering::Relaxed);
        if n % AUTO_PROGRESS_EVERY != 0 {
            return false;
        }
        if !self.inner.oversubscribed {
            return true;
        }
        let now = Instant::now();
        self.with_state(|st| {
            if st
                .driven
                .is_some_and(|t| now.duration_since(t) < OVERSUBSCRIBED_PROGRESS_EVERY)
            {
                return false;
            }
            st.driven = Some(now);
            true
        })
    }

    /// Counts a communication call; whether it is the n-th.
    #[inline]
    fn poll_due(&self) -> bool {
        let every = self.inner.poll_every.load(Ordering::Relaxed);
        if every == 0 {
            return false;
        }
        let n = self.inner.calls.load(Ordering::Relaxed) + 1;
        if n >= every {
            self.inner.calls.store(0, Ordering::Relaxed);
            true
        } else {
            self.inner.calls.store(n, Ordering::Relaxed);
            false
        }
    }
}
