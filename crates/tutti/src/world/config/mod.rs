//! World configuration: the settings' types and defaults, [`WorldBuilder`]
//! (one method per setting) and the resolved [`WorldConfig`] a world runs
//! with. How each setting is resolved is `resolve.rs`; how the launcher
//! (`mpirun`) and the host's cores are recognised, `host.rs`.

use std::fmt;
use std::time::Duration;

mod host;
mod resolve;

pub use host::launched_by_mpi;

use super::error::WorldError;
use host::Launch;

/// Default aggregation factor between locations of one process: none. `tutti
/// bench world` (2 workers, medians of 5 runs, three times) streams 2.5–4.2 M
/// typed messages/s unaggregated and 4.1–5.2 M/s at factor 64: batching saves
/// one queue operation and wake-up check per message, too little to make
/// messages wait for a flush or the time bound.
pub const DEFAULT_AGGREGATION_INPROC: usize = 1;
/// Default aggregation factor towards other ranks. `tutti mpi-bench --what rate
/// --aggregation F` on 2 ranks (8-byte messages, medians of 5 runs, twice each):
/// 5.5–6.9 M messages/s at 32, 6.7–7.4 M at 64, 7.9–8.3 M at 128, 9.4–9.8 M at
/// 256, against 0.6–1 M unaggregated; 256 such messages still fit one 4 KiB
/// eager MPI message.
pub const DEFAULT_AGGREGATION_MPI: usize = 256;
/// Default largest batch, in bytes, towards another rank.
pub const DEFAULT_AGGREGATION_BYTES: usize = 16 * 1024;
/// Largest allowed [`aggregation_bytes`](WorldBuilder::aggregation_bytes): a
/// batch must fit the MPI engine's posted receives (64 KiB, with room for a
/// frame's announcement and padding).
pub const MAX_AGGREGATION_BYTES: usize = 60 * 1024;
/// Default time bound after which a buffered message is sent anyway.
pub const DEFAULT_FLUSH_AFTER: Duration = Duration::from_micros(500);

/// Which engine carries frames between processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TransportKind {
    /// [`Hybrid`](TransportKind::Hybrid) when the program was launched by
    /// `mpirun` (and built with the `mpi` feature), shared memory when a
    /// system is named (`TUTTI_SYSTEM`), otherwise in-process.
    #[default]
    Auto,
    /// One process of threads: locations exchange typed values, nothing is
    /// serialized.
    InProcess,
    /// MPI (Open MPI or MPICH through rsmpi): one rank per process, every
    /// frame between ranks by MPI, host mates included
    /// (`TUTTI_TRANSPORT=mpi`).
    Mpi,
    /// The default under `mpirun`: MPI between hosts, and between the ranks
    /// of one host (found with `MPI_Comm_split_type`) the shared-memory
    /// rings of [`Shm`](TransportKind::Shm), in one segment per host that the
    /// job creates and removes itself; large bodies between host mates are
    /// copied once, from the sender's memory (cross-memory attach). One rank
    /// per process.
    Hybrid,
    /// Shared memory between the processes of one host, which form a named
    /// system (`TUTTI_SYSTEM`): one rank per process.
    Shm,
}

impl TransportKind {
    /// Parses `auto`, `inproc` (or `in-process`, `threads`), `mpi`, `hybrid`
    /// or `shm`.
    ///
    /// ```
    /// use tutti::world::TransportKind;
    /// assert_eq!(TransportKind::parse("MPI"), Some(TransportKind::Mpi));
    /// assert_eq!(TransportKind::parse("tcp"), None);
    /// ```
    pub fn parse(s: &str) -> Option<TransportKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(TransportKind::Auto),
            "inproc" | "in-process" | "threads" => Some(TransportKind::InProcess),
            "mpi" => Some(TransportKind::Mpi),
            "hybrid" => Some(TransportKind::Hybrid),
            "shm" | "shared-memory" => Some(TransportKind::Shm),
            _ => None,
        }
    }

    /// Whether the ranks are joined by MPI ([`Mpi`](TransportKind::Mpi) or
    /// [`Hybrid`](TransportKind::Hybrid)).
    ///
    /// ```
    /// use tutti::world::TransportKind;
    /// assert!(TransportKind::Hybrid.uses_mpi());
    /// assert!(!TransportKind::Shm.uses_mpi());
    /// ```
    pub fn uses_mpi(self) -> bool {
        matches!(self, TransportKind::Mpi | TransportKind::Hybrid)
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportKind::Auto => "auto",
            TransportKind::InProcess => "in-process",
            TransportKind::Mpi => "mpi",
            TransportKind::Hybrid => "hybrid (shared memory within a host, MPI between hosts)",
            TransportKind::Shm => "shared memory",
        })
    }
}

