//! The sending end, [`Tx`], and its future, [`SendFuture`].

use std::fmt;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::blocking::{self, Settle};
use super::chan::{wake, Chan, Offer};
use super::channel::UNBOUNDED;
use super::deadlock::{self, Wait};
use super::error::{SendError, SendTimeoutError, TrySendError};
use super::waiter::{Phase, PlainWaiter};
use std::ptr::NonNull;

/// The sending end of a channel. Cloning it shares the end (occam `SHARED !`): any number
/// of processes may send on one channel; each send is served whole, waiting senders in
/// FIFO order.
///
/// When every `Tx` of a channel is dropped, its receivers get what is still buffered and
/// then [`RecvError::Closed`](super::RecvError::Closed).
///
/// `Tx<T>` is `Send + Sync` when `T: Send`, so it moves freely between async tasks and
/// plain threads; every operation works from both, on the same channel.
///
/// ```
/// use tutti::csp::channel;
///
/// let (tx, rx) = channel::<u32>();
/// let tx2 = tx.clone();
/// let a = std::thread::spawn(move || tx.send_blocking(1).unwrap());
/// let b = std::thread::spawn(move || tx2.send_blocking(2).unwrap());
/// let mut got = [rx.recv_blocking().unwrap(), rx.recv_blocking().unwrap()];
/// got.sort();
/// assert_eq!(got, [1, 2]);
/// a.join().unwrap();
/// b.join().unwrap();
/// ```
///
/// A value that is not `Send` cannot be sent to another thread:
///
/// ```compile_fail
/// use std::rc::Rc;
/// let (tx, rx) = tutti::csp::channel::<Rc<u8>>();
/// std::thread::spawn(move || tx.send_blocking(Rc::new(1)));
/// ```
pub struct Tx<T> {
    /// The channel; this handle holds one count of its `Tx` ends.
    chan: NonNull<Chan<T>>,
}

// SAFETY: a handle is a counted pointer to the channel, which moves `T`s between threads
// and is itself `Send + Sync` for `T: Send`.
unsafe impl<T: Send> Send for Tx<T> {}
// SAFETY: as above; `&Tx` only reaches the channel's synchronised operations.
unsafe impl<T: Send> Sync for Tx<T> {}

impl<T> Tx<T> {
    /// A handle owning one `Tx` count of `chan` (the caller gives it up).
    pub(crate) fn from_chan(chan: NonNull<Chan<T>>) -> Self {
        Tx { chan }
    }

    /// The channel.
    #[inline]
    pub(crate) fn chan(&self) -> &Chan<T> {
        // SAFETY: this handle's count keeps the channel allocated.
        unsafe { self.chan.as_ref() }
    }

