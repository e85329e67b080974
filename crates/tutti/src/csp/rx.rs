//! The receiving end, [`Rx`], and its future, [`RecvFuture`].

use std::fmt;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::blocking::{self, Settle};
use super::chan::{wake, Chan, Take};
use super::deadlock::{self, Side, Wait};
use super::error::{RecvError, RecvTimeoutError, TryRecvError};
use super::waiter::{Phase, PlainWaiter};
use std::ptr::NonNull;

/// The receiving end of a channel. Cloning it shares the end (occam `SHARED ?`): any
/// number of processes may receive from one channel, and **each value goes to exactly
/// one receiver** — buffered values in FIFO order to whoever asks first, and receivers
/// that have to wait are served in the order they started waiting.
///
/// When every `Rx` of a channel is dropped, senders get their value back in
/// [`SendError::Closed`](super::SendError::Closed) and buffered values are dropped.
///
/// `Rx<T>` is `Send + Sync` when `T: Send`.
///
/// ```
/// use tutti::csp::channel;
///
/// // A bank of two servers sharing the reading end.
/// let (tx, rx) = channel::<u32>();
/// let servers: Vec<_> = (0..2)
///     .map(|_| {
///         let rx = rx.clone();
///         tutti::spawn(async move {
///             let mut served = 0;
///             while rx.recv().await.is_ok() {
///                 served += 1;
///             }
///             served
///         })
///     })
///     .collect();
/// drop(rx);
/// for i in 0..10 {
///     tx.send_blocking(i).unwrap();
/// }
/// drop(tx); // the servers see `Closed` and stop
/// let total: u32 = servers.into_iter().map(|h| h.join()).sum();
/// assert_eq!(total, 10);
/// ```
pub struct Rx<T> {
    /// The channel; this handle holds one count of its `Rx` ends.
    chan: NonNull<Chan<T>>,
}

// SAFETY: a handle is a counted pointer to the channel, which moves `T`s between threads
// and is itself `Send + Sync` for `T: Send`.
unsafe impl<T: Send> Send for Rx<T> {}
// SAFETY: as above; `&Rx` only reaches the channel's synchronised operations.
unsafe impl<T: Send> Sync for Rx<T> {}

impl<T> Rx<T> {
    /// A handle owning one `Rx` count of `chan` (the caller gives it up).
    pub(crate) fn from_chan(chan: NonNull<Chan<T>>) -> Self {
        Rx { chan }
    }

    /// The channel.
    #[inline]
    pub(crate) fn chan(&self) -> &Chan<T> {
        // SAFETY: this handle's count keeps the channel allocated.
        unsafe { self.chan.as_ref() }
    }