/// Who drives an external engine's progress (Miguel 2019 §5: funneled MPI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProgressMode {
    /// One progress thread owns every MPI call (`MPI_THREAD_FUNNELED`): locations
    /// hand it frames through lock-free queues, it keeps receives posted and
    /// delivers what arrives, waking the receiving location. Messages move while
    /// every worker computes.
    Thread,
    /// No progress thread: idle workers, and locations that wait, drive MPI
    /// themselves, one at a time (`MPI_THREAD_SERIALIZED`). Saves a core; messages
    /// only move when some worker has nothing else to do.
    Poll,
}

impl Default for ProgressMode {
    /// [`ProgressMode::Poll`], chosen by `tutti mpi-bench` (2 ranks on a 2-core
    /// machine, README's MPI section): a progress thread needs a core of its
    /// own; sharing the cores with the workers, every message pays a hand-over
    /// between threads (about 100× the one-way latency and a tenth of the
    /// unaggregated message rate of polling), which outweighs its better
    /// large-message bandwidth (about 2×) and its overlap of transfers with
    /// computation. On machines with a spare core per rank, try
    /// `TUTTI_PROGRESS=thread`.
    fn default() -> Self {
        ProgressMode::Poll
    }
}

impl ProgressMode {
    /// Parses `thread` or `poll`.
    ///
    /// ```
    /// use tutti::world::ProgressMode;
    /// assert_eq!(ProgressMode::parse("poll"), Some(ProgressMode::Poll));
    /// assert_eq!(ProgressMode::parse("never"), None);
    /// ```
    pub fn parse(s: &str) -> Option<ProgressMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "thread" | "funneled" => Some(ProgressMode::Thread),
            "poll" | "polling" | "serialized" => Some(ProgressMode::Poll),
            _ => None,
        }
    }
}

impl fmt::Display for ProgressMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProgressMode::Thread => "thread (funneled)",
            ProgressMode::Poll => "poll (serialized)",
        })
    }
}

/// Configures and starts a [`World`](super::World).
///
/// Every setting has a builder method and an environment variable; the builder wins
/// over the environment, the environment over the defaults:
///
/// | variable | builder | meaning | default |
/// |---|---|---|---|
/// | `TUTTI_TRANSPORT` | [`transport`](WorldBuilder::transport) | `auto`, `inproc`, `mpi`, `hybrid` or `shm` | `auto`: hybrid when launched by `mpirun`, shared memory when `TUTTI_SYSTEM` is set, else in-process |
/// | `TUTTI_HOSTS` | — | hybrid: split the ranks of each host into this many pretend hosts (consecutive ranks together), so one machine exercises the MPI path between hosts and the rings within one | none (the real hosts) |
/// | `TUTTI_SYSTEM` | [`system`](WorldBuilder::system) | the named system of processes to create or join (shared memory) | none |
/// | `TUTTI_RANKS` | [`processes`](WorldBuilder::processes) | processes in the named system | none (required with `TUTTI_SYSTEM`) |
/// | `TUTTI_RANK` | — | this process's rank in the system (set by `tutti launch`) | the first free rank |
/// | `TUTTI_LOCATIONS` | [`locations`](WorldBuilder::locations) | locations per rank | the rank's workers |
/// | `TUTTI_WORKERS` | [`workers`](WorldBuilder::workers) | worker threads per rank | cores ÷ ranks on this host (a rank the launcher bound to cores: those cores) |
/// | `TUTTI_AGGREGATION` | [`aggregation`](WorldBuilder::aggregation) | messages per destination buffer before it is sent (ARMI's aggregation factor; 1 = none) | per transport, see [`DEFAULT_AGGREGATION_INPROC`], [`DEFAULT_AGGREGATION_MPI`] |
/// | `TUTTI_AGGREGATION_BYTES` | [`aggregation_bytes`](WorldBuilder::aggregation_bytes) | bytes per buffer for another rank before it is sent | [`DEFAULT_AGGREGATION_BYTES`] |
/// | `TUTTI_FLUSH_US` | [`flush_after`](WorldBuilder::flush_after) | time bound: a buffered message is sent at most this long after it was buffered | [`DEFAULT_FLUSH_AFTER`] |
/// | `TUTTI_PROGRESS` | [`progress`](WorldBuilder::progress) | `thread` or `poll` (MPI progress, see [`ProgressMode`]) | [`ProgressMode::default`] |
///
/// ```
/// use tutti::world::{TransportKind, World};
/// let world = World::builder()
///     .transport(TransportKind::InProcess)
///     .locations(3)
///     .workers(2)
///     .aggregation(8)
///     .build()
///     .unwrap();
/// assert_eq!(world.locations(), 3);
/// assert_eq!(world.config().aggregation(), 8);
/// ```
#[derive(Clone, Debug, Default)]
pub struct WorldBuilder {
    transport: Option<TransportKind>,
    locations: Option<usize>,
    workers: Option<usize>,
    aggregation: Option<usize>,
    aggregation_bytes: Option<usize>,
    flush_after: Option<Duration>,
    progress: Option<ProgressMode>,
    system: Option<String>,
    processes: Option<usize>,
    env: bool,
    pub(crate) trace: Option<std::path::PathBuf>,
}

