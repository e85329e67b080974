//! [`Location`]: one location's RMI endpoint — registration, `async_rmi`,
//! `sync_rmi`, `broadcast_rmi`, `reduce_rmi`, `poll`, `wait`, `fence`.

use std::any::{Any, TypeId};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;

use super::request::{
    Answer, Call, Chain, Decoded, Encoded, Invoke, Outcome, Rep, Request, Response,
};
use super::{Handle, HandlerContext, Local, RmiError, DEFAULT_MAX_NESTING, DEFAULT_POLL_EVERY};
use crate::loom::{lock, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::msg::codec::{self, Frame as CodecFrame, FrameKind, Header};
use crate::msg::{Dispatch, DispatchError, Handler, MsgId, Object, Remote, Spare};
use crate::world::{self, Delivery, LocationId};

/// Decodes a request frame from another rank into a call on the object type.
type DecodeFn = dyn Fn(&CodecFrame<'_>) -> Result<Box<dyn Call>, DispatchError> + Send + Sync;

/// What an object type accepts from other locations (its
/// [`Object::remote`] table), and how to decode it.
struct Methods {
    /// Sorted.
    accepts: Vec<MsgId>,
    decode: Box<DecodeFn>,
}

impl Methods {
    fn of<T>() -> Methods
    where
        T: Object,
        T::Context: HandlerContext,
    {
        let mut table = Dispatch::<T>::new();
        if let Err(e) = T::remote(&mut table) {
            panic!(
                "tutti::rmi: register: the message types of `{}` (its Object::remote): {e}",
                std::any::type_name::<T>()
            );
        }
        let accepts: Vec<MsgId> = table.message_types().map(|(id, _)| id).collect();
        let decode = move |frame: &CodecFrame<'_>| -> Result<Box<dyn Call>, DispatchError> {
            let incoming = table.incoming(frame)?;
            let name = table
                .message_types()
                .find(|&(id, _)| id == frame.header().msg)
                .map_or("?", |(_, name)| name);
            Ok(Box::new(Decoded::<T> {
                envelope: incoming.envelope,
                reply: incoming.reply,
                name,
            }) as Box<dyn Call>)
        };
        Methods {
            accepts,
            decode: Box::new(decode),
        }
    }

    /// A digest of the accepted ids, compared between locations at registration.
    fn digest(&self) -> u64 {
        self.accepts
            .iter()
            .fold(self.accepts.len() as u64, |h, id| {
                (h.rotate_left(23) ^ id.get()).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            })
    }
}

/// A representative's place in its location's table.
enum Entry {
    /// Ready for a method or for [`Location::local`].
    Here(Rep),
    /// Taken out by a method that has not returned (or by a [`Local`] guard).
    Busy,
    /// Unregistered.
    Gone,
}

struct Slot {
    entry: Entry,
    type_id: TypeId,
    type_name: &'static str,
    methods: Arc<Methods>,
}

/// A request that arrived while its object was busy, or behind one from the
/// same sender that did (requests from one sender execute in issue order).
struct Deferred {
    from: LocationId,
    req: Request,
}

/// A request admitted for execution: its representative is taken out of the
/// table and its frame is on the stack (see [`Location::enter`]).
struct Admitted {
    object: u32,
    corr: u64,
    call: Box<dyn Call>,
    rep: Rep,
}

/// A message from another rank, decoded.
enum FromRank {
    Request(Request),
    Reply(u64, Box<dyn Any + Send>),
}

/// A method executing on this location: the representative it holds, and
/// who waits for it (its request's chain, for a `sync_rmi`).
struct Frame {
    object: u32,
    waiting: Option<Arc<Chain>>,
}

#[derive(Default)]
struct State {
    /// The methods executing here, innermost last.
    stack: Vec<Frame>,
    objects: Vec<Slot>,
    deferred: VecDeque<Deferred>,
    /// Requests this location sent to itself: they bypass the world and run
    /// before anything else is received, in issue order.
    own: VecDeque<Request>,
    /// Outstanding `sync_rmi`s: `None` until the reply arrives.
    replies: HashMap<u64, Option<Box<dyn Any + Send>>>,
}

/// Everything one location's RMI endpoint owns; shared (through `Arc`) by the
/// SPMD body's [`Location`] and the contexts of the methods it executes, all of
/// which run in the location's one task.
pub(crate) struct Inner {
    world: world::Location,
    /// Never held across an `.await`.
    state: Mutex<State>,
    /// Methods of this location on the call stack now.
    depth: AtomicUsize,
    max_depth: AtomicUsize,
    /// Poll every n-th communication call (0: never).
    poll_every: AtomicUsize,
    calls: AtomicUsize,
    next_corr: AtomicU64,
    /// This location's rank, and the locations per rank.
    rank: usize,
    per_rank: usize,
    /// Where requests and replies to other ranks are encoded.
    scratch: Mutex<Vec<u8>>,
}

/// One location's RMI endpoint (ARMI's location): the SPMD body gets one, and so
/// does every method executed here (as its [`Object::Context`]).
///
/// Communication calls take `&self`; [`local`](Self::local) — exclusive access
/// to this location's representative of a registered object — takes
/// `&mut self`, so no call that executes incoming requests can run while the
/// representative is borrowed (a compile-time rule):
///
/// ```compile_fail
/// # use tutti::rmi;
/// # struct Counter(u64);
/// # impl tutti::msg::Object for Counter { type Context = rmi::Location; }
/// # let world = tutti::world::World::builder().locations(1).workers(1).build().unwrap();
/// rmi::run(&world, |mut loc| async move {
///     let h = loc.register(Counter(0)).await.unwrap();
///     let mine = loc.local(&h);
///     loc.poll().await; // error: `loc` is mutably borrowed by `mine`
///     mine.0
/// });
/// ```
pub struct Location {
    inner: Arc<Inner>,
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("rmi::Location")
            .field("id", &self.id())
            .field("depth", &self.depth())
            .finish()
    }
}

