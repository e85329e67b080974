//! A member's state word and the two steps that race on it: claiming a rank
//! (a new process takes a free or dead rank) and burying one (a survivor
//! marks a rank whose process died).
//!
//! The word holds the state in its low 8 bits and, above them, the low 24
//! bits of the incarnation the state belongs to (its *tag*). Without the tag
//! a survivor that read READY of a dead incarnation could, after a new
//! process claimed the rank and published READY in turn, compare-exchange
//! READY → DEAD and bury the live newcomer (an ABA: the same state value of
//! another incarnation); a second claimer could do the same and take a rank
//! a live process holds. With the tag the word of the newcomer's READY
//! differs from the dead one's, so such an exchange fails (unless 2^24 claims
//! of one rank happen during one survivor's exchange).
//!
//! The protocol (`loom_tests::a_survivor_never_buries_the_newcomer`,
//! `two_claimers_one_winner`):
//! - claim: read the word; if its state is the one expected (FREE, or DEAD),
//!   compare-exchange it to CLAIMING (same tag) — one claimer wins; bump the
//!   incarnation; publish JOINING with the new tag (Release, so whoever reads
//!   JOINING reads the new incarnation).
//! - bury: read the word; only a live state (JOINING, READY, LEAVING) of the
//!   incarnation the burier knew is compare-exchanged to DEAD (same tag).
//! - any other state change is made by the member's own process and carries
//!   its incarnation's tag.

use crate::loom::{AtomicU32, AtomicU64, Ordering};

/// Member states (the low 8 bits of the state word).
pub(crate) const FREE: u32 = 0;
pub(crate) const JOINING: u32 = 1;
pub(crate) const READY: u32 = 2;
pub(crate) const LEAVING: u32 = 3;
pub(crate) const LEFT: u32 = 4;
pub(crate) const DEAD: u32 = 5;
/// A new process is taking a dead rank (between DEAD and JOINING).
pub(crate) const CLAIMING: u32 = 6;

const STATE_BITS: u32 = 8;
const STATE_MASK: u32 = (1 << STATE_BITS) - 1;

/// The tag of incarnation `incarnation`: its low 24 bits.
fn tag(incarnation: u64) -> u32 {
    (incarnation as u32) << STATE_BITS
}

fn word(state: u32, incarnation: u64) -> u32 {
    state | tag(incarnation)
}

/// A member's state, tagged with its incarnation (see the module docs).
#[repr(transparent)]
pub(crate) struct StateWord(AtomicU32);

impl StateWord {
    #[cfg(loom)]
    pub(crate) fn new(state: u32, incarnation: u64) -> Self {
        StateWord(AtomicU32::new(word(state, incarnation)))
    }

    /// The state (Acquire: what the member published before it is visible).
    pub(crate) fn get(&self) -> u32 {
        self.0.load(Ordering::Acquire) & STATE_MASK
    }

    /// Publishes `state` of incarnation `incarnation` (Release). Only the
    /// member's own process, or a test, sets a state this way.
    pub(crate) fn set(&self, state: u32, incarnation: u64) {
        self.0.store(word(state, incarnation), Ordering::Release);
    }

    /// Claims the rank if its state is `from` (FREE or DEAD): one claimer
    /// wins. The winner's incarnation is bumped and CLAIMING published; the
    /// caller writes its details and then publishes JOINING with
    /// [`set`](Self::set) and the returned incarnation.
    pub(crate) fn claim(&self, from: u32, incarnation: &AtomicU64) -> Option<u64> {
        let now = self.0.load(Ordering::Acquire);
        if now & STATE_MASK != from {
            return None;
        }
        let claiming = (now & !STATE_MASK) | CLAIMING;
        self.0
            .compare_exchange(now, claiming, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        Some(incarnation.fetch_add(1, Ordering::AcqRel) + 1)
    }

    /// Marks the rank DEAD if it is still in a live state of incarnation
    /// `known` — never a newer incarnation. Whether this call buried it.
    pub(crate) fn bury(&self, known: u64) -> bool {
        let now = self.0.load(Ordering::Acquire);
        let live = matches!(now & STATE_MASK, JOINING | READY | LEAVING);
        if !live || now & !STATE_MASK != tag(known) {
            return false;
        }
        self.0
            .compare_exchange(now, word(DEAD, known), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }
}
