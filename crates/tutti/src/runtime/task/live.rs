//! The live tasks of one runtime: an intrusive doubly linked list per shard, through the
//! two link words of every task header.
//!
//! A task is *live* from its spawn until its future is gone (completed, or dropped by a
//! cancellation). The list serves two purposes:
//!
//! * **Shutdown.** Tasks parked in no queue would be orphaned with their handles waiting
//!   for ever when the workers stop. [`LiveTasks::drain`] takes every live task (with a
//!   reference), and the runtime wakes each: the runtime being terminated, the wake-up
//!   discards the job, which drops the future and reports `Cancelled`.
//! * **Inspection by the layer above.** [`LiveTasks::with_tagged`] shows the futures of
//!   tagged tasks (CSP processes) to the deadlock detector, with no registry of its own.
//!
//! A task's shard is chosen at spawn (the spawning worker's, so that spawns on different
//! workers do not contend) and kept in its state word, so removal needs no search. The
//! links are read and written only under the shard's lock.
//!
//! # Keeping the runtime allocated (T5 of `state.rs`)
//!
//! Each shard counts its live tasks (`live`), and holds one strong count of its runtime's
//! registry while that count is not zero: taken when it goes from 0 to 1 (by a spawner,
//! which holds the registry itself), given back when it returns to 0 (after the lock is
//! released, since the lock lives in the registry). A task therefore finds its runtime
//! allocated whenever it is live, which is whenever it can be scheduled. A drained shard
//! is *closed*: its tasks are not linked any more, but each still counts until its future
//! is gone.

use std::ptr::{self, NonNull};
use std::sync::Arc;

use super::raw::{Header, RawTask};
use crate::loom::{lock, Mutex, UnsafeCell};
use crate::runtime::priority::Priority;
use crate::runtime::registry::Registry;

/// The links of a task header; touched only under its shard's lock.
pub(crate) struct Links {
    prev: UnsafeCell<*const Header>,
    next: UnsafeCell<*const Header>,
}

impl Links {
    pub(super) fn new() -> Links {
        Links {
            prev: UnsafeCell::new(ptr::null()),
            next: UnsafeCell::new(ptr::null()),
        }
    }

    /// # Safety (of the four accessors)
    /// The caller holds the lock of the shard the task belongs to.
    unsafe fn prev(&self) -> *const Header {
        // SAFETY: the links belong to the shard lock's holder.
        self.prev.with(|p| unsafe { *p })
    }

    unsafe fn next(&self) -> *const Header {
        // SAFETY: as in `prev`.
        self.next.with(|p| unsafe { *p })
    }

    unsafe fn set_prev(&self, to: *const Header) {
        // SAFETY: as in `prev`.
        self.prev.with_mut(|p| unsafe { *p = to })
    }

    unsafe fn set_next(&self, to: *const Header) {
        // SAFETY: as in `prev`.
        self.next.with_mut(|p| unsafe { *p = to })
    }
}

struct Shard {
    /// The newest linked task (null: none).
    head: *const Header,
    /// Tasks of this shard whose future is not gone yet, linked or not.
    live: usize,
    /// Drained at shutdown: nothing is linked any more.
    closed: bool,
}

// SAFETY: the raw pointers are only followed under the shard's lock, and a task is
// unlinked (under that lock) before its memory goes.
unsafe impl Send for Shard {}

/// The live tasks of one runtime, in shards.
pub(crate) struct LiveTasks {
    shards: Box<[Mutex<Shard>]>,
}

/// Shards at most (the state word has six bits for the shard).
pub(crate) const MAX_SHARDS: usize = 1 << super::state::SHARD_BITS;

impl LiveTasks {
    /// `shards` shards (at most [`MAX_SHARDS`]).
    pub(crate) fn new(shards: usize) -> LiveTasks {
        LiveTasks {
            shards: (0..shards.clamp(1, MAX_SHARDS))
                .map(|_| {
                    Mutex::new(Shard {
                        head: ptr::null(),
                        live: 0,
                        closed: false,
                    })
                })
                .collect(),
        }
    }

