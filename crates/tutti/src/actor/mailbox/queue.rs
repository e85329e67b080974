//! The unbounded mailbox queue: an intrusive multi-producer single-consumer queue after
//! Dmitry Vyukov's node-based MPSC design, linking envelopes through the [`Link`] at
//! their start (so a push allocates nothing beyond the envelope itself).
//!
//! # Structure
//!
//! * `tail` — the most recently pushed link; producers swap themselves in. Null stands
//!   for the embedded `stub`.
//! * `stub` — a link owned by the queue, so the queue never has to hold zero links.
//! * `head` — the consumer's position: the oldest link not yet returned, or the stub.
//!   Null stands for the stub. Only the consumer touches it.
//!
//! # Push (any thread)
//!
//! Clear the node's `next`, swap it into `tail` (`AcqRel`), then store it into the
//! previous tail's `next` (`Release`). Between the swap and the store the queue is
//! briefly *disconnected*: the node is the tail but not yet reachable from `head`.
//!
//! # Pop (the consumer)
//!
//! Skip the stub if it is at the head. If the head has a successor, return the head and
//! advance. If the head is the last link, push the stub behind it (so the head can be
//! returned while the queue keeps a link), then return it once its successor appears.
//! A pop that meets a disconnected queue reports [`Pop::Busy`]: a push is half done and
//! its producer will finish it within a few instructions; the mailbox state word
//! (`state.rs`) knows such a message was reserved, so the consumer retries rather than
//! concluding the queue is empty.
//!
//! # Invariants
//!
//! 1. Every pushed link becomes reachable from `head` once its producer's second step
//!    is done, and is returned by exactly one pop, in the order of the swaps on `tail`
//!    (so one producer's messages come out in the order it pushed them).
//! 2. A link's `next` is written once by a producer (the one whose swap returned it)
//!    and read by the consumer with `Acquire`; the consumer frees a link only after
//!    returning it, which happens only after its successor was linked — so no producer
//!    writes into a freed link.
//!
//! The `loom_tests` module model-checks the queue with the state word.

use std::ptr::{self, NonNull};

use crate::loom::{Ordering, UnsafeCell};
use crate::msg::Link;

/// What a pop found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pop {
    /// The oldest link, now owned by the consumer.
    Item(NonNull<Link>),
    /// No link was pushed that has not been returned.
    Empty,
    /// A push is half done; try again shortly.
    Busy,
}

/// The queue; see the module documentation.
pub(crate) struct Queue {
    tail: crate::msg::AtomicLinkPtr,
    stub: Link,
    head: UnsafeCell<*mut Link>,
}

// SAFETY: producers only use the atomic `tail` and links they own or were handed by the
// swap; `head` is only touched by the single consumer (the `pop` contract). Links are
// plain pointers to envelopes whose payloads are `Send`.
unsafe impl Send for Queue {}
// SAFETY: as above.
unsafe impl Sync for Queue {}

impl Queue {
    pub(crate) fn new() -> Queue {
        Queue {
            tail: crate::msg::AtomicLinkPtr::new(ptr::null_mut()),
            stub: Link::new(),
            head: UnsafeCell::new(ptr::null_mut()),
        }
    }

    #[inline]
    fn stub(&self) -> *mut Link {
        ptr::addr_of!(self.stub).cast_mut()
    }

    /// Pushes a link (any thread).
    ///
    /// # Safety
    /// `node` is a valid link owned by the caller, which gives it to the queue.
    #[inline]
    pub(crate) unsafe fn push(&self, node: NonNull<Link>) {
        let node = node.as_ptr();
        // SAFETY: the caller owns `node` until the swap publishes it.
        unsafe { (*node).next.store(ptr::null_mut(), Ordering::Relaxed) };
        // AcqRel: Release publishes the cleared `next` to the producer that links after
        // us (it stores into it); Acquire orders our store below after the previous
        // tail's own initialisation.
        let prev = self.tail.swap(node, Ordering::AcqRel);
        let prev = if prev.is_null() { self.stub() } else { prev };
        // SAFETY: `prev` is the stub or a link that cannot be freed before its `next`
        // is set (invariant 2); only we write it.
        unsafe { (*prev).next.store(node, Ordering::Release) };
    }

    /// The address of the link pushed last, 0 if none or if it is the queue's own
    /// stub (which carries no message). Every link up to it in queue order was
    /// pushed before this load: a trace takes a clock reading after it, and the
    /// turns on those links share that reading (`diag/trace/chain.rs`).
    #[inline]
    pub(crate) fn last(&self) -> usize {
        let tail = self.tail.load(Ordering::Acquire);
        if tail == self.stub() {
            0
        } else {
            tail as usize
        }
    }

