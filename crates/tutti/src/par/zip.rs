//! `zip`: two indexed iterators cut at the same places, so each piece pairs the items
//! at the same indices.

use super::plumbing::Producer;
use super::{IndexedParallelIterator, ParallelIterator};

/// The iterator of [`IndexedParallelIterator::zip`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct Zip<A, B> {
    a: A,
    b: B,
}

impl<A, B> Zip<A, B> {
    pub(super) fn new(a: A, b: B) -> Self {
        Zip { a, b }
    }
}

impl<A, B> ParallelIterator for Zip<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator,
{
    type Item = (A::Item, B::Item);
    type Producer<'p>
        = ZipProducer<A::Producer<'p>, B::Producer<'p>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        ZipProducer {
            a: self.a.producer(),
            b: self.b.producer(),
        }
    }
}

impl<A, B> IndexedParallelIterator for Zip<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator,
{
    fn len(&self) -> usize {
        self.a.len().min(self.b.len())
    }
}

/// The producer of [`Zip`]. The longer side's extra items ride along in the last piece
/// and are dropped unused, as `Iterator::zip` drops them.
pub struct ZipProducer<A, B> {
    a: A,
    b: B,
}

impl<A: Producer, B: Producer> Producer for ZipProducer<A, B> {
    type Item = (A::Item, B::Item);
    type IntoIter = std::iter::Zip<A::IntoIter, B::IntoIter>;
    const EXACT: bool = A::EXACT && B::EXACT;

    fn len(&self) -> usize {
        self.a.len().min(self.b.len())
    }

    fn min_len(&self) -> usize {
        self.a.min_len().max(self.b.min_len())
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (al, ar) = self.a.split_at(index);
        let (bl, br) = self.b.split_at(index);
        (ZipProducer { a: al, b: bl }, ZipProducer { a: ar, b: br })
    }

    fn into_iter(self) -> Self::IntoIter {
        self.a.into_iter().zip(self.b.into_iter())
    }
}
