//! The shared-memory transport's engine: [`Shm`] joins or creates the named
//! system (`system.rs`), sends frames by writing them in slot-sized fragments
//! into the destination's mailbox ring (`ring.rs`), and runs the one receiving
//! thread per process that drains this process's mailbox, reassembles frames,
//! hands them to the world (`Sink`), writes the heartbeat and watches the
//! other members for death. The transport's protocol (start-up, faults) is
//! the module documentation of `transport::shm`. This file joins, sends and
//! watches; `receive.rs` is the receiving side (the thread, the drain shared
//! with polling workers, reassembly, reclaiming a dead producer's slots).

mod cma;
mod doze;
#[cfg(feature = "fuzzing")]
mod fuzz;
mod receive;

#[cfg(feature = "fuzzing")]
pub(crate) use fuzz::mailbox as fuzz_mailbox;
use receive::{receive, Consumer, Waiter};

use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::backstop::Backstop;
use super::ring::{Push, FIRST, LAST};
use super::system::{
    self, MailboxMap, System, CLAIMING, DEAD, JOINING, LEAVING, LEFT, READY, SLOT_BYTES,
};
use crate::loom::{lock, spin_hint, unmodelled, AtomicBool, AtomicU64, Mutex, Ordering};
use crate::msg::codec;
use crate::world::config::WorldConfig;
use crate::world::error::WorldError;
use crate::world::frame::Frame;
use crate::world::transport::{agree_on_registries, Sink, Transport};

/// How often a process writes its heartbeat and looks at the others.
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(10);
/// How long start-up waits for every rank to join (`TUTTI_SHM_TIMEOUT_S`).
const JOIN_TIMEOUT: Duration = Duration::from_secs(60);
/// A waiting location's spin drains the mailbox fully (taking the
/// consumer's lock, looking for a dead producer's slot) every this many
/// rounds, and in between only looks whether the head slot is committed.
const FULL_ROUND_EVERY: u32 = 16;
/// Bytes before a frame's head in the slot stream: head length (u32) and
/// whether a body follows (u8).
const PREFIX: usize = 5;

/// How a system's messages name its members.
#[derive(Clone, Debug)]
pub(crate) enum Members {
    /// A system of its own (`tutti launch`): members are the world's ranks,
    /// and a new process may take a dead one's rank.
    Ranks,
    /// The ranks of one host under the hybrid transport: member `i` is world
    /// rank `mates[i]`, and no process takes a dead rank (`mpirun` ends
    /// the job).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Mates(Vec<usize>),
}

impl Members {
    /// Member `m` as the program knows it: its world rank.
    pub(crate) fn rank(&self, m: usize) -> String {
        match self {
            Members::Ranks => format!("rank {m}"),
            Members::Mates(w) => match w.get(m) {
                Some(r) => format!("rank {r}"),
                None => format!("member {m} of the host's system"),
            },
        }
    }

    fn ranks(&self, ms: &[usize]) -> String {
        let all: Vec<String> = ms.iter().map(|&m| self.rank(m)).collect();
        all.join(", ")
    }
}

