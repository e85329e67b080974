//! The handshake between a runtime worker blocking on a mailbox's futex and
//! the process's receiving thread, the backstop that drains the mailbox
//! while no worker does (`engine/receive.rs`).
//!
//! The thread naps briefly while no worker is on the futex (it must drain
//! within a nap); with a worker there, after a long quiet spell, it *dozes*
//! on descriptors that no sender rings (`engine/doze.rs`). A doze must end
//! when the worker leaves the futex, or the mailbox would go undrained while
//! the worker runs long tasks. Two flags, each written by one side:
//!
//! * `hooked`, by the worker: set before it blocks, cleared after (**W1**),
//!   then it reads `dozing` (**W2**) and, if set, rings the thread's bell.
//! * `dozing`, by the thread: set before a doze (**T1**), then it reads
//!   `hooked` (**T2**) and dozes only if it is set; cleared after.
//!
//! All four accesses are SeqCst, so they have one total order: if W1
//! precedes T2, T2 sees `hooked` cleared and the thread does not doze; else
//! T1 precedes W2 (T1 before T2, W1 before W2), W2 sees `dozing` and the
//! worker rings the bell, which ends the doze or makes it return at once
//! (the bell stays rung until the thread empties it after the doze).
//! `loom_tests::a_worker_leaving_the_futex_ends_the_doze` checks it.

use crate::loom::{AtomicBool, Ordering};

/// The two flags of the handshake (see the module doc).
pub(crate) struct Backstop {
    hooked: AtomicBool,
    dozing: AtomicBool,
}

impl Backstop {
    /// No worker on the futex, the thread awake.
    pub(crate) fn new() -> Backstop {
        Backstop {
            hooked: AtomicBool::new(false),
            dozing: AtomicBool::new(false),
        }
    }

    /// A worker is about to block on the futex.
    pub(crate) fn worker_blocks(&self) {
        self.hooked.store(true, Ordering::SeqCst);
    }

    /// The worker left the futex (W1, W2): true if it must ring the bell.
    #[must_use]
    pub(crate) fn worker_leaves(&self) -> bool {
        self.hooked.store(false, Ordering::SeqCst);
        self.dozing.load(Ordering::SeqCst)
    }

    /// Whether a worker blocks on the futex (a hint for the thread's naps).
    pub(crate) fn hooked(&self) -> bool {
        self.hooked.load(Ordering::Relaxed)
    }

    /// The thread dozes (T1, T2) by `doze` unless the worker has left; true
    /// if it dozed. The caller empties the bell afterwards.
    pub(crate) fn doze(&self, doze: impl FnOnce()) -> bool {
        self.dozing.store(true, Ordering::SeqCst);
        let stay = self.hooked.load(Ordering::SeqCst);
        if stay {
            doze();
        }
        self.dozing.store(false, Ordering::SeqCst);
        stay
    }
}
