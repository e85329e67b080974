//! What the deadlock detector (`crate::diag`) learns of a node's waits: a
//! [`send`](super::RemoteAddr::send) held back by credits waits for room in
//! the actor's mailbox, and a remote [`ask`](super::RemoteAddr::ask) waits for
//! the actor's reply — as their local forms do, so that a cycle through them
//! (a sender held back by an actor that asks that sender, …) is reported like
//! any cycle of actors instead of hanging.
//!
//! The detector's graph is the process's: a wait names the actor's node in
//! it only when the actor runs in this process (a location of this rank).
//! That is what the table here is for: every exported actor, by (world,
//! location, actor id), with its node in the graph. A wait for an actor of
//! another rank names none: a held-back `send` and a remote `ask` note a
//! wait on something unknown, which the world's cross-rank stall check
//! judges (it reports the wait once every location of every rank waits and
//! nothing is on its way). So do the waits for a node's answer that name no
//! actor: a registry request waits for the name's home, and a
//! [`leave`](super::Node::leave) for the other nodes' last messages.

use std::collections::BTreeMap;

use crate::loom::{lock, unmodelled};
use crate::world::LocationId;

/// (world, location, actor id) → the actor's node in the wait-for graph.
type Key = (u64, u32, u64);

/// Process-wide: the detector's graph is (not a protocol under loom).
static EXPORTED: unmodelled::Mutex<BTreeMap<Key, u64>> = unmodelled::Mutex::new(BTreeMap::new());

/// Actor `actor`, whose node in the graph is `node`, is exported at `at`.
pub(super) fn exported(world: u64, at: LocationId, actor: u64, node: u64) {
    lock(&EXPORTED).insert((world, at.raw(), actor), node);
}

/// Actor `actor` at `at` is no longer exported.
pub(super) fn withdrawn(world: u64, at: LocationId, actor: u64) {
    lock(&EXPORTED).remove(&(world, at.raw(), actor));
}

/// The node in the graph of actor `actor` at `at`, if it runs in this process.
pub(super) fn node_of(world: u64, at: LocationId, actor: u64) -> Option<u64> {
    lock(&EXPORTED).get(&(world, at.raw(), actor)).copied()
}
