//! Order-preserving collection: `collect` into a `Vec`, `collect_into_vec`, `unzip` and
//! `partition`.
//!
//! With a known length (an exact producer, `plumbing.rs`) the output is allocated once
//! and cut exactly as the producer is cut, so each piece writes its items straight into
//! their final places; adjacent pieces' results are merged by adding up how many items
//! they wrote. Otherwise each piece collects its own vectors and the pieces' vectors are
//! concatenated, in order, at the end.
//!
//! # Panic safety of the in-place path
//!
//! A piece's [`Written`] owns the items it has written: if the piece or a later step
//! panics, dropping it drops them. The output vector's length is set only after every
//! item is written and the results are merged into one covering the whole output, so
//! the vector never claims an item that was not written or was dropped already.

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use super::plumbing::{drive, Consumer, Producer, Reducer};
use super::reduce::{Leafwise, Strategy};

/// Collects the items of `producer` into a vector, in order.
pub(super) fn to_vec<P>(producer: P) -> Vec<P::Item>
where
    P: Producer,
    P::Item: Send,
{
    if P::EXACT {
        let mut v = Vec::new();
        into_vec(producer, &mut v);
        v
    } else {
        concat(drive(producer, Leafwise::new(&Pieces)))
    }
}

/// Collects the items of an exact `producer` into `target`, in order.
pub(super) fn into_vec<P>(producer: P, target: &mut Vec<P::Item>)
where
    P: Producer,
    P::Item: Send,
{
    debug_assert!(P::EXACT, "in-place collection of an inexact producer");
    let len = producer.len();
    target.clear();
    target.reserve(len);
    let slots = &mut target.spare_capacity_mut()[..len];
    let written = drive(producer, Collect::new(slots));
    written.finish(len);
    // SAFETY: `finish` checked that the items `..len` are all written, and released
    // them to the vector.
    unsafe { target.set_len(len) };
}

/// Splits pairs into two vectors, in order.
pub(super) fn unzip<P, A, B>(producer: P) -> (Vec<A>, Vec<B>)
where
    P: Producer<Item = (A, B)>,
    A: Send,
    B: Send,
{
    if P::EXACT {
        let len = producer.len();
        let (mut a, mut b) = (Vec::with_capacity(len), Vec::with_capacity(len));
        let consumer = Unzip(
            Collect::new(&mut a.spare_capacity_mut()[..len]),
            Collect::new(&mut b.spare_capacity_mut()[..len]),
        );
        let (wa, wb) = drive(producer, consumer);
        wa.finish(len);
        wb.finish(len);
        // SAFETY: as in `into_vec`, for each vector.
        unsafe {
            a.set_len(len);
            b.set_len(len);
        }
        (a, b)
    } else {
        let pieces = drive(producer, Leafwise::new(&UnzipPieces));
        let (a, b): (Vec<_>, Vec<_>) = pieces.into_iter().unzip();
        (concat(a), concat(b))
    }
}

/// The items for which `predicate` holds and the others, each in order.
pub(super) fn partition<P, F>(producer: P, predicate: &F) -> (Vec<P::Item>, Vec<P::Item>)
where
    P: Producer,
    P::Item: Send,
    F: Fn(&P::Item) -> bool + Sync,
{
    let pieces = drive(producer, Leafwise::new(&PartitionPieces(predicate)));
    let (yes, no): (Vec<_>, Vec<_>) = pieces.into_iter().unzip();
    (concat(yes), concat(no))
}

/// The pieces' vectors joined, in order.
fn concat<T>(pieces: Vec<Vec<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(pieces.iter().map(Vec::len).sum());
    for mut piece in pieces {
        out.append(&mut piece);
    }
    out
}

/// Each piece collects a vector (inexact `collect`).
struct Pieces;

impl<T: Send> Strategy<T> for Pieces {
    type Result = Vec<Vec<T>>;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Vec<Vec<T>> {
        vec![items.collect()]
    }
    fn combine(&self, mut left: Vec<Vec<T>>, right: Vec<Vec<T>>) -> Vec<Vec<T>> {
        left.extend(right);
        left
    }
}

/// Each piece unzips into two vectors (inexact `unzip`).
struct UnzipPieces;

impl<A: Send, B: Send> Strategy<(A, B)> for UnzipPieces {
    type Result = Vec<(Vec<A>, Vec<B>)>;
    fn leaf<I: Iterator<Item = (A, B)>>(&self, items: I) -> Self::Result {
        vec![items.unzip()]
    }
    fn combine(&self, mut left: Self::Result, right: Self::Result) -> Self::Result {
        left.extend(right);
        left
    }
}

/// Each piece partitions into two vectors.
struct PartitionPieces<'f, F>(&'f F);

impl<T: Send, F: Fn(&T) -> bool + Sync> Strategy<T> for PartitionPieces<'_, F> {
    type Result = Vec<(Vec<T>, Vec<T>)>;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Self::Result {
        vec![items.partition(self.0)]
    }
    fn combine(&self, mut left: Self::Result, right: Self::Result) -> Self::Result {
        left.extend(right);
        left
    }
}

/// The consumer of in-place collection: the uninitialised slots of a piece's part of the
/// output.
struct Collect<'c, T> {
    start: *mut T,
    len: usize,
    slots: PhantomData<&'c mut [MaybeUninit<T>]>,
}

