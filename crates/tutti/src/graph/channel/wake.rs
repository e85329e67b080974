//! The wake side of the channels: an actor's wake cell ([`Cell`]) with its
//! firing-rule gate, and the count of a location's active actors that tells
//! its router when all are parked ([`Activity`]).

use crate::loom::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::sync::Signal;

/// What a location's actors share: how many of them are not parked, and the
/// router's signal, notified when that count drops to zero.
pub(crate) struct Activity {
    pub(crate) active: AtomicUsize,
    pub(crate) router: Signal,
    /// Tokens that reached a consumer that had already terminated.
    pub(crate) discarded: AtomicU64,
    /// Tokens put one-sided from here.
    pub(crate) puts: AtomicU64,
    /// Tokens of one-sided channels that did not fit a slot (sent two-sided).
    pub(crate) oversize: AtomicU64,
}

impl Activity {
    pub(crate) fn new(actors: usize) -> Activity {
        Activity {
            active: AtomicUsize::new(actors),
            router: Signal::new(),
            discarded: AtomicU64::new(0),
            puts: AtomicU64::new(0),
            oversize: AtomicU64::new(0),
        }
    }

    /// An actor parked (after its signal recorded the park).
    pub(crate) fn parked(&self) {
        // AcqRel: the router that reads 0 sees everything the actors did.
        if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.router.notify();
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.active.load(Ordering::Acquire) == 0
    }
}

/// Whether one port of an actor is ready under Pond's firing rule: an input
/// holds a token or has ended, an output has room or its consumer ended.
pub(crate) trait Probe: Send + Sync {
    fn ready(&self) -> bool;
}

/// The wake cell of one actor.
///
/// # The firing rule in the notifier
///
/// An actor with [`Firing::AllReady`](super::Firing::AllReady) has a *gate*:
/// the probes of its connected ports. A notify then wakes it only if every
/// probe reads ready, so a patch with four inputs is woken once per step,
/// not once per arriving halo. No wake-up is lost: ports become ready only
/// through notifies (a push, a close, a pop — every pop, not only one the
/// producer asked for, see `channel/mod.rs` —, a credit), and each notifier
/// makes its port ready, then runs a `SeqCst`
/// fence, then reads every probe. Of two notifiers making two ports ready,
/// at least one sees the other's port ready (the fences order them), so the
/// notify that makes the last port ready sees all of them ready. The actor
/// itself only makes ports less ready (it takes and sends), and it checks the
/// rule before it parks. Modelled in `loom_tests::a_gated_notify_is_never_lost`
/// and, with an input refilling while a pop frees the output,
/// `loom_tests::all_ready_fires_when_room_frees_after_a_refill`.
pub(crate) struct Cell {
    pub(crate) signal: Signal,
    pub(super) activity: Arc<Activity>,
    gate: std::sync::OnceLock<Box<[Arc<dyn Probe>]>>,
}

impl Cell {
    pub(crate) fn new(activity: Arc<Activity>) -> Cell {
        Cell {
            signal: Signal::new(),
            activity,
            gate: std::sync::OnceLock::new(),
        }
    }

    /// Sets the actor's gate (before its task and its neighbours start).
    pub(crate) fn set_gate(&self, probes: Vec<Arc<dyn Probe>>) {
        let _ = self.gate.set(probes.into_boxed_slice());
    }

    /// A port of this actor changed: run its `act()` (again) — if it has a
    /// gate, only when every port is ready (see the type's docs).
    #[inline]
    pub(crate) fn notify(&self) {
        if let Some(gate) = self.gate.get() {
            fence(Ordering::SeqCst);
            if !gate.iter().all(|p| p.ready()) {
                return;
            }
        }
        self.notify_always();
    }

    /// Wakes the actor whatever its ports (the end of a run).
    #[inline]
    pub(crate) fn notify_always(&self) {
        // Counted active before it is woken, so the location is never seen
        // idle while a wake-up is on its way.
        self.signal.notify_then(|| {
            self.activity.active.fetch_add(1, Ordering::AcqRel);
        });
    }
}
