//! `map`, `copied` and `cloned`: one item out per item in, so they keep an iterator
//! indexed.

use super::plumbing::Producer;
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
        = MapProducer<'p, I::Producer<'p>, F>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        MapProducer {
            base: self.base.producer(),
            f: &self.f,
        }
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

/// The producer of [`Map`].
pub struct MapProducer<'p, P, F> {
    base: P,
    f: &'p F,
}

impl<'p, P, F, R> Producer for MapProducer<'p, P, F>
where
    P: Producer,
    F: Fn(P::Item) -> R + Sync,
{
    type Item = R;
    type IntoIter = std::iter::Map<P::IntoIter, &'p F>;
    const EXACT: bool = P::EXACT;

    fn len(&self) -> usize {
        self.base.len()
    }

    fn min_len(&self) -> usize {
        self.base.min_len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(index);
        (
            MapProducer { base: l, f: self.f },
            MapProducer { base: r, f: self.f },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter().map(self.f)
    }
}

/// The iterator of [`ParallelIterator::copied`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct Copied<I> {
    base: I,
}

impl<I> Copied<I> {
    pub(super) fn new(base: I) -> Self {
        Copied { base }
    }
}

impl<'a, T, I> ParallelIterator for Copied<I>
where
    I: ParallelIterator<Item = &'a T>,
    T: 'a + Copy + Send + Sync,
{
    type Item = T;
    type Producer<'p>
        = CopiedProducer<I::Producer<'p>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        CopiedProducer(self.base.producer())
    }
}

impl<'a, T, I> IndexedParallelIterator for Copied<I>
where
    I: IndexedParallelIterator<Item = &'a T>,
    T: 'a + Copy + Send + Sync,
{
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// The producer of [`Copied`].
pub struct CopiedProducer<P>(P);

impl<'a, T, P> Producer for CopiedProducer<P>
where
    P: Producer<Item = &'a T>,
    T: 'a + Copy,
{
    type Item = T;
    type IntoIter = std::iter::Copied<P::IntoIter>;
    const EXACT: bool = P::EXACT;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn min_len(&self) -> usize {
        self.0.min_len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.0.split_at(index);
        (CopiedProducer(l), CopiedProducer(r))
    }

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().copied()
    }
}

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
        = ClonedProducer<I::Producer<'p>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        ClonedProducer(self.base.producer())
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

/// The producer of [`Cloned`].
pub struct ClonedProducer<P>(P);

impl<'a, T, P> Producer for ClonedProducer<P>
where
    P: Producer<Item = &'a T>,
    T: 'a + Clone,
{
    type Item = T;
    type IntoIter = std::iter::Cloned<P::IntoIter>;
    const EXACT: bool = P::EXACT;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn min_len(&self) -> usize {
        self.0.min_len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.0.split_at(index);
        (ClonedProducer(l), ClonedProducer(r))
    }

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().cloned()
    }
}
