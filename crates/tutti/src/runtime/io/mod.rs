//! The I/O driver: one epoll set per runtime (through mio), polled by the
//! runtime's own idle workers, so that a socket becoming ready wakes its task
//! on the worker that saw it, with no thread in between.
//!
//! # How idle workers drive it
//!
//! The driver plugs into the idle path as an engine (`registry::IdlePollers`)
//! with an idle waiter (`sleep::IdleWaiter`):
//!
//! * **Polling.** An idle worker calls [`Driver::poll_now`] before each idle
//!   round: an `epoll_wait` with a zero timeout, if no other worker holds the
//!   driver's turn. The events it returns set readiness (`readiness.rs`) and
//!   wake tasks, which the waking worker runs itself (its `run_next` slot);
//!   a second woken task goes to its FIFO and wakes a parked worker when
//!   nobody searches, so a burst is shared.
//! * **Blocking.** One parked worker at a time blocks in `epoll_wait` instead
//!   of on its condvar (`sleep.rs`, "Idle waiters"). Its wake-up is an
//!   eventfd (mio's `Waker`) registered in the same epoll set: the runtime's
//!   wake-up (`IdleWaiter::unblock`, new work for the parked worker) writes
//!   it, which ends the `epoll_wait` at once, or makes the next one return at
//!   once — the arming that the waiter contract asks for holds from the start.
//!   The block lasts until the earliest armed timer is due (the timer
//!   wheel's next-due hint, `timer::until_next_due`): the worker then fires
//!   the timer itself and runs the task it wakes, with no hop through the
//!   timer thread. With no timer armed nothing bounds it but a long safety
//!   net (`sleep::WAITER_MAX`): an idle runtime with open sockets makes no
//!   system call at all. A timer armed while the worker blocks needs no
//!   shorter bound: the timer thread fires it, and the injection of the task
//!   it wakes wakes the worker through `unblock`.
//!
//! The park protocol with the driver in it is the one `sleep.rs` proves for
//! any waiter whose wake-up is armed before `stay` is asked; `loom_tests`
//! below model-checks it with the driver's kind of wake-up (an eventfd
//! counter that a write before the wait leaves pending); the driver's own protocol — readiness set by the driver against readiness
//! cleared by a task, and the task's waker — is in `readiness.rs` with its
//! loom model.
//!
//! # One runtime, one driver
//!
//! The driver is created by the first socket opened on the runtime
//! ([`Driver::current`]) and lives as long as that runtime or its last
//! socket. A runtime has one idle-waiter slot; when another engine holds it
//! already (a shared-memory world's futex), the driver's blocking side runs on
//! one thread of its own, `tutti-io`, and its polling side stays on the idle
//! workers.

mod readiness;

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use mio::event::Source;
use mio::{Events, Interest, Token};

use super::registry::Registry;
use super::sleep::IdleWaiter;
use crate::loom::{lock, AtomicUsize, Mutex, Ordering};

pub(crate) use readiness::{Direction, ReadyEvent};
use readiness::{ScheduledIo, READABLE, READ_CLOSED, WRITABLE, WRITE_CLOSED};

/// The eventfd that ends a blocking turn.
const WAKE: Token = Token(0);
/// Events taken from the OS per turn.
const EVENTS_PER_TURN: usize = 1024;

/// The part of the driver only one thread uses at a time: whoever holds it
/// "has the turn" and may wait in the OS.
struct Turn {
    poll: mio::Poll,
    events: Events,
    ready: Vec<(Arc<ScheduledIo>, usize)>,
}

/// One runtime's I/O driver (see the module doc).
pub(crate) struct Driver {
    turn: Mutex<Turn>,
    registry: mio::Registry,
    waker: mio::Waker,
    /// Registered sockets by token. Tokens are never reused, so a stale event
    /// for a socket that is gone finds nothing.
    sources: Mutex<HashMap<usize, Arc<ScheduledIo>>>,
    next_token: AtomicUsize,
}

