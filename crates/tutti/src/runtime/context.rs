//! Three seams through which the layers above observe the scheduler without the scheduler
//! knowing them:
//!
//! * **The task context**: one pointer per thread naming "what is being polled", which a
//!   layer above (the CSP deadlock detector) sets while it polls one of its futures. The
//!   scheduler clears it around every task it runs, so a task that runs nested inside
//!   another (a worker helping while it waits) never sees its host's context.
//! * **The idle hook**: a function a layer above installs once; a worker that has found no
//!   work for a while calls it and hands it a check that the whole runtime is quiet —
//!   every worker idle and no timer armed that could wake one of its tasks. The hook
//!   judges only while that holds, and may ask to be called again later: the worker
//!   calling it may be the last to park, and a runtime that becomes quiet afterwards
//!   (the other worker's search ends, a timer armed off the workers fires) wakes nobody.
//! * **Tagged tasks**: a layer may spawn tasks marked for it (`task::spawn_tagged`) and
//!   later look at their futures, with no registry of its own: the runtime's live list
//!   already knows every task ([`RuntimeRef::with_tagged`]). The CSP deadlock detector
//!   finds the processes of a network this way.
//!
//! * **The deadlock mode**: what the diagnosis does when it finds a deadlock
//!   ([`DeadlockMode`]), process-wide. The runtime's builder sets it when a runtime
//!   starts ([`Builder::deadlock_mode`](super::Builder::deadlock_mode)); the
//!   diagnosis (`crate::diag`) reads it and lets programs set it. Kept here so that
//!   the runtime needs nothing of the diagnosis but its trace.
//!
//! A process may run several runtimes; each has its own idle workers, and one runtime
//! being quiet says nothing about another. So whatever the hook judges by quietness must
//! know which runtime it belongs to: a [`RuntimeRef`] names one and tells whether it is
//! quiet.

use std::cell::Cell;
use std::sync::{Arc, OnceLock, Weak};

use super::registry::{with_current_registry, Registry};
use super::task::Tagged;
use crate::loom::{unmodelled, Ordering};

/// The idle hook: called with a check that the runtime is still quiet; returns whether
/// it wants to be called again after a while even if nothing wakes the worker (it saw
/// waits it could not judge yet).
pub(crate) type IdleHook = fn(&dyn Fn() -> bool) -> bool;

static IDLE_HOOK: OnceLock<IdleHook> = OnceLock::new();

/// What a layer attached to the poll under way on this thread: a tag (the address of a
/// static owned by that layer, saying what `data` points to) and the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TaskContext {
    pub(crate) tag: *const u8,
    pub(crate) data: *const (),
}

impl TaskContext {
    /// No context.
    pub(crate) const NONE: TaskContext = TaskContext {
        tag: std::ptr::null(),
        data: std::ptr::null(),
    };
}

thread_local! {
    static TASK_CONTEXT: Cell<TaskContext> = const { Cell::new(TaskContext::NONE) };
}

/// The context set by the layer polling on this thread ([`TaskContext::NONE`] if none).
#[inline]
pub(crate) fn task_context() -> TaskContext {
    TASK_CONTEXT.with(Cell::get)
}

/// Sets this thread's task context; returns the previous one (to restore afterwards).
#[inline]
pub(crate) fn replace_task_context(context: TaskContext) -> TaskContext {
    TASK_CONTEXT.with(|c| c.replace(context))
}

/// Installs the idle hook (the first installation wins; later ones are ignored).
pub(crate) fn set_idle_hook(hook: IdleHook) {
    let _ = IDLE_HOOK.set(hook);
}

/// Called by an idle worker of `registry`: runs the hook, which judges by whether the
/// runtime is quiet (it may find it is not: another worker still searching for work, a
/// timer of this runtime armed). Returns whether the hook asked to be called again
/// later (a parked worker then bounds its sleep by [`IDLE_RECHECK`]).
#[cold]
pub(crate) fn on_idle(registry: &Registry) -> bool {
    let Some(hook) = IDLE_HOOK.get() else {
        return false;
    };
    hook(&|| is_quiet(registry))
}

/// How long a parked worker sleeps at most when the idle hook asked to look again.
pub(crate) const IDLE_RECHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// Every worker of `registry` idle with empty queues, and no timer armed that could wake
/// one of its tasks (one of its own, or one armed off the workers: `timer.rs`, "Whose
/// timer"; a timer another runtime keeps armed does not count), and no socket registered
/// with its I/O driver (a task may wait for the outside world).
fn is_quiet(registry: &Registry) -> bool {
    registry.all_idle()
        && super::timer::pending_timers_for(registry.id()) == 0
        && !registry.io.get().is_some_and(|d| d.has_sources())
}

/// Names a runtime, to ask later whether it is quiet. It does not keep the runtime
/// running: once the runtime is shut down it counts as never quiet (its tasks were
/// cancelled, so nothing of it waits any more).
pub(crate) struct RuntimeRef(Weak<Registry>);

impl RuntimeRef {
    /// The current runtime: the calling worker's, else the one entered on this thread,
    /// else the global one — where a task spawned here would run.
    pub(crate) fn current() -> RuntimeRef {
        RuntimeRef(with_current_registry(Arc::downgrade))
    }

    /// Names no runtime (one that is gone: never quiet), for the loom models.
    #[cfg(all(test, loom))]
    pub(crate) fn none() -> RuntimeRef {
        RuntimeRef(Weak::new())
    }