impl Location {
    pub(crate) fn new(world: world::Location) -> Location {
        let (rank, per_rank) = (world.rank(), world.world().locations_per_rank());
        Location {
            inner: Arc::new(Inner {
                rank,
                per_rank,
                scratch: Mutex::new(Vec::new()),
                world,
                state: Mutex::new(State::default()),
                depth: AtomicUsize::new(0),
                max_depth: AtomicUsize::new(DEFAULT_MAX_NESTING),
                poll_every: AtomicUsize::new(DEFAULT_POLL_EVERY),
                calls: AtomicUsize::new(0),
                next_corr: AtomicU64::new(1),
            }),
        }
    }

    /// Another handle on the same endpoint (for a method's context, and for
    /// the closing fence of [`run`](super::run)).
    pub(crate) fn share(&self) -> Location {
        Location {
            inner: Arc::clone(&self.inner),
        }
    }

    /// This location's id (`0..count()`).
    pub fn id(&self) -> usize {
        self.inner.world.id().index()
    }

    /// The number of locations.
    pub fn count(&self) -> usize {
        self.inner.world.world().locations()
    }

    /// The world location underneath (aggregation settings, plain messages).
    pub fn world(&self) -> &world::Location {
        &self.inner.world
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
    /// [`DEFAULT_POLL_EVERY`].
    pub fn set_poll_every(&self, n: usize) {
        self.inner.poll_every.store(n, Ordering::Relaxed);
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
        let index = {
            let mut st = lock(&self.inner.state);
            st.objects.push(Slot {
                entry: Entry::Here(Box::new(obj)),
                type_id: TypeId::of::<T>(),
                type_name: name,
                methods,
            });
            st.objects.len() - 1
        };
        let i = index as u64;
        let mine = (
            (i, i),
            (name.to_string(), name.to_string()),
            (digest, digest),
        );
        let seen = self
            .serve_until(self.inner.world.all_reduce(mine, |a, b| {
                (
                    (a.0 .0.min(b.0 .0), a.0 .1.max(b.0 .1)),
                    (a.1 .0.min(b.1 .0), a.1 .1.max(b.1 .1)),
                    (a.2 .0.min(b.2 .0), a.2 .1.max(b.2 .1)),
                )
            }))
            .await;
        let ((low, high), (first, second), (d0, d1)) = seen;
        if low != high || first != second {
            lock(&self.inner.state).objects[index].entry = Entry::Gone;
            return Err(RmiError::RegistrationMismatch {
                index: low,
                first,
                second,
            });
        }
        if d0 != d1 {
            lock(&self.inner.state).objects[index].entry = Entry::Gone;
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
        lock(&self.inner.state).objects[id as usize].entry = Entry::Here(rep);
    }

    /// Takes representative `id` out of the table for exclusive use.
    fn take(&self, id: u32, what: &str) -> Rep {
        let mut st = lock(&self.inner.state);
        let slot = &mut st.objects[id as usize];
        match std::mem::replace(&mut slot.entry, Entry::Busy) {
            Entry::Here(rep) => rep,
            Entry::Busy => panic!(
                "tutti::rmi: {what}: object #{id} (`{}`) on location {} is in use by a \
                 method executing there",
                slot.type_name,
                self.id()
            ),
            Entry::Gone => {
                slot.entry = Entry::Gone;
                panic!(
                    "tutti::rmi: {what}: object #{id} (`{}`) was unregistered on location {}",
                    slot.type_name,
                    self.id()
                )
            }
        }
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
        lock(&self.inner.state).objects[h.id() as usize].entry = Entry::Gone;
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
        self.send::<T, M>(dest, h.id(), 0, None, msg);
        self.counted_call().await;
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
        let corr = self.inner.next_corr.fetch_add(1, Ordering::Relaxed);
        let chain = {
            let mut st = lock(&self.inner.state);
            st.replies.insert(corr, None);
            st.stack.last().map(|f| {
                Arc::new(Chain {
                    location: self.id(),
                    object: f.object,
                    parent: f.waiting.clone(),
                })
            })
        };
        self.send::<T, M>(dest, h.id(), corr, chain, msg);
        self.counted_call().await;
        let reply = loop {
            if let Some(r) = self.reply_for(corr) {
                break r;
            }
            if self.run_own().await > 0 {
                continue;
            }
            let d = self.inner.world.recv().await;
            self.handle(d).await;
        };
        let reply = match reply.downcast::<M::Reply>() {
            Ok(r) => return *r,
            Err(other) => other,
        };
        match reply.downcast::<Encoded>() {
            Ok(bytes) => match codec::decode::<M::Reply>(&bytes.0) {
                Ok(r) => r,
                Err(e) => self.fail(&format!(
                    "the reply to `{}` from location {dest} does not decode: {e}",
                    M::NAME
                )),
            },
            Err(_) => self.fail(&format!(
                "the reply to `{}` from location {dest} has the wrong type",
                M::NAME
            )),
        }
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
            self.send::<T, M>(dest, h.id(), 0, None, msg.clone());
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
            call: Box::new(Invoke::<T, M>::new(msg)),
            chain: None,
        };
        let a = self.enter(lock(&self.inner.state), req, rep);
        let (reply, deferred) = self.run_entered(a.object, a.call, a.rep).await;
        if deferred {
            self.drain_deferred().await;
        }
        let Ok(mine) = reply.downcast::<M::Reply>() else {
            unreachable!("the method's reply has its message's reply type")
        };
        self.serve_until(self.inner.world.all_reduce(*mine, op))
            .await
    }

    /// Executes the requests that have arrived (flushing this location's
    /// buffers first) and returns how many messages it handled (ARMI's
    /// `rmi_poll`).
    pub async fn poll(&self) -> usize {
        let mut n = self.run_own().await;
        self.inner.world.poll();
        while let Some(d) = self.inner.world.try_recv() {
            self.handle(d).await;
            n += 1 + self.run_own().await;
        }
        n
    }

    /// Waits for the next incoming message and handles it (ARMI's `rmi_wait`).
    pub async fn wait(&self) {
        if self.run_own().await > 0 {
            return;
        }
        let d = self.inner.world.recv().await;
        self.handle(d).await;
        self.run_own().await;
    }

    /// Executes the requests this location sent itself; returns how many.
    async fn run_own(&self) -> usize {
        let me = self.inner.world.id();
        let mut n = 0;
        loop {
            // One lock to take the request, its representative and its frame.
            let admitted = {
                let mut st = lock(&self.inner.state);
                match st.own.pop_front() {
                    Some(req) => self.admit(st, me, req),
                    None => return n,
                }
            };
            if let Some(a) = admitted {
                if self.execute_on(me, a).await {
                    self.drain_deferred().await;
                }
            }
            n += 1;
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
        self.run_own().await;
        // The world's detection also separates phases: a request issued after
        // another location's fence returned is handed out here only after
        // this fence returns (see the `world` module's quiescence section).
        while let Some(d) = self.inner.world.recv_until_quiet().await {
            self.handle(d).await;
            self.run_own().await;
        }
    }

    /// A barrier over all locations that keeps executing incoming requests.
    pub async fn barrier(&self) {
        self.collective_only("barrier");
        self.serve_until(self.inner.world.barrier()).await
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

    /// Sends a request for object `object` to `dest`: to itself into its own
    /// queue, within the rank as a typed value, across ranks as frames of the
    /// codec (a `Control` frame with the chain, if any, then a `Tell` or `Ask`).
    fn send<T, M>(&self, dest: usize, object: u32, corr: u64, chain: Option<Arc<Chain>>, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
    {
        let count = self.count();
        if dest >= count {
            panic!(
                "tutti::rmi: `{}` sent to location {dest}, but the world has {count} locations",
                M::NAME
            );
        }
        let me = self.id();
        if dest == me {
            let req = Request {
                object,
                corr,
                call: Box::new(Invoke::<T, M>::new(msg)),
                chain,
            };
            lock(&self.inner.state).own.push_back(req);
            return;
        }
        self.check_accepts(dest, object, M::ID, M::NAME);
        let to = LocationId::new(dest as u32);
        if dest / self.inner.per_rank == self.inner.rank {
            let req = Request {
                object,
                corr,
                call: Box::new(Invoke::<T, M>::new(msg)),
                chain,
            };
            if let Err(e) = self.inner.world.send(to, req) {
                panic!("tutti::rmi: cannot send to location {dest}: {e}");
            }
            return;
        }
        let mut buf = lock(&self.inner.scratch);
        buf.clear();
        let head = |kind| Header {
            src: me as u32,
            dst: dest as u32,
            ..Header::new(kind)
        };
        let encoded = chain
            .map_or(Ok(0), |c| {
                codec::encode_frame(&head(FrameKind::Control), &c.links(), &mut buf)
            })
            .and_then(|_| {
                let kind = if corr == 0 {
                    FrameKind::Tell
                } else {
                    FrameKind::Ask
                };
                let h = Header {
                    msg: M::ID,
                    target: object as u64,
                    corr,
                    ..head(kind)
                };
                codec::encode_frame(&h, &msg, &mut buf)
            });
        if let Err(e) = encoded {
            panic!(
                "tutti::rmi: `{}` for location {dest} cannot be serialized: {e}",
                M::NAME
            );
        }
        if let Err(e) = self.inner.world.send_slice(to, &buf) {
            panic!("tutti::rmi: cannot send to location {dest}: {e}");
        }
    }

    /// Panics unless object `object`'s type accepts message `id` from other
    /// locations (requests to other locations must be able to cross ranks, so
    /// that the same program runs in every world shape).
    fn check_accepts(&self, dest: usize, object: u32, id: MsgId, name: &str) {
        let st = lock(&self.inner.state);
        let Some(slot) = st.objects.get(object as usize) else {
            drop(st);
            panic!(
                "tutti::rmi: `{name}` sent for object #{object}, which was never registered \
                 on location {}",
                self.id()
            );
        };
        if slot.methods.accepts.binary_search(&id).is_err() {
            let tname = slot.type_name;
            drop(st);
            panic!(
                "tutti::rmi: location {} sends `{name}` to location {dest}, but `{tname}` does \
                 not accept it from other locations: list it in `{tname}`'s \
                 `Object::remote` (`table.register::<...>()?` for the type named \"{name}\")",
                self.id()
            );
        }
    }

    /// Takes the whole job down with `why` (from this location).
    fn fail(&self, why: &str) -> ! {
        self.inner.world.world().abort(&format!(
            "tutti::rmi: location {} (rank {}): {why}",
            self.id(),
            self.inner.rank
        ))
    }

    /// Counts a communication call and polls on every n-th.
    async fn counted_call(&self) {
        let every = self.inner.poll_every.load(Ordering::Relaxed);
        if every == 0 {
            return;
        }
        let n = self.inner.calls.load(Ordering::Relaxed) + 1;
        if n >= every {
            self.inner.calls.store(0, Ordering::Relaxed);
            self.poll().await;
        } else {
            self.inner.calls.store(n, Ordering::Relaxed);
        }
    }

    fn reply_for(&self, corr: u64) -> Option<Box<dyn Any + Send>> {
        let mut st = lock(&self.inner.state);
        match st.replies.get_mut(&corr) {
            Some(r @ Some(_)) => {
                let r = r.take();
                st.replies.remove(&corr);
                r
            }
            _ => None,
        }
    }

    /// Waits for `fut` while executing incoming requests.
    async fn serve_until<F: Future>(&self, fut: F) -> F::Output {
        let mut fut = pin!(fut);
        loop {
            self.run_own().await;
            let next = poll_fn(|cx| {
                if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                    return Poll::Ready(Ok(v));
                }
                match Pin::new(&mut self.inner.world.recv()).poll(cx) {
                    Poll::Ready(d) => Poll::Ready(Err(d)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            match next {
                Ok(v) => return v,
                Err(d) => self.handle(d).await,
            }
        }
    }

    /// Handles one delivery: executes a request, or files a reply. The
    /// delivery is dropped (counted as handled) only after the method has run
    /// and its reply has been sent, as quiescence detection requires.
    async fn handle(&self, mut d: Delivery<'_>) {
        if let Some(bytes) = d.bytes() {
            match self.parse(d.from(), bytes) {
                FromRank::Request(req) => self.execute(d.from(), req).await,
                FromRank::Reply(corr, reply) => self.file_reply(corr, reply),
            }
        } else if let Some(req) = d.take::<Request>() {
            self.execute(d.from(), req).await;
        } else if let Some(resp) = d.take::<Response>() {
            self.file_reply(resp.corr, resp.reply);
        } else {
            panic!(
                "tutti::rmi: location {} received a message that is not an RMI ({d:?}) \
                 from location {}",
                self.id(),
                d.from()
            );
        }
        drop(d);
    }

    /// Files the reply to the `sync_rmi` numbered `corr`.
    fn file_reply(&self, corr: u64, reply: Box<dyn Any + Send>) {
        let mut st = lock(&self.inner.state);
        match st.replies.get_mut(&corr) {
            Some(slot @ None) => *slot = Some(reply),
            _ => {
                drop(st);
                self.fail(&format!("got a reply (#{corr}) nobody waits for"))
            }
        }
    }

    /// Decodes a message from another rank: a request (an optional `Control`
    /// frame with its chain, then a `Tell` or `Ask`), or the answer to one of
    /// this location's `sync_rmi`s (`Reply`, or `Fault`). Anything else takes
    /// the job down, naming the sender and what is wrong.
    fn parse(&self, from: LocationId, bytes: &[u8]) -> FromRank {
        let bad = |why: &dyn fmt::Display| -> ! {
            self.fail(&format!("a malformed RMI message from {from}: {why}"))
        };
        let mut frames = codec::frames(bytes);
        let mut next = || match frames.next() {
            Some(Ok(f)) => {
                let h = f.header();
                if h.src as usize != from.index() || h.dst as usize != self.id() {
                    bad(&format_args!(
                        "a frame from location {} to location {}",
                        h.src, h.dst
                    ));
                }
                Some(f)
            }
            Some(Err(e)) => bad(&e),
            None => None,
        };
        let Some(mut frame) = next() else {
            bad(&"no frame")
        };
        let mut chain = None;
        if frame.header().kind == FrameKind::Control {
            let links: Vec<(u32, u32)> = frame.decode().unwrap_or_else(|e| bad(&e));
            chain = Chain::from_links(&links);
            frame = next().unwrap_or_else(|| bad(&"a chain without its request"));
        }
        let h = *frame.header();
        let out = match h.kind {
            FrameKind::Tell | FrameKind::Ask => {
                let methods = {
                    let st = lock(&self.inner.state);
                    let slot = usize::try_from(h.target)
                        .ok()
                        .and_then(|i| st.objects.get(i));
                    match slot {
                        Some(slot) => Arc::clone(&slot.methods),
                        None => {
                            drop(st);
                            bad(&format_args!(
                                "a request (message id {}) for object #{}, which was never \
                                 registered here",
                                h.msg, h.target
                            ))
                        }
                    }
                };
                let call = (methods.decode)(&frame).unwrap_or_else(|e| bad(&e));
                FromRank::Request(Request {
                    object: h.target as u32,
                    corr: h.corr,
                    call,
                    chain: if h.kind == FrameKind::Ask {
                        chain
                    } else {
                        None
                    },
                })
            }
            FrameKind::Reply if chain.is_none() => {
                FromRank::Reply(h.corr, Box::new(Encoded(frame.payload().to_vec())))
            }
            FrameKind::Fault if chain.is_none() => {
                let text: String = frame.decode().unwrap_or_else(|e| bad(&e));
                self.fail(&format!(
                    "the sync_rmi #{} to {from} got no reply: {text}",
                    h.corr
                ))
            }
            kind => bad(&format_args!("an unexpected {kind:?} frame")),
        };
        if next().is_some() {
            bad(&"more frames than one RMI message");
        }
        out
    }

    /// Executes `req` (or defers it, if its object is busy or an earlier
    /// request from the same sender waits), then whatever deferred requests
    /// became ready.
    async fn execute(&self, from: LocationId, req: Request) {
        let admitted = self.admit(lock(&self.inner.state), from, req);
        if let Some(a) = admitted {
            if self.execute_on(from, a).await {
                self.drain_deferred().await;
            }
        }
    }

    /// Admits `req` (from `from`) for execution under the state lock `st`:
    /// takes its representative and enters its method, or defers it (`None`)
    /// if its object is busy or an earlier request from the same sender waits.
    fn admit(
        &self,
        mut st: MutexGuard<'_, State>,
        from: LocationId,
        req: Request,
    ) -> Option<Admitted> {
        let rep = {
            let blocked = st.deferred.iter().any(|d| d.from == from);
            let id = req.object as usize;
            let Some(slot) = st.objects.get_mut(id) else {
                drop(st);
                panic!(
                    "tutti::rmi: location {} got `{}` for object #{id}, which was never \
                     registered here",
                    self.id(),
                    req.call.message()
                );
            };
            if slot.type_id != req.call.object() {
                let name = slot.type_name;
                drop(st);
                panic!(
                    "tutti::rmi: location {} got `{}` for object #{id}, which is a `{name}` here",
                    self.id(),
                    req.call.message()
                );
            }
            match std::mem::replace(&mut slot.entry, Entry::Busy) {
                Entry::Here(rep) if !blocked => rep,
                Entry::Gone => {
                    slot.entry = Entry::Gone;
                    let name = slot.type_name;
                    drop(st);
                    panic!(
                        "tutti::rmi: location {} got `{}` from {from} for object \
                         #{id} (`{name}`), which was unregistered",
                        self.id(),
                        req.call.message()
                    );
                }
                other => {
                    slot.entry = other;
                    let name = slot.type_name;
                    if !blocked {
                        if let Some(held) = self.cycle(&st, id as u32, &req) {
                            let chain = req.chain.as_deref().map(|c| c.to_string());
                            drop(st);
                            panic!(
                                "tutti::rmi: deadlock: location {} cannot execute `{}` for \
                                 object #{id} (`{name}`) until a method here returns, and the \
                                 method holding object #{held} waits for this request's reply \
                                 (a chain of sync_rmi calls came back to this location; chain: \
                                 {})",
                                self.id(),
                                req.call.message(),
                                chain.unwrap_or_default()
                            );
                        }
                    }
                    st.deferred.push_back(Deferred { from, req });
                    return None;
                }
            }
        };
        Some(self.enter(st, req, rep))
    }

    /// Whether deferring `req` (for busy object `object`) would deadlock: a
    /// method on this location waits for its reply, and cannot return before
    /// the method holding `object` does (it is at or above that method's level
    /// on this location's stack). Returns the object the waiting method holds.
    fn cycle(&self, st: &State, object: u32, req: &Request) -> Option<u32> {
        let chain = req.chain.as_deref()?;
        let holder = st.stack.iter().position(|f| f.object == object)?;
        chain.held_on(self.id()).find(|&held| {
            st.stack
                .iter()
                .position(|f| f.object == held)
                .is_some_and(|level| level >= holder)
        })
    }

    /// Executes deferred requests whose object is free, in order per sender.
    async fn drain_deferred(&self) {
        while let Some((from, a)) = self.next_deferred() {
            if !self.execute_on(from, a).await {
                return;
            }
        }
    }

    fn next_deferred(&self) -> Option<(LocationId, Admitted)> {
        let mut st = lock(&self.inner.state);
        let mut blocked: Vec<LocationId> = Vec::new();
        for i in 0..st.deferred.len() {
            let (from, id) = (st.deferred[i].from, st.deferred[i].req.object as usize);
            if blocked.contains(&from) {
                continue;
            }
            let slot = &mut st.objects[id];
            match std::mem::replace(&mut slot.entry, Entry::Busy) {
                Entry::Here(rep) => {
                    let d = st.deferred.remove(i).expect("the index is in range");
                    return Some((d.from, self.enter(st, d.req, rep)));
                }
                other => {
                    slot.entry = other;
                    blocked.push(from);
                }
            }
        }
        None
    }

    /// Runs the admitted method, puts the representative back and answers a
    /// `sync_rmi`. Returns whether requests are deferred.
    async fn execute_on(&self, from: LocationId, a: Admitted) -> bool {
        let Admitted {
            object,
            corr,
            call,
            rep,
        } = a;
        let (reply, deferred) = self.run_entered(object, call, rep).await;
        if corr != 0 {
            if from.index() / self.inner.per_rank == self.inner.rank {
                let resp = Response { corr, reply };
                if let Err(e) = self.inner.world.send(from, resp) {
                    panic!("tutti::rmi: cannot answer {from}: {e}");
                }
            } else {
                self.answer_rank(from, corr, reply);
            }
        }
        deferred
    }

    /// Sends the answer to a `sync_rmi` from another rank: a `Reply` frame with
    /// the encoded reply, or a `Fault` frame saying why there is none.
    fn answer_rank(&self, to: LocationId, corr: u64, reply: Box<dyn Any + Send>) {
        let head = |kind| Header {
            src: self.id() as u32,
            dst: to.raw(),
            corr,
            ..Header::new(kind)
        };
        let mut buf = lock(&self.inner.scratch);
        buf.clear();
        let done = match reply.downcast::<Answer>().map(|a| a.0) {
            Ok(Some(Ok(bytes))) => {
                codec::encode_raw_frame(&head(FrameKind::Reply), &bytes, &mut buf)
            }
            Ok(Some(Err(e))) => {
                codec::encode_frame(&head(FrameKind::Fault), &e.to_string(), &mut buf)
            }
            _ => codec::encode_frame(
                &head(FrameKind::Fault),
                "the request was not sent as a question",
                &mut buf,
            ),
        };
        if let Err(e) = done {
            panic!("tutti::rmi: cannot answer {to}: {e}");
        }
        if let Err(e) = self.inner.world.send_slice(to, &buf) {
            panic!("tutti::rmi: cannot answer {to}: {e}");
        }
    }

    /// Enters the method of `req` on `rep` (taken out of slot `req.object`)
    /// one level deeper, under the state lock `st`: checks the nesting limit
    /// and pushes its frame (with the chain waiting for it, for a `sync_rmi`).
    fn enter(&self, mut st: MutexGuard<'_, State>, req: Request, rep: Rep) -> Admitted {
        let Request {
            object,
            corr,
            call,
            chain,
        } = req;
        let depth = self.inner.depth.load(Ordering::Relaxed) + 1;
        let max = self.inner.max_depth.load(Ordering::Relaxed);
        if depth > max {
            drop(st);
            panic!(
                "tutti::rmi: location {}: executing `{}` would nest {depth} methods deep, \
                 beyond the maximum of {max} (sync_rmi chains keep returning here; raise \
                 it with set_max_nesting)",
                self.id(),
                call.message()
            );
        }
        self.inner.depth.store(depth, Ordering::Relaxed);
        let waiting = if corr != 0 { chain } else { None };
        st.stack.push(Frame { object, waiting });
        Admitted {
            object,
            corr,
            call,
            rep,
        }
    }

    /// Runs an entered method in place (in a reusable block, not a fresh box;
    /// most methods complete on their first poll), then leaves its level: pops
    /// its frame and puts the representative back. Returns the reply and
    /// whether requests are deferred.
    async fn run_entered(
        &self,
        object: u32,
        call: Box<dyn Call>,
        rep: Rep,
    ) -> (Box<dyn Any + Send>, bool) {
        let mut out: Outcome = None;
        let mut start = Some((call, rep));
        let running = poll_fn(|cx| {
            let (call, rep) = start.take().expect("a method starts once");
            let mut spare = Spare::default();
            // SAFETY: `out` lives in this (pinned) future's state and outlives the
            // method: it is declared before `running`, so it is dropped after it,
            // and it is not read before the method has completed.
            Poll::Ready(unsafe { call.start(rep, self, &mut out, &mut spare, cx) })
        })
        .await;
        if let Some(mut running) = running {
            poll_fn(|cx| running.poll(cx)).await;
        }
        let Some((rep, reply)) = out.take() else {
            unreachable!("a method that returned left its outcome")
        };
        let deferred = {
            let mut st = lock(&self.inner.state);
            st.stack.pop();
            st.objects[object as usize].entry = Entry::Here(rep);
            !st.deferred.is_empty()
        };
        let depth = self.inner.depth.load(Ordering::Relaxed);
        self.inner.depth.store(depth - 1, Ordering::Relaxed);
        (reply, deferred)
    }
}