impl Driver {
    fn new() -> io::Result<Driver> {
        let poll = mio::Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = mio::Waker::new(&registry, WAKE)?;
        Ok(Driver {
            turn: Mutex::new(Turn {
                poll,
                events: Events::with_capacity(EVENTS_PER_TURN),
                ready: Vec::new(),
            }),
            registry,
            waker,
            sources: Mutex::new(HashMap::new()),
            next_token: AtomicUsize::new(1),
        })
    }

    /// The driver of the current runtime (the calling worker's, else the
    /// entered one, else the global one), created on first use.
    pub(crate) fn current() -> io::Result<Arc<Driver>> {
        super::registry::with_current_registry(driver_of)
    }

    /// Registers `source` for read and write readiness.
    pub(crate) fn register(self: &Arc<Self>, source: &mut impl Source) -> io::Result<Registration> {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let io = Arc::new(ScheduledIo::new());
        lock(&self.sources).insert(token, io.clone());
        if let Err(e) = self.registry.register(
            source,
            Token(token),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            lock(&self.sources).remove(&token);
            return Err(e);
        }
        Ok(Registration {
            driver: self.clone(),
            token,
            io,
        })
    }

    /// Whether sockets are registered: a task may be waiting for the outside
    /// world, so the runtime is not quiet (the deadlock detector's test).
    pub(crate) fn has_sources(&self) -> bool {
        !lock(&self.sources).is_empty()
    }

    /// How many sockets are registered (the tests' leak check).
    #[cfg(test)]
    pub(crate) fn source_count(&self) -> usize {
        lock(&self.sources).len()
    }

    /// Takes the events the OS has now, unless another thread has the turn;
    /// true if a socket became ready.
    pub(crate) fn poll_now(&self) -> bool {
        match self.turn.try_lock() {
            Ok(mut turn) => self.turn_with(&mut turn, Some(Duration::ZERO)),
            Err(_) => false,
        }
    }

    /// Waits up to `timeout` for events, then wakes the tasks they concern.
    fn turn_with(&self, turn: &mut Turn, timeout: Option<Duration>) -> bool {
        let Turn {
            poll,
            events,
            ready,
        } = turn;
        if let Err(e) = poll.poll(events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                // epoll_wait fails only on a broken epoll descriptor: a broken
                // runtime invariant, and every socket on it would hang.
                eprintln!("tutti: fatal: the I/O driver's epoll_wait failed: {e}");
                std::process::abort();
            }
            return false;
        }
        {
            let sources = lock(&self.sources);
            for event in events.iter() {
                if event.token() == WAKE {
                    continue;
                }
                let Some(io) = sources.get(&event.token().0) else {
                    continue;
                };
                let mut bits = 0;
                if event.is_readable() {
                    bits |= READABLE;
                }
                if event.is_read_closed() || event.is_error() {
                    bits |= READABLE | READ_CLOSED;
                }
                if event.is_writable() {
                    bits |= WRITABLE;
                }
                if event.is_write_closed() || event.is_error() {
                    bits |= WRITABLE | WRITE_CLOSED;
                }
                if bits != 0 {
                    ready.push((io.clone(), bits));
                }
            }
        }
        let moved = !ready.is_empty();
        for (io, bits) in ready.drain(..) {
            io.set_readiness(bits);
        }
        moved
    }

    fn deregister(&self, token: usize, source: &mut impl Source) {
        // A socket that was already closed by the OS cannot fail in a way the
        // owner could act on: dropping it must not panic.
        let _ = self.registry.deregister(source);
        lock(&self.sources).remove(&token);
    }
}

impl IdleWaiter for Driver {
    fn block(&self, max: Duration, stay: &dyn Fn() -> bool) {
        // A worker running `poll_now` has the turn for a moment: return early
        // (allowed) rather than wait for it.
        let Ok(mut turn) = self.turn.try_lock() else {
            return;
        };
        // The eventfd is armed from the start (see the module doc).
        if !stay() {
            return;
        }
        self.turn_with(&mut turn, Some(max));
    }

    fn unblock(&self) {
        // An eventfd write: never blocks. It fails only if the descriptor is
        // broken, and the block then ends by its bound.
        let _ = self.waker.wake();
    }
}

