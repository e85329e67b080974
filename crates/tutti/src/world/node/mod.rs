//! Distributed actors: actor nodes, remote addresses and the world-wide registry.
//!
//! Every location of a [`World`] runs one actor [`Node`]
//! ([`Node::join`]`(location)`, SPMD: on every location). A node owns its location:
//! a task on the rank's runtime receives the location's messages and hands them to
//! the node's **exported** actors. [`Node::export`] makes a local actor reachable
//! from every location with the message types of a [`Dispatch`] table, and gives
//! its [`RemoteAddr`]; [`RemoteAddr::tell`] and [`RemoteAddr::ask`] then work from
//! any location of any rank, running the actor's own `Handler<M>` impls (the
//! message is decoded by the `Dispatch` and queued in the actor's mailbox, in order
//! with its local messages). Local [`Addr`]s are untouched: a node adds nothing to
//! the local path. Register the message types with
//! [`msg::register`](crate::msg::register) before building the world, so that
//! ranks built from different code refuse to start instead of exchanging frames
//! they read differently.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use tutti::actor::{self, Actor, Context};
//! use tutti::msg::{Dispatch, Handler, Message, Remote};
//! use tutti::world::{Node, World};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Greet(String);
//! impl Message for Greet { type Reply = String; }
//! impl Remote for Greet { const NAME: &'static str = "doc.Greet"; }
//!
//! struct Greeter;
//! impl Actor for Greeter {}
//! impl Handler<Greet> for Greeter {
//!     async fn handle(&mut self, m: Greet, _: &mut Context<Self>) -> String {
//!         format!("hello, {}", m.0)
//!     }
//! }
//!
//! let world = World::builder().locations(3).workers(2).build().unwrap();
//! let answers = world.run(|loc| async move {
//!     let node = Node::join(loc);
//!     if node.id().index() == 0 {
//!         // Location 0 offers a greeter under a world-wide name…
//!         let mut table = Dispatch::new();
//!         table.register::<Greet>().unwrap();
//!         let greeter = node.export(&actor::spawn(Greeter), table);
//!         node.register("greeter", &greeter).await.unwrap();
//!     }
//!     node.barrier().await; // registered before anyone looks
//!     // …and every location asks it.
//!     let greeter = node.lookup::<Greeter>("greeter").await.unwrap();
//!     let answer = greeter.ask(Greet(node.id().to_string())).await.unwrap();
//!     node.barrier().await; // everyone has asked before location 0 leaves
//!     node.leave().await;
//!     answer
//! });
//! assert_eq!(answers[2], "hello, location 2");
//! ```
//!
//! # The conversation
//!
//! A node's messages are `msg` codec frames sent as bytes through its location
//! (`protocol.rs`), so the same path is taken between the locations of one rank
//! and across ranks. Messages from one location to another arrive in order, so
//! **tells from one node to one actor are handled in the order they were sent**.
//! A question carries a correlation id; the answering node sends a `Reply` (or a
//! `Fault` naming what went wrong) with it once the actor's handler has replied,
//! and the asking node completes the waiting [`RemoteAsk`].
//!
//! # Failures are answers
//!
//! * An `ask` to an actor that stopped (or was never exported) gets
//!   [`RemoteError::Stopped`]; to a full bounded mailbox [`RemoteError::Full`]
//!   (remote messages never wait for room); a message type the actor's `Dispatch`
//!   lacks, or a payload that does not decode, gets [`RemoteError::Fault`] with
//!   the receiving node's explanation.
//! * A `tell` that cannot be delivered is a **dead letter**: the receiving node
//!   counts it ([`NodeStats::dead_letters`]) and tells the sender, which counts it
//!   in [`NodeStats::undelivered`] and keeps the reason
//!   ([`NodeStats::last_error`]). Tells that reach a node after it began leaving
//!   are counted there only.
//! * Bytes that are not a node frame are counted ([`NodeStats::malformed`]) and
//!   the sender is told ([`NodeStats::rejected`]); nothing panics.
//! * **Leaving.** [`Node::leave`] ends a node: it unregisters its names, drops its
//!   exports and tells every other node `Leaving`; each answers `LeftAck` and from
//!   then on sends it nothing. A node that hears `Leaving` from another fails every
//!   question still waiting for that node with [`RemoteError::NodeLeft`], and so
//!   does every later `tell` or `ask` to it, at once. Because messages between two
//!   locations arrive in order, a question was either handled before the `Leaving`
//!   (its reply comes first) or fails when the `Leaving` arrives: never a hang.
//!   The leaving node keeps receiving (counting what arrives as dead letters)
//!   until every node it told has acknowledged, so nothing is left unreceived in
//!   the world. A node must call `leave` before its world ends (its receiving
//!   task holds the location until then).
//!
//! The checks of the sending side ("has this node or that one left?") and the
//! send are made under one lock per node, as is the acknowledgement of a
//! `Leaving`, so a message to a node is sent either before its `LeftAck` (and is
//! received by it) or not at all.
//!
//! # The world-wide registry
//!
//! [`Node::register`] gives an exported actor a name that every location can
//! [`lookup`](Node::lookup) (typed: a wrong actor type is
//! [`NodeLookupError::WrongType`]). Each name has a **home** location, the hash
//! of the name modulo the number of locations ([`Node::home_of`]); the home holds
//! the name's entry and decides every operation on it in the order they arrive,
//! so the registry is consistent per name: the first registration wins and a
//! later one of the same name gets [`NodeRegisterError::Taken`] naming the
//! holder. An entry is removed when its actor stops (the owning node sends the
//! home an `Unregister` from the actor's stop sequence; a lookup that overtakes it
//! returns an address whose questions fail with `Stopped`), when it is
//! [`unregister`](Node::unregister)ed, and when its owner leaves. Names whose home
//! has left can no longer be registered or looked up
//! ([`NodeLookupError::HomeLeft`]).

