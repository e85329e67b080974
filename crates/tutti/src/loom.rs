//! The one place where tutti takes its atomics, locks and thread primitives.
//!
//! Every hand-written protocol in the crate (sleep/wake, latches, dataflow
//! variables, …) imports from here instead of `std`, so that building with
//! `RUSTFLAGS="--cfg loom"` swaps in [loom]'s model-checked versions and the
//! loom tests explore every interleaving of the protocol.
//!
//! The rule is kept by the compiler: `crates/tutti/clippy.toml` disallows
//! `std`'s atomic types, `Mutex`, `RwLock` and `Condvar`, atomic fences and
//! `std::hint::spin_loop` everywhere in the crate but this file, and CI runs
//! clippy with `-D warnings`. What cannot be a loom type — a process-wide
//! `static` (loom's constructors are not `const`) outside every modelled
//! protocol — takes [`unmodelled`]'s types, which say so at the use site. A
//! static that a protocol under test uses is a `loom::lazy_static!` under
//! loom instead, so each model execution gets a fresh one.
//!
//! [loom]: https://docs.rs/loom
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[cfg(loom)]
#[allow(unused_imports)] // `Arc` is for the loom models' own shared state
pub(crate) use loom::{
    cell::UnsafeCell,
    sync::{
        atomic::{
            fence, AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU16, AtomicU32, AtomicU64,
            AtomicU8, AtomicUsize, Ordering,
        },
        Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    },
    thread,
};

// Without loom: `std`'s, as aliases (not re-exports), so that clippy's
// `disallowed-types`, which sees through a re-export but not an alias, flags
// only the `std` paths written outside this file.
#[cfg(not(loom))]
pub(crate) use std::{sync::atomic::Ordering, thread};

#[cfg(not(loom))]
#[allow(dead_code)] // the shim offers the whole set; not every type is used
mod std_types {
    pub(crate) type AtomicBool = std::sync::atomic::AtomicBool;
    pub(crate) type AtomicI32 = std::sync::atomic::AtomicI32;
    pub(crate) type AtomicI64 = std::sync::atomic::AtomicI64;
    pub(crate) type AtomicPtr<T> = std::sync::atomic::AtomicPtr<T>;
    pub(crate) type AtomicU16 = std::sync::atomic::AtomicU16;
    pub(crate) type AtomicU32 = std::sync::atomic::AtomicU32;
    pub(crate) type AtomicU64 = std::sync::atomic::AtomicU64;
    pub(crate) type AtomicU8 = std::sync::atomic::AtomicU8;
    pub(crate) type AtomicUsize = std::sync::atomic::AtomicUsize;
    pub(crate) type Condvar = std::sync::Condvar;
    pub(crate) type Mutex<T> = std::sync::Mutex<T>;
    pub(crate) type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;
    pub(crate) type RwLock<T> = std::sync::RwLock<T>;
    pub(crate) type RwLockReadGuard<'a, T> = std::sync::RwLockReadGuard<'a, T>;
    pub(crate) type RwLockWriteGuard<'a, T> = std::sync::RwLockWriteGuard<'a, T>;
}

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std_types::*;

/// A memory fence (`std`'s, or loom's under loom).
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn fence(order: Ordering) {
    std::sync::atomic::fence(order)
}

/// The atomics and locks of process-wide statics that no loom model
/// exercises: counters for fresh ids, process-wide tables and switches of
/// the diagnosis and the trace. They are `std`'s with and without loom (a
/// loom type cannot be built in a `static`); naming them through this module
/// says, where they are used, that loom does not explore them.
#[allow(dead_code)] // the set is whole; not every type has a static
pub(crate) mod unmodelled {
    /// `std`'s, under loom too.
    pub(crate) type AtomicBool = std::sync::atomic::AtomicBool;
    /// `std`'s, under loom too.
    pub(crate) type AtomicI32 = std::sync::atomic::AtomicI32;
    /// `std`'s, under loom too.
    pub(crate) type AtomicU8 = std::sync::atomic::AtomicU8;
    /// `std`'s, under loom too.
    pub(crate) type AtomicU64 = std::sync::atomic::AtomicU64;
    /// `std`'s, under loom too.
    pub(crate) type AtomicUsize = std::sync::atomic::AtomicUsize;
    /// `std`'s, under loom too.
    pub(crate) type Mutex<T> = std::sync::Mutex<T>;
    /// `std`'s, under loom too.
    pub(crate) type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;
    /// `std`'s, under loom too.
    pub(crate) type RwLock<T> = std::sync::RwLock<T>;
}

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

/// A mutex whose poisoning tutti treats as recoverable: tutti never leaves
/// the data behind its own locks in a broken state when user code panics,
/// because user code never runs while one of these locks is held. The shim's
/// [`Mutex`], and under loom also the [`unmodelled`] one.
pub(crate) trait Lock {
    /// What holding the lock gives.
    type Guard<'a>
    where
        Self: 'a;

    /// Locks, taking the data of a poisoned lock as it is.
    fn lock_anyway(&self) -> Self::Guard<'_>;
}

impl<T> Lock for Mutex<T> {
    type Guard<'a>
        = MutexGuard<'a, T>
    where
        T: 'a;

    #[inline]
    fn lock_anyway(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(loom)]
impl<T> Lock for unmodelled::Mutex<T> {
    type Guard<'a>
        = unmodelled::MutexGuard<'a, T>
    where
        T: 'a;

    #[inline]
    fn lock_anyway(&self) -> unmodelled::MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Locks `m`, treating poisoning as recoverable (see [`Lock`]): the one
/// poison-tolerant lock of the crate.
#[inline]
pub(crate) fn lock<L: Lock>(m: &L) -> L::Guard<'_> {
    m.lock_anyway()
}

/// A spin-loop hint that loom turns into a yield point.
#[inline(always)]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
