//! The questions a conversation has asked and not yet had answered: correlation
//! ids, the peer each was asked of, and where its answer lands.
//!
//! Every question gets a fresh id from one counter (never 0: 0 means "no
//! question" in a frame header) and an entry, made *before* the question is
//! sent so that an answer can never arrive before its entry. An entry ends in
//! exactly one of four ways: its answer arrives ([`Pending::complete`]), its peer
//! is gone ([`Pending::fail_peer`], every entry of that peer), the asker gives the
//! question up ([`Pending::forget`], e.g. its future was dropped), or the
//! conversation ends ([`Pending::fail_all`]). An answer for an id without an
//! entry — a question given up — is dropped and counted
//! ([`Pending::late`]).
//!
//! One lock guards the table; it is held for a map operation only, never while
//! a waker runs or a frame is sent.
//!
//! The table hashes ids with one multiplication ([`CorrIds`]), not the
//! standard library's SipHash: every `sync_rmi` or `ask` makes four lookups,
//! and SipHash's rounds were a visible part of a round trip between ranks.
//! The keys are this conversation's own ids (consecutive numbers; a peer can
//! only look one up, never insert one), so there is no flooding of one
//! bucket for an outsider to provoke.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::CallError;
use crate::loom::{lock, AtomicU64, Mutex, Ordering};

/// A reply as it arrives: its encoded bytes (from another process), or the
/// reply itself (from a location of the same process: moved, never
/// serialized).
pub(crate) enum ReplyBody {
    /// The encoded reply (a `Reply` frame's payload).
    Bytes(Vec<u8>),
    /// The reply value, its type erased.
    Value(Box<dyn Any + Send>),
}

impl fmt::Debug for ReplyBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyBody::Bytes(b) => write!(f, "ReplyBody::Bytes({} bytes)", b.len()),
            ReplyBody::Value(_) => f.write_str("ReplyBody::Value(..)"),
        }
    }
}

/// The answer to a question: its reply, or why there is none.
pub(crate) type Answer<P> = Result<ReplyBody, CallError<P>>;

struct Entry<P> {
    peer: P,
    answer: Option<Answer<P>>,
    waker: Option<Waker>,
}

/// What [`Pending::complete`] did with an answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Completed {
    /// It completed its question.
    Done,
    /// Nobody waits for it (the question was given up): dropped.
    Late,
    /// It came from another peer than the one the question was asked of: not
    /// taken (the question still waits).
    WrongPeer,
}

/// Hashes a correlation id by a multiplication with an odd constant (2^64
/// over the golden ratio): a bijection on 64 bits that spreads consecutive
/// ids over both the low bits (the bucket) and the high bits (the map's tag
/// byte). Only for `u64` keys.
#[derive(Default)]
struct CorrIds(u64);

