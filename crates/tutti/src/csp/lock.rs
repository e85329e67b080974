//! The channel lock: a spin lock with exponential back-off that yields the thread once
//! spinning stops paying off.
//!
//! Channel critical sections are a few dozen instructions and never run user code (values
//! are dropped and wakers woken after unlocking), so an uncontended lock/unlock pair is
//! the cost that matters: one compare-and-swap and one plain `Release` store, where a
//! futex mutex pays two read-modify-writes. Under contention a waiter spins `2^k` hints
//! for growing `k`, then calls `yield_now`, so a preempted holder gets the core back.
//!
//! # `Lock::locked` (one `bool`)
//!
//! `false` = free; `true` = held. Set by the `Acquire` compare-and-swap that takes the
//! lock; cleared by the holder's `Release` store in `LockGuard::drop`. The pair makes each
//! critical section happen-before the next one.
//!
//! Under `--cfg loom` the channel uses loom's `Mutex` instead (its models stay small);
//! this lock has its own model in `loom_tests`.

use std::ops::{Deref, DerefMut};

use crate::loom::{AtomicBool, Ordering, UnsafeCell};

/// Spin steps with exponential back-off before the waiter starts yielding.
const SPIN_LIMIT: u32 = 6;

/// A spin lock around a `T`.
#[cfg_attr(loom, allow(dead_code))] // under loom the channel uses loom's `Mutex`
pub(crate) struct Lock<T> {
    /// See the module docs.
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time (the guard), so
// sharing it only requires that `T` may move between threads.
unsafe impl<T: Send> Sync for Lock<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Lock<T> {}

impl<T> Lock<T> {
    pub(crate) fn new(value: T) -> Self {
        Lock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock.
    #[inline]
    pub(crate) fn lock(&self) -> LockGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        LockGuard { lock: self }
    }

    #[cold]
    fn lock_contended(&self) {
        let mut step = 0;
        loop {
            if step < SPIN_LIMIT {
                for _ in 0..1u32 << step {
                    crate::loom::spin_hint();
                }
                step += 1;
            } else {
                crate::loom::thread::yield_now();
            }
            // Test before test-and-set: spin on a shared read, not on the RMW.
            if !self.locked.load(Ordering::Relaxed)
                && self
                    .locked
                    .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
        }
    }
}

/// Access to a locked `T`; unlocks when dropped.
pub(crate) struct LockGuard<'a, T> {
    lock: &'a Lock<T>,
}

impl<T> Deref for LockGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock: no other access to `value` exists.
        self.lock.value.with(|p| unsafe { &*p })
    }
}

impl<T> DerefMut for LockGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        self.lock.value.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T> Drop for LockGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::Lock;
    use crate::loom::thread;
    use loom::sync::Arc;

    /// Two threads increment a counter under the lock: no increment is lost, and loom's
    /// checked `UnsafeCell` sees no concurrent access to the value.
    #[test]
    fn mutual_exclusion() {
        loom::model(|| {
            let lock = Arc::new(Lock::new(0u32));
            let other = {
                let lock = lock.clone();
                thread::spawn(move || *lock.lock() += 1)
            };
            *lock.lock() += 1;
            other.join().unwrap();
            assert_eq!(*lock.lock(), 2);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Lock;

    #[test]
    fn contended_increments_are_not_lost() {
        let lock = Lock::new(0u64);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        *lock.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*lock.lock(), 40_000);
    }
}
