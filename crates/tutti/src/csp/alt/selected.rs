//! A selection in progress ([`SelectFuture`]) and its outcome ([`Selected`]).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::guard::Direction;
use super::{Alt, FutureArm, Kind, Mode};
use crate::csp::blocking::Settle;
use crate::csp::error::{RecvError, SendError, TryRecvError};
use crate::csp::rx::Rx;
use crate::csp::tx::Tx;
use crate::csp::waiter::Status;

/// Future returned by [`Alt::pri_select`], [`Alt::fair_select`] and [`Alt::select`]:
/// completes with the [`Selected`] guard.
///
/// Dropping it before it completes withdraws the selection; a value that a sender had
/// already committed to it goes back to the front of its channel.
///
/// ```
/// use tutti::csp::{Alt, SelectFuture};
///
/// let mut alt = Alt::new().skip();
/// let fut: SelectFuture<'_, '_> = alt.pri_select();
/// assert_eq!(tutti::block_on(fut).index(), 0);
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct SelectFuture<'s, 'a> {
    /// The `Alt`, until the future completes and hands it to the `Selected`.
    alt: Option<&'s mut Alt<'a>>,
    mode: Mode,
}

impl<'s, 'a> SelectFuture<'s, 'a> {
    /// `cancellable`: the future may be dropped before it completes (an async
    /// selection), so send guards offer in two phases (`output.rs`).
    pub(super) fn new(alt: &'s mut Alt<'a>, mode: Mode, cancellable: bool) -> Self {
        // A previous selection whose future was leaked may still be under way.
        alt.abandon();
        alt.set_two_phase(cancellable);
        SelectFuture {
            alt: Some(alt),
            mode,
        }
    }
}

impl<'s, 'a> Future for SelectFuture<'s, 'a> {
    type Output = Selected<'s, 'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Selected<'s, 'a>> {
        let this = self.get_mut();
        let alt = this
            .alt
            .as_deref_mut()
            .expect("tutti: SelectFuture polled after completion");
        match alt.poll_round(this.mode, cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(index) => Poll::Ready(Selected::new(
                this.alt.take().expect("tutti: SelectFuture lost its Alt"),
                index,
            )),
        }
    }
}

impl Settle for SelectFuture<'_, '_> {
    fn is_settled(&self) -> bool {
        self.alt
            .as_deref()
            .is_none_or(|alt| alt.selector.get().status() != Status::Waiting)
    }
}

impl Drop for SelectFuture<'_, '_> {
    fn drop(&mut self) {
        if let Some(alt) = self.alt.take() {
            alt.abandon();
        }
    }
}

impl fmt::Debug for SelectFuture<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectFuture")
            .field("mode", &self.mode)
            .field("done", &self.alt.is_none())
            .finish()
    }
}

/// The guard that fired in a selection, by index; for an input guard, the value it
/// received is taken with [`recv`](Self::recv).
///
/// A `Selected` borrows its [`Alt`], so the next selection can only start once it is
/// gone. If it is dropped without taking the value of a fired input guard, the value goes
/// back to the front of its channel — nothing is lost.
///
/// ```
/// use tutti::csp::{buffered, Alt};
///
/// let (tx, rx) = buffered::<u8>(1);
/// let (_tx2, rx2) = buffered::<u8>(1);
/// tx.try_send(5).unwrap();
/// let mut alt = Alt::new().recv(&rx2).recv(&rx);
/// let sel = alt.pri_select_blocking();
/// match sel.index() {
///     0 => unreachable!(),
///     _ => assert_eq!(sel.recv(&rx), Ok(5)),
/// }
/// ```
#[must_use = "a fired input guard's value is given back unless taken with `recv`"]
pub struct Selected<'s, 'a> {
    alt: &'s mut Alt<'a>,
    index: usize,
    /// The value (if any) has been taken.
    claimed: bool,
}

impl<'s, 'a> Selected<'s, 'a> {
    pub(super) fn new(alt: &'s mut Alt<'a>, index: usize) -> Self {
        Selected {
            alt,
            index,
            claimed: false,
        }
    }
}