mod addr;
mod error;
mod protocol;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

pub use addr::{RemoteAddr, RemoteAsk};
pub use error::{NodeLookupError, NodeRegisterError, RemoteError};

use self::addr::{AnswerSlot, Answered};
use self::protocol::{Answer, Control, Refusal};
use super::{Collective, Location, LocationId, World};
use crate::actor::{Actor, Addr, AskError, MonitorRef, Name};
use crate::msg::codec::{self, Frame, FrameKind};
use crate::msg::{Dispatch, RemoteReply};

/// One location's actor node: its exported actors, its questions waiting for
/// answers, the registry entries it is home for, and the task that receives for
/// it. Cheap to clone (a handle). See the [module documentation](self).
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
    loc: Arc<Location>,
}

/// Counters of a node's undeliverable traffic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Tells that arrived here and could not be delivered (no such actor, stopped,
    /// full, undecodable, or after this node began leaving).
    pub dead_letters: u64,
    /// Tells this node sent that the receiving node reported as dead letters.
    pub undelivered: u64,
    /// Received messages that were not node frames.
    pub malformed: u64,
    /// Messages this node sent that the receiver rejected as malformed.
    pub rejected: u64,
    /// The last reason given for an undelivered tell or a rejected message.
    pub last_error: Option<String>,
}

/// What a node shares between its handles, its receiving task and the reply tasks.
pub(crate) struct Inner {
    id: LocationId,
    /// The rank's world (for its runtime).
    world: World,
    locations: usize,
    next_corr: AtomicU64,
    /// Every send and every change of the leave state happens under this lock.
    state: Mutex<State>,
    /// Exported actors by actor id. Lock order: `exports`, then `state`.
    exports: Mutex<HashMap<u64, Export>>,
    /// The registry entries this location is the home of.
    home: Mutex<HashMap<String, HomeEntry>>,
    dead_letters: AtomicU64,
    undelivered: AtomicU64,
    malformed: AtomicU64,
    rejected: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// The receiving task has ended.
    ended: AtomicBool,
}

struct State {
    /// The node's location, until its receiving task ends (then the location is
    /// held only by the node's handles, and released with the last of them).
    loc: Option<Arc<Location>>,
    /// This node has begun leaving: it sends nothing but protocol messages.
    left: bool,
    /// Locations whose node has left (we heard their `Leaving`).
    gone: Vec<bool>,
    /// Questions waiting for an answer, by correlation id.
    pending: HashMap<u64, Pending>,
    /// `LeftAck`s still expected.
    acks: usize,
    /// The leave is complete (all acknowledged).
    finished: bool,
    /// `leave` calls waiting for `finished` and the task's end.
    waiters: Vec<Waker>,
}

struct Pending {
    to: LocationId,
    slot: Arc<AnswerSlot>,
}

/// An exported actor.
struct Export {
    target: Arc<dyn Exported>,
    names: Vec<Name>,
    monitor: MonitorRef,
}

