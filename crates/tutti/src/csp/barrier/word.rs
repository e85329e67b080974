//! The barrier's state word: phase, enrolled count and remaining count in one `u64`, so
//! that an arrival is a single read-modify-write.
//!
//! # Encoding of `Word` (one `AtomicU64`)
//!
//! ```text
//!  63 ........ 56 | 55 ............ 28 | 27 ............. 0
//!      phase      |      enrolled      |     remaining
//! ```
//!
//! * `remaining` (bits 0..28): enrolled parties that have not arrived in the current
//!   phase. Decremented by an arrival and by the resignation of a party that has not
//!   arrived; incremented by an enrollment (the newcomer counts in the current phase);
//!   reset to `enrolled` when the phase completes.
//! * `enrolled` (bits 28..56): parties holding an `Enrollment`. Incremented by `enroll`,
//!   decremented by a resignation.
//! * `phase` (bits 56..64, wrapping; 2 bits under loom so that the models reach the wrap):
//!   incremented exactly when `remaining` would reach 0 — by the same compare-and-swap,
//!   which also resets `remaining := enrolled`. So `remaining == 0` only when
//!   `enrolled == 0`.
//!
//! A party that arrived in phase `p` cannot arrive in `p + 1` before `p` completes (its
//! arrival future borrows its enrollment), so `p + 1` cannot complete without it: the phase
//! moves at most one step past any pending arrival, and comparing a few wrapping bits is
//! enough to tell "still `p`" from "completed".

use crate::loom::{AtomicU64, Ordering};

/// Bits of each count.
const COUNT_BITS: u32 = 28;
/// The largest count.
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
const ENROLLED_SHIFT: u32 = COUNT_BITS;
const PHASE_SHIFT: u32 = 2 * COUNT_BITS;
/// Bits of the phase number.
#[cfg(not(loom))]
const PHASE_BITS: u32 = 8;
#[cfg(loom)]
const PHASE_BITS: u32 = 2;
const PHASE_MASK: u64 = (1 << PHASE_BITS) - 1;

/// The number of a phase, modulo `2^PHASE_BITS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Phase(u8);

impl Phase {
    /// Which of the two waiter lists this phase's waiters use.
    #[inline]
    pub(crate) fn parity(self) -> usize {
        usize::from(self.0 & 1)
    }
}

/// A decoded snapshot of the word.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Word(u64);

impl Word {
    #[inline]
    fn new(phase: u64, enrolled: u64, remaining: u64) -> Word {
        debug_assert!(enrolled <= COUNT_MAX && remaining <= enrolled);
        Word(((phase & PHASE_MASK) << PHASE_SHIFT) | (enrolled << ENROLLED_SHIFT) | remaining)
    }

    #[inline]
    fn remaining(self) -> u64 {
        self.0 & COUNT_MAX
    }

    #[inline]
    fn enrolled(self) -> u64 {
        (self.0 >> ENROLLED_SHIFT) & COUNT_MAX
    }

    #[inline]
    fn phase_bits(self) -> u64 {
        self.0 >> PHASE_SHIFT
    }

    #[inline]
    fn phase(self) -> Phase {
        Phase(self.phase_bits() as u8)
    }

    /// The word after the phase completed: next phase, everyone remaining.
    #[inline]
    fn next_phase(self, enrolled: u64) -> Word {
        Word::new(self.phase_bits() + 1, enrolled, enrolled)
    }
}

/// What an arrival or resignation did to the phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Counted in `phase`, which still waits for others.
    Counted(Phase),
    /// Counted in `phase`, which now waits for exactly one party: the caller wakes the
    /// parties waiting to be the last ([`Completion`](super::Completion)).
    OneLeft(Phase),
    /// This step completed `phase`: the caller wakes its waiters.
    Completed(Phase),
}

/// The atomic state word; see the module docs for the encoding.
pub(crate) struct State(AtomicU64);

impl State {
    /// Phase 0, nobody enrolled.
    pub(crate) fn new() -> State {
        State(AtomicU64::new(0))
    }

    /// The current phase. `Acquire`: seeing a phase that completed makes every party's
    /// writes before its arrival in that phase visible (each arrival is a `Release`
    /// read-modify-write in one release sequence, which the completing CAS ends).
    #[inline]
    pub(crate) fn phase(&self) -> Phase {
        Word(self.0.load(Ordering::Acquire)).phase()
    }

