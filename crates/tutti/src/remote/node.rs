//! [`Node`]: one location's actor node — its handle, what it shares between
//! its handles, its receiving task and the reply tasks ([`Inner`]), and how it
//! sends (every send checks the leave state under one lock).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

use crate::loom::{AtomicBool, AtomicU64, Mutex, Ordering};
use std::task::{Context, Poll, Waker};

use serde::Serialize;

use super::credit::{self, Due, Flow};
use super::held::Credited;
use super::link::NodeLink;
use super::protocol::{Control, RegistryReply, CONTROL};
use super::{home_index, NodeLookupError, NodeRegisterError, NodeStats, RemoteAddr, RemoteError};
use crate::actor::{Actor, Addr, MonitorRef, Name};
use crate::call::serve::{ServeCounters, ServedObject, Target};
use crate::call::{Conversation, Question, Refusal};
use crate::msg::{Dispatch, MsgId};
use crate::world::{Collective, Location, LocationId, World};

/// One location's actor node: its exported actors, its questions waiting for
/// answers, the registry entries it is home for, and the task that receives for
/// it. Cheap to clone (a handle). See the [module documentation](super).
#[derive(Clone)]
pub struct Node {
    pub(super) inner: Arc<Inner>,
    loc: Arc<Location>,
}

/// What a node shares between its handles, its receiving task and the reply tasks.
pub(crate) struct Inner {
    pub(super) id: LocationId,
    /// The rank's world (for its runtime).
    pub(super) world: World,
    pub(super) locations: usize,
    /// The node's end of the request/reply core: ids, pending questions, frames.
    pub(super) conv: Conversation<NodeLink>,
    /// Every send and every change of the leave state happens under this lock.
    pub(super) state: Mutex<State>,
    /// Exported actors by actor id. Lock order: `exports`, then `state`.
    pub(super) exports: Mutex<HashMap<u64, Export>>,
    /// The registry entries this location is the home of.
    pub(super) home: Mutex<HashMap<String, HomeEntry>>,
    /// What the node counts as it serves (the core's serving side), and the
    /// last error.
    pub(super) serving: ServeCounters,
    /// Tells of this node that the receiving node reported as dead letters.
    pub(super) undelivered: AtomicU64,
    /// The receiving task has ended.
    pub(super) ended: AtomicBool,
    /// This node's monitors of remote actors, by monitor id (`monitor.rs`).
    /// Not held while taking another lock.
    pub(super) watches: Mutex<HashMap<u64, super::monitor::Watch>>,
    pub(super) next_watch: AtomicU64,
    /// This node's credits toward actors with a window, by (location, actor)
    /// (`credit.rs`); an entry goes when nothing of it is out and no address
    /// holds it. Not held while taking another lock but a flow's own.
    pub(super) flows: Mutex<HashMap<(LocationId, u64), Arc<Flow>>>,
    /// The credits this node owes the nodes that send to its actors.
    pub(super) due: Due,
    /// Per location: its node has sent this one its last message (a
    /// `LeftAck` or a `Closed`, `leave.rs`), so what comes from there now is
    /// for this location's next node. Set under `state` by the receiving
    /// task, which alone reads it without the lock.
    pub(super) heard_last: Box<[AtomicBool]>,
}

pub(super) struct State {
    /// This node has begun leaving: it sends nothing but protocol messages.
    pub(super) left: bool,
    /// Locations whose node has left (we heard their `Leaving`).
    pub(super) gone: Vec<bool>,
    /// Locations whose rank died (a subset of `gone`).
    pub(super) died: Vec<bool>,
    /// The leave is complete: this node has left, and every other node has
    /// sent it its last message (`leave.rs`).
    pub(super) finished: bool,
    /// `leave` calls waiting for `finished` and the task's end.
    pub(super) waiters: Vec<Waker>,
}

