//! `map`, `copied` and `cloned`: one item out per item in, so they keep an iterator
//! indexed.

use super::plumbing::{Adapted, Adaptor, Producer};
use super::{IndexedParallelIterator, ParallelIterator};

/// The iterator of [`ParallelIterator::map`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct Map<I, F> {
    base: I,
    f: F,
}

impl<I, F> Map<I, F> {
    pub(super) fn new(base: I, f: F) -> Self {
        Map { base, f }
    }
}

impl<I, F, R> ParallelIterator for Map<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> R + Sync + Send,
    R: Send,
{
    type Item = R;
    type Producer<'p>
        = Adapted<I::Producer<'p>, MapPiece<'p, F>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        Adapted::new(self.base.producer(), MapPiece(&self.f))
    }
}

impl<I, F, R> IndexedParallelIterator for Map<I, F>
where
    I: IndexedParallelIterator,
    F: Fn(I::Item) -> R + Sync + Send,
    R: Send,
{
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// What [`Map`] does to a piece: `f` on every item.
pub struct MapPiece<'p, F>(&'p F);

impl<F> Clone for MapPiece<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for MapPiece<'_, F> {}

impl<'p, P, F, R> Adaptor<P> for MapPiece<'p, F>
where
    P: Producer,
    F: Fn(P::Item) -> R + Sync,
{
    type Item = R;
    type IntoIter = std::iter::Map<P::IntoIter, &'p F>;
    const EXACT: bool = P::EXACT;

    fn adapt(self, items: P::IntoIter) -> Self::IntoIter {
        items.map(self.0)
    }
}

/// The iterator of [`ParallelIterator::copied`]: the same as [`Cloned`], since
/// the clone of a `Copy` value is its copy.
pub type Copied<I> = Cloned<I>;

/// The iterator of [`ParallelIterator::cloned`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct Cloned<I> {
    base: I,
}

impl<I> Cloned<I> {
    pub(super) fn new(base: I) -> Self {
        Cloned { base }
    }
}

impl<'a, T, I> ParallelIterator for Cloned<I>
where
    I: ParallelIterator<Item = &'a T>,
    T: 'a + Clone + Send + Sync,
{
    type Item = T;
    type Producer<'p>
        = Adapted<I::Producer<'p>, ClonedPiece>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        Adapted::new(self.base.producer(), ClonedPiece)
    }
}

impl<'a, T, I> IndexedParallelIterator for Cloned<I>
where
    I: IndexedParallelIterator<Item = &'a T>,
    T: 'a + Clone + Send + Sync,
{
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// What [`Cloned`] does to a piece.
#[derive(Clone, Copy)]
pub struct ClonedPiece;

impl<'a, T, P> Adaptor<P> for ClonedPiece
where
    P: Producer<Item = &'a T>,
    T: 'a + Clone,
{
    type Item = T;
    type IntoIter = std::iter::Cloned<P::IntoIter>;
    const EXACT: bool = P::EXACT;

    fn adapt(self, items: P::IntoIter) -> Self::IntoIter {
        items.cloned()
    }
}