    /// Pops the oldest link.
    ///
    /// # Safety
    /// Only one thread at a time may pop (the consumer).
    pub(crate) unsafe fn pop(&self) -> Pop {
        let stub = self.stub();
        let mut head = self.head.with(|h| {
            // SAFETY: consumer-only field.
            unsafe { *h }
        });
        if head.is_null() {
            head = stub;
        }
        // SAFETY: `head` is the stub or a link the queue owns (not yet returned).
        let mut next = unsafe { (*head).next.load(Ordering::Acquire) };
        if head == stub {
            if next.is_null() {
                let tail = self.tail.load(Ordering::Acquire);
                return if tail.is_null() || tail == stub {
                    Pop::Empty
                } else {
                    Pop::Busy
                };
            }
            self.set_head(next);
            head = next;
            // SAFETY: as above.
            next = unsafe { (*head).next.load(Ordering::Acquire) };
        }
        if !next.is_null() {
            self.set_head(next);
            // SAFETY: non-null by construction.
            return Pop::Item(unsafe { NonNull::new_unchecked(head) });
        }
        let tail = self.tail.load(Ordering::Acquire);
        if tail != head {
            return Pop::Busy;
        }
        // `head` is the last link: put the stub behind it so it can be returned.
        // SAFETY: the stub is not in the queue (head != stub and the stub was skipped).
        unsafe { self.push(NonNull::new_unchecked(stub)) };
        // SAFETY: as above.
        next = unsafe { (*head).next.load(Ordering::Acquire) };
        if !next.is_null() {
            self.set_head(next);
            // SAFETY: non-null by construction.
            return Pop::Item(unsafe { NonNull::new_unchecked(head) });
        }
        Pop::Busy
    }

    #[inline]
    fn set_head(&self, p: *mut Link) {
        self.head.with_mut(|h| {
            // SAFETY: consumer-only field.
            unsafe { *h = p }
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn node() -> NonNull<Link> {
        NonNull::from(Box::leak(Box::new(Link::new())))
    }

    fn free(p: NonNull<Link>) {
        // SAFETY: from `node`, freed once.
        drop(unsafe { Box::from_raw(p.as_ptr()) });
    }

    #[test]
    fn fifo_through_the_stub_many_times() {
        let q = Queue::new();
        // SAFETY: single-threaded use; every node is pushed once and freed once.
        unsafe {
            assert_eq!(q.pop(), Pop::Empty);
            for round in 1..5 {
                let nodes: Vec<_> = (0..round).map(|_| node()).collect();
                for &n in &nodes {
                    q.push(n);
                }
                for &n in &nodes {
                    assert_eq!(q.pop(), Pop::Item(n));
                    free(n);
                }
                assert_eq!(q.pop(), Pop::Empty);
            }
        }
    }

    #[test]
    fn last_names_the_link_pushed_last_never_the_stub() {
        let q = Queue::new();
        // SAFETY: single-threaded use; every node is pushed once and freed once.
        unsafe {
            assert_eq!(q.last(), 0);
            let (a, b) = (node(), node());
            q.push(a);
            assert_eq!(q.last(), a.as_ptr() as usize);
            q.push(b);
            assert_eq!(q.last(), b.as_ptr() as usize);
            assert_eq!(q.pop(), Pop::Item(a));
            assert_eq!(q.last(), b.as_ptr() as usize);
            // Popping the last link pushes the stub behind it: no message is last.
            assert_eq!(q.pop(), Pop::Item(b));
            assert_eq!(q.last(), 0);
            free(a);
            free(b);
        }
    }

    #[test]
    fn producers_keep_their_order() {
        const PER: usize = 2000;
        #[repr(C)]
        struct Msg {
            link: Link,
            from: usize,
            seq: usize,
        }
        let q = Queue::new();
        std::thread::scope(|s| {
            for from in 0..3 {
                let q = &q;
                s.spawn(move || {
                    for seq in 0..PER {
                        let m = Box::new(Msg {
                            link: Link::new(),
                            from,
                            seq,
                        });
                        // SAFETY: `link` is the first field of a repr(C) struct.
                        unsafe { q.push(NonNull::from(Box::leak(m)).cast()) };
                    }
                });
            }
            let mut next = [0usize; 3];
            let mut got = 0;
            while got < 3 * PER {
                // SAFETY: this thread is the only consumer.
                match unsafe { q.pop() } {
                    Pop::Item(p) => {
                        // SAFETY: every link in the queue came from a leaked Msg.
                        let m = unsafe { Box::from_raw(p.cast::<Msg>().as_ptr()) };
                        let _ = &m.link;
                        assert_eq!(m.seq, next[m.from], "per-producer order");
                        next[m.from] += 1;
                        got += 1;
                    }
                    Pop::Empty | Pop::Busy => crate::loom::spin_hint(),
                }
            }
        });
    }
}