    /// Sends `value`; the future completes once a receiver has taken it (rendezvous), or
    /// once it is in the buffer (buffered channel).
    ///
    /// The awaiting task gives its worker back while it waits. If the future is dropped
    /// before completing, the value is dropped with it unless a receiver already took it
    /// — it is never both received and dropped; [`SendFuture::cancel`] gets it back.
    ///
    /// ```
    /// use tutti::csp::channel;
    ///
    /// let (tx, rx) = channel::<&str>();
    /// let h = tutti::spawn(async move { tx.send("ping").await });
    /// assert_eq!(rx.recv_blocking(), Ok("ping"));
    /// assert_eq!(h.join(), Ok(()));
    /// ```
    #[inline]
    pub fn send(&self, value: T) -> SendFuture<'_, T> {
        self.chan().act_send();
        SendFuture {
            chan: self.chan(),
            waiter: PlainWaiter::new(Some(value)),
        }
    }

    /// Sends `value`, blocking the calling thread until a receiver has taken it (or it is
    /// buffered). On a tutti worker, outside an async task, the worker keeps executing
    /// other work meanwhile.
    ///
    /// # Panics
    /// When called inside an async task: use [`send`](Self::send)`.await` there.
    ///
    /// ```
    /// use tutti::csp::buffered;
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// tx.send_blocking(9).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(9));
    /// ```
    pub fn send_blocking(&self, value: T) -> Result<(), SendError<T>> {
        let value = if self.chan().capacity() == 0 {
            value // a rendezvous: the future's first poll is the attempt
        } else {
            match self.try_send_spinning(value) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Full(v)) => v,
                Err(TrySendError::Closed(v)) => return Err(SendError::Closed(v)),
                Err(TrySendError::Poisoned(v)) => return Err(SendError::Poisoned(v)),
            }
        };
        blocking::wait(pin!(self.send(value)))
    }

    /// A buffered send's first attempts: retried with back-off on a plain thread while the
    /// buffer is full (see `blocking.rs`).
    #[inline]
    fn try_send_spinning(&self, value: T) -> Result<(), TrySendError<T>> {
        let value = match self.chan().try_send(value) {
            Err(TrySendError::Full(v)) => v,
            r => return r,
        };
        blocking::retry(value, |v| match self.chan().try_send(v) {
            Err(TrySendError::Full(v)) => Err(v),
            r => Ok(r),
        })
        .unwrap_or_else(|v| Err(TrySendError::Full(v)))
    }

    /// Sends `value` only if that completes at once: a receiver is waiting, or there is
    /// room in the buffer. Otherwise the value comes back in the error.
    ///
    /// ```
    /// use tutti::csp::{channel, TrySendError};
    ///
    /// let (tx, _rx) = channel::<u8>();
    /// // A rendezvous channel with no waiting receiver.
    /// assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.chan().try_send(value)
    }

    /// Sends `value`, waiting at most `timeout` for a receiver (or for room). On timeout
    /// the value comes back in [`SendTimeoutError::Timeout`].
    ///
    /// # Panics
    /// When called inside an async task.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tutti::csp::channel;
    ///
    /// let (tx, rx) = channel::<u8>();
    /// let t = std::thread::spawn(move || rx.recv_blocking());
    /// tx.send_timeout(3, Duration::from_secs(10)).unwrap();
    /// assert_eq!(t.join().unwrap(), Ok(3));
    /// ```
    pub fn send_timeout(&self, value: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.send_deadline(value, deadline),
            None => self.send_blocking(value).map_err(Into::into),
        }
    }

    /// Sends `value`, waiting until `deadline` at most for a receiver (or for room). On
    /// timeout the value comes back in [`SendTimeoutError::Timeout`]. A deadline already
    /// past still tries once.
    ///
    /// # Panics
    /// When called inside an async task.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tutti::csp::{channel, SendTimeoutError};
    ///
    /// let (tx, _rx) = channel::<u8>();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert_eq!(tx.send_deadline(1, deadline), Err(SendTimeoutError::Timeout(1)));
    /// ```
    pub fn send_deadline(&self, value: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        let mut future = pin!(self.send(value));
        match blocking::wait_until(future.as_mut(), deadline) {
            Some(r) => r.map_err(Into::into),
            None => match future.as_mut().cancel() {
                None => Ok(()), // taken just before we withdrew
                Some(v) => Err(self.timeout_error(v)),
            },
        }
    }

    /// Why a timed-out send failed: an end state reached meanwhile wins over `Timeout`.
    #[cold]
    fn timeout_error(&self, value: T) -> SendTimeoutError<T> {
        let chan = self.chan();
        if chan.is_poisoned() {
            SendTimeoutError::Poisoned(value)
        } else if chan.is_send_closed() {
            SendTimeoutError::Closed(value)
        } else {
            SendTimeoutError::Timeout(value)
        }
    }

    /// Poisons the channel: every pending and later operation on it, at either end,
    /// fails with `Poisoned`; buffered values are dropped. Use it to shut down a whole
    /// process network (each process that sees `Poisoned` poisons its other channels).
    ///
    /// ```
    /// use tutti::csp::{channel, RecvError};
    ///
    /// let (tx, rx) = channel::<u8>();
    /// tx.poison();
    /// assert_eq!(rx.recv_blocking(), Err(RecvError::Poisoned));
    /// assert!(tx.send_blocking(1).unwrap_err().is_poisoned());
    /// ```
    pub fn poison(&self) {
        self.chan().poison();
    }

    /// Whether the channel has been poisoned.
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::channel::<u8>();
    /// rx.poison();
    /// assert!(tx.is_poisoned());
    /// ```
    pub fn is_poisoned(&self) -> bool {
        self.chan().is_poisoned()
    }

    /// Closes the channel for sending, for every sender: later sends fail with
    /// [`Closed`](SendError::Closed) (returning their value), senders waiting now get
    /// their value back the same way, and receivers get every value already buffered,
    /// then `Closed`. Closing twice is harmless.
    ///
    /// Dropping every `Tx` closes the channel the same way; `close` does it while ends
    /// are still around (say, shared with a process that keeps one).
    ///
    /// ```
    /// use tutti::csp::{buffered, RecvError, SendError};
    ///
    /// let (tx, rx) = buffered::<u8>(2);
    /// tx.send_blocking(1).unwrap();
    /// tx.close();
    /// assert_eq!(tx.send_blocking(2), Err(SendError::Closed(2)));
    /// assert_eq!(rx.recv_blocking(), Ok(1)); // what was buffered still arrives
    /// assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
    /// ```
    pub fn close(&self) {
        self.chan().close();
    }

    /// Whether a send would fail because the channel ended: it was closed, every
    /// receiver is gone, or it was poisoned.
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::channel::<u8>();
    /// assert!(!tx.is_closed());
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.chan().is_send_closed()
    }

    /// Number of values buffered right now (values of senders waiting on a full or
    /// rendezvous channel are not counted).
    ///
    /// ```
    /// let (tx, _rx) = tutti::csp::buffered::<u8>(4);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan().len()
    }

    /// Whether no value is buffered right now.
    ///
    /// ```
    /// assert!(tutti::csp::buffered::<u8>(4).0.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the buffer is full right now, so that a send would wait (unless a receiver
    /// is waiting). A rendezvous channel is always full, an unbounded one never.
    ///
    /// ```
    /// let (tx, _rx) = tutti::csp::buffered::<u8>(1);
    /// assert!(!tx.is_full());
    /// tx.try_send(1).unwrap();
    /// assert!(tx.is_full());
    /// assert!(tutti::csp::channel::<u8>().0.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.len() >= self.capacity()
    }

    /// The channel's capacity: 0 for a rendezvous channel, `usize::MAX` for an unbounded
    /// one.
    ///
    /// ```
    /// assert_eq!(tutti::csp::channel::<u8>().0.capacity(), 0);
    /// assert_eq!(tutti::csp::buffered::<u8>(8).0.capacity(), 8);
    /// assert_eq!(tutti::csp::unbounded::<u8>().0.capacity(), usize::MAX);
    /// ```
    pub fn capacity(&self) -> usize {
        self.chan().capacity()
    }
}

