//! The one place where tutti takes its atomics, locks and thread primitives.
//!
//! Every hand-written protocol in the crate (sleep/wake, latches, dataflow
//! variables, …) imports from here instead of `std`, so that building with
//! `RUSTFLAGS="--cfg loom"` swaps in [loom]'s model-checked versions and the
//! loom tests explore every interleaving of the protocol.
//!
//! [loom]: https://docs.rs/loom

#[cfg(loom)]
#[allow(unused_imports)] // `Arc` is for the loom models' own shared state
pub(crate) use loom::{
    cell::UnsafeCell,
    sync::{
        atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering},
        Arc, Condvar, Mutex, MutexGuard,
    },
    thread,
};

#[cfg(not(loom))]
pub(crate) use std::{
    sync::{
        atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering},
        Condvar, Mutex, MutexGuard,
    },
    thread,
};

/// `UnsafeCell` with loom's closure-based access API, so that code written
/// against it compiles unchanged with and without loom.
#[cfg(not(loom))]
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(data: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(data))
    }

    /// Runs `f` with a shared raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a mutable raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Locks a mutex, treating poisoning as recoverable: tutti never leaves the
/// data behind its own locks in a broken state when user code panics, because
/// user code never runs while one of these locks is held.
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A spin-loop hint that loom turns into a yield point.
#[inline(always)]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
