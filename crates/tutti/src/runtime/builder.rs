//! Runtime configuration: [`Builder`] and [`IdleStrategy`].

use std::fmt;
use std::sync::Arc;

use super::context::DeadlockMode;
use super::priority::Priority;
use super::sleep::MAX_WORKERS;
use super::Runtime;

/// What an idle worker does while it has no work (the C task framework's message
/// strategies).
///
/// A "round" is one scan of every queue; spinning rounds back off
/// exponentially up to 64 spin hints between scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdleStrategy {
    /// Never give the core up: scan for work continuously (`message_immediate`).
    /// Lowest wake-up latency; every idle worker burns a core.
    Spin,
    /// Spin `spins` rounds, then `yield_now` between scans for ever
    /// (`message_wait`).
    Yield {
        /// Spinning rounds before yielding.
        spins: u32,
    },
    /// Spin, then yield, then park until new work arrives (`message_notify`).
    /// An idle runtime with this strategy uses no CPU. The default.
    Park {
        /// Spinning rounds before yielding.
        spins: u32,
        /// Yielding rounds before parking.
        yields: u32,
    },
}

impl Default for IdleStrategy {
    fn default() -> Self {
        IdleStrategy::Park {
            spins: 32,
            yields: 8,
        }
    }
}

impl IdleStrategy {
    /// Parses `spin`, `yield` or `park` (as used by `TUTTI_IDLE`).
    ///
    /// ```
    /// use tutti::IdleStrategy;
    /// assert_eq!(IdleStrategy::parse("park"), Some(IdleStrategy::default()));
    /// assert_eq!(IdleStrategy::parse("nap"), None);
    /// ```
    pub fn parse(s: &str) -> Option<IdleStrategy> {
        match s.trim().to_ascii_lowercase().as_str() {
            "spin" | "immediate" => Some(IdleStrategy::Spin),
            "yield" | "wait" => Some(IdleStrategy::Yield { spins: 32 }),
            "park" | "notify" => Some(IdleStrategy::default()),
            _ => None,
        }
    }
}

/// Why a runtime could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// Zero workers were requested.
    ZeroWorkers,
    /// A cap of zero blocking threads was requested
    /// ([`Builder::max_blocking_threads`]): blocking closures could never run.
    ZeroBlockingThreads,
    /// More workers than one runtime supports were requested.
    TooManyWorkers {
        /// The number asked for.
        requested: usize,
        /// The supported maximum.
        max: usize,
    },
    /// As many runtimes as a process supports are alive at once.
    TooManyRuntimes {
        /// The supported maximum.
        max: usize,
    },
    /// An environment variable held a value that could not be used.
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// The operating system refused to start a worker thread.
    Spawn(std::io::Error),
    /// The trace asked for with [`Builder::trace`] could not be started.
    Trace(std::io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroWorkers => f.write_str("a runtime needs at least one worker"),
            BuildError::ZeroBlockingThreads => f.write_str(
                "max_blocking_threads(0): a runtime needs at least one thread for blocking closures",
            ),
            BuildError::TooManyWorkers { requested, max } => {
                write!(
                    f,
                    "{requested} workers requested, at most {max} are supported"
                )
            }
            BuildError::TooManyRuntimes { max } => write!(
                f,
                "{max} runtimes are alive already, the most one process supports; drop one first"
            ),
            BuildError::BadEnv {
                var,
                value,
                expected,
            } => write!(f, "{var}={value:?} is not valid: expected {expected}"),
            BuildError::Spawn(e) => write!(f, "could not start a worker thread: {e}"),
            BuildError::Trace(e) => write!(f, "could not start the trace: {e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Spawn(e) | BuildError::Trace(e) => Some(e),
            _ => None,
        }
    }
}

type NameFn = Arc<dyn Fn(usize) -> String + Send + Sync>;