/// The driver of `registry`, created and plugged into its idle path on first
/// use.
fn driver_of(registry: &Arc<Registry>) -> io::Result<Arc<Driver>> {
    if let Some(d) = registry.io.get() {
        return Ok(d.clone());
    }
    let driver = Arc::new(Driver::new()?);
    if registry.io.set(driver.clone()).is_err() {
        // Another thread created it first.
        if let Some(d) = registry.io.get() {
            return Ok(d.clone());
        }
    }
    let poller = driver.clone();
    // Socket events wake a parked worker: the one blocked in the driver, or
    // the driver's own thread.
    registry
        .pollers
        .add(Arc::new(move || poller.poll_now()), true);
    if !registry.sleep.set_waiter(driver.clone()) {
        block_on_own_thread(Arc::downgrade(&driver))?;
    }
    Ok(driver)
}

/// The driver's blocking side when another engine holds the runtime's idle
/// waiter: a thread that waits in the OS for as long as the driver lives.
fn block_on_own_thread(driver: Weak<Driver>) -> io::Result<()> {
    /// How often the thread looks whether the driver is gone (the runtime
    /// that holds it was dropped); socket events end each wait at once.
    const CHECK: Duration = Duration::from_secs(1);
    std::thread::Builder::new()
        .name("tutti-io".into())
        .spawn(move || {
            while let Some(d) = driver.upgrade() {
                let mut turn = lock(&d.turn);
                d.turn_with(&mut turn, Some(CHECK));
            }
        })
        .map(drop)
}

/// A socket's place in the driver; deregistered by [`Evented`]'s drop.
pub(crate) struct Registration {
    driver: Arc<Driver>,
    token: usize,
    io: Arc<ScheduledIo>,
}

/// A non-blocking socket registered with the current runtime's driver: the
/// one seam between the driver and the socket types of `net` and `rpc`.
pub(crate) struct Evented<S: Source> {
    source: S,
    reg: Registration,
}

impl<S: Source> Evented<S> {
    /// Registers `source` (already non-blocking) with the current driver.
    pub(crate) fn new(mut source: S) -> io::Result<Self> {
        let reg = Driver::current()?.register(&mut source)?;
        Ok(Evented { source, reg })
    }

    /// The socket itself.
    #[inline]
    pub(crate) fn get(&self) -> &S {
        &self.source
    }

    /// Waits until the socket may be ready in `direction`.
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<ReadyEvent> {
        self.reg.io.poll_ready(cx, direction)
    }

