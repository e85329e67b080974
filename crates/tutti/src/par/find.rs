//! `find_any` (and through it `any` and `all`): every piece looks for a match and stops
//! once any piece has found one.
//!
//! The only shared state is `found`, one flag: set (`Relaxed`) by a piece that found a
//! match, read (`Relaxed`) before every item and before a piece starts. It is a hint
//! that saves work, never a result: each piece returns what it found itself and the
//! results are combined by the join, which orders them after everything the pieces did.
//! A piece that misses a recent `true` merely looks a little longer.

use super::plumbing::{drive, Consumer, Producer, Reducer};
use crate::loom::{AtomicBool, Ordering};

/// Some item of `producer` for which `predicate` holds.
pub(super) fn find_any<P, F>(producer: P, predicate: &F) -> Option<P::Item>
where
    P: Producer,
    P::Item: Send,
    F: Fn(&P::Item) -> bool + Sync,
{
    let found = AtomicBool::new(false);
    drive(
        producer,
        FindAny {
            predicate,
            found: &found,
        },
    )
}

struct FindAny<'c, F> {
    predicate: &'c F,
    found: &'c AtomicBool,
}

impl<F> Clone for FindAny<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for FindAny<'_, F> {}

impl<T: Send, F: Fn(&T) -> bool + Sync> Consumer<T> for FindAny<'_, F> {
    type Result = Option<T>;
    type Reducer = Either;

    fn split_at(self, _index: usize) -> (Self, Self, Either) {
        (self, self, Either)
    }

    fn consume<I: Iterator<Item = T>>(self, mut items: I) -> Option<T> {
        let mut matched = false;
        let stop = items.find(|item| {
            if self.found.load(Ordering::Relaxed) {
                return true; // another piece found one: stop without a match
            }
            matched = (self.predicate)(item);
            matched
        });
        if !matched {
            return None;
        }
        self.found.store(true, Ordering::Relaxed);
        stop
    }

    fn full(&self) -> bool {
        self.found.load(Ordering::Relaxed)
    }
}

/// Keeps whichever side found something (the left one if both did).
struct Either;

impl<T> Reducer<Option<T>> for Either {
    fn reduce(self, left: Option<T>, right: Option<T>) -> Option<T> {
        left.or(right)
    }
}
