//! The task state word: one `u64` per task holding its life-cycle flags, the runtime and
//! live-list shard it belongs to, and its reference count.
//!
//! | bits | name | meaning | set / cleared by |
//! |---|---|---|---|
//! | 0 | `SCHEDULED` | a job for the task is queued (or being queued); the job owns one reference | set by a wake of an idle task (or by a cancellation that needs a worker to drop the future); cleared when the job starts running |
//! | 1 | `RUNNING` | a worker is polling the future (or dropping it); the run owns the job's reference | set by the run, cleared when the poll's aftermath is settled |
//! | 2 | `COMPLETED` | the future returned `Ready`; the output sits in the stage unless `CLOSED` | the run, once the output is written; final |
//! | 3 | `CLOSED` | the stage belongs to whoever closed it: a not-completed future is being or has been dropped, or a completed task's output has been taken or dropped | a cancellation (abort, last reference, shutdown), the handle taking the output, or a completion without a handle; final |
//! | 4 | `HANDLE` | the `JoinHandle` exists (it is tracked by this flag, not by the count) | set at spawn; cleared when the handle is dropped |
//! | 5 | `TAGGED` | the layer above marked the task at spawn (a CSP process) | at spawn; never changes |
//! | 6..18 | runtime id | the runtime the task is scheduled on (`runtime/ids.rs`) | at spawn |
//! | 18..24 | shard | the live-task shard holding the task (`live.rs`) | at spawn |
//! | 24..26 | priority | the queue the task waits in (`runtime/priority.rs`: 0 normal, 1 high, 2 low) | at spawn; never changes |
//! | 26..64 | references | wakers, plus one while a job exists (`SCHEDULED` or `RUNNING`), plus the poll's spare while `RUNNING` until someone takes it (T6) | clone/drop of wakers; jobs; the run |
//!
//! # Invariants
//!
//! * **T1, one job.** At most one job exists per task: `SCHEDULED` is only set on a task
//!   that is neither scheduled nor running (a wake of a running task sets it as a request
//!   that the run itself honours with its own reference).
//! * **T2, the future belongs to the job.** Only the holder of the job (`SCHEDULED` or
//!   `RUNNING`) polls or drops the future. A cancellation of an idle task therefore
//!   creates a job (`SCHEDULED | CLOSED`) instead of dropping the future itself.
//! * **T3, the output belongs to the handle.** After `COMPLETED`, whoever sets `CLOSED`
//!   takes or drops the output: the handle, or the run if there is no handle.
//! * **T4, freeing.** The allocation is freed by whoever makes the count zero while
//!   `HANDLE` is clear and the stage is settled (`COMPLETED` or `CLOSED`). A task that
//!   would become unreachable with its future alive (count zero, no handle, idle) is
//!   instead given a closing job (T2), which frees it after dropping the future.
//! * **T5, live.** A task is on its runtime's live list from its spawn until its future
//!   is gone; the runtime stays allocated while any task is live (`live.rs`), so every
//!   operation that schedules (which requires a live task) may use it.
//! * **T6, the poll's spare.** The run's `SCHEDULED → RUNNING` transition also takes one
//!   reference, the *spare*, which belongs to the poll. The first reference asked for on
//!   the polling thread during the poll (the task's waker cloned or registered by the
//!   future it polls) is the spare, handed over without touching the word; if nobody
//!   took it, the transition that settles the poll (park, re-queue, complete, close)
//!   gives it back. So a poll that registers its waker once and parks costs the word
//!   the two compare-and-swaps of the run and the park, not a third `fetch_add`: the
//!   reference that the job held while running lives on as the waker's. While the task
//!   runs its count holds the job's reference besides every waker's, so no waker's drop
//!   or wake can make it zero (T4 holds as before).

use crate::runtime::priority::Priority;

/// A job for the task is queued or about to be.
pub(crate) const SCHEDULED: u64 = 1 << 0;
/// A worker is polling (or dropping) the future.
pub(crate) const RUNNING: u64 = 1 << 1;
/// The future returned `Ready`.
pub(crate) const COMPLETED: u64 = 1 << 2;
/// The stage has been claimed: future dropped / output taken or dropped.
pub(crate) const CLOSED: u64 = 1 << 3;
/// The `JoinHandle` exists.
pub(crate) const HANDLE: u64 = 1 << 4;
/// Marked by the layer above at spawn.
pub(crate) const TAGGED: u64 = 1 << 5;

const RUNTIME_SHIFT: u32 = 6;
/// Bits of the runtime id.
pub(crate) const RUNTIME_BITS: u32 = 12;
const SHARD_SHIFT: u32 = RUNTIME_SHIFT + RUNTIME_BITS;
/// Bits of the live-list shard.
pub(crate) const SHARD_BITS: u32 = 6;
const PRIORITY_SHIFT: u32 = SHARD_SHIFT + SHARD_BITS;
const PRIORITY_BITS: u32 = 2;
const REF_SHIFT: u32 = PRIORITY_SHIFT + PRIORITY_BITS;
/// One reference.
pub(crate) const REF: u64 = 1 << REF_SHIFT;
/// More references than this is a leak of wakers; the count aborts before it overflows.
const MAX_REFS: u64 = (1 << (63 - REF_SHIFT)) - 1;

