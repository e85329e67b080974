//! Dataflow variables: single-assignment cells that readers wait on (Blip, Oz).
//!
//! A [`DataflowVar`] starts unbound. The first [`set`](DataflowVar::set) binds it and
//! wakes every reader; from then on it is an immutable value that any number of threads
//! read by reference without locking. Binding again to an equal value is allowed (a
//! dataflow program may compute the same result twice); binding to a different value is
//! a [`DataflowError::Conflict`], never a panic, and the first value stays.
//!
//! Readers wait without blocking a worker: [`read`](DataflowVar::read) is a future.
//! [`get`](DataflowVar::get) and [`get_timeout`](DataflowVar::get_timeout) are the
//! blocking forms for plain threads (on a worker they keep executing other work).
//!
//! # Representation
//!
//! * `bound: AtomicBool` — false while unbound; set to true exactly once, with `Release`,
//!   after `value` has been written, while holding the `waiters` lock. Never cleared.
//! * `value: UnsafeCell<MaybeUninit<T>>` — initialised exactly when `bound` is true.
//!   Written once (by the binding `set`, under the lock, while `bound` is false); read
//!   only by threads that have observed `bound == true` with `Acquire`.
//! * `waiters: Mutex<Waiters>` — a slab of the wakers of pending [`Read`] futures, each
//!   future owning one slot that it overwrites when re-polled with a different waker and
//!   frees when dropped (the first slot inline, so one pending reader allocates nothing). So the slab never holds more slots than there are live `Read`
//!   futures that were polled before the binding. The binding `set` empties it.
//!
//! # Protocol and why no wake-up is lost
//!
//! *Bind* (`set` on an unbound variable): lock `waiters`; if `bound` is still false, write
//! `value`, store `bound = true` (`Release`) and take every waker out of the slab; unlock;
//! wake them.
//!
//! *Read* (a poll of [`Read`]): if `bound` (`Acquire`), return the value. Otherwise lock
//! `waiters`, check `bound` again, and if it is still false store the waker in the future's
//! slot and return `Pending`.
//!
//! Both critical sections run under the same lock, so one precedes the other. If the
//! reader's comes first, its waker is in the slab when the binder takes the slab, and it
//! is woken. If the binder's comes first, its store to `bound` happened before the
//! reader's lock acquisition, so the reader's second check sees `true` and returns the
//! value instead of waiting. Either way a reader that returned `Pending` is woken.
//!
//! A second `set` racing the first also serialises on the lock: whichever takes it second
//! finds `bound` true and compares its value with the bound one (after unlocking, since
//! `PartialEq` is user code). Unlocked fast paths read `bound` with `Acquire`, which pairs
//! with the binder's `Release` store and makes the write of `value` visible.
//!
//! The `loom_tests` module model-checks a bind racing a reader's registration, two
//! conflicting binds, and a reader dropped while the variable is bound.

use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::loom::{lock, AtomicBool, Mutex, Ordering, UnsafeCell};

/// A single-assignment variable: unbound until the first [`set`](Self::set), then an
/// immutable value that every reader sees.
///
/// `DataflowVar<T>` is `Send` when `T: Send` and `Sync` when `T: Send + Sync`; share it
/// by reference (for example with [`std::thread::scope`]) or in an `Arc`.
///
/// ```
/// use tutti::DataflowVar;
///
/// let answer = DataflowVar::new();
/// std::thread::scope(|s| {
///     s.spawn(|| answer.set(42).unwrap());
///     assert_eq!(*answer.get(), 42); // waits for the binding
/// });
/// ```
///
/// A variable holding a value that is not thread-safe cannot be shared between threads:
///
/// ```compile_fail
/// use std::rc::Rc;
///
/// let v = tutti::DataflowVar::<Rc<u8>>::new();
/// std::thread::scope(|s| {
///     s.spawn(|| v.set(Rc::new(1)));
/// });
/// ```
pub struct DataflowVar<T> {
    /// Whether `value` is initialised; see the module docs.
    bound: AtomicBool,
    /// The value, initialised exactly when `bound` is true.
    value: UnsafeCell<MaybeUninit<T>>,
    /// Wakers of readers waiting for the binding.
    waiters: Mutex<Waiters>,
}

