//! The trace clock and the offset of a rank's clock from rank 0's.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

/// Nanoseconds of `CLOCK_MONOTONIC` (the same clock for every process of a
/// machine; never 0 once the machine has been up for a nanosecond).
#[inline]
pub(crate) fn now() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_MONOTONIC always exists on
    // the platforms tutti builds for (Linux), so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64) * 1_000_000_000 + t.tv_nsec as u64
}

/// One ping-pong with rank 0: our clock when the ping left (`sent`), rank 0's
/// clock when it answered (`remote`), our clock when the answer came back
/// (`back`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub(crate) sent: u64,
    pub(crate) remote: u64,
    pub(crate) back: u64,
}

impl Sample {
    /// Round-trip time in nanoseconds.
    pub(crate) fn rtt(&self) -> u64 {
        self.back.saturating_sub(self.sent)
    }

    /// What to add to our clock to read rank 0's, assuming rank 0 answered
    /// half-way through the round trip (the error is at most half the RTT).
    pub(crate) fn offset(&self) -> i64 {
        let mid = self.sent / 2 + self.back / 2 + (self.sent % 2 + self.back % 2) / 2;
        self.remote as i64 - mid as i64
    }
}

/// The offset from the sample with the smallest round trip (the one that waited
/// least in queues, so its midpoint is the best estimate), with that RTT.
pub(crate) fn best_offset(samples: &[Sample]) -> Option<(i64, u64)> {
    samples
        .iter()
        .min_by_key(|s| s.rtt())
        .map(|s| (s.offset(), s.rtt()))
}
