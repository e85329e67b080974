//! The barrier's waiter lists: the wakers of parties waiting for a phase to complete.
//!
//! There are two lists, used by alternate phases (`Phase::parity`), each behind its own
//! short lock. A waiting party registers under the lock of its phase's list *after*
//! checking, under that lock, that the phase has not completed; the party that completes a
//! phase advances the state word first and then drains the list under the same lock. So
//! either the registration comes first and the drain finds it, or the drain comes first,
//! the registration's lock acquisition synchronises with it, and the party sees the new
//! phase instead of registering (no lost wake-up).
//!
//! Each drain increments the list's `generation`. A registration remembers the generation
//! and its index; a re-poll in the same generation replaces its waker in place (if it
//! changed) instead of growing the list, and a re-poll after a drain — possible when a
//! party that completed an older phase drains late, after the list was reused — registers
//! afresh. A waker left behind by a dropped arrival is woken once, spuriously, by the next
//! drain: harmless.

use std::task::Waker;

use crate::csp::lock::Lock;
use crate::loom::{fence, AtomicBool, Ordering};

use super::word::{Phase, State};

/// Where a party's waker sits in a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    generation: u64,
    index: usize,
}

#[derive(Default)]
struct List {
    wakers: Vec<Waker>,
    /// Number of drains so far.
    generation: u64,
}

/// The two lists, each on its own cache line.
pub(crate) struct Waiters {
    lists: [Padded<Lock<List>>; 2],
}

#[repr(align(128))]
struct Padded<T>(T);

impl Waiters {
    pub(crate) fn new() -> Waiters {
        Waiters {
            lists: [
                Padded(Lock::new(List::default())),
                Padded(Lock::new(List::default())),
            ],
        }
    }

    /// Registers `waker` to be woken when `phase` completes, unless it has completed
    /// already (then returns `None`). `slot` is the registration from an earlier poll.
    pub(crate) fn register(
        &self,
        state: &State,
        phase: Phase,
        slot: Option<Slot>,
        waker: &Waker,
    ) -> Option<Slot> {
        let mut list = self.lists[phase.parity()].0.lock();
        // Under the lock: a completion whose drain we would miss is visible here.
        if state.phase() != phase {
            return None;
        }
        let generation = list.generation;
        if let Some(s) = slot.filter(|s| s.generation == generation) {
            let w = &mut list.wakers[s.index];
            if !w.will_wake(waker) {
                w.clone_from(waker);
            }
            return Some(s);
        }
        list.wakers.push(waker.clone());
        Some(Slot {
            generation,
            index: list.wakers.len() - 1,
        })
    }

    /// Wakes every party waiting for `phase`, which has just completed.
    #[cold]
    pub(crate) fn wake_all(&self, phase: Phase) {
        let lock = &self.lists[phase.parity()].0;
        let mut wakers = {
            let mut list = lock.lock();
            list.generation += 1;
            std::mem::take(&mut list.wakers)
        };
        if wakers.is_empty() {
            return;
        }
        for w in wakers.drain(..) {
            w.wake();
        }
        // Give the capacity back so that the next phase on this list does not regrow it.
        let mut list = lock.lock();
        if list.wakers.is_empty() && list.wakers.capacity() < wakers.capacity() {
            std::mem::swap(&mut list.wakers, &mut wakers);
        }
    }
}

/// The wakers of parties waiting to be the last one missing in a phase
/// ([`Completion`](super::Completion), a barrier guard that must not arrive before it
/// fires).
///
/// # Protocol (no lost wake-up)
///
/// * *Wait* (a completion found more than one party missing): store the waker under
///   the lock and set `armed`, then a **SeqCst fence**, then read the state word again
///   (`State::one_left`); if one party is left now, try to complete instead of waiting.
/// * *Wake* (an arrival or resignation left exactly one party missing, `Step::OneLeft`):
///   after its read-modify-write of the word, a **SeqCst fence**, then read `armed`; if
///   set, clear it and take the wakers under the lock and wake them.
///
/// The fences are ordered in the single SeqCst order. If the waiter's comes first, the
/// waker's read of `armed` (after its fence) sees `true`; otherwise the waiter's read of
/// the word (after its fence) sees the arrival. Wakers of dropped completions are woken
/// once, spuriously.
pub(crate) struct Last {
    armed: AtomicBool,
    wakers: Lock<Vec<Waker>>,
}

impl Last {
    pub(crate) fn new() -> Last {
        Last {
            armed: AtomicBool::new(false),
            wakers: Lock::new(Vec::new()),
        }
    }

    /// Registers `waker`; the caller then reads the state word again.
    pub(crate) fn register(&self, waker: &Waker) {
        {
            let mut wakers = self.wakers.lock();
            if !wakers.iter().any(|w| w.will_wake(waker)) {
                wakers.push(waker.clone());
            }
            // Under the lock, so that a concurrent wake that clears it has taken the
            // waker pushed before.
            self.armed.store(true, Ordering::Relaxed);
        }
        // Pairs with the fence in `wake` (see the protocol).
        fence(Ordering::SeqCst);
    }

    /// One party is left: wakes the registered waiters, if any.
    pub(crate) fn wake(&self) {
        // Pairs with the fence in `register` (see the protocol).
        fence(Ordering::SeqCst);
        if !self.armed.load(Ordering::Relaxed) {
            return;
        }
        self.wake_cold();
    }

    #[cold]
    fn wake_cold(&self) {
        let wakers = {
            let mut wakers = self.wakers.lock();
            self.armed.store(false, Ordering::Relaxed);
            std::mem::take(&mut *wakers)
        };
        for w in wakers {
            w.wake();
        }
    }
}