// SAFETY: sharing a `DataflowVar<T>` lets other threads move a `T` in (`set`: `T: Send`),
// and read it by shared reference (`try_get`/`read`/`get`: `T: Sync`). The value is
// written once, under the lock, before `bound` is published with `Release`; readers
// dereference it only after observing `bound` with `Acquire` (or under the lock), so
// there is no data race on it. The other fields are `Sync` themselves.
unsafe impl<T: Send + Sync> Sync for DataflowVar<T> {}

impl<T> DataflowVar<T> {
    /// Creates an unbound variable. `const`, so a dataflow variable can be a `static`.
    ///
    /// ```
    /// use tutti::DataflowVar;
    ///
    /// static CONFIG: DataflowVar<u32> = DataflowVar::new();
    /// assert!(!CONFIG.is_set());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        DataflowVar {
            bound: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            waiters: Mutex::new(Waiters::new()),
        }
    }

    /// Creates an unbound variable (not `const` under loom).
    #[cfg(loom)]
    pub fn new() -> Self {
        DataflowVar {
            bound: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            waiters: Mutex::new(Waiters::new()),
        }
    }

    /// Binds the variable to `value` and wakes every reader.
    ///
    /// If the variable is already bound, an equal `value` is accepted and dropped
    /// (`Ok(())`), and a different one is rejected with [`DataflowError::Conflict`];
    /// the first value stays either way.
    ///
    /// ```
    /// use tutti::{DataflowError, DataflowVar};
    ///
    /// let v = DataflowVar::new();
    /// assert_eq!(v.set("left"), Ok(()));
    /// assert_eq!(v.set("left"), Ok(()));
    /// assert_eq!(v.set("right"), Err(DataflowError::Conflict));
    /// assert_eq!(v.try_get(), Some(&"left"));
    /// ```
    pub fn set(&self, value: T) -> Result<(), DataflowError>
    where
        T: PartialEq,
    {
        let value = match self.bind(value) {
            Ok(()) => return Ok(()),
            Err(value) => value,
        };
        // Compared without the lock held: `PartialEq` is user code.
        if self.bound_value() == &value {
            Ok(())
        } else {
            Err(DataflowError::Conflict)
        }
    }

    /// Binds `value` if the variable is unbound; otherwise gives it back.
    #[inline]
    fn bind(&self, value: T) -> Result<(), T> {
        if self.is_set() {
            Err(value)
        } else {
            self.bind_cold(value)
        }
    }

    /// The locked part of [`bind`](Self::bind).
    #[cold]
    fn bind_cold(&self, value: T) -> Result<(), T> {
        let mut waiters = lock(&self.waiters);
        // `bound` only changes under this lock, so this load cannot miss a binding.
        if self.bound.load(Ordering::Relaxed) {
            return Err(value);
        }
        // SAFETY: `bound` is false and we hold the lock: no other thread writes `value`
        // (writes happen only here, under the lock, while unbound) and none reads it
        // (reads happen only after observing `bound == true`). So we have exclusive
        // access, and the slot is uninitialised, so nothing is overwritten without drop.
        self.value.with_mut(|slot| unsafe { (*slot).write(value) });
        // Release: a reader that sees `true` also sees the write above.
        self.bound.store(true, Ordering::Release);
        let woken = waiters.take_all();
        drop(waiters);
        woken.wake();
        Ok(())
    }

    /// The value, if the variable is bound.
    ///
    /// ```
    /// use tutti::DataflowVar;
    ///
    /// let v = DataflowVar::new();
    /// assert_eq!(v.try_get(), None);
    /// v.set(1.5).unwrap();
    /// assert_eq!(v.try_get(), Some(&1.5));
    /// ```
    pub fn try_get(&self) -> Option<&T> {
        // Acquire pairs with the binder's Release store: the value's write is visible.
        if self.bound.load(Ordering::Acquire) {
            Some(self.bound_value())
        } else {
            None
        }
    }

    /// The value of a variable known to be bound.
    fn bound_value(&self) -> &T {
        debug_assert!(self.bound.load(Ordering::Relaxed));
        // SAFETY: callers have observed `bound == true` with Acquire (or under the lock),
        // so the value is initialised and its write happened before this read. It is
        // never written again nor dropped while `&self` lives, so the shared reference
        // stays valid for the lifetime of `&self`.
        self.value.with(|slot| unsafe { &*(*slot).as_ptr() })
    }

    /// A future that completes with the value once the variable is bound.
    ///
    /// The awaiting task gives its worker back while it waits. Dropping the future before
    /// it completes removes its registration.
    ///
    /// ```
    /// use tutti::DataflowVar;
    ///
    /// let v = DataflowVar::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| v.set(String::from("done")).unwrap());
    ///     let value: &String = tutti::block_on(v.read());
    ///     assert_eq!(value, "done");
    /// });
    /// ```
    pub fn read(&self) -> Read<'_, T> {
        Read {
            var: self,
            slot: None,
        }
    }

    /// Waits for the binding and returns the value: the blocking form of
    /// [`read`](Self::read), for plain threads. On a tutti worker it keeps executing other
    /// work while it waits.
    ///
    /// ```
    /// use tutti::DataflowVar;
    ///
    /// let v = DataflowVar::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| v.set(vec![1, 2, 3]).unwrap());
    ///     assert_eq!(v.get().len(), 3);
    /// });
    /// ```
    pub fn get(&self) -> &T {
        match self.try_get() {
            Some(value) => value,
            None => crate::runtime::block_on(self.read()),
        }
    }

    /// Waits at most `timeout` for the binding; `None` if the variable is still unbound
    /// by then.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tutti::DataflowVar;
    ///
    /// let v: DataflowVar<u8> = DataflowVar::new();
    /// assert_eq!(v.get_timeout(Duration::from_millis(1)), None);
    /// v.set(8).unwrap();
    /// assert_eq!(v.get_timeout(Duration::from_millis(1)), Some(&8));
    /// ```
    pub fn get_timeout(&self, timeout: Duration) -> Option<&T> {
        match self.try_get() {
            Some(value) => Some(value),
            None => crate::runtime::block_on(crate::runtime::timeout(timeout, self.read())).ok(),
        }
    }

    /// Whether the variable is bound.
    ///
    /// ```
    /// use tutti::DataflowVar;
    ///
    /// let v = DataflowVar::new();
    /// assert!(!v.is_set());
    /// v.set(()).unwrap();
    /// assert!(v.is_set());
    /// ```
    pub fn is_set(&self) -> bool {
        self.bound.load(Ordering::Acquire)
    }

    /// Number of `Read` futures registered and waiting.
    #[cfg(all(test, not(loom)))]
    fn waiting(&self) -> usize {
        lock(&self.waiters).len()
    }
}

