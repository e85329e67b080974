//! Layer 4: the request/reply core — one conversation layer for everything
//! that asks questions across a location or process boundary: distributed
//! objects (`rmi`), distributed actors, and URL-addressed RPC (`rpc`).
//!
//! A conversation owns, once for all of them: correlation ids, the table of
//! pending replies, the `Tell`/`Ask`/`Reply`/`Fault` framing (the `msg`
//! codec's frame kinds), reusable scratch buffers, and the policy for bad bytes
//! from a peer (an error naming the peer and the cause; nothing else is lost).
//! It does not own how frames travel: that is a [`Link`] (`link.rs`), the seam
//! between this core and whatever carries its frames — a world location (its
//! transports: in-process, MPI, shared memory), or an RPC connection over TCP.

mod link;

#[allow(unused_imports)] // the seam: rmi, distributed actors and rpc move onto it
pub(crate) use link::{Link, LinkError};