// SAFETY: a `Collect` is the exclusive right to write its slots, like the
// `&mut [MaybeUninit<T>]` it was made from.
unsafe impl<T: Send> Send for Collect<'_, T> {}

impl<'c, T> Collect<'c, T> {
    fn new(slots: &'c mut [MaybeUninit<T>]) -> Self {
        Collect {
            start: slots.as_mut_ptr().cast(),
            len: slots.len(),
            slots: PhantomData,
        }
    }

    /// Writes `items` into the slots, in order.
    fn write<I: Iterator<Item = T>>(self, items: I) -> Written<'c, T> {
        let mut written = Written {
            start: self.start,
            len: 0,
            slots: PhantomData,
        };
        for item in items {
            assert!(
                written.len < self.len,
                "tutti::par: a piece yielded more items than its length"
            );
            // SAFETY: slot `written.len` is in this piece's part and not written yet.
            unsafe { self.start.add(written.len).write(item) };
            written.len += 1;
        }
        written
    }

    fn split(self, index: usize) -> (Self, Self) {
        assert!(index <= self.len, "tutti::par: split past the end");
        let right = Collect {
            // SAFETY: `index <= len`: in bounds or one past the end of the slots.
            start: unsafe { self.start.add(index) },
            len: self.len - index,
            slots: PhantomData,
        };
        let left = Collect {
            start: self.start,
            len: index,
            slots: PhantomData,
        };
        (left, right)
    }
}

impl<'c, T: Send> Consumer<T> for Collect<'c, T> {
    type Result = Written<'c, T>;
    type Reducer = Adjacent;

    fn split_at(self, index: usize) -> (Self, Self, Adjacent) {
        let (l, r) = self.split(index);
        (l, r, Adjacent)
    }

    fn consume<I: Iterator<Item = T>>(self, items: I) -> Written<'c, T> {
        self.write(items)
    }
}

/// The items written by one or more adjacent pieces: `len` from `start`, owned.
struct Written<'c, T> {
    start: *mut T,
    len: usize,
    slots: PhantomData<&'c mut [MaybeUninit<T>]>,
}

// SAFETY: a `Written` owns its items, so it may move between threads when they may.
unsafe impl<T: Send> Send for Written<'_, T> {}

impl<T> Written<'_, T> {
    /// Checks that these are all `len` items of the output and gives them up to the
    /// vector.
    fn finish(mut self, len: usize) {
        assert_eq!(
            self.len, len,
            "tutti::par: an indexed iterator yielded fewer items than its length"
        );
        self.len = 0;
    }
}

impl<T> Drop for Written<'_, T> {
    fn drop(&mut self) {
        let items = std::ptr::slice_from_raw_parts_mut(self.start, self.len);
        // SAFETY: the first `len` slots from `start` hold items this value owns.
        unsafe { std::ptr::drop_in_place(items) };
    }
}

/// Merges the results of adjacent pieces.
struct Adjacent;

impl<'c, T> Reducer<Written<'c, T>> for Adjacent {
    fn reduce(self, mut left: Written<'c, T>, mut right: Written<'c, T>) -> Written<'c, T> {
        // SAFETY: pointer arithmetic within (or one past) the output buffer.
        if unsafe { left.start.add(left.len) } == right.start {
            left.len += std::mem::take(&mut right.len);
        }
        // Otherwise the left piece fell short: `right` drops its items and `finish`
        // reports the shortfall.
        left
    }
}

/// The consumer of in-place `unzip`: two outputs cut alike.
struct Unzip<'c, A, B>(Collect<'c, A>, Collect<'c, B>);

impl<'c, A: Send, B: Send> Consumer<(A, B)> for Unzip<'c, A, B> {
    type Result = (Written<'c, A>, Written<'c, B>);
    type Reducer = Adjacent;

    fn split_at(self, index: usize) -> (Self, Self, Adjacent) {
        let (al, ar) = self.0.split(index);
        let (bl, br) = self.1.split(index);
        (Unzip(al, bl), Unzip(ar, br), Adjacent)
    }

    fn consume<I: Iterator<Item = (A, B)>>(self, items: I) -> Self::Result {
        let Unzip(ca, cb) = self;
        let mut wa = Written {
            start: ca.start,
            len: 0,
            slots: PhantomData,
        };
        let mut wb = Written {
            start: cb.start,
            len: 0,
            slots: PhantomData,
        };
        for (a, b) in items {
            assert!(
                wa.len < ca.len,
                "tutti::par: a piece yielded more items than its length"
            );
            // SAFETY: as in `Collect::write`, for each output.
            unsafe {
                ca.start.add(wa.len).write(a);
                wa.len += 1;
                cb.start.add(wb.len).write(b);
                wb.len += 1;
            }
        }
        (wa, wb)
    }
}

impl<'c, A, B> Reducer<(Written<'c, A>, Written<'c, B>)> for Adjacent {
    fn reduce(
        self,
        left: (Written<'c, A>, Written<'c, B>),
        right: (Written<'c, A>, Written<'c, B>),
    ) -> (Written<'c, A>, Written<'c, B>) {
        (
            Adjacent.reduce(left.0, right.0),
            Adjacent.reduce(left.1, right.1),
        )
    }
}
