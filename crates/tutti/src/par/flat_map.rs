//! `flat_map_iter`: every item becomes a sequential iterator whose items follow in order.

use super::plumbing::{Adapted, Adaptor, Producer};
use super::ParallelIterator;

/// The iterator of [`ParallelIterator::flat_map_iter`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct FlatMapIter<I, F> {
    base: I,
    f: F,
}

impl<I, F> FlatMapIter<I, F> {
    pub(super) fn new(base: I, f: F) -> Self {
        FlatMapIter { base, f }
    }
}

impl<I, F, U> ParallelIterator for FlatMapIter<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> U + Sync + Send,
    U: IntoIterator,
    U::Item: Send,
{
    type Item = U::Item;
    type Producer<'p>
        = Adapted<I::Producer<'p>, FlatMapPiece<'p, F>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        Adapted::new(self.base.producer(), FlatMapPiece(&self.f))
    }
}

/// What [`FlatMapIter`] does to a piece: the items of `f`'s iterators, one after another.
pub struct FlatMapPiece<'p, F>(&'p F);

impl<F> Clone for FlatMapPiece<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for FlatMapPiece<'_, F> {}

impl<'p, B, F, U> Adaptor<B> for FlatMapPiece<'p, F>
where
    B: Producer,
    F: Fn(B::Item) -> U + Sync,
    U: IntoIterator,
{
    type Item = U::Item;
    type IntoIter = std::iter::FlatMap<B::IntoIter, U, &'p F>;
    const EXACT: bool = false;

    fn adapt(self, items: B::IntoIter) -> Self::IntoIter {
        items.flat_map(self.0)
    }
}