impl Hasher for CorrIds {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `u64` keys; any other key still hashes soundly.
        for &b in bytes {
            self.write_u64(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The table of questions waiting for answers; `P` names peers.
pub(crate) struct Pending<P> {
    next: AtomicU64,
    table: Mutex<HashMap<u64, Entry<P>, BuildHasherDefault<CorrIds>>>,
    late: AtomicU64,
}

impl<P: Copy + Eq> Default for Pending<P> {
    fn default() -> Self {
        Pending::new()
    }
}

impl<P: Copy + Eq> Pending<P> {
    pub(crate) fn new() -> Self {
        Pending {
            next: AtomicU64::new(1),
            table: Mutex::new(HashMap::default()),
            late: AtomicU64::new(0),
        }
    }

    /// Opens a question to `peer`: a fresh correlation id with its entry.
    pub(crate) fn open(&self, peer: P) -> u64 {
        // Relaxed: only uniqueness matters, and the entry is published by the lock.
        let corr = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.table).insert(
            corr,
            Entry {
                peer,
                answer: None,
                waker: None,
            },
        );
        corr
    }

    /// Files the answer to question `corr`, answered by `from`, and wakes its
    /// asker.
    pub(crate) fn complete(&self, corr: u64, from: P, answer: Answer<P>) -> Completed {
        let waker = {
            let mut t = lock(&self.table);
            match t.get_mut(&corr) {
                Some(e) if e.answer.is_none() => {
                    if e.peer != from {
                        return Completed::WrongPeer;
                    }
                    e.answer = Some(answer);
                    e.waker.take()
                }
                _ => {
                    drop(t);
                    self.late.fetch_add(1, Ordering::Relaxed);
                    return Completed::Late;
                }
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
        Completed::Done
    }

    /// The answer to question `corr` if it has one (the entry ends), else
    /// `Pending` with `cx`'s waker kept for when it does.
    pub(crate) fn poll(&self, corr: u64, cx: &mut Context<'_>) -> Poll<Answer<P>> {
        let mut t = lock(&self.table);
        match t.get_mut(&corr) {
            Some(e) => match e.answer.take() {
                Some(o) => {
                    t.remove(&corr);
                    Poll::Ready(o)
                }
                None => {
                    match &mut e.waker {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        slot => *slot = Some(cx.waker().clone()),
                    }
                    Poll::Pending
                }
            },
            None => Poll::Ready(Err(CallError::Encode(
                "the question was polled after it completed or was given up".into(),
            ))),
        }
    }

    /// Whether question `corr` has its answer (or is no longer asked), without
    /// taking it; if not, `cx`'s waker is kept for when it does. For an asker
    /// that receives its answers itself but must also learn of a failure that
    /// arrives another way (its peer's rank died).
    pub(crate) fn watch(&self, corr: u64, cx: &mut Context<'_>) -> bool {
        let mut t = lock(&self.table);
        match t.get_mut(&corr) {
            Some(e) if e.answer.is_none() => {
                match &mut e.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
                false
            }
            _ => true,
        }
    }

    /// The answer to question `corr` if it has one (the entry ends); for an
    /// asker that receives its answers itself and needs no waker.
    pub(crate) fn take(&self, corr: u64) -> Option<Answer<P>> {
        let mut t = lock(&self.table);
        let o = t.get_mut(&corr)?.answer.take()?;
        t.remove(&corr);
        Some(o)
    }

    /// Gives question `corr` up: its answer, if one comes, is dropped.
    pub(crate) fn forget(&self, corr: u64) {
        lock(&self.table).remove(&corr);
    }

    /// Fails every question waiting on `peer` with `error(peer)`; returns how
    /// many.
    pub(crate) fn fail_peer(&self, peer: P, error: impl Fn(P) -> CallError<P>) -> usize {
        self.fail_where(|p| p == peer, error)
    }

    /// Fails every waiting question (the conversation ends).
    pub(crate) fn fail_all(&self, error: impl Fn(P) -> CallError<P>) -> usize {
        self.fail_where(|_| true, error)
    }

    pub(crate) fn fail_where(
        &self,
        which: impl Fn(P) -> bool,
        error: impl Fn(P) -> CallError<P>,
    ) -> usize {
        let mut n = 0;
        let mut wakers: Vec<Waker> = Vec::new();
        {
            let mut t = lock(&self.table);
            for e in t.values_mut() {
                if e.answer.is_none() && which(e.peer) {
                    e.answer = Some(Err(error(e.peer)));
                    n += 1;
                    // An entry without a waker still counts: its asker finds the
                    // answer when it looks.
                    wakers.extend(e.waker.take());
                }
            }
        }
        for w in wakers {
            w.wake();
        }
        n
    }

    /// Questions waiting now (answered or not yet taken).
    #[cfg_attr(not(test), allow(dead_code))] // the core's tests read it
    pub(crate) fn len(&self) -> usize {
        lock(&self.table).len()
    }

    /// Answers that arrived for questions given up.
    #[cfg_attr(not(test), allow(dead_code))] // the core's tests read it
    pub(crate) fn late(&self) -> u64 {
        self.late.load(Ordering::Relaxed)
    }
}

/// The answer to one question, as a future: completes with it;
/// dropping it first gives the question up.
#[must_use = "futures do nothing unless polled"]
pub(crate) struct Question<P: Copy + Eq> {
    pending: Arc<Pending<P>>,
    corr: u64,
    done: bool,
}

impl<P: Copy + Eq> Question<P> {
    /// The answer to question `corr` of `pending`.
    pub(crate) fn new(pending: Arc<Pending<P>>, corr: u64) -> Self {
        Question {
            pending,
            corr,
            done: false,
        }
    }

    /// The question's correlation id.
    #[allow(dead_code)] // rpc's proxies name their questions
    pub(crate) fn corr(&self) -> u64 {
        self.corr
    }
}

impl<P: Copy + Eq> Future for Question<P> {
    type Output = Answer<P>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer<P>> {
        let out = self.pending.poll(self.corr, cx);
        if out.is_ready() {
            self.done = true;
        }
        out
    }
}

impl<P: Copy + Eq> Drop for Question<P> {
    fn drop(&mut self) {
        if !self.done {
            self.pending.forget(self.corr);
        }
    }
}

impl<P: Copy + Eq> fmt::Debug for Question<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Question")
            .field("corr", &self.corr)
            .field("done", &self.done)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::CorrIds;
    use std::hash::Hasher;

    fn hash(id: u64) -> u64 {
        let mut h = CorrIds::default();
        h.write_u64(id);
        h.finish()
    }

    /// Consecutive ids (how a conversation numbers its questions) fall in
    /// distinct buckets of a table of any power-of-two size up to their
    /// count, and their tag bytes (the top 7 bits) are not all alike.
    #[test]
    fn consecutive_ids_spread_over_buckets_and_tags() {
        for bits in [4u32, 8, 10] {
            let n = 1u64 << bits;
            let mut buckets: Vec<u64> = (1..=n).map(|id| hash(id) & (n - 1)).collect();
            buckets.sort_unstable();
            buckets.dedup();
            assert_eq!(buckets.len() as u64, n, "{n} ids in {n} buckets");
        }
        let mut tags: Vec<u64> = (1..=128).map(|id| hash(id) >> 57).collect();
        tags.sort_unstable();
        tags.dedup();
        assert!(tags.len() > 64, "only {} distinct tags", tags.len());
    }
}