    /// Runs `op` once the socket is ready in `direction`, again after every
    /// `WouldBlock` (which forgets the readiness it acted on). `op` runs only
    /// inside this poll and its result is returned at once, so a future built
    /// on this that is dropped loses nothing `op` did.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        loop {
            let event = match self.reg.io.poll_ready(cx, direction) {
                Poll::Ready(ev) => ev,
                Poll::Pending => return Poll::Pending,
            };
            match op(&self.source) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.reg.io.clear_readiness(event);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return Poll::Ready(r),
            }
        }
    }

    /// [`poll_io`](Self::poll_io) for an `op` that moves bytes to or from a
    /// buffer of `len` bytes (a stream's read or write). A transfer of fewer
    /// than `len` bytes emptied the receive buffer or filled the send buffer,
    /// so the readiness it acted on is forgotten at once (`readiness.rs`,
    /// O3'): the next call waits for the driver's next event instead of
    /// making a system call that would only say `WouldBlock` — one system
    /// call fewer per request/response exchange.
    pub(crate) fn poll_transfer(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        len: usize,
        mut op: impl FnMut(&S) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        loop {
            let event = match self.reg.io.poll_ready(cx, direction) {
                Poll::Ready(ev) => ev,
                Poll::Pending => return Poll::Pending,
            };
            match op(&self.source) {
                Ok(n) if n > 0 && n < len => {
                    self.reg.io.clear_readiness(event);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.reg.io.clear_readiness(event);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return Poll::Ready(r),
            }
        }
    }

    /// Tries `op` once without waiting (`WouldBlock` if not ready).
    pub(crate) fn try_io<R>(
        &self,
        direction: Direction,
        op: impl FnOnce(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        let noop = std::task::Waker::noop();
        let mut cx = Context::from_waker(noop);
        match self.reg.io.poll_ready(&mut cx, direction) {
            Poll::Ready(event) => match op(&self.source) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.reg.io.clear_readiness(event);
                    Err(e)
                }
                r => r,
            },
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl<S: Source> Drop for Evented<S> {
    fn drop(&mut self) {
        self.reg.driver.deregister(self.reg.token, &mut self.source);
        // A task of another half still waiting on this socket polls again
        // and meets the closed socket itself.
        self.reg.io.wake_all();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The park protocol of `sleep.rs` with the driver as the idle waiter.
    //! The driver's `epoll_wait` on its eventfd is modelled by a counter
    //! (the eventfd: written by `unblock` and by a socket event, never
    //! cleared by a reader before it returns) and a condvar: what matters is
    //! that the wake-up is armed from the start, so a write before the wait
    //! ends it at once.

    use super::super::latch::CoreLatch;
    use super::super::sleep::{IdleWaiter, Sleep};
    use crate::loom::{fence, lock, thread, Arc, AtomicBool, Condvar, Mutex, Ordering};
    use std::time::Duration;

    struct EpollModel {
        /// Pending eventfd writes and socket events.
        pending: Mutex<u32>,
        cond: Condvar,
        /// A socket became ready (what the worker's poll then finds).
        socket: AtomicBool,
    }

    impl EpollModel {
        fn new() -> Self {
            EpollModel {
                pending: Mutex::new(0),
                cond: Condvar::new(),
                socket: AtomicBool::new(false),
            }
        }

        /// The OS reports a socket ready to whoever waits in the epoll set.
        fn socket_ready(&self) {
            self.socket.store(true, Ordering::Release);
            fence(Ordering::SeqCst);
            *lock(&self.pending) += 1;
            self.cond.notify_all();
        }
    }

    impl IdleWaiter for EpollModel {
        fn block(&self, _max: Duration, stay: &dyn Fn() -> bool) {
            if !stay() {
                return;
            }
            // No timeout in the model: a lost wake-up blocks for ever.
            let mut pending = lock(&self.pending);
            while *pending == 0 {
                pending = self.cond.wait(pending).unwrap();
            }
            *pending = 0;
        }

        fn unblock(&self) {
            *lock(&self.pending) += 1;
            self.cond.notify_all();
        }
    }

    /// A worker about to block in the driver races new work injected for it:
    /// it sees the work or the eventfd write ends its wait; no count of it as
    /// sleeping is left behind.
    #[test]
    fn a_worker_in_the_driver_is_woken_by_new_work() {
        loom::model(|| {
            let sleep = Arc::new(Sleep::new(1));
            assert!(sleep.set_waiter(std::sync::Arc::new(EpollModel::new())));
            let job = Arc::new(AtomicBool::new(false));
            let latch = Arc::new(CoreLatch::new());
            let worker = {
                let (sleep, job, latch) = (sleep.clone(), job.clone(), latch.clone());
                thread::spawn(move || {
                    sleep.start_looking();
                    while !job.load(Ordering::Acquire) {
                        let w = sleep.claim_waiter();
                        sleep.sleep(0, &latch, None, w, || job.load(Ordering::Acquire));
                        sleep.release_waiter();
                    }
                    sleep.stop_looking();
                })
            };
            job.store(true, Ordering::Release);
            sleep.new_injected_jobs();
            worker.join().unwrap();
            assert_eq!(sleep.counters().sleeping(), 0);
            assert_eq!(sleep.counters().idle(), 0);
        });
    }

    /// A worker about to block in the driver races a socket becoming ready:
    /// the event ends its wait (or it never starts), and it withdraws itself.
    #[test]
    fn a_socket_event_wakes_the_worker_in_the_driver() {
        super::super::sleep::loom_tests::input_wakes_the_worker_in_the_waiter(
            EpollModel::new,
            |epoll| epoll.socket.load(Ordering::Acquire),
            EpollModel::socket_ready,
        );
    }
}
