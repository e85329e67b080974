//! `enumerate`: every item paired with its index, which a piece knows from where it was
//! split off.

use super::plumbing::Producer;
use super::{IndexedParallelIterator, ParallelIterator};

/// The iterator of [`IndexedParallelIterator::enumerate`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct Enumerate<I> {
    base: I,
}

impl<I> Enumerate<I> {
    pub(super) fn new(base: I) -> Self {
        Enumerate { base }
    }
}

impl<I: IndexedParallelIterator> ParallelIterator for Enumerate<I> {
    type Item = (usize, I::Item);
    type Producer<'p>
        = EnumerateProducer<I::Producer<'p>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        EnumerateProducer {
            base: self.base.producer(),
            offset: 0,
        }
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Enumerate<I> {
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// The producer of [`Enumerate`]: `offset` is the index of its first item.
pub struct EnumerateProducer<P> {
    base: P,
    offset: usize,
}

impl<P: Producer> Producer for EnumerateProducer<P> {
    type Item = (usize, P::Item);
    type IntoIter = std::iter::Zip<std::ops::RangeFrom<usize>, P::IntoIter>;
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
            EnumerateProducer {
                base: l,
                offset: self.offset,
            },
            EnumerateProducer {
                base: r,
                offset: self.offset + index,
            },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        (self.offset..).zip(self.base.into_iter())
    }
}