    /// Number of enrolled parties.
    pub(crate) fn enrolled(&self) -> usize {
        Word(self.0.load(Ordering::Relaxed)).enrolled() as usize
    }

    /// Applies `f` to the word until the compare-and-swap succeeds; returns the old word.
    ///
    /// `AcqRel`: each step publishes the caller's earlier writes (`Release`) and, for the
    /// step that completes a phase, acquires every earlier arrival's.
    #[inline]
    fn update(&self, mut f: impl FnMut(Word) -> Word) -> Word {
        let mut cur = Word(self.0.load(Ordering::Relaxed));
        loop {
            match self
                .0
                .compare_exchange_weak(cur.0, f(cur).0, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return cur,
                Err(actual) => cur = Word(actual),
            }
        }
    }

    /// An enrolled party arrives: `remaining -= 1`, or, if it was the last, the phase
    /// advances with everyone remaining. One compare-and-swap when uncontended.
    #[inline]
    pub(crate) fn arrive(&self) -> Step {
        let old = self.update(|w| {
            debug_assert!(w.remaining() >= 1, "tutti: barrier arrival by a non-party");
            if w.remaining() == 1 {
                w.next_phase(w.enrolled())
            } else {
                Word(w.0 - 1)
            }
        });
        match old.remaining() {
            1 => Step::Completed(old.phase()),
            2 => Step::OneLeft(old.phase()),
            _ => Step::Counted(old.phase()),
        }
    }

    /// The calling party, enrolled and not arrived in the current phase, arrives only if
    /// it is the last one missing (`remaining == 1`, which by B2 is the caller): the phase
    /// advances and its phase is returned. Otherwise nothing changes (`None`).
    #[inline]
    pub(crate) fn complete_if_last(&self) -> Option<Phase> {
        let mut cur = Word(self.0.load(Ordering::Acquire));
        while cur.remaining() == 1 {
            // `AcqRel` as in `update`: this is the completing arrival.
            match self.0.compare_exchange_weak(
                cur.0,
                cur.next_phase(cur.enrolled()).0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(cur.phase()),
                Err(actual) => cur = Word(actual),
            }
        }
        None
    }

    /// Whether exactly one enrolled party has not arrived in the current phase. Read after
    /// the `SeqCst` fence of the last-waiter protocol (`waiters.rs`), so `Relaxed` is
    /// enough: the fence orders it.
    #[inline]
    pub(crate) fn one_left(&self) -> bool {
        Word(self.0.load(Ordering::Relaxed)).remaining() == 1
    }

    /// A new party: `enrolled += 1` and `remaining += 1` — counted in the current phase.
    ///
    /// # Panics
    /// If `2^28 - 1` parties are enrolled already.
    pub(crate) fn enroll(&self) {
        self.update(|w| {
            assert!(
                w.enrolled() < COUNT_MAX,
                "tutti: too many parties enrolled on one barrier"
            );
            Word::new(w.phase_bits(), w.enrolled() + 1, w.remaining() + 1)
        });
    }

    /// A party resigns. `arrived_in` is the phase of its last arrival not known to have
    /// completed: if that is still the current phase the party is already counted, and
    /// only `enrolled` drops; otherwise `remaining` drops too, which may complete the
    /// phase for the others.
    pub(crate) fn resign(&self, arrived_in: Option<Phase>) -> Step {
        let old = self.update(|w| {
            let enrolled = w.enrolled() - 1;
            if arrived_in == Some(w.phase()) {
                Word::new(w.phase_bits(), enrolled, w.remaining())
            } else if w.remaining() == 1 {
                w.next_phase(enrolled)
            } else {
                Word::new(w.phase_bits(), enrolled, w.remaining() - 1)
            }
        });
        if arrived_in == Some(old.phase()) {
            return Step::Counted(old.phase());
        }
        match old.remaining() {
            1 => Step::Completed(old.phase()),
            2 => Step::OneLeft(old.phase()),
            _ => Step::Counted(old.phase()),
        }
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = Word(self.0.load(Ordering::Relaxed));
        f.debug_struct("State")
            .field("phase", &w.phase_bits())
            .field("enrolled", &w.enrolled())
            .field("remaining", &w.remaining())
            .finish()
    }
}