impl<T> Default for DataflowVar<T> {
    /// An unbound variable, as [`DataflowVar::new`].
    ///
    /// ```
    /// let v: tutti::DataflowVar<i32> = Default::default();
    /// assert!(!v.is_set());
    /// ```
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for DataflowVar<T> {
    fn drop(&mut self) {
        if self.bound.load(Ordering::Acquire) {
            // SAFETY: bound, so initialised; `&mut self` means no reader is left.
            self.value
                .with_mut(|slot| unsafe { (*slot).assume_init_drop() });
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for DataflowVar<T> {
    /// Shows `Some(value)` when bound, `None` when not.
    ///
    /// ```
    /// let v = tutti::DataflowVar::new();
    /// v.set(3).unwrap();
    /// assert_eq!(format!("{v:?}"), "DataflowVar { value: Some(3) }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataflowVar")
            .field("value", &self.try_get())
            .finish()
    }
}

/// Future returned by [`DataflowVar::read`]: completes with a reference to the value once
/// the variable is bound.
///
/// `Read` is `Unpin`, and `Send` when the variable is `Sync`.
///
/// ```
/// use tutti::sync::{DataflowVar, Read};
///
/// let v = DataflowVar::new();
/// v.set(5).unwrap();
/// let read: Read<'_, i32> = v.read();
/// assert_eq!(*tutti::block_on(read), 5);
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Read<'a, T> {
    var: &'a DataflowVar<T>,
    /// This future's slot in `var.waiters`, once registered; cleared when it completes.
    slot: Option<usize>,
}

impl<'a, T> Read<'a, T> {
    /// Registers (or refreshes) the waker, unless the variable got bound meanwhile.
    #[cold]
    fn poll_cold(&mut self, cx: &mut Context<'_>) -> Poll<&'a T> {
        let var = self.var;
        let mut waiters = lock(&var.waiters);
        // Re-check under the lock: the binder stores `bound` under it (module docs).
        if let Some(value) = var.try_get() {
            drop(waiters);
            self.slot = None;
            return Poll::Ready(value);
        }
        match self.slot {
            Some(slot) => waiters.replace(slot, cx.waker()),
            None => self.slot = Some(waiters.insert(cx.waker().clone())),
        }
        drop(waiters);
        crate::diag::node::note(
            || crate::diag::node::Wait {
                on: crate::diag::node::On::Unknown,
                what: crate::diag::node::What::Text("waits for a dataflow variable to be bound"),
            },
            None,
        );
        Poll::Pending
    }
}

impl<'a, T> Future for Read<'a, T> {
    type Output = &'a T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'a T> {
        let this = self.get_mut();
        if let Some(value) = this.var.try_get() {
            // The binder emptied the slab, so our slot (if any) is no longer ours.
            this.slot = None;
            return Poll::Ready(value);
        }
        this.poll_cold(cx)
    }
}

impl<T> Drop for Read<'_, T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            if self.var.is_set() {
                return; // the binder took our waker along with the whole slab
            }
            let mut waiters = lock(&self.var.waiters);
            // Bound since the check above: the slab was emptied and the slot is gone.
            if !self.var.bound.load(Ordering::Relaxed) {
                let stale = waiters.remove(slot);
                drop(waiters);
                drop(stale);
            }
        }
    }
}

