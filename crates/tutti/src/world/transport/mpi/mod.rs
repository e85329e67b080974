//! The MPI transport (feature `mpi`): Open MPI or MPICH through rsmpi.
//!
//! One thread owns MPI: it calls `MPI_Init_thread` and `MPI_Finalize`. In
//! [`ProgressMode::Thread`] it is also the progress thread that makes every
//! other MPI call, so `MPI_THREAD_FUNNELED` suffices (Miguel 2019): locations
//! hand it frames through a lock-free queue ([`Mailslot`]) and it delivers what
//! arrives to the locations' inboxes, waking them. In [`ProgressMode::Poll`]
//! (the default, see its documentation for why) the owner thread only
//! initializes and finalizes; the engine sits behind a mutex, locations start
//! their sends themselves and idle workers drive the rest, one at a time
//! (`MPI_THREAD_SERIALIZED`).
//!
//! The progress thread spins while there is traffic, then yields, then parks
//! with a growing timeout (MPI cannot wake a thread): a frame handed over wakes
//! it at once, an incoming message is seen within the timeout (at most
//! [`MAX_PARK`]).

mod engine;
mod host;
mod raw;
mod rma;
mod sum;

pub(crate) use rma::Window;

use std::sync::mpsc;
use std::sync::Arc;

use crate::loom::{lock, spin_hint, AtomicU64, AtomicUsize, Mutex, Ordering};
use std::task::{Wake, Waker};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use mpi::{Count, Threading};

pub(crate) use engine::EngineStats;
use engine::{Engine, Lent, DEFAULT_CHUNK};

use super::{agree_on_registries, Sink, Transport};
use crate::msg::{codec, Digest};
use crate::world::config::{ProgressMode, TransportKind, WorldConfig};
use crate::world::error::WorldError;
use crate::world::frame::Frame;
use crate::world::inbox::Mailslot;

/// Longest the idle progress thread sleeps before looking at MPI again.
pub(crate) const MAX_PARK: Duration = Duration::from_millis(1);
/// How long the progress thread spins after the last traffic before yielding.
const SPIN_FOR: Duration = Duration::from_micros(100);
/// How long it yields before parking.
const YIELD_FOR: Duration = Duration::from_millis(2);
/// The first park timeout after the yielding phase (doubling up to [`MAX_PARK`]).
const MIN_PARK: Duration = Duration::from_micros(20);
/// Hybrid transport: a waiting location's spin drives MPI every this many
/// rounds (and looks at the rings in every one).
/// While one of this rank's quiescence waves is being summed over MPI, every
/// round drives MPI: a location spinning in a fence waits for nothing else.
const ENGINE_EVERY: u32 = 8;
/// [`ENGINE_EVERY`] for a job on one host: every other rank is a host mate,
/// so MPI carries no frame at all, only the quiescence sums (driven in every
/// round while one is in flight) and the program's own MPI calls (which take
/// the engine themselves). A pass through MPI costs 100–250 ns, more than ten
/// looks at the rings, and a message that lands during one waits for it to
/// end.
const ENGINE_EVERY_ONE_HOST: u32 = 64;

type UserFn = Box<dyn FnOnce(&SimpleCommunicator) + Send>;

/// What the locations hand the engine: a frame for a rank, or their rank's
/// contribution to a quiescence wave's sums (summed over the ranks by MPI).
pub(crate) enum Out {
    Frame(usize, Frame),
    /// A data frame's head and its lent body (`Transport::send_borrowed`).
    Lent(usize, Vec<u8>, Lent),
    Sum(u64, [u64; 2]),
}

/// Requests to the progress thread.
enum Command {
    Run(UserFn),
    Abort(String),
    Shutdown,
}

/// What start-up learned on the MPI thread.
struct Hello {
    rank: usize,
    ranks: usize,
    describe: String,
    /// Hybrid transport with host mates: how to reach them.
    host: Option<host::Plan>,
}

/// The engine's home in polling mode.
type Polled = Arc<Mutex<Option<Engine>>>;

/// MPI initialized, the world not yet attached: [`Mpi::init`]'s result.
pub(crate) struct Pending {
    hello: Hello,
    /// The world's sink, or why this rank cannot start (the job is then
    /// taken down: the other ranks wait in start-up collectives).
    attach: mpsc::Sender<Result<Arc<dyn Sink>, String>>,
    locations: usize,
    outgoing: Arc<Mailslot<Out>>,
    control: Arc<Mailslot<Command>>,
    polled: Option<(mpsc::Receiver<Engine>, mpsc::Sender<()>)>,
    owner: JoinHandle<()>,
}

