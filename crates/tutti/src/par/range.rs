//! Parallel iterators over integer ranges: `(a..b).into_par_iter()` and
//! `(a..=b).into_par_iter()`.
//!
//! ```
//! use tutti::prelude::*;
//! let s: i64 = (-5..=5i64).into_par_iter().map(|x| x * x).sum();
//! assert_eq!(s, 110);
//! ```

use std::ops::{Range, RangeInclusive};

use super::plumbing::Producer;
use super::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

/// A parallel iterator over the integers of a range.
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct Iter<T> {
    start: T,
    len: usize,
}

/// The producer of [`Iter`]: `len` integers from `start`.
pub struct RangeProducer<T> {
    start: T,
    len: usize,
}

macro_rules! ranges {
    ($($t:ty => $u:ty),* $(,)?) => {$(
        impl Iter<$t> {
            /// The iterator over `start..start + len`, which fits in `$t`.
            fn new(start: $t, len: usize) -> Self {
                Iter { start, len }
            }
        }

        impl IntoParallelIterator for Range<$t> {
            type Iter = Iter<$t>;
            type Item = $t;

            fn into_par_iter(self) -> Iter<$t> {
                let len = if self.start < self.end {
                    // The difference fits the unsigned type of the same width.
                    self.end.wrapping_sub(self.start) as $u as usize
                } else {
                    0
                };
                Iter::<$t>::new(self.start, len)
            }
        }

        /// # Panics
        /// If the range has more than `usize::MAX` integers (all of `u64` or `i64`).
        impl IntoParallelIterator for RangeInclusive<$t> {
            type Iter = Iter<$t>;
            type Item = $t;

            fn into_par_iter(self) -> Iter<$t> {
                if self.is_empty() {
                    return Iter::<$t>::new(*self.start(), 0);
                }
                let (start, end) = self.into_inner();
                let span = end.wrapping_sub(start) as $u as usize;
                let len = span.checked_add(1).unwrap_or_else(|| {
                    panic!("tutti::par: the range {start}..={end} has more than usize::MAX integers")
                });
                Iter::<$t>::new(start, len)
            }
        }

        impl ParallelIterator for Iter<$t> {
            type Item = $t;
            type Producer<'p> = RangeProducer<$t>;

            fn producer(&mut self) -> RangeProducer<$t> {
                RangeProducer { start: self.start, len: self.len }
            }
        }

        impl IndexedParallelIterator for Iter<$t> {
            fn len(&self) -> usize {
                self.len
            }
        }

        impl Producer for RangeProducer<$t> {
            type Item = $t;
            type IntoIter = RangeIter<$t>;
            const EXACT: bool = true;

            fn len(&self) -> usize {
                self.len
            }

            fn split_at(self, index: usize) -> (Self, Self) {
                // `index <= len`, so `start + index` is in the range or one past its
                // last integer; wrapping covers the one past `MAX` of `a..=MAX`, which
                // then starts an empty piece.
                let mid = self.start.wrapping_add(index as $u as $t);
                (
                    RangeProducer { start: self.start, len: index },
                    RangeProducer { start: mid, len: self.len - index },
                )
            }

            fn into_iter(self) -> RangeIter<$t> {
                RangeIter { next: self.start, left: self.len }
            }
        }

        impl Iterator for RangeIter<$t> {
            type Item = $t;

            #[inline]
            fn next(&mut self) -> Option<$t> {
                if self.left == 0 {
                    return None;
                }
                let v = self.next;
                self.left -= 1;
                self.next = v.wrapping_add(1);
                Some(v)
            }

            #[inline]
            fn size_hint(&self) -> (usize, Option<usize>) {
                (self.left, Some(self.left))
            }

            #[inline]
            fn fold<B, F: FnMut(B, $t) -> B>(self, init: B, mut f: F) -> B {
                // A counted loop: what the optimiser turns into vector code.
                let mut acc = init;
                let mut v = self.next;
                for _ in 0..self.left {
                    acc = f(acc, v);
                    v = v.wrapping_add(1);
                }
                acc
            }
        }

        impl ExactSizeIterator for RangeIter<$t> {}
    )*};
}

/// The sequential iterator over one piece of a range: `left` integers from `next`.
/// (A `Range` cannot hold a piece that ends at the type's maximum.)
pub struct RangeIter<T> {
    next: T,
    left: usize,
}

ranges!(
    u8 => u8, u16 => u16, u32 => u32, usize => usize,
    i8 => u8, i16 => u16, i32 => u32, isize => usize,
);

#[cfg(target_pointer_width = "64")]
ranges!(u64 => u64, i64 => u64);