struct HomeEntry {
    type_name: String,
    location: u32,
    actor: u64,
}

/// An exported actor with its type erased: queues a decoded frame in its mailbox.
trait Exported: Send + Sync {
    /// Queues the `Tell`/`Ask` frame; for an `Ask`, the reply to wait for.
    fn incoming(&self, frame: &Frame<'_>) -> Result<Option<RemoteReply>, Refusal>;
    fn type_name(&self) -> &'static str;
}

struct Export_<A: Actor> {
    addr: Addr<A>,
    dispatch: Dispatch<A>,
}

impl<A: Actor> Exported for Export_<A> {
    fn incoming(&self, frame: &Frame<'_>) -> Result<Option<RemoteReply>, Refusal> {
        let incoming = self
            .dispatch
            .incoming(frame)
            .map_err(|e| Refusal::Fault(e.to_string()))?;
        match self.addr.enqueue(incoming.envelope) {
            Ok(()) => Ok(incoming.reply),
            // Dropping the envelope closes its reply slot (nobody waits on it).
            Err((_, AskError::Full)) => Err(Refusal::Full),
            Err(_) => Err(Refusal::Stopped),
        }
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<A>()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

thread_local! {
    /// A frame being built, reused (a message is copied out of it by `send_slice`).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with an empty scratch buffer of this thread.
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let r = f(&mut buf);
            if buf.capacity() > 1 << 20 {
                *buf = Vec::new();
            }
            r
        }
        // Re-entered (a send from inside a send): a fresh buffer.
        Err(_) => f(&mut Vec::new()),
    })
}

/// The home location of `name` among `locations`: the name's stable hash (the one
/// message ids use, [`MsgId::from_name`](crate::msg::MsgId::from_name)) modulo
/// the number of locations, the same on every rank.
fn home_index(name: &str, locations: usize) -> usize {
    (crate::msg::MsgId::from_name(name).get() % locations as u64) as usize
}

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
            next_corr: AtomicU64::new(1),
            state: Mutex::new(State {
                loc: Some(Arc::clone(&loc)),
                left: false,
                gone: vec![false; locations],
                pending: HashMap::new(),
                acks: 0,
                finished: false,
                waiters: Vec::new(),
            }),
            exports: Mutex::new(HashMap::new()),
            home: Mutex::new(HashMap::new()),
            dead_letters: AtomicU64::new(0),
            undelivered: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            last_error: Mutex::new(None),
            ended: AtomicBool::new(false),
        });
        // Detached: it ends when the node has left.
        drop(
            world
                .runtime()
                .spawn(receive(Arc::clone(&inner), Arc::clone(&loc))),
        );
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
        // Watched before the export is recorded, outside the locks: an actor that
        // has already stopped calls back at once.
        let monitor = addr.on_stop(move |_| {
            if let Some(inner) = weak.upgrade() {
                inner.actor_stopped(actor);
            }
        });
        let target: Arc<dyn Exported> = Arc::new(Export_ {
            addr: addr.clone(),
            dispatch,
        });
        let mut exports = lock(&self.inner.exports);
        let replaced = exports.remove(&actor);
        if lock(&self.inner.state).left {
            monitor.cancel();
        } else {
            let names = replaced.as_ref().map(|e| e.names.clone());
            exports.insert(
                actor,
                Export {
                    target,
                    names: names.unwrap_or_default(),
                    monitor,
                },
            );
            // A stop that called back before the insert found nothing to remove;
            // its mailbox is closed by then.
            if addr.is_stopped() {
                exports.remove(&actor);
            }
        }
        drop(exports);
        if let Some(old) = replaced {
            old.monitor.cancel();
        }
        RemoteAddr::new(&self.inner, self.inner.id, actor)
    }

    /// The home location of `name`: where its registry entry lives.
    ///
    /// ```
    /// use tutti::world::{Node, World};
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
            Answer::Registered => Ok(()),
            Answer::Taken {
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
            Answer::Found {
                type_name,
                location,
                actor,
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
            Answer::Unregistered(done) => Ok(done),
            _ => Ok(false),
        }
    }

    /// The node's counters of undeliverable traffic.
    pub fn stats(&self) -> NodeStats {
        let i = &self.inner;
        NodeStats {
            dead_letters: i.dead_letters.load(Ordering::Relaxed),
            undelivered: i.undelivered.load(Ordering::Relaxed),
            malformed: i.malformed.load(Ordering::Relaxed),
            rejected: i.rejected.load(Ordering::Relaxed),
            last_error: lock(&i.last_error).clone(),
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
        let st = lock(&self.inner.state);
        self.inner.send(&st, to, bytes, false)?;
        drop(st);
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
        Poll::Pending
    }
}

