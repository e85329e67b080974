//! Parallel iterators on the work-stealing scheduler, and parallel sorts.
//!
//! Beside layer 0 (`runtime`): a parallel iterator is a description of items that can be
//! cut in halves; a consuming method (`sum`, `collect`, `for_each`, …) cuts it with the
//! runtime's recursive `join` and runs the pieces on the workers as ordinary sequential
//! iterators, so the inner loops compile as they would without parallelism. Pieces are
//! cut only as finely as idle workers ask for (see "Adaptive splitting" below).
//!
//! ```
//! use tutti::prelude::*;
//!
//! let v: Vec<u64> = (0..10_000).collect();
//! let sum_of_squares: u64 = v.par_iter().map(|&x| x * x).sum();
//! assert_eq!(sum_of_squares, v.iter().map(|&x| x * x).sum::<u64>());
//!
//! let evens: Vec<u64> = (0..100u64).into_par_iter().filter(|x| x % 2 == 0).collect();
//! assert_eq!(evens, (0..100).step_by(2).collect::<Vec<u64>>());
//!
//! let mut words = vec!["pear", "fig", "apple", "kiwi"];
//! words.par_sort_unstable();
//! assert_eq!(words, ["apple", "fig", "kiwi", "pear"]);
//! ```
//!
//! # Where the items come from
//!
//! | source | method | items |
//! |---|---|---|
//! | `&[T]`, `&Vec<T>` | [`par_iter`](IntoParallelRefIterator::par_iter) | `&T` |
//! | `&mut [T]`, `&mut Vec<T>` | [`par_iter_mut`](IntoParallelRefMutIterator::par_iter_mut) | `&mut T` |
//! | `Vec<T>` | [`into_par_iter`](IntoParallelIterator::into_par_iter) | `T` (moved out) |
//! | `a..b`, `a..=b` of integers | [`into_par_iter`](IntoParallelIterator::into_par_iter) | the integers |
//! | `&[T]` | [`par_chunks`](ParallelSlice::par_chunks) | `&[T]` of a given length |
//! | `&mut [T]` | [`par_chunks_mut`](ParallelSliceMut::par_chunks_mut) | `&mut [T]` |
//!
//! # Adaptors and consumers
//!
//! Adaptors: [`map`](ParallelIterator::map), [`filter`](ParallelIterator::filter),
//! [`filter_map`](ParallelIterator::filter_map),
//! [`flat_map_iter`](ParallelIterator::flat_map_iter),
//! [`copied`](ParallelIterator::copied), [`cloned`](ParallelIterator::cloned),
//! [`fold`](ParallelIterator::fold), [`with_min_len`](ParallelIterator::with_min_len);
//! on iterators with a known length ([`IndexedParallelIterator`]) also
//! [`enumerate`](IndexedParallelIterator::enumerate), [`zip`](IndexedParallelIterator::zip)
//! and [`chunks`](IndexedParallelIterator::chunks).
//!
//! Consumers: [`for_each`](ParallelIterator::for_each), [`reduce`](ParallelIterator::reduce),
//! [`reduce_with`](ParallelIterator::reduce_with), [`sum`](ParallelIterator::sum),
//! [`product`](ParallelIterator::product), [`count`](ParallelIterator::count),
//! [`min`](ParallelIterator::min), [`max`](ParallelIterator::max) and their `_by` and
//! `_by_key` forms, [`any`](ParallelIterator::any), [`all`](ParallelIterator::all),
//! [`find_any`](ParallelIterator::find_any), [`collect`](ParallelIterator::collect) into a
//! `Vec` (in order), [`unzip`](ParallelIterator::unzip) and
//! [`partition`](ParallelIterator::partition) (both in order).
//!
//! Results equal those of the sequential iterator whenever the operations are pure and
//! `reduce`'s operation is associative: pieces are combined left before right, `min`
//! returns the first minimum and `max` the last maximum as `Iterator`'s do. Only
//! `find_any` may return any matching item, not necessarily the first.
//!
//! # Sorting
//!
//! [`ParallelSliceMut`] adds `par_sort`, `par_sort_unstable` and their `_by` and
//! `_by_key` forms: a sample sort that sorts the buckets of key ranges in parallel (see
//! [`Sorter`], which also keeps the sort's workspace between calls).
//!
//! # Adaptive splitting
//!
//! A consumer starts with about one split per worker and halves its budget at each
//! split; a piece that another worker stole gets the budget back, so pieces are cut
//! finer only while workers run out of work. A 10^8-element sum on two workers runs as a
//! handful of sequential loops, not 10^8 jobs. [`with_min_len`](ParallelIterator::with_min_len)
//! sets the smallest piece for work whose items are too cheap to be worth a job.
//!
//! # Where it runs, and panics
//!
//! On the current runtime, as [`join`](crate::join) does: called on a worker the pieces
//! run on that worker's runtime; called from another thread the whole operation moves
//! onto the current runtime (the one entered with [`Runtime::enter`](crate::Runtime::enter)
//! or `block_on`, else the global one) and the thread waits. Parallel iterators nest
//! (inside `join`, `scope`, a task, or another parallel iterator's closure).
//!
//! A panic in a closure propagates to the caller of the consuming method once the other
//! pieces have stopped; items a piece owned (of a `Vec`) are dropped, never leaked twice.
//!
//! # Coming from rayon
//!
//! The names are rayon's: `use tutti::prelude::*` in place of `use rayon::prelude::*`,
//! and the methods above read the same. `unzip` and `partition` return `Vec`s.
//! `flat_map` over nested *parallel* iterators is `flat_map_iter` over sequential ones.