impl Pending {
    pub(crate) fn rank(&self) -> usize {
        self.hello.rank
    }

    pub(crate) fn ranks(&self) -> usize {
        self.hello.ranks
    }

    /// Connects the engine (and the rings to the host mates) to the world's
    /// sink and starts moving frames.
    pub(crate) fn attach(self, sink: Arc<dyn Sink>) -> Result<Mpi, WorldError> {
        let host = match &self.hello.host {
            Some(plan) => {
                match host::Mates::start(plan, self.hello.ranks, self.locations, Arc::clone(&sink))
                {
                    Ok(m) => Some(m),
                    Err(e) => {
                        // The owner thread takes the job down with it.
                        let _ = self.attach.send(Err(format!(
                            "rank {}: cannot join the shared-memory system of its host: {e}",
                            self.hello.rank
                        )));
                        let _ = self.owner.join();
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        // The owner thread waits for this; if it has died, its panic is reported
        // when it is joined at shutdown.
        let _ = self.attach.send(Ok(sink));
        let (engine, finalize) = match self.polled {
            Some((engine_rx, finalize)) => match engine_rx.recv() {
                Ok(e) => (Some(Arc::new(Mutex::new(Some(e)))), Some(finalize)),
                Err(_) => (None, Some(finalize)),
            },
            None => (None, None),
        };
        let mpi = Mpi {
            rank: self.hello.rank,
            ranks: self.hello.ranks,
            describe: match &host {
                Some(h) => format!("{}; {}", h.describe(), self.hello.describe),
                None => self.hello.describe,
            },
            host,
            outgoing: self.outgoing,
            control: self.control,
            engine,
            finalize,
            owner: Mutex::new(Some(self.owner)),
            waves_handed: AtomicU64::new(0),
            waves_summed: AtomicU64::new(0),
        };
        if let Some(h) = &mpi.host {
            // A frame from a host mate that breaks the protocol takes the
            // job down as one from MPI does (`MPI_Abort`, naming the rank).
            h.abort_with(mpi.aborter());
        }
        Ok(mpi)
    }
}

/// The MPI transport; see the module documentation.
pub(crate) struct Mpi {
    rank: usize,
    ranks: usize,
    describe: String,
    /// Hybrid transport: the rings to this rank's host mates.
    host: Option<host::Mates>,
    outgoing: Arc<Mailslot<Out>>,
    control: Arc<Mailslot<Command>>,
    /// Polling mode: the engine, `None` after shutdown.
    engine: Option<Polled>,
    /// Polling mode: tells the owner thread to finalize.
    finalize: Option<mpsc::Sender<()>>,
    owner: Mutex<Option<JoinHandle<()>>>,
    /// Quiescence waves handed to the engine ([`Transport::sum_wave`]) and
    /// waves the engine has summed, as last seen by a thread that drove it:
    /// `handed > summed` while a wave is in flight (or its total not seen yet),
    /// and then a spinning location drives MPI in every round. Both only
    /// grow, and both are only a hint of how often to drive MPI (`Relaxed`):
    /// a stale value makes a round drive it once more, or once less often
    /// than every round, never stops it.
    waves_handed: AtomicU64,
    waves_summed: AtomicU64,
}

/// Takes the job down with `MPI_Abort` from any thread: through the engine
/// (polling mode) or the progress thread ([`Transport::abort`] of [`Mpi`]).
#[derive(Clone)]
pub(crate) struct Aborter {
    rank: usize,
    ranks: usize,
    engine: Option<Polled>,
    control: Arc<Mailslot<Command>>,
}

impl Aborter {
    pub(crate) fn abort(&self, why: &str) -> ! {
        match &self.engine {
            Some(e) => {
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    if let Ok(g) = e.try_lock() {
                        if let Some(engine) = g.as_ref() {
                            engine.abort(why);
                        }
                        break;
                    }
                    thread::yield_now();
                }
            }
            None => {
                self.control.push(Command::Abort(why.to_string()));
                thread::sleep(Duration::from_secs(10));
            }
        }
        crate::world::say(&format!(
            "rank {} of {}: MPI did not end the job; stopping this process: {why}",
            self.rank, self.ranks
        ));
        std::process::abort()
    }
}

/// Unparks a thread (the progress thread's waker for its queues).
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn level_name(t: Threading) -> &'static str {
    match t {
        Threading::Single => "single",
        Threading::Funneled => "funneled",
        Threading::Serialized => "serialized",
        Threading::Multiple => "multiple",
    }
}

/// `TUTTI_MPI_CHUNK`: the largest MPI message of a body (tests lower it to
/// exercise the splitting of messages ≥ 2^31 bytes without allocating them).
fn chunk_from_env() -> Result<usize, WorldError> {
    match std::env::var("TUTTI_MPI_CHUNK") {
        Err(_) => Ok(DEFAULT_CHUNK),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=DEFAULT_CHUNK).contains(&n) => Ok(n),
            _ => Err(WorldError::BadSetting {
                var: "TUTTI_MPI_CHUNK",
                value: v,
                expected: "a number of bytes in 1..=2^30",
            }),
        },
    }
}

