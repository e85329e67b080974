//! The handshake between a runtime worker blocking on a mailbox's futex and
//! the process's receiving thread, the backstop that drains the mailbox
//! while no worker does (`engine/receive.rs`).
//!
//! The thread naps briefly while no worker is on the futex (it must drain
//! within a nap); with a worker there, after a long quiet spell, it *dozes*
//! on descriptors that no sender rings (`engine/doze.rs`). A doze must end
//! when the worker leaves the futex, or the mailbox would go undrained while
//! the worker runs long tasks.
//!
//! # The state word
//!
//! Both sides change one atomic word, by read-modify-writes only:
//!
//! | bits   | name      | set by                      | cleared by                  |
//! |--------|-----------|-----------------------------|-----------------------------|
//! | 0      | `DOZING`  | the thread, before a doze   | the thread, after it        |
//! | 1..    | `HOOKED`s | a worker, before it blocks  | that worker, after it       |
//!
//! The upper bits count the workers on the futex (one per runtime at a time,
//! `sleep::Sleep::claim_waiter`, but several runtimes may share a process).
//!
//! * **W** (worker leaves): `fetch_sub(HOOKED)`; if the value before had
//!   `DOZING`, the worker rings the thread's bell.
//! * **T** (thread about to doze): `fetch_or(DOZING)`; it dozes only if the
//!   value before counted a worker.
//!
//! # Why no ring is lost
//!
//! W and T are read-modify-writes of one location, so they are ordered by
//! its modification order and each reads the value the other left if it
//! comes second. If W comes first, T reads no worker (or only another one
//! still on the futex, whose own W is then ordered after T) and does not
//! doze on this one's account; if T comes first, W reads `DOZING` and rings
//! the bell, which ends the doze or makes it return at once (the bell, an
//! eventfd, stays rung until the thread empties it after the doze). A ring
//! that comes after the doze has ended only makes the next doze return at
//! once: one extra look, never a missed one.
//!
//! An earlier version used two flags, each written by one side with a
//! SeqCst store and read by the other with a SeqCst load (the store-buffering
//! pattern). That is correct in the C++ memory model but not checkable by
//! loom, which treats SeqCst loads and stores as acquire/release and so
//! explores the outcome where both loads miss both stores: it reported a
//! lost ring that real hardware cannot produce. One word with
//! read-modify-writes needs no SeqCst reasoning at all, and loom models it
//! exactly. `loom_tests::a_worker_leaving_the_futex_ends_the_doze` checks
//! it.

use crate::loom::{AtomicUsize, Ordering};

/// Bit 0 of the state word: the thread dozes (or is about to).
const DOZING: usize = 1;
/// One worker on the futex, in the state word's upper bits.
const HOOKED: usize = 2;

/// The state word of the handshake (see the module doc).
pub(crate) struct Backstop {
    state: AtomicUsize,
}

impl Backstop {
    /// No worker on the futex, the thread awake.
    pub(crate) fn new() -> Backstop {
        Backstop {
            state: AtomicUsize::new(0),
        }
    }

    /// A worker is about to block on the futex.
    pub(crate) fn worker_blocks(&self) {
        // Relaxed: only the modification order of the word matters (module
        // doc); the bell and the futex carry the data.
        self.state.fetch_add(HOOKED, Ordering::Relaxed);
    }

    /// The worker left the futex (W): true if it must ring the bell.
    #[must_use]
    pub(crate) fn worker_leaves(&self) -> bool {
        let before = self.state.fetch_sub(HOOKED, Ordering::Relaxed);
        debug_assert!(before >= HOOKED, "a worker left the futex it never hooked");
        before & DOZING != 0
    }

    /// Whether a worker blocks on the futex (a hint for the thread's naps).
    pub(crate) fn hooked(&self) -> bool {
        self.state.load(Ordering::Relaxed) >= HOOKED
    }

    /// The thread dozes (T) by `doze` unless no worker is on the futex;
    /// true if it dozed. The caller empties the bell afterwards.
    pub(crate) fn doze(&self, doze: impl FnOnce()) -> bool {
        let stay = self.state.fetch_or(DOZING, Ordering::Relaxed) >= HOOKED;
        if stay {
            doze();
        }
        self.state.fetch_and(!DOZING, Ordering::Relaxed);
        stay
    }
}