/// An exported actor.
pub(super) struct Export {
    pub(super) target: Arc<dyn Target>,
    pub(super) names: Vec<Name>,
    pub(super) monitor: MonitorRef,
    /// Nodes monitoring the actor: (location, monitor id there).
    pub(super) watchers: Vec<(LocationId, u64)>,
}

pub(super) struct HomeEntry {
    pub(super) type_name: String,
    pub(super) location: u32,
    pub(super) actor: u64,
    pub(super) window: u32,
}

pub(super) use crate::loom::lock;

impl Node {
    /// Makes `location` an actor node and starts its receiving task on the rank's
    /// runtime. Every location of the world should run a node (SPMD), and each
    /// must [`leave`](Node::leave) before the world ends. Messages sent to a node
    /// before it joins wait in its location's inbox.
    pub fn join(location: Location) -> Node {
        let id = location.id();
        let locations = location.world().locations();
        let world = location.world().clone();
        let loc = Arc::new(location);
        let inner = Arc::new(Inner {
            id,
            world: world.clone(),
            locations,
            conv: Conversation::new(NodeLink::new(Arc::clone(&loc))),
            state: Mutex::new(State {
                left: false,
                gone: vec![false; locations],
                died: vec![false; locations],
                finished: false,
                waiters: Vec::new(),
            }),
            exports: Mutex::new(HashMap::new()),
            home: Mutex::new(HashMap::new()),
            serving: ServeCounters::default(),
            undelivered: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            watches: Mutex::new(HashMap::new()),
            next_watch: AtomicU64::new(0),
            flows: Mutex::new(HashMap::new()),
            due: Due::default(),
            heard_last: (0..locations).map(|_| AtomicBool::new(false)).collect(),
        });
        let watcher: Arc<dyn crate::world::RankDeath> = Arc::clone(&inner) as _;
        loc.watch_deaths(Arc::downgrade(&watcher));
        // Detached: it ends when the node has left.
        drop(world.runtime().spawn(super::receive::receive(
            Arc::clone(&inner),
            Arc::clone(&loc),
        )));
        Node { inner, loc }
    }

    /// This node's location.
    pub fn id(&self) -> LocationId {
        self.inner.id
    }

    /// The world the node's location belongs to.
    pub fn world(&self) -> &World {
        self.loc.world()
    }

