//! `with_min_len`: a floor on the pieces the splitter cuts.

use super::plumbing::Producer;
use super::{IndexedParallelIterator, ParallelIterator};

/// The iterator of [`ParallelIterator::with_min_len`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct MinLen<I> {
    base: I,
    min: usize,
}

impl<I> MinLen<I> {
    pub(super) fn new(base: I, min: usize) -> Self {
        MinLen { base, min }
    }
}

impl<I: ParallelIterator> ParallelIterator for MinLen<I> {
    type Item = I::Item;
    type Producer<'p>
        = MinLenProducer<I::Producer<'p>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        MinLenProducer {
            base: self.base.producer(),
            min: self.min,
        }
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for MinLen<I> {
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// The producer of [`MinLen`].
pub struct MinLenProducer<P> {
    base: P,
    min: usize,
}

impl<P: Producer> Producer for MinLenProducer<P> {
    type Item = P::Item;
    type IntoIter = P::IntoIter;
    const EXACT: bool = P::EXACT;

    fn len(&self) -> usize {
        self.base.len()
    }

    fn min_len(&self) -> usize {
        self.base.min_len().max(self.min)
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.base.split_at(index);
        let min = self.min;
        (
            MinLenProducer { base: l, min },
            MinLenProducer { base: r, min },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter()
    }
}
