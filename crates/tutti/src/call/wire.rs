//! The conversation's frames: how a statement, a question, an answer, a refusal
//! and the core's own notice are written ([`FrameBuf`]) and read ([`Run`]); the
//! table is in the [module documentation](super).

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Refusal;
use crate::msg::codec::{self, CodecError, Frame, FrameKind, Header};
use crate::msg::MsgId;

/// Most messages one `Tell` frame carries (a run): a frame claiming more is
/// rejected, so that a run of zero-sized messages cannot make a receiver spin.
pub(crate) const MAX_RUN: u64 = 1 << 20;

/// The message id of the core's `Rejected` notice (a `Control` frame whose
/// payload is the cause, a string).
pub(crate) const REJECTED: MsgId = MsgId::from_name("tutti.call.Rejected");

/// The `Tell` frame being extended, if any: where it starts in the buffer, its
/// header, and how many messages it holds.
#[derive(Clone, Copy)]
struct Open {
    start: usize,
    header: Header,
    count: u64,
}

/// Frames being written for one peer, one after the other in one buffer (a
/// batch for [`Link::send_frame`](super::Link::send_frame)). Consecutive
/// statements with the same target and message type share one `Tell` frame (a
/// run): one header for all of them.
#[derive(Default)]
pub(crate) struct FrameBuf {
    buf: Vec<u8>,
    open: Option<Open>,
}

impl FrameBuf {
    pub(crate) fn new() -> Self {
        FrameBuf::default()
    }