/// What one process shares between its senders and its receiving thread.
struct Inner {
    rank: usize,
    ranks: usize,
    /// How messages name the members.
    members: Members,
    /// The smallest body lent by cross-memory attach (`cma.rs`;
    /// `usize::MAX`: none).
    cma_min: usize,
    /// What start-up found about cross-memory attach, for [`Shm::describe`].
    cma: String,
    /// This process's incarnation of its rank (`system.rs`).
    incarnation: u64,
    /// The incarnation of each rank whose mailbox `peers` holds (or held
    /// until it died).
    incarnations: Vec<AtomicU64>,
    /// Per dead rank taken by a new process: that incarnation, and the
    /// position of this mailbox the reader must pass before it takes the
    /// new one in (every fragment of the dead one lies before it).
    reviving: Mutex<Vec<Option<(u64, u64)>>>,
    system: System,
    mine: MailboxMap,
    /// Every member's mailbox (`None` for this rank and dead ranks); the
    /// lock serializes this process's senders towards that rank, so the
    /// fragments of one frame are consecutive among this rank's.
    peers: Vec<Mutex<Option<MailboxMap>>>,
    /// Bit `r`: rank `r` died.
    dead: AtomicU64,
    /// Bit `r`: the world was told that rank `r` died.
    announced: AtomicU64,
    /// Messages dropped because their rank had died, per rank.
    dropped: Vec<AtomicU64>,
    /// Slots of this mailbox reclaimed from producers that died mid-write.
    reclaimed: AtomicU64,
    stop: AtomicBool,
    consumer: Mutex<Consumer>,
    /// The world's sink, once attached (for polling workers).
    sink: std::sync::OnceLock<Arc<dyn Sink>>,
    /// Whether a runtime worker blocks on the mailbox's futex (`Waiter`)
    /// now, and whether the receiving thread dozes meanwhile
    /// (`backstop.rs`).
    backstop: Backstop,
    /// Whether runtime workers block on the mailbox's futex (`Waiter`, set
    /// when the first one does; `TUTTI_SHM_WAITER=0` turns it off): waiting locations
    /// then leave the spinning to the runtime, and the receiving thread
    /// is only a backstop that never sleeps on the futex (the worker is
    /// its only sleeper, so a sender's wake-up always reaches it).
    waiter: AtomicBool,
    /// The receiving thread, once it runs: a lender waiting for its copy
    /// wakes it from a nap (`cma.rs`).
    receiving: std::sync::OnceLock<thread::Thread>,
    /// This process's eventfd that ends a doze (`None`: no dozing).
    bell: Option<std::os::fd::OwnedFd>,
}

impl Inner {
    /// Ends the receiving thread's nap, if it naps (`cma.rs`).
    fn wake_receiving(&self) {
        if let Some(t) = self.receiving.get() {
            t.unpark();
        }
    }

    fn is_dead(&self, r: usize) -> bool {
        self.dead.load(Ordering::Acquire) & (1 << r) != 0
    }

    /// Marks rank `r` dead (once), removing its mailbox segment. The
    /// member entry becomes DEAD only if it still holds the incarnation that
    /// died (a new process may have taken the rank already).
    fn bury(&self, r: usize) {
        if self.dead.fetch_or(1 << r, Ordering::AcqRel) & (1 << r) != 0 {
            return;
        }
        *lock(&self.peers[r]) = None;
        let known = self.incarnations[r].load(Ordering::Acquire);
        // Never a newer incarnation that has taken the rank meanwhile.
        self.system.header().members[r].state.bury(known);
        let _ = super::sys::unlink(&system::mailbox_segment(&self.system.name, r, known));
        let m = &self.members;
        crate::world::say(&match m {
            Members::Ranks => format!(
                "system {:?}: rank {r} (incarnation {known}) died without leaving; its mailbox \
                 is removed and messages to it fail until a new process takes the rank (rank \
                 {} goes on)",
                self.system.name, self.rank
            ),
            Members::Mates(_) => format!(
                "{}: its host mate {} died; its mailbox is removed and messages to it fail",
                m.rank(self.rank),
                m.rank(r)
            ),
        });
    }

