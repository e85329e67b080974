//! World configuration: [`WorldBuilder`], the resolved [`WorldConfig`], and how the
//! launcher (`mpirun`) is recognised.
//!
//! Every setting has a builder method and an environment variable; the builder wins
//! over the environment, the environment over the defaults:
//!
//! | variable | builder | meaning | default |
//! |---|---|---|---|
//! | `TUTTI_TRANSPORT` | [`transport`](WorldBuilder::transport) | `auto`, `inproc`, `mpi` or `shm` | `auto`: MPI when launched by `mpirun`, shared memory when `TUTTI_SYSTEM` is set, else in-process |
//! | `TUTTI_SYSTEM` | [`system`](WorldBuilder::system) | the named system of processes to create or join (shared memory) | none |
//! | `TUTTI_RANKS` | [`processes`](WorldBuilder::processes) | processes in the named system | none (required with `TUTTI_SYSTEM`) |
//! | `TUTTI_RANK` | — | this process's rank in the system (set by `tutti launch`) | the first free rank |
//! | `TUTTI_LOCATIONS` | [`locations`](WorldBuilder::locations) | locations per rank | the rank's workers |
//! | `TUTTI_WORKERS` | [`workers`](WorldBuilder::workers) | worker threads per rank | cores ÷ ranks on this host (a rank the launcher bound to cores: those cores) |
//! | `TUTTI_AGGREGATION` | [`aggregation`](WorldBuilder::aggregation) | messages per destination buffer before it is sent (ARMI's aggregation factor; 1 = none) | per transport, see [`DEFAULT_AGGREGATION_INPROC`], [`DEFAULT_AGGREGATION_MPI`] |
//! | `TUTTI_AGGREGATION_BYTES` | [`aggregation_bytes`](WorldBuilder::aggregation_bytes) | bytes per buffer for another rank before it is sent | [`DEFAULT_AGGREGATION_BYTES`] |
//! | `TUTTI_FLUSH_US` | [`flush_after`](WorldBuilder::flush_after) | time bound: a buffered message is sent at most this long after it was buffered | [`DEFAULT_FLUSH_AFTER`] |
//! | `TUTTI_PROGRESS` | [`progress`](WorldBuilder::progress) | `thread` or `poll` (MPI progress, see [`ProgressMode`]) | [`ProgressMode::default`] |

use std::fmt;
use std::time::Duration;

use super::error::WorldError;

/// Default aggregation factor between locations of one process: none. `tutti
/// bench world` (2 workers, medians of 5 runs, three times) streams 2.5–4.2 M
/// typed messages/s unaggregated and 4.1–5.2 M/s at factor 64: batching saves
/// one queue operation and wake-up check per message, too little to make
/// messages wait for a flush or the time bound.
pub const DEFAULT_AGGREGATION_INPROC: usize = 1;
/// Default aggregation factor towards other ranks. `tutti mpi-bench --what rate
/// --factor F` on 2 ranks (8-byte messages, medians of 5 runs, twice each):
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
    /// MPI when the program was launched by `mpirun` (and built with the `mpi`
    /// feature), otherwise in-process.
    #[default]
    Auto,
    /// One process of threads: locations exchange typed values, nothing is
    /// serialized.
    InProcess,
    /// MPI (Open MPI or MPICH through rsmpi): one rank per process.
    Mpi,
    /// Shared memory between the processes of one host, which form a named
    /// system (`TUTTI_SYSTEM`): one rank per process.
    Shm,
}

impl TransportKind {
    /// Parses `auto`, `inproc` (or `in-process`, `threads`), `mpi` or `shm`.
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
            "shm" | "shared-memory" => Some(TransportKind::Shm),
            _ => None,
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportKind::Auto => "auto",
            TransportKind::InProcess => "in-process",
            TransportKind::Mpi => "mpi",
            TransportKind::Shm => "shared memory",
        })
    }
}

/// Who drives an external engine's progress (thesis 002 §5: funneled MPI).
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

/// How the process was launched, as far as the environment tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Launch {
    /// Processes in the job.
    pub(crate) size: usize,
    /// Processes of the job on this host, if the launcher says.
    pub(crate) local_size: Option<usize>,
    /// The variable that gave it away.
    pub(crate) var: &'static str,
}

