//! What the runtime does when it finds a deadlock: fail the waiting operations
//! (the default), only report it, or not look at all.

use crate::loom::unmodelled::AtomicU8;
use crate::loom::Ordering;

/// What happens when a deadlock is detected. Set it with [`set_deadlock_mode`], with
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
    /// started meanwhile are still listed by [`dump`](super::dump), without their
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

static MODE: AtomicU8 = AtomicU8::new(UNSET);

/// Sets what happens when a deadlock is detected, from now on (process-wide).
///
/// ```
/// use tutti::diag::{deadlock_mode, set_deadlock_mode, DeadlockMode};
/// set_deadlock_mode(DeadlockMode::Fail);
/// assert_eq!(deadlock_mode(), DeadlockMode::Fail);
/// ```
pub fn set_deadlock_mode(mode: DeadlockMode) {
    MODE.store(encode(mode), Ordering::Relaxed);
}

/// What happens now when a deadlock is detected (see [`DeadlockMode`]).
///
/// ```
/// let _ = tutti::diag::deadlock_mode();
/// ```
#[inline]
pub fn deadlock_mode() -> DeadlockMode {
    match MODE.load(Ordering::Relaxed) {
        FAIL => DeadlockMode::Fail,
        REPORT => DeadlockMode::Report,
        OFF => DeadlockMode::Off,
        _ => init(),
    }
}

/// Whether detection is on (`Fail` or `Report`).
#[inline]
pub(crate) fn detecting() -> bool {
    deadlock_mode() != DeadlockMode::Off
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
