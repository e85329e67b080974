//! The consumers that reduce: each piece is folded by a sequential [`Iterator`] method
//! (`for_each`, `fold`, `sum`, `count`, `min_by_key`, …), and adjacent pieces' results
//! are combined left before right, so the order-sensitive ones (`min` keeps the first
//! of equal items, `max` the last) agree with the sequential iterator.

use std::cmp::Ordering;
use std::iter::{Product, Sum};
use std::marker::PhantomData;

use super::plumbing::{Consumer, Reducer};

/// What a reducing consumer does with one piece and with two adjacent results.
pub(crate) trait Strategy<T>: Sync {
    type Result: Send;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Self::Result;
    fn combine(&self, left: Self::Result, right: Self::Result) -> Self::Result;
}

/// The consumer of a [`Strategy`]: it keeps no state of its own, so splitting it
/// copies a reference.
pub(crate) struct Leafwise<'s, S> {
    strategy: &'s S,
}

impl<'s, S> Leafwise<'s, S> {
    pub(crate) fn new(strategy: &'s S) -> Self {
        Leafwise { strategy }
    }
}

impl<S> Clone for Leafwise<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for Leafwise<'_, S> {}

impl<'s, T, S: Strategy<T>> Consumer<T> for Leafwise<'s, S> {
    type Result = S::Result;
    type Reducer = Combine<'s, S, T>;

    fn split_at(self, _index: usize) -> (Self, Self, Self::Reducer) {
        let combine = Combine {
            strategy: self.strategy,
            item: PhantomData,
        };
        (self, self, combine)
    }

    #[inline]
    fn consume<I: Iterator<Item = T>>(self, items: I) -> S::Result {
        self.strategy.leaf(items)
    }
}

/// The reducer of a [`Leafwise`] consumer.
pub(crate) struct Combine<'s, S, T> {
    strategy: &'s S,
    item: PhantomData<fn(T)>,
}

impl<T, S: Strategy<T>> Reducer<S::Result> for Combine<'_, S, T> {
    fn reduce(self, left: S::Result, right: S::Result) -> S::Result {
        self.strategy.combine(left, right)
    }
}

/// `for_each`.
pub(crate) struct ForEach<F>(pub(crate) F);

impl<T, F: Fn(T) + Sync> Strategy<T> for ForEach<F> {
    type Result = ();
    #[inline]
    fn leaf<I: Iterator<Item = T>>(&self, items: I) {
        items.for_each(&self.0);
    }
    fn combine(&self, (): (), (): ()) {}
}

/// `reduce(identity, op)`.
pub(crate) struct Reduce<ID, OP> {
    pub(crate) identity: ID,
    pub(crate) op: OP,
}

impl<T, ID, OP> Strategy<T> for Reduce<ID, OP>
where
    T: Send,
    ID: Fn() -> T + Sync,
    OP: Fn(T, T) -> T + Sync,
{
    type Result = T;
    #[inline]
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> T {
        items.fold((self.identity)(), &self.op)
    }
    fn combine(&self, left: T, right: T) -> T {
        (self.op)(left, right)
    }
}

/// `sum::<S>()`.
pub(crate) struct Summed<S>(PhantomData<fn() -> S>);

impl<S> Summed<S> {
    pub(crate) fn new() -> Self {
        Summed(PhantomData)
    }
}

impl<T, S: Send + Sum<T> + Sum<S>> Strategy<T> for Summed<S> {
    type Result = S;
    #[inline]
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> S {
        items.sum()
    }
    fn combine(&self, left: S, right: S) -> S {
        [left, right].into_iter().sum()
    }
}

/// `product::<P>()`.
pub(crate) struct Multiplied<P>(PhantomData<fn() -> P>);

impl<P> Multiplied<P> {
    pub(crate) fn new() -> Self {
        Multiplied(PhantomData)
    }
}

impl<T, P: Send + Product<T> + Product<P>> Strategy<T> for Multiplied<P> {
    type Result = P;
    #[inline]
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> P {
        items.product()
    }
    fn combine(&self, left: P, right: P) -> P {
        [left, right].into_iter().product()
    }
}

/// `count()`.
pub(crate) struct Count;

impl<T> Strategy<T> for Count {
    type Result = usize;
    #[inline]
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> usize {
        items.count()
    }
    fn combine(&self, left: usize, right: usize) -> usize {
        left + right
    }
}

/// Picks one of two items: how `min`, `max` and `reduce_with` keep one item per piece.
pub(crate) trait Choose<T>: Sync {
    /// The pick of one piece.
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T>;
    /// The pick between the left piece's and the right piece's.
    fn choose(&self, left: T, right: T) -> T;
}

/// The [`Strategy`] of a [`Choose`].
pub(crate) struct Pick<C>(pub(crate) C);

impl<T: Send, C: Choose<T>> Strategy<T> for Pick<C> {
    type Result = Option<T>;
    #[inline]
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T> {
        self.0.leaf(items)
    }
    fn combine(&self, left: Option<T>, right: Option<T>) -> Option<T> {
        match (left, right) {
            (Some(l), Some(r)) => Some(self.0.choose(l, r)),
            (l, None) => l,
            (None, r) => r,
        }
    }
}

/// `reduce_with(op)`.
pub(crate) struct With<OP>(pub(crate) OP);

impl<T, OP: Fn(T, T) -> T + Sync> Choose<T> for With<OP> {
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T> {
        items.reduce(&self.0)
    }
    fn choose(&self, left: T, right: T) -> T {
        (self.0)(left, right)
    }
}

/// `min_by(compare)`, and `min()` by `Ord::cmp`: the first of equal items.
pub(crate) struct MinBy<F>(pub(crate) F);

impl<T, F: Fn(&T, &T) -> Ordering + Sync> Choose<T> for MinBy<F> {
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T> {
        items.min_by(&self.0)
    }
    fn choose(&self, left: T, right: T) -> T {
        if (self.0)(&right, &left) == Ordering::Less {
            right
        } else {
            left
        }
    }
}

/// `max_by(compare)`, and `max()` by `Ord::cmp`: the last of equal items.
pub(crate) struct MaxBy<F>(pub(crate) F);

impl<T, F: Fn(&T, &T) -> Ordering + Sync> Choose<T> for MaxBy<F> {
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T> {
        items.max_by(&self.0)
    }
    fn choose(&self, left: T, right: T) -> T {
        if (self.0)(&right, &left) == Ordering::Less {
            left
        } else {
            right
        }
    }
}

/// `min_by_key(key)`.
pub(crate) struct MinByKey<F>(pub(crate) F);

impl<T, K: Ord, F: Fn(&T) -> K + Sync> Choose<T> for MinByKey<F> {
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T> {
        items.min_by_key(&self.0)
    }
    fn choose(&self, left: T, right: T) -> T {
        if (self.0)(&right) < (self.0)(&left) {
            right
        } else {
            left
        }
    }
}

/// `max_by_key(key)`.
pub(crate) struct MaxByKey<F>(pub(crate) F);

impl<T, K: Ord, F: Fn(&T) -> K + Sync> Choose<T> for MaxByKey<F> {
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T> {
        items.max_by_key(&self.0)
    }
    fn choose(&self, left: T, right: T) -> T {
        if (self.0)(&right) < (self.0)(&left) {
            left
        } else {
            right
        }
    }
}
