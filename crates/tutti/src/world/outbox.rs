//! Aggregation: a location's per-destination buffers (ARMI's aggregation factor).
//!
//! Each location owns one outbox with a buffer per destination it has sent to.
//! A buffer towards a location of this rank collects typed values; a buffer towards
//! another rank builds a data frame. A buffer is sent when it holds `aggregation`
//! messages, when a frame would exceed `aggregation_bytes`, when its location
//! flushes (every wait, poll, collective and fence does), and at the latest
//! `flush_after` after its oldest message was buffered: the world's sweeper
//! visits non-empty outboxes every `flush_after / 2` and sends those it already
//! found non-empty at its previous visit.
//!
//! tutti's senders are locations, which are tasks that may move between worker
//! threads, so the buffers belong to the sending *location* (ARMI's sending thread
//! was its location): per-pair FIFO order then holds even when the task migrates.
//! The outbox sits behind a mutex that only its location takes, except for the
//! sweeper's `try_lock`, so the lock is uncontended.

use super::frame::{DataBuilder, Frame, ENTRY_PREFIX, HEADER};
use super::inbox::{Parcel, Payload};
use super::LocationId;

/// Messages a new buffer for another rank has room for before it grows.
const FIRST_ROOM: usize = 4;

/// One destination's buffer.
enum Buf {
    Local(Vec<Payload>),
    Remote(DataBuilder),
}

/// What leaves an outbox (handed to the `out` callback of the pushing and
/// flushing methods): a parcel for a location of this rank, or a frame for
/// another rank.
pub(crate) enum Outgoing {
    Local(LocationId, Parcel),
    Remote(usize, Frame),
}

/// A message's bytes, owned (moved into a frame's body if large) or borrowed
/// (copied into a batch).
pub(crate) enum Bytes<'a> {
    Owned(Vec<u8>),
    Borrowed(&'a [u8]),
}

impl Bytes<'_> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Borrowed(s) => s,
        }
    }

    fn into_vec(self) -> Vec<u8> {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Borrowed(s) => s.to_vec(),
        }
    }
}

/// The limits an outbox works with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) factor: usize,
    pub(crate) bytes: usize,
    pub(crate) per_rank: usize,
}

impl Limits {
    /// Largest message that goes inline in a batch frame; larger ones travel as a
    /// frame's body.
    pub(crate) fn inline_max(&self) -> usize {
        self.bytes.saturating_sub(HEADER + ENTRY_PREFIX)
    }
}

/// A location's buffers; see the module documentation.
pub(crate) struct Outbox {
    from: LocationId,
    /// Indexed by destination location; grown on demand.
    bufs: Vec<Option<Buf>>,
    /// Destinations whose buffer holds something, in the order their buffers
    /// were first written to (a flush sends them in that order).
    dirty: Vec<u32>,
    /// The sweeper has seen this outbox non-empty (and not emptied since).
    seen: bool,
    /// The phase stamped on what leaves (its location's; see [`Parcel`]).
    phase: u64,
}

impl Outbox {
    pub(crate) fn new(from: LocationId) -> Outbox {
        Outbox {
            from,
            bufs: Vec::new(),
            dirty: Vec::new(),
            seen: false,
            phase: 0,
        }
    }

    /// Sets the phase of what is buffered from now on (the location's next
    /// phase; it has nothing buffered when it changes phase).
    pub(crate) fn set_phase(&mut self, phase: u64) {
        debug_assert!(self.is_empty());
        self.phase = phase;
    }