/// A decoded snapshot of the state word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct State(pub(crate) u64);

impl State {
    /// The word of a task being spawned: one job, a handle, on `runtime` and `shard`,
    /// queued by `priority`.
    pub(crate) fn new(runtime: u16, shard: usize, tagged: bool, priority: Priority) -> State {
        debug_assert!(u32::from(runtime) < 1 << RUNTIME_BITS);
        debug_assert!(shard < 1 << SHARD_BITS);
        let tag = if tagged { TAGGED } else { 0 };
        State(
            SCHEDULED
                | HANDLE
                | tag
                | (u64::from(runtime) << RUNTIME_SHIFT)
                | ((shard as u64) << SHARD_SHIFT)
                | (priority.bits() << PRIORITY_SHIFT)
                | REF,
        )
    }

    #[inline]
    pub(crate) fn has(self, flag: u64) -> bool {
        self.0 & flag != 0
    }

    /// Neither scheduled nor running: no job exists.
    #[inline]
    pub(crate) fn is_idle(self) -> bool {
        self.0 & (SCHEDULED | RUNNING) == 0
    }

    /// The future is gone or going (completed, or closed before completing).
    #[inline]
    pub(crate) fn is_settled(self) -> bool {
        self.0 & (COMPLETED | CLOSED) != 0
    }

    #[inline]
    pub(crate) fn refs(self) -> u64 {
        self.0 >> REF_SHIFT
    }

    #[inline]
    pub(crate) fn runtime(self) -> u16 {
        ((self.0 >> RUNTIME_SHIFT) & ((1 << RUNTIME_BITS) - 1)) as u16
    }

    #[inline]
    pub(crate) fn shard(self) -> usize {
        ((self.0 >> SHARD_SHIFT) & ((1 << SHARD_BITS) - 1)) as usize
    }

    #[inline]
    pub(crate) fn priority(self) -> Priority {
        Priority::from_bits((self.0 >> PRIORITY_SHIFT) & ((1 << PRIORITY_BITS) - 1))
    }

    #[inline]
    pub(crate) fn with(self, flags: u64) -> State {
        State(self.0 | flags)
    }

    #[inline]
    pub(crate) fn without(self, flags: u64) -> State {
        State(self.0 & !flags)
    }

    /// One reference fewer. The caller holds one.
    #[inline]
    pub(crate) fn unref(self) -> State {
        debug_assert!(self.refs() > 0, "tutti: task reference count underflow");
        State(self.0 - REF)
    }

    /// One reference more.
    #[inline]
    pub(crate) fn add_ref(self) -> State {
        State(self.0 + REF)
    }

    /// Whether the count went past the bound (a leak of wakers).
    #[inline]
    pub(crate) fn overflowed(self) -> bool {
        self.refs() > MAX_REFS
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = [
            (SCHEDULED, "SCHEDULED"),
            (RUNNING, "RUNNING"),
            (COMPLETED, "COMPLETED"),
            (CLOSED, "CLOSED"),
            (HANDLE, "HANDLE"),
            (TAGGED, "TAGGED"),
        ];
        let mut flags: Vec<&str> = names
            .iter()
            .filter(|(b, _)| self.has(*b))
            .map(|(_, n)| *n)
            .collect();
        if flags.is_empty() {
            flags.push("IDLE");
        }
        write!(
            f,
            "{} refs={} runtime={} shard={} priority={}",
            flags.join("|"),
            self.refs(),
            self.runtime(),
            self.shard(),
            self.priority()
        )
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let s = State::new(
            (1 << RUNTIME_BITS) - 1,
            (1 << SHARD_BITS) - 1,
            true,
            Priority::Low,
        );
        assert_eq!(s.runtime(), (1 << RUNTIME_BITS) - 1);
        assert_eq!(s.priority(), Priority::Low);
        assert_eq!(s.shard(), (1 << SHARD_BITS) - 1);
        assert_eq!(s.refs(), 1);
        assert!(s.has(SCHEDULED) && s.has(HANDLE) && s.has(TAGGED));
        let s = s.add_ref().add_ref().unref();
        assert_eq!(s.refs(), 2);
        assert_eq!(
            s.runtime(),
            (1 << RUNTIME_BITS) - 1,
            "the count does not spill"
        );
        assert_eq!(s.priority(), Priority::Low, "nor into the priority");
        assert!(!s.overflowed());
        for p in [Priority::High, Priority::Normal, Priority::Low] {
            assert_eq!(State::new(1, 0, false, p).priority(), p);
        }
        assert!(State(u64::MAX).overflowed());
        assert!(format!("{s:?}").contains("SCHEDULED|HANDLE|TAGGED refs=2"));
    }
}