impl<T> fmt::Debug for Read<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Read")
            .field("bound", &self.var.is_set())
            .field("registered", &self.slot.is_some())
            .finish()
    }
}

/// The wakers of pending readers: a slab in which each registered [`Read`] owns a slot.
///
/// Slot 0 is kept inline (`first`), so that a variable with one pending reader — the
/// common case, a value handed from one task to another — allocates nothing; slots
/// 1.. live in `rest` (`rest[i]` is slot `i + 1`).
///
/// Invariant: `first_owned` says whether a reader owns slot 0; `free` lists exactly the
/// `None` slots of `rest`. When every slot of `rest` is free both vectors are cleared,
/// so the slab shrinks back to nothing when its readers leave.
struct Waiters {
    first: Option<Waker>,
    first_owned: bool,
    rest: Vec<Option<Waker>>,
    free: Vec<usize>,
}

/// The wakers a binding takes out of the slab, woken after the lock is released.
struct Woken {
    first: Option<Waker>,
    rest: Vec<Option<Waker>>,
}

impl Woken {
    fn wake(self) {
        if let Some(w) = self.first {
            w.wake();
        }
        for w in self.rest.into_iter().flatten() {
            w.wake();
        }
    }
}

impl Waiters {
    const fn new() -> Self {
        Waiters {
            first: None,
            first_owned: false,
            rest: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Stores `waker` in a free slot; returns the slot's index.
    fn insert(&mut self, waker: Waker) -> usize {
        if !self.first_owned {
            self.first_owned = true;
            self.first = Some(waker);
            return 0;
        }
        match self.free.pop() {
            Some(slot) => {
                self.rest[slot - 1] = Some(waker);
                slot
            }
            None => {
                self.rest.push(Some(waker));
                self.rest.len()
            }
        }
    }

    fn entry(&mut self, slot: usize) -> &mut Option<Waker> {
        match slot {
            0 => &mut self.first,
            _ => &mut self.rest[slot - 1],
        }
    }

    /// Replaces the waker in `slot` unless it would wake the same task.
    fn replace(&mut self, slot: usize, waker: &Waker) {
        match self.entry(slot) {
            Some(stored) if stored.will_wake(waker) => {}
            entry => *entry = Some(waker.clone()),
        }
    }

    /// Frees `slot`; returns its waker so the caller can drop it after unlocking.
    fn remove(&mut self, slot: usize) -> Option<Waker> {
        let waker = self.entry(slot).take();
        if slot == 0 {
            self.first_owned = false;
            return waker;
        }
        self.free.push(slot);
        if self.free.len() == self.rest.len() {
            self.rest.clear();
            self.free.clear();
        }
        waker
    }

    /// Empties the slab, returning every waker.
    fn take_all(&mut self) -> Woken {
        self.first_owned = false;
        self.free = Vec::new();
        Woken {
            first: self.first.take(),
            rest: std::mem::take(&mut self.rest),
        }
    }

    /// Number of occupied slots.
    #[cfg(all(test, not(loom)))]
    fn len(&self) -> usize {
        usize::from(self.first_owned) + self.rest.len() - self.free.len()
    }
}

/// Error of [`DataflowVar::set`].
///
/// ```
/// use tutti::{DataflowError, DataflowVar};
///
/// let v = DataflowVar::new();
/// v.set(1).unwrap();
/// let err = v.set(2).unwrap_err();
/// assert_eq!(err, DataflowError::Conflict);
/// assert_eq!(err.to_string(), "dataflow variable already bound to a different value");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataflowError {
    /// The variable was already bound to a value not equal to the one given; the first
    /// value stays.
    Conflict,
}

impl fmt::Display for DataflowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataflowError::Conflict => {
                f.write_str("dataflow variable already bound to a different value")
            }
        }
    }
}

