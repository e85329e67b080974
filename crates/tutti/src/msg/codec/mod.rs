//! The wire form of messages: one serde format, a plain-old-data fast path, and frames.
//!
//! In-process, messages move as typed values and none of this runs. When a message
//! leaves the process, the world layer turns it into a **frame** — a 48-byte header
//! and a payload — and moves the frame's bytes; the receiving rank decodes the frame
//! and hands the payload to the handler table of the target object
//! ([`Dispatch`](crate::msg::Dispatch)).
//!
//! * **Payloads** are serde values in one compact binary format, postcard
//!   ([`encode`], [`decode`]), or plain-old-data slices copied as they are
//!   ([`encode_pod_frame`], [`Frame::pod`], and the field type [`PodVec`]).
//! * **Frames** ([`encode_frame`], [`decode_frame`], [`frames`] for a batch of
//!   concatenated frames) carry magic, version, kind, flags, source and destination
//!   locations, the payload's message type, a target object, a correlation id and the
//!   payload length. The layout is in `frame.rs`.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use tutti::msg::codec::{decode_frame, encode_frame, FrameKind, Header};
//! use tutti::msg::{Message, Remote};
//!
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! struct Deposit { account: u32, cents: u64 }
//! impl Message for Deposit { type Reply = u64; }
//! impl Remote for Deposit { const NAME: &'static str = "bank.Deposit"; }
//!
//! // Sending rank: one frame into a reusable buffer.
//! let mut out = Vec::new();
//! let header = Header { dst: 2, target: 7, msg: Deposit::ID, corr: 1, ..Header::new(FrameKind::Ask) };
//! encode_frame(&header, &Deposit { account: 4, cents: 250 }, &mut out)?;
//!
//! // Receiving rank: check the frame, look at the header, decode the payload.
//! let frame = decode_frame(&out)?;
//! assert_eq!(frame.header().msg, Deposit::ID);
//! assert_eq!(frame.decode::<Deposit>()?, Deposit { account: 4, cents: 250 });
//! # Ok::<(), tutti::msg::codec::CodecError>(())
//! ```
//!
//! # Hostile input
//!
//! Decoding arbitrary bytes returns a [`CodecError`] and never panics, never
//! over-allocates and never trusts a length:
//!
//! * a frame header is checked field by field before anything is read past it, its
//!   stated length against [`Limits::max_payload`] and against the bytes present
//!   (`frame.rs`); decoding a frame allocates nothing;
//! * payloads are decoded through a guard (`guard.rs`) that caps every length hint by
//!   the payload's size (so a preallocation is bounded by the bytes present), counts
//!   elements (so zero-sized elements cannot spin forever) and limits nesting to
//!   [`Limits::max_depth`] (so a deeply nested value cannot overflow the stack);
//!   strings and byte strings are copied from, or borrowed in, the input;
//! * plain-old-data payloads must be a whole number of elements; a misaligned one is
//!   copied, never read in place.
//!
//! Property tests (`tests.rs`) feed random bytes, mutated valid frames and truncated
//! batches to every decoder; an integration test (`tests/codec_alloc.rs`) checks with
//! a counting allocator that no decode allocates more than a small multiple of its
//! input.
//!
//! # Why postcard
//!
//! `tutti bench codec` measures the candidates side by side on representative
//! messages: a small struct of scalars, strings, a `Vec<f64>` and a tree of nested
//! enums. On this machine postcard gave the smallest or next-to-smallest encodings
//! (varint integers and lengths, no field names), encode and decode times within the
//! spread of the fastest serde formats, and the best behaviour on hostile input: it
//! trusts a sequence length only as far as the bytes present allow. bincode 2 without
//! a limit aborted the process on a 36-byte hostile input (an allocation of
//! 3.5 × 10^18 bytes); bincode 1, bitcode and MessagePack preallocate up to 1 MiB per
//! container from a claimed length; bitcode's serde path has a high fixed cost per
//! value; MessagePack is self-describing and so larger. postcard's wire format is also
//! documented and stable since 1.0. The measured figures are in the issue note of the
//! codec and reproducible with `tutti bench codec`.

mod error;
mod format;
mod frame;
mod guard;
mod pod;
#[cfg(all(test, not(loom)))]
mod tests;

pub use bytemuck::Pod;
pub use error::CodecError;
pub use format::{decode, encode, DEFAULT_MAX_DEPTH};
pub use frame::{
    decode_frame, decode_frame_with, encode_frame, encode_pod_frame, encode_raw_frame, frame_len,
    frames, frames_with, Flags, Frame, FrameKind, Frames, Header, Limits, FRAME_ALIGN, HEADER_LEN,
    MAGIC, VERSION,
};
pub use pod::PodVec;
