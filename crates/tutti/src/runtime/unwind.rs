//! Panic plumbing: user panics are caught and delivered to whoever waits for
//! the result; a broken runtime invariant aborts the process with a message.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

/// A caught panic payload.
pub(crate) type Payload = Box<dyn Any + Send + 'static>;

/// Runs `f`, catching a panic so that it can be re-raised at the joiner.
#[inline]
pub(crate) fn halt_unwinding<F: FnOnce() -> R, R>(f: F) -> Result<R, Payload> {
    panic::catch_unwind(AssertUnwindSafe(f))
}

/// Re-raises a panic caught by [`halt_unwinding`].
#[cold]
pub(crate) fn resume_unwinding(payload: Payload) -> ! {
    panic::resume_unwind(payload)
}

/// A guard that aborts the process if it is dropped during unwinding: used
/// around code that must never unwind because other threads hold pointers
/// into the current stack frame.
pub(crate) struct AbortIfPanic(pub(crate) &'static str);

impl Drop for AbortIfPanic {
    #[cold]
    fn drop(&mut self) {
        eprintln!("tutti: fatal: a runtime invariant was broken: {}", self.0);
        std::process::abort();
    }
}

/// Best-effort text of a panic payload, for error messages.
pub(crate) fn payload_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "<non-string panic payload>"
    }
}
