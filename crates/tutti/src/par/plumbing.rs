//! How a parallel iterator runs: a *producer* (the items, splittable) meets a *consumer*
//! (what to do with them, splittable the same way) in [`drive`], which cuts both in
//! halves with [`join_context`](crate::runtime::join_context) until the pieces are small
//! enough, runs each piece as a plain sequential iterator, and combines the pieces'
//! results pairwise, left before right.
//!
//! # Positions
//!
//! A producer counts *positions*: the items of the source it was made from (slice
//! elements, range values). An adaptor that keeps one item per position (`map`, `zip`,
//! `enumerate`, …) is *exact* ([`Producer::EXACT`]): its pieces hold known numbers of
//! items, so `collect` can write each piece straight into its place in the output and
//! `enumerate` can number the items. `filter`, `flat_map_iter` and `fold` change how
//! many items a position gives; they split by position all the same.
//!
//! # Adaptive splitting
//!
//! Splitting into one piece per item would create one job per item; splitting into one
//! piece per worker leaves workers idle when pieces take unequal times. [`Splitter`]
//! starts with a budget of about one split level per worker and halves it at every
//! split, so an undisturbed run makes a handful of pieces per worker. A piece that
//! another worker *stole* (the thief found nothing else to do) gets its budget back, so
//! work is cut finer exactly where and when workers run dry. A 10^8-element sum on two
//! workers thus runs as a few large sequential loops, not 10^8 jobs. `with_min_len`
//! bounds the smallest piece.
//!
//! # Panics
//!
//! A panic in a piece propagates out of `join_context` once both halves have finished,
//! so it reaches the caller of the consuming method; what a dropped piece still owned
//! (the items of a `Vec`, the elements written so far by `collect`) is dropped on the way.

use crate::runtime::{current_workers, in_worker, join_context};

/// A splittable source of items (see the module docs).
///
/// The trait is public only because the iterator traits name it; it lives in a private
/// module, so no code outside the crate can name or implement it.
pub trait Producer: Send + Sized {
    /// What it yields.
    type Item;
    /// The sequential iterator over one piece.
    type IntoIter: Iterator<Item = Self::Item>;
    /// Whether every position yields exactly one item (module docs).
    const EXACT: bool;

    /// Positions left.
    fn len(&self) -> usize;

    /// The smallest piece worth running as a job of its own.
    fn min_len(&self) -> usize {
        1
    }

    /// Positions `..index` and `index..`; `index <= len()`.
    fn split_at(self, index: usize) -> (Self, Self);

    /// The items of this piece, in order.
    fn into_iter(self) -> Self::IntoIter;
}

/// What to do with the items of one piece, splittable like a producer.
pub trait Consumer<Item>: Send + Sized {
    /// The result of one piece, and of two pieces combined.
    type Result: Send;
    /// Combines the results of the two halves of a split.
    type Reducer: Reducer<Self::Result>;

    /// The consumers of positions `..index` and `index..`, and how to combine them.
    fn split_at(self, index: usize) -> (Self, Self, Self::Reducer);

    /// Runs one piece sequentially.
    fn consume<I: Iterator<Item = Item>>(self, items: I) -> Self::Result;

    /// Whether the result is settled already (a `find_any` that found), so that pieces
    /// not started yet need not run.
    fn full(&self) -> bool {
        false
    }
}

/// Combines the results of two adjacent pieces, left before right.
pub trait Reducer<R> {
    /// The combined result.
    fn reduce(self, left: R, right: R) -> R;
}

/// What an adaptor does to each piece of its base producer: the per-piece half of
/// `map`, `filter`, `enumerate`, `fold`, … (the other half, [`Adapted`], splits and
/// counts positions as the base does, the same for all of them).
///
/// An adaptor is a few references to the user's closures, so both halves of a split get
/// a copy; only a positional adaptor (`enumerate`) tells its halves apart.
pub trait Adaptor<P: Producer>: Copy + Send {
    /// What a piece yields.
    type Item;
    /// The sequential iterator over one piece: the base's, adapted.
    type IntoIter: Iterator<Item = Self::Item>;
    /// Whether every position still yields exactly one item.
    const EXACT: bool;

    /// The adaptors of positions `..index` and `index..`.
    fn split_at(self, _index: usize) -> (Self, Self) {
        (self, self)
    }

