//! Per-location message counts that name world flows on both sides.
//!
//! Messages from one location to another arrive in the order they were sent,
//! so the n-th message location `a` sends to `b` is the n-th `b` receives from
//! `a`: both sides count, and the flow is `(a, b, n)` with nothing added to the
//! message. Counting starts when the world starts with tracing on. (Two tasks
//! sending from one location at the same time may take their numbers in the
//! other order than their messages enter the queue; their flows then swap.)

use crate::loom::{AtomicU64, Ordering};

/// One location's counts, per peer location.
pub(crate) struct Pairs {
    sent: Box<[AtomicU64]>,
    got: Box<[AtomicU64]>,
}

impl Pairs {
    /// Counts for a world of `locations` locations, if tracing is on.
    pub(crate) fn new(locations: usize) -> Option<Box<Pairs>> {
        if !super::on() {
            return None;
        }
        let zeros = || (0..locations).map(|_| AtomicU64::new(0)).collect();
        Some(Box::new(Pairs {
            sent: zeros(),
            got: zeros(),
        }))
    }

    /// `from` sends a message to `to`.
    pub(crate) fn sent(&self, from: u32, to: u32) {
        if let Some(c) = self.sent.get(to as usize) {
            let n = c.fetch_add(1, Ordering::Relaxed);
            super::world_flow(true, from, to, n);
        }
    }

    /// `to` receives a message from `from`.
    pub(crate) fn got(&self, from: u32, to: u32) {
        if let Some(c) = self.got.get(from as usize) {
            let n = c.fetch_add(1, Ordering::Relaxed);
            super::world_flow(false, from, to, n);
        }
    }
}