    /// Whether no frame has been written since the last [`clear`](Self::clear).
    #[cfg_attr(not(test), allow(dead_code))] // the core's tests read it
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Forgets every frame (keeps the memory).
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.open = None;
    }

    /// Where the next frame will start (the open `Tell` run sealed): a mark
    /// to [`rewind`](Self::rewind) to if frames written after it must go.
    pub(crate) fn mark(&mut self) -> usize {
        self.seal();
        self.buf.len()
    }

    /// Drops every frame written since `mark` (from [`mark`](Self::mark)).
    pub(crate) fn rewind(&mut self, mark: usize) {
        self.seal();
        self.buf.truncate(mark);
    }

    /// The frames written, complete.
    pub(crate) fn finish(&mut self) -> &[u8] {
        self.seal();
        &self.buf
    }

    /// Finishes the open `Tell` frame, if any.
    fn seal(&mut self) {
        if let Some(o) = self.open.take() {
            let header = Header {
                corr: o.count - 1,
                ..o.header
            };
            codec::seal_frame(&header, &mut self.buf, o.start);
        }
    }

    /// Appends `msg` to the open `Tell` run if that run is for `target` and
    /// message type `id` (and has room); returns whether it did. The fast path
    /// of consecutive statements to one peer: no header, no checks beyond the
    /// run's. On error nothing is written.
    #[inline]
    pub(crate) fn extend_run<M: Serialize>(
        &mut self,
        target: u64,
        id: MsgId,
        msg: &M,
    ) -> Result<bool, CodecError> {
        match &mut self.open {
            Some(o) if o.header.target == target && o.header.msg == id && o.count < MAX_RUN => {
                codec::encode(msg, &mut self.buf)?;
                o.count += 1;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Appends a statement: message `msg` (type `id`) for `target`, from `src` to
    /// `dst` (wire ids). Joins the open `Tell` frame if it is for the same
    /// destination, target and message type. On error nothing is written.
    pub(crate) fn tell<M: Serialize>(
        &mut self,
        (src, dst): (u32, u32),
        target: u64,
        id: MsgId,
        msg: &M,
    ) -> Result<(), CodecError> {
        match self.open {
            Some(o)
                if o.header.target == target
                    && o.header.msg == id
                    && o.header.dst == dst
                    && o.count < MAX_RUN =>
            {
                codec::encode(msg, &mut self.buf)?;
                if let Some(o) = &mut self.open {
                    o.count += 1;
                }
                Ok(())
            }
            _ => {
                self.seal();
                let start = self.buf.len();
                self.buf.resize(start + codec::HEADER_LEN, 0);
                if let Err(e) = codec::encode(msg, &mut self.buf) {
                    self.buf.truncate(start);
                    return Err(e);
                }
                self.open = Some(Open {
                    start,
                    header: Header {
                        src,
                        dst,
                        msg: id,
                        target,
                        ..Header::new(FrameKind::Tell)
                    },
                    count: 1,
                });
                Ok(())
            }
        }
    }

    /// Appends a question: message `msg` (type `id`) for `target`, numbered
    /// `corr`.
    pub(crate) fn ask<M: Serialize>(
        &mut self,
        (src, dst): (u32, u32),
        target: u64,
        id: MsgId,
        corr: u64,
        msg: &M,
    ) -> Result<(), CodecError> {
        self.seal();
        let h = Header {
            src,
            dst,
            msg: id,
            target,
            corr,
            ..Header::new(FrameKind::Ask)
        };
        codec::encode_frame(&h, msg, &mut self.buf).map(drop)
    }

    /// Appends a statement (`corr` 0) or a question (`corr` its id) whose
    /// payload is already encoded, one message per frame: for payloads in
    /// another format than the binary codec (an RPC connection's JSON).
    pub(crate) fn request_raw(
        &mut self,
        (src, dst): (u32, u32),
        target: u64,
        id: MsgId,
        corr: u64,
        payload: &[u8],
    ) -> Result<(), CodecError> {
        self.seal();
        let kind = if corr == 0 {
            FrameKind::Tell
        } else {
            FrameKind::Ask
        };
        let h = Header {
            src,
            dst,
            msg: id,
            target,
            corr,
            ..Header::new(kind)
        };
        codec::encode_raw_frame(&h, payload, &mut self.buf).map(drop)
    }

    /// Appends the answer to question `corr`: the reply, already encoded.
    pub(crate) fn reply(
        &mut self,
        (src, dst): (u32, u32),
        corr: u64,
        reply: &[u8],
    ) -> Result<(), CodecError> {
        self.seal();
        let h = Header {
            src,
            dst,
            corr,
            ..Header::new(FrameKind::Reply)
        };
        codec::encode_raw_frame(&h, reply, &mut self.buf).map(drop)
    }

    /// Appends the refusal of question `corr`.
    pub(crate) fn fault(&mut self, (src, dst): (u32, u32), corr: u64, why: &Refusal) {
        self.seal();
        let h = Header {
            src,
            dst,
            corr,
            ..Header::new(FrameKind::Fault)
        };
        // A refusal is a string or nothing: it always encodes.
        if let Err(e) = codec::encode_frame(&h, why, &mut self.buf) {
            unreachable!("tutti: a refusal did not encode: {e}")
        }
    }

    /// Appends an owner's control message (`id` says which kind; `corr` as the
    /// owner uses it).
    pub(crate) fn control<C: Serialize + ?Sized>(
        &mut self,
        (src, dst): (u32, u32),
        id: MsgId,
        corr: u64,
        c: &C,
    ) -> Result<(), CodecError> {
        self.seal();
        let h = Header {
            src,
            dst,
            msg: id,
            corr,
            ..Header::new(FrameKind::Control)
        };
        codec::encode_frame(&h, c, &mut self.buf).map(drop)
    }

    /// Appends the core's notice that bytes from `dst` were rejected, and why.
    pub(crate) fn rejected(&mut self, ends: (u32, u32), cause: &str) {
        if let Err(e) = self.control(ends, REJECTED, 0, cause) {
            unreachable!("tutti: a rejection notice did not encode: {e}")
        }
    }
}

/// The messages of a `Tell` frame (a run of one or more, all of one type),
/// decoded one at a time: each is checked as it is taken, and a run that claims
/// more messages than it holds, or holds more bytes than its messages, is an
/// error at its end.
pub(crate) struct Run<'a> {
    rest: &'a [u8],
    left: u64,
    #[cfg_attr(not(test), allow(dead_code))] // the core's tests read it
    max_depth: u32,
}

impl<'a> Run<'a> {
    /// The run of `frame`, a `Tell` frame (an `Ask` frame is a run of one).
    pub(crate) fn of(frame: &Frame<'a>) -> Result<Run<'a>, CodecError> {
        let h = frame.header();
        let count = match h.kind {
            FrameKind::Tell => h.corr.checked_add(1).filter(|&n| n <= MAX_RUN),
            FrameKind::Ask => Some(1),
            _ => None,
        };
        let Some(left) = count else {
            return Err(CodecError::InvalidHeader(
                "not a statement or question, or a run longer than 2^20 messages",
            ));
        };
        Ok(Run {
            rest: frame.payload(),
            left,
            max_depth: frame.max_depth(),
        })
    }

    /// Messages not yet taken.
    #[cfg_attr(not(test), allow(dead_code))] // the core's tests read it
    pub(crate) fn len(&self) -> usize {
        self.left as usize
    }

    /// Whether every message has been taken.
    #[allow(dead_code)] // len()'s companion
    pub(crate) fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// The next message; after the last, an error if bytes are left over.
    #[cfg_attr(not(test), allow(dead_code))] // the core's tests read it
    pub(crate) fn next_message<M: DeserializeOwned>(&mut self) -> Option<Result<M, CodecError>> {
        if self.left == 0 {
            if self.rest.is_empty() {
                return None;
            }
            let extra = std::mem::take(&mut self.rest).len() as u64;
            return Some(Err(CodecError::TrailingBytes {
                what: std::any::type_name::<M>(),
                extra,
            }));
        }
        self.left -= 1;
        match codec::decode_prefix::<M>(self.rest, self.max_depth) {
            Ok((m, rest)) => {
                self.rest = rest;
                Some(Ok(m))
            }
            Err(e) => {
                // Nothing after a bad message can be found: the run ends here.
                self.left = 0;
                self.rest = &[];
                Some(Err(e))
            }
        }
    }

    /// The undecoded rest as owned bytes with its count (to decode later).
    pub(crate) fn remaining(&self) -> (u64, &'a [u8]) {
        (self.left, self.rest)
    }
}