    /// Adapts the items of one piece of the base.
    fn adapt(self, items: P::IntoIter) -> Self::IntoIter;
}

/// The producer of an adaptor: the positions of `base`, each piece's items passed
/// through `adaptor`.
pub struct Adapted<P, A> {
    base: P,
    adaptor: A,
}

impl<P, A> Adapted<P, A> {
    pub(super) fn new(base: P, adaptor: A) -> Self {
        Adapted { base, adaptor }
    }
}

impl<P: Producer, A: Adaptor<P>> Producer for Adapted<P, A> {
    type Item = A::Item;
    type IntoIter = A::IntoIter;
    const EXACT: bool = A::EXACT;

    fn len(&self) -> usize {
        self.base.len()
    }

    fn min_len(&self) -> usize {
        self.base.min_len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(index);
        let (la, ra) = self.adaptor.split_at(index);
        (Adapted::new(l, la), Adapted::new(r, ra))
    }

    fn into_iter(self) -> Self::IntoIter {
        self.adaptor.adapt(self.base.into_iter())
    }
}

/// The split budget of one piece (module docs, "Adaptive splitting").
#[derive(Clone, Copy, Debug)]
pub(crate) struct Splitter {
    /// Split levels left before pieces run sequentially.
    splits: usize,
    /// What a stolen piece's budget grows back to: the number of workers.
    workers: usize,
    /// No piece shorter than this is split off.
    min_len: usize,
}

impl Splitter {
    pub(crate) fn new(workers: usize, min_len: usize) -> Splitter {
        Splitter {
            splits: workers,
            workers,
            min_len: min_len.max(1),
        }
    }

    /// Whether a piece of `len` positions should be split; `stolen`: the piece runs on
    /// another worker than the one that split it off.
    #[inline]
    pub(crate) fn try_split(&mut self, len: usize, stolen: bool) -> bool {
        if len / 2 < self.min_len {
            return false;
        }
        if stolen {
            self.splits = (self.splits / 2).max(self.workers);
            true
        } else if self.splits > 0 {
            self.splits /= 2;
            true
        } else {
            false
        }
    }
}

/// Runs `consumer` over the items of `producer` on the current runtime's workers
/// (from a plain thread: on the runtime, while this thread blocks).
pub(crate) fn drive<P, C>(producer: P, consumer: C) -> C::Result
where
    P: Producer,
    C: Consumer<P::Item>,
{
    in_worker(move || {
        let splitter = Splitter::new(current_workers(), producer.min_len());
        run(splitter, false, producer, consumer)
    })
}

fn run<P, C>(mut splitter: Splitter, stolen: bool, producer: P, consumer: C) -> C::Result
where
    P: Producer,
    C: Consumer<P::Item>,
{
    let len = producer.len();
    if !consumer.full() && splitter.try_split(len, stolen) {
        let mid = len / 2;
        let (left_p, right_p) = producer.split_at(mid);
        let (left_c, right_c, reducer) = consumer.split_at(mid);
        let (left, right) = join_context(
            move |stolen| run(splitter, stolen, left_p, left_c),
            move |stolen| run(splitter, stolen, right_p, right_c),
        );
        reducer.reduce(left, right)
    } else {
        consumer.consume(producer.into_iter())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Splitter;

    #[test]
    fn an_undisturbed_run_splits_a_few_levels_per_worker() {
        // Count the leaves of a run where nothing is stolen.
        fn leaves(mut s: Splitter, len: usize) -> usize {
            if s.try_split(len, false) {
                leaves(s, len / 2) + leaves(s, len - len / 2)
            } else {
                1
            }
        }
        assert_eq!(leaves(Splitter::new(1, 1), 100_000_000), 2);
        assert_eq!(leaves(Splitter::new(2, 1), 100_000_000), 4);
        assert_eq!(leaves(Splitter::new(8, 1), 100_000_000), 16);
        // The minimum length wins over the budget.
        assert_eq!(leaves(Splitter::new(8, 1000), 3000), 2);
        assert_eq!(leaves(Splitter::new(8, 1), 1), 1);
    }

    #[test]
    fn a_stolen_piece_gets_its_budget_back() {
        let mut s = Splitter::new(4, 1);
        while s.try_split(1 << 20, false) {}
        assert!(!s.try_split(1 << 20, false));
        assert!(s.try_split(1 << 20, true));
        assert_eq!(s.splits, 4);
    }
}