mod chunks;
mod collect;
mod enumerate;
mod filter;
mod find;
mod flat_map;
mod fold;
mod map;
mod min_len;
mod plumbing;
pub mod range;
mod reduce;
pub mod slice;
mod sort;
pub mod vec;
mod zip;

#[cfg(all(test, not(loom)))]
mod tests;

use std::cmp::Ordering;
use std::iter::{Product, Sum};

pub use chunks::Chunks;
pub use enumerate::Enumerate;
pub use filter::{Filter, FilterMap};
pub use flat_map::FlatMapIter;
pub use fold::Fold;
pub use map::{Cloned, Copied, Map};
pub use min_len::MinLen;
pub use slice::{ParallelSlice, ParallelSliceMut};
pub use sort::Sorter;
pub use zip::Zip;

use plumbing::{drive, Producer};
use reduce::{Leafwise, Pick};

/// Everything needed to use parallel iterators and parallel sorts:
/// `use tutti::par::prelude::*` (the same as `use tutti::prelude::*`).
pub mod prelude {
    pub use super::{
        FromParallelIterator, IndexedParallelIterator, IntoParallelIterator,
        IntoParallelRefIterator, IntoParallelRefMutIterator, ParallelIterator, ParallelSlice,
        ParallelSliceMut,
    };
}

/// Items that can be processed in parallel: the adaptors and consumers of the module
/// docs.
///
/// Obtained from a collection with [`into_par_iter`](IntoParallelIterator::into_par_iter),
/// [`par_iter`](IntoParallelRefIterator::par_iter) or
/// [`par_iter_mut`](IntoParallelRefMutIterator::par_iter_mut). Adaptors are lazy; a
/// consumer runs the pipeline on the current runtime and returns when every piece is
/// done.
///
/// ```
/// use tutti::prelude::*;
///
/// let longest = ["a", "bbb", "cc"].par_iter().map(|s| s.len()).max();
/// assert_eq!(longest, Some(3));
/// ```
pub trait ParallelIterator: Sized {
    /// The items.
    type Item: Send;

    /// The splittable form (internal).
    #[doc(hidden)]
    type Producer<'p>: Producer<Item = Self::Item>
    where
        Self: 'p;

    /// The splittable form, borrowing the closures of the adaptors (internal). Called
    /// once, by the consumer.
    #[doc(hidden)]
    fn producer(&mut self) -> Self::Producer<'_>;

    /// Applies `f` to every item.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let doubled: Vec<i32> = [1, 2, 3].par_iter().map(|x| 2 * x).collect();
    /// assert_eq!(doubled, [2, 4, 6]);
    /// ```
    fn map<R, F>(self, f: F) -> Map<Self, F>
    where
        F: Fn(Self::Item) -> R + Sync + Send,
        R: Send,
    {
        Map::new(self, f)
    }