    /// Receives a value. The awaiting task gives its worker back while it waits.
    ///
    /// Fails with [`RecvError::Closed`] once every sender is gone and nothing is left,
    /// and with [`RecvError::Poisoned`] if the channel is poisoned. Dropping the future
    /// never loses a value: one that was already handed to it goes back to the channel
    /// for the next receiver ([`RecvFuture::cancel`] returns it instead).
    ///
    /// ```
    /// use tutti::csp::channel;
    ///
    /// let (tx, rx) = channel::<u64>();
    /// let doubler = tutti::spawn(async move { rx.recv().await.map(|v| v * 2) });
    /// tx.send_blocking(21).unwrap();
    /// assert_eq!(doubler.join(), Ok(42));
    /// ```
    #[inline]
    pub fn recv(&self) -> RecvFuture<'_, T> {
        self.chan().home.act(Some(Side::Recv));
        RecvFuture {
            chan: self.chan(),
            waiter: PlainWaiter::new(None),
        }
    }

    /// Receives a value, blocking the calling thread until one arrives. On a tutti worker,
    /// outside an async task, the worker keeps executing other work meanwhile.
    ///
    /// # Panics
    /// When called inside an async task: use [`recv`](Self::recv)`.await` there.
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::channel::<char>();
    /// std::thread::spawn(move || tx.send_blocking('x'));
    /// assert_eq!(rx.recv_blocking(), Ok('x'));
    /// ```
    pub fn recv_blocking(&self) -> Result<T, RecvError> {
        if self.chan().capacity() > 0 {
            // A rendezvous skips this: the future's first poll is the attempt.
            match self.try_recv_spinning() {
                Ok(v) => return Ok(v),
                Err(TryRecvError::Closed) => return Err(RecvError::Closed),
                Err(TryRecvError::Poisoned) => return Err(RecvError::Poisoned),
                Err(TryRecvError::Empty) => {}
            }
        }
        blocking::wait(pin!(self.recv()))
    }

    /// A buffered receive's first attempts: retried with back-off on a plain thread while
    /// the buffer is empty (see `blocking.rs`).
    #[inline]
    fn try_recv_spinning(&self) -> Result<T, TryRecvError> {
        match self.chan().try_recv() {
            Err(TryRecvError::Empty) => {}
            r => return r,
        }
        blocking::retry((), |()| match self.chan().try_recv() {
            Err(TryRecvError::Empty) => Err(()),
            r => Ok(r),
        })
        .unwrap_or(Err(TryRecvError::Empty))
    }

    /// Receives a value only if one is available at once: buffered, or offered by a
    /// waiting sender.
    ///
    /// ```
    /// use tutti::csp::{buffered, TryRecvError};
    ///
    /// let (tx, rx) = buffered::<u8>(4);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.try_send(5).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(5));
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan().try_recv()
    }

    /// Receives a value, waiting at most `timeout`.
    ///
    /// # Panics
    /// When called inside an async task.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tutti::csp::{buffered, RecvTimeoutError};
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Ok(1));
    /// ```
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.recv_deadline(deadline),
            None => self.recv_blocking().map_err(Into::into),
        }
    }

    /// Receives a value, waiting until `deadline` at most. A deadline already past still
    /// takes a value that is there.
    ///
    /// # Panics
    /// When called inside an async task.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tutti::csp::{buffered, RecvTimeoutError};
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// let soon = Instant::now() + Duration::from_millis(2);
    /// assert_eq!(rx.recv_deadline(soon), Err(RecvTimeoutError::Timeout));
    /// tx.try_send(4).unwrap();
    /// assert_eq!(rx.recv_deadline(soon), Ok(4));
    /// ```
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        let mut future = pin!(self.recv());
        match blocking::wait_until(future.as_mut(), deadline) {
            Some(r) => r.map_err(Into::into),
            // A value handed over just before we withdrew is ours.
            None => future.as_mut().cancel().ok_or(RecvTimeoutError::Timeout),
        }
    }

    /// Closes the channel for sending, from the receiving end: later sends fail with
    /// `Closed` (returning their value) and waiting senders get theirs back, while this
    /// and every other receiver still get what is buffered, then
    /// [`Closed`](RecvError::Closed). See [`Tx::close`](super::Tx::close).
    ///
    /// ```
    /// use tutti::csp::{buffered, RecvError, SendError};
    ///
    /// let (tx, rx) = buffered::<u8>(2);
    /// tx.send_blocking(1).unwrap();
    /// rx.close();
    /// assert_eq!(tx.send_blocking(2), Err(SendError::Closed(2)));
    /// assert_eq!(rx.recv_blocking(), Ok(1));
    /// assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
    /// ```
    pub fn close(&self) {
        self.chan().close();
    }

    /// Whether the channel is closed for sending (by [`close`](Self::close), or because
    /// every `Tx` is gone): once what is buffered is received, receives fail with
    /// `Closed`.
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::channel::<u8>();
    /// assert!(!rx.is_closed());
    /// drop(tx);
    /// assert!(rx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.chan().is_closed()
    }

    /// Poisons the channel; see [`Tx::poison`](super::Tx::poison).
    ///
    /// ```
    /// use tutti::csp::{buffered, SendError};
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// rx.poison();
    /// assert_eq!(tx.send_blocking(1), Err(SendError::Poisoned(1)));
    /// ```
    pub fn poison(&self) {
        self.chan().poison();
    }

    /// Whether the channel has been poisoned.
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::channel::<u8>();
    /// tx.poison();
    /// assert!(rx.is_poisoned());
    /// ```
    pub fn is_poisoned(&self) -> bool {
        self.chan().is_poisoned()
    }

    /// Number of values buffered right now (values offered by waiting senders of a
    /// rendezvous channel are not counted).
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::buffered::<u8>(4);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan().len()
    }

    /// Whether no value is buffered right now.
    ///
    /// ```
    /// let (_tx, rx) = tutti::csp::buffered::<u8>(4);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The channel's capacity: 0 for a rendezvous channel, `usize::MAX` for an unbounded
    /// one.
    ///
    /// ```
    /// assert_eq!(tutti::csp::buffered::<u8>(3).1.capacity(), 3);
    /// assert_eq!(tutti::csp::unbounded::<u8>().1.capacity(), usize::MAX);
    /// ```
    pub fn capacity(&self) -> usize {
        self.chan().capacity()
    }
}

impl<T> Clone for Rx<T> {
    /// Another receiving end of the same channel.
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::buffered::<u8>(2);
    /// let rx2 = rx.clone();
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx2.try_recv(), Ok(1));
    /// ```
    fn clone(&self) -> Self {
        self.chan().add_receiver();
        Rx { chan: self.chan }
    }
}

impl<T> Drop for Rx<T> {
    fn drop(&mut self) {
        // SAFETY: this handle's count is given up here, once.
        unsafe { Chan::drop_receiver(self.chan) };
    }
}

impl<T> fmt::Debug for Rx<T> {
    /// ```
    /// let (_tx, rx) = tutti::csp::channel::<u8>();
    /// assert!(format!("{rx:?}").starts_with("Rx"));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Rx").field(self.chan()).finish()
    }
}

