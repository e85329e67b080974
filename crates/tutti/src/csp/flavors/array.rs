//! The bounded flavor: a FIFO of at most `capacity` sent values.
//!
//! A sender leaves its value here when no receiver waits and there is room, and waits
//! otherwise. When a receiver takes a value from a full buffer it moves the oldest
//! waiting sender's value in, completing that sender, so senders are served FIFO and a
//! completed send always means "the value is in the channel".

use std::collections::VecDeque;

/// Values allocated up front at most; larger buffers grow on demand.
const PREALLOCATE: usize = if cfg!(loom) { 2 } else { 4096 };

/// Storage of a bounded channel.
pub(crate) struct Array<T> {
    /// Sent values, oldest first. Holds more than `capacity` only transiently, after a
    /// cancelled receiver gave a value back.
    values: VecDeque<T>,
    /// The bound, at least 1.
    capacity: usize,
}

impl<T> Array<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        debug_assert!(capacity >= 1);
        Array {
            values: VecDeque::with_capacity(capacity.min(PREALLOCATE)),
            capacity,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    #[inline]
    pub(crate) fn has_room(&self) -> bool {
        self.values.len() < self.capacity
    }

    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        debug_assert!(self.has_room());
        self.values.push_back(value);
    }

    pub(crate) fn push_front(&mut self, value: T) {
        self.values.push_front(value);
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        self.values.pop_front()
    }

    pub(crate) fn take_all(&mut self) -> VecDeque<T> {
        std::mem::take(&mut self.values)
    }
}