    /// Keeps the items for which `predicate` holds.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let odd = (0..10u32).into_par_iter().filter(|x| x % 2 == 1).count();
    /// assert_eq!(odd, 5);
    /// ```
    fn filter<P>(self, predicate: P) -> Filter<Self, P>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        Filter::new(self, predicate)
    }

    /// Applies `f` to every item and keeps the `Some` results.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let numbers: Vec<u8> = ["1", "x", "3"].par_iter().filter_map(|s| s.parse().ok()).collect();
    /// assert_eq!(numbers, [1, 3]);
    /// ```
    fn filter_map<R, F>(self, f: F) -> FilterMap<Self, F>
    where
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        FilterMap::new(self, f)
    }

    /// Applies `f` to every item and yields the items of each (sequential) iterator it
    /// returns, in order.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let pairs: Vec<(u32, u32)> =
    ///     (0..3u32).into_par_iter().flat_map_iter(|i| (0..i).map(move |j| (i, j))).collect();
    /// assert_eq!(pairs, [(1, 0), (2, 0), (2, 1)]);
    /// ```
    fn flat_map_iter<U, F>(self, f: F) -> FlatMapIter<Self, F>
    where
        F: Fn(Self::Item) -> U + Sync + Send,
        U: IntoIterator,
        U::Item: Send,
    {
        FlatMapIter::new(self, f)
    }

    /// Copies referenced items.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let v: Vec<u8> = [1u8, 2].par_iter().copied().collect();
    /// assert_eq!(v, [1, 2]);
    /// ```
    fn copied<'a, T>(self) -> Copied<Self>
    where
        T: 'a + Copy + Send + Sync,
        Self: ParallelIterator<Item = &'a T>,
    {
        Cloned::new(self)
    }

    /// Clones referenced items.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let names = vec![String::from("a"), String::from("b")];
    /// let copies: Vec<String> = names.par_iter().cloned().collect();
    /// assert_eq!(copies, names);
    /// ```
    fn cloned<'a, T>(self) -> Cloned<Self>
    where
        T: 'a + Clone + Send + Sync,
        Self: ParallelIterator<Item = &'a T>,
    {
        Cloned::new(self)
    }

    /// Folds each piece of work into one accumulator, starting from `identity()`; the
    /// result is a parallel iterator over the pieces' accumulators (in order), usually
    /// combined with [`reduce`](Self::reduce) or [`sum`](Self::sum). Fewer, larger
    /// combine steps than `map` + `reduce` when the accumulator is costly to combine.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// // A histogram per piece, then the histograms added up.
    /// let hist = (0..1000u32)
    ///     .into_par_iter()
    ///     .fold(|| [0u32; 4], |mut h, x| { h[(x % 4) as usize] += 1; h })
    ///     .reduce(|| [0; 4], |a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]]);
    /// assert_eq!(hist, [250; 4]);
    /// ```
    fn fold<T, ID, F>(self, identity: ID, fold_op: F) -> Fold<Self, ID, F>
    where
        T: Send,
        ID: Fn() -> T + Sync + Send,
        F: Fn(T, Self::Item) -> T + Sync + Send,
    {
        Fold::new(self, identity, fold_op)
    }

    /// Never splits off a piece of fewer than `min` source positions (slice elements,
    /// range values), for items too cheap to be worth a job each.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let s: u64 = (0..1_000_000u64).into_par_iter().with_min_len(100_000).sum();
    /// assert_eq!(s, 999_999 * 1_000_000 / 2);
    /// ```
    fn with_min_len(self, min: usize) -> MinLen<Self> {
        MinLen::new(self, min)
    }

    /// Calls `f` on every item.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut v: Vec<u64> = (1..=100).collect();
    /// v.par_iter_mut().for_each(|x| *x *= 2);
    /// assert_eq!(v.iter().sum::<u64>(), 10_100);
    /// ```
    fn for_each<F>(mut self, f: F)
    where
        F: Fn(Self::Item) + Sync + Send,
    {
        drive(self.producer(), Leafwise::new(&reduce::ForEach(f)))
    }

    /// Combines the items with `op`, starting each piece from `identity()`. With an
    /// associative `op` and an `identity()` that `op` leaves unchanged, the result is the
    /// sequential fold's.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let product = (1..=10u64).into_par_iter().reduce(|| 1, |a, b| a * b);
    /// assert_eq!(product, 3_628_800);
    /// ```
    fn reduce<ID, OP>(mut self, identity: ID, op: OP) -> Self::Item
    where
        ID: Fn() -> Self::Item + Sync + Send,
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        drive(
            self.producer(),
            Leafwise::new(&reduce::Reduce { identity, op }),
        )
    }

    /// Combines the items with an associative `op`; `None` if there are none.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let joined = ["a", "b", "c"].par_iter().map(|s| s.to_string()).reduce_with(|a, b| a + &b);
    /// assert_eq!(joined.as_deref(), Some("abc"));
    /// ```
    fn reduce_with<OP>(mut self, op: OP) -> Option<Self::Item>
    where
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        drive(self.producer(), Leafwise::new(&Pick(reduce::With(op))))
    }

    /// The sum of the items (each piece summed by [`Iterator::sum`], then the pieces'
    /// sums added up).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let s: u64 = [1u64, 2, 3].par_iter().sum();
    /// assert_eq!(s, 6);
    /// ```
    fn sum<S>(mut self) -> S
    where
        S: Send + Sum<Self::Item> + Sum<S>,
    {
        drive(self.producer(), Leafwise::new(&reduce::Summed::<S>::new()))
    }

    /// The product of the items.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let p: u64 = (1..=5u64).into_par_iter().product();
    /// assert_eq!(p, 120);
    /// ```
    fn product<P>(mut self) -> P
    where
        P: Send + Product<Self::Item> + Product<P>,
    {
        drive(
            self.producer(),
            Leafwise::new(&reduce::Multiplied::<P>::new()),
        )
    }

    /// The number of items.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// assert_eq!((0..1000u32).into_par_iter().filter(|x| x % 3 == 0).count(), 334);
    /// ```
    fn count(mut self) -> usize {
        drive(self.producer(), Leafwise::new(&reduce::Count))
    }

    /// The smallest item (the first of equal ones); `None` if there are none.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// assert_eq!([3, 1, 2].par_iter().min(), Some(&1));
    /// ```
    fn min(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        self.min_by(Ord::cmp)
    }

    /// The largest item (the last of equal ones); `None` if there are none.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// assert_eq!([3, 1, 2].par_iter().max(), Some(&3));
    /// ```
    fn max(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        self.max_by(Ord::cmp)
    }

    /// The smallest item by `compare` (the first of equal ones).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let m = [2.5f64, -1.0, 7.0].par_iter().min_by(|a, b| a.total_cmp(b));
    /// assert_eq!(m, Some(&-1.0));
    /// ```
    fn min_by<F>(mut self, compare: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item, &Self::Item) -> Ordering + Sync + Send,
    {
        drive(
            self.producer(),
            Leafwise::new(&Pick(reduce::MinBy(compare))),
        )
    }

    /// The largest item by `compare` (the last of equal ones).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let m = [2.5f64, -1.0, 7.0].par_iter().max_by(|a, b| a.total_cmp(b));
    /// assert_eq!(m, Some(&7.0));
    /// ```
    fn max_by<F>(mut self, compare: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item, &Self::Item) -> Ordering + Sync + Send,
    {
        drive(
            self.producer(),
            Leafwise::new(&Pick(reduce::MaxBy(compare))),
        )
    }

    /// The item with the smallest key (the first of equal ones).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let shortest = ["ccc", "a", "bb", "d"].par_iter().min_by_key(|s| s.len());
    /// assert_eq!(shortest, Some(&"a"));
    /// ```
    fn min_by_key<K, F>(mut self, key: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        drive(self.producer(), Leafwise::new(&Pick(reduce::MinByKey(key))))
    }

    /// The item with the largest key (the last of equal ones).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let longest = ["ccc", "a", "bbb", "d"].par_iter().max_by_key(|s| s.len());
    /// assert_eq!(longest, Some(&"bbb"));
    /// ```
    fn max_by_key<K, F>(mut self, key: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        drive(self.producer(), Leafwise::new(&Pick(reduce::MaxByKey(key))))
    }

    /// Some item for which `predicate` holds — not necessarily the first: pieces stop
    /// looking once any piece has found one.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let found = (0..1_000_000u32).into_par_iter().find_any(|&x| x % 1000 == 999);
    /// assert_eq!(found.map(|x| x % 1000), Some(999));
    /// ```
    fn find_any<P>(mut self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        find::find_any(self.producer(), &predicate)
    }

    /// Whether `predicate` holds for any item (stops early once it does).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// assert!((0..100u32).into_par_iter().any(|x| x == 42));
    /// ```
    fn any<P>(self, predicate: P) -> bool
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate).find_any(|&b| b).is_some()
    }

    /// Whether `predicate` holds for every item (stops early once it does not).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// assert!([2, 4, 6].par_iter().all(|x| x % 2 == 0));
    /// ```
    fn all<P>(self, predicate: P) -> bool
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate).find_any(|&b| !b).is_none()
    }

    /// Collects the items, in order (see [`FromParallelIterator`]).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let squares: Vec<u32> = (0..5u32).into_par_iter().map(|x| x * x).collect();
    /// assert_eq!(squares, [0, 1, 4, 9, 16]);
    /// ```
    fn collect<C>(self) -> C
    where
        C: FromParallelIterator<Self::Item>,
    {
        C::from_par_iter(self)
    }

    /// Splits pairs into two vectors, each in the items' order.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let (small, big): (Vec<u32>, Vec<u32>) = (0..4u32).into_par_iter().map(|x| (x, 10 * x)).unzip();
    /// assert_eq!(small, [0, 1, 2, 3]);
    /// assert_eq!(big, [0, 10, 20, 30]);
    /// ```
    fn unzip<A, B>(mut self) -> (Vec<A>, Vec<B>)
    where
        Self: ParallelIterator<Item = (A, B)>,
        A: Send,
        B: Send,
    {
        collect::unzip(self.producer())
    }

    /// The items for which `predicate` holds and the others, each in the items' order.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let (even, odd): (Vec<u32>, Vec<u32>) = (0..6u32).into_par_iter().partition(|x| x % 2 == 0);
    /// assert_eq!(even, [0, 2, 4]);
    /// assert_eq!(odd, [1, 3, 5]);
    /// ```
    fn partition<P>(mut self, predicate: P) -> (Vec<Self::Item>, Vec<Self::Item>)
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        collect::partition(self.producer(), &predicate)
    }
}

