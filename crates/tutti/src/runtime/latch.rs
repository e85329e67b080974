//! Latches: one-shot signals that a waiting thread watches while it keeps
//! executing other work.
//!
//! # The core latch protocol
//!
//! [`CoreLatch`] is one atomic word with three states:
//!
//! | state      | meaning                                                     |
//! |------------|-------------------------------------------------------------|
//! | `UNSET`    | not set; the owner may be running other work               |
//! | `SLEEPING` | not set; the owner is (about to be) parked on its condvar  |
//! | `SET`      | set; final until the owner calls `reset`                   |
//!
//! Only the owner moves `UNSET → SLEEPING` (and back), and it does so while
//! holding its worker's sleep mutex (see `sleep.rs`). A setter swaps in `SET`;
//! if it replaced `SLEEPING` it must wake the owner, which it does by taking
//! the owner's sleep mutex. Because the owner holds that mutex from before
//! `UNSET → SLEEPING` until it waits on the condvar, the setter's wake-up
//! cannot slip in between the owner's last check and its wait: no lost wake-up.
//!
//! After `set` has stored `SET` the owner may return and free the latch, so a
//! setter must copy everything it needs (registry, worker index) *before* the
//! swap and never touch the latch afterwards.

use std::sync::Arc;

use super::registry::Registry;
use crate::loom::{AtomicUsize, Condvar, Mutex, Ordering};

const UNSET: usize = 0;
const SLEEPING: usize = 1;
const SET: usize = 2;

/// Something a job can signal when it finishes.
pub(crate) trait Latch {
    /// Sets the latch.
    ///
    /// # Safety
    /// `this` may be freed by its owner as soon as the latch reads as set, so
    /// implementations must not touch `*this` after the releasing store.
    unsafe fn set(this: *const Self);
}

/// The atomic state shared by every worker-side latch.
#[derive(Debug)]
pub(crate) struct CoreLatch {
    state: AtomicUsize,
}

impl CoreLatch {
    pub(crate) fn new() -> Self {
        CoreLatch {
            state: AtomicUsize::new(UNSET),
        }
    }

    /// True once the latch is set. `Acquire` pairs with the `AcqRel` swap in
    /// [`CoreLatch::set`], so the job's result written before `set` is visible.
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        self.state.load(Ordering::Acquire) == SET
    }

    /// Owner only, under its sleep mutex: announce that it is going to park.
    /// Fails if the latch was set meanwhile.
    #[inline]
    pub(crate) fn fall_asleep(&self) -> bool {
        self.state
            .compare_exchange(UNSET, SLEEPING, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// Owner only: back from parking (or gave up parking). Leaves `SET` alone.
    #[inline]
    pub(crate) fn wake_up(&self) {
        let _ = self
            .state
            .compare_exchange(SLEEPING, UNSET, Ordering::SeqCst, Ordering::Relaxed);
    }

    /// Owner only: make a set latch reusable (used by `block_on`, whose waker
    /// fires once per poll).
    #[inline]
    pub(crate) fn reset(&self) {
        self.state.store(UNSET, Ordering::Relaxed);
    }

    /// Sets the latch; returns true if the owner was parked and must be woken.
    /// `AcqRel`: release publishes the job's result to the owner's `probe`;
    /// acquire orders the read of `SLEEPING` after the owner's announcement.
    ///
    /// # Safety
    /// `this` must be valid on entry; it may dangle once this returns.
    #[inline]
    pub(crate) unsafe fn set(this: *const Self) -> bool {
        // SAFETY: valid on entry per the contract.
        let old = unsafe { (*this).state.swap(SET, Ordering::AcqRel) };
        old == SLEEPING
    }
}

/// A latch whose owner is a worker thread that keeps executing jobs while it
/// waits (the second half of a `join`, a worker's `block_on`).
pub(crate) struct SpinLatch<'r> {
    pub(crate) core: CoreLatch,
    registry: &'r Arc<Registry>,
    target: usize,
    /// Set when the job may be executed by a thread of another registry, in
    /// which case the setter must keep the owner's registry alive itself.
    cross: bool,
}

impl<'r> SpinLatch<'r> {
    pub(crate) fn new(registry: &'r Arc<Registry>, target: usize) -> Self {
        SpinLatch {
            core: CoreLatch::new(),
            registry,
            target,
            cross: false,
        }
    }