impl<T> Clone for Tx<T> {
    /// Another sending end of the same channel.
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::buffered::<u8>(2);
    /// tx.clone().try_send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    fn clone(&self) -> Self {
        self.chan().add_sender();
        Tx { chan: self.chan }
    }
}

impl<T> Drop for Tx<T> {
    fn drop(&mut self) {
        // SAFETY: this handle's count is given up here, once.
        unsafe { Chan::drop_sender(self.chan) };
    }
}

impl<T> fmt::Debug for Tx<T> {
    /// ```
    /// let (tx, _rx) = tutti::csp::channel::<u8>();
    /// assert!(format!("{tx:?}").starts_with("Tx"));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Tx").field(self.chan()).finish()
    }
}

/// Future returned by [`Tx::send`]: completes with `Ok(())` once the value was taken by a
/// receiver (rendezvous) or buffered.
///
/// It holds its value, and its place in the channel's queue, inline: sending allocates
/// nothing. Dropping it before completion withdraws the offer (see [`Tx::send`]).
///
/// ```
/// use tutti::csp::{channel, SendFuture};
///
/// let (tx, rx) = channel::<u8>();
/// let t = std::thread::spawn(move || rx.recv_blocking());
/// let fut: SendFuture<'_, u8> = tx.send(4);
/// tutti::block_on(fut).unwrap();
/// assert_eq!(t.join().unwrap(), Ok(4));
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct SendFuture<'a, T> {
    chan: &'a Chan<T>,
    /// The value (in its slot) and, while the send waits, its place in the channel's
    /// sender queue; decided by the receiver that takes the value.
    waiter: PlainWaiter<T>,
}