impl Selected<'_, '_> {
    /// The index of the guard that fired (guards are numbered in the order they were
    /// added to the `Alt`).
    ///
    /// ```
    /// let mut alt = tutti::csp::Alt::new().skip().when(false).skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// Takes the value received by the fired input guard on `rx`. Fails with
    /// [`RecvError::Closed`] or [`RecvError::Poisoned`] if the guard fired because its
    /// channel ended.
    ///
    /// # Panics
    /// If the fired guard is not an input guard on `rx`'s channel (a program error: match
    /// on [`index`](Self::index) first).
    ///
    /// ```
    /// use tutti::csp::{channel, Alt, RecvError};
    ///
    /// let (tx, rx) = channel::<u8>();
    /// drop(tx);
    /// let mut alt = Alt::new().recv(&rx);
    /// assert_eq!(alt.pri_select_blocking().recv(&rx), Err(RecvError::Closed));
    /// ```
    pub fn recv<T>(mut self, rx: &Rx<T>) -> Result<T, RecvError> {
        let guard = self.alt.typed_event(
            self.index,
            rx.chan().id(),
            Direction::Receive,
            "Selected::recv",
        );
        let mut value: Option<T> = None;
        // SAFETY: the guard reads `rx`'s channel, whose values are `T`s: a `Chan<T>` is
        // invariant in `T`, so a second `Rx` to the same allocation has the same `T`. The
        // selection is finished, so the guard's waiter is unqueued.
        unsafe { guard.take_value((&mut value as *mut Option<T>).cast()) };
        self.claimed = true;
        match value {
            Some(v) => Ok(v),
            // Fired by the channel's end (a value given back since would be taken here).
            None => match rx.try_recv() {
                Ok(v) => Ok(v),
                Err(TryRecvError::Poisoned) => Err(RecvError::Poisoned),
                Err(TryRecvError::Closed | TryRecvError::Empty) => Err(RecvError::Closed),
            },
        }
    }
}

impl Selected<'_, '_> {
    /// The outcome of the fired output guard on `tx`: `Ok(())` if its value was sent, or
    /// the error (with the value) if the guard fired because the channel ended.
    ///
    /// # Panics
    /// If the fired guard is not an output guard on `tx`'s channel (a program error: match
    /// on [`index`](Self::index) first).
    ///
    /// ```
    /// use tutti::csp::{channel, Alt, SendError};
    ///
    /// let (tx, rx) = channel::<u8>();
    /// drop(rx);
    /// let mut alt = Alt::new().send(&tx, 3);
    /// assert_eq!(alt.pri_select_blocking().sent(&tx), Err(SendError::Closed(3)));
    /// ```
    pub fn sent<T>(mut self, tx: &Tx<T>) -> Result<(), SendError<T>> {
        let guard = self.alt.typed_event(
            self.index,
            tx.chan().id(),
            Direction::Send,
            "Selected::sent",
        );
        self.claimed = true;
        let mut value: Option<T> = None;
        // SAFETY: the guard is an output on `tx`'s channel (whose values are `T`s: a
        // channel is invariant in its value type), and the selection is finished.
        unsafe { guard.take_value((&mut value as *mut Option<T>).cast()) };
        // A value still here: the guard fired because the channel ended.
        if let Some(v) = value {
            return Err(if tx.chan().is_poisoned() {
                SendError::Poisoned(v)
            } else {
                SendError::Closed(v)
            });
        }
        Ok(())
    }
}

impl Selected<'_, '_> {
    /// Takes the output of the fired future guard `arm` (the handle
    /// [`Alt::future`] returned).
    ///
    /// # Panics
    /// If `arm` is not the guard that fired, or belongs to another `Alt` (a program
    /// error: match on [`index`](Self::index) first).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tutti::csp::Alt;
    /// use tutti::sync::DataflowVar;
    ///
    /// let var = DataflowVar::new();
    /// var.set(5u32).unwrap();
    /// let mut alt = Alt::new().timeout(Duration::from_secs(10));
    /// let read = alt.future(var.read());
    /// let sel = alt.pri_select_blocking();
    /// assert_eq!(sel.output(&read), &5);
    /// ```
    pub fn output<O>(mut self, arm: &FutureArm<O>) -> O {
        let (n, index) = (self.alt.guards.len(), self.index);
        assert!(
            arm.alt == self.alt.id && arm.index < n,
            "tutti: Selected::output: the future guard is not one of this Alt's"
        );
        assert!(
            arm.index == index,
            "tutti: Selected::output: guard {} did not fire, guard {index} did",
            arm.index
        );
        let Kind::Future(f) = &mut self.alt.guards[index].kind else {
            unreachable!("tutti: a FutureArm names a guard that is not a future");
        };
        let mut out: Option<O> = None;
        // SAFETY: `arm` was made by `Alt::future` for guard `index` of this `Alt` (the
        // ids are unique, and guards are never replaced), whose output type is `O`.
        unsafe { f.take_output((&mut out as *mut Option<O>).cast()) };
        self.claimed = true;
        out.expect("tutti: a fired future guard without an output")
    }
}

impl Drop for Selected<'_, '_> {
    fn drop(&mut self) {
        if !self.claimed {
            self.alt.give_back(self.index);
        }
    }
}

impl fmt::Debug for Selected<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selected")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}
