//! `fold`: each piece folds its items into one accumulator; the result iterates over the
//! pieces' accumulators, in order.

use super::plumbing::{Adapted, Adaptor, Producer};
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
        = Adapted<I::Producer<'p>, FoldPiece<'p, ID, F>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        let piece = FoldPiece {
            identity: &self.identity,
            fold_op: &self.fold_op,
        };
        Adapted::new(self.base.producer(), piece)
    }
}

/// What [`Fold`] does to a piece: folds its items into one accumulator, the piece's
/// only item.
pub struct FoldPiece<'p, ID, F> {
    identity: &'p ID,
    fold_op: &'p F,
}

impl<ID, F> Clone for FoldPiece<'_, ID, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<ID, F> Copy for FoldPiece<'_, ID, F> {}

impl<B, ID, F, T> Adaptor<B> for FoldPiece<'_, ID, F>
where
    B: Producer,
    ID: Fn() -> T + Sync,
    F: Fn(T, B::Item) -> T + Sync,
{
    type Item = T;
    type IntoIter = std::iter::Once<T>;
    const EXACT: bool = false;

    fn adapt(self, items: B::IntoIter) -> Self::IntoIter {
        std::iter::once(items.fold((self.identity)(), self.fold_op))
    }
}