    /// A barrier over every location of the world (through the node's location:
    /// while a node runs, its location is reached through the node).
    pub fn barrier(&self) -> Collective<'_, ()> {
        self.loc.barrier()
    }

    /// The node's location, for its collectives (`all_reduce`, `broadcast`, …).
    /// Receiving from it would take the node's messages: only the node receives.
    pub fn location(&self) -> &Location {
        &self.loc
    }

    /// Sends what this node has buffered towards other locations now (tells are
    /// aggregated like any world message; questions, replies and control messages
    /// are flushed as they are sent).
    pub fn flush(&self) {
        self.loc.flush();
    }

    /// Makes `addr`'s actor reachable from every location with the message types
    /// of `dispatch`, and returns its remote address. The node holds an address
    /// of the actor until the actor stops or the node leaves (so an exported actor
    /// does not stop by the last-address rule). Exporting an actor again replaces
    /// its table and keeps its names.
    pub fn export<A: Actor>(&self, addr: &Addr<A>, dispatch: Dispatch<A>) -> RemoteAddr<A> {
        let actor = addr.id().as_u64();
        let weak = Arc::downgrade(&self.inner);
        let weak_node = Weak::clone(&weak);
        // Watched before the export is recorded, outside the locks: an actor that
        // has already stopped calls back at once.
        let monitor = addr.on_stop(move |down| {
            if let Some(inner) = weak.upgrade() {
                inner.actor_stopped(actor, &down.reason.to_string());
            }
        });
        let window = credit::window(addr);
        let target: Arc<dyn Target> = if window > 0 {
            Arc::new(Credited::new(dispatch, addr.clone(), window, weak_node))
        } else {
            Arc::new(ServedObject::new(dispatch, addr.clone()))
        };
        let mut exports = lock(&self.inner.exports);
        let mut stale = None;
        let replaced = exports.remove(&actor);
        if lock(&self.inner.state).left {
            monitor.cancel();
        } else {
            let names = replaced.as_ref().map(|e| e.names.clone());
            let watchers = replaced.as_ref().map(|e| e.watchers.clone());
            exports.insert(
                actor,
                Export {
                    target,
                    names: names.unwrap_or_default(),
                    monitor,
                    watchers: watchers.unwrap_or_default(),
                },
            );
            let diag_node = addr.cell().node.id;
            super::wait::exported(self.inner.world.diag_id(), self.inner.id, actor, diag_node);
            // A stop that called back before the insert found nothing to remove;
            // its mailbox is closed by then.
            if addr.is_stopped() {
                stale = exports.remove(&actor);
                super::wait::withdrawn(self.inner.world.diag_id(), self.inner.id, actor);
            }
        }
        drop(exports);
        if let Some(e) = stale {
            let why = "the actor stopped while it was exported";
            self.inner.tell_watchers(actor, &e.watchers, why);
        }
        if let Some(old) = replaced {
            old.monitor.cancel();
        }
        RemoteAddr::new(&self.inner, self.inner.id, actor, window)
    }

    /// The home location of `name`: where its registry entry lives.
    ///
    /// ```
    /// use tutti::remote::Node;
    /// use tutti::world::World;
    /// let world = World::builder().locations(4).workers(1).build().unwrap();
    /// let homes = world.run(|loc| async move {
    ///     let node = Node::join(loc);
    ///     let home = node.home_of("service");
    ///     node.leave().await;
    ///     home
    /// });
    /// assert!(homes.iter().all(|h| *h == homes[0]), "every location agrees");
    /// ```
    pub fn home_of(&self, name: impl AsRef<str>) -> LocationId {
        LocationId::new(home_index(name.as_ref(), self.inner.locations) as u32)
    }

    /// Registers `addr` — an actor exported by this node — under `name` for the
    /// whole world. Fails if the name is taken anywhere
    /// ([`NodeRegisterError::Taken`]), if the actor is not exported here or has
    /// stopped, or if the name's home has left.
    pub async fn register<A: Actor>(
        &self,
        name: impl Into<Name>,
        addr: &RemoteAddr<A>,
    ) -> Result<(), NodeRegisterError> {
        let name = name.into();
        let inner = &self.inner;
        let home = self.home_of(name.as_str());
        let home_left = || NodeRegisterError::HomeLeft {
            name: name.clone(),
            home,
        };
        if addr.location() != inner.id {
            return Err(NodeRegisterError::NotExported { name });
        }
        let actor = addr.actor_id();
        let request = Control::Register {
            name: name.as_str().to_string(),
            type_name: std::any::type_name::<A>().to_string(),
            actor,
            window: addr.window_raw(),
        };
        let answer = {
            let mut exports = lock(&inner.exports);
            let Some(export) = exports.get_mut(&actor) else {
                return Err(NodeRegisterError::NotExported { name });
            };
            if export.target.type_name() != std::any::type_name::<A>() {
                return Err(NodeRegisterError::NotExported { name });
            }
            // Recorded first: if the actor stops, its stop sends the `Unregister`
            // after this request (same lock order, same path).
            export.names.push(name.clone());
            inner.request(home, &request).map_err(|_| home_left())?
        };
        let answer = answer.await.map_err(|_| home_left())?;
        match answer {
            RegistryReply::Registered => Ok(()),
            RegistryReply::Taken {
                location,
                actor: by,
            } => {
                inner.forget_name(actor, &name);
                Err(NodeRegisterError::Taken {
                    name,
                    location: LocationId::new(location),
                    actor: by,
                })
            }
            _ => Err(NodeRegisterError::NotExported { name }),
        }
    }

    /// The address of the actor registered under `name` anywhere in the world, if
    /// it is an `A`.
    pub async fn lookup<A: Actor>(
        &self,
        name: impl Into<Name>,
    ) -> Result<RemoteAddr<A>, NodeLookupError> {
        let name = name.into();
        let home = self.home_of(name.as_str());
        let home_left = || NodeLookupError::HomeLeft {
            name: name.clone(),
            home,
        };
        let request = Control::Lookup {
            name: name.as_str().to_string(),
        };
        let answer = self
            .inner
            .request(home, &request)
            .map_err(|_| home_left())?
            .await
            .map_err(|_| home_left())?;
        match answer {
            RegistryReply::Found {
                type_name,
                location,
                actor,
                window,
            } => {
                if type_name != std::any::type_name::<A>() {
                    return Err(NodeLookupError::WrongType {
                        name,
                        expected: std::any::type_name::<A>().to_string(),
                        found: type_name,
                    });
                }
                Ok(RemoteAddr::new(
                    &self.inner,
                    LocationId::new(location),
                    actor,
                    window,
                ))
            }
            _ => Err(NodeLookupError::NotFound { name }),
        }
    }

    /// Removes `name` if this node's actor holds it; returns whether it did.
    pub async fn unregister(&self, name: impl Into<Name>) -> Result<bool, RemoteError> {
        let name = name.into();
        let home = self.home_of(name.as_str());
        let actor = {
            let mut exports = lock(&self.inner.exports);
            let found = exports.iter_mut().find_map(|(id, e)| {
                let at = e.names.iter().position(|n| *n == name)?;
                e.names.swap_remove(at);
                Some(*id)
            });
            match found {
                Some(id) => id,
                None => return Ok(false),
            }
        };
        let request = Control::Unregister {
            name: name.as_str().to_string(),
            actor,
        };
        match self.inner.request(home, &request)?.await? {
            RegistryReply::Unregistered(done) => Ok(done),
            _ => Ok(false),
        }
    }

    /// The node's counters of undeliverable traffic.
    pub fn stats(&self) -> NodeStats {
        let s = self.inner.serving.snapshot();
        NodeStats {
            served: s.served,
            dead_letters: s.dead_letters,
            undelivered: self.inner.undelivered.load(Ordering::Relaxed),
            credit_flows: lock(&self.inner.flows).len(),
            credits_owed: self.inner.due.len(),
            malformed: s.malformed,
            rejected: s.rejected,
            last_error: s.last_error,
        }
    }

    /// Whether the node at `location` is known to have left.
    pub fn has_left(&self, location: LocationId) -> bool {
        let st = lock(&self.inner.state);
        if location == self.inner.id {
            return st.left;
        }
        st.gone.get(location.index()).copied().unwrap_or(true)
    }

    /// Leaves the world: unregisters this node's names, drops its exports, tells
    /// every other node and waits until each has acknowledged (see the module
    /// documentation). Questions still waiting then fail with
    /// [`RemoteError::NodeLeft`]. Calling it again just waits for the end.
    pub fn leave(&self) -> Leave<'_> {
        self.inner.begin_leave();
        Leave { node: self }
    }

    /// Sends `bytes` as they are to `to`'s node (testing how a node takes bytes
    /// that are not a node frame).
    #[doc(hidden)]
    pub fn send_raw(&self, to: LocationId, bytes: &[u8]) -> Result<(), RemoteError> {
        use crate::call::Link;
        {
            let st = lock(&self.inner.state);
            self.inner.may_send(&st, to, false)?;
            self.inner
                .conv
                .link()
                .send_frame(to, bytes)
                .map_err(|_| RemoteError::NodeLeft(to))?;
        }
        self.flush();
        Ok(())
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.inner.id)
            .field("exports", &lock(&self.inner.exports).len())
            .finish_non_exhaustive()
    }
}

