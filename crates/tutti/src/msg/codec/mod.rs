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
//!   payload length (see [Frames](#frames)).
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
//! # Frames
//!
//! ```text
//! offset size field    meaning
//!  0     4    magic    b"TUTI"
//!  4     1    version  VERSION (1)
//!  5     1    kind     FrameKind: Tell 1, Ask 2, Reply 3, Fault 4, Control 5
//!  6     2    flags    Flags: bit 0 POD, bit 1 PRIORITY, bits 2..8 reserved (zero),
//!                      bits 8..16 the world layer's own
//!  8     4    src      sending location
//! 12     4    dst      destination location
//! 16     8    len      payload length in bytes
//! 24     8    msg      MsgId of the payload's type (0 = none)
//! 32     8    target   object at the destination (actor, registered object; 0 = none)
//! 40     8    corr     correlation id pairing an Ask with its Reply or Fault (0 = none)
//! 48     len  payload
//!  …     0-7  zero padding: every frame is a multiple of 8 bytes long
//! ```
//!
//! All integers are little-endian. Because the header is 48 bytes and every frame's
//! length a multiple of 8, the payload of every frame in a buffer of concatenated
//! frames (an aggregated batch) sits at an 8-aligned offset from the buffer's start —
//! so plain-old-data payloads in an 8-aligned receive buffer are borrowed, not copied.
//!
//! Decoding checks every field before trusting any: the magic, the version, that the
//! kind is known, that no reserved flag is set, the per-kind rules (a `Tell` or `Ask`
//! names its message type, an `Ask`, `Reply` or `Fault` has a correlation id), that the
//! stated length is within [`Limits::max_payload`] and within the bytes actually
//! present, and that the padding is zero. Only then is the payload handed out, as a
//! borrowed slice: decoding a frame allocates nothing.
//!
//! # Hostile input
//!
//! Decoding arbitrary bytes returns a [`CodecError`] and never panics, never
//! over-allocates and never trusts a length:
//!
//! * a frame header is checked field by field before anything is read past it, its
//!   stated length against [`Limits::max_payload`] and against the bytes present
//!   (above); decoding a frame allocates nothing;
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
//! `tutti bench codec` runs the candidates side by side on representative messages —
//! a struct of scalars (`small`), strings (`named`), 1000 `f64`s (`floats`) and a tree
//! of nested enums (`shape`) — appending to a reused buffer and decoding owned values,
//! then feeds each decoder hostile input. Medians of three runs of
//! `tutti bench codec --json` (7 interleaved rounds each) on the shared 2-core
//! development machine, encode + decode time of tutti's codec over each peer's, and
//! encoded size:
//!
//! | peer | time small / named / floats / shape | size small / named / shape |
//! |---|---|---|
//! | postcard (raw) | 0.93 / 1.03 / 1.00 / 1.21 | 1 / 1 / 1 |
//! | bincode 1 | 1.62 / 1.31 / 2.74 / 1.21 | 0.95 / 0.51 / 0.64 |
//! | bincode 2 | 1.33 / 0.95 / 1.12 / 0.77 | 0.91 / 0.98 / 1.00 |
//! | bitcode (serde) | 0.09 / 0.25 / 1.17 / 0.42 | 0.83 / 1.00 / 1.07 |
//! | rmp-serde | 0.42 / 0.98 / 0.42 / 0.53 | 0.80 / 0.96 / 0.61 |
//!
//! postcard gives the smallest encodings but for bitcode on the enum tree (varint
//! integers and lengths, no field names, no fixed-width lengths), decodes borrowed
//! `&str`/`&[u8]`, has a documented wire format that is stable since 1.0, and trusts a
//! sequence length only as far as the bytes present allow. bincode 1 is faster on
//! scalars and `f64`s but twice the size on strings and half again on nested data;
//! bincode 2's standard configuration without a limit aborted the process on a 36-byte
//! hostile input (an allocation of 3.5 × 10^18 bytes); bincode 1, bitcode and
//! MessagePack preallocate up to 1 MiB per container from a claimed length; bitcode's
//! serde path costs 0.3–1 µs per small value; MessagePack is self-describing and so
//! larger and slower. None panicked on the 8000 hostile inputs per format.
//!
//! tutti's codec costs what raw postcard costs within the noise of these runs; counted
//! with callgrind, its guard adds about 18 instructions to a small struct (38 → 56),
//! a quarter to the enum tree and nothing to the `f64` vector. The plain-old-data path
//! ([`PodVec`], [`encode_pod_frame`]) takes 0.10 of the serde path's time for the 1000
//! `f64`s. A frame adds 48 bytes of header and up to 7 of padding.

mod error;
mod format;
mod frame;
mod guard;
mod json;
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
pub use json::Format;
pub use pod::PodVec;

pub(crate) use format::decode_prefix;
pub(crate) use frame::seal_frame;
pub(crate) use pod::{bytes_of, cast_or_copy};