impl Mpi {
    /// One progress round of the engine (polling mode, its lock held); notes
    /// how many waves it has summed.
    fn drive(&self, engine: &mut Option<Engine>) -> bool {
        let Some(engine) = engine.as_mut() else {
            return false;
        };
        let moved = engine.progress();
        self.waves_summed
            .store(engine.sums_completed(), Ordering::Relaxed);
        moved
    }

    /// Starts the MPI thread, initializes MPI on it and checks that every rank
    /// has the same number of locations.
    pub(crate) fn init(config: &WorldConfig) -> Result<Pending, WorldError> {
        let chunk = chunk_from_env()?;
        let mode = config.progress();
        let per_rank = config.locations() as u64;
        // The process's registry as it is now: types must be registered before
        // the world is built.
        let digest = crate::msg::registered().digest();
        let outgoing = Arc::new(Mailslot::new());
        let control = Arc::new(Mailslot::new());
        let (hello_tx, hello_rx) = mpsc::channel::<Result<Hello, WorldError>>();
        let (attach_tx, attach_rx) = mpsc::channel::<Result<Arc<dyn Sink>, String>>();
        let hybrid = (config.transport() == TransportKind::Hybrid).then(|| config.pretend_hosts());
        let (engine_tx, engine_rx) = mpsc::channel::<Engine>();
        let (finalize_tx, finalize_rx) = mpsc::channel::<()>();
        let (out, ctl) = (Arc::clone(&outgoing), Arc::clone(&control));
        let owner = thread::Builder::new()
            .name("tutti-mpi".into())
            .spawn(move || {
                let wanted = match mode {
                    ProgressMode::Thread => Threading::Funneled,
                    ProgressMode::Poll => Threading::Serialized,
                };
                let Some((universe, plan)) =
                    start_mpi(wanted, mode, per_rank, &digest, hybrid, &hello_tx)
                else {
                    return;
                };
                let sink = match attach_rx.recv() {
                    Ok(Ok(sink)) => sink,
                    Ok(Err(why)) => {
                        crate::world::say(&why);
                        universe.world().abort(1)
                    }
                    // The world did not start after all: finalize and leave.
                    Err(_) => {
                        drop(universe);
                        return;
                    }
                };
                if let Some(plan) = &plan {
                    // Every rank has mapped its mates' segments: their names
                    // can go (`host.rs`). Every rank passes the barrier,
                    // those alone on their host too.
                    universe.world().barrier();
                    if plan.mates.len() > 1 {
                        host::forget(plan);
                    }
                }
                let engine = Engine::new(universe.world(), out, sink, chunk);
                match mode {
                    ProgressMode::Thread => progress_thread(engine, ctl),
                    ProgressMode::Poll => {
                        let _ = engine_tx.send(engine);
                        // The world drains and drops the engine, then says so.
                        let _ = finalize_rx.recv();
                    }
                }
                drop(universe);
            })
            .map_err(|e| WorldError::Transport(format!("cannot start the MPI thread: {e}")))?;
        let hello = match hello_rx.recv() {
            Ok(Ok(h)) => h,
            Ok(Err(e)) => {
                let _ = owner.join();
                return Err(e);
            }
            Err(_) => {
                let _ = owner.join();
                return Err(WorldError::Transport(
                    "the MPI thread ended during start-up".into(),
                ));
            }
        };
        crate::world::record_panics();
        Ok(Pending {
            hello,
            attach: attach_tx,
            locations: config.locations(),
            outgoing,
            control,
            polled: (mode == ProgressMode::Poll).then_some((engine_rx, finalize_tx)),
            owner,
        })
    }

