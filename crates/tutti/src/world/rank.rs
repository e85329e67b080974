//! The state one rank shares between its locations, its transport and its
//! collectives: a [`Slot`] per location (inbox, outbox, the quiescence
//! counters), [`Local`] (the slots, the collective rounds, the body-buffer
//! pool, the dead ranks and who watches for them, the stall check) and
//! [`Shared`] (everything a rank's world owns: configuration, `Local`,
//! transport, runtime, aggregation limits), with the sweeper that sends
//! buffered messages within the time bound and the shutdown in `Shared`'s drop.
//!
//! What arrives from other ranks enters through `receive.rs`; the user's
//! handle on all of it is [`World`](super::World) (`world.rs`).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::collective::Rounds;
use super::config::{TransportKind, WorldConfig};
use super::inbox::{Mailslot, Parcel};
use super::location::Current;
use super::outbox::{Limits, Outbox, Outgoing};
use super::pool::Pool;
use super::transport::Transport;
use super::LocationId;
use crate::loom::{lock, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::runtime::Runtime;

/// How long a task waiting for another rank (a location's receive, fence or
/// collective, a channel end) drives a polled engine itself before it lets its
/// worker go: a reply to a small message is due within a round trip (about a
/// microsecond between ranks of one machine), while handing the worker back
/// and being woken through the scheduler costs more than that.
const SPIN_FOR: Duration = Duration::from_micros(30);
/// Engine rounds between looks at the clock and the worker's queues.
const SPIN_CHECK_EVERY: u32 = 16;

/// One location's state on its rank.
pub(crate) struct Slot {
    pub(crate) id: LocationId,
    pub(crate) inbox: Mailslot<Parcel>,
    /// Where the location is in its inbox: the parcel it is reading and the
    /// messages its receives passed over. Kept here, not in a `Location`
    /// handle, so that what one handle left unread (a run's body that ended
    /// with messages still held or a frame half read) waits for the next
    /// handle, as what is still in the inbox does. Only the handle takes it,
    /// so it is uncontended.
    pub(crate) cursor: Mutex<Current>,
    pub(crate) outbox: Mutex<Outbox>,
    /// Messages this location has sent (buffered ones included).
    pub(crate) sent: AtomicU64,
    /// Messages delivered to this location and dropped (handled).
    pub(crate) handled: AtomicU64,
    /// Collectives this location has started.
    epoch: AtomicU64,
    /// Quiescence detections this location has completed: its phase, stamped
    /// on what it sends (only its own handle writes it).
    pub(crate) phase: AtomicU64,
    /// The handled total of the last quiescence wave this location saw (0
    /// before any: the world's start); see the `world` module documentation.
    pub(crate) last_handled: AtomicU64,
    /// This location's aggregation factor; 0 for the world's.
    pub(crate) factor: AtomicUsize,
    /// Whether the outbox holds anything (a hint kept under the outbox lock, so
    /// that flushing an empty outbox takes no lock).
    pub(crate) buffered: AtomicBool,
    /// A `Location` handle for this slot exists.
    taken: AtomicBool,
    /// Message counts naming world flows, when a trace is recorded.
    pub(crate) trace: Option<Box<crate::diag::trace::Pairs>>,
}

impl Slot {
    fn new(id: LocationId, locations: usize) -> Slot {
        Slot {
            id,
            inbox: Mailslot::new(),
            cursor: Mutex::new(Current::new()),
            outbox: Mutex::new(Outbox::new(id)),
            sent: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            phase: AtomicU64::new(0),
            last_handled: AtomicU64::new(0),
            factor: AtomicUsize::new(0),
            buffered: AtomicBool::new(false),
            taken: AtomicBool::new(false),
            trace: crate::diag::trace::Pairs::new(locations),
        }
    }

    /// The epoch of this location's next collective.
    pub(crate) fn next_epoch(&self) -> u64 {
        // Only the location's own handle calls this.
        self.epoch.fetch_add(1, Ordering::Relaxed)
    }

    /// Collectives (quiescence waves included) this location has started.
    pub(crate) fn epochs(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// Claims the location's one handle: false if it is out already.
    pub(crate) fn claim(&self) -> bool {
        !self.taken.swap(true, Ordering::AcqRel)
    }

    /// Gives the location's handle back.
    pub(crate) fn release(&self) {
        self.taken.store(false, Ordering::Release);
    }
}

/// What the transport delivers into: the locations and collectives of this rank.
pub(crate) struct Local {
    pub(crate) rank: usize,
    pub(crate) ranks: usize,
    pub(crate) per_rank: usize,
    pub(crate) slots: Box<[Slot]>,
    pub(crate) rounds: Rounds,
    /// Largest collective value sent inline in a frame.
    pub(crate) inline_max: usize,
    /// Large body buffers for reuse (`pool.rs`).
    pub(crate) pool: Pool,
    /// Ranks that died, and who wants to hear of it (`RankDeath`).
    pub(crate) deaths: Mutex<Deaths>,
    /// This rank's part of the cross-rank stall check (`stall.rs`).
    pub(crate) stall: super::stall::Stall,
    /// The ends of channels between locations on this rank (`channel/`).
    pub(crate) channels: super::channel::Ports,
}

/// Something that waits on other ranks and must stop waiting when one dies
/// (the request/reply core of an RMI location or an actor node): told once
/// per dead rank, on whichever thread detected the death.
pub(crate) trait RankDeath: Send + Sync {
    /// Rank `rank` died; fail everything waiting on it.
    fn rank_died(&self, rank: usize);
}

/// The ranks of this world that died, and the watchers to tell.
#[derive(Default)]
pub(crate) struct Deaths {
    dead: Vec<usize>,
    watchers: Vec<Weak<dyn RankDeath>>,
}

impl Local {
    /// The state of rank `rank` of `ranks`, with `per_rank` locations.
    pub(crate) fn new(rank: usize, ranks: usize, per_rank: usize, inline_max: usize) -> Arc<Local> {
        Arc::new(Local {
            rank,
            ranks,
            per_rank,
            slots: (0..per_rank)
                .map(|i| {
                    Slot::new(
                        LocationId::new((rank * per_rank + i) as u32),
                        ranks * per_rank,
                    )
                })
                .collect(),
            rounds: Rounds::new(per_rank),
            deaths: Mutex::new(Deaths::default()),
            stall: super::stall::Stall::new(ranks),
            inline_max,
            pool: Pool::default(),
            channels: super::channel::Ports::default(),
        })
    }

    /// Tells `watcher` of every rank that dies from now on (and at once of
    /// those already dead). Watchers that are gone are dropped.
    pub(crate) fn watch_deaths(&self, watcher: Weak<dyn RankDeath>) {
        let dead = {
            let mut d = lock(&self.deaths);
            d.watchers.retain(|w| w.strong_count() > 0);
            d.watchers.push(Weak::clone(&watcher));
            d.dead.clone()
        };
        if let Some(w) = watcher.upgrade() {
            for r in dead {
                w.rank_died(r);
            }
        }
    }

    /// Rank `rank` died: records it (once) and fails what waits on it —
    /// every collective, since each includes every rank, and every watcher.
    pub(crate) fn bury(&self, rank: usize) {
        let watchers = {
            let mut d = lock(&self.deaths);
            if d.dead.contains(&rank) {
                return;
            }
            d.dead.push(rank);
            d.watchers.retain(|w| w.strong_count() > 0);
            d.watchers.clone()
        };
        self.rounds.lose(rank);
        self.channels.rank_died(rank, self.per_rank);
        for w in watchers.iter().filter_map(Weak::upgrade) {
            w.rank_died(rank);
        }
    }

    /// Rank `rank` was taken by a new process: it is alive again (for the
    /// stall check and for watchers that look later). Collectives stay lost:
    /// each included the dead process.
    pub(crate) fn revive(&self, rank: usize) {
        lock(&self.deaths).dead.retain(|&r| r != rank);
    }

    /// Which ranks are alive as far as this rank knows (`alive[r]`): not
    /// announced dead by the transport.
    pub(crate) fn alive(&self) -> Vec<bool> {
        let d = lock(&self.deaths);
        (0..self.ranks).map(|r| !d.dead.contains(&r)).collect()
    }

    /// The slot of `id`, if it lives on this rank.
    pub(crate) fn slot_of(&self, id: LocationId) -> Option<&Slot> {
        (id.rank(self.per_rank) == self.rank).then(|| &self.slots[id.local(self.per_rank)])
    }

    /// A broken internal invariant: say so and stop the process.
    #[cold]
    pub(crate) fn fail_invariant(&self, what: &str) -> ! {
        crate::world::say(&format!(
            "rank {} of {}: broken invariant: {what}",
            self.rank, self.ranks
        ));
        std::process::abort()
    }
}

/// Everything one rank's world owns.
pub(crate) struct Shared {
    pub(crate) config: WorldConfig,
    pub(crate) local: Arc<Local>,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) runtime: Runtime,
    pub(crate) limits: Limits,
    sweeper_armed: AtomicBool,
}

impl Shared {
    /// The world state of a rank that starts now.
    pub(crate) fn new(
        config: WorldConfig,
        local: Arc<Local>,
        transport: Arc<dyn Transport>,
        runtime: Runtime,
        limits: Limits,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            config,
            local,
            transport,
            runtime,
            limits,
            sweeper_armed: AtomicBool::new(false),
        })
    }

    /// In polling mode, drives the engine from the calling task until `ready`
    /// holds — for at most [`SPIN_FOR`], and only while no other work waits
    /// for this worker — so that a reply due within a round trip costs no trip
    /// through the scheduler. Returns whether `ready` held. With a progress
    /// thread it returns `false` at once (the thread needs the core more), and
    /// so it does on an oversubscribed host (the sender needs the core more).
    pub(crate) fn spin_until(&self, mut ready: impl FnMut() -> bool) -> bool {
        let t = &self.transport;
        if !t.polled() || !t.location_spins() || self.config.oversubscribed() {
            return false;
        }
        let start = Instant::now();
        let mut rounds = 0u32;
        loop {
            t.spin_round(rounds);
            if ready() {
                return true;
            }
            rounds = rounds.wrapping_add(1);
            if rounds % SPIN_CHECK_EVERY == 0
                && (start.elapsed() >= SPIN_FOR || crate::runtime::work_waiting())
            {
                return false;
            }
            crate::loom::spin_hint();
        }
    }

    /// Hands what left an outbox to its destination.
    pub(crate) fn dispatch(&self, o: Outgoing) {
        match o {
            Outgoing::Local(to, parcel) => match self.local.slot_of(to) {
                Some(slot) => slot.inbox.push(parcel),
                None => self.local.fail_invariant("a local parcel for another rank"),
            },
            Outgoing::Remote(rank, frame) => self.transport.send(rank, frame),
        }
    }

    /// Makes sure the sweeper will look at the outboxes within the time bound.
    pub(crate) fn arm_sweeper(self: &Arc<Self>) {
        if self.sweeper_armed.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let after = self.config.flush_after();
        // Detached: it holds the world weakly and ends on its own.
        drop(self.runtime.spawn(sweep(weak, after)));
    }

    /// A fatal error in the program's use of the world (a mismatched collective,
    /// an undecodable value): with several ranks the job is taken down, since
    /// the other ranks would hang; in one process the calling location panics.
    #[cold]
    pub(crate) fn fail(&self, why: &str) -> ! {
        if self.local.ranks > 1
            || matches!(
                self.config.transport(),
                TransportKind::Mpi | TransportKind::Hybrid | TransportKind::Shm
            )
        {
            self.transport.abort(why)
        }
        panic!("tutti: {why}")
    }
}

