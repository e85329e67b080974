//! Unit tests that need crate internals (sizes); behaviour is tested in `tests/actor_*.rs`.

use std::mem::size_of;

use super::cell::Cell;
use super::run::ActorRun;
use super::{Actor, Context};

struct Idle;
impl Actor for Idle {}

/// The per-actor allocations of an idle actor with no state of its own, for the memory
/// report (run with `--nocapture` to see them).
#[test]
fn per_actor_bytes() {
    let cell = size_of::<Cell<Idle>>();
    let future = size_of::<ActorRun<Idle>>();
    println!(
        "cell {cell} B (+16 Arc counts), task future {future} B, context {} B",
        size_of::<Context<Idle>>()
    );
    println!(
        "diag node {} B (+16 Arc counts, its name, a registry slot)",
        size_of::<crate::diag::node::Node>()
    );
    assert!(future <= 8, "the task future grew: {future} B");
    // 128 B before `tutti::diag`: + 8 B for the actor's node in the wait-for graph.
    assert!(cell <= 136, "the cell grew: {cell} B");
}