    fn aborter(&self) -> Aborter {
        Aborter {
            rank: self.rank,
            ranks: self.ranks,
            engine: self.engine.clone(),
            control: Arc::clone(&self.control),
        }
    }

    fn engine_stats(&self) -> Option<EngineStats> {
        let e = self.engine.as_ref()?;
        let g = lock(&**e);
        g.as_ref().map(|e| e.stats)
    }

    /// Runs `f` with the user communicator, on the MPI thread (thread mode) or
    /// under the engine's lock (polling mode).
    fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&SimpleCommunicator) -> R + Send + 'static,
    ) -> Option<R> {
        if let Some(e) = &self.engine {
            let mut g = lock(&**e);
            return g.as_mut().map(|e| {
                // As in `command`: queued frames first.
                e.start_queued();
                f(&e.user)
            });
        }
        let (tx, rx) = mpsc::channel();
        self.control.push(Command::Run(Box::new(move |c| {
            let _ = tx.send(f(c));
        })));
        rx.recv().ok()
    }
}

/// Initializes MPI on the calling (owner) thread and reports to `hello`;
/// `hybrid` (the pretend hosts, if any) also finds the host mates, whose plan
/// comes back with the universe when there are any.
fn start_mpi(
    wanted: Threading,
    mode: ProgressMode,
    per_rank: u64,
    digest: &Digest,
    hybrid: Option<Option<usize>>,
    hello: &mpsc::Sender<Result<Hello, WorldError>>,
) -> Option<(Universe, Option<host::Plan>)> {
    let fail = |why: String| {
        let _ = hello.send(Err(WorldError::Transport(why)));
    };
    if mpi::environment::is_finalized() {
        fail("MPI was already finalized in this process (one MPI world per process)".into());
        return None;
    }
    let Some((universe, provided)) = mpi::initialize_with_threading(wanted) else {
        fail("MPI was already initialized in this process (one MPI world per process)".into());
        return None;
    };
    if provided < wanted {
        fail(format!(
            "the MPI library offers thread level {} but tutti's {} progress needs {}",
            level_name(provided),
            match mode {
                ProgressMode::Thread => "thread",
                ProgressMode::Poll => "polling",
            },
            level_name(wanted)
        ));
        return None;
    }
    let world = universe.world();
    let rank = world.rank() as usize;
    let ranks = world.size() as usize;
    let mut all = vec![0u64; ranks];
    world.all_gather_into(&per_rank, &mut all[..]);
    if let Some((r, &there)) = all.iter().enumerate().find(|(_, &n)| n != per_rank) {
        fail(
            WorldError::LocationsDiffer {
                here: per_rank as usize,
                there: there as usize,
                rank: r,
            }
            .to_string(),
        );
        return None;
    }
    if let Err(e) = exchange_registries(&world, digest) {
        let _ = hello.send(Err(e));
        return None;
    }
    let lib = mpi::environment::library_version()
        .ok()
        .and_then(|v| {
            // "Open MPI v4.1.4, package: …" or "MPICH Version: 4.0 …": the name
            // and version.
            let first = v.lines().next()?.trim();
            Some(first.split(',').next().unwrap_or(first).trim().to_string())
        })
        .unwrap_or_else(|| "unknown MPI library".into());
    let (major, minor) = mpi::environment::version();
    let plan = hybrid.map(|pretend| host::plan(&world, pretend));
    let _ = hello.send(Ok(Hello {
        rank,
        ranks,
        describe: format!(
            "{lib} (MPI {major}.{minor}), thread level {}, {} progress",
            level_name(provided),
            match mode {
                ProgressMode::Thread => "progress-thread",
                ProgressMode::Poll => "polled",
            }
        ),
        // A host of one rank has no mates to reach.
        host: plan.clone().filter(|p| p.mates.len() > 1),
    }));
    Some((universe, plan))
}

