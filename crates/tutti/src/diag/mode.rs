//! What the runtime does when it finds a deadlock: fail the waiting operations
//! (the default), only report it, or not look at all. The setting is kept in the
//! runtime's context (`runtime/context.rs`), where a runtime's builder sets it.

pub use crate::runtime::context::DeadlockMode;

/// Sets what happens when a deadlock is detected, from now on (process-wide).
///
/// ```
/// use tutti::diag::{deadlock_mode, set_deadlock_mode, DeadlockMode};
/// set_deadlock_mode(DeadlockMode::Fail);
/// assert_eq!(deadlock_mode(), DeadlockMode::Fail);
/// ```
pub fn set_deadlock_mode(mode: DeadlockMode) {
    crate::runtime::context::set_deadlock_mode(mode);
}

/// What happens now when a deadlock is detected (see [`DeadlockMode`]).
///
/// ```
/// let _ = tutti::diag::deadlock_mode();
/// ```
#[inline]
pub fn deadlock_mode() -> DeadlockMode {
    crate::runtime::context::deadlock_mode()
}

/// Whether detection is on (`Fail` or `Report`).
#[inline]
pub(crate) fn detecting() -> bool {
    deadlock_mode() != DeadlockMode::Off
}