    /// Whether anything is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.dirty.is_empty()
    }

    /// The sweeper's visit: `true` if the outbox was already non-empty at its
    /// previous visit (its oldest message has waited at least one sweep
    /// interval), else it notes that it is non-empty now. Stamping visits instead
    /// of reading a clock per buffered message keeps sends cheap.
    pub(crate) fn sweep_due(&mut self) -> bool {
        if self.dirty.is_empty() {
            return false;
        }
        std::mem::replace(&mut self.seen, true)
    }

    fn slot(&mut self, to: LocationId) -> &mut Option<Buf> {
        let i = to.index();
        if self.bufs.len() <= i {
            self.bufs.resize_with(i + 1, || None);
        }
        &mut self.bufs[i]
    }

    fn mark(&mut self, to: LocationId) -> bool {
        let first = self.dirty.is_empty();
        if !self.dirty.contains(&to.raw()) {
            self.dirty.push(to.raw());
        }
        first
    }

    /// Buffers a typed value (or bytes) for `to` on this rank. Returns whether the
    /// outbox went from empty to non-empty (the sweeper must be armed) and pushes
    /// a full buffer onto `out`.
    pub(crate) fn push_local(
        &mut self,
        to: LocationId,
        payload: Payload,
        lim: Limits,
        out: &mut impl FnMut(Outgoing),
    ) -> bool {
        let from = self.from;
        let slot = self.slot(to);
        let buf = slot.get_or_insert_with(|| Buf::Local(Vec::with_capacity(lim.factor)));
        let Buf::Local(items) = buf else {
            unreachable_buffer_kind(to)
        };
        items.push(payload);
        if items.len() >= lim.factor {
            let items = std::mem::replace(items, Vec::with_capacity(lim.factor));
            let phase = self.phase;
            out(Outgoing::Local(to, Parcel::Batch { from, phase, items }));
            self.unmark(to);
            return false;
        }
        self.mark(to)
    }

    /// Buffers `msg` for `to` on another rank (`rank`). Same contract as
    /// [`push_local`](Self::push_local).
    pub(crate) fn push_remote(
        &mut self,
        to: LocationId,
        rank: usize,
        msg: Bytes<'_>,
        lim: Limits,
        out: &mut impl FnMut(Outgoing),
    ) -> bool {
        let from = self.from;
        if msg.len() > lim.inline_max() {
            // Too large to batch: whatever is buffered for `to` goes first (order),
            // then this message on its own, as a body (an owned one is not copied).
            self.flush_one(to, lim, out);
            let b = DataBuilder::new(from.raw(), to.raw(), HEADER);
            out(Outgoing::Remote(
                rank,
                b.finish(Some(msg.into_vec()), self.phase),
            ));
            return false;
        }
        let msg = msg.as_slice();
        let slot = self.slot(to);
        if let Some(Buf::Remote(b)) = slot {
            if b.len_with(msg.len()) > lim.bytes {
                self.flush_one(to, lim, out);
            }
        }
        let slot = self.slot(to);
        let buf = slot.get_or_insert_with(|| {
            // Room for a few messages like this one, within the byte limit; a
            // buffer that fills up grows as a `Vec` does. Not room for
            // `factor` of them: most frames between waiting locations carry
            // one message, and a buffer of several KiB is too large for the
            // allocator's per-thread cache, so allocating and freeing it
            // per message cost more than the rest of the send.
            let room = (ENTRY_PREFIX + msg.len()).saturating_mul(lim.factor.min(FIRST_ROOM));
            Buf::Remote(DataBuilder::new(
                from.raw(),
                to.raw(),
                (HEADER + room).min(lim.bytes),
            ))
        });
        let Buf::Remote(b) = buf else {
            unreachable_buffer_kind(to)
        };
        b.push(msg);
        if b.count() as usize >= lim.factor {
            self.flush_one(to, lim, out);
            return false;
        }
        self.mark(to)
    }

    /// The head of a data frame from this outbox's location to `to` holding
    /// no inline message, with a body if `body`, stamped with the phase.
    pub(crate) fn head_for(&self, to: LocationId, body: bool) -> Vec<u8> {
        DataBuilder::new(self.from.raw(), to.raw(), HEADER).finish_head(body, self.phase)
    }

    fn unmark(&mut self, to: LocationId) {
        if let Some(i) = self.dirty.iter().position(|&d| d == to.raw()) {
            // Not `swap_remove`: the others keep their order.
            self.dirty.remove(i);
        }
        if self.dirty.is_empty() {
            self.seen = false;
        }
    }

    /// Sends `to`'s buffer, if it holds anything.
    fn flush_one(&mut self, to: LocationId, lim: Limits, out: &mut impl FnMut(Outgoing)) {
        let (from, phase) = (self.from, self.phase);
        let Some(buf) = self.bufs.get_mut(to.index()).and_then(Option::take) else {
            return;
        };
        match buf {
            Buf::Local(items) if items.is_empty() => {}
            Buf::Local(items) => out(Outgoing::Local(to, Parcel::Batch { from, phase, items })),
            Buf::Remote(b) if b.count() == 0 => {}
            Buf::Remote(b) => out(Outgoing::Remote(
                to.rank(lim.per_rank),
                b.finish(None, phase),
            )),
        }
        self.unmark(to);
    }

    /// Sends every buffer, the one written to first first: messages to
    /// different destinations leave in the order of their buffers' oldest
    /// message, so a message that another one caused is not held back behind
    /// it (a graph's credit to its producer behind the token it made room for,
    /// which the next consumer may pass on around a ring before the credit).
    pub(crate) fn flush(&mut self, lim: Limits, out: &mut impl FnMut(Outgoing)) {
        let mut dirty = std::mem::take(&mut self.dirty);
        for &to in &dirty {
            self.flush_one(LocationId::new(to), lim, out);
        }
        // Keeps the allocation.
        dirty.clear();
        self.dirty = dirty;
        self.seen = false;
    }
}

