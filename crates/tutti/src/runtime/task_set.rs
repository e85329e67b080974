//! The set of live async tasks of one runtime, so that shutdown can cancel
//! tasks that are parked (pending, in no queue) and would otherwise be
//! orphaned with their `JoinHandle`s waiting for ever.
//!
//! A task is inserted (as a waker) when it is spawned and removed when its
//! future completes or is dropped. At shutdown, after the workers have
//! stopped, every remaining task is woken; the registry is terminated, so the
//! wake-up discards the task's `Runnable`, which drops the future and reports
//! `Cancelled`. The set is sharded by spawning worker so that spawns on
//! different workers do not contend. Each shard keeps its slots in
//! fixed-size pages, so a set of `n` tasks costs 16 bytes per task plus at
//! most one partly used page — no doubling slack, which for small tasks
//! (actors) would be a fifth of their size.

use std::task::Waker;

use crate::loom::{lock, Mutex};

/// Identifies a task's slot: shard in the high half, index in the low half.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskKey(u64);

impl TaskKey {
    pub(crate) fn into_raw(self) -> u64 {
        self.0
    }

    pub(crate) fn from_raw(raw: u64) -> TaskKey {
        TaskKey(raw)
    }
}

/// Slots per page.
const PAGE: usize = 64;

type Page = Box<[Option<Waker>; PAGE]>;

#[derive(Default)]
struct Shard {
    /// Boxed pages: growing moves page pointers, never slots.
    #[allow(clippy::vec_box)]
    pages: Vec<Page>,
    /// Slots handed out so far (the next fresh slot).
    used: u32,
    free: Vec<u32>,
    /// Drained at shutdown: later inserts are not recorded (those tasks are
    /// discarded as soon as they are scheduled) and removals are ignored.
    closed: bool,
}

pub(crate) struct TaskSet {
    shards: Box<[Mutex<Shard>]>,
}

impl TaskSet {
    pub(crate) fn new(shards: usize) -> TaskSet {
        TaskSet {
            shards: (0..shards.max(1)).map(|_| Mutex::default()).collect(),
        }
    }

    /// Records a live task; `hint` picks the shard (the spawning worker).
    pub(crate) fn insert(&self, hint: usize, waker: Waker) -> TaskKey {
        let shard_index = hint % self.shards.len();
        let mut shard = lock(&self.shards[shard_index]);
        if shard.closed {
            return TaskKey(u64::MAX);
        }
        let index = match shard.free.pop() {
            Some(i) => i,
            None => {
                let i = shard.used;
                shard.used = i
                    .checked_add(1)
                    .expect("tutti: more than 2^32 live tasks on one worker");
                if i as usize / PAGE == shard.pages.len() {
                    shard.pages.push(Box::new([const { None }; PAGE]));
                }
                i
            }
        };
        shard.pages[index as usize / PAGE][index as usize % PAGE] = Some(waker);
        TaskKey(((shard_index as u64) << 32) | u64::from(index))
    }

    /// Forgets a task that has finished (completed, panicked or dropped).
    pub(crate) fn remove(&self, key: TaskKey) {
        if key.0 == u64::MAX {
            return;
        }
        let (shard_index, index) = ((key.0 >> 32) as usize, key.0 as u32);
        let waker = {
            let mut shard = lock(&self.shards[shard_index]);
            if shard.closed {
                return;
            }
            let w = shard.pages[index as usize / PAGE][index as usize % PAGE].take();
            if w.is_some() {
                shard.free.push(index);
            }
            w
        };
        // Dropped outside the lock: dropping a waker may free the task.
        drop(waker);
    }

    /// Takes every remaining task's waker (shutdown).
    pub(crate) fn drain(&self) -> Vec<Waker> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = lock(shard);
            let pages = std::mem::take(&mut shard.pages);
            shard.free.clear();
            shard.used = 0;
            shard.closed = true;
            for page in pages {
                all.extend(page.into_iter().flatten());
            }
        }
        all
    }

    /// Number of live tasks.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let shard = lock(s);
                shard.pages.iter().flat_map(|p| p.iter()).flatten().count()
            })
            .sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    struct Nop;
    impl Wake for Nop {
        fn wake(self: Arc<Self>) {}
    }

    #[test]
    fn insert_remove_reuses_slots_and_drain_closes() {
        let set = TaskSet::new(2);
        let w = Waker::from(Arc::new(Nop));
        let a = set.insert(0, w.clone());
        let b = set.insert(1, w.clone());
        let c = set.insert(3, w.clone());
        assert_eq!(set.len(), 3);
        set.remove(a);
        assert_eq!(set.len(), 2);
        let d = set.insert(0, w.clone());
        assert_eq!(d.into_raw(), a.into_raw(), "freed slot reused");
        assert_eq!(set.drain().len(), 3);
        assert_eq!(set.len(), 0);
        // After shutdown: removals of drained keys and new inserts are no-ops.
        set.remove(b);
        set.remove(c);
        let e = set.insert(0, w);
        set.remove(e);
        assert_eq!(set.len(), 0);
    }
}