/// A parallel iterator that knows how many items it has: every source of the module
/// docs, and what `map`, `copied`, `cloned`, `enumerate`, `zip`, `chunks` and
/// `with_min_len` make of one. Only these can be numbered or zipped.
///
/// ```
/// use tutti::prelude::*;
/// let v = vec![10, 20, 30];
/// assert_eq!(v.par_iter().map(|x| x + 1).len(), 3);
/// ```
pub trait IndexedParallelIterator: ParallelIterator {
    /// The number of items.
    fn len(&self) -> usize;

    /// Whether there are no items.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// assert!((5..5u32).into_par_iter().is_empty());
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pairs every item with its index.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let v: Vec<(usize, char)> = ['a', 'b'].par_iter().copied().enumerate().collect();
    /// assert_eq!(v, [(0, 'a'), (1, 'b')]);
    /// ```
    fn enumerate(self) -> Enumerate<Self> {
        Enumerate::new(self)
    }

    /// Pairs the items with those of `other`, as many pairs as the shorter has items.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let a = [1, 2, 3];
    /// let b = [10, 20, 30];
    /// let dot: i32 = a.par_iter().zip(&b).map(|(x, y)| x * y).sum();
    /// assert_eq!(dot, 140);
    /// ```
    fn zip<Z>(self, other: Z) -> Zip<Self, Z::Iter>
    where
        Z: IntoParallelIterator,
        Z::Iter: IndexedParallelIterator,
    {
        Zip::new(self, other.into_par_iter())
    }

