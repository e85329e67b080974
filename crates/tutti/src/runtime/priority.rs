//! Task priorities: which queued task a worker takes first.
//!
//! Every async task has a [`Priority`], fixed when it is spawned
//! ([`spawn_with_priority`](super::spawn_with_priority), or the runtime's default set with
//! [`Builder::default_priority`](super::Builder::default_priority)) and kept in its state
//! word, so every wake-up queues it by the same priority.
//!
//! # Where each priority waits
//!
//! * **High** tasks wait in one queue per runtime (the *high injector*), spawned or woken
//!   from anywhere. Every worker looks at it first each time it looks for work — before
//!   its `run_next` slot, its own deques and FIFO, the normal injector and other workers'
//!   queues — so a high task queued while every worker is busy runs as soon as one of
//!   them finishes the poll (or the job) it is running. Scheduling is cooperative: a poll
//!   that computes for long is not interrupted, so the delay of a high task is bounded by
//!   the longest poll running when it is queued. Keeping high tasks in one shared queue
//!   makes "stealing prefers them" hold by construction (no worker can sit on one), and
//!   costs normal work one read of a shared, rarely written word per search; it suits
//!   what high priority is for — a few latency-sensitive tasks, not the bulk of the work.
//! * **Normal** tasks are scheduled as they always were (see `worker.rs`): the spawning
//!   worker's FIFO, the `run_next` slot after a wake-up on a worker, the normal injector
//!   from outside.
//! * **Low** tasks wait in a FIFO of their own per worker (thieves steal batches from it)
//!   and in a low injector for spawns and wake-ups from outside the workers. A worker
//!   takes them only when it finds no normal work, its own or another's.
//!
//! # Aging: no priority starves
//!
//! * After [`HIGH_BURST`] high tasks in a row a worker gives the rest of its queues one
//!   turn: it takes the job it would take without high tasks (if any) before the next
//!   high one. A flood of high tasks therefore slows normal work by at most a factor of
//!   `HIGH_BURST + 1` on each worker; it cannot stop it.
//! * Every [`LOW_EVERY`]-th search of a worker beyond its own `run_next` slot and deques
//!   looks at the low queues (its own, then the low injector) first. A worker kept busy
//!   by normal tasks still runs at least one low task per `LOW_EVERY` independent tasks it
//!   takes; a `run_next` ping-pong gives way after its bound when low tasks wait, as it
//!   does for queued normal tasks. Recursive work already under way (`join`, `scope`
//!   halves on the own deque) finishes first: it belongs to a task that is running.

/// How urgently a spawned task should run, relative to the other queued tasks of its
/// runtime. See [`spawn_with_priority`](crate::spawn_with_priority).
///
/// ```
/// use tutti::Priority;
/// assert_eq!(Priority::default(), Priority::Normal);
/// assert_eq!(Priority::parse("high"), Some(Priority::High));
/// assert_eq!(Priority::Low.to_string(), "low");
/// assert!(Priority::High > Priority::Normal && Priority::Normal > Priority::Low);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Background work: runs when no normal work is queued, and at least once every
    /// [`LOW_EVERY`] normal tasks a worker takes.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Latency-sensitive work: taken before every queued normal and low task, by
    /// whichever worker looks for work first.
    High,
}

/// Consecutive high tasks a worker takes before it gives its other queues one turn.
pub const HIGH_BURST: u32 = 16;

/// A worker looks at the low queues first on every this many searches for an
/// independent task.
pub const LOW_EVERY: u32 = 32;

impl Priority {
    /// Parses `high`, `normal` or `low` (any case).
    pub fn parse(s: &str) -> Option<Priority> {
        match s.trim().to_ascii_lowercase().as_str() {
            "high" => Some(Priority::High),
            "normal" => Some(Priority::Normal),
            "low" => Some(Priority::Low),
            _ => None,
        }
    }

    /// `high`, `normal` or `low`.
    pub fn name(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }

    /// The two bits this priority takes in a task's state word.
    #[inline]
    pub(crate) const fn bits(self) -> u64 {
        match self {
            Priority::Normal => 0,
            Priority::High => 1,
            Priority::Low => 2,
        }
    }

    /// The priority of [`bits`](Self::bits); the unused pattern `3` never occurs (the
    /// field is written once, at spawn) and reads as normal.
    #[inline]
    pub(crate) const fn from_bits(bits: u64) -> Priority {
        match bits {
            1 => Priority::High,
            2 => Priority::Low,
            _ => Priority::Normal,
        }
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        for p in [Priority::High, Priority::Normal, Priority::Low] {
            assert_eq!(Priority::from_bits(p.bits()), p);
            assert_eq!(Priority::parse(p.name()), Some(p));
        }
        assert_eq!(Priority::parse(" HIGH "), Some(Priority::High));
        assert_eq!(Priority::parse("urgent"), None);
        assert_eq!(Priority::Normal.bits(), 0, "the default costs no bits");
    }
}
