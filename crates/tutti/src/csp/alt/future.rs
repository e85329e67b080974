//! The future guard of an [`Alt`](super::Alt): `alt.future(fut)`, ready when `fut` is.
//!
//! Any [`Future`] can be a guard — an actor's `ask`, a `sync_rmi`, an RPC `call`, a
//! `JoinHandle`, a `DataflowVar` read, a barrier's `sync` future, another channel's
//! `recv`. Such a guard has no counterpart that could decide the `Alt`'s round for it:
//! whether it is ready is known only by polling it, and a poll that returns `Ready` has
//! consumed the event (the reply, the join, …). So the `Alt` polls its future guards
//! only while **none of its waiters is queued** — in the look of a round (step 2 of the
//! commit protocol), where nobody else can decide the round. A future that is ready
//! there fires at once: the owner decides its own round, which cannot fail, so a
//! future's output is never produced for a selection that another guard wins.
//!
//! A future that is not ready keeps the `Alt`'s waker (it was polled with it). When it
//! wakes the `Alt`, the round is withdrawn (`WAITING → ABORTED`; if a channel guard won
//! meanwhile, that guard fires instead) and started again, so the future is polled again
//! in a fresh look. A round with future guards thus costs one re-registration of its
//! channel guards per wake-up.
//!
//! The guard owns its future. When the `Alt` is dropped (a [`select!`](crate::select)
//! is dropped after each evaluation) a future that did not fire is dropped with it,
//! which cancels it as dropping it would. To keep a future that loses, hand the guard a
//! mutable reference (`alt.future(&mut fut)`, for an `Unpin` future; pin a `!Unpin` one
//! first, e.g. with `std::pin::pin!`) and poll the future again later. A future that
//! fired and whose output was not taken (the [`Selected`](super::Selected) was dropped)
//! keeps the output: a later selection of the same `Alt` fires the guard again at once.
//! Once its output is taken, the guard has nothing left and selections skip it.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future guard, with its output type erased.
pub(crate) trait FutureGuard: Send {
    /// Whether the guard holds an output, polling the future (with `cx`) if it has none
    /// yet. Only the `Alt`'s owner calls this, with none of its waiters queued.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> bool;

    /// Whether the guard has neither a pending future nor an output (its output was
    /// taken): selections skip it.
    fn is_spent(&self) -> bool;

    /// Moves the output, if any, into `*out`.
    ///
    /// # Safety
    /// `out` points to an `Option<O>` where `O` is this guard's output type.
    unsafe fn take_output(&mut self, out: *mut ());
}

/// The guard for a future of type `F`.
pub(crate) struct Guarded<F: Future> {
    /// The future, until it completes.
    future: Option<Pin<Box<F>>>,
    /// Its output, until the user takes it.
    output: Option<F::Output>,
}

impl<F: Future> Guarded<F> {
    pub(crate) fn new(future: F) -> Self {
        Guarded {
            future: Some(Box::pin(future)),
            output: None,
        }
    }
}

impl<F> FutureGuard for Guarded<F>
where
    F: Future + Send,
    F::Output: Send,
{
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> bool {
        if self.output.is_some() {
            return true;
        }
        let Some(future) = self.future.as_mut() else {
            return false;
        };
        match future.as_mut().poll(cx) {
            Poll::Ready(out) => {
                // A completed future is dropped at once: it must not be polled again.
                self.future = None;
                self.output = Some(out);
                true
            }
            Poll::Pending => false,
        }
    }

    fn is_spent(&self) -> bool {
        self.future.is_none() && self.output.is_none()
    }

    unsafe fn take_output(&mut self, out: *mut ()) {
        // SAFETY: `out` is an `Option<F::Output>` (caller's contract).
        unsafe { *out.cast::<Option<F::Output>>() = self.output.take() };
    }
}

/// The handle of a future guard, returned by [`Alt::future`](super::Alt::future): names
/// the guard to [`Selected::output`](super::Selected::output), which returns the
/// future's output as an `O`.
///
/// ```
/// use tutti::csp::{channel, Alt};
///
/// let (_tx, rx) = channel::<u8>();
/// let mut alt = Alt::new().recv(&rx);
/// let answer = alt.future(async { 6 * 7 });
/// assert_eq!(answer.index(), 1);
/// let sel = alt.select_blocking();
/// assert_eq!(sel.output(&answer), 42);
/// ```
#[must_use = "the handle is how the output of the future guard is taken"]
pub struct FutureArm<O> {
    /// The `Alt` that owns the guard (`Alt::id`), and the guard's index in it.
    pub(super) alt: u64,
    pub(super) index: usize,
    _output: PhantomData<fn() -> O>,
}

impl<O> FutureArm<O> {
    pub(super) fn new(alt: u64, index: usize) -> Self {
        FutureArm {
            alt,
            index,
            _output: PhantomData,
        }
    }

    /// The index of the guard in its `Alt`, as [`Selected::index`](super::Selected::index)
    /// reports it.
    ///
    /// ```
    /// let mut alt = tutti::csp::Alt::new().skip();
    /// assert_eq!(alt.future(std::future::ready(())).index(), 1);
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }
}

impl<O> std::fmt::Debug for FutureArm<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FutureArm")
            .field("index", &self.index)
            .finish()
    }
}
