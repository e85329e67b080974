//! `filter` and `filter_map`: fewer items than positions, so the result is not indexed
//! (it still splits by the positions of its source).

use super::plumbing::{Adapted, Adaptor, Producer};
use super::ParallelIterator;

/// The iterator of [`ParallelIterator::filter`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct Filter<I, P> {
    base: I,
    predicate: P,
}

impl<I, P> Filter<I, P> {
    pub(super) fn new(base: I, predicate: P) -> Self {
        Filter { base, predicate }
    }
}

impl<I, P> ParallelIterator for Filter<I, P>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync + Send,
{
    type Item = I::Item;
    type Producer<'p>
        = Adapted<I::Producer<'p>, FilterPiece<'p, P>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        Adapted::new(self.base.producer(), FilterPiece(&self.predicate))
    }
}

/// What [`Filter`] does to a piece: keeps the items `predicate` accepts.
pub struct FilterPiece<'p, P>(&'p P);

impl<P> Clone for FilterPiece<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for FilterPiece<'_, P> {}

impl<'p, B, P> Adaptor<B> for FilterPiece<'p, P>
where
    B: Producer,
    P: Fn(&B::Item) -> bool + Sync,
{
    type Item = B::Item;
    type IntoIter = std::iter::Filter<B::IntoIter, &'p P>;
    const EXACT: bool = false;

    fn adapt(self, items: B::IntoIter) -> Self::IntoIter {
        items.filter(self.0)
    }
}

/// The iterator of [`ParallelIterator::filter_map`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct FilterMap<I, F> {
    base: I,
    f: F,
}

impl<I, F> FilterMap<I, F> {
    pub(super) fn new(base: I, f: F) -> Self {
        FilterMap { base, f }
    }
}

impl<I, F, R> ParallelIterator for FilterMap<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> Option<R> + Sync + Send,
    R: Send,
{
    type Item = R;
    type Producer<'p>
        = Adapted<I::Producer<'p>, FilterMapPiece<'p, F>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        Adapted::new(self.base.producer(), FilterMapPiece(&self.f))
    }
}

/// What [`FilterMap`] does to a piece: keeps the `Some` results of `f`.
pub struct FilterMapPiece<'p, F>(&'p F);

impl<F> Clone for FilterMapPiece<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for FilterMapPiece<'_, F> {}

impl<'p, B, F, R> Adaptor<B> for FilterMapPiece<'p, F>
where
    B: Producer,
    F: Fn(B::Item) -> Option<R> + Sync,
{
    type Item = R;
    type IntoIter = std::iter::FilterMap<B::IntoIter, &'p F>;
    const EXACT: bool = false;

    fn adapt(self, items: B::IntoIter) -> Self::IntoIter {
        items.filter_map(self.0)
    }
}