/// Future of [`Node::leave`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Leave<'a> {
    node: &'a Node,
}

impl Future for Leave<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let inner = &self.node.inner;
        let mut st = lock(&inner.state);
        if st.finished && inner.ended.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        st.waiters.push(cx.waker().clone());
        drop(st);
        leave_waits(cx);
        Poll::Pending
    }
}

/// A leave waits for the other nodes' last messages (`leave.rs`), which their
/// receiving tasks send whatever their locations wait for: noted for the
/// deadlock detector as a wait on someone unknown, which the world's stall
/// checks judge; if they found that it can never end (every location of
/// every rank waits), the location fails with the report.
#[cold]
fn leave_waits(cx: &Context<'_>) {
    use crate::diag::node::{On, Wait, What};
    if let Some(d) = crate::diag::node::take_failure() {
        panic!("tutti::remote: the actor node cannot finish leaving\n{d}");
    }
    crate::diag::node::note(
        || Wait {
            on: On::Unknown,
            what: What::Text(
                "waits for the other actor nodes to acknowledge its leave (`Node::leave`)",
            ),
        },
        Some(cx.waker()),
    );
}

impl Inner {
    /// Whether this node may send to `to` (under the state lock `st`): refused
    /// if `to`'s node has left, or (for what is not part of the leave protocol)
    /// if this one has.
    pub(super) fn may_send(
        &self,
        st: &State,
        to: LocationId,
        protocol: bool,
    ) -> Result<(), RemoteError> {
        if st.died.get(to.index()).copied().unwrap_or(false) {
            return Err(RemoteError::RankDied(to));
        }
        if st.gone.get(to.index()).copied().unwrap_or(true) {
            return Err(RemoteError::NodeLeft(to));
        }
        if st.left && !protocol {
            return Err(RemoteError::NodeLeft(self.id));
        }
        Ok(())
    }