impl Inner {
    fn next_corr(&self) -> u64 {
        self.next_corr.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends `bytes` to `to` under the state lock: refused if `to`'s node has
    /// left, or (for what is not part of the leave protocol) if this one has.
    fn send(
        &self,
        st: &State,
        to: LocationId,
        bytes: &[u8],
        protocol: bool,
    ) -> Result<(), RemoteError> {
        if st.gone.get(to.index()).copied().unwrap_or(true) {
            return Err(RemoteError::NodeLeft(to));
        }
        if st.left && !protocol {
            return Err(RemoteError::NodeLeft(self.id));
        }
        match &st.loc {
            Some(loc) if loc.send_slice(to, bytes).is_ok() => {}
            _ => return Err(RemoteError::NodeLeft(to)),
        }
        Ok(())
    }

    /// Sends a frame built by `build` (into a scratch buffer) under the state lock.
    fn send_built(
        &self,
        to: LocationId,
        protocol: bool,
        build: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), RemoteError> {
        with_scratch(|buf| {
            build(buf);
            let st = lock(&self.state);
            self.send(&st, to, buf, protocol)
        })
    }

    /// Sends a question (an `Ask` frame, or a registry request) with a fresh
    /// correlation id and registers its answer slot, under one lock (so a
    /// `Leaving` from `to` either finds it waiting or refuses it).
    fn ask_frame(
        &self,
        to: LocationId,
        build: impl FnOnce(u64, &mut Vec<u8>) -> Result<(), RemoteError>,
    ) -> Result<(u64, Arc<AnswerSlot>), RemoteError> {
        let corr = self.next_corr();
        let slot = Arc::new(AnswerSlot::default());
        with_scratch(|buf| {
            build(corr, buf)?;
            let mut st = lock(&self.state);
            self.send(&st, to, buf, false)?;
            st.pending.insert(
                corr,
                Pending {
                    to,
                    slot: Arc::clone(&slot),
                },
            );
            Ok::<(), RemoteError>(())
        })?;
        self.flush();
        Ok((corr, slot))
    }

    /// A question that is given up (its future dropped).
    fn forget(&self, corr: u64) {
        lock(&self.state).pending.remove(&corr);
    }

    /// A registry request to `home`: answered here if this is the home.
    fn request(
        self: &Arc<Self>,
        home: LocationId,
        c: &Control,
    ) -> Result<RegistryAnswer, RemoteError> {
        if home == self.id {
            {
                let st = lock(&self.state);
                if st.left {
                    return Err(RemoteError::NodeLeft(self.id));
                }
            }
            return Ok(RegistryAnswer::Ready(Some(self.at_home(self.id, c))));
        }
        let src = self.id.raw();
        let (corr, slot) = self.ask_frame(home, |corr, buf| {
            protocol::control(src, home.raw(), corr, c, buf);
            Ok(())
        })?;
        Ok(RegistryAnswer::Waiting(Answered::new(
            Arc::clone(self),
            corr,
            slot,
        )))
    }

    /// The home's decision on a registry request from `from`.
    fn at_home(&self, from: LocationId, c: &Control) -> Answer {
        let mut home = lock(&self.home);
        match c {
            Control::Register {
                name,
                type_name,
                actor,
            } => match home.get(name.as_str()) {
                Some(e) => Answer::Taken {
                    location: e.location,
                    actor: e.actor,
                },
                None => {
                    home.insert(
                        name.clone(),
                        HomeEntry {
                            type_name: type_name.clone(),
                            location: from.raw(),
                            actor: *actor,
                        },
                    );
                    Answer::Registered
                }
            },
            Control::Unregister { name, actor } => {
                let mine = home
                    .get(name.as_str())
                    .is_some_and(|e| e.location == from.raw() && e.actor == *actor);
                if mine {
                    home.remove(name.as_str());
                }
                Answer::Unregistered(mine)
            }
            Control::Lookup { name } => match home.get(name.as_str()) {
                Some(e) => Answer::Found {
                    type_name: e.type_name.clone(),
                    location: e.location,
                    actor: e.actor,
                },
                None => Answer::NotFound,
            },
            _ => Answer::NotFound,
        }
    }

    /// Forgets a name recorded for `actor` (its registration was refused).
    fn forget_name(&self, actor: u64, name: &Name) {
        if let Some(e) = lock(&self.exports).get_mut(&actor) {
            e.names.retain(|n| n != name);
        }
    }

    /// An exported actor stopped (from its stop sequence): drop the export and
    /// remove its names at their homes.
    fn actor_stopped(&self, actor: u64) {
        let export = lock(&self.exports).remove(&actor);
        if let Some(e) = export {
            self.unregister_names(actor, &e.names);
            // The export's address is dropped here, outside the locks.
        }
    }

    /// Tells the homes of `names` that `actor` no longer holds them.
    fn unregister_names(&self, actor: u64, names: &[Name]) {
        for n in names {
            let home = LocationId::new(home_index(n.as_str(), self.locations) as u32);
            let c = Control::Unregister {
                name: n.as_str().to_string(),
                actor,
            };
            if home == self.id {
                self.at_home(self.id, &c);
            } else {
                // corr 0: no answer is wanted. A home that left has no entry left.
                let _ = self.send_built(home, true, |buf| {
                    protocol::control(self.id.raw(), home.raw(), 0, &c, buf)
                });
            }
        }
        if !names.is_empty() {
            self.flush();
        }
    }

    /// The first step of leaving (idempotent).
    fn begin_leave(&self) {
        // Marked left before the exports go, so that a question arriving in
        // between is not answered `Stopped`: from now on requests are dead
        // letters, and their askers learn of the leave from `Leaving`.
        let exports: Vec<(u64, Export)> = {
            let mut ex = lock(&self.exports);
            let mut st = lock(&self.state);
            if st.left {
                return;
            }
            st.left = true;
            drop(st);
            ex.drain().collect()
        };
        for (actor, e) in &exports {
            e.monitor.clone().cancel();
            self.unregister_names(*actor, &e.names);
        }
        drop(exports);
        let mut st = lock(&self.state);
        let mut acks = 0;
        with_scratch(|buf| {
            for i in 0..self.locations {
                let to = LocationId::new(i as u32);
                if to == self.id || st.gone[i] {
                    continue;
                }
                buf.clear();
                protocol::control(self.id.raw(), to.raw(), 0, &Control::Leaving, buf);
                if self.send(&st, to, buf, true).is_ok() {
                    acks += 1;
                }
            }
        });
        st.acks = acks;
        if acks == 0 {
            st.finished = true;
            // Wake the receiving task so that it sees the end.
            with_scratch(|buf| {
                protocol::control(self.id.raw(), self.id.raw(), 0, &Control::Wake, buf);
                if let Some(loc) = &st.loc {
                    let _ = loc.send_slice(self.id, buf);
                }
            });
        }
        drop(st);
        self.flush();
    }

    fn note_error(&self, why: String) {
        *lock(&self.last_error) = Some(why);
    }

    /// Handles one received message; returns false once the node has finished
    /// leaving.
    fn on_message(self: &Arc<Self>, from: LocationId, bytes: Option<&[u8]>) {
        let Some(bytes) = bytes else {
            self.malformed(from, "a typed value, not a node frame".to_string());
            return;
        };
        let frame = match codec::decode_frame(bytes) {
            Ok(f) => f,
            Err(e) => {
                self.malformed(from, format!("not a node frame: {e}"));
                return;
            }
        };
        let h = *frame.header();
        match h.kind {
            FrameKind::Tell | FrameKind::Ask => self.on_request(from, &frame),
            FrameKind::Reply => self.complete(h.corr, Ok(frame.payload().to_vec())),
            FrameKind::Fault => {
                let why = match frame.decode::<Refusal>() {
                    Ok(r) => RemoteError::from(r),
                    Err(e) => RemoteError::Fault(format!("an undecodable fault: {e}")),
                };
                self.complete(h.corr, Err(why));
            }
            FrameKind::Control => match frame.decode::<Control>() {
                Ok(c) => self.on_control(from, h.corr, c),
                Err(e) => self.malformed(from, format!("an undecodable control message: {e}")),
            },
        }
    }

    fn malformed(&self, from: LocationId, why: String) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
        let c = Control::Rejected { why: why.clone() };
        self.note_error(format!("from {from}: {why}"));
        let _ = self.send_built(from, true, |buf| {
            protocol::control(self.id.raw(), from.raw(), 0, &c, buf)
        });
    }

