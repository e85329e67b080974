//! Parallel iterators over slices (`par_iter`, `par_iter_mut`, `par_chunks`,
//! `par_chunks_mut`) and the parallel sorts.

use std::cmp::Ordering;

use super::plumbing::Producer;
use super::sort::{self, Stability};
use super::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

/// A parallel iterator over `&T`: [`par_iter`](super::IntoParallelRefIterator::par_iter)
/// of a slice or `Vec`.
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Debug)]
pub struct Iter<'a, T> {
    slice: &'a [T],
}

impl<T> Clone for Iter<'_, T> {
    fn clone(&self) -> Self {
        Iter { slice: self.slice }
    }
}

impl<'a, T: Sync> IntoParallelIterator for &'a [T] {
    type Iter = Iter<'a, T>;
    type Item = &'a T;

    fn into_par_iter(self) -> Iter<'a, T> {
        Iter { slice: self }
    }
}

impl<'a, T: Sync> IntoParallelIterator for &'a Vec<T> {
    type Iter = Iter<'a, T>;
    type Item = &'a T;

    fn into_par_iter(self) -> Iter<'a, T> {
        Iter { slice: self }
    }
}

impl<'a, T: Sync, const N: usize> IntoParallelIterator for &'a [T; N] {
    type Iter = Iter<'a, T>;
    type Item = &'a T;

    fn into_par_iter(self) -> Iter<'a, T> {
        Iter { slice: self }
    }
}

impl<'a, T: Sync> ParallelIterator for Iter<'a, T> {
    type Item = &'a T;
    type Producer<'p>
        = IterProducer<'a, T>
    where
        Self: 'p;

    fn producer(&mut self) -> IterProducer<'a, T> {
        IterProducer(self.slice)
    }
}

impl<T: Sync> IndexedParallelIterator for Iter<'_, T> {
    fn len(&self) -> usize {
        self.slice.len()
    }
}

/// The producer of [`Iter`].
pub struct IterProducer<'a, T>(&'a [T]);

impl<'a, T: Sync> Producer for IterProducer<'a, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    const EXACT: bool = true;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.0.split_at(index);
        (IterProducer(l), IterProducer(r))
    }

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A parallel iterator over `&mut T`:
/// [`par_iter_mut`](super::IntoParallelRefMutIterator::par_iter_mut) of a slice or `Vec`.
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Debug)]
pub struct IterMut<'a, T> {
    slice: &'a mut [T],
}

impl<'a, T: Send> IntoParallelIterator for &'a mut [T] {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;

    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut { slice: self }
    }
}

impl<'a, T: Send> IntoParallelIterator for &'a mut Vec<T> {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;

    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut { slice: self }
    }
}

impl<'a, T: Send, const N: usize> IntoParallelIterator for &'a mut [T; N] {
    type Iter = IterMut<'a, T>;
    type Item = &'a mut T;

    fn into_par_iter(self) -> IterMut<'a, T> {
        IterMut { slice: self }
    }
}

impl<'a, T: Send> ParallelIterator for IterMut<'a, T> {
    type Item = &'a mut T;
    type Producer<'p>
        = IterMutProducer<'a, T>
    where
        Self: 'p;

    fn producer(&mut self) -> IterMutProducer<'a, T> {
        IterMutProducer(std::mem::take(&mut self.slice))
    }
}

impl<T: Send> IndexedParallelIterator for IterMut<'_, T> {
    fn len(&self) -> usize {
        self.slice.len()
    }
}

/// The producer of [`IterMut`].
pub struct IterMutProducer<'a, T>(&'a mut [T]);

impl<'a, T: Send> Producer for IterMutProducer<'a, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    const EXACT: bool = true;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let (l, r) = self.0.split_at_mut(index);
        (IterMutProducer(l), IterMutProducer(r))
    }

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

/// A parallel iterator over consecutive sub-slices: [`ParallelSlice::par_chunks`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Debug)]
pub struct Chunks<'a, T> {
    slice: &'a [T],
    size: usize,
}