#[cold]
fn unreachable_buffer_kind(to: LocationId) -> ! {
    // A destination is either on this rank or not, for the world's whole life.
    panic!("tutti: outbox buffer for {to} changed kind (broken invariant)")
}

#[cfg(test)]
mod tests {
    use super::super::frame::{next_entry, parse, Parsed};
    use super::*;

    const LIM: Limits = Limits {
        factor: 3,
        bytes: 96,
        per_rank: 2,
    };

    fn ids(out: &[Outgoing]) -> Vec<String> {
        out.iter()
            .map(|o| match o {
                Outgoing::Local(to, p) => format!("L{}x{}", to.index(), p.messages()),
                Outgoing::Remote(r, f) => {
                    let Parsed::Data(h) = parse(&f.head, f.body.is_some()).unwrap() else {
                        panic!()
                    };
                    format!(
                        "R{r}:{}x{}{}",
                        h.to,
                        h.inline,
                        if f.body.is_some() { "+body" } else { "" }
                    )
                }
            })
            .collect()
    }

    #[test]
    fn local_buffers_flush_at_the_factor_and_on_flush() {
        let mut o = Outbox::new(LocationId::new(0));
        let mut out = Vec::new();
        assert!(
            o.push_local(LocationId::new(1), Payload::Bytes(vec![]), LIM, &mut |x| {
                out.push(x)
            })
        );
        assert!(
            !o.push_local(LocationId::new(1), Payload::Bytes(vec![]), LIM, &mut |x| {
                out.push(x)
            })
        );
        assert!(out.is_empty() && !o.is_empty());
        assert!(!o.sweep_due(), "first visit: noted");
        assert!(o.sweep_due(), "second visit: due");
        o.push_local(LocationId::new(1), Payload::Bytes(vec![]), LIM, &mut |x| {
            out.push(x)
        });
        assert_eq!(ids(&out), ["L1x3"]);
        assert!(o.is_empty() && !o.sweep_due());
        o.push_local(LocationId::new(0), Payload::Bytes(vec![]), LIM, &mut |x| {
            out.push(x)
        });
        o.flush(LIM, &mut |x| out.push(x));
        assert_eq!(ids(&out), ["L1x3", "L0x1"]);
        assert!(o.is_empty());
    }