/// Environment variables set by MPI launchers: Open MPI's `mpirun`, then the
/// PMI/PMIx ones of MPICH's Hydra, Slurm's `srun --mpi` and others.
const SIZE_VARS: [(&str, Option<&str>); 3] = [
    ("OMPI_COMM_WORLD_SIZE", Some("OMPI_COMM_WORLD_LOCAL_SIZE")),
    ("PMI_SIZE", Some("MPI_LOCALNRANKS")),
    ("PMIX_SIZE", None),
];

/// Cores this process may use (at least 1).
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The cores of this host for the ranks a launcher started here, and whether
/// the launcher bound this rank to cores of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cores {
    /// Cores this process may use.
    own: usize,
    /// Cores the launcher shares among its ranks on this host.
    host: usize,
}

impl Cores {
    /// `own` cores for this process, `launcher` (if known) for the process
    /// that started it. A launcher that binds each rank to cores of its own
    /// (Open MPI's default when the ranks fit the cores: `mpirun -n 2` on two
    /// cores gives each rank one) leaves the rank a narrower mask than its
    /// own: the ranks then share the launcher's cores. A rank whose mask is
    /// the launcher's was not bound and sees the host's cores itself.
    fn new(own: usize, launcher: Option<usize>) -> Cores {
        Cores {
            own,
            host: launcher.map_or(own, |l| l.max(own)),
        }
    }

    fn bound(self) -> bool {
        self.own < self.host
    }

    /// Default workers for each of `ranks` ranks on this host: a bound rank
    /// uses its cores, an unbound one its share of the host's.
    fn workers(self, ranks: usize) -> usize {
        if self.bound() {
            self.own
        } else {
            (self.own / ranks.max(1)).max(1)
        }
    }

    /// More ranks than cores: they take turns on the cores.
    fn oversubscribed(self, ranks: usize) -> bool {
        ranks > self.host
    }
}

/// The cores the process that started this one may use (Linux: its
/// `Cpus_allowed_list` in `/proc`), if it can be read.
fn launcher_cores() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        let parent = std::os::unix::process::parent_id();
        let status = std::fs::read_to_string(format!("/proc/{parent}/status")).ok()?;
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
        count_cpu_list(list.trim())
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The number of CPUs in a Linux CPU list such as `0-3,8,10-11`; `None` if it
/// does not parse (or is empty).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn count_cpu_list(list: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in list.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo.parse::<usize>().ok()?, hi.parse::<usize>().ok()?),
            None => {
                let c = part.parse::<usize>().ok()?;
                (c, c)
            }
        };
        n = n.checked_add(hi.checked_sub(lo)? + 1)?;
    }
    (n > 0).then_some(n)
}

/// Whether an MPI launcher (`mpirun`, `mpiexec`, `srun --mpi`, …) started this
/// process, as its environment tells: the same test [`World::from_env`](super::World::from_env)
/// uses to choose the MPI transport. Programs use it to pick defaults that suit
/// a launched job (e.g. one location per rank).
///
/// ```
/// // One location per rank under mpirun, four threads' worth otherwise.
/// let locations = if tutti::world::launched_by_mpi() { 1 } else { 4 };
/// # let _ = locations;
/// ```
pub fn launched_by_mpi() -> bool {
    detect_launch(|v| std::env::var(v).ok()).is_some()
}

/// Recognises an MPI launcher from `var` (a lookup function, so tests need not touch
/// the process environment).
pub(crate) fn detect_launch(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    for (size_var, local_var) in SIZE_VARS {
        if let Some(size) = var(size_var).and_then(|v| v.trim().parse::<usize>().ok()) {
            let local_size = local_var
                .and_then(&var)
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|&n| n > 0);
            return Some(Launch {
                size,
                local_size,
                var: size_var,
            });
        }
    }
    None
}