impl WorldBuilder {
    /// A builder that reads the `TUTTI_*` environment variables for every setting
    /// it is not given.
    pub fn new() -> WorldBuilder {
        WorldBuilder {
            env: true,
            ..WorldBuilder::default()
        }
    }

    /// Ignores the environment: only the builder's settings and the defaults count
    /// (the launcher is still recognised, since it decides the transport).
    pub fn ignore_env(mut self) -> WorldBuilder {
        self.env = false;
        self
    }

    /// The transport; see [`TransportKind`].
    pub fn transport(mut self, t: TransportKind) -> WorldBuilder {
        self.transport = Some(t);
        self
    }

    /// Locations per rank (at least 1).
    pub fn locations(mut self, n: usize) -> WorldBuilder {
        self.locations = Some(n);
        self
    }

    /// Worker threads of this rank's runtime (at least 1).
    pub fn workers(mut self, n: usize) -> WorldBuilder {
        self.workers = Some(n);
        self
    }

    /// Messages buffered per destination before the buffer is sent (at least 1;
    /// 1 sends every message at once).
    pub fn aggregation(mut self, factor: usize) -> WorldBuilder {
        self.aggregation = Some(factor);
        self
    }

    /// Largest batch towards another rank, in bytes (64 to
    /// [`MAX_AGGREGATION_BYTES`]). A message larger than this travels on its own.
    pub fn aggregation_bytes(mut self, bytes: usize) -> WorldBuilder {
        self.aggregation_bytes = Some(bytes);
        self
    }

    /// Time bound: buffered messages are sent at most this long after they were
    /// buffered, even if nobody flushes.
    pub fn flush_after(mut self, d: Duration) -> WorldBuilder {
        self.flush_after = Some(d);
        self
    }

    /// Who drives MPI progress; see [`ProgressMode`].
    pub fn progress(mut self, p: ProgressMode) -> WorldBuilder {
        self.progress = Some(p);
        self
    }

    /// The named system of processes on this host to create or join: selects
    /// the shared-memory transport ([`TransportKind::Shm`]). The first process
    /// creates it, the others join; see [`processes`](Self::processes).
    pub fn system(mut self, name: impl Into<String>) -> WorldBuilder {
        self.system = Some(name.into());
        self
    }

    /// Processes in the named system (shared memory): start-up waits until
    /// this many have joined.
    pub fn processes(mut self, n: usize) -> WorldBuilder {
        self.processes = Some(n);
        self
    }

    /// Records a timeline trace into `path` (under a launcher, one file per
    /// rank, `path` with `.rankN` before the extension), as `TUTTI_TRACE`
    /// does; see [`crate::diag::trace`]. Written out at the end of every
    /// [`World::run`](super::World::run) and when the world is dropped.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("tutti-doc-world-{}.json", std::process::id()));
    /// let world = tutti::world::World::builder().locations(2).workers(1).trace(&path).build().unwrap();
    /// world.run(|loc| async move { loc.barrier().await });
    /// tutti::diag::trace::stop().unwrap();
    /// assert!(std::fs::read_to_string(&path).unwrap().contains("\"rank 0\""));
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn trace(mut self, path: impl AsRef<std::path::Path>) -> WorldBuilder {
        self.trace = Some(path.as_ref().to_path_buf());
        self
    }

    /// Starts the world; see [`World`](super::World) for what start-up decides.
    pub fn build(self) -> Result<super::World, WorldError> {
        super::World::start(self)
    }
}