/// Future returned by [`Rx::recv`].
///
/// It holds its place in the channel's queue inline: receiving allocates nothing.
/// Dropping it never loses a value (see [`Rx::recv`]).
///
/// ```
/// use tutti::csp::{buffered, RecvFuture};
///
/// let (tx, rx) = buffered::<u8>(1);
/// tx.try_send(1).unwrap();
/// let fut: RecvFuture<'_, u8> = rx.recv();
/// assert_eq!(tutti::block_on(fut), Ok(1));
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct RecvFuture<'a, T> {
    chan: &'a Chan<T>,
    /// While the receive waits, its place in the channel's receiver queue (the value
    /// arrives in its slot); decided by the sender that hands it a value.
    waiter: PlainWaiter<T>,
}

impl<T> RecvFuture<'_, T> {
    /// Stops waiting: returns the value if one was already handed to this future (so it
    /// is not given back to the channel), `None` otherwise. The future is finished
    /// afterwards.
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Wake};
    ///
    /// struct NoWake;
    /// impl Wake for NoWake { fn wake(self: std::sync::Arc<Self>) {} }
    ///
    /// let (tx, rx) = tutti::csp::channel::<u8>();
    /// let mut fut = pin!(rx.recv());
    /// let waker = std::sync::Arc::new(NoWake).into();
    /// assert!(fut.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    /// tx.try_send(8).unwrap(); // handed straight to the waiting future
    /// assert_eq!(fut.as_mut().cancel(), Some(8));
    /// ```
    pub fn cancel(self: Pin<&mut Self>) -> Option<T> {
        let this = self.into_ref().get_ref();
        if this.waiter.phase() != Phase::Waiting {
            this.waiter.set_phase(Phase::Done);
            return None;
        }
        deadlock::withdrawn(&this.chan.home);
        if !this.waiter.is_decided() {
            let mut st = this.chan.lock();
            if !this.waiter.is_decided() {
                st.cancel_recv(this.waiter.node());
                this.waiter.set_phase(Phase::Done);
                return None;
            }
        }
        // SAFETY: decided by a counterpart (seen with Acquire): popped, the slot is ours.
        let value = unsafe { this.waiter.take_slot() };
        this.waiter.set_phase(Phase::Done);
        value
    }

    fn start(&self, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
        let mut st = self.chan.lock();
        let result = match st.take() {
            Take::Value(v, waker) => {
                drop(st);
                wake(waker);
                Ok(v)
            }
            Take::Empty => {
                // SAFETY: not queued yet; the future is pinned and its `Drop` removes the
                // waiter before the memory goes away (queue invariant).
                unsafe {
                    self.waiter.set_waker(cx);
                    self.waiter.set_phase(Phase::Waiting);
                    st.wait_recv(self.waiter.node());
                }
                drop(st);
                deadlock::note_from(Wait::Recv, &self.chan.home, self.chan.sole_sender());
                return Poll::Pending;
            }
            Take::Closed => Err(RecvError::Closed),
            Take::Poisoned => Err(RecvError::Poisoned),
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
        deadlock::note_from(Wait::Recv, &self.chan.home, self.chan.sole_sender());
        true
    }
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.into_ref().get_ref();
        loop {
            match this.waiter.phase() {
                Phase::Start => return this.start(cx),
                Phase::Waiting => {
                    if this.waiter.is_decided() {
                        // SAFETY: decided (seen with Acquire) and popped: the slot is ours.
                        match unsafe { this.waiter.take_slot() } {
                            Some(v) => {
                                this.waiter.set_phase(Phase::Done);
                                return Poll::Ready(Ok(v));
                            }
                            // Woken by a close or poison: look at the channel again.
                            None => this.waiter.set_phase(Phase::Start),
                        }
                        continue;
                    }
                    if this.refresh_waker(cx) {
                        return Poll::Pending;
                    }
                }
                Phase::Done => panic!("tutti: RecvFuture polled after completion"),
            }
        }
    }
}

impl<T> Settle for RecvFuture<'_, T> {
    fn is_settled(&self) -> bool {
        self.waiter.phase() != Phase::Waiting || self.waiter.is_decided()
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // A finished or never-polled receive (the usual drop) has nothing to withdraw.
        if self.waiter.phase() == Phase::Waiting {
            self.withdraw();
        }
    }
}

impl<T> RecvFuture<'_, T> {
    /// Dropped while waiting: leave the queue, or give back a value handed to us.
    #[cold]
    fn withdraw(&self) {
        deadlock::withdrawn(&self.chan.home);
        if !self.waiter.is_decided() {
            let mut st = self.chan.lock();
            if !self.waiter.is_decided() {
                st.cancel_recv(self.waiter.node());
                return; // nothing was handed to us
            }
            // Decided under the lock before we took it: give the value back in place.
            // SAFETY: popped and decided before our lock: the slot is ours.
            if let Some(v) = unsafe { self.waiter.take_slot() } {
                let r = st.give_back(v);
                drop(st);
                match r {
                    Ok(waker) => wake(waker),
                    Err(v) => drop(v),
                }
            }
            return;
        }
        // SAFETY: decided (seen with Acquire) and popped: the slot is ours.
        if let Some(v) = unsafe { self.waiter.take_slot() } {
            self.chan.give_back(v);
        }
    }
}

impl<T> fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFuture")
            .field("phase", &self.waiter.phase())
            .finish_non_exhaustive()
    }
}
