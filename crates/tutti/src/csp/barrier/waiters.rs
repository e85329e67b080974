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
