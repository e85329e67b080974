//! `flat_map_iter`: every item becomes a sequential iterator whose items follow in order.

use super::plumbing::Producer;
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
        = FlatMapProducer<'p, I::Producer<'p>, F>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        FlatMapProducer {
            base: self.base.producer(),
            f: &self.f,
        }
    }
}

/// The producer of [`FlatMapIter`].
pub struct FlatMapProducer<'p, B, F> {
    base: B,
    f: &'p F,
}

impl<'p, B, F, U> Producer for FlatMapProducer<'p, B, F>
where
    B: Producer,
    F: Fn(B::Item) -> U + Sync,
    U: IntoIterator,
{
    type Item = U::Item;
    type IntoIter = std::iter::FlatMap<B::IntoIter, U, &'p F>;
    const EXACT: bool = false;

    fn len(&self) -> usize {
        self.base.len()
    }

    fn min_len(&self) -> usize {
        self.base.min_len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(index);
        (
            FlatMapProducer { base: l, f: self.f },
            FlatMapProducer { base: r, f: self.f },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter().flat_map(self.f)
    }
}