impl std::error::Error for DataflowError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;
    use std::time::Instant;

    use crate::test_util::park_on;

    use crate::test_util::counting_waker as counter;

    fn poll_read<'a, T>(read: &mut Read<'a, T>, waker: &Waker) -> Poll<&'a T> {
        Pin::new(read).poll(&mut Context::from_waker(waker))
    }

    /// Readers used in the concurrent tests.
    const READERS: usize = 16;

    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}
    fn assert_unpin<T: Unpin>() {}

    #[test]
    fn auto_traits() {
        assert_send_sync::<DataflowVar<String>>();
        assert_send::<Read<'static, String>>();
        assert_unpin::<Read<'static, std::marker::PhantomPinned>>();
        assert_send_sync::<DataflowError>();
    }

    #[test]
    fn set_then_get() {
        let v = DataflowVar::new();
        assert!(!v.is_set());
        assert_eq!(v.try_get(), None);
        assert_eq!(v.set(10), Ok(()));
        assert!(v.is_set());
        assert_eq!(v.try_get(), Some(&10));
        assert_eq!(*v.get(), 10);
        assert_eq!(*park_on(v.read()), 10);
        assert_eq!(v.get_timeout(Duration::ZERO), Some(&10));
    }

    #[test]
    fn equal_reset_is_ok_and_drops_the_new_value() {
        let first = Arc::new(String::from("x"));
        let second = Arc::new(String::from("x"));
        let v = DataflowVar::new();
        v.set(first.clone()).unwrap();
        assert_eq!(v.set(second.clone()), Ok(()));
        assert!(
            Arc::ptr_eq(v.try_get().unwrap(), &first),
            "the first value stays"
        );
        assert_eq!(Arc::strong_count(&second), 1, "the equal value was dropped");
    }

    #[test]
    fn conflicting_reset_is_an_error_and_keeps_the_first_value() {
        let v = DataflowVar::new();
        v.set(1).unwrap();
        assert_eq!(v.set(2), Err(DataflowError::Conflict));
        assert_eq!(v.try_get(), Some(&1));
        assert_eq!(
            DataflowError::Conflict.to_string(),
            "dataflow variable already bound to a different value"
        );
    }

    #[test]
    fn concurrent_conflicting_sets_bind_exactly_one() {
        for _ in 0..50 {
            let v = DataflowVar::new();
            let results: Vec<_> = thread::scope(|s| {
                let v = &v;
                let handles: Vec<_> = (0..4).map(|i| s.spawn(move || (i, v.set(i)))).collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let winners: Vec<_> = results.iter().filter(|(_, r)| r.is_ok()).collect();
            assert_eq!(winners.len(), 1);
            assert_eq!(v.try_get(), Some(&winners[0].0));
        }
    }

    #[test]
    fn one_set_wakes_many_readers() {
        let v = DataflowVar::new();
        thread::scope(|s| {
            let readers: Vec<_> = (0..READERS)
                .map(|_| s.spawn(|| *park_on(v.read())))
                .collect();
            // Wait until every reader has registered, so the set really has to wake them.
            while v.waiting() < READERS {
                thread::yield_now();
            }
            v.set(99u64).unwrap();
            for r in readers {
                assert_eq!(r.join().unwrap(), 99);
            }
        });
        assert_eq!(v.waiting(), 0);
    }

    #[test]
    fn blocking_get_on_many_threads() {
        let v: DataflowVar<String> = DataflowVar::new();
        thread::scope(|s| {
            let readers: Vec<_> = (0..READERS).map(|_| s.spawn(|| v.get().clone())).collect();
            v.set(String::from("bound")).unwrap();
            for r in readers {
                assert_eq!(r.join().unwrap(), "bound");
            }
        });
    }

    #[test]
    fn read_future_polled_on_one_thread_completes_on_another() {
        let v = Arc::new(DataflowVar::new());
        let mut read = v.read();
        let (c, waker) = counter();
        assert!(poll_read(&mut read, &waker).is_pending());
        thread::scope(|s| {
            // Finish the future on another thread while a third one binds the variable.
            let reader = s.spawn(move || *park_on(read));
            s.spawn(|| v.set(4).unwrap());
            assert_eq!(reader.join().unwrap(), 4);
        });
        // The first waker may or may not have been the one registered at binding time.
        assert!(c.0.load(Ordering::SeqCst) <= 1);
    }

    #[test]
    fn repoll_replaces_the_waker_and_drop_frees_the_slot() {
        let v = DataflowVar::new();
        let (first, w1) = counter();
        let (second, w2) = counter();
        let mut read = v.read();
        assert!(poll_read(&mut read, &w1).is_pending());
        assert!(poll_read(&mut read, &w2).is_pending());
        assert!(poll_read(&mut read, &w2).is_pending());
        assert_eq!(v.waiting(), 1, "re-polling reuses the slot");
        v.set(()).unwrap();
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        assert!(poll_read(&mut read, &w2).is_ready());

        // Dropped readers leave nothing behind, however many come and go.
        let v: DataflowVar<u8> = DataflowVar::new();
        for round in 0..100 {
            let mut reads: Vec<_> = (0..=round % 7).map(|_| v.read()).collect();
            for r in &mut reads {
                assert!(poll_read(r, &w1).is_pending());
            }
            assert_eq!(v.waiting(), reads.len());
            // Drop in an interleaved order to exercise slot reuse.
            let odd: Vec<_> = reads
                .drain(..)
                .enumerate()
                .filter(|(i, _)| i % 2 == 1)
                .collect();
            drop(odd);
            assert_eq!(v.waiting(), 0);
            let waiters = lock(&v.waiters);
            assert!(!waiters.first_owned && waiters.rest.is_empty() && waiters.free.is_empty());
        }
        let mut a = v.read();
        let mut b = v.read();
        assert!(poll_read(&mut a, &w1).is_pending());
        assert!(poll_read(&mut b, &w1).is_pending());
        drop(a);
        let mut c = v.read();
        assert!(poll_read(&mut c, &w1).is_pending());
        assert_eq!(
            lock(&v.waiters).rest.len(),
            1,
            "the slot a freed (the inline one) is reused by c"
        );
        drop((b, c));
        assert_eq!(v.waiting(), 0);
    }

    #[test]
    fn dropping_a_read_after_the_binding() {
        let v = DataflowVar::new();
        let mut read = v.read();
        let (c, waker) = counter();
        assert!(poll_read(&mut read, &waker).is_pending());
        v.set(1).unwrap();
        assert_eq!(c.0.load(Ordering::SeqCst), 1);
        drop(read); // must not touch the emptied slab
        assert_eq!(v.waiting(), 0);
    }

    #[test]
    fn get_timeout_expires_when_unbound() {
        let v: DataflowVar<i32> = DataflowVar::new();
        let d = Duration::from_millis(10);
        let start = Instant::now();
        assert_eq!(v.get_timeout(d), None);
        assert!(start.elapsed() >= d);
        assert_eq!(v.waiting(), 0, "the timed-out reader deregistered");
        thread::scope(|s| {
            s.spawn(|| v.set(3).unwrap());
            assert_eq!(v.get_timeout(Duration::from_secs(3600)), Some(&3));
        });
    }

    #[test]
    fn the_value_is_dropped_with_the_variable() {
        let value = Arc::new(());
        let v = DataflowVar::new();
        v.set(value.clone()).unwrap();
        assert_eq!(Arc::strong_count(&value), 2);
        drop(v);
        assert_eq!(Arc::strong_count(&value), 1);
        let unbound: DataflowVar<Arc<()>> = DataflowVar::default();
        drop(unbound);
    }

    #[test]
    fn static_variable() {
        static V: DataflowVar<u32> = DataflowVar::new();
        thread::scope(|s| {
            s.spawn(|| V.set(5).unwrap());
            assert_eq!(*V.get(), 5);
        });
        assert_eq!(format!("{V:?}"), "DataflowVar { value: Some(5) }");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::{thread, Arc};

    /// A waker that records that it was woken, in a loom-visible atomic.
    use crate::test_util::loom::flag;

    /// No lost wake-up: a reader that registers while another thread binds is either
    /// handed the value or woken, and after waking it finds the value.
    #[test]
    fn set_races_reader_registration() {
        loom::model(|| {
            let v = Arc::new(DataflowVar::new());
            let setter = {
                let v = v.clone();
                thread::spawn(move || v.set(7).unwrap())
            };
            let (woken, waker) = flag();
            let mut cx = Context::from_waker(&waker);
            let mut read = v.read();
            match Pin::new(&mut read).poll(&mut cx) {
                Poll::Ready(value) => assert_eq!(*value, 7),
                Poll::Pending => {
                    setter.join().unwrap();
                    assert!(woken.0.load(Ordering::Acquire), "lost wake-up");
                    assert_eq!(Pin::new(&mut read).poll(&mut cx), Poll::Ready(&7));
                    return;
                }
            }
            setter.join().unwrap();
        });
    }

    /// A reader on another thread sees the value through the lock-free fast path without
    /// a data race (loom checks the accesses to the value cell).
    #[test]
    fn fast_path_reader_sees_the_written_value() {
        loom::model(|| {
            let v = Arc::new(DataflowVar::new());
            let reader = {
                let v = v.clone();
                thread::spawn(move || v.try_get().cloned())
            };
            v.set(String::from("v")).unwrap();
            if let Some(s) = reader.join().unwrap() {
                assert_eq!(s, "v");
            }
        });
    }

    /// Two different values race: exactly one binds, the other gets `Conflict`, and the
    /// bound value is the winner's.
    #[test]
    fn conflicting_sets_race() {
        loom::model(|| {
            let v = Arc::new(DataflowVar::new());
            let other = {
                let v = v.clone();
                thread::spawn(move || v.set(2))
            };
            let mine = v.set(1);
            let theirs = other.join().unwrap();
            match (mine, theirs) {
                (Ok(()), Err(DataflowError::Conflict)) => assert_eq!(v.try_get(), Some(&1)),
                (Err(DataflowError::Conflict), Ok(())) => assert_eq!(v.try_get(), Some(&2)),
                other => panic!("both or neither bound: {other:?}"),
            }
        });
    }

    /// A registered reader dropped while another thread binds: the slab stays consistent
    /// and ends up empty either way.
    #[test]
    fn reader_dropped_while_binding() {
        loom::model(|| {
            let v = Arc::new(DataflowVar::new());
            let (_woken, waker) = flag();
            let mut read = v.read();
            assert!(Pin::new(&mut read)
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
            let setter = {
                let v = v.clone();
                thread::spawn(move || v.set(1).unwrap())
            };
            drop(read);
            setter.join().unwrap();
            let waiters = lock(&v.waiters);
            assert!(!waiters.first_owned && waiters.rest.is_empty() && waiters.free.is_empty());
        });
    }
}