impl<T> SendFuture<'_, T> {
    /// Withdraws the offer: returns the value if no receiver has taken it, `None` if one
    /// has (the send happened) or the future already completed. The future is finished
    /// afterwards. Use it to recover the value when giving up on a send, e.g. in a
    /// `select` of your own.
    ///
    /// ```
    /// use std::pin::pin;
    /// use std::task::{Context, Poll};
    ///
    /// let (tx, _rx) = tutti::csp::channel::<String>();
    /// let mut fut = pin!(tx.send("kept".to_string()));
    /// let waker = std::sync::Arc::new(NoWake).into();
    /// assert!(fut.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    /// assert_eq!(fut.as_mut().cancel().as_deref(), Some("kept"));
    ///
    /// struct NoWake;
    /// impl std::task::Wake for NoWake { fn wake(self: std::sync::Arc<Self>) {} }
    /// # use std::future::Future;
    /// ```
    pub fn cancel(self: Pin<&mut Self>) -> Option<T> {
        let this = self.into_ref().get_ref();
        let phase = this.waiter.phase();
        if phase == Phase::Done {
            return None;
        }
        if phase == Phase::Waiting {
            this.withdraw();
        }
        this.waiter.set_phase(Phase::Done);
        // SAFETY: not queued (never, or withdrawn, or popped by a counterpart whose
        // decision `withdraw` observed under the lock or with Acquire): the slot is ours.
        unsafe { this.waiter.take_slot() }
    }

    /// Removes the waiter from the queue if no counterpart popped it yet.
    #[cold]
    fn withdraw(&self) {
        deadlock::withdrawn(&self.chan.home);
        if !self.waiter.is_decided() {
            let mut st = self.chan.lock();
            if !self.waiter.is_decided() {
                let removed = st.cancel_send(self.waiter.node());
                debug_assert!(removed, "tutti: an undecided sender was not queued");
            }
        }
    }

    fn start(&self, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        // A send on an unbounded channel never waits, so a task sending in a loop would
        // keep its worker: it yields once per budget (`runtime::budget_spent`), before
        // its value is offered (the value stays in the future meanwhile).
        if self.chan.capacity() == UNBOUNDED && crate::runtime::budget_spent() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        // SAFETY: phase `Start`: not queued, the slot is ours.
        let value = unsafe { self.waiter.take_slot() }
            .expect("tutti: SendFuture lost its value before sending");
        let mut st = self.chan.lock();
        let result = match st.offer(value) {
            Offer::Done(waker) => {
                drop(st);
                wake(waker);
                Ok(())
            }
            Offer::Wait(value) => {
                // SAFETY: not queued yet (so the slot and waker are ours); the future is
                // pinned and its `Drop` removes the waiter before the memory goes away
                // (queue invariant).
                unsafe {
                    self.waiter.put_slot(value);
                    self.waiter.set_waker(cx);
                    self.waiter.set_phase(Phase::Waiting);
                    st.wait_send(self.waiter.node());
                }
                drop(st);
                deadlock::note(Wait::Send, &self.chan.home);
                return Poll::Pending;
            }
            Offer::Closed(v) => Err(SendError::Closed(v)),
            Offer::Poisoned(v) => Err(SendError::Poisoned(v)),
        };
        self.waiter.set_phase(Phase::Done);
        Poll::Ready(result)
    }

    /// A re-poll while undecided: keep the registered waker current. Returns false if the
    /// waiter was decided meanwhile (poll again).
    #[cold]
    fn refresh_waker(&self, cx: &mut Context<'_>) -> bool {
        let st = self.chan.lock();
        if self.waiter.is_decided() {
            return false;
        }
        // SAFETY: still queued, and we hold its channel's lock.
        unsafe { self.waiter.set_waker(cx) };
        drop(st);
        deadlock::note(Wait::Send, &self.chan.home);
        true
    }
}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.into_ref().get_ref();
        loop {
            match this.waiter.phase() {
                Phase::Start => return this.start(cx),
                Phase::Waiting => {
                    if this.waiter.is_decided() {
                        // SAFETY: decided (seen with Acquire) and popped: the slot is ours.
                        if let Some(v) = unsafe { this.waiter.take_slot() } {
                            // Woken by a close or poison with the value still here.
                            // SAFETY: as above.
                            unsafe { this.waiter.put_slot(v) };
                            this.waiter.set_phase(Phase::Start);
                            continue;
                        }
                        this.waiter.set_phase(Phase::Done);
                        return Poll::Ready(Ok(()));
                    }
                    if this.refresh_waker(cx) {
                        return Poll::Pending;
                    }
                }
                Phase::Done => panic!("tutti: SendFuture polled after completion"),
            }
        }
    }
}

impl<T> Settle for SendFuture<'_, T> {
    fn is_settled(&self) -> bool {
        self.waiter.phase() != Phase::Waiting || self.waiter.is_decided()
    }
}

impl<T> Drop for SendFuture<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.waiter.phase() == Phase::Waiting {
            // The value (if no receiver took it) is dropped with the waiter, after this.
            self.withdraw();
        }
    }
}

impl<T> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture")
            .field("phase", &self.waiter.phase())
            .finish_non_exhaustive()
    }
}