    /// The shard for a task spawned with `hint` (a worker index + 1, or 0).
    #[inline]
    pub(crate) fn shard_for(&self, hint: usize) -> usize {
        hint % self.shards.len()
    }

    /// Records a task being spawned on `registry` (whose `live` this is), in the shard its
    /// state names.
    pub(crate) fn insert(&self, registry: &Arc<Registry>, task: RawTask) {
        let header = task.header();
        let shard_index = task.state().shard();
        let mut shard = lock(&self.shards[shard_index]);
        shard.live += 1;
        if shard.live == 1 {
            // The shard's hold on the registry (module docs); the caller holds it too.
            // SAFETY: `registry` is a live `Arc`.
            unsafe { Arc::increment_strong_count(Arc::as_ptr(registry)) };
        }
        if shard.closed {
            return; // shut down: the task is discarded as soon as it is scheduled
        }
        let me: *const Header = header;
        // SAFETY: under the shard lock; the task is new, and linked tasks are alive (they
        // are unlinked, under this lock, before they are freed).
        unsafe {
            header.links.set_prev(ptr::null());
            header.links.set_next(shard.head);
            if let Some(old) = NonNull::new(shard.head.cast_mut()) {
                old.as_ref().links.set_prev(me);
            }
        }
        shard.head = me;
    }

    /// Forgets a task whose future is gone. `registry` is the runtime this list belongs
    /// to; its shard's hold on it may be the last one.
    pub(crate) fn remove(&self, registry: *const Registry, task: RawTask) {
        let header = task.header();
        let release = {
            let mut shard = lock(&self.shards[task.state().shard()]);
            if !shard.closed {
                // SAFETY: under the shard lock, the task is linked here (it was inserted
                // before the shard closed), and its neighbours are alive.
                unsafe { unlink(&mut shard, header) };
            }
            shard.live -= 1;
            shard.live == 0
        };
        if release {
            // SAFETY: the shard's strong count, taken when its count left zero.
            unsafe { Arc::decrement_strong_count(registry) };
        }
    }

    /// Takes every linked task, each with a new reference, and closes the shards: later
    /// spawns are not linked (they are discarded when scheduled).
    pub(crate) fn drain(&self) -> Vec<RawTask> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = lock(shard);
            let mut p = std::mem::replace(&mut shard.head, ptr::null());
            shard.closed = true;
            while let Some(h) = NonNull::new(p.cast_mut()) {
                // SAFETY: linked, so alive (it is not freed before it is unlinked, which
                // needs this lock); its links are ours under the lock.
                let (header, task) = unsafe { (h.as_ref(), RawTask::from_ptr(h.cast())) };
                // SAFETY: as above.
                p = unsafe { header.links.next() };
                task.add_ref();
                all.push(task);
            }
        }
        all
    }

    /// Runs `f` with every shard locked (no task can become or stop being live meanwhile)
    /// and a view of the tagged tasks.
    pub(crate) fn with_tagged<R>(&self, f: impl FnOnce(&Tagged<'_>) -> R) -> R {
        let guards: Vec<_> = self.shards.iter().map(lock).collect();
        let heads = guards.iter().map(|g| g.head).collect();
        let r = f(&Tagged {
            heads,
            _locks: std::marker::PhantomData,
        });
        drop(guards);
        r
    }

    /// The name and state (`running`, `queued` or `parked`) of every linked task that
    /// was given a name at spawn.
    pub(crate) fn named(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let shard = lock(shard);
            let mut p = shard.head;
            while let Some(h) = NonNull::new(p.cast_mut()) {
                // SAFETY: linked, so alive, and the shard's lock is held (see `drain`).
                let (header, task) = unsafe { (h.as_ref(), RawTask::from_ptr(h.cast())) };
                // SAFETY: as above.
                p = unsafe { header.links.next() };
                if task.is_named() {
                    let state = task.state();
                    let running = state.has(super::state::RUNNING);
                    let queued = state.has(super::state::SCHEDULED);
                    let what = match (state.priority(), running, queued) {
                        (Priority::Normal, true, _) => "running",
                        (Priority::Normal, false, true) => "queued",
                        (Priority::Normal, false, false) => "parked",
                        (Priority::High, true, _) => "running (high priority)",
                        (Priority::High, false, true) => "queued (high priority)",
                        (Priority::High, false, false) => "parked (high priority)",
                        (Priority::Low, true, _) => "running (low priority)",
                        (Priority::Low, false, true) => "queued (low priority)",
                        (Priority::Low, false, false) => "parked (low priority)",
                    };
                    out.push((task.name(), what));
                }
            }
        }
        out
    }

    /// Number of live tasks (linked or not).
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).live).sum()
    }

    /// Linked live tasks of high and of low priority (the rest are normal), one shard
    /// at a time: a snapshot for a dump, not an atomic one.
    pub(crate) fn high_and_low(&self) -> (usize, usize) {
        let (mut high, mut low) = (0, 0);
        for shard in self.shards.iter() {
            let shard = lock(shard);
            let mut p = shard.head;
            while let Some(h) = NonNull::new(p.cast_mut()) {
                // SAFETY: linked, so alive, and the shard's lock is held.
                let (header, task) = unsafe { (h.as_ref(), RawTask::from_ptr(h.cast())) };
                match task.state().priority() {
                    Priority::High => high += 1,
                    Priority::Low => low += 1,
                    Priority::Normal => {}
                }
                // SAFETY: as above.
                p = unsafe { header.links.next() };
            }
        }
        (high, low)
    }
}

