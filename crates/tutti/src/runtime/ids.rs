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
//! reads is always its own runtime's. The table is written only under its lock; the
//! `Release` store of an entry publishes the registry to tasks that the runtime then
//! spawns (the spawn hands them over through a queue, which synchronises).

use std::ptr;

use super::registry::Registry;
use super::task::RUNTIME_BITS;
use crate::loom::{lock, AtomicPtr, Mutex, Ordering};

/// Ids available (including the reserved 0).
const CAPACITY: usize = 1 << RUNTIME_BITS;

/// A table of `N` ids (0 reserved) naming `R`s: the entries, and under one
/// lock the ids given back and the next id never handed out yet. The process
/// has one, of runtime registries ([`TABLE`]); the loom models make small
/// ones of their own.
pub(crate) struct Table<R, const N: usize> {
    entries: [AtomicPtr<R>; N],
    free: Mutex<(Vec<u16>, u16)>,
}

impl<R, const N: usize> Table<R, N> {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Table {
            entries: [const { AtomicPtr::new(ptr::null_mut()) }; N],
            free: Mutex::new((Vec::new(), 1)),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Table {
            entries: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            free: Mutex::new((Vec::new(), 1)),
        }
    }

    /// Takes a free id; `None` if every id is taken.
    fn take(&self) -> Option<u16> {
        let mut free = lock(&self.free);
        if let Some(id) = free.0.pop() {
            return Some(id);
        }
        let id = free.1;
        if usize::from(id) >= N {
            return None;
        }
        free.1 += 1;
        Some(id)
    }

    /// Points `id` at `entry`; the `Release` store publishes it to whoever
    /// is handed the id afterwards through a synchronising hand-over.
    fn publish(&self, id: u16, entry: *const R) {
        self.entries[usize::from(id)].store(entry.cast_mut(), Ordering::Release);
    }

    /// Gives `id` back (its entry cleared first, under the lock).
    fn release(&self, id: u16) {
        let mut free = lock(&self.free);
        self.entries[usize::from(id)].store(ptr::null_mut(), Ordering::Release);
        free.0.push(id);
    }

    /// What `id` points at (null if nothing is published).
    #[inline]
    fn get(&self, id: u16) -> *const R {
        self.entries[usize::from(id)].load(Ordering::Acquire)
    }
}

/// The process's runtimes.
#[cfg(not(loom))]
static TABLE: Table<Registry, CAPACITY> = Table::new();

// Under loom a table is made afresh in each model execution.
#[cfg(loom)]
loom::lazy_static! {
    static ref TABLE: Table<Registry, CAPACITY> = Table::new();
}

/// A runtime id, owned by one registry; released when dropped.
#[derive(Debug)]
pub(crate) struct RuntimeId(u16);

impl RuntimeId {
    /// Takes a free id; `None` if as many runtimes as there are ids are alive at once.
    pub(crate) fn take() -> Option<RuntimeId> {
        TABLE.take().map(RuntimeId)
    }

    /// The id's number, as stored in a task's state word.
    #[inline]
    pub(crate) fn get(&self) -> u16 {
        self.0
    }

    /// Points the id at its registry (once the registry has its final address).
    pub(crate) fn publish(&self, registry: *const Registry) {
        TABLE.publish(self.0, registry);
    }

    /// How many runtimes may be alive at once.
    pub(crate) const fn capacity() -> usize {
        CAPACITY - 1
    }
}

impl Drop for RuntimeId {
    fn drop(&mut self) {
        TABLE.release(self.0);
    }
}

/// The registry of runtime `id`.
///
/// # Safety
/// `id` is the runtime id of a live task (so its registry is allocated, see the module
/// docs), and the reference is not used after that task stops being live.
#[inline]
pub(crate) unsafe fn registry<'a>(id: u16) -> &'a Registry {
    let p = TABLE.get(id);
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

/// Loom models of the table on its real code, with three ids (0 reserved)
/// and plain numbers standing for registries.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::Table;
    use crate::loom::{thread, Arc, AtomicUsize, Ordering};

    /// A runtime publishes its registry and hands its id to a task through a
    /// synchronising queue (here a `Release` store); the task reads the
    /// registry published, never null, while another runtime takes, publishes
    /// and gives back an id of its own — always a different one.
    #[test]
    fn a_task_reads_its_own_runtimes_registry() {
        loom::model(|| {
            let table = Arc::new(Table::<u64, 3>::new());
            static REGISTRY: u64 = 7;
            static OTHER: u64 = 9;
            let registry = &REGISTRY as *const u64 as usize;
            let handed = Arc::new(AtomicUsize::new(0));
            let id = table.take().unwrap();
            let runtime = {
                let (table, handed) = (Arc::clone(&table), Arc::clone(&handed));
                thread::spawn(move || {
                    table.publish(id, registry as *const u64);
                    handed.store(usize::from(id), Ordering::Release);
                })
            };
            let other = {
                let table = Arc::clone(&table);
                thread::spawn(move || {
                    let mine = table.take().unwrap();
                    assert_ne!(mine, id, "an id is handed out twice");
                    table.publish(mine, &OTHER);
                    table.release(mine);
                })
            };
            let task = handed.load(Ordering::Acquire);
            if task != 0 {
                let p = table.get(task as u16);
                assert!(!p.is_null(), "a live task's runtime is not registered");
                // SAFETY: the registry is a static.
                assert_eq!(unsafe { *p }, 7);
            }
            runtime.join().unwrap();
            other.join().unwrap();
        });
    }

    /// Ids taken at once are distinct, a full table says so, and a released
    /// id is taken again.
    #[test]
    fn ids_are_unique_and_reused() {
        loom::model(|| {
            let table = Arc::new(Table::<u64, 3>::new());
            let takers: Vec<_> = (0..2)
                .map(|_| {
                    let table = Arc::clone(&table);
                    thread::spawn(move || table.take().unwrap())
                })
                .collect();
            let ids: Vec<u16> = takers.into_iter().map(|t| t.join().unwrap()).collect();
            assert_ne!(ids[0], ids[1]);
            assert!(ids.iter().all(|&i| i == 1 || i == 2));
            assert_eq!(table.take(), None, "two ids fill a table of three");
            let giver = {
                let table = Arc::clone(&table);
                let id = ids[0];
                thread::spawn(move || table.release(id))
            };
            let again = table.take();
            giver.join().unwrap();
            let again = again.or_else(|| table.take());
            assert_eq!(again, Some(ids[0]));
        });
    }
}
