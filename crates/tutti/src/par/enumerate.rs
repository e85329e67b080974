//! `enumerate`: every item paired with its index, which a piece knows from where it was
//! split off.

use super::plumbing::{Adapted, Adaptor, Producer};
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
        = Adapted<I::Producer<'p>, EnumeratePiece>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        Adapted::new(self.base.producer(), EnumeratePiece { offset: 0 })
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Enumerate<I> {
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// What [`Enumerate`] does to a piece: numbers its items from `offset`, the index of
/// its first item.
#[derive(Clone, Copy)]
pub struct EnumeratePiece {
    offset: usize,
}

impl<P: Producer> Adaptor<P> for EnumeratePiece {
    type Item = (usize, P::Item);
    type IntoIter = std::iter::Zip<std::ops::RangeFrom<usize>, P::IntoIter>;
    const EXACT: bool = P::EXACT;

    fn split_at(self, index: usize) -> (Self, Self) {
        let right = EnumeratePiece {
            offset: self.offset + index,
        };
        (self, right)
    }

    fn adapt(self, items: P::IntoIter) -> Self::IntoIter {
        (self.offset..).zip(items)
    }
}