impl<'a, T: Sync> ParallelIterator for Chunks<'a, T> {
    type Item = &'a [T];
    type Producer<'p>
        = ChunksProducer<'a, T>
    where
        Self: 'p;

    fn producer(&mut self) -> ChunksProducer<'a, T> {
        ChunksProducer {
            slice: self.slice,
            size: self.size,
        }
    }
}

impl<T: Sync> IndexedParallelIterator for Chunks<'_, T> {
    fn len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }
}

/// The producer of [`Chunks`]: a position is a chunk.
pub struct ChunksProducer<'a, T> {
    slice: &'a [T],
    size: usize,
}

impl<'a, T: Sync> Producer for ChunksProducer<'a, T> {
    type Item = &'a [T];
    type IntoIter = std::slice::Chunks<'a, T>;
    const EXACT: bool = true;

    fn len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let at = index.saturating_mul(self.size).min(self.slice.len());
        let (l, r) = self.slice.split_at(at);
        let size = self.size;
        (
            ChunksProducer { slice: l, size },
            ChunksProducer { slice: r, size },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        self.slice.chunks(self.size)
    }
}

/// A parallel iterator over consecutive mutable sub-slices:
/// [`ParallelSliceMut::par_chunks_mut`].
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Debug)]
pub struct ChunksMut<'a, T> {
    slice: &'a mut [T],
    size: usize,
}

impl<'a, T: Send> ParallelIterator for ChunksMut<'a, T> {
    type Item = &'a mut [T];
    type Producer<'p>
        = ChunksMutProducer<'a, T>
    where
        Self: 'p;

    fn producer(&mut self) -> ChunksMutProducer<'a, T> {
        ChunksMutProducer {
            slice: std::mem::take(&mut self.slice),
            size: self.size,
        }
    }
}

impl<T: Send> IndexedParallelIterator for ChunksMut<'_, T> {
    fn len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }
}

/// The producer of [`ChunksMut`].
pub struct ChunksMutProducer<'a, T> {
    slice: &'a mut [T],
    size: usize,
}

impl<'a, T: Send> Producer for ChunksMutProducer<'a, T> {
    type Item = &'a mut [T];
    type IntoIter = std::slice::ChunksMut<'a, T>;
    const EXACT: bool = true;

    fn len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let at = index.saturating_mul(self.size).min(self.slice.len());
        let (l, r) = self.slice.split_at_mut(at);
        let size = self.size;
        (
            ChunksMutProducer { slice: l, size },
            ChunksMutProducer { slice: r, size },
        )
    }

    fn into_iter(self) -> Self::IntoIter {
        self.slice.chunks_mut(self.size)
    }
}

/// Parallel methods on shared slices.
pub trait ParallelSlice<T: Sync> {
    /// The slice.
    fn as_parallel_slice(&self) -> &[T];

    /// Consecutive sub-slices of `size` elements (the last may be shorter), in parallel.
    ///
    /// # Panics
    /// If `size` is 0.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let v: Vec<u32> = (1..=10).collect();
    /// let sums: Vec<u32> = v.par_chunks(4).map(|c| c.iter().sum()).collect();
    /// assert_eq!(sums, [10, 26, 19]);
    /// ```
    fn par_chunks(&self, size: usize) -> Chunks<'_, T> {
        assert!(size != 0, "tutti::par: chunks of size 0 requested");
        Chunks {
            slice: self.as_parallel_slice(),
            size,
        }
    }
}

impl<T: Sync> ParallelSlice<T> for [T] {
    fn as_parallel_slice(&self) -> &[T] {
        self
    }
}

/// Parallel methods on mutable slices: chunks and sorts.
///
/// The sorts are sample sorts: a sample of the elements picks up to 127 splitters that
/// cut the slice into key ranges; every element is classified and moved to its range
/// in parallel, then the ranges are sorted in parallel (an element equal to a splitter
/// lands in a range of equal elements, which needs no sorting). They use a scratch area
/// as large as the slice; [`Sorter`](super::Sorter) keeps it between sorts. Short
/// slices, and every slice on a single-worker runtime, are sorted by the standard
/// library's sequential sorts. A comparison that panics leaves the slice in some order
/// with every element still in it exactly once, and the panic propagates. The elements
/// must be `Sync` as well as `Send`: every worker compares its elements with the same
/// splitters.
pub trait ParallelSliceMut<T: Send> {
    /// The slice.
    fn as_parallel_slice_mut(&mut self) -> &mut [T];