    /// Groups consecutive items into vectors of `size` (the last may be shorter).
    ///
    /// # Panics
    /// If `size` is 0.
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let groups: Vec<Vec<u32>> = (0..5u32).into_par_iter().chunks(2).collect();
    /// assert_eq!(groups, [vec![0, 1], vec![2, 3], vec![4]]);
    /// ```
    fn chunks(self, size: usize) -> Chunks<Self> {
        Chunks::new(self, size)
    }

    /// Collects the items into `target`, in order, replacing what it held (its
    /// allocation is reused when large enough).
    ///
    /// ```
    /// use tutti::prelude::*;
    /// let mut out = Vec::new();
    /// (0..3u32).into_par_iter().map(|x| x * 2).collect_into_vec(&mut out);
    /// assert_eq!(out, [0, 2, 4]);
    /// ```
    fn collect_into_vec(mut self, target: &mut Vec<Self::Item>) {
        collect::into_vec(self.producer(), target)
    }
}

/// Conversion into a parallel iterator: `Vec<T>` (owned items), `&[T]`/`&Vec<T>`
/// (references), `&mut [T]`/`&mut Vec<T>`, integer ranges, and every parallel iterator.
///
/// ```
/// use tutti::prelude::*;
/// let total: u32 = vec![1u32, 2, 3].into_par_iter().sum();
/// assert_eq!(total, 6);
/// ```
pub trait IntoParallelIterator {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;