/// Unlinks `header` from `shard`.
///
/// # Safety
/// The caller holds the shard's lock and `header` is linked in it.
unsafe fn unlink(shard: &mut Shard, header: &Header) {
    // SAFETY: by the caller's contract; linked neighbours are alive and their links are
    // ours under the lock.
    unsafe {
        let (prev, next) = (header.links.prev(), header.links.next());
        match NonNull::new(prev.cast_mut()) {
            Some(p) => p.as_ref().links.set_next(next),
            None => shard.head = next,
        }
        if let Some(n) = NonNull::new(next.cast_mut()) {
            n.as_ref().links.set_prev(prev);
        }
    }
}

/// The tagged live tasks of a runtime, seen with every shard locked.
pub(crate) struct Tagged<'a> {
    heads: Vec<*const Header>,
    _locks: std::marker::PhantomData<&'a ()>,
}

impl Tagged<'_> {
    /// Calls `f` with each tagged task: its future's address, and the task (to wake it:
    /// [`RawTask::waker`] is safe here, the task being live while the locks are held).
    pub(crate) fn for_each(&self, mut f: impl FnMut(*const (), RawTask)) {
        for &head in &self.heads {
            let mut p = head;
            while let Some(h) = NonNull::new(p.cast_mut()) {
                // SAFETY: linked, so alive, and the locks are held (see `with_tagged`).
                let (header, task) = unsafe { (h.as_ref(), RawTask::from_ptr(h.cast())) };
                // SAFETY: as above.
                p = unsafe { header.links.next() };
                if task.state().has(super::state::TAGGED) {
                    // SAFETY: live, so the future is present.
                    let future = unsafe { (header.vtable.future)(h) };
                    f(future, task);
                }
            }
        }
    }
}

/// A task's future is gone: take it off its runtime's live list.
pub(super) fn remove(task: RawTask) {
    let id = task.state().runtime();
    if id == 0 {
        return; // made without a runtime (loom models)
    }
    // SAFETY: the task is still live (its future just went, and this is the step that
    // ends its life), so its runtime is allocated (T5).
    let registry = unsafe { crate::runtime::ids::registry(id) };
    registry.live.remove(registry, task);
}
