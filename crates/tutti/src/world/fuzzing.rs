//! The world's receiving side for the fuzz targets (feature `fuzzing`; the
//! crate's `fuzzing` module re-exports these): a frame from another rank, a
//! frame of the stall check, a shared-memory mailbox. Each runs the code a
//! real rank runs on bytes from outside, on a rank of a small world that is
//! built for the one call, and returns the error a real rank would take the
//! job down with.

use std::sync::Arc;

use super::frame;
use super::rank::Local;
use super::transport::{shm, Sink};

/// Ranks of the world a fuzzed frame arrives in (one location each).
pub const RANKS: usize = 3;
/// Largest value or payload a fuzzed rank sends inline rather than as a body.
const INLINE_MAX: usize = 64;

/// A frame `head` (with `body`, if one came) from rank `from` arrives at rank
/// `to` (both taken modulo [`RANKS`]); a frame without a body goes the way
/// of a posted receive buffer (`deliver_head`). Data frames land in the
/// location's inbox, collective values in their round, stall frames in the
/// stall check.
pub fn world_frame(to: usize, from: usize, head: &[u8], body: Option<&[u8]>) -> Result<(), String> {
    let local = Local::new(to % RANKS, RANKS, 1, INLINE_MAX);
    let from = from % RANKS;
    match body {
        None => local.deliver_head(from, head),
        Some(b) => local.deliver(from, Arc::from(head), Some(b.to_vec())),
    }
}

/// A frame of the stall check with message `code`, sequence number `seq` and
/// `payload` (the bytes a confirmation or verdict decodes from), claiming to
/// come from rank `claimed`, arrives at rank `to` from rank `from` (all
/// modulo [`RANKS`]).
pub fn stall_frame(
    to: usize,
    from: usize,
    claimed: u32,
    code: u64,
    seq: u64,
    payload: &[u8],
) -> Result<(), String> {
    let local = Local::new(to % RANKS, RANKS, 1, INLINE_MAX);
    let f = frame::stall(
        claimed,
        (to % RANKS) as u32,
        code,
        seq,
        payload.to_vec(),
        INLINE_MAX,
    );
    local.deliver(from % RANKS, Arc::from(f.head), f.body)
}

/// The messages of a data frame built by the sending side (`DataBuilder`),
/// as the receiving side reads them back (parse, then walk the entries):
/// `decode(encode(x)) == x` for the world's batches.
pub fn data_round_trip(
    msgs: &[Vec<u8>],
    body: Option<Vec<u8>>,
    phase: u64,
) -> Result<Vec<Vec<u8>>, String> {
    let mut b = frame::DataBuilder::new(1, 2, 64);
    for m in msgs {
        b.push(m);
    }
    let has_body = body.is_some();
    let f = b.finish(body, phase);
    let frame::Parsed::Data(h) = frame::parse(&f.head, has_body).map_err(|e| e.0)? else {
        return Err("a data frame parsed as another kind".into());
    };
    if (h.from, h.to, h.phase) != (1, 2, phase) {
        return Err(format!("header read back as {h:?}"));
    }
    let mut pos = frame::HEADER;
    let mut out = Vec::new();
    for _ in 0..h.inline {
        let r = frame::next_entry(&f.head, &mut pos).ok_or("an entry ran out")?;
        out.push(f.head[r].to_vec());
    }
    out.extend(f.body);
    Ok(out)
}

/// One step of a mailbox's life.
#[derive(Debug, Clone)]
pub enum MailboxOp {
    /// Rank `from` publishes a fragment (`flags`: first 1, last 2; the bytes
    /// are cut to a slot). A full ring is drained first.
    Push {
        /// The sending rank.
        from: u8,
        /// First 1, last 2.
        flags: u8,
        /// The fragment.
        bytes: Vec<u8>,
    },
    /// Another process overwrites slot `slot`'s sequence and descriptor words.
    Scribble {
        /// The slot (modulo the ring's 8).
        slot: u8,
        /// Its new sequence word.
        seq: u64,
        /// Its new descriptor word.
        meta: u64,
    },
    /// The consumer reads everything published.
    Drain,
}

/// A shared-memory mailbox of a rank of [`RANKS`] (a small ring: 8 slots of
/// 64 bytes) through `ops`: the frames read, or the error that would take
/// the system down.
pub fn shm_mailbox(ops: &[MailboxOp]) -> Result<usize, String> {
    let local = Local::new(0, RANKS, 1, INLINE_MAX);
    shm::fuzz_mailbox(ops, &*local as &dyn Sink, RANKS)
}