    /// Converts `self` into a parallel iterator.
    fn into_par_iter(self) -> Self::Iter;
}

impl<I: ParallelIterator> IntoParallelIterator for I {
    type Iter = I;
    type Item = I::Item;

    fn into_par_iter(self) -> I {
        self
    }
}

/// `par_iter()`: a parallel iterator over references to the elements of a collection.
///
/// ```
/// use tutti::prelude::*;
/// let v = vec![1, 2, 3];
/// assert_eq!(v.par_iter().max(), Some(&3));
/// ```
pub trait IntoParallelRefIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (references).
    type Item: Send + 'data;

    /// A parallel iterator over `&self`'s elements.
    fn par_iter(&'data self) -> Self::Iter;
}

impl<'data, I: 'data + ?Sized> IntoParallelRefIterator<'data> for I
where
    &'data I: IntoParallelIterator,
{
    type Iter = <&'data I as IntoParallelIterator>::Iter;
    type Item = <&'data I as IntoParallelIterator>::Item;

    fn par_iter(&'data self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// `par_iter_mut()`: a parallel iterator over mutable references to the elements of a
/// collection.
///
/// ```
/// use tutti::prelude::*;
/// let mut v = vec![1, 2, 3];
/// v.par_iter_mut().for_each(|x| *x *= 10);
/// assert_eq!(v, [10, 20, 30]);
/// ```
pub trait IntoParallelRefMutIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (mutable references).
    type Item: Send + 'data;

    /// A parallel iterator over `&mut self`'s elements.
    fn par_iter_mut(&'data mut self) -> Self::Iter;
}

impl<'data, I: 'data + ?Sized> IntoParallelRefMutIterator<'data> for I
where
    &'data mut I: IntoParallelIterator,
{
    type Iter = <&'data mut I as IntoParallelIterator>::Iter;
    type Item = <&'data mut I as IntoParallelIterator>::Item;

    fn par_iter_mut(&'data mut self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// A collection that [`collect`](ParallelIterator::collect) can build.
///
/// ```
/// use tutti::prelude::*;
/// let v = Vec::from_par_iter((0..3u8).into_par_iter());
/// assert_eq!(v, [0, 1, 2]);
/// ```
pub trait FromParallelIterator<T: Send>: Sized {
    /// Builds the collection from the items of `iter`.
    fn from_par_iter<I>(iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>;
}

/// In the items' order. With a known length ([`IndexedParallelIterator`]) every piece
/// writes straight into its place in the vector; otherwise each piece collects its own
/// vector and the pieces are joined at the end.
impl<T: Send> FromParallelIterator<T> for Vec<T> {
    fn from_par_iter<I>(iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>,
    {
        let mut iter = iter.into_par_iter();
        collect::to_vec(iter.producer())
    }
}
