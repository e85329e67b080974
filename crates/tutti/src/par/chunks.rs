//! `chunks` on an indexed iterator: consecutive items grouped into vectors. A position
//! of the result is one group; splitting at group `i` splits the source at `i · size`.

use super::plumbing::Producer;
use super::{IndexedParallelIterator, ParallelIterator};

/// The iterator of [`IndexedParallelIterator::chunks`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct Chunks<I> {
    base: I,
    size: usize,
}

impl<I> Chunks<I> {
    pub(super) fn new(base: I, size: usize) -> Self {
        assert!(size != 0, "tutti::par: chunks of size 0 requested");
        Chunks { base, size }
    }
}

impl<I: IndexedParallelIterator> ParallelIterator for Chunks<I> {
    type Item = Vec<I::Item>;
    type Producer<'p>
        = ChunksProducer<I::Producer<'p>>
    where
        Self: 'p;

    fn producer(&mut self) -> Self::Producer<'_> {
        ChunksProducer {
            base: self.base.producer(),
            size: self.size,
        }
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Chunks<I> {
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.size)
    }
}

/// The producer of [`Chunks`].
pub struct ChunksProducer<P> {
    base: P,
    size: usize,
}

impl<P: Producer> Producer for ChunksProducer<P> {
    type Item = Vec<P::Item>;
    type IntoIter = ChunkIter<P::IntoIter>;
    const EXACT: bool = P::EXACT;

    fn len(&self) -> usize {
        self.base.len().div_ceil(self.size)
    }

    fn min_len(&self) -> usize {
        self.base.min_len().div_ceil(self.size)
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let at = index.saturating_mul(self.size).min(self.base.len());
        let (l, r) = self.base.split_at(at);
        let size = self.size;
        (
            ChunksProducer { base: l, size },
            ChunksProducer { base: r, size },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        ChunkIter {
            items: self.base.into_iter(),
            size: self.size,
        }
    }
}

/// The sequential iterator of one piece of [`Chunks`].
pub struct ChunkIter<I> {
    items: I,
    size: usize,
}

impl<I: Iterator> Iterator for ChunkIter<I> {
    type Item = Vec<I::Item>;

    fn next(&mut self) -> Option<Vec<I::Item>> {
        let chunk: Vec<I::Item> = self.items.by_ref().take(self.size).collect();
        (!chunk.is_empty()).then_some(chunk)
    }
}
