//! Which actor or location sends on a channel, for the wait-for graph of `diag`: an
//! actor (or location) that waits to receive from a channel whose only sender is
//! another actor waits for that actor, like an `ask` waits for the asked one. So a
//! cycle through both paradigms — actor A asks B while B waits to receive what only A
//! sends — is reported like any other.
//!
//! # The word
//!
//! ```text
//! NOBODY (0)   no one has used the sending side yet
//! id           only the `diag` node `id` has used it (sent, offered in an `Alt`, or
//!              cloned a `Tx`)
//! MANY (MAX)   someone else has too: another node, or a context that is none (a plain
//!              thread, a task, a CSP process); sticky
//! ```
//!
//! Node ids start at 1 and are never `MAX`. Changed by compare-exchange only, so two
//! first uses racing cannot both claim it: the loser sees the winner's id and goes to
//! `MANY` (unless it is that node); `MANY` is never left. Relaxed throughout, and not
//! modelled under loom (`unmodelled`): nothing is published through the word and no
//! one waits on it; a receiver reads it when it is about to wait, and the detector
//! acts on that only after a double collect saw every node of the cycle blocked and
//! not polled since — the sender among them, so it cannot have changed the word in
//! between. (Modelling it would only multiply the interleavings of every CSP model.)
//!
//! Limit, as for process networks (`deadlock/mod.rs`): a `Tx` handed to a plain thread
//! or another actor that has not used it yet is invisible until its first use; if the
//! recorded node and the receiver then block on each other, the receiver's wait is taken
//! to depend on the recorded node only.

use crate::loom::unmodelled::AtomicU64;
use crate::loom::Ordering;

const NOBODY: u64 = 0;
const MANY: u64 = u64::MAX;

/// The channel's sending node (see the module docs).
pub(crate) struct SenderNode(AtomicU64);

impl SenderNode {
    pub(crate) fn new() -> SenderNode {
        SenderNode(AtomicU64::new(NOBODY))
    }

    /// The calling context uses the sending side.
    #[inline]
    pub(crate) fn used(&self) {
        let now = self.0.load(Ordering::Relaxed);
        if now == MANY {
            return;
        }
        let me = crate::diag::node::current_id();
        if now != me || me == NOBODY {
            self.claim(now, me);
        }
    }

    #[cold]
    fn claim(&self, mut now: u64, me: u64) {
        loop {
            let want = if now == NOBODY && me != NOBODY {
                me
            } else {
                MANY
            };
            if now == want {
                return;
            }
            match self
                .0
                .compare_exchange(now, want, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) if seen == MANY || (seen == me && me != NOBODY) => return,
                Err(seen) => now = seen,
            }
        }
    }

    /// The node a receiver waits for, given how many `Tx` handles are left: the one
    /// node that ever sent, if one `Tx` is left.
    pub(crate) fn sole(&self, senders: u64) -> Option<u64> {
        let id = self.0.load(Ordering::Relaxed);
        (senders == 1 && id != NOBODY && id != MANY).then_some(id)
    }
}