    /// Consecutive mutable sub-slices of `size` elements (the last may be shorter), in
    /// parallel.
    ///
    /// # Panics
    /// If `size` is 0.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut v = vec![0u32; 10];
    /// v.par_chunks_mut(3).enumerate().for_each(|(i, c)| c.fill(i as u32));
    /// assert_eq!(v, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]);
    /// ```
    fn par_chunks_mut(&mut self, size: usize) -> ChunksMut<'_, T> {
        assert!(size != 0, "tutti::par: chunks of size 0 requested");
        ChunksMut {
            slice: self.as_parallel_slice_mut(),
            size,
        }
    }

    /// Sorts in parallel, keeping equal elements in their order (stable).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut v = vec![5, 1, 4, 1, 3];
    /// v.par_sort();
    /// assert_eq!(v, [1, 1, 3, 4, 5]);
    /// ```
    fn par_sort(&mut self)
    where
        T: Ord + Sync,
    {
        self.par_sort_by(T::cmp);
    }

    /// Sorts in parallel by `compare`, keeping equal elements in their order (stable).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut v = vec![5, 1, 4];
    /// v.par_sort_by(|a, b| b.cmp(a));
    /// assert_eq!(v, [5, 4, 1]);
    /// ```
    fn par_sort_by<F>(&mut self, compare: F)
    where
        T: Sync,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort::sort_by(
            self.as_parallel_slice_mut(),
            &compare,
            Stability::Stable,
            None,
        );
    }

    /// Sorts in parallel by the key `f` extracts, keeping elements with equal keys in
    /// their order (stable). The key is computed at each comparison.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut v = vec![(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd')];
    /// v.par_sort_by_key(|p| p.0);
    /// assert_eq!(v, [(1, 'b'), (1, 'd'), (2, 'a'), (2, 'c')]);
    /// ```
    fn par_sort_by_key<K, F>(&mut self, f: F)
    where
        T: Sync,
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        self.par_sort_by(|a, b| f(a).cmp(&f(b)));
    }

    /// Sorts in parallel; equal elements may be reordered (unstable).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut v: Vec<u64> = (0..100_000).map(|i| (i * 7919) % 100_003).collect();
    /// v.par_sort_unstable();
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    fn par_sort_unstable(&mut self)
    where
        T: Ord + Sync,
    {
        self.par_sort_unstable_by(T::cmp);
    }

    /// Sorts in parallel by `compare`; equal elements may be reordered (unstable).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut v = vec![1.5f64, -2.0, 0.25];
    /// v.par_sort_unstable_by(|a, b| a.total_cmp(b));
    /// assert_eq!(v, [-2.0, 0.25, 1.5]);
    /// ```
    fn par_sort_unstable_by<F>(&mut self, compare: F)
    where
        T: Sync,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort::sort_by(
            self.as_parallel_slice_mut(),
            &compare,
            Stability::Unstable,
            None,
        );
    }

    /// Sorts in parallel by the key `f` extracts; elements with equal keys may be
    /// reordered (unstable).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut v = vec!["ccc", "a", "bb"];
    /// v.par_sort_unstable_by_key(|s| s.len());
    /// assert_eq!(v, ["a", "bb", "ccc"]);
    /// ```
    fn par_sort_unstable_by_key<K, F>(&mut self, f: F)
    where
        T: Sync,
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        self.par_sort_unstable_by(|a, b| f(a).cmp(&f(b)));
    }
}

impl<T: Send> ParallelSliceMut<T> for [T] {
    fn as_parallel_slice_mut(&mut self) -> &mut [T] {
        self
    }
}