/// The sweeper: every half time bound, sends the outboxes that were already
/// non-empty at its previous visit (so no message waits longer than the bound),
/// and re-arms itself while any outbox holds something. Holds the world weakly.
async fn sweep(world: Weak<Shared>, after: std::time::Duration) {
    loop {
        crate::runtime::sleep(after / 2).await;
        let Some(shared) = world.upgrade() else {
            return;
        };
        shared.sweeper_armed.store(false, Ordering::Release);
        let mut left = false;
        let mut remote = false;
        for slot in shared.local.slots.iter() {
            // A location busy with its own outbox flushes it itself soon.
            let Ok(mut outbox) = slot.outbox.try_lock() else {
                left = true;
                continue;
            };
            if outbox.sweep_due() {
                outbox.flush(shared.limits, &mut |o| {
                    remote |= matches!(o, Outgoing::Remote(..));
                    shared.dispatch(o)
                });
                slot.buffered.store(false, Ordering::Relaxed);
            }
            left |= !outbox.is_empty();
        }
        if remote {
            shared.transport.start_sends();
        }
        if !left || shared.sweeper_armed.swap(true, Ordering::AcqRel) {
            return;
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if std::thread::panicking() && self.local.ranks > 1 {
            self.transport.abort(&format!(
                "the program panicked on rank {} while its world was alive{}",
                self.local.rank,
                super::panic_note()
            ));
        }
        // Buffered messages of locations that ended without flushing still go out.
        for slot in self.local.slots.iter() {
            lock(&slot.outbox).flush(self.limits, &mut |o| self.dispatch(o));
        }
        // Behind them, the other ranks hear that this one has ended: a rank still
        // waiting in a collective this one never joins is reported, not left hanging.
        if self.local.ranks > 1 {
            super::stall::end(&self.local, &*self.transport);
        }
        self.transport.shutdown();
        let left: usize = self
            .local
            .slots
            .iter()
            .map(|s| {
                let mut n = 0;
                while let Some(p) = s.inbox.pop() {
                    n += p.messages();
                }
                n
            })
            .sum();
        if left > 0 {
            crate::world::say(&format!(
                "rank {}: the world ended with {left} message(s) never received \
                 (end with a fence: recv_until_quiet)",
                self.local.rank
            ));
        }
    }
}
