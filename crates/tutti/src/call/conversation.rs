//! [`Conversation`]: one end of the request/reply protocol over a [`Link`] —
//! statements and questions out, answers and requests in, the pending table in
//! between, and the bad-bytes policy applied to everything that arrives.

use std::sync::Arc;

use serde::Serialize;

use super::pending::{Answer, Completed, Pending, Question, ReplyBody};
use super::wire::{FrameBuf, REJECTED};
use super::{BadFrame, CallError, Link, LinkError, Refusal};
use crate::msg::codec::{self, Frame, FrameKind, Frames, Header};
use crate::msg::MsgId;

thread_local! {
    /// Frames being built on this thread, reused.
    static SCRATCH: std::cell::RefCell<FrameBuf> = std::cell::RefCell::new(FrameBuf::new());
}

/// Runs `f` with an empty frame buffer of this thread (a fresh one if this
/// thread is already building frames, e.g. a send from inside a send).
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut FrameBuf) -> R) -> R {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let r = f(&mut buf);
            if buf.len() > 1 << 20 {
                *buf = FrameBuf::new();
            }
            r
        }
        Err(_) => f(&mut FrameBuf::new()),
    })
}

/// What one arriving frame is, for the owner of the receiving side (see
/// [`Conversation::receive`]).
pub(crate) enum Received<'a, P> {
    /// A `Tell` (a run of statements) or an `Ask` for the owner to serve.
    Request(Frame<'a>),
    /// One of the owner's own control messages.
    Control(Frame<'a>),
    /// The peer rejected bytes this end sent it: the cause.
    Rejected(String),
    /// An answer, filed: it completed question `corr` (or was dropped, the
    /// question having been given up).
    #[cfg_attr(not(test), allow(dead_code))] // the core's tests read it
    Answered(u64),
    /// Bytes rejected under the policy; the peer has been told.
    Bad(BadFrame<P>),
}

/// One end of the request/reply protocol with peers reached through a [`Link`].
/// Shared (`&self`) by every task that asks or answers through it.
pub(crate) struct Conversation<L: Link> {
    link: L,
    pending: Arc<Pending<L::Peer>>,
}

impl<L: Link> Conversation<L> {
    pub(crate) fn new(link: L) -> Self {
        Conversation {
            link,
            pending: Arc::new(Pending::new()),
        }
    }

    /// The link frames travel on.
    pub(crate) fn link(&self) -> &L {
        &self.link
    }

    /// The questions waiting for answers.
    pub(crate) fn pending(&self) -> &Arc<Pending<L::Peer>> {
        &self.pending
    }

    /// The wire ids of this end and `peer` (for frame headers).
    pub(crate) fn ends(&self, peer: L::Peer) -> (u32, u32) {
        (self.link.local_wire_id(), self.link.wire_id(peer))
    }

    fn gone(&self, peer: L::Peer, e: LinkError) -> CallError<L::Peer> {
        match e.rank_died {
            Some(rank) => CallError::RankDied { peer, rank },
            None => CallError::Gone { peer, why: e.why },
        }
    }

    /// Sends the frames of `frames` to `to` and empties it.
    pub(crate) fn send(&self, to: L::Peer, frames: &mut FrameBuf) -> Result<(), LinkError> {
        let sent = self.link.send_frame(to, frames.finish());
        frames.clear();
        sent
    }

    /// Sends a statement now: message `msg` (type `id`) for `target` at `to`.
    pub(crate) fn tell<M: Serialize>(
        &self,
        to: L::Peer,
        target: u64,
        id: MsgId,
        msg: &M,
    ) -> Result<(), CallError<L::Peer>> {
        with_scratch(|buf| {
            buf.tell(self.ends(to), target, id, msg)
                .map_err(|e| CallError::Encode(e.to_string()))?;
            self.send(to, buf).map_err(|e| self.gone(to, e))
        })
    }

    /// Asks `to` a question: message `msg` (type `id`) for `target`. The
    /// question is sent, and flushed, at once; its answer is the returned
    /// future.
    pub(crate) fn ask<M: Serialize>(
        &self,
        to: L::Peer,
        target: u64,
        id: MsgId,
        msg: &M,
    ) -> Result<Question<L::Peer>, CallError<L::Peer>> {
        let ends = self.ends(to);
        let corr = self.ask_with(to, |corr, buf| buf.ask(ends, target, id, corr, msg))?;
        Ok(Question::new(Arc::clone(&self.pending), corr))
    }

    /// Asks `to` a question whose frames `build` writes (given the question's
    /// correlation id): the entry is opened before the frames go, closed again
    /// if they cannot. Flushes. Returns the correlation id.
    pub(crate) fn ask_with(
        &self,
        to: L::Peer,
        build: impl FnOnce(u64, &mut FrameBuf) -> Result<(), codec::CodecError>,
    ) -> Result<u64, CallError<L::Peer>> {
        let corr = self.pending.open(to);
        let sent = with_scratch(|buf| {
            build(corr, buf).map_err(|e| CallError::Encode(e.to_string()))?;
            self.send(to, buf).map_err(|e| self.gone(to, e))
        });
        match sent {
            Ok(()) => {
                self.link.flush(to);
                Ok(corr)
            }
            Err(e) => {
                self.pending.forget(corr);
                Err(e)
            }
        }
    }

    /// Answers question `corr` of `to`: its reply, encoded, or why there is
    /// none. A reply too large for a frame is answered with a refusal saying
    /// so. Flushes.
    pub(crate) fn answer(
        &self,
        to: L::Peer,
        corr: u64,
        answer: Result<&[u8], Refusal>,
    ) -> Result<(), LinkError> {
        let ends = self.ends(to);
        let sent = with_scratch(|buf| {
            match answer {
                Ok(bytes) => {
                    if let Err(e) = buf.reply(ends, corr, bytes) {
                        buf.clear();
                        let why = format!("the reply ({} bytes) cannot be sent: {e}", bytes.len());
                        buf.fault(ends, corr, &Refusal::Failed(why));
                    }
                }
                Err(why) => buf.fault(ends, corr, &why),
            }
            self.send(to, buf)
        });
        self.link.flush(to);
        sent
    }

    /// Sends one of the owner's control messages (see [`FrameBuf::control`]).
    pub(crate) fn control<C: Serialize + ?Sized>(
        &self,
        to: L::Peer,
        id: MsgId,
        corr: u64,
        c: &C,
    ) -> Result<(), CallError<L::Peer>> {
        with_scratch(|buf| {
            buf.control(self.ends(to), id, corr, c)
                .map_err(|e| CallError::Encode(e.to_string()))?;
            self.send(to, buf).map_err(|e| self.gone(to, e))
        })
    }

    /// The frames of `bytes`, which arrived from `from`, one at a time: answers
    /// are filed in the pending table here; requests and the owner's control
    /// messages are handed out; whatever breaks the rules is rejected (the
    /// bad-bytes policy of the [module documentation](super)).
    pub(crate) fn receive<'a>(&'a self, from: L::Peer, bytes: &'a [u8]) -> Receive<'a, L> {
        Receive {
            conv: self,
            from,
            frames: Some(codec::frames(bytes)),
        }
    }

    /// Rejects what the owner could not serve because of its bytes (a
    /// request's payload does not decode, a run claims more messages than it
    /// holds, an arrival is not bytes at all: `header` is then `None`, …): a
    /// question is refused with the cause, anything else is answered with a
    /// `Rejected` notice. Returns the error for the owner to report.
    pub(crate) fn reject(
        &self,
        from: L::Peer,
        header: Option<&Header>,
        cause: impl Into<String>,
    ) -> BadFrame<L::Peer> {
        let bad = self.bad(from, cause.into());
        if let Some(header) = header.filter(|h| h.kind == FrameKind::Ask && h.corr != 0) {
            let _ = self.answer(from, header.corr, Err(Refusal::Failed(bad.to_string())));
        } else {
            self.notify(from, &bad);
        }
        bad
    }

    /// Fails every question waiting on `peer` (it is gone: `why` says how)
    /// with an error naming it; returns how many.
    pub(crate) fn peer_gone(&self, peer: L::Peer, why: &str) -> usize {
        self.pending.fail_peer(peer, |peer| CallError::Gone {
            peer,
            why: why.to_string(),
        })
    }

    /// Fails every question waiting on a peer in rank `rank` (`of` tells a
    /// peer's rank), which died; returns how many.
    pub(crate) fn rank_died(&self, rank: usize, of: impl Fn(L::Peer) -> usize) -> usize {
        self.pending
            .fail_where(|p| of(p) == rank, |peer| CallError::RankDied { peer, rank })
    }

    fn bad(&self, from: L::Peer, cause: String) -> BadFrame<L::Peer> {
        BadFrame {
            peer: from,
            from: self.link.name(from),
            cause,
        }
    }

    /// Tells `to` that bytes it sent were rejected (it may be gone: then
    /// there is nobody to tell).
    fn notify(&self, to: L::Peer, bad: &BadFrame<L::Peer>) {
        let ends = self.ends(to);
        let _ = with_scratch(|buf| {
            buf.rejected(ends, &bad.cause);
            self.send(to, buf)
        });
        self.link.flush(to);
    }

    /// Classifies one well-formed frame from `from`.
    fn classify<'a>(&self, from: L::Peer, frame: Frame<'a>) -> Received<'a, L::Peer> {
        let h = *frame.header();
        let (me, them) = self.ends(from);
        if h.src != them || h.dst != me {
            let bad = self.bad(
                from,
                format!(
                    "a {:?} frame from {} to {}, not from {} to {}",
                    h.kind, h.src, h.dst, them, me
                ),
            );
            return self.rejected_frame(from, &h, bad);
        }
        match h.kind {
            FrameKind::Tell | FrameKind::Ask => Received::Request(frame),
            FrameKind::Reply => {
                let answer = ReplyBody::Bytes(frame.payload().to_vec());
                self.file(from, h.corr, Ok(answer))
            }
            FrameKind::Fault => match frame.decode::<Refusal>() {
                Ok(refusal) => self.file(
                    from,
                    h.corr,
                    Err(CallError::Refused {
                        peer: from,
                        refusal,
                    }),
                ),
                Err(e) => {
                    let why = format!("a refusal that does not decode: {e}");
                    let bad = CallError::BadAnswer {
                        peer: from,
                        why: why.clone(),
                    };
                    self.pending.complete(h.corr, from, Err(bad));
                    let bad = self.bad(from, why);
                    self.notify(from, &bad);
                    Received::Bad(bad)
                }
            },
            FrameKind::Control if h.msg == REJECTED => match frame.decode::<String>() {
                Ok(cause) => Received::Rejected(cause),
                Err(e) => {
                    // Not answered with a notice: notices are never answered.
                    Received::Bad(self.bad(
                        from,
                        format!("a rejection notice that does not decode: {e}"),
                    ))
                }
            },
            FrameKind::Control => Received::Control(frame),
        }
    }

    /// Files an answer to question `corr` from `from`.
    fn file<'a>(&self, from: L::Peer, corr: u64, answer: Answer<L::Peer>) -> Received<'a, L::Peer> {
        match self.pending.complete(corr, from, answer) {
            Completed::Done | Completed::Late => Received::Answered(corr),
            Completed::WrongPeer => {
                let bad = self.bad(
                    from,
                    format!("an answer to question #{corr}, which was not asked of it"),
                );
                self.notify(from, &bad);
                Received::Bad(bad)
            }
        }
    }

    fn rejected_frame<'a>(
        &self,
        from: L::Peer,
        h: &Header,
        bad: BadFrame<L::Peer>,
    ) -> Received<'a, L::Peer> {
        if h.kind == FrameKind::Ask && h.corr != 0 {
            let _ = self.answer(from, h.corr, Err(Refusal::Failed(bad.to_string())));
        } else if h.msg != REJECTED {
            self.notify(from, &bad);
        }
        Received::Bad(bad)
    }
}

/// The frames of one arrival (see [`Conversation::receive`]).
pub(crate) struct Receive<'a, L: Link> {
    conv: &'a Conversation<L>,
    from: L::Peer,
    /// `None` once a frame did not parse: nothing after it can be found.
    frames: Option<Frames<'a>>,
}

impl<'a, L: Link> Iterator for Receive<'a, L> {
    type Item = Received<'a, L::Peer>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.frames.as_mut()?.next()? {
            Ok(frame) => Some(self.conv.classify(self.from, frame)),
            Err(e) => {
                self.frames = None;
                let bad = self.conv.bad(self.from, e.to_string());
                self.conv.notify(self.from, &bad);
                Some(Received::Bad(bad))
            }
        }
    }
}
