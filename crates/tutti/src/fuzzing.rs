//! Entry points for the fuzz targets of the repository's `fuzz/` crate
//! (feature `fuzzing`; hidden from the documentation, not for programs).
//!
//! The decoders that read bytes from outside the process sit inside the
//! layers that own them; rather than making those internals public, this
//! module hands each fuzz target one function that runs the same code a
//! running program runs on the same bytes, and returns what that program
//! would do with an error: its text. A target then checks the properties
//! beyond "no panic": that every rejection is an error naming its cause, that
//! what is built by the sending side reads back as it was, and (through a
//! counting allocator of its own) that nothing allocates past the limits.
//!
//! The codec's frames and batches, its payloads and the JSON payload format
//! are public already (`msg::codec`), as are trace files (`diag::trace`), and
//! their targets use that API directly.

use crate::call::{Conversation, Link, LinkError, Received, Run};
use crate::loom::{lock, Mutex};
use crate::msg::codec;

pub use crate::world::fuzzing::{
    data_round_trip, shm_mailbox, stall_frame, world_frame, MailboxOp, RANKS,
};

/// What a decoder made of one input: how much it accepted and every error
/// it reported (each must name a cause: a target checks they are not empty).
#[derive(Debug, Default)]
pub struct Outcome {
    /// Frames, messages or answers accepted.
    pub accepted: usize,
    /// The text of every rejection.
    pub errors: Vec<String>,
}

/// The in-memory link of [`call_wire`]: what the conversation sends back.
struct Recorder {
    sent: Mutex<Vec<Vec<u8>>>,
}

impl Link for Recorder {
    type Peer = u32;

    fn send_frame(&self, _to: u32, frame: &[u8]) -> Result<(), LinkError> {
        lock(&self.sent).push(frame.to_vec());
        Ok(())
    }

    fn flush(&self, _to: u32) {}

    fn name(&self, peer: u32) -> String {
        format!("peer {peer}")
    }

    fn wire_id(&self, peer: u32) -> u32 {
        peer
    }

    fn local_wire_id(&self) -> u32 {
        1
    }
}

/// The message type of the questions asked before the bytes arrive.
const ASK_ID: crate::msg::MsgId = crate::msg::MsgId::from_name("tutti.fuzz.Question");

/// The peer whose bytes [`call_wire`] receives; end 1 asked it questions
/// 1 to [`QUESTIONS`] first, so that answers can match.
pub const CALL_PEER: u32 = 2;
/// Questions pending on [`CALL_PEER`] when its bytes arrive.
pub const QUESTIONS: u64 = 4;

/// The request/reply core (used by RMI, distributed actors and RPC)
/// receives `bytes` from [`CALL_PEER`]: every frame is classified under the
/// bad-bytes policy; requests are read as runs of `u64` statements or a
/// `u64` question, answers filed and read back as `u64`. Every frame the
/// core sends in return (refusals, notices) must itself decode.
pub fn call_wire(bytes: &[u8]) -> Outcome {
    let conv = Conversation::new(Recorder {
        sent: Mutex::new(Vec::new()),
    });
    let mut corrs = Vec::new();
    for _ in 0..QUESTIONS {
        let asked = conv.ask_with(CALL_PEER, |corr, buf| {
            buf.ask(conv.ends(CALL_PEER), 7, ASK_ID, corr, &corr)
        });
        match asked {
            Ok(corr) => corrs.push(corr),
            Err(e) => panic!("asking through an in-memory link failed: {e}"),
        }
    }
    lock(&conv.link().sent).clear();
    let mut out = Outcome::default();
    for received in conv.receive(CALL_PEER, bytes) {
        match received {
            Received::Request(frame) => match Run::of(&frame) {
                Ok(mut run) => {
                    while let Some(m) = run.next_message::<u64>() {
                        match m {
                            Ok(_) => out.accepted += 1,
                            Err(e) => out.errors.push(e.to_string()),
                        }
                    }
                }
                Err(e) => out.errors.push(e.to_string()),
            },
            Received::Control(_) | Received::Answered(_) => out.accepted += 1,
            Received::Rejected(cause) => out.errors.push(cause),
            Received::Bad(bad) => out.errors.push(bad.cause),
        }
    }
    for corr in corrs {
        match conv.pending().take(corr) {
            Some(Ok(crate::call::ReplyBody::Bytes(b))) => match codec::decode::<u64>(&b) {
                Ok(_) => out.accepted += 1,
                Err(e) => out.errors.push(e.to_string()),
            },
            Some(Ok(_)) => out.accepted += 1,
            Some(Err(e)) => out.errors.push(e.to_string()),
            None => {}
        }
    }
    for sent in lock(&conv.link().sent).iter() {
        for f in codec::frames(sent) {
            if let Err(e) = f {
                panic!("the core sent a frame that does not decode: {e}");
            }
        }
    }
    out
}

/// A graph's world message from another rank (`[kind u8][channel u32 LE]
/// [payload]`) read as the router reads it; a token (kind 0) decodes as a
/// `(u64, String, Vec<f64>)`, a one-sided signal (kind 4) must be 8 bytes.
pub fn graph_message(bytes: &[u8]) -> Result<(u8, u32, u32), String> {
    let (kind, ch, credits, rest) = crate::graph::parse_message(bytes)?;
    match kind {
        0 => {
            codec::decode::<(u64, String, Vec<f64>)>(rest)
                .map_err(|e| format!("a token does not decode: {e}"))?;
        }
        4 if rest.len() != 8 => {
            return Err(format!("a malformed one-sided signal for channel {ch}"))
        }
        _ => {}
    }
    Ok((kind, ch, credits))
}

/// The first frame a well-behaved RPC client sends: its handshake, with
/// `cookie`, asking for JSON payloads if `json`.
pub fn rpc_hello(cookie: &str, json: bool) -> Vec<u8> {
    crate::rpc::fuzz_hello(cookie, json)
}

/// The `target` an RPC frame names to reach the object published at `path`.
pub fn rpc_target(path: &str) -> u64 {
    crate::msg::MsgId::from_name(path).get()
}