/// Every rank sends every other its registry digest (`MPI_Allgatherv`), and
/// all check them alike ([`agree_on_registries`]).
fn exchange_registries(world: &SimpleCommunicator, digest: &Digest) -> Result<(), WorldError> {
    let mut mine = Vec::new();
    codec::encode(digest, &mut mine).map_err(|e| {
        WorldError::Transport(format!("cannot encode the message registry digest: {e}"))
    })?;
    let too_large = || {
        WorldError::Transport(format!(
            "the message registry digest of {} bytes is too large to exchange",
            mine.len()
        ))
    };
    let len = Count::try_from(mine.len()).map_err(|_| too_large())?;
    let mut lens: Vec<Count> = vec![0; world.size() as usize];
    world.all_gather_into(&len, &mut lens[..]);
    let mut displs = Vec::with_capacity(lens.len());
    let mut total: Count = 0;
    for &l in &lens {
        displs.push(total);
        total = total.checked_add(l).ok_or_else(too_large)?;
    }
    let mut all = vec![0u8; total as usize];
    {
        let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        world.all_gather_varcount_into(&mine[..], &mut part);
    }
    let each: Vec<&[u8]> = lens
        .iter()
        .zip(&displs)
        .map(|(&l, &d)| &all[d as usize..(d + l) as usize])
        .collect();
    agree_on_registries(&each)
}

/// The progress thread's loop (thread mode): it owns the engine until shutdown.
fn progress_thread(mut engine: Engine, control: Arc<Mailslot<Command>>) {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut last = Instant::now();
        let mut park = MIN_PARK;
        loop {
            while let Some(cmd) = control.pop() {
                if command(&mut engine, cmd) {
                    return;
                }
            }
            if engine.progress() {
                last = Instant::now();
                park = MIN_PARK;
                continue;
            }
            let idle = last.elapsed();
            if idle < SPIN_FOR {
                spin_hint();
                continue;
            }
            if idle < YIELD_FOR {
                thread::yield_now();
                continue;
            }
            // Park until a frame or a command is pushed (the push wakes us) or
            // the timeout passes (incoming MPI messages cannot wake us).
            if engine.register_idle(&waker) {
                continue;
            }
            if let Some(cmd) = control.pop_or_register(&waker) {
                if command(&mut engine, cmd) {
                    return;
                }
                continue;
            }
            thread::park_timeout(park);
            park = (park * 2).min(MAX_PARK);
        }
    }));
    if let Err(p) = run {
        let msg = crate::runtime::payload_text(&*p).to_string();
        engine.abort(&format!("its MPI progress thread panicked: {msg}"));
    }
}

/// Carries out a command on the progress thread; true once it has shut down.
fn command(engine: &mut Engine, cmd: Command) -> bool {
    match cmd {
        Command::Run(f) => {
            // Frames handed over before the call must be on their way, or a peer
            // waiting for one would wait while `f` waits for the peer.
            engine.start_queued();
            f(&engine.user)
        }
        Command::Abort(why) => engine.abort(&why),
        Command::Shutdown => {
            engine.shutdown();
            return true;
        }
    }
    false
}

impl Transport for Mpi {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn send(&self, to: usize, frame: Frame) {
        if let Some((rings, mate)) = self.host.as_ref().and_then(|h| h.route(to)) {
            return rings.send(mate, frame);
        }
        // Polling mode: a location that finds the engine free starts its send
        // itself (no trip through the queue).
        let mut frame = frame;
        if let Some(e) = &self.engine {
            if let Ok(mut g) = e.try_lock() {
                if let Some(engine) = g.as_mut() {
                    match engine.send_now(to, frame) {
                        Ok(()) => return,
                        Err(f) => frame = f,
                    }
                }
            }
        }
        self.outgoing.push(Out::Frame(to, frame));
    }

    fn send_borrowed(&self, to: usize, head: Vec<u8>, body: &[u8]) {
        if let Some((rings, mate)) = self.host.as_ref().and_then(|h| h.route(to)) {
            return rings.send_borrowed(mate, head, body);
        }
        let engine_gone = self.engine.as_ref().is_some_and(|e| lock(&**e).is_none());
        if engine_gone || body.is_empty() {
            // Nothing would drive the send: this frame fails like any other
            // handed over after shutdown.
            let body = Some(body.to_vec());
            return self.send(to, Frame { head, body });
        }
        let left = Arc::new(AtomicUsize::new(usize::MAX));
        // SAFETY: this function returns only once `left` reads 0, so `body`
        // (borrowed for the whole call) outlives every read of the engine.
        let lent = unsafe { Lent::new(body, Arc::clone(&left)) };
        self.outgoing.push(Out::Lent(to, head, lent));
        self.start_sends();
        let mut rounds = 0u32;
        // Acquire: pairs with the engine's Release count-down.
        while left.load(Ordering::Acquire) != 0 {
            rounds = rounds.wrapping_add(1);
            if self.engine.is_some() {
                self.progress();
            } else if rounds > 1000 {
                // The progress thread does the work: leave it the core.
                thread::yield_now();
            } else {
                spin_hint();
            }
        }
    }