/// The settings a world runs with, resolved at start-up. `Display` prints them
/// (the `--verbose` output of the CLI).
///
/// ```
/// let world = tutti::world::World::builder().locations(2).workers(1).build().unwrap();
/// let text = world.config().to_string();
/// assert!(text.contains("locations per rank: 2"));
/// ```
#[derive(Clone, Debug)]
pub struct WorldConfig {
    transport: TransportKind,
    locations: usize,
    workers: usize,
    oversubscribed: bool,
    aggregation: usize,
    aggregation_bytes: usize,
    flush_after: Duration,
    progress: ProgressMode,
    launch: Option<Launch>,
    warnings: Vec<String>,
    system: Option<String>,
    processes: usize,
    rank_wanted: Option<usize>,
    pretend_hosts: Option<usize>,
    pub(crate) rank: usize,
    pub(crate) ranks: usize,
    /// What the transport says about itself (MPI library, thread level).
    pub(crate) engine: String,
}

impl WorldConfig {
    /// The transport in use (never [`TransportKind::Auto`]).
    pub fn transport(&self) -> TransportKind {
        self.transport
    }

    /// Locations per rank.
    pub fn locations(&self) -> usize {
        self.locations
    }

    /// Worker threads of this rank's runtime.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Whether this host runs more ranks than it has cores, as
    /// `mpirun --oversubscribe` may. The host's cores are this process's, or,
    /// when the launcher bound the rank to cores of its own (its mask is
    /// narrower than its parent's, as with `mpirun -n 2` on two cores), the
    /// launcher's. The ranks then take turns on the cores, so
    /// a rank waiting for a message must not spin for it: the sender needs the
    /// core. Its idle workers yield after a few polls instead of spinning on the
    /// engine, and waits do not spin before they park. (Extra idle workers of
    /// ranks that each have a core of their own still spin: they give way to the
    /// rank's busy worker when the OS asks.)
    ///
    /// ```
    /// let world = tutti::world::World::builder().ignore_env().workers(1).locations(1).build().unwrap();
    /// assert!(!world.config().oversubscribed());
    /// ```
    pub fn oversubscribed(&self) -> bool {
        self.oversubscribed
    }

    /// Messages per destination buffer before it is sent.
    pub fn aggregation(&self) -> usize {
        self.aggregation
    }

    /// Largest batch towards another rank, in bytes.
    pub fn aggregation_bytes(&self) -> usize {
        self.aggregation_bytes
    }

    /// The time bound on buffered messages.
    pub fn flush_after(&self) -> Duration {
        self.flush_after
    }

    /// Who drives MPI progress.
    pub fn progress(&self) -> ProgressMode {
        self.progress
    }

    /// The named system (shared-memory transport), if any.
    pub fn system(&self) -> Option<&str> {
        self.system.as_deref()
    }

    /// Processes of the named system (1 without one).
    pub fn processes(&self) -> usize {
        self.processes
    }

    /// The rank asked for with `TUTTI_RANK`.
    pub(crate) fn rank_wanted(&self) -> Option<usize> {
        self.rank_wanted
    }

    /// `TUTTI_HOSTS`: pretend hosts per real host (hybrid transport).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn pretend_hosts(&self) -> Option<usize> {
        self.pretend_hosts
    }

    /// Warnings from start-up (also printed to stderr once).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

impl fmt::Display for WorldConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "tutti world: rank {} of {}", self.rank, self.ranks)?;
        write!(f, "  transport: {}", self.transport)?;
        if let Some(l) = &self.launch {
            write!(f, " (launched with {}={})", l.var, l.size)?;
        }
        writeln!(f)?;
        if !self.engine.is_empty() {
            writeln!(f, "  engine: {}", self.engine)?;
        }
        if self.transport.uses_mpi() {
            writeln!(f, "  progress: {}", self.progress)?;
        }
        writeln!(
            f,
            "  locations per rank: {} ({} in all)",
            self.locations,
            self.locations * self.ranks
        )?;
        writeln!(
            f,
            "  workers per rank: {}{}",
            self.workers,
            if self.oversubscribed {
                " (more ranks than cores on this host: waits do not spin)"
            } else {
                ""
            }
        )?;
        write!(
            f,
            "  aggregation: {} messages or {} bytes per destination, sent within {} µs",
            self.aggregation,
            self.aggregation_bytes,
            self.flush_after.as_micros()
        )?;
        for w in &self.warnings {
            write!(f, "\n  warning: {w}")?;
        }
        Ok(())
    }
}
