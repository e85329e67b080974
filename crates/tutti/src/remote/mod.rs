//! Layer 4: distributed actors — actor nodes, remote addresses and the
//! world-wide registry, on the crate's request/reply core (the internal `call`
//! module) over the world's locations.
//!
//! Every location of a [`World`](crate::world::World) runs one actor [`Node`]
//! ([`Node::join`]`(location)`, SPMD: on every location). A node owns its location:
//! a task on the rank's runtime receives the location's messages and hands them to
//! the node's **exported** actors. [`Node::export`] makes a local actor reachable
//! from every location with the message types of a [`Dispatch`](crate::msg::Dispatch) table, and gives
//! its [`RemoteAddr`]; [`RemoteAddr::tell`] and [`RemoteAddr::ask`] then work from
//! any location of any rank, running the actor's own `Handler<M>` impls (the
//! message is decoded by the `Dispatch` and queued in the actor's mailbox, in order
//! with its local messages). Local [`Addr`](crate::actor::Addr)s are untouched: a node adds nothing to
//! the local path. Register the message types with
//! [`msg::register`](crate::msg::register) before building the world, so that
//! ranks built from different code refuse to start instead of exchanging frames
//! they read differently.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use tutti::actor::{self, Actor, Context};
//! use tutti::msg::{Dispatch, Handler, Message, Remote};
//! use tutti::remote::Node;
//! use tutti::world::World;
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
//! A node is one end of a conversation of the request/reply core
//! (the internal `call` module): its statements, questions, answers and refusals are the
//! core's frames, sent as bytes through its location (`link.rs`; the node's own
//! control messages are in `protocol.rs`), so the same path is taken between the
//! locations of one rank and across ranks. Messages from one location to
//! another arrive in order, so **tells from one node to one actor are handled in
//! the order they were sent**. A question carries a correlation id from the
//! core; the answering node answers it (a `Reply`, or a `Fault` naming what went
//! wrong) once the actor's handler has replied, and the asking node's core
//! completes the waiting [`RemoteAsk`].
//!
//! # Failures are answers
//!
//! * An `ask` to an actor that stopped (or was never exported) gets
//!   [`RemoteError::Stopped`]; to a full bounded mailbox of policy `Fail`
//!   [`RemoteError::Full`] (policy `Block`: it waits for room at the actor's
//!   node, see *Backpressure*); a message type the actor's `Dispatch`
//!   lacks, or a payload that does not decode, gets [`RemoteError::Fault`] with
//!   the receiving node's explanation.
//! * A `tell` that cannot be delivered is a **dead letter**: the receiving node
//!   counts it ([`NodeStats::dead_letters`]) and tells the sender, which counts it
//!   in [`NodeStats::undelivered`] and keeps the reason
//!   ([`NodeStats::last_error`]). Tells that reach a node after it began leaving
//!   are counted there only.
//! * Bytes that break the conversation's rules (not a frame, a payload that does
//!   not decode, …) are rejected under the core's one policy for bad bytes
//!   (the internal `call` module): the receiving node counts them
//!   ([`NodeStats::malformed`]) and keeps the cause, naming the sender and its
//!   rank ([`NodeStats::last_error`]); a question is refused with the cause; for
//!   anything else the sender is told, and counts it ([`NodeStats::rejected`]).
//!   Nothing panics, and nothing else is lost.
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
//!   task holds the location until then). A location runs one node per run
//!   of its world, and the ranks start their runs each at its own pace: what
//!   a later node sends to a location whose node of the previous run still
//!   runs waits there for the location's next node (`leave.rs`).
//!
//! The checks of the sending side ("has this node or that one left?") and the
//! send are made under one lock per node, as is the acknowledgement of a
//! `Leaving`, so a message to a node is sent either before its `LeftAck` (and is
//! received by it) or not at all.
//!
//! # Backpressure
//!
//! An actor whose mailbox is bounded (policy `Block` or `Fail`) keeps its
//! bound for senders on other locations and ranks too: each sending node may
//! have at most the mailbox's capacity of statements on the way to it
//! ([`RemoteAddr::window`]). [`RemoteAddr::send`] waits while the window is
//! spent, [`RemoteAddr::tell`] fails with [`RemoteError::Full`]; credits come
//! back, in batches, as the statements enter the actor's mailbox (one that
//! arrives while the mailbox is full is held at the actor's node until there
//! is room). So a producer on one rank flooding a slow actor on another is
//! held to the actor's pace, and the memory both ranks use does not grow with
//! the number of messages. The protocol, its invariants and why it cannot
//! deadlock (nor hold up a fence) are in `credit.rs`. A sender held back by an
//! actor that waits for that sender is a cycle the deadlock detector reports
//! when both run in one process (`wait.rs`).
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
mod credit;
mod error;
mod held;
mod leave;
mod link;
mod monitor;
mod node;
mod protocol;
mod receive;
mod registry;
mod wait;

#[cfg(all(test, loom))]
mod loom_tests;

pub use addr::{RemoteAddr, RemoteAsk, RemoteRef, RemoteSend};
pub use error::{NodeLookupError, NodeRegisterError, RemoteError};
pub use monitor::{RemoteDown, RemoteMonitor};
pub use node::{Leave, Node};

pub(crate) use node::Inner;

/// Counters of a node's traffic that arrived, and of what could not be
/// delivered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Tells and asks from other nodes (and this one) handed to an exported
    /// actor's mailbox.
    pub served: u64,
    /// Tells that arrived here and could not be delivered (no such actor, stopped,
    /// full, or after this node began leaving).
    pub dead_letters: u64,
    /// Tells this node sent that the receiving node reported as dead letters.
    pub undelivered: u64,
    /// Bytes received here that were rejected as malformed (see the core's
    /// policy for bad bytes, in the internal `call` module).
    pub malformed: u64,
    /// Messages this node sent that the receiver rejected as malformed.
    pub rejected: u64,
    /// Bounded actors (of any node) this node holds credits toward now: one
    /// per actor that an address of this node reaches, or that statements
    /// of this node are still on their way to.
    pub credit_flows: usize,
    /// (sending node, actor) pairs this node owes credits to now (returned
    /// in batches, and whenever its inbox empties).
    pub credits_owed: usize,
    /// The last reason given for an undelivered tell or a rejected message.
    pub last_error: Option<String>,
}

/// The home location of `name` among `locations`: the name's stable hash (the one
/// message ids use, [`MsgId::from_name`](crate::msg::MsgId::from_name)) modulo
/// the number of locations, the same on every rank.
fn home_index(name: &str, locations: usize) -> usize {
    (crate::msg::MsgId::from_name(name).get() % locations as u64) as usize
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::actor::Actor;

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