    /// Runs `f` with that runtime entered on this thread, so that what `f` spawns (off a
    /// worker) goes to it; `None`, without running `f`, if the runtime is gone.
    pub(crate) fn enter<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let registry = self.0.upgrade()?;
        Some(super::with_entered(registry, f))
    }

    /// Whether that runtime is quiet now (see [`on_idle`]).
    pub(crate) fn is_quiet(&self) -> bool {
        self.0.upgrade().is_some_and(|r| is_quiet(&r))
    }

    /// The runtime's id, workers, blocking threads and live tasks; `None` if it is gone
    /// (for dumps).
    pub(crate) fn live_tasks(&self) -> Option<LiveTasksView> {
        let r = self.0.upgrade()?;
        let (high, low) = r.live.high_and_low();
        Some(LiveTasksView {
            runtime: r.id(),
            workers: r.num_workers(),
            blocking: r.blocking.threads().0,
            tasks: r.live.len(),
            high,
            low,
        })
    }

    /// The names and states of that runtime's live named tasks (for dumps); empty if the
    /// runtime is gone.
    pub(crate) fn named_tasks(&self) -> Vec<(&'static str, &'static str)> {
        self.0
            .upgrade()
            .map(|r| super::task::named_tasks(&r))
            .unwrap_or_default()
    }

    /// Runs `f` with that runtime's tagged live tasks (the third seam: tasks a layer above
    /// spawned with [`spawn_tagged`](super::task::spawn_tagged)), during which no task of
    /// the runtime starts or stops being live; `None` if the runtime is gone.
    pub(crate) fn with_tagged<R>(&self, f: impl FnOnce(&Tagged<'_>) -> R) -> Option<R> {
        let registry = self.0.upgrade()?;
        Some(super::task::with_tagged_tasks(&registry, f))
    }
}

/// A runtime as a dump shows it: its workers, blocking threads and live tasks, by
/// priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LiveTasksView {
    pub(crate) runtime: u16,
    pub(crate) workers: usize,
    pub(crate) blocking: usize,
    /// Live tasks, of every priority.
    pub(crate) tasks: usize,
    /// Of which high priority, and low priority (the rest are normal).
    pub(crate) high: usize,
    pub(crate) low: usize,
}

/// What happens when a deadlock is detected. Set it with
/// [`set_deadlock_mode`](crate::diag::set_deadlock_mode), with
/// [`Builder::deadlock_mode`](crate::runtime::Builder::deadlock_mode), or at start-up with
/// the environment variable `TUTTI_DEADLOCK` (`fail`/`on`, `report`, `off`).
///
/// ```
/// use tutti::diag::DeadlockMode;
/// assert_eq!(DeadlockMode::parse("report"), Some(DeadlockMode::Report));
/// assert_eq!(DeadlockMode::parse("0"), Some(DeadlockMode::Off));
/// assert_eq!(DeadlockMode::parse("maybe"), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadlockMode {
    /// Print the report on stderr and fail the waiting operations with an error
    /// carrying it (a `par` returns `Err(Deadlock)`, an `ask` `AskError::Deadlock`, a
    /// fence or collective panics its location with the report).
    Fail,
    /// Print the report on stderr and leave the operations waiting.
    Report,
    /// Do not look for deadlocks, and keep no record of waits: actors and locations
    /// started meanwhile are still listed by [`dump`](crate::diag::dump), without their
    /// waits; CSP networks started meanwhile are not tracked.
    Off,
}

impl DeadlockMode {
    /// Parses `fail`/`on`/`1`/`true`, `report`, `off`/`0`/`false`/`no`.
    pub fn parse(s: &str) -> Option<DeadlockMode> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "fail" | "on" | "1" | "true" | "yes" => DeadlockMode::Fail,
            "report" => DeadlockMode::Report,
            "off" | "0" | "false" | "no" => DeadlockMode::Off,
            _ => return None,
        })
    }
}

const UNSET: u8 = 0;
const FAIL: u8 = 1;
const REPORT: u8 = 2;
const OFF: u8 = 3;

static MODE: unmodelled::AtomicU8 = unmodelled::AtomicU8::new(UNSET);

/// Sets what happens when a deadlock is detected, from now on (process-wide).
pub(crate) fn set_deadlock_mode(mode: DeadlockMode) {
    MODE.store(encode(mode), Ordering::Relaxed);
}

/// What happens now when a deadlock is detected (see [`DeadlockMode`]): as set,
/// else as `TUTTI_DEADLOCK` says (read once), else [`DeadlockMode::Fail`].
#[inline]
pub(crate) fn deadlock_mode() -> DeadlockMode {
    match MODE.load(Ordering::Relaxed) {
        FAIL => DeadlockMode::Fail,
        REPORT => DeadlockMode::Report,
        OFF => DeadlockMode::Off,
        _ => init(),
    }
}

fn encode(mode: DeadlockMode) -> u8 {
    match mode {
        DeadlockMode::Fail => FAIL,
        DeadlockMode::Report => REPORT,
        DeadlockMode::Off => OFF,
    }
}

#[cold]
fn init() -> DeadlockMode {
    let mode = match std::env::var("TUTTI_DEADLOCK") {
        Ok(v) => DeadlockMode::parse(&v).unwrap_or_else(|| {
            eprintln!(
                "tutti::diag: TUTTI_DEADLOCK={v:?} is not one of fail, report, off; using fail"
            );
            DeadlockMode::Fail
        }),
        Err(_) => DeadlockMode::Fail,
    };
    let _ = MODE.compare_exchange(UNSET, encode(mode), Ordering::Relaxed, Ordering::Relaxed);
    deadlock_mode()
}