    #[test]
    fn a_flush_sends_the_buffers_in_the_order_they_were_first_written() {
        let mut o = Outbox::new(LocationId::new(0));
        let mut out = Vec::new();
        let lim = Limits { factor: 8, ..LIM };
        // Location 1 is on this rank, 2 and 3 on rank 1, 4 on rank 2.
        for to in [3, 1, 4, 2, 1, 3] {
            let to = LocationId::new(to);
            if to.index() < 2 {
                o.push_local(to, Payload::Bytes(vec![]), lim, &mut |x| out.push(x));
            } else {
                let rank = to.index() / 2;
                o.push_remote(to, rank, Bytes::Owned(vec![0; 4]), lim, &mut |x| {
                    out.push(x)
                });
            }
        }
        assert!(out.is_empty());
        o.flush(lim, &mut |x| out.push(x));
        assert_eq!(ids(&out), ["R1:3x2", "L1x2", "R2:4x1", "R1:2x1"]);
        // A buffer sent on its own (full) leaves the others' order as it was.
        out.clear();
        for to in [4, 2, 3] {
            let to = LocationId::new(to);
            o.push_remote(
                to,
                to.index() / 2,
                Bytes::Owned(vec![0; 4]),
                LIM,
                &mut |x| out.push(x),
            );
        }
        for _ in 0..2 {
            o.push_remote(
                LocationId::new(4),
                2,
                Bytes::Owned(vec![0; 4]),
                LIM,
                &mut |x| out.push(x),
            );
        }
        assert_eq!(ids(&out), ["R2:4x3"]);
        o.push_remote(
            LocationId::new(4),
            2,
            Bytes::Owned(vec![0; 4]),
            LIM,
            &mut |x| out.push(x),
        );
        o.flush(LIM, &mut |x| out.push(x));
        assert_eq!(ids(&out), ["R2:4x3", "R1:2x1", "R1:3x1", "R2:4x1"]);
        assert!(o.is_empty());
    }

    #[test]
    fn remote_buffers_flush_by_count_by_bytes_and_send_large_messages_alone_in_order() {
        let mut o = Outbox::new(LocationId::new(0));
        let mut out = Vec::new();
        // Location 3 is on rank 1 (two per rank).
        let to = LocationId::new(3);
        o.push_remote(to, 1, Bytes::Owned(vec![1; 4]), LIM, &mut |x| out.push(x));
        o.push_remote(to, 1, Bytes::Owned(vec![2; 4]), LIM, &mut |x| out.push(x));
        o.push_remote(to, 1, Bytes::Owned(vec![3; 4]), LIM, &mut |x| out.push(x));
        assert_eq!(ids(&out), ["R1:3x3"]);
        // Bytes: 48 header + 2×(4+16) = 88 fits 96; a third would not.
        out.clear();
        o.push_remote(to, 1, Bytes::Owned(vec![4; 16]), LIM, &mut |x| out.push(x));
        o.push_remote(to, 1, Bytes::Owned(vec![5; 16]), LIM, &mut |x| out.push(x));
        assert!(out.is_empty());
        o.push_remote(to, 1, Bytes::Owned(vec![6; 16]), LIM, &mut |x| out.push(x));
        assert_eq!(ids(&out), ["R1:3x2"]);
        // A large message flushes what is buffered first, then goes alone.
        out.clear();
        o.push_remote(to, 1, Bytes::Owned(vec![7; 100]), LIM, &mut |x| out.push(x));
        assert_eq!(ids(&out), ["R1:3x1", "R1:3x0+body"]);
        let Outgoing::Remote(_, f) = &out[0] else {
            panic!()
        };
        let mut pos = HEADER;
        assert_eq!(&f.head[next_entry(&f.head, &mut pos).unwrap()], &[6; 16]);
        assert!(o.is_empty());
    }
}