/// Configures and starts a [`World`](super::World). See the [module
/// documentation](crate::world) for the environment variables.
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

    /// Resolves every setting against the environment `var` and the launcher.
    pub(crate) fn resolve(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<WorldConfig, WorldError> {
        let env = |name: &'static str| if self.env { var(name) } else { None };
        let launch = detect_launch(var);
        let transport = match self.transport {
            Some(t) => t,
            None => match env("TUTTI_TRANSPORT") {
                Some(v) => TransportKind::parse(&v).ok_or(WorldError::BadSetting {
                    var: "TUTTI_TRANSPORT",
                    value: v,
                    expected: "auto, inproc, mpi or shm",
                })?,
                None => TransportKind::Auto,
            },
        };
        let system = self.system.clone().or_else(|| env("TUTTI_SYSTEM"));
        let transport = match (transport, &system) {
            (TransportKind::Auto, Some(_)) => TransportKind::Shm,
            (t, _) => t,
        };
        let mut warnings = Vec::new();
        let transport = match (transport, &launch) {
            (TransportKind::Auto, Some(l)) if cfg!(feature = "mpi") => {
                let _ = l;
                TransportKind::Mpi
            }
            (TransportKind::Auto, Some(l)) if l.size > 1 => {
                return Err(WorldError::MpiNotBuilt {
                    size: l.size,
                    var: l.var,
                })
            }
            (TransportKind::Auto, Some(l)) => {
                warnings.push(format!(
                    "launched by an MPI launcher ({}={}) but built without the `mpi` feature: \
                     running as a single in-process world",
                    l.var, l.size
                ));
                TransportKind::InProcess
            }
            (TransportKind::Auto, None) => TransportKind::InProcess,
            (TransportKind::Mpi, _) if !cfg!(feature = "mpi") => {
                return Err(WorldError::MpiNotBuilt {
                    size: launch.as_ref().map_or(1, |l| l.size),
                    var: "TUTTI_TRANSPORT",
                })
            }
            (TransportKind::InProcess, Some(l)) if l.size > 1 && self.transport.is_none() => {
                warnings.push(format!(
                    "launched as one of {} MPI processes ({}) but the in-process transport was \
                     chosen: every process runs its own independent world",
                    l.size, l.var
                ));
                TransportKind::InProcess
            }
            (t, _) => t,
        };
        let positive = |name: &'static str,
                        given: Option<usize>,
                        min: usize,
                        expected: &'static str|
         -> Result<Option<usize>, WorldError> {
            if let Some(n) = given {
                if n < min {
                    return Err(WorldError::BadSetting {
                        var: name,
                        value: n.to_string(),
                        expected,
                    });
                }
                return Ok(Some(n));
            }
            match env(name) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<usize>() {
                    Ok(n) if n >= min => Ok(Some(n)),
                    _ => Err(WorldError::BadSetting {
                        var: name,
                        value: v,
                        expected,
                    }),
                },
            }
        };
        let processes = positive(
            "TUTTI_RANKS",
            self.processes,
            1,
            "a positive number of processes",
        )?;
        let rank_wanted = match env("TUTTI_RANK") {
            None => None,
            Some(v) => Some(
                v.trim()
                    .parse::<usize>()
                    .map_err(|_| WorldError::BadSetting {
                        var: "TUTTI_RANK",
                        value: v,
                        expected: "a rank (0, 1, …)",
                    })?,
            ),
        };
        if transport == TransportKind::Shm && processes.is_none() {
            return Err(WorldError::BadSetting {
                var: "TUTTI_RANKS",
                value: String::new(),
                expected: "the number of processes of the named system (or use `tutti launch`)",
            });
        }
        let ranks_here = if transport == TransportKind::Mpi {
            launch
                .as_ref()
                .map_or(1, |l| l.local_size.unwrap_or(l.size))
        } else if transport == TransportKind::Shm {
            processes.unwrap_or(1)
        } else {
            1
        };
        // Only a launched rank looks at its launcher's cores.
        let cores = Cores::new(
            available_cores(),
            if launch.is_some() && ranks_here > 1 {
                launcher_cores()
            } else {
                None
            },
        );
        let workers = positive("TUTTI_WORKERS", self.workers, 1, "a positive whole number")?
            .unwrap_or_else(|| cores.workers(ranks_here));
        let locations = positive(
            "TUTTI_LOCATIONS",
            self.locations,
            1,
            "a positive whole number",
        )?
        .unwrap_or(workers);
        if locations > u32::MAX as usize / 1024 {
            return Err(WorldError::BadSetting {
                var: "TUTTI_LOCATIONS",
                value: locations.to_string(),
                expected: "at most 4194303 locations per rank",
            });
        }
        let default_aggregation = match transport {
            TransportKind::Mpi => DEFAULT_AGGREGATION_MPI,
            _ => DEFAULT_AGGREGATION_INPROC,
        };
        let aggregation = positive(
            "TUTTI_AGGREGATION",
            self.aggregation,
            1,
            "a positive whole number of messages",
        )?
        .unwrap_or(default_aggregation);
        const BYTES: &str = "a number of bytes from 64 to 61440";
        let aggregation_bytes =
            positive("TUTTI_AGGREGATION_BYTES", self.aggregation_bytes, 64, BYTES)?
                .unwrap_or(DEFAULT_AGGREGATION_BYTES);
        if aggregation_bytes > MAX_AGGREGATION_BYTES {
            return Err(WorldError::BadSetting {
                var: "TUTTI_AGGREGATION_BYTES",
                value: aggregation_bytes.to_string(),
                expected: BYTES,
            });
        }
        let flush_after = match self.flush_after {
            Some(d) => d,
            None => match positive(
                "TUTTI_FLUSH_US",
                None,
                1,
                "a positive number of microseconds",
            )? {
                Some(us) => Duration::from_micros(us as u64),
                None => DEFAULT_FLUSH_AFTER,
            },
        };
        let progress = match self.progress {
            Some(p) => p,
            None => match env("TUTTI_PROGRESS") {
                Some(v) => ProgressMode::parse(&v).ok_or(WorldError::BadSetting {
                    var: "TUTTI_PROGRESS",
                    value: v,
                    expected: "thread or poll",
                })?,
                None => ProgressMode::default(),
            },
        };
        // More ranks on this host than cores: the ranks' processes take turns
        // on the cores (see `WorldConfig::oversubscribed`).
        let oversubscribed = cores.oversubscribed(ranks_here);
        Ok(WorldConfig {
            transport,
            locations,
            workers,
            oversubscribed,
            aggregation,
            aggregation_bytes,
            flush_after,
            progress,
            launch,
            warnings,
            system,
            processes: processes.unwrap_or(1),
            rank_wanted,
            rank: 0,
            ranks: 1,
            engine: String::new(),
        })
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
    pub(crate) rank: usize,
    pub(crate) ranks: usize,
    /// What the transport says about itself (MPI library, thread level).
    pub(crate) engine: String,
}

