//! Layer 4: the request/reply core — one conversation layer for everything
//! that asks questions across a location or process boundary: distributed
//! objects ([`rmi`](crate::rmi)), distributed actors ([`remote`](crate::remote)),
//! and URL-addressed RPC.
//!
//! A [`Conversation`] owns, once for all of them: correlation ids and the table
//! of questions waiting for answers ([`Pending`], `pending.rs`), the framing of
//! statements, questions, answers and refusals as `msg` codec frames
//! ([`FrameBuf`], `wire.rs`), reusable scratch buffers, and the policy for bad
//! bytes from a peer (below). It does not own how frames travel: that is a
//! [`Link`] (`link.rs`) — the world's locations (`world.rs`: in-process and MPI
//! transports, aggregated, counted by quiescence detection), or an RPC
//! connection over TCP.
//!
//! # The owner's side
//!
//! Whoever owns the receiving side (a location's task, an RPC connection's
//! reader) hands each arrival to [`Conversation::receive`] with the peer it came
//! from. The core files answers itself — completing the question they answer,
//! whose asker awaits a [`Question`] or takes the [`Answer`] with
//! [`Pending::take`] — and hands out the requests (`Tell`, `Ask`) and the
//! owner's own control messages for the owner to serve. An owner that learns
//! that a peer is gone calls [`Conversation::peer_gone`]: every question pending
//! on that peer fails with an error naming it. Requests are served by the
//! owner: the distributed actors' node and the RPC endpoint through the one
//! serving side below; an RMI location, which runs its methods inside its own
//! task, itself (`rmi/execute.rs`). A question is answered with
//! [`Conversation::answer`].
//!
//! # Frames
//!
//! Every frame is a codec frame (48-byte header, then the payload); several
//! may travel together as one batch. Header fields not listed are 0.
//!
//! | kind | header | payload |
//! |---|---|---|
//! | `Tell` | `target`, `msg` (the message type), `corr` = the number of messages after the first | a **run**: one or more messages of that type for that target, each encoded after the other |
//! | `Ask` | `target`, `msg`, `corr` (the question's id, never 0) | the message |
//! | `Reply` | `corr` | the reply, encoded |
//! | `Fault` | `corr` | a `Refusal`: no target, full, or failed with a reason |
//! | `Control` | `msg` = `tutti.call.Rejected` | the core's notice that bytes from the receiver were rejected: the cause |
//! | `Control` | `msg`, `corr` as the owner uses them | an owner's own control message |
//!
//! `src` and `dst` carry the link's numbers for both ends (the world's location
//! ids; 0 for a connection). A run keeps consecutive statements to one target
//! with one message type under one header: a sender issuing many small
//! statements — one per key of a sort — pays 48 bytes per run, not per
//! statement.
//!
//! # Typed and framed
//!
//! Between locations of one process nothing is framed: requests move as typed
//! values, and an answer is filed as a value ([`ReplyBody::Value`]) in the same
//! pending table, under the same correlation ids, as the encoded answers from
//! other processes ([`ReplyBody::Bytes`]). Only bytes can be bad.
//!
//! # Bad bytes
//!
//! Nothing a peer sends is trusted before it is checked: the frame (magic,
//! version, kind, flags, lengths, padding: the codec's checks), that its `src`
//! and `dst` are the peer and this end, that an answer answers a question asked
//! of that peer, and — by the owner, as it serves it — that a request's
//! payload decodes as its message type and names a target the owner has. Bytes
//! that fail are **rejected**, and the policy is one for every owner:
//!
//! * **The error names the peer and the cause**: a [`BadFrame`] (the peer with
//!   its rank, or its address, and what is wrong), given to the owner, which
//!   reports it through its own API.
//! * **The sender learns it.** A rejected question is refused (`Fault`, with
//!   the cause), so its asker fails instead of waiting forever; anything else is
//!   answered with a `Rejected` notice, which the sender's core hands to its
//!   owner ([`Received::Rejected`]). Notices are never answered.
//! * **Nothing else is lost.** The other frames of the same arrival are still
//!   handled (only after a frame that does not parse at all is the rest of that
//!   arrival unreadable), a refusal or reply that does not decode fails only its
//!   own question (`CallError::BadAnswer`), other questions pending on the peer
//!   keep waiting, and the conversation goes on. Nothing panics and no job is
//!   taken down by the core.
//!
//! Owners report a rejection where their API reports errors: a distributed
//! actor's node counts it in its stats and keeps the cause; an RMI location,
//! which has no error value to return from `async_rmi`, panics *on the location
//! that sent the bad bytes* when the notice reaches it — naming the location and
//! rank that rejected them and the cause — while the receiving location goes on.
//!
//! # The serving side
//!
//! Serving a request is as shared as asking one (`serve.rs`). An owner that
//! serves implements [`Server`](serve::Server) with what is its own — its
//! targets by number, its control messages, whether it serves a peer now, how
//! it tells a sender that a statement was not delivered — and hands each
//! arrival to [`serve::receive`]. A target is a [`Target`](serve::Target),
//! in practice a [`ServedObject`](serve::ServedObject): it decodes a request
//! with the object's message table and delivers it
//! ([`Deliver`](serve::Deliver)) — to an actor's mailbox through the one
//! actor adapter (`Deliver` for an actor's `Addr`), or to an RPC object's
//! sequential group. Every request frame is served by
//! [`serve::serve`], by these rules, in this order:
//!
//! | the request | what happens | the sender learns | counted |
//! |---|---|---|---|
//! | from a peer the owner does not serve now | dropped | through the owner's protocol (a node's `Leaving`) | dead letter |
//! | a `Tell` run of more than one message | rejected | `Rejected` notice | malformed |
//! | no such message type for the target, or a payload that does not decode | rejected | a question: `Fault` naming the cause; a statement: notice | malformed |
//! | a `Tell` the target takes | queued there | nothing | served |
//! | a `Tell` with no target, or one that refuses it (stopped, full) | dead letter | the owner's way: a node's `DeadLetter`, an endpoint's notice | dead letter |
//! | an `Ask` the target takes | answered once the target replies: `Reply`, or `Fault` (below) | the answer | served |
//! | an `Ask` with no target, or one that refuses it | `Fault`: `NoTarget` or `Full` | the fault | — |
//!
//! * **S1. Every question gets one answer.** A question that is served is
//!   answered exactly once: its reply, or a `Fault`; an owner withholds an
//!   answer only to a peer it no longer sends to (a node that left — the
//!   asker's question fails there on `Leaving`).
//! * **S2. A reply that never comes is one refusal** ([`serve::refusal`]): a
//!   question dropped by an actor is `NoTarget` — an actor drops its
//!   questions only as it stops, and a question that arrives just after the
//!   stop is `NoTarget` too, so the asker learns the same thing whichever
//!   came first (as a local `ask` reports `Stopped` for both); dropped by an
//!   object that goes on (a handler that panicked) it is `Failed`, naming
//!   why, since the target is still there; discarded by a full mailbox it is
//!   `Full`; a reply that does not encode is `Failed` with the cause.
//! * **S3. No task per answer.** The reply's waker sends the answer, from
//!   the task that replied: nothing is queued between the handler and the
//!   link.
//! * **S4. Counted, then told.** What is rejected is counted (and its cause
//!   kept as the owner's last error) before the sender is told, so a sender
//!   that waits for the notice sees the count; a notice from a peer that
//!   rejected this end's bytes is counted as rejected, naming the peer.

mod conversation;
mod error;
mod link;
mod pending;
pub(crate) mod serve;
mod wire;
mod world;

#[cfg(all(test, not(loom)))]
mod tests;

pub(crate) use conversation::{with_scratch, Conversation, Received};
pub(crate) use error::{BadFrame, CallError, Refusal};
pub(crate) use link::{Link, LinkError};
#[allow(unused_imports)]
pub(crate) use pending::{Answer, Completed, Pending, Question, ReplyBody};
#[allow(unused_imports)]
pub(crate) use wire::{FrameBuf, Run, MAX_RUN, REJECTED};