/// Configures and starts a [`Runtime`].
///
/// ```
/// let rt = tutti::Runtime::builder()
///     .workers(2)
///     .thread_name(|i| format!("compute-{i}"))
///     .idle_strategy(tutti::IdleStrategy::Park { spins: 16, yields: 4 })
///     .build()
///     .unwrap();
/// assert_eq!(rt.workers(), 2);
/// ```
#[derive(Clone, Default)]
pub struct Builder {
    workers: Option<usize>,
    name: Option<NameFn>,
    stack_size: Option<usize>,
    idle: IdleStrategy,
    pin: bool,
    trace: Option<std::path::PathBuf>,
    deadlock: Option<DeadlockMode>,
    max_blocking: Option<usize>,
    blocking_keep_alive: Option<std::time::Duration>,
    priority: Priority,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("workers", &self.workers)
            .field("stack_size", &self.stack_size)
            .field("idle", &self.idle)
            .field("pin", &self.pin)
            .field("deadlock", &self.deadlock)
            .field("max_blocking_threads", &self.max_blocking)
            .field("blocking_keep_alive", &self.blocking_keep_alive)
            .field("default_priority", &self.priority)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// A builder with the defaults: one worker per available core, threads
    /// named `tutti-worker-<i>`, the system stack size, [`IdleStrategy::default`],
    /// no pinning.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Records a timeline trace into `path` from now on (as `TUTTI_TRACE` does;
    /// see [`crate::diag::trace`]), written out when the runtime is dropped. If
    /// a trace is already being recorded into `path`, it goes on.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("tutti-doc-builder-{}.json", std::process::id()));
    /// let rt = tutti::Builder::new().workers(1).trace(&path).build().unwrap();
    /// rt.block_on(async { tutti::spawn(async {}).await });
    /// drop(rt);
    /// tutti::diag::trace::stop().unwrap();
    /// assert!(std::fs::read_to_string(&path).unwrap().contains("worker 0"));
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn trace(mut self, path: impl AsRef<std::path::Path>) -> Builder {
        self.trace = Some(path.as_ref().to_path_buf());
        self
    }

