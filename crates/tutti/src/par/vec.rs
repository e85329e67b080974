//! A parallel iterator that moves the elements out of a `Vec`: `vec.into_par_iter()`.
//!
//! The vector gives up its elements when the consumer starts (its length is set to 0, so
//! it only frees its buffer when dropped); from then on each piece owns the elements of
//! its part of the buffer: it moves out those it yields and drops the rest when it is
//! dropped — after a panic, or when a `find_any` stopped early — so every element is
//! moved out or dropped exactly once.
//!
//! ```
//! use tutti::prelude::*;
//! let names = vec![String::from("ada"), String::from("grace")];
//! let lengths: Vec<usize> = names.into_par_iter().map(|s| s.len()).collect();
//! assert_eq!(lengths, [3, 5]);
//! ```

use std::marker::PhantomData;
use std::ptr::NonNull;

use super::plumbing::Producer;
use super::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

/// A parallel iterator over the elements of a `Vec`, moved out.
#[must_use = "parallel iterators are lazy: use a consuming method such as `for_each` or `collect`"]
#[derive(Clone, Debug)]
pub struct IntoIter<T> {
    vec: Vec<T>,
}

impl<T: Send> IntoParallelIterator for Vec<T> {
    type Iter = IntoIter<T>;
    type Item = T;

    fn into_par_iter(self) -> IntoIter<T> {
        IntoIter { vec: self }
    }
}

impl<T: Send> ParallelIterator for IntoIter<T> {
    type Item = T;
    type Producer<'p>
        = Drain<'p, T>
    where
        Self: 'p;

    fn producer(&mut self) -> Drain<'_, T> {
        let len = self.vec.len();
        // SAFETY: the elements `..len` are initialised; from here on the producer owns
        // them (module docs) and the vector only its buffer, which outlives the borrow.
        unsafe {
            self.vec.set_len(0);
            Drain::new(self.vec.as_mut_ptr(), len)
        }
    }
}

impl<T: Send> IndexedParallelIterator for IntoIter<T> {
    fn len(&self) -> usize {
        self.vec.len()
    }
}

/// The elements `start..start + len` of a buffer, owned: moved out by its iterator or
/// dropped with it.
pub struct Drain<'a, T> {
    start: NonNull<T>,
    len: usize,
    buffer: PhantomData<&'a mut [T]>,
}

// SAFETY: a `Drain` owns its elements, as a `Vec<T>` would: moving it to another thread
// moves them.
unsafe impl<T: Send> Send for Drain<'_, T> {}

impl<T> Drain<'_, T> {
    /// # Safety
    /// `start..start + len` holds initialised elements that nothing else will read or
    /// drop, in a buffer that outlives `'a`.
    unsafe fn new(start: *mut T, len: usize) -> Self {
        Drain {
            start: NonNull::new(start).unwrap_or(NonNull::dangling()),
            len,
            buffer: PhantomData,
        }
    }

    /// Gives up the elements without dropping them (they were handed on).
    fn forget(&mut self) -> (NonNull<T>, usize) {
        let taken = (self.start, self.len);
        self.len = 0;
        taken
    }
}

impl<T> Drop for Drain<'_, T> {
    fn drop(&mut self) {
        let (start, len) = self.forget();
        // SAFETY: the elements are ours (`new`), initialised and not moved out.
        unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(start.as_ptr(), len)) }
    }
}

impl<'a, T: Send> Producer for Drain<'a, T> {
    type Item = T;
    type IntoIter = DrainIter<'a, T>;
    const EXACT: bool = true;

    fn len(&self) -> usize {
        self.len
    }

    fn split_at(mut self, index: usize) -> (Self, Self) {
        assert!(index <= self.len, "tutti::par: split past the end");
        let (start, len) = self.forget();
        // SAFETY: the two halves share out the elements `self` owned.
        unsafe {
            (
                Drain::new(start.as_ptr(), index),
                Drain::new(start.as_ptr().add(index), len - index),
            )
        }
    }

    fn into_iter(mut self) -> DrainIter<'a, T> {
        let (start, len) = self.forget();
        DrainIter {
            // SAFETY: the elements pass from the producer to the iterator.
            rest: unsafe { Drain::new(start.as_ptr(), len) },
        }
    }
}

/// The sequential iterator of one piece of a [`Drain`]: it moves the elements out in
/// order; those not taken are dropped with it.
pub struct DrainIter<'a, T> {
    rest: Drain<'a, T>,
}

impl<T> Iterator for DrainIter<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.rest.len == 0 {
            return None;
        }
        let first = self.rest.start;
        // SAFETY: `first` is the first element still owned; it leaves the owned range
        // before it is read, so it is read exactly once and never dropped here.
        unsafe {
            self.rest.start = NonNull::new_unchecked(first.as_ptr().add(1));
            self.rest.len -= 1;
            Some(first.as_ptr().read())
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.rest.len, Some(self.rest.len))
    }
}

impl<T> ExactSizeIterator for DrainIter<'_, T> {}
