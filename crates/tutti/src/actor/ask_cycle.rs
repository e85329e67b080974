//! An ask cycle on purpose, for `tutti hang-demo` and the diagnosis tests (one copy of
//! the actor both use; hidden from the docs, not an API to build on).
//!
//! `n` [`Peer`]s in a ring: each, asked [`Outer`], waits until the ring's gate opens and
//! then asks the next peer [`Inner`] from inside that handler. With every peer inside
//! its `Outer` handler none can take the `Inner` it is asked: a cycle of asks, which
//! the deadlock detector reports (`tutti::diag`). The gate makes the cycle certain:
//! without it a peer could answer `Inner` before its own `Outer` arrived, and the ring
//! would just finish.

use std::sync::Arc;

use super::{spawn, Actor, Addr, AskError, Context};
use crate::msg::{Handler, Message};
use crate::sync::DataflowVar;

/// What [`Inner`] answers.
pub const ANSWER: u32 = 7;

/// A peer of the ring.
pub struct Peer {
    next: Option<Addr<Peer>>,
    gate: Arc<DataflowVar<()>>,
}
impl Actor for Peer {}

/// Sets the peer's next peer.
pub struct Link(pub Addr<Peer>);
impl Message for Link {
    type Reply = ();
}

/// Waits for the gate, then asks the next peer [`Inner`] and returns what that gave.
pub struct Outer;
impl Message for Outer {
    type Reply = Result<u32, AskError>;
}

/// Answered with [`ANSWER`] at once.
pub struct Inner;
impl Message for Inner {
    type Reply = u32;
}

impl Handler<Link> for Peer {
    async fn handle(&mut self, m: Link, _: &mut Context<Self>) {
        self.next = Some(m.0);
    }
}
impl Handler<Outer> for Peer {
    async fn handle(&mut self, _: Outer, _: &mut Context<Self>) -> Result<u32, AskError> {
        self.gate.read().await;
        self.next.as_ref().expect("linked").ask(Inner).await
    }
}
impl Handler<Inner> for Peer {
    async fn handle(&mut self, _: Inner, _: &mut Context<Self>) -> u32 {
        ANSWER
    }
}

/// A ring of peers (see the module docs).
pub struct Ring {
    /// The peers, each linked to the next (the last to the first).
    pub peers: Vec<Addr<Peer>>,
    gate: Arc<DataflowVar<()>>,
}

/// Spawns and links a ring of `n` peers.
pub fn ring(n: usize) -> Ring {
    let gate = Arc::new(DataflowVar::new());
    let peers: Vec<Addr<Peer>> = (0..n)
        .map(|_| {
            spawn(Peer {
                next: None,
                gate: Arc::clone(&gate),
            })
        })
        .collect();
    for (i, p) in peers.iter().enumerate() {
        p.ask_blocking(Link(peers[(i + 1) % n].clone()))
            .expect("a fresh peer answers");
    }
    Ring { peers, gate }
}

impl Ring {
    /// Asks every peer [`Outer`], then opens the gate: every peer is (or will be) inside
    /// its `Outer` handler, asking the next. Returns the asks' futures.
    pub fn close(&self) -> Vec<super::Ask<Result<u32, AskError>>> {
        let asks = self.peers.iter().map(|p| p.ask(Outer)).collect();
        let _ = self.gate.set(());
        asks
    }

    /// [`close`](Self::close), then waits for every outer ask: one at least fails with
    /// [`AskError::Deadlock`] (in the default `Fail` mode), the others get their answer
    /// once it did. An outer ask that could not be answered at all is `Err` itself.
    pub fn close_and_wait(&self) -> Vec<Result<Result<u32, AskError>, AskError>> {
        let asks = self.close();
        crate::runtime::block_on(async {
            let mut out = Vec::with_capacity(asks.len());
            for a in asks {
                out.push(a.await);
            }
            out
        })
    }
}