    fn sum_wave(&self, epoch: u64, value: [u64; 2]) -> bool {
        // Counted before it is handed over, so that `waves_summed` (what the
        // engine has done) does not run ahead of it.
        self.waves_handed.fetch_add(1, Ordering::Relaxed);
        self.outgoing.push(Out::Sum(epoch, value));
        self.start_sends();
        true
    }

    fn progress(&self) -> bool {
        let rings = self.host.as_ref().is_some_and(|h| h.shm().progress());
        let Some(e) = &self.engine else {
            return rings;
        };
        let Ok(mut g) = e.try_lock() else {
            return rings;
        };
        self.drive(&mut g) || rings
    }

    fn spin_round(&self, round: u32) -> bool {
        let Some(h) = &self.host else {
            return self.progress();
        };
        // Hybrid: a reply from a host mate lands in the rings, where one
        // load tells whether it did; a pass through MPI (its progress
        // engine, the tests of the posted receives) costs several hundred
        // ns, more than a whole message through the rings, so a spinning
        // location drives MPI (frames of other hosts, the quiescence sums)
        // only every few rounds (rarely when every rank is a host mate) —
        // but in every round while a wave of this rank is being summed,
        // which only MPI advances.
        let rings = h.shm().spin_round(round);
        let summing =
            self.waves_handed.load(Ordering::Relaxed) > self.waves_summed.load(Ordering::Relaxed);
        let every = if h.one_host() {
            ENGINE_EVERY_ONE_HOST
        } else {
            ENGINE_EVERY
        };
        if round % every != 0 && !summing {
            return rings;
        }
        let Some(e) = &self.engine else {
            return rings;
        };
        let Ok(mut g) = e.try_lock() else {
            return rings;
        };
        self.drive(&mut g) || rings
    }

    fn start_sends(&self) {
        // A job on one host hands MPI no frame (they all go through the
        // rings, which need no start), only the quiescence sums, which it
        // queues before it calls this: with the queue empty there is
        // nothing to start, and the engine's lock is left alone.
        if self.host.as_ref().is_some_and(|h| h.one_host()) && self.outgoing.is_empty() {
            return;
        }
        if let Some(e) = &self.engine {
            if let Ok(mut g) = e.try_lock() {
                if let Some(engine) = g.as_mut() {
                    engine.start_sends();
                }
            }
        }
    }

    fn polled(&self) -> bool {
        self.engine.is_some() || self.host.as_ref().is_some_and(|h| h.shm().polled())
    }

    fn abort(&self, why: &str) -> ! {
        self.aborter().abort(why)
    }

    fn shutdown(&self) {
        let Some(owner) = lock(&self.owner).take() else {
            return;
        };
        // The rings first: every mate has sent its last frame once this
        // returns, while MPI frames from other hosts wait in MPI.
        if let Some(h) = &self.host {
            h.shm().shutdown();
        }
        match &self.engine {
            Some(e) => {
                let engine = {
                    let mut g = lock(&**e);
                    g.take()
                };
                if let Some(mut engine) = engine {
                    engine.shutdown();
                    drop(engine);
                }
                if let Some(f) = &self.finalize {
                    let _ = f.send(());
                }
            }
            None => self.control.push(Command::Shutdown),
        }
        if owner.join().is_err() {
            crate::world::say(&format!("rank {}: the MPI thread panicked", self.rank));
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// [`World::with_mpi`](crate::world::World::with_mpi).
pub(crate) fn with_mpi<R: Send + 'static>(
    transport: &Arc<dyn Transport>,
    f: impl FnOnce(&SimpleCommunicator) -> R + Send + 'static,
) -> Option<R> {
    transport.as_any().downcast_ref::<Mpi>()?.run(f)
}

/// The engine's counters, if the world uses MPI in polling mode.
#[allow(dead_code)]
pub(crate) fn stats(transport: &Arc<dyn Transport>) -> Option<EngineStats> {
    transport.as_any().downcast_ref::<Mpi>()?.engine_stats()
}
