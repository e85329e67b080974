//! Channel flavors: what a channel holds besides its waiting parties.
//!
//! Both flavors share the hand-off logic of [`chan`](super::chan): a value goes straight
//! from a sender to a waiting receiver whenever one waits. They differ in what happens
//! when nobody waits on the other side:
//!
//! * [`zero`] — a rendezvous: a sender waits until a receiver takes its value. Its only
//!   storage is for values *given back* by receivers that were cancelled after a value
//!   had been committed to them (see the cancellation proof in the [csp module](super)).
//! * [`array`] — a bounded FIFO of `capacity` values: a sender waits only when it is full.
//!
//! Values given back go to the front, so they are received next; they may briefly make
//! an array buffer hold more than its capacity (senders keep waiting until it drains).

mod array;
mod zero;

use std::collections::VecDeque;

use array::Array;
use zero::Zero;

/// The storage of one channel, by flavor.
pub(crate) enum Buffer<T> {
    /// Rendezvous (capacity 0).
    Zero(Zero<T>),
    /// Bounded FIFO (capacity ≥ 1).
    Array(Array<T>),
}

impl<T> Buffer<T> {
    /// A rendezvous buffer for `capacity == 0`, else a bounded one.
    pub(crate) fn new(capacity: usize) -> Self {
        if capacity == 0 {
            Buffer::Zero(Zero::new())
        } else {
            Buffer::Array(Array::new(capacity))
        }
    }

    /// The capacity: 0 for a rendezvous.
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Buffer::Zero(_) => 0,
            Buffer::Array(a) => a.capacity(),
        }
    }

    /// Number of values held.
    pub(crate) fn len(&self) -> usize {
        match self {
            Buffer::Zero(z) => z.len(),
            Buffer::Array(a) => a.len(),
        }
    }

    /// Whether no value is held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a sender may leave a value without a receiver taking it.
    #[inline]
    pub(crate) fn has_room(&self) -> bool {
        match self {
            Buffer::Zero(_) => false,
            Buffer::Array(a) => a.has_room(),
        }
    }

    /// Appends a value; only when [`has_room`](Self::has_room).
    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        match self {
            Buffer::Zero(_) => unreachable!("tutti: a rendezvous channel buffers no sent value"),
            Buffer::Array(a) => a.push(value),
        }
    }

    /// Puts a value given back by a cancelled receiver at the front.
    pub(crate) fn push_front(&mut self, value: T) {
        match self {
            Buffer::Zero(z) => z.give_back(value),
            Buffer::Array(a) => a.push_front(value),
        }
    }

    /// Takes the oldest value.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        match self {
            Buffer::Zero(z) => z.pop(),
            Buffer::Array(a) => a.pop(),
        }
    }

    /// Empties the buffer (poison, or every receiver gone); the caller drops the values
    /// after unlocking.
    pub(crate) fn take_all(&mut self) -> VecDeque<T> {
        match self {
            Buffer::Zero(z) => z.take_all(),
            Buffer::Array(a) => a.take_all(),
        }
    }
}