    /// The configuration of the global runtime: the defaults, overridden by
    /// `TUTTI_WORKERS` (a positive number) and `TUTTI_IDLE` (`spin`, `yield`
    /// or `park`).
    ///
    /// ```
    /// let b = tutti::Builder::from_env().unwrap();
    /// # let _ = b;
    /// ```
    pub fn from_env() -> Result<Builder, BuildError> {
        let mut b = Builder::new();
        if let Ok(v) = std::env::var("TUTTI_WORKERS") {
            match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => b.workers = Some(n),
                _ => {
                    return Err(BuildError::BadEnv {
                        var: "TUTTI_WORKERS",
                        value: v,
                        expected: "a positive whole number",
                    })
                }
            }
        }
        if let Ok(v) = std::env::var("TUTTI_IDLE") {
            match IdleStrategy::parse(&v) {
                Some(s) => b.idle = s,
                None => {
                    return Err(BuildError::BadEnv {
                        var: "TUTTI_IDLE",
                        value: v,
                        expected: "spin, yield or park",
                    })
                }
            }
        }
        Ok(b)
    }

    /// Number of worker threads.
    pub fn workers(mut self, n: usize) -> Builder {
        self.workers = Some(n);
        self
    }

    /// Names worker `i` by `f(i)`.
    pub fn thread_name(mut self, f: impl Fn(usize) -> String + Send + Sync + 'static) -> Builder {
        self.name = Some(Arc::new(f));
        self
    }

    /// Stack size of each worker thread, in bytes.
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// What idle workers do; see [`IdleStrategy`].
    pub fn idle_strategy(mut self, s: IdleStrategy) -> Builder {
        self.idle = s;
        self
    }

    /// Pins worker `i` to core `i` modulo the number of cores the process
    /// may run on (Linux; elsewhere a no-op).
    pub fn pin_workers(mut self, pin: bool) -> Builder {
        self.pin = pin;
        self
    }

    /// What happens when a deadlock is detected (process-wide, set when the runtime
    /// starts; the default comes from `TUTTI_DEADLOCK`, else
    /// [`DeadlockMode::Fail`](crate::diag::DeadlockMode::Fail)). See [`crate::diag`].
    ///
    /// ```
    /// use tutti::diag::DeadlockMode;
    /// let rt = tutti::Runtime::builder().workers(1).deadlock_mode(DeadlockMode::Report).build().unwrap();
    /// assert_eq!(tutti::diag::deadlock_mode(), DeadlockMode::Report);
    /// # drop(rt);
    /// # tutti::diag::set_deadlock_mode(DeadlockMode::Fail);
    /// ```
    pub fn deadlock_mode(mut self, mode: DeadlockMode) -> Builder {
        self.deadlock = Some(mode);
        self
    }

    pub(crate) fn deadlock_mode_value(&self) -> Option<DeadlockMode> {
        self.deadlock
    }

    /// Most threads the runtime starts for [`spawn_blocking`](crate::spawn_blocking)
    /// closures at once (default 512); more closures wait for one of them in FIFO
    /// order. The threads are started on demand, apart from the workers.
    ///
    /// ```
    /// let rt = tutti::Runtime::builder().workers(1).max_blocking_threads(2).build().unwrap();
    /// let hs: Vec<_> = (0..4).map(|i| rt.spawn_blocking(move || i * 10)).collect();
    /// assert_eq!(hs.into_iter().map(|h| h.join()).sum::<i32>(), 60);
    /// ```
    pub fn max_blocking_threads(mut self, n: usize) -> Builder {
        self.max_blocking = Some(n);
        self
    }

    /// How long a blocking thread with nothing to do waits for another closure before it
    /// exits (default 10 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = tutti::Runtime::builder()
    ///     .blocking_keep_alive(Duration::from_millis(100))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(rt.block_on(rt.spawn_blocking(|| 7)), 7);
    /// ```
    pub fn blocking_keep_alive(mut self, idle: std::time::Duration) -> Builder {
        self.blocking_keep_alive = Some(idle);
        self
    }

    pub(crate) fn max_blocking_threads_value(&self) -> usize {
        self.max_blocking
            .unwrap_or(super::blocking::DEFAULT_MAX_THREADS)
    }

    pub(crate) fn blocking_keep_alive_value(&self) -> std::time::Duration {
        self.blocking_keep_alive
            .unwrap_or(super::blocking::DEFAULT_KEEP_ALIVE)
    }

    /// The priority of tasks spawned on this runtime without one ([`spawn`](crate::spawn),
    /// [`Runtime::spawn`], and the tasks the layers above spawn: actors, CSP processes,
    /// RMI and RPC handlers); [`Priority::Normal`] unless set. A runtime dedicated to
    /// background work can make everything low, and give the few tasks that must answer
    /// promptly [`Priority::High`] with [`Runtime::spawn_with_priority`].
    ///
    /// ```
    /// use tutti::Priority;
    /// let rt = tutti::Runtime::builder().workers(1).default_priority(Priority::Low).build().unwrap();
    /// assert_eq!(rt.default_priority(), Priority::Low);
    /// assert_eq!(rt.spawn(async {}).priority(), Priority::Low);
    /// ```
    pub fn default_priority(mut self, priority: Priority) -> Builder {
        self.priority = priority;
        self
    }

    pub(crate) fn default_priority_value(&self) -> Priority {
        self.priority
    }

    /// Starts the runtime.
    pub fn build(self) -> Result<Runtime, BuildError> {
        let n = self.resolved_workers();
        if n == 0 {
            return Err(BuildError::ZeroWorkers);
        }
        if self.max_blocking == Some(0) {
            return Err(BuildError::ZeroBlockingThreads);
        }
        if n > MAX_WORKERS {
            return Err(BuildError::TooManyWorkers {
                requested: n,
                max: MAX_WORKERS,
            });
        }
        if let Some(path) = &self.trace {
            crate::diag::trace::start_for(path).map_err(BuildError::Trace)?;
        }
        Runtime::start(&self)
    }

    pub(crate) fn resolved_workers(&self) -> usize {
        self.workers.unwrap_or_else(available_cores)
    }

    pub(crate) fn idle_strategy_value(&self) -> IdleStrategy {
        self.idle
    }

    pub(crate) fn name_of(&self, index: usize) -> String {
        match &self.name {
            Some(f) => f(index),
            None => format!("tutti-worker-{index}"),
        }
    }

    pub(crate) fn stack_size_bytes(&self) -> Option<usize> {
        self.stack_size
    }

    pub(crate) fn pinned_core(&self, index: usize) -> Option<usize> {
        if !self.pin {
            return None;
        }
        let cores = allowed_cores();
        (!cores.is_empty()).then(|| cores[index % cores.len()])
    }
}

/// Cores available to this process (at least 1).
pub(crate) fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(target_os = "linux")]
fn allowed_cores() -> Vec<usize> {
    // SAFETY: `set` is a plain bitmask that `sched_getaffinity` fills in; a
    // zeroed cpu_set_t is a valid empty set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cores() -> Vec<usize> {
    Vec::new()
}

/// Pins the calling thread to `core`; failures are reported, not fatal.
#[cfg(target_os = "linux")]
pub(crate) fn pin_current_thread(core: usize) {
    // SAFETY: as in `allowed_cores`; `CPU_SET` writes inside the set.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        eprintln!(
            "tutti: could not pin {:?} to core {core}: {}",
            std::thread::current().name().unwrap_or("worker"),
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_current_thread(_core: usize) {}
