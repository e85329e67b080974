//! What a channel holds besides its waiting parties: its buffered values.
//!
//! A value goes straight from a sender to a waiting receiver whenever one waits; the
//! buffer holds values nobody has taken yet:
//!
//! * a **rendezvous** channel (capacity 0) buffers no sent value. Its buffer only holds
//!   values *given back* by receivers that were cancelled after a value had been
//!   committed to them (see the cancellation proof in `chan.rs`), and is not allocated
//!   until that happens.
//! * a **bounded** channel (capacity ≥ 1) holds up to `capacity` values; a sender waits
//!   only when it is full.
//! * an **unbounded** channel (capacity `usize::MAX`) never makes a sender wait. Its
//!   buffer is allocated on the first value and grows as needed; once a burst has grown
//!   it past [`KEEP`] slots, it halves whenever it drains below a quarter full, so memory
//!   taken by a burst is given back (each value is moved at most once per halving, so
//!   this costs O(1) per value over time).
//!
//! Both are one FIFO behind a pointer, so a channel pays one word for its buffer (a
//! rendezvous channel of a process network — `tutti hello` has 5·10^6 of them — pays
//! nothing more). Values given back go to the front, so they are received next; they may
//! briefly make a bounded buffer hold more than its capacity (senders keep waiting until
//! it drains).

use std::collections::VecDeque;

/// Values allocated up front at most; larger buffers grow on demand.
const PREALLOCATE: usize = if cfg!(loom) { 2 } else { 4096 };

/// Slots an unbounded buffer keeps however far it drains.
const KEEP: usize = if cfg!(loom) { 2 } else { 4096 };

/// The buffered values of one channel; see the module docs. The box is the point: a
/// `VecDeque` inline would cost every rendezvous channel three more words.
#[allow(clippy::box_collection)]
pub(crate) struct Buffer<T>(Option<Box<VecDeque<T>>>);

impl<T> Buffer<T> {
    /// The buffer of a channel of `capacity` (0: a rendezvous, allocated on demand).
    pub(crate) fn new(capacity: usize) -> Self {
        if capacity == 0 || capacity == super::channel::UNBOUNDED {
            Buffer(None)
        } else {
            Buffer(Some(Box::new(VecDeque::with_capacity(
                capacity.min(PREALLOCATE),
            ))))
        }
    }

    /// Number of values held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |v| v.len())
    }

    /// Whether no value is held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a sender may leave a value without a receiver taking it.
    #[inline]
    pub(crate) fn has_room(&self, capacity: usize) -> bool {
        self.len() < capacity
    }

    /// Appends a value; only when [`has_room`](Self::has_room).
    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        self.values().push_back(value);
    }

    /// Puts a value given back by a cancelled receiver at the front.
    pub(crate) fn push_front(&mut self, value: T) {
        self.values().push_front(value);
    }

    /// Takes the oldest value.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        self.0.as_mut()?.pop_front()
    }

    /// An unbounded buffer's memory follows its length down (module docs).
    #[inline]
    pub(crate) fn trim(&mut self) {
        if let Some(v) = &mut self.0 {
            if v.capacity() > KEEP && v.len() < v.capacity() / 4 {
                Self::halve(v);
            }
        }
    }

    #[cold]
    fn halve(v: &mut VecDeque<T>) {
        v.shrink_to((v.capacity() / 2).max(KEEP));
    }

    /// Empties the buffer (poison, or every receiver gone); the caller drops the values
    /// after unlocking.
    pub(crate) fn take_all(&mut self) -> VecDeque<T> {
        self.0
            .as_mut()
            .map(|v| std::mem::take(&mut **v))
            .unwrap_or_default()
    }

    fn values(&mut self) -> &mut VecDeque<T> {
        self.0.get_or_insert_with(Box::default)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Buffer, KEEP};
    use crate::csp::channel::UNBOUNDED;

    #[test]
    fn an_unbounded_buffer_gives_a_burst_back_as_it_drains() {
        let mut b: Buffer<u64> = Buffer::new(UNBOUNDED);
        assert!(b.0.is_none(), "allocated on the first value only");
        for i in 0..100_000 {
            assert!(b.has_room(UNBOUNDED));
            b.push(i);
        }
        let grown = b.0.as_ref().unwrap().capacity();
        assert!(grown >= 100_000);
        for i in 0..100_000 {
            assert_eq!(b.pop(), Some(i));
            b.trim();
            let v = b.0.as_ref().unwrap();
            assert!(v.capacity() <= (4 * v.len()).max(2 * KEEP).max(grown / 2 + 1));
        }
        assert!(b.0.as_ref().unwrap().capacity() <= 2 * KEEP);
    }
}