    /// Takes in every dead rank that a new process has taken (READY, a
    /// newer incarnation), once this mailbox's reader has passed every
    /// fragment the dead incarnation wrote and the world was told of the
    /// death: the dead one's unfinished frame is dropped, the new mailbox
    /// mapped, messages to the rank go through again, and `seen` tells the
    /// new process it may start. Only the receiving thread calls this.
    fn revive(&self) {
        let waiting = self.dead.load(Ordering::Acquire) & self.announced.load(Ordering::Acquire);
        if waiting == 0 {
            return;
        }
        let ring = self.mine.ring();
        let h = self.system.header();
        for r in (0..self.ranks).filter(|r| waiting & (1 << r) != 0) {
            let incarnation = self.system.incarnation(r);
            let st = h.members[r].state.get();
            if st != READY
                || incarnation <= self.incarnations[r].load(Ordering::Relaxed)
                || self.system.died(r)
            {
                continue;
            }
            {
                let mut rv = lock(&self.reviving);
                let target = match rv[r] {
                    Some((i, t)) if i == incarnation => t,
                    _ => {
                        // The dead process claims nothing more: all it wrote
                        // lies before the positions claimed so far.
                        let t = ring.claimed();
                        rv[r] = Some((incarnation, t));
                        t
                    }
                };
                if ring.consumed() < target {
                    continue;
                }
                rv[r] = None;
            }
            let map = match MailboxMap::open(&self.system.name, r, incarnation) {
                Ok(m) => m,
                Err(e) => {
                    crate::world::say(&format!(
                        "system {:?}: rank {r} (incarnation {incarnation}) cannot be taken \
                         in yet: {e}",
                        self.system.name
                    ));
                    continue;
                }
            };
            if let Some(n) = lock(&self.consumer).forget(r) {
                crate::world::say(&format!(
                    "system {:?}: rank {}'s mailbox: the unfinished frame of rank {r}'s dead \
                     incarnation ({n} bytes) is dropped",
                    self.system.name, self.rank
                ));
            }
            *lock(&self.peers[r]) = Some(map);
            self.incarnations[r].store(incarnation, Ordering::Release);
            self.announced.fetch_and(!(1 << r), Ordering::AcqRel);
            self.dead.fetch_and(!(1 << r), Ordering::AcqRel);
            if let Some(sink) = self.sink.get() {
                sink.rank_revived(r);
            }
            self.system.set_seen(self.rank, r, incarnation);
            crate::world::say(&format!(
                "system {:?}: rank {r} is back (incarnation {incarnation}, pid {}); rank {} \
                 takes it in",
                self.system.name,
                h.members[r].pid.load(Ordering::Relaxed),
                self.rank
            ));
        }
    }

    /// Tells the world of every rank buried since the last call, once
    /// each: what waits on it fails. Only the receiving thread calls
    /// this — never a sender, which may hold locks the world's watchers
    /// take (a node sends under its state lock).
    fn announce_deaths(&self) {
        let dead = self.dead.load(Ordering::Acquire);
        let new = dead & !self.announced.fetch_or(dead, Ordering::AcqRel);
        if new == 0 {
            return;
        }
        if let Some(sink) = self.sink.get() {
            for r in (0..self.ranks).filter(|r| new & (1 << r) != 0) {
                sink.rank_died(r);
            }
        }
    }

    /// Looks at every other member; true if someone took the system down.
    fn check(&self) {
        let h = self.system.header();
        h.members[self.rank]
            .heartbeat
            .store(system::now_ms(), Ordering::Relaxed);
        if let Some((who, why)) = self.system.aborted() {
            if who != self.rank {
                crate::world::say(&format!(
                    "{} of system {:?}: {} took the system down: {why}",
                    self.members.rank(self.rank),
                    self.system.name,
                    self.members.rank(who)
                ));
                self.system.leave(self.rank);
                std::process::exit(1);
            }
        }
        for r in 0..self.ranks {
            if r == self.rank || self.is_dead(r) {
                continue;
            }
            let replaced =
                self.system.incarnation(r) != self.incarnations[r].load(Ordering::Relaxed);
            if replaced || self.system.died(r) {
                self.bury(r);
            }
        }
        self.announce_deaths();
        self.revive();
    }

