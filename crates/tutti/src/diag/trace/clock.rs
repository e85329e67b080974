//! The trace clock and the offset of a rank's clock from rank 0's.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

use crate::loom::{unmodelled, Ordering};

/// Whether [`now`] reads the time-stamp counter (set once, when the first trace
/// starts, before recording is switched on).
static TSC: unmodelled::AtomicBool = unmodelled::AtomicBool::new(false);

/// Chooses the trace clock: the time-stamp counter where it is invariant (it
/// ticks at a constant rate, in every state, the same on every core), else
/// `CLOCK_MONOTONIC`.
pub(super) fn choose() {
    TSC.store(invariant_tsc(), Ordering::Relaxed);
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    if std::env::var_os("TUTTI_TRACE_CLOCK").is_some_and(|v| v == "monotonic") {
        return false;
    }
    // Leaf 0x8000_0000 gives the highest extended leaf; 0x8000_0007's EDX bit 8
    // is "invariant TSC".
    use std::arch::x86_64::__cpuid;
    // SAFETY: the `cpuid` instruction exists on every x86_64 CPU and only reads
    // identification registers. Recent Rust versions declare `__cpuid` safe;
    // the block keeps the older ones this crate supports building.
    #[allow(unused_unsafe)]
    unsafe {
        __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

/// A timestamp on the trace clock: ticks of the time-stamp counter (x86_64 with
/// an invariant TSC) or nanoseconds of `CLOCK_MONOTONIC`; never 0. A
/// [`Timebase`] turns ticks into nanoseconds of `CLOCK_MONOTONIC` when events
/// are written out.
#[inline]
pub(crate) fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if TSC.load(Ordering::Relaxed) {
        // SAFETY: `rdtsc` exists on every x86_64 processor and has no
        // preconditions.
        return unsafe { std::arch::x86_64::_rdtsc() }.max(1);
    }
    mono()
}

/// Nanoseconds of `CLOCK_MONOTONIC` (the same clock for every process of a
/// machine; never 0 once the machine has been up for a nanosecond).
#[inline]
pub(crate) fn mono() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_MONOTONIC always exists on
    // the platforms tutti builds for (Linux), so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64) * 1_000_000_000 + t.tv_nsec as u64
}

/// Turns [`now`] readings into nanoseconds of `CLOCK_MONOTONIC`: anchors
/// (a tick and the nanoseconds read at the same moment) are taken when the trace
/// starts and before every write-out formats events, all of which were recorded
/// before that anchor; a tick is interpolated between the anchors around it.
/// An anchor never moves once taken, so an event converts to the same time
/// whichever write-out formats it, and the mapping is monotonic.
#[derive(Debug)]
pub(crate) struct Timebase {
    /// `(tick, ns)`, both increasing; empty when ticks are nanoseconds.
    anchors: Vec<(u64, u64)>,
}

impl Timebase {
    /// A timebase with its first anchor (now).
    pub(super) fn new() -> Timebase {
        let mut tb = Timebase {
            anchors: Vec::new(),
        };
        tb.mark();
        tb
    }

    /// A timebase with the given anchors (tests).
    #[cfg(test)]
    pub(super) fn with_anchors(anchors: Vec<(u64, u64)>) -> Timebase {
        Timebase { anchors }
    }

    /// Takes an anchor: every tick read before it converts exactly from now on.
    pub(super) fn mark(&mut self) {
        if !TSC.load(Ordering::Relaxed) {
            self.anchors.clear();
            return;
        }
        // The reading with the shortest gap between the two ticks around it.
        let (tick, ns) = (0..3)
            .map(|_| {
                let a = now();
                let ns = mono();
                let b = now();
                (b.saturating_sub(a), a / 2 + b / 2, ns)
            })
            .min_by_key(|r| r.0)
            .map(|(_, t, ns)| (t, ns))
            .unwrap_or((now(), mono()));
        match self.anchors.last() {
            Some(&(t, n)) if tick <= t || ns <= n => {}
            _ => self.anchors.push((tick, ns)),
        }
    }

    /// `tick` in nanoseconds of `CLOCK_MONOTONIC`.
    pub(super) fn ns(&self, tick: u64) -> u64 {
        let a = &self.anchors;
        if a.is_empty() {
            return tick;
        }
        if a.len() == 1 {
            // Not yet calibrated: a nominal 1 GHz from the one anchor.
            return (a[0].1 as i128 + (tick as i128 - a[0].0 as i128)).max(1) as u64;
        }
        // The segment around `tick` (the first or last one outside the anchors).
        let i = a.partition_point(|&(t, _)| t <= tick).clamp(1, a.len() - 1);
        let ((t0, n0), (t1, n1)) = (a[i - 1], a[i]);
        let d = (tick as i128 - t0 as i128) * (n1 - n0) as i128 / (t1 - t0) as i128;
        (n0 as i128 + d).max(1) as u64
    }
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
