//! The rendezvous flavor: no buffer.
//!
//! A sent value stays in its sender's waiter until a receiver takes it (or is handed to a
//! receiver already waiting), so a send completes only once a receiver has the value. The
//! one storage here is `returned`: values that had been committed to a receiver whose
//! future was then dropped before it could return them. They are received before any
//! waiting sender's value, since they were sent first.

use std::collections::VecDeque;

/// Storage of a rendezvous channel.
pub(crate) struct Zero<T> {
    /// Values given back by cancelled receivers, oldest first. Empty in the common case,
    /// and never allocated unless a receiver is cancelled after a commit.
    returned: VecDeque<T>,
}

impl<T> Zero<T> {
    pub(crate) fn new() -> Self {
        Zero {
            returned: VecDeque::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.returned.len()
    }

    pub(crate) fn give_back(&mut self, value: T) {
        self.returned.push_front(value);
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        self.returned.pop_front()
    }

    pub(crate) fn take_all(&mut self) -> VecDeque<T> {
        std::mem::take(&mut self.returned)
    }
}
