//! A location's inbox: a lock-free queue of parcels with one waiting consumer.
//!
//! Producers are other locations of this rank (typed values) and the transport's
//! progress engine (frames from other ranks); the consumer is the location itself.
//!
//! # Protocol (no lost wake-up)
//!
//! State: the queue, `armed: AtomicBool` ("the consumer is, or is about to be,
//! waiting"), and the consumer's waker behind a mutex.
//!
//! * *Consume* (a poll that found the queue empty): store the waker under the lock,
//!   `armed = true`, **SeqCst fence**, look at the queue again. If something is
//!   there, take it (`armed` may stay set: a later producer then wakes a task that
//!   finds nothing, which is harmless).
//! * *Produce*: push, **SeqCst fence**, then if `armed` is set, clear it with a swap
//!   and, if the swap saw `true`, take the waker under the lock and wake it.
//!
//! The two fences are ordered in the single SeqCst order. If the consumer's fence
//! comes first, the producer's load of `armed` (after its fence) sees `true`, so it
//! wakes the consumer. Otherwise the producer's fence comes first, so the consumer's
//! second look at the queue (after its fence) sees the pushed parcel. The waker is
//! stored before `armed` is set, and a producer reads it under the same lock after
//! seeing `armed`, so the waker it takes is the current one (the swap that clears
//! `armed` is Acquire and the store that set it is Release). The `loom_tests` module
//! checks this.

use std::any::Any;
use std::task::Waker;

use crate::loom::{fence, lock, AtomicBool, Mutex, Ordering};

use super::LocationId;

/// One message's content between locations.
pub(crate) enum Payload {
    /// A typed value from a location of this rank: moved, never serialized
    /// (with its type's name, for a typed receive's error).
    Value(Box<dyn Any + Send>, &'static str),
    /// Bytes (from this rank, or a large message's body from another).
    Bytes(Vec<u8>),
}

/// What arrives in an inbox: one message, a batch of them, or a frame from
/// another rank (validated by the engine before it was pushed).
///
/// Every parcel carries the phase its messages were sent in: how many
/// quiescence detections (`recv_until_quiet` ending) the sender had completed.
pub(crate) enum Parcel {
    One {
        from: LocationId,
        phase: u64,
        payload: Payload,
    },
    Batch {
        from: LocationId,
        phase: u64,
        items: Vec<Payload>,
    },
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Frame {
        from: LocationId,
        phase: u64,
        head: std::sync::Arc<[u8]>,
        inline: u32,
        body: Option<Vec<u8>>,
    },
}

impl Parcel {
    /// The phase its messages were sent in.
    pub(crate) fn phase(&self) -> u64 {
        match self {
            Parcel::One { phase, .. }
            | Parcel::Batch { phase, .. }
            | Parcel::Frame { phase, .. } => *phase,
        }
    }

    /// Messages in this parcel.
    pub(crate) fn messages(&self) -> usize {
        match self {
            Parcel::One { .. } => 1,
            Parcel::Batch { items, .. } => items.len(),
            Parcel::Frame { inline, body, .. } => *inline as usize + body.is_some() as usize,
        }
    }
}

#[cfg(not(loom))]
type Queue<T> = crossbeam_queue::SegQueue<T>;

/// Under loom, a mutex-protected deque stands in for the lock-free queue (its
/// internals are crossbeam's, tested there); the waking protocol around it is ours.
#[cfg(loom)]
struct Queue<T>(Mutex<std::collections::VecDeque<T>>);

#[cfg(loom)]
impl<T> Queue<T> {
    fn new() -> Self {
        Queue(Mutex::new(std::collections::VecDeque::new()))
    }
    fn push(&self, v: T) {
        lock(&self.0).push_back(v);
    }
    fn pop(&self) -> Option<T> {
        lock(&self.0).pop_front()
    }
    fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }
}

/// A multi-producer, single-consumer queue whose consumer can wait; see the
/// module documentation.
pub(crate) struct Mailslot<T> {
    queue: Queue<T>,
    armed: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl<T> Mailslot<T> {
    pub(crate) fn new() -> Self {
        Mailslot {
            queue: Queue::new(),
            armed: AtomicBool::new(false),
            waker: Mutex::new(None),
        }
    }

    /// Producer: pushes `v` and wakes the consumer if it waits.
    pub(crate) fn push(&self, v: T) {
        self.queue.push(v);
        // Pairs with the consumer's fence in `poll_pop` (module docs).
        fence(Ordering::SeqCst);
        if self.armed.load(Ordering::Relaxed) && self.armed.swap(false, Ordering::Acquire) {
            self.wake_cold();
        }
    }

    #[cold]
    fn wake_cold(&self) {
        let w = lock(&self.waker).take();
        if let Some(w) = w {
            w.wake();
        }
    }

    /// Consumer: the oldest item, without waiting.
    #[inline]
    pub(crate) fn pop(&self) -> Option<T> {
        self.queue.pop()
    }

    /// Consumer: the oldest item, or `None` after arranging for `waker` to be woken
    /// when one arrives.
    pub(crate) fn pop_or_register(&self, waker: &Waker) -> Option<T> {
        if let Some(v) = self.queue.pop() {
            return Some(v);
        }
        {
            let mut slot = lock(&self.waker);
            match &*slot {
                Some(w) if w.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
        }
        // Release: a producer that swaps `armed` with Acquire sees the waker.
        self.armed.store(true, Ordering::Release);
        // Pairs with the producer's fence in `push` (module docs).
        fence(Ordering::SeqCst);
        self.queue.pop()
    }

    /// Whether nothing is queued (a hint: producers may push at any time).
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::test_util::counting_waker;

    #[test]
    fn a_push_after_registration_wakes_once() {
        let slot = Mailslot::<u32>::new();
        let (count, waker) = counting_waker();
        assert_eq!(slot.pop_or_register(&waker), None);
        slot.push(1);
        slot.push(2);
        assert_eq!(count.0.load(crate::loom::Ordering::SeqCst), 1);
        assert_eq!(slot.pop(), Some(1));
        assert_eq!(slot.pop_or_register(&waker), Some(2));
        assert!(slot.is_empty());
    }
}