    /// Whether this node may send to `to` now (see [`may_send`](Inner::may_send)).
    pub(super) fn may_send_now(&self, to: LocationId) -> Result<(), RemoteError> {
        self.may_send(&lock(&self.state), to, false)
    }

    /// Sends a statement to actor `actor` at `to`.
    pub(super) fn tell<M: Serialize>(
        &self,
        to: LocationId,
        actor: u64,
        id: MsgId,
        msg: &M,
    ) -> Result<(), RemoteError> {
        let st = lock(&self.state);
        self.may_send(&st, to, false)?;
        Ok(self.conv.tell(to, actor, id, msg)?)
    }

    /// Asks actor `actor` at `to` a question. The question is opened and sent
    /// under the state lock, so a `Leaving` from `to` either finds it waiting
    /// (and fails it) or refuses it.
    pub(super) fn ask<M: Serialize>(
        &self,
        to: LocationId,
        actor: u64,
        id: MsgId,
        msg: &M,
    ) -> Result<Question<LocationId>, RemoteError> {
        let st = lock(&self.state);
        self.may_send(&st, to, false)?;
        Ok(self.conv.ask(to, actor, id, msg)?)
    }

    /// Sends control message `c` to `to` (`corr` 0: no answer wanted), if
    /// allowed (`protocol`: part of the leave protocol).
    pub(super) fn control(
        &self,
        to: LocationId,
        c: &Control,
        protocol: bool,
    ) -> Result<(), RemoteError> {
        let st = lock(&self.state);
        self.may_send(&st, to, protocol)?;
        Ok(self.conv.control(to, CONTROL, 0, c)?)
    }

    /// Sends the answer to question `corr` of `to` (dropped if either node has
    /// left: the asker then fails it on `Leaving`).
    pub(super) fn send_answer(&self, to: LocationId, corr: u64, answer: Result<&[u8], Refusal>) {
        let st = lock(&self.state);
        if self.may_send(&st, to, false).is_ok() {
            let _ = self.conv.answer(to, corr, answer);
        }
    }

    pub(super) fn note_error(&self, why: String) {
        self.serving.note(why);
    }

    /// Sends what the node's location has buffered.
    pub(super) fn flush(&self) {
        self.conv.link().flush_all();
    }

