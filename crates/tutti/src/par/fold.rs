//! `fold`: each piece folds its items into one accumulator; the result iterates over the
//! pieces' accumulators, in order.

use super::plumbing::Producer;
use super::ParallelIterator;

/// The iterator of [`ParallelIterator::fold`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `reduce` or `sum`"]
#[derive(Clone, Debug)]
pub struct Fold<I, ID, F> {
    base: I,
    identity: ID,
    fold_op: F,
}

impl<I, ID, F> Fold<I, ID, F> {
    pub(super) fn new(base: I, identity: ID, fold_op: F) -> Self {
        Fold {
            base,
            identity,
            fold_op,
        }
    }
}

impl<I, ID, F, T> ParallelIterator for Fold<I, ID, F>
where
    I: ParallelIterator,
    ID: Fn() -> T + Sync + Send,
    F: Fn(T, I::Item) -> T + Sync + Send,
    T: Send,
{
    type Item = T;
    type Producer<'p>
        = FoldProducer<'p, I::Producer<'p>, ID, F>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        FoldProducer {
            base: self.base.producer(),
            identity: &self.identity,
            fold_op: &self.fold_op,
        }
    }
}

/// The producer of [`Fold`]: a piece yields one item, its accumulator.
pub struct FoldProducer<'p, B, ID, F> {
    base: B,
    identity: &'p ID,
    fold_op: &'p F,
}

impl<B, ID, F, T> Producer for FoldProducer<'_, B, ID, F>
where
    B: Producer,
    ID: Fn() -> T + Sync,
    F: Fn(T, B::Item) -> T + Sync,
{
    type Item = T;
    type IntoIter = std::iter::Once<T>;
    const EXACT: bool = false;

    fn len(&self) -> usize {
        self.base.len()
    }

    fn min_len(&self) -> usize {
        self.base.min_len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(index);
        let (identity, fold_op) = (self.identity, self.fold_op);
        (
            FoldProducer {
                base: l,
                identity,
                fold_op,
            },
            FoldProducer {
                base: r,
                identity,
                fold_op,
            },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self.base.into_iter().fold((self.identity)(), self.fold_op))
    }
}