    fn abort(&self, why: &str) -> ! {
        let text = format!(
            "{} of system {:?}: {why}",
            self.members.rank(self.rank),
            self.system.name
        );
        self.system.set_abort(self.rank, &text);
        for p in &self.peers {
            if let Ok(g) = p.try_lock() {
                if let Some(m) = g.as_ref() {
                    m.ring().nudge();
                }
            }
        }
        crate::world::say(&format!("the system cannot continue: {text}"));
        self.system.leave(self.rank);
        std::process::exit(1)
    }

    /// Writes a frame of `head` and `body` into rank `to`'s mailbox, waiting
    /// while it is full; a large body goes by cross-memory attach where it
    /// can (`cma.rs`: the receiver copies it straight out of `body`, and
    /// this returns once it has).
    fn send(&self, to: usize, head: &[u8], body: Option<&[u8]>) {
        if self.is_dead(to) {
            self.dropped[to].fetch_add(1, Ordering::Relaxed);
            return;
        }
        let guard = lock(&self.peers[to]);
        let Some(mb) = guard.as_ref() else {
            self.dropped[to].fetch_add(1, Ordering::Relaxed);
            return;
        };
        let ring = mb.ring();
        let sent = match body {
            Some(b) if self.lends_to(to, b.len()) => match self.lend(to, ring, head, b) {
                cma::Lent::Copied => return,
                cma::Lent::Refused => self.push_frame(to, ring, head, body),
                cma::Lent::Died => false,
            },
            _ => self.push_frame(to, ring, head, body),
        };
        if !sent {
            drop(guard);
            self.bury(to);
            self.dropped[to].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes the frame of `head` and `body` (`None`: no body; a lent
    /// body's descriptor travels as [`PREFIX`]'s flag `2`, see `cma.rs`)
    /// into `ring`, rank `to`'s mailbox, in slot-sized fragments, waiting
    /// while it is full; false if `to` died meanwhile (nothing more is
    /// written; the caller buries it).
    fn push_frame(
        &self,
        to: usize,
        ring: &system::Mailbox,
        head: &[u8],
        body: Option<&[u8]>,
    ) -> bool {
        self.push_flagged(
            to,
            ring,
            head,
            body.unwrap_or(&[]),
            u8::from(body.is_some()),
        )
    }

    fn push_flagged(
        &self,
        to: usize,
        ring: &system::Mailbox,
        head: &[u8],
        body: &[u8],
        flag: u8,
    ) -> bool {
        let mut prefix = [0u8; PREFIX];
        let Ok(head_len) = u32::try_from(head.len()) else {
            self.abort(&format!("a frame head of {} bytes", head.len()))
        };
        prefix[..4].copy_from_slice(&head_len.to_le_bytes());
        prefix[4] = flag;
        let parts: [&[u8]; 3] = [&prefix, head, body];
        let total = PREFIX + head.len() + body.len();
        let (mut part, mut off, mut done) = (0usize, 0usize, 0usize);
        while done < total {
            // The next fragment: up to a slot's worth of `parts`, as at most
            // three slices, gathered by the ring straight into the slot.
            let mut chunk: [&[u8]; 3] = [&[]; 3];
            let (mut pieces, mut len) = (0usize, 0usize);
            while len < SLOT_BYTES && part < parts.len() {
                let p = parts[part];
                let n = (p.len() - off).min(SLOT_BYTES - len);
                chunk[pieces] = &p[off..off + n];
                pieces += 1;
                len += n;
                off += n;
                if off == p.len() {
                    part += 1;
                    off = 0;
                }
            }
            let chunk = &chunk[..pieces];
            let flags =
                if done == 0 { FIRST } else { 0 } | if done + len == total { LAST } else { 0 };
            let stall = done > 0 && test_stall(total);
            let mut waited = 0u32;
            let mut since = None;
            loop {
                let claimed = || {
                    if stall {
                        stall_for_ever(self.rank, to);
                    }
                };
                match ring.push_with(self.rank, flags, chunk, claimed) {
                    Ok(Push::Done) => break,
                    Ok(Push::Full) => {}
                    Err(e) => self.abort(&format!(
                        "{}'s mailbox is corrupt: {e}",
                        self.members.rank(to)
                    )),
                }
                waited += 1;
                if waited < 64 {
                    spin_hint();
                } else if waited < 256 {
                    thread::yield_now();
                } else {
                    thread::sleep(Duration::from_micros(50));
                    let t = *since.get_or_insert_with(Instant::now);
                    if t.elapsed() >= CHECK_EVERY {
                        since = Some(Instant::now());
                        if !self.still_there(to) {
                            return false;
                        }
                    }
                }
            }
            done += len;
        }
        true
    }

    /// For a sender waiting on rank `to` (its mailbox full, or its copy of
    /// a lent body): false if `to` died or was replaced; ends this process
    /// if someone took the system down.
    fn still_there(&self, to: usize) -> bool {
        let replaced = self.system.incarnation(to) != self.incarnations[to].load(Ordering::Relaxed);
        if replaced || self.system.died(to) {
            return false;
        }
        if let Some((who, why)) = self.system.aborted() {
            crate::world::say(&format!(
                "{}: {} took the system down: {why}",
                self.members.rank(self.rank),
                self.members.rank(who)
            ));
            self.system.leave(self.rank);
            std::process::exit(1);
        }
        true
    }
}

/// Test hook: `TUTTI_SHM_TEST_STALL_BYTES=n` makes the first frame of at
/// least `n` bytes that this process sends stall for ever between the
/// claim and the commit of its second fragment (a test kills it there).
fn test_stall(total: usize) -> bool {
    static AT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    static DONE: unmodelled::AtomicBool = unmodelled::AtomicBool::new(false);
    let at = *AT.get_or_init(|| {
        std::env::var("TUTTI_SHM_TEST_STALL_BYTES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(usize::MAX)
    });
    total >= at && !DONE.swap(true, Ordering::Relaxed)
}

fn stall_for_ever(rank: usize, to: usize) -> ! {
    crate::world::say(&format!(
        "rank {rank}: stalled after claiming a slot of rank {to}'s mailbox \
         (TUTTI_SHM_TEST_STALL_BYTES)"
    ));
    loop {
        thread::sleep(Duration::from_secs(3600));
    }
}

/// Joined, the world not yet attached.
pub(crate) struct Pending {
    inner: Arc<Inner>,
}

impl Pending {
    pub(crate) fn rank(&self) -> usize {
        self.inner.rank
    }

    pub(crate) fn ranks(&self) -> usize {
        self.inner.ranks
    }

    /// Starts the receiving thread.
    pub(crate) fn attach(self, sink: Arc<dyn Sink>) -> Result<Shm, WorldError> {
        let _ = self.inner.sink.set(Arc::clone(&sink));
        let inner = Arc::clone(&self.inner);
        let polled = std::env::var("TUTTI_SHM_POLL").as_deref() != Ok("0");
        let receiver = thread::Builder::new()
            .name(format!("tutti-shm-{}", inner.rank))
            .spawn(move || receive(inner, sink, polled))
            .map_err(|e| {
                WorldError::Transport(format!("cannot start the receiving thread: {e}"))
            })?;
        Ok(Shm {
            polled,
            inner: self.inner,
            receiver: Mutex::new(Some(receiver)),
        })
    }
}

/// The shared-memory transport; see the module documentation.
pub(crate) struct Shm {
    inner: Arc<Inner>,
    /// Whether idle workers and waiting locations drain the mailbox too.
    polled: bool,
    receiver: Mutex<Option<JoinHandle<()>>>,
}

impl Shm {
    /// Creates or joins the system, waits for every rank, and checks that
    /// all agree on locations and message registry.
    pub(crate) fn init(config: &WorldConfig) -> Result<Pending, WorldError> {
        let name = config.system().ok_or(WorldError::BadSetting {
            var: "TUTTI_SYSTEM",
            value: String::new(),
            expected: "the name of the system to create or join",
        })?;
        Shm::join(
            name,
            config.processes(),
            config.rank_wanted(),
            config.locations(),
            Members::Ranks,
        )
    }

    /// [`init`](Self::init) with the settings given: system `name` of
    /// `ranks` processes, this one rank `rank_wanted` (else the first free),
    /// every rank with `locations` locations, whose messages name the
    /// members as `members` says.
    pub(crate) fn join(
        name: &str,
        ranks: usize,
        rank_wanted: Option<usize>,
        locations: usize,
        members: Members,
    ) -> Result<Pending, WorldError> {
        let system = System::open_or_create(name, ranks)?;
        let rank = system.claim(rank_wanted)?;
        let incarnation = system.incarnation(rank);
        let mine = match MailboxMap::create(name, rank, incarnation) {
            Ok(m) => m,
            Err(e) => {
                system.header().members[rank].state.set(DEAD, incarnation);
                return Err(e);
            }
        };
        let mut digest = Vec::new();
        codec::encode(&crate::msg::registered().digest(), &mut digest).map_err(|e| {
            WorldError::Transport(format!("cannot encode the message registry digest: {e}"))
        })?;
        system.ready(rank, locations, &digest)?;
        let h = system.header();
        let timeout = std::env::var("TUTTI_SHM_TIMEOUT_S")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .map_or(JOIN_TIMEOUT, Duration::from_secs);
        let deadline = Instant::now() + timeout;
        let leave = |e: WorldError| {
            system.leave(rank);
            e
        };
        // Everyone joins.
        loop {
            let mut missing = Vec::new();
            for r in 0..ranks {
                let state = h.members[r].state.get();
                // Published before READY, kept after the member ends.
                let theirs = h.members[r].per_rank.load(Ordering::Relaxed) as usize;
                if matches!(state, READY | LEAVING | LEFT) && theirs != locations {
                    return Err(leave(WorldError::LocationsDiffer {
                        here: locations,
                        there: theirs,
                        rank: r,
                    }));
                }
                match state {
                    READY | LEAVING => {}
                    JOINING | CLAIMING | 0 => missing.push(r),
                    _ => {
                        return Err(leave(WorldError::Transport(format!(
                            "system {name:?}: {} ended before everyone joined",
                            members.rank(r)
                        ))))
                    }
                }
                if r != rank && system.died(r) {
                    return Err(leave(WorldError::Transport(format!(
                        "system {name:?}: {} died while starting",
                        members.rank(r)
                    ))));
                }
            }
            if missing.is_empty() {
                break;
            }
            if let Some((who, why)) = system.aborted() {
                return Err(leave(WorldError::Transport(format!(
                    "system {name:?} was taken down by {}: {why}",
                    members.rank(who)
                ))));
            }
            if Instant::now() > deadline {
                let hint = match members {
                    Members::Ranks => {
                        format!(" (start {ranks} processes, e.g. `tutti launch -n {ranks} -- …`)")
                    }
                    Members::Mates(_) => String::new(),
                };
                return Err(leave(WorldError::Transport(format!(
                    "system {name:?}: {} of the {ranks} did not join within {} s{hint}",
                    members.ranks(&missing),
                    timeout.as_secs()
                ))));
            }
            thread::sleep(Duration::from_micros(500));
        }
        for r in 0..ranks {
            let theirs = h.members[r].per_rank.load(Ordering::Relaxed) as usize;
            if theirs != locations {
                return Err(leave(WorldError::LocationsDiffer {
                    here: locations,
                    there: theirs,
                    rank: r,
                }));
            }
        }
        let digests: Vec<Vec<u8>> = (0..ranks)
            .map(|r| system.digest(r).unwrap_or_default())
            .collect();
        let each: Vec<&[u8]> = digests.iter().map(Vec::as_slice).collect();
        agree_on_registries(&each).map_err(leave)?;
        let incarnations: Vec<u64> = (0..ranks).map(|r| system.incarnation(r)).collect();
        let mut peers = Vec::with_capacity(ranks);
        for (r, &i) in incarnations.iter().enumerate() {
            system.set_seen(rank, r, i);
            if r == rank {
                peers.push(Mutex::new(None));
                continue;
            }
            let m = MailboxMap::open(name, r, i).map_err(|e| leave(WorldError::Transport(e)))?;
            peers.push(Mutex::new(Some(m)));
        }
        let cma_min = cma::threshold();
        let cma = cma::probe(&system, rank, ranks, &members, cma_min);
        if incarnation > 1 {
            // A new process of a dead rank: every other member must have read
            // all the dead one wrote to it, and mapped this one's mailbox,
            // before this one sends or is sent anything.
            loop {
                let behind: Vec<usize> = (0..ranks)
                    .filter(|&r| {
                        r != rank
                            && system.seen(r, rank) != incarnation
                            && h.members[r].state.get() == READY
                            && !system.died(r)
                    })
                    .collect();
                if behind.is_empty() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(leave(WorldError::Transport(format!(
                        "system {name:?}: ranks {behind:?} did not take in incarnation \
                         {incarnation} of rank {rank} within {} s",
                        timeout.as_secs()
                    ))));
                }
                thread::sleep(Duration::from_micros(500));
            }
        }
        Ok(Pending {
            inner: Arc::new(Inner {
                rank,
                ranks,
                members,
                cma_min,
                cma,
                incarnation,
                incarnations: incarnations.into_iter().map(AtomicU64::new).collect(),
                reviving: Mutex::new(vec![None; ranks]),
                system,
                mine,
                peers,
                dead: AtomicU64::new(0),
                announced: AtomicU64::new(0),
                dropped: (0..ranks).map(|_| AtomicU64::new(0)).collect(),
                reclaimed: AtomicU64::new(0),
                stop: AtomicBool::new(false),
                consumer: Mutex::new(Consumer::new(ranks)),
                sink: std::sync::OnceLock::new(),
                backstop: Backstop::new(),
                waiter: AtomicBool::new(false),
                receiving: std::sync::OnceLock::new(),
                bell: super::sys::eventfd().ok(),
            }),
        })
    }

    /// Whether rank `r` died (its messages are refused): as the
    /// receiving thread last found (every [`CHECK_EVERY`]). Every send
    /// asks, so this reads one bit; looking at the process itself
    /// (`/proc`) on every send cost more than the message.
    pub(crate) fn rank_died(&self, r: usize) -> bool {
        r < self.inner.ranks && self.inner.is_dead(r)
    }
}

impl Transport for Shm {
    fn describe(&self) -> String {
        format!(
            "shared memory: system {:?}, {} processes, mailboxes of {} slots × {} bytes, {}",
            self.inner.system.name,
            self.inner.ranks,
            system::SLOTS,
            SLOT_BYTES,
            self.inner.cma
        )
    }

    fn send(&self, to: usize, frame: Frame) {
        self.inner.send(to, &frame.head, frame.body.as_deref());
    }

    fn send_borrowed(&self, to: usize, head: Vec<u8>, body: &[u8]) {
        self.inner.send(to, &head, Some(body));
    }

    fn progress(&self) -> bool {
        match self.inner.sink.get() {
            Some(sink) if !self.inner.stop.load(Ordering::Relaxed) => {
                self.inner.drain(&**sink, false)
            }
            _ => false,
        }
    }

    fn spin_round(&self, round: u32) -> bool {
        // Between full rounds (which also reclaim a dead producer's slot),
        // a spinning location only reads the sequence word of the slot at
        // the mailbox's head: it stays in this core's cache until a
        // producer commits there, so the spin costs no shared traffic, and
        // a spinning consumer never marks the slot, so the producer makes
        // no futex call (`ring.rs`).
        if round % FULL_ROUND_EVERY == 0 || self.inner.mine.ring().ready() {
            return self.progress();
        }
        false
    }

    fn start_sends(&self) {}

    fn polled(&self) -> bool {
        self.polled
    }

    fn input_wakes(&self) -> bool {
        // A worker blocked on the mailbox's futex, or else the receiving
        // thread (which then sleeps on it), is woken by every sender.
        true
    }

    fn location_spins(&self) -> bool {
        !self.inner.waiter.load(Ordering::Relaxed)
    }

    fn idle_waiter(&self) -> Option<Arc<dyn crate::runtime::sleep::IdleWaiter>> {
        let off = std::env::var("TUTTI_SHM_WAITER").as_deref() == Ok("0");
        // `inner.waiter` is set by the first worker that blocks in it: if the
        // runtime's waiter slot is taken already (the I/O driver's), the
        // receiving thread goes on sleeping on the futex itself.
        (self.polled && !off).then(|| {
            Arc::new(Waiter(Arc::clone(&self.inner))) as Arc<dyn crate::runtime::sleep::IdleWaiter>
        })
    }

    fn abort(&self, why: &str) -> ! {
        self.inner.abort(why)
    }

    fn shutdown(&self) {
        let Some(receiver) = lock(&self.receiver).take() else {
            return;
        };
        let inner = &self.inner;
        let h = inner.system.header();
        // Every frame of this rank is in its mailbox: say so, and wait
        // until every other member says the same (or died), while the
        // receiving thread keeps draining.
        let me = &h.members[inner.rank];
        me.state
            .set(LEAVING, me.incarnation.load(Ordering::Relaxed));
        let started = Instant::now();
        let mut told = false;
        loop {
            let waiting: Vec<usize> = (0..inner.ranks)
                .filter(|&r| {
                    r != inner.rank
                        && !inner.is_dead(r)
                        && h.members[r].state.get() == READY
                        && !inner.system.died(r)
                })
                .collect();
            if waiting.is_empty() {
                break;
            }
            if !told && started.elapsed() > Duration::from_secs(10) {
                told = true;
                crate::world::say(&format!(
                    "{}: still waiting for {} to end their world",
                    inner.members.rank(inner.rank),
                    inner.members.ranks(&waiting)
                ));
            }
            thread::sleep(Duration::from_micros(200));
        }
        inner.stop.store(true, Ordering::Release);
        inner.mine.ring().nudge();
        doze::ring(inner);
        if receiver.join().is_err() {
            crate::world::say(&format!(
                "{}: the shared-memory receiving thread panicked",
                inner.members.rank(inner.rank)
            ));
        }
        for (r, d) in inner.dropped.iter().enumerate() {
            let n = d.load(Ordering::Relaxed);
            if n > 0 {
                crate::world::say(&format!(
                    "{}: {n} frame(s) for {} were refused: it had died",
                    inner.members.rank(inner.rank),
                    inner.members.rank(r)
                ));
            }
        }
        let n = inner.reclaimed.load(Ordering::Relaxed);
        if n > 0 {
            crate::world::say(&format!(
                "{}: {n} slot(s) of its mailbox were reclaimed from producers that died \
                 mid-write",
                inner.members.rank(inner.rank)
            ));
        }
        inner.system.leave(inner.rank);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// This process's incarnation of its rank, if `transport` is shared memory.
pub(crate) fn incarnation(transport: &Arc<dyn Transport>) -> Option<u64> {
    transport
        .as_any()
        .downcast_ref::<Shm>()
        .map(|s| s.inner.incarnation)
}

/// Whether rank `r` of the world on `transport` died (shared memory only).
pub(crate) fn rank_died(transport: &Arc<dyn Transport>, r: usize) -> bool {
    transport
        .as_any()
        .downcast_ref::<Shm>()
        .is_some_and(|s| s.rank_died(r))
}
