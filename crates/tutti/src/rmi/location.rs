//! [`Location`]: one location's RMI endpoint — registration, `async_rmi`,
//! `sync_rmi`, `broadcast_rmi`, `reduce_rmi`, `poll`, `wait`, `fence`.

use std::any::{Any, TypeId};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::request::{Call, Chain, Invoke, Rep, Request, Response};
use super::{Handle, HandlerContext, Local, RmiError, DEFAULT_MAX_NESTING, DEFAULT_POLL_EVERY};
use crate::loom::{lock, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::msg::{Handler, Message, Object};
use crate::world::{self, Delivery, LocationId};

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
}

/// A request that arrived while its object was busy, or behind one from the
/// same sender that did (requests from one sender execute in issue order).
struct Deferred {
    from: LocationId,
    req: Request,
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
        Location {
            inner: Arc::new(Inner {
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
        let index = {
            let mut st = lock(&self.inner.state);
            st.objects.push(Slot {
                entry: Entry::Here(Box::new(obj)),
                type_id: TypeId::of::<T>(),
                type_name: name,
            });
            st.objects.len() - 1
        };
        let mine = (
            index as u64,
            index as u64,
            name.to_string(),
            name.to_string(),
        );
        let seen = self
            .serve_until(self.inner.world.all_reduce(mine, |a, b| {
                (a.0.min(b.0), a.1.max(b.1), a.2.min(b.2), a.3.max(b.3))
            }))
            .await;
        if seen.0 != seen.1 || seen.2 != seen.3 {
            lock(&self.inner.state).objects[index].entry = Entry::Gone;
            return Err(RmiError::RegistrationMismatch {
                index: seen.0,
                first: seen.2,
                second: seen.3,
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
    /// location to another execute in the order they were issued. The message
    /// moves; it is not copied or serialized. Every `n`-th communication call
    /// also executes what has arrived here ([`set_poll_every`](Self::set_poll_every)).
    ///
    /// # Panics
    /// If `dest` is not a location of the world.
    pub async fn async_rmi<T, M>(&self, dest: usize, h: &Handle<T>, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Message,
    {
        self.send(dest, h.id(), 0, None, Box::new(Invoke::<T, M>::new(msg)));
        self.counted_call().await;
    }

    /// Calls `msg` on `dest`'s representative of `h` and waits for its reply (a
    /// question; ARMI's `sync_rmi`). While it waits, this location keeps
    /// executing incoming requests (nested RMI) up to the maximum nesting depth.
    ///
    /// # Panics
    /// If `dest` is not a location of the world; if executing a request while
    /// waiting would exceed the maximum nesting depth.
    pub async fn sync_rmi<T, M>(&self, dest: usize, h: &Handle<T>, msg: M) -> M::Reply
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Message,
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
        self.send(
            dest,
            h.id(),
            corr,
            chain,
            Box::new(Invoke::<T, M>::new(msg)),
        );
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
        match reply.downcast::<M::Reply>() {
            Ok(r) => *r,
            Err(_) => self.inner.world.world().abort(&format!(
                "tutti::rmi: the reply to `{}` has the wrong type",
                std::any::type_name::<M>()
            )),
        }
    }

    /// Sends `msg` (cloned) to every location's representative of `h`,
    /// including this one's (ARMI's `broadcast_rmi`).
    pub async fn broadcast_rmi<T, M>(&self, h: &Handle<T>, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Message + Clone,
    {
        for dest in 0..self.count() {
            self.send(
                dest,
                h.id(),
                0,
                None,
                Box::new(Invoke::<T, M>::new(msg.clone())),
            );
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
        M: Message,
        M::Reply: Serialize + DeserializeOwned + Clone,
        F: Fn(M::Reply, M::Reply) -> M::Reply + Send + Sync + 'static,
    {
        self.collective_only("reduce_rmi");
        let rep = self.take(h.id(), "reduce_rmi");
        let call: Box<dyn Call> = Box::new(Invoke::<T, M>::new(msg));
        let (reply, deferred) = self.run_method(h.id(), None, call, rep).await;
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
        let mut n = 0;
        loop {
            let next = lock(&self.inner.state).own.pop_front();
            let Some(req) = next else { return n };
            self.execute(self.inner.world.id(), req).await;
            n += 1;
        }
    }

    /// Collective: returns on every location once all have called it and every
    /// RMI issued anywhere — including those issued by methods, to any depth,
    /// and those still in aggregation buffers — has executed (ARMI's
    /// `rmi_fence`). Executes incoming requests while it waits.
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

    fn send(
        &self,
        dest: usize,
        object: u32,
        corr: u64,
        chain: Option<Arc<Chain>>,
        call: Box<dyn Call>,
    ) {
        let count = self.count();
        if dest >= count {
            panic!(
                "tutti::rmi: `{}` sent to location {dest}, but the world has {count} locations",
                call.message()
            );
        }
        let req = Request {
            object,
            corr,
            call,
            chain,
        };
        if dest == self.id() {
            lock(&self.inner.state).own.push_back(req);
            return;
        }
        if let Err(e) = self.inner.world.send(LocationId::new(dest as u32), req) {
            panic!("tutti::rmi: cannot send to location {dest}: {e}");
        }
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
        if let Some(req) = d.take::<Request>() {
            self.execute(d.from(), req).await;
        } else if let Some(resp) = d.take::<Response>() {
            let mut st = lock(&self.inner.state);
            match st.replies.get_mut(&resp.corr) {
                Some(slot @ None) => *slot = Some(resp.reply),
                _ => {
                    drop(st);
                    self.inner.world.world().abort(&format!(
                        "tutti::rmi: location {} got a reply nobody waits for",
                        self.id()
                    ))
                }
            }
        } else {
            panic!(
                "tutti::rmi: location {} received a message that is not an RMI ({d:?}) \
                 from location {}; RMI runs in one process so far",
                self.id(),
                d.from()
            );
        }
        drop(d);
    }

    /// Executes `req` (or defers it, if its object is busy or an earlier
    /// request from the same sender waits), then whatever deferred requests
    /// became ready.
    async fn execute(&self, from: LocationId, req: Request) {
        let rep = {
            let mut st = lock(&self.inner.state);
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
                        "tutti::rmi: location {} got `{}` from location {from} for object \
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
                    return;
                }
            }
        };
        if self.execute_on(from, req, rep).await {
            self.drain_deferred().await;
        }
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
        while let Some((d, rep)) = self.next_deferred() {
            if !self.execute_on(d.from, d.req, rep).await {
                return;
            }
        }
    }

    fn next_deferred(&self) -> Option<(Deferred, Rep)> {
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
                    return Some((d, rep));
                }
                other => {
                    slot.entry = other;
                    blocked.push(from);
                }
            }
        }
        None
    }

    /// Runs the method of `req` on `rep` (taken out of slot `req.object`), puts
    /// the representative back and answers a `sync_rmi`.
    /// Returns whether requests are deferred.
    async fn execute_on(&self, from: LocationId, req: Request, rep: Rep) -> bool {
        let Request {
            object,
            corr,
            call,
            chain,
        } = req;
        let waiting = if corr != 0 { chain } else { None };
        let (reply, deferred) = self.run_method(object, waiting, call, rep).await;
        if corr != 0 {
            let resp = Response { corr, reply };
            if let Err(e) = self.inner.world.send(from, resp) {
                panic!("tutti::rmi: cannot answer location {from}: {e}");
            }
        }
        deferred
    }

    /// Runs one method one level deeper, checking the nesting limit, and puts
    /// the representative back. Returns the reply and whether requests are
    /// deferred.
    async fn run_method(
        &self,
        object: u32,
        waiting: Option<Arc<Chain>>,
        call: Box<dyn Call>,
        rep: Rep,
    ) -> (Box<dyn Any + Send>, bool) {
        let depth = self.inner.depth.load(Ordering::Relaxed) + 1;
        let max = self.inner.max_depth.load(Ordering::Relaxed);
        if depth > max {
            panic!(
                "tutti::rmi: location {}: executing `{}` would nest {depth} methods deep, \
                 beyond the maximum of {max} (sync_rmi chains keep returning here; raise \
                 it with set_max_nesting)",
                self.id(),
                call.message()
            );
        }
        self.inner.depth.store(depth, Ordering::Relaxed);
        lock(&self.inner.state)
            .stack
            .push(Frame { object, waiting });
        let (rep, reply) = call.start(rep, self.share()).await;
        let deferred = {
            let mut st = lock(&self.inner.state);
            st.stack.pop();
            st.objects[object as usize].entry = Entry::Here(rep);
            !st.deferred.is_empty()
        };
        self.inner.depth.store(depth - 1, Ordering::Relaxed);
        (reply, deferred)
    }
}
