//! `filter` and `filter_map`: fewer items than positions, so the result is not indexed
//! (it still splits by the positions of its source).

use super::plumbing::Producer;
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
        = FilterProducer<'p, I::Producer<'p>, P>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        FilterProducer {
            base: self.base.producer(),
            predicate: &self.predicate,
        }
    }
}

/// The producer of [`Filter`].
pub struct FilterProducer<'p, B, P> {
    base: B,
    predicate: &'p P,
}

impl<'p, B, P> Producer for FilterProducer<'p, B, P>
where
    B: Producer,
    P: Fn(&B::Item) -> bool + Sync,
{
    type Item = B::Item;
    type IntoIter = std::iter::Filter<B::IntoIter, &'p P>;
    const EXACT: bool = false;

    fn len(&self) -> usize {
        self.base.len()
    }

    fn min_len(&self) -> usize {
        self.base.min_len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(index);
        let predicate = self.predicate;
        (
            FilterProducer { base: l, predicate },
            FilterProducer { base: r, predicate },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter().filter(self.predicate)
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
        = FilterMapProducer<'p, I::Producer<'p>, F>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        FilterMapProducer {
            base: self.base.producer(),
            f: &self.f,
        }
    }
}

/// The producer of [`FilterMap`].
pub struct FilterMapProducer<'p, B, F> {
    base: B,
    f: &'p F,
}

impl<'p, B, F, R> Producer for FilterMapProducer<'p, B, F>
where
    B: Producer,
    F: Fn(B::Item) -> Option<R> + Sync,
{
    type Item = R;
    type IntoIter = std::iter::FilterMap<B::IntoIter, &'p F>;
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
            FilterMapProducer { base: l, f: self.f },
            FilterMapProducer { base: r, f: self.f },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter().filter_map(self.f)
    }
}
