//! Runtime ids: the short name a task keeps of its runtime.
//!
//! A task's state word (`task/state.rs`) has room for a 12-bit runtime id instead of a
//! pointer, which keeps every task's header one word smaller. The id names an entry of a
//! process-wide table of live runtimes. Id 0 is never handed out: it marks tasks made
//! without a runtime (the loom models of the task state machine).
//!
//! An id is taken when a runtime starts and given back when its registry is freed. A task
//! only looks its runtime up while it is *live* (its future not yet dropped), and a live
//! task keeps its runtime's registry allocated (`task/live.rs`), so the entry a live task
//! reads is always its own runtime's. The table is written only under `FREE`'s lock; the
//! `Release` store of an entry publishes the registry to tasks that the runtime then
//! spawns (the spawn hands them over through a queue, which synchronises).

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use super::registry::Registry;
use super::task::RUNTIME_BITS;

/// Ids available (including the reserved 0).
const CAPACITY: usize = 1 << RUNTIME_BITS;

static TABLE: [AtomicPtr<Registry>; CAPACITY] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; CAPACITY];

/// Ids given back, and the next id never handed out yet.
static FREE: Mutex<(Vec<u16>, u16)> = Mutex::new((Vec::new(), 1));

/// A runtime id, owned by one registry; released when dropped.
#[derive(Debug)]
pub(crate) struct RuntimeId(u16);

impl RuntimeId {
    /// Takes a free id; `None` if as many runtimes as there are ids are alive at once.
    pub(crate) fn take() -> Option<RuntimeId> {
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = free.0.pop() {
            return Some(RuntimeId(id));
        }
        let id = free.1;
        if usize::from(id) >= CAPACITY {
            return None;
        }
        free.1 += 1;
        Some(RuntimeId(id))
    }

    /// The id's number, as stored in a task's state word.
    #[inline]
    pub(crate) fn get(&self) -> u16 {
        self.0
    }

    /// Points the id at its registry (once the registry has its final address).
    pub(crate) fn publish(&self, registry: *const Registry) {
        TABLE[usize::from(self.0)].store(registry.cast_mut(), Ordering::Release);
    }

    /// How many runtimes may be alive at once.
    pub(crate) const fn capacity() -> usize {
        CAPACITY - 1
    }
}

impl Drop for RuntimeId {
    fn drop(&mut self) {
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        TABLE[usize::from(self.0)].store(std::ptr::null_mut(), Ordering::Release);
        free.0.push(self.0);
    }
}

/// The registry of runtime `id`.
///
/// # Safety
/// `id` is the runtime id of a live task (so its registry is allocated, see the module
/// docs), and the reference is not used after that task stops being live.
#[inline]
pub(crate) unsafe fn registry<'a>(id: u16) -> &'a Registry {
    let p = TABLE[usize::from(id)].load(Ordering::Acquire);
    debug_assert!(
        !p.is_null(),
        "tutti: a live task's runtime {id} is not registered"
    );
    // SAFETY: by the caller's contract the registry is allocated and `p` points to it.
    unsafe { &*p }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::RuntimeId;

    #[test]
    fn ids_are_reused_after_release() {
        let a = RuntimeId::take().unwrap();
        let n = a.get();
        assert_ne!(n, 0, "0 is reserved");
        drop(a);
        // Another test may take it meanwhile; any id handed out is non-zero and unique.
        let b = RuntimeId::take().unwrap();
        let c = RuntimeId::take().unwrap();
        assert_ne!(b.get(), c.get());
        assert_ne!(b.get(), 0);
    }
}