    fn is_gone_or_left(&self, from: LocationId) -> bool {
        let st = lock(&self.state);
        st.left || st.gone.get(from.index()).copied().unwrap_or(true)
    }

    /// A `Tell` or `Ask` for one of the exported actors.
    fn on_request(self: &Arc<Self>, from: LocationId, frame: &Frame<'_>) {
        let h = *frame.header();
        if self.is_gone_or_left(from) {
            // After this node began leaving (its `Leaving` tells the asker).
            self.dead_letters.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let target = lock(&self.exports)
            .get(&h.target)
            .map(|e| Arc::clone(&e.target));
        let outcome = match target {
            Some(t) => t.incoming(frame),
            None => Err(Refusal::Stopped),
        };
        match (h.kind, outcome) {
            (FrameKind::Tell, Ok(_)) => {}
            (FrameKind::Tell, Err(r)) => {
                self.dead_letters.fetch_add(1, Ordering::Relaxed);
                let why = match r {
                    Refusal::Stopped => format!("no running actor {} at {}", h.target, self.id),
                    Refusal::Full => {
                        format!("the mailbox of actor {} at {} is full", h.target, self.id)
                    }
                    Refusal::Fault(why) => why,
                };
                let c = Control::DeadLetter {
                    actor: h.target,
                    msg: h.msg.get(),
                    why,
                };
                let _ = self.send_built(from, true, |buf| {
                    protocol::control(self.id.raw(), from.raw(), 0, &c, buf)
                });
            }
            (_, Ok(Some(reply))) => {
                let inner = Arc::clone(self);
                drop(self.world.runtime().spawn(async move {
                    let r = reply.await;
                    inner.send_answer(
                        from,
                        h.corr,
                        r.map_err(|e| match e {
                            crate::msg::ReplyError::NoReply(_) => Refusal::Stopped,
                            e => Refusal::Fault(e.to_string()),
                        }),
                    );
                }));
            }
            (_, Ok(None)) => self.send_answer(
                from,
                h.corr,
                Err(Refusal::Fault("a question without a reply slot".into())),
            ),
            (_, Err(r)) => self.send_answer(from, h.corr, Err(r)),
        }
    }

    /// Sends the answer to question `corr` of `to` (dropped if either node has
    /// left: the asker then fails it on `Leaving`).
    fn send_answer(&self, to: LocationId, corr: u64, r: Result<Vec<u8>, Refusal>) {
        let src = self.id.raw();
        let sent = self.send_built(to, false, |buf| match &r {
            Ok(bytes) => {
                if !protocol::reply(src, to.raw(), corr, bytes, buf) {
                    buf.clear();
                    let why = Refusal::Fault(format!(
                        "the reply ({} bytes) does not fit in a frame",
                        bytes.len()
                    ));
                    protocol::fault(src, to.raw(), corr, &why, buf);
                }
            }
            Err(why) => protocol::fault(src, to.raw(), corr, why, buf),
        });
        if sent.is_ok() {
            self.flush();
        }
    }

    /// Completes question `corr` (an answer to a question given up is dropped).
    fn complete(&self, corr: u64, answer: Result<Vec<u8>, RemoteError>) {
        let pending = lock(&self.state).pending.remove(&corr);
        if let Some(p) = pending {
            p.slot.fill(answer);
        }
    }

    fn on_control(self: &Arc<Self>, from: LocationId, corr: u64, c: Control) {
        match c {
            Control::Register { .. } | Control::Unregister { .. } | Control::Lookup { .. } => {
                if self.is_gone_or_left(from) {
                    self.dead_letters.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                let a = self.at_home(from, &c);
                if corr != 0 {
                    let _ = self.send_built(from, true, |buf| {
                        protocol::answer(self.id.raw(), from.raw(), corr, &a, buf)
                    });
                    self.flush();
                }
            }
            Control::DeadLetter { actor, msg, why } => {
                self.undelivered.fetch_add(1, Ordering::Relaxed);
                self.note_error(format!(
                    "a tell of message {} to actor {actor} at {from} was not delivered: {why}",
                    protocol::msg_id(msg)
                ));
            }
            Control::Rejected { why } => {
                self.rejected.fetch_add(1, Ordering::Relaxed);
                self.note_error(format!("{from} rejected a message: {why}"));
            }
            Control::Leaving => {
                let mut failed = Vec::new();
                {
                    let mut st = lock(&self.state);
                    if let Some(g) = st.gone.get_mut(from.index()) {
                        *g = true;
                    }
                    let ids: Vec<u64> = st
                        .pending
                        .iter()
                        .filter(|(_, p)| p.to == from)
                        .map(|(c, _)| *c)
                        .collect();
                    for c in ids {
                        if let Some(p) = st.pending.remove(&c) {
                            failed.push(p.slot);
                        }
                    }
                    // The acknowledgement goes under the same lock as every send:
                    // nothing follows it to `from`. (`from` is gone now: send directly.)
                    with_scratch(|buf| {
                        protocol::control(self.id.raw(), from.raw(), 0, &Control::LeftAck, buf);
                        if let Some(loc) = &st.loc {
                            let _ = loc.send_slice(from, buf);
                        }
                    });
                }
                self.flush();
                for s in failed {
                    s.fill(Err(RemoteError::NodeLeft(from)));
                }
                lock(&self.home).retain(|_, e| e.location != from.raw());
            }
            Control::LeftAck => {
                let mut st = lock(&self.state);
                if st.left && st.acks > 0 {
                    st.acks -= 1;
                    if st.acks == 0 {
                        st.finished = true;
                    }
                }
            }
            Control::Wake => {}
        }
    }

    /// Whether the leave is complete (the receiving task then ends).
    fn finished(&self) -> bool {
        lock(&self.state).finished
    }

    /// Sends what the node's location has buffered.
    fn flush(&self) {
        if let Some(loc) = &lock(&self.state).loc {
            loc.flush();
        }
    }

    /// The receiving task ends: fail what still waits, let the location go and
    /// wake `leave`.
    fn end(&self, loc: Arc<Location>) {
        let held = lock(&self.state).loc.take();
        drop(held);
        // What is still in the inbox (our own messages to ourselves) is dead.
        loc.flush();
        while let Some(d) = loc.try_recv() {
            self.dead_letters.fetch_add(1, Ordering::Relaxed);
            drop(d);
        }
        drop(loc);
        let (pending, waiters) = {
            let mut st = lock(&self.state);
            self.ended.store(true, Ordering::Release);
            (
                std::mem::take(&mut st.pending),
                std::mem::take(&mut st.waiters),
            )
        };
        for (_, p) in pending {
            p.slot.fill(Err(RemoteError::NodeLeft(self.id)));
        }
        for w in waiters {
            w.wake();
        }
    }
}

/// The node's receiving task.
async fn receive(inner: Arc<Inner>, loc: Arc<Location>) {
    loop {
        {
            let d = loc.recv().await;
            let from = d.from();
            inner.on_message(from, d.bytes());
        }
        if inner.finished() {
            break;
        }
    }
    inner.end(loc);
}

/// A registry answer: at once (this location is the home) or from the home.
enum RegistryAnswer {
    Ready(Option<Answer>),
    Waiting(Answered),
}

impl Future for RegistryAnswer {
    type Output = Result<Answer, RemoteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            RegistryAnswer::Ready(a) => match a.take() {
                Some(a) => Poll::Ready(Ok(a)),
                None => Poll::Ready(Err(RemoteError::Fault("polled after completion".into()))),
            },
            RegistryAnswer::Waiting(w) => match Pin::new(w).poll(cx) {
                Poll::Ready(Ok(bytes)) => Poll::Ready(
                    codec::decode::<Answer>(&bytes)
                        .map_err(|e| RemoteError::BadReply(e.to_string())),
                ),
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn homes_are_fixed_values() {
        // Every rank must agree: the hash is part of the protocol.
        assert_eq!(home_index("anything", 1), 0);
        // `MsgId::from_name("bank.Deposit")` is 0x06dc_bfd0_b646_1411.
        assert_eq!(home_index("bank.Deposit", 1 << 16), 0x1411);
        assert_eq!(
            home_index("bank.Deposit", 7),
            (0x06dc_bfd0_b646_1411u64 % 7) as usize
        );
    }

    #[test]
    fn nodes_and_addresses_are_send_and_sync() {
        fn is<T: Send + Sync>() {}
        is::<Node>();
        struct A;
        impl Actor for A {}
        is::<RemoteAddr<A>>();
        is::<RemoteAsk<u64>>();
    }
}