    /// This node's flow toward `actor` at `at`, made with `window` credits if
    /// it is new (`credit.rs`).
    pub(super) fn flow(&self, at: LocationId, actor: u64, window: u32) -> Arc<Flow> {
        let mut flows = lock(&self.flows);
        Arc::clone(
            flows
                .entry((at, actor))
                .or_insert_with(|| Arc::new(Flow::new(window))),
        )
    }

    /// Credits came back from `from` for its actor `actor` (`dead_letter`: the
    /// credit of a statement reported undelivered).
    pub(super) fn on_credit(&self, from: LocationId, actor: u64, n: u32, dead_letter: bool) {
        let flow = lock(&self.flows).get(&(from, actor)).cloned();
        match flow {
            Some(f) => {
                f.credit(n);
                drop(f);
                self.forget_flow(from, actor, 0);
            }
            // A flow forgotten after `from`'s node left, or a dead letter of a
            // statement sent without credit: nothing to return it to.
            None if dead_letter || self.is_gone_or_left(from) => {}
            None => self.note_error(format!(
                "{from} returned {n} credits for actor {actor}, to which this node sends none"
            )),
        }
    }

    /// Forgets this node's flow toward `actor` at `at` if nothing is left of
    /// it (`credit.rs`, step 4): no one holds it but the table and `holders`
    /// references of the caller, and every credit is back or `at`'s node is
    /// gone. Counting holders under the table's lock is exact: a new holder
    /// clones from the table under that lock (`flow`) or from an address,
    /// which is a holder already.
    pub(super) fn forget_flow(&self, at: LocationId, actor: u64, holders: usize) {
        let gone = self.is_gone_or_left(at);
        let mut flows = lock(&self.flows);
        let unused = flows
            .get(&(at, actor))
            .is_some_and(|f| Arc::strong_count(f) == 1 + holders && (gone || f.is_full()));
        if unused {
            flows.remove(&(at, actor));
        }
    }

    /// Wakes the senders waiting for credits toward `at` (every location:
    /// `None`), so that they find that they may not send.
    pub(super) fn wake_flows(&self, at: Option<LocationId>) {
        let flows: Vec<Arc<Flow>> = lock(&self.flows)
            .iter()
            .filter(|((l, _), _)| at.is_none_or(|at| *l == at))
            .map(|(_, f)| Arc::clone(f))
            .collect();
        for f in flows {
            f.wake_all();
        }
    }

    /// A statement from `from` to this node's `actor` (window `window`) entered
    /// its mailbox, or was rejected: one credit more is owed, sent with its
    /// batch.
    pub(super) fn owe_credit(&self, from: LocationId, actor: u64, window: u32) {
        if let Some(n) = self.due.owe(from, actor, window) {
            self.send_credit(from, actor, n);
            self.flush();
        }
    }

    /// Sends every credit owed (the inbox is empty: the end of a burst).
    pub(super) fn return_credits(&self) {
        let owed = self.due.take_all();
        if owed.is_empty() {
            return;
        }
        for (to, actor, n) in owed {
            self.send_credit(to, actor, n);
        }
        self.flush();
    }

    fn send_credit(&self, to: LocationId, actor: u64, n: u32) {
        if to == self.id {
            // Our own statements: no need for the round trip through the inbox.
            self.on_credit(to, actor, n, false);
        } else {
            // Part of the protocol (a leaving node still returns what it owes);
            // a sender that left needs none.
            let _ = self.control(to, &Control::Credit { actor, n }, true);
        }
    }

    /// Tells `to` that its statement (message `msg` to `actor`) was not
    /// delivered, for `why` (the notice also returns its credit).
    pub(super) fn dead_letter_notice(&self, to: LocationId, actor: u64, msg: MsgId, why: String) {
        let c = Control::DeadLetter {
            actor,
            msg: msg.get(),
            why,
        };
        let _ = self.control(to, &c, true);
        self.flush();
    }
}