    pub(crate) fn cross(registry: &'r Arc<Registry>, target: usize) -> Self {
        SpinLatch {
            cross: true,
            ..SpinLatch::new(registry, target)
        }
    }

    #[inline]
    pub(crate) fn probe(&self) -> bool {
        self.core.probe()
    }
}

impl Latch for SpinLatch<'_> {
    #[inline]
    unsafe fn set(this: *const Self) {
        // SAFETY: `this` is valid until the swap inside `CoreLatch::set`; we
        // copy the registry and target out before it.
        let (target, cross) = unsafe { ((*this).target, (*this).cross) };
        // A cross-registry setter is not a worker of the owner's registry, so
        // nothing else guarantees the registry outlives the owner's frame.
        // SAFETY: as above.
        let keep_alive = cross.then(|| Arc::clone(unsafe { (*this).registry }));
        // SAFETY: as above.
        let registry: *const Registry = unsafe { &**(*this).registry };
        // SAFETY: `this` valid on entry.
        if unsafe { CoreLatch::set(&(*this).core) } {
            // SAFETY: the registry is alive: either the setter is one of its
            // workers (which hold an `Arc` to it) or `keep_alive` holds it.
            unsafe { (*registry).sleep.wake_specific_thread(target) };
        }
        drop(keep_alive);
    }
}

/// A latch for threads outside the runtime: they block on a condvar.
#[derive(Debug, Default)]
pub(crate) struct LockLatch {
    set: Mutex<bool>,
    cond: Condvar,
}

impl LockLatch {
    pub(crate) fn new() -> Self {
        LockLatch {
            set: Mutex::new(false),
            cond: Condvar::new(),
        }
    }

    /// Blocks until set, then resets for reuse.
    pub(crate) fn wait_and_reset(&self) {
        let mut guard = crate::loom::lock(&self.set);
        while !*guard {
            guard = match self.cond.wait(guard) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
        *guard = false;
    }
}

impl Latch for LockLatch {
    unsafe fn set(this: *const Self) {
        // SAFETY: valid on entry; the owner cannot return before it has taken
        // the mutex we hold here, so `*this` stays valid until we unlock, and
        // `notify_all` happens before the guard is dropped.
        let this = unsafe { &*this };
        let mut guard = crate::loom::lock(&this.set);
        *guard = true;
        this.cond.notify_all();
        drop(guard);
    }
}

/// Counts outstanding jobs of a `scope`; the owner worker waits until zero.
pub(crate) struct CountLatch {
    pub(crate) core: CoreLatch,
    counter: AtomicUsize,
    registry: Arc<Registry>,
    owner: usize,
}

impl CountLatch {
    /// Starts at one: the scope body itself counts as a job.
    pub(crate) fn new(registry: Arc<Registry>, owner: usize) -> Self {
        CountLatch {
            core: CoreLatch::new(),
            counter: AtomicUsize::new(1),
            registry,
            owner,
        }
    }

    /// One more job is outstanding. `Relaxed`: the increment happens before
    /// the job is published (the push is a release) and before our own
    /// decrement, so the counter cannot reach zero early.
    #[inline]
    pub(crate) fn increment(&self) {
        self.counter.fetch_add(1, Ordering::Relaxed);
    }

    /// One job finished; the last one sets the latch and wakes the owner.
    ///
    /// # Safety
    /// `this` must be valid on entry and may be freed once the count hits zero.
    pub(crate) unsafe fn decrement(this: *const Self) {
        // SAFETY: valid on entry.
        let me = unsafe { &*this };
        if me.counter.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Keep the registry alive past the point where the owner may free
            // the latch.
            let registry = Arc::clone(&me.registry);
            let owner = me.owner;
            // SAFETY: valid until the swap completes.
            if unsafe { CoreLatch::set(&me.core) } {
                registry.sleep.wake_specific_thread(owner);
            }
        }
    }
}

impl<L: Latch> Latch for &L {
    #[inline]
    unsafe fn set(this: *const Self) {
        // SAFETY: `*this` is a valid reference on entry; the referent's own
        // `set` upholds the contract from there.
        unsafe { L::set(*this) }
    }
}