impl WorldConfig {
    /// The transport in use ([`TransportKind::InProcess`] or [`TransportKind::Mpi`]).
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
        if self.transport == TransportKind::Mpi {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn launchers_are_recognised() {
        assert_eq!(detect_launch(env_of(&[])), None);
        let l = detect_launch(env_of(&[
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]))
        .unwrap();
        assert_eq!(
            (l.size, l.local_size, l.var),
            (4, Some(2), "OMPI_COMM_WORLD_SIZE")
        );
        let l = detect_launch(env_of(&[("PMI_SIZE", "3")])).unwrap();
        assert_eq!((l.size, l.local_size), (3, None));
        assert_eq!(detect_launch(env_of(&[("PMI_SIZE", "x")])), None);
    }

    #[test]
    fn environment_settings_apply_and_bad_ones_are_named() {
        let c = WorldBuilder::new()
            .resolve(&env_of(&[
                ("TUTTI_LOCATIONS", "3"),
                ("TUTTI_WORKERS", "2"),
                ("TUTTI_AGGREGATION", "16"),
                ("TUTTI_FLUSH_US", "70"),
                ("TUTTI_PROGRESS", "poll"),
            ]))
            .unwrap();
        assert_eq!(c.locations(), 3);
        assert_eq!(c.workers(), 2);
        assert_eq!(c.aggregation(), 16);
        assert_eq!(c.flush_after(), Duration::from_micros(70));
        assert_eq!(c.progress(), ProgressMode::Poll);
        assert_eq!(c.transport(), TransportKind::InProcess);

        // The builder wins over the environment.
        let c = WorldBuilder::new()
            .locations(5)
            .resolve(&env_of(&[("TUTTI_LOCATIONS", "3")]))
            .unwrap();
        assert_eq!(c.locations(), 5);
        // ignore_env ignores it entirely.
        let c = WorldBuilder::new()
            .ignore_env()
            .workers(1)
            .resolve(&env_of(&[("TUTTI_LOCATIONS", "3")]))
            .unwrap();
        assert_eq!(c.locations(), 1);

        for (var, value) in [
            ("TUTTI_LOCATIONS", "0"),
            ("TUTTI_WORKERS", "many"),
            ("TUTTI_AGGREGATION", "-1"),
            ("TUTTI_AGGREGATION_BYTES", "10"),
            ("TUTTI_AGGREGATION_BYTES", "61441"),
            ("TUTTI_TRANSPORT", "carrier-pigeon"),
            ("TUTTI_PROGRESS", "sometimes"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(vec![(var, value)].into_boxed_slice());
            let e = WorldBuilder::new().resolve(&env_of(pairs)).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(var) && text.contains(value), "{text}");
        }
        let e = WorldBuilder::new()
            .locations(0)
            .resolve(&env_of(&[]))
            .unwrap_err();
        assert!(e.to_string().contains("TUTTI_LOCATIONS"), "{e}");
    }

    #[test]
    fn a_launch_without_the_feature_is_an_error_or_a_warning() {
        let launched = env_of(&[("OMPI_COMM_WORLD_SIZE", "2")]);
        let r = WorldBuilder::new().resolve(&launched);
        if cfg!(feature = "mpi") {
            assert_eq!(r.unwrap().transport(), TransportKind::Mpi);
        } else {
            let e = r.unwrap_err();
            assert!(matches!(e, WorldError::MpiNotBuilt { size: 2, .. }), "{e}");
            assert!(e.to_string().contains("--features mpi"), "{e}");
            // One process: it works, with a warning.
            let c = WorldBuilder::new()
                .resolve(&env_of(&[("OMPI_COMM_WORLD_SIZE", "1")]))
                .unwrap();
            assert_eq!(c.transport(), TransportKind::InProcess);
            assert_eq!(c.warnings().len(), 1);
            let e = WorldBuilder::new()
                .transport(TransportKind::Mpi)
                .resolve(&env_of(&[]))
                .unwrap_err();
            assert!(matches!(e, WorldError::MpiNotBuilt { .. }), "{e}");
        }
        // Choosing in-process by the environment under a launcher warns that the
        // processes are separate; the builder's explicit choice does not.
        let c = WorldBuilder::new()
            .resolve(&env_of(&[
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("TUTTI_TRANSPORT", "inproc"),
            ]))
            .unwrap();
        assert_eq!(c.transport(), TransportKind::InProcess);
        assert!(
            c.warnings()[0].contains("independent"),
            "{:?}",
            c.warnings()
        );
        let c = WorldBuilder::new()
            .transport(TransportKind::InProcess)
            .resolve(&launched)
            .unwrap();
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    }

    #[test]
    fn display_names_every_setting() {
        let c = WorldBuilder::new()
            .ignore_env()
            .locations(2)
            .workers(1)
            .resolve(&env_of(&[]))
            .unwrap();
        let text = c.to_string();
        for needle in [
            "rank 0 of 1",
            "in-process",
            "locations per rank: 2",
            "workers per rank: 1",
            "aggregation: 1 messages",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from\n{text}");
        }
    }

    #[test]
    fn cpu_lists_count_their_cpus() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("0-x"), None);
    }

    #[test]
    fn ranks_bound_to_cores_of_their_own_are_not_oversubscribed() {
        // `mpirun -n 2` on two cores: each rank bound to one.
        let bound = Cores::new(1, Some(2));
        assert!(bound.bound());
        assert!(!bound.oversubscribed(2));
        assert_eq!(bound.workers(2), 1);
        // Bound to two of eight cores: two workers.
        assert_eq!(Cores::new(2, Some(8)).workers(4), 2);
        // `mpirun -n 4 --oversubscribe` on two cores: nothing bound.
        let shared = Cores::new(2, Some(2));
        assert!(!shared.bound());
        assert!(shared.oversubscribed(4));
        assert_eq!(shared.workers(4), 1);
        // Four bound ranks sharing two cores.
        assert!(Cores::new(1, Some(2)).oversubscribed(4));
        // No launcher known: this process's cores are the host's.
        let alone = Cores::new(2, None);
        assert!(!alone.oversubscribed(2));
        assert!(alone.oversubscribed(3));
        assert_eq!(alone.workers(2), 1);
    }
}
