//! Timers: [`sleep`], [`sleep_until`], [`timeout`] and [`timeout_at`].
//!
//! Every timer in the process is an entry in one [`Driver`]: an ordered map from
//! `(deadline, sequence number)` to the [`Waker`] of the one future waiting for that
//! deadline. One thread, `tutti-timer`, started lazily by the first registration, sleeps
//! on a condition variable until the earliest deadline in the map (indefinitely while the
//! map is empty, so an idle process spends no CPU on timers), then removes every entry
//! that is due and wakes their wakers.
//!
//! The building block is the crate-internal [`Deadline`]: a registration that a future
//! arms with its waker when it is polled before its instant, and that disarms itself
//! (removing its entry in O(log n)) when dropped or reset. [`Sleep`] is a `Deadline`;
//! [`Timeout`] is a future plus a `Deadline`; CSP `Alt` uses a `Deadline` for its timeout
//! guard. A deadline that has already passed when it is first polled completes at once
//! and never touches the driver or its thread.
//!
//! # Invariants
//!
//! 1. **One owner per entry.** The entry `(at, seq)` is in the map exactly while the
//!    `Deadline` that inserted it is armed with `seq` and the driver has not fired it.
//!    An entry is removed either by its `Deadline` (disarm, reset, drop) or by the driver
//!    (fire), both under the driver's lock, so exactly one of them gets its waker.
//! 2. **Gone means due.** The driver removes an entry only once `Instant::now() >= at` on
//!    its thread. A `Deadline` that finds its entry gone therefore knows its instant has
//!    passed, even if its own clock reading were behind.
//! 3. **Order.** Entries are fired in map order: by deadline, and by registration order
//!    among equal deadlines (the sequence number is unique and increasing). Wakers are
//!    woken after the lock is released, one by one, in that order.
//!
//! # Sleep/wake protocol of the timer thread (no lost wake-up)
//!
//! The thread holds the lock while it removes the due entries and reads the earliest
//! remaining deadline, and the condition-variable wait releases that lock atomically. An
//! insert changes the map under the same lock and, when its entry becomes the earliest
//! (or the map was empty), notifies the condition variable before unlocking. So either
//! the thread scanned after the insert and sleeps at most until the new earliest
//! deadline, or it was already waiting and the notification wakes it to scan again.
//! Removing an entry never notifies: at worst the thread wakes for a deadline nobody
//! waits for any more, finds nothing due, and sleeps again.
//!
//! # Whose timer
//!
//! Each entry remembers the runtime whose worker armed it (its *owner*; 0 when armed off
//! the workers, e.g. by `block_on` on a plain thread): the waker of a task polled on a
//! worker of runtime R wakes a task of R. So a runtime with every worker idle is quiet
//! (nothing of it can run again without an outside event) when no timer of its own and
//! no timer armed off the workers is pending ([`pending_timers_for`]); a timer another
//! runtime keeps armed says nothing about it (the deadlock detector, `diag/detect.rs`,
//! judges by that quietness).
//!
//! # Busy workers fire due timers too
//!
//! The timer thread is one more thread for the OS to schedule: while every core runs a
//! worker busy with long polls, a due timer can wait a time slice (milliseconds) for the
//! thread to get a core, and a high-priority task waiting for it (`priority.rs`) waits
//! with it. So every worker, each time it looks for its next job, also fires what is
//! due ([`fire_due_here`]): the woken tasks are queued before the worker's search, and a
//! high-priority one is the job it takes. The check is one relaxed load of the
//! driver's *next-due hint* while no timer is armed, and a clock read while one is.
//!
//! The hint is the earliest entry's deadline in nanoseconds since a process-wide
//! epoch (`u64::MAX`: no entry), stored under the lock by every change of the map.
//! It is only a hint, read without the lock:
//!
//! 4. **The hint never loses a timer.** A worker acts on the hint only by taking the
//!    lock (with `try_lock`, so that a busy worker never waits for it) and firing what
//!    the map says is due, exactly as the thread does, so invariants 1–3 hold for
//!    entries fired by workers. A stale hint later than the truth makes a worker skip a
//!    check: the timer thread, which still sleeps until the earliest deadline, fires
//!    the entry. A stale hint earlier than the truth costs one lock and an empty scan.
//!
//! The timer thread asks the OS for a timer slack of [`TIMER_SLACK_NS`] (Linux pads
//! every timed sleep of a thread by its slack, 50 µs by default), so that an idle
//! runtime's timers are as punctual as the clock allows.
//!
//! Under `--cfg loom` the global driver is per model execution and starts no thread:
//! a loom model drives it by calling `Driver::fire_due` itself.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::PoisonError;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::loom::{lock, AtomicU64, Condvar, Mutex, Ordering};

/// Timer slack the timer thread asks Linux for, in nanoseconds (see the module doc).
#[cfg_attr(any(loom, not(target_os = "linux")), allow(dead_code))]
const TIMER_SLACK_NS: libc::c_ulong = 1_000;

/// The hint's value while no entry is armed.
const NONE_DUE: u64 = u64::MAX;

/// How far ahead a deadline lies when `now + duration` does not fit in an [`Instant`]:
/// about thirty years, which is "never" for any program and still representable.
const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);

/// Map key of a registration: its deadline, then its registration sequence number.
type Key = (Instant, u64);

/// The instant `d` from now, clamped to [`FAR_FUTURE`] when it would overflow.
fn instant_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(FAR_FUTURE))
        .expect("tutti: the platform's Instant cannot represent a deadline 30 years ahead")
}

/// Nanoseconds from the process's timer epoch (its first use) to `at`; 0 before it.
fn nanos_since_epoch(at: Instant) -> u64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(at.saturating_duration_since(epoch).as_nanos()).unwrap_or(NONE_DUE - 1)
}

/// The next-due hint (invariant 4) on a cache line of its own: every worker reads it
/// between jobs, and the lock beside it changes with every registration.
#[repr(align(128))]
struct NextDue(AtomicU64);

/// The timer queue: every armed [`Deadline`] of one driver, and its thread.
pub(crate) struct Driver {
    /// The earliest deadline of `state`'s entries (invariant 4); written under its lock.
    next_due: NextDue,
    /// The registrations; see the module invariants.
    state: Mutex<State>,
    /// Signalled under `state`'s lock when an insert becomes the earliest entry.
    wakeup: Condvar,
    /// Whether the first registration starts the `tutti-timer` thread. False for drivers
    /// that tests (and loom models) fire by hand with `Driver::fire_due`.
    autostart: bool,
}

/// What [`Driver::state`] protects.
struct State {
    /// Armed registrations in firing order, each with its owner (see "Whose timer").
    entries: BTreeMap<Key, (Waker, u16)>,
    /// Number of entries per owner (owners with none are absent).
    owners: BTreeMap<u16, usize>,
    /// Sequence number of the next registration; never reused.
    next_seq: u64,
    /// Whether the thread has been started; set once, never cleared.
    thread_started: bool,
}

impl State {
    /// Removes every entry due at `now`, in firing order.
    fn take_due(&mut self, now: Instant) -> Vec<Waker> {
        let mut due = Vec::new();
        while let Some(entry) = self.entries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (waker, owner) = entry.remove();
            self.forget(owner);
            due.push(waker);
        }
        due
    }

    /// One entry of `owner` left the map.
    fn forget(&mut self, owner: u16) {
        if let std::collections::btree_map::Entry::Occupied(mut n) = self.owners.entry(owner) {
            *n.get_mut() -= 1;
            if *n.get() == 0 {
                n.remove();
            }
        }
    }
}

/// The owner of a timer armed on this thread now (see "Whose timer").
fn owner() -> u16 {
    #[cfg(not(loom))]
    {
        super::worker::WorkerThread::current().map_or(0, |w| w.registry().id())
    }
    #[cfg(loom)]
    {
        0
    }
}

impl Driver {
    /// A driver that starts its thread on first use.
    #[cfg(not(loom))]
    const fn new() -> Self {
        Driver {
            next_due: NextDue(AtomicU64::new(NONE_DUE)),
            state: Mutex::new(State {
                entries: BTreeMap::new(),
                owners: BTreeMap::new(),
                next_seq: 0,
                thread_started: false,
            }),
            wakeup: Condvar::new(),
            autostart: true,
        }
    }

    /// A driver without a thread; whoever owns it calls `Driver::fire_due`.
    #[cfg(any(test, loom))]
    fn manual() -> Self {
        Driver {
            next_due: NextDue(AtomicU64::new(NONE_DUE)),
            state: Mutex::new(State {
                entries: BTreeMap::new(),
                owners: BTreeMap::new(),
                next_seq: 0,
                thread_started: false,
            }),
            wakeup: Condvar::new(),
            autostart: false,
        }
    }

    /// The process-wide driver behind [`sleep`], [`timeout`] and [`Deadline::new`].
    #[cfg(not(loom))]
    fn global() -> &'static Driver {
        static GLOBAL: Driver = Driver::new();
        &GLOBAL
    }

    /// The process-wide driver; under loom one per model execution, without a thread.
    #[cfg(loom)]
    fn global() -> &'static Driver {
        loom::lazy_static! {
            static ref GLOBAL: Driver = Driver::manual();
        }
        &GLOBAL
    }

    /// Registers `waker` for `at`; returns the entry's sequence number.
    fn insert(&'static self, at: Instant, waker: Waker) -> u64 {
        let owner = owner();
        let mut st = lock(&self.state);
        let seq = st.next_seq;
        st.next_seq += 1;
        let key = (at, seq);
        let earliest = st
            .entries
            .first_key_value()
            .is_none_or(|(first, _)| key < *first);
        st.entries.insert(key, (waker, owner));
        *st.owners.entry(owner).or_insert(0) += 1;
        if earliest {
            self.publish(&st);
        }
        if self.autostart && !st.thread_started {
            self.start_thread(&mut st);
        }
        if earliest {
            // The thread may be waiting for a later deadline (or for none): make it rescan.
            self.wakeup.notify_one();
        }
        seq
    }

    /// Stores `waker` in the entry `key` unless an equivalent one is there already.
    /// Returns false if the entry is gone, i.e. it has fired.
    fn update(&self, key: Key, waker: &Waker) -> bool {
        let mut st = lock(&self.state);
        match st.entries.get_mut(&key) {
            Some((stored, _)) => {
                if !stored.will_wake(waker) {
                    stored.clone_from(waker);
                }
                true
            }
            None => false,
        }
    }

    /// Removes the entry `key`; returns its waker, or `None` if it has fired.
    fn remove(&self, key: Key) -> Option<Waker> {
        let mut st = lock(&self.state);
        let first = st.entries.first_key_value().is_some_and(|(k, _)| *k == key);
        let (waker, owner) = st.entries.remove(&key)?;
        st.forget(owner);
        if first {
            self.publish(&st);
        }
        Some(waker)
    }

    /// Stores the earliest deadline of `st` as the next-due hint. Relaxed: the hint
    /// orders nothing; whoever acts on it takes the lock (invariant 4).
    fn publish(&self, st: &State) {
        let next = st
            .entries
            .first_key_value()
            .map_or(NONE_DUE, |(&(at, _), _)| nanos_since_epoch(at));
        self.next_due.0.store(next, Ordering::Relaxed);
    }

    /// Whether the hint says an entry may be due at `now`.
    #[inline]
    fn may_be_due(&self, now: Instant) -> bool {
        self.next_due.0.load(Ordering::Relaxed) <= nanos_since_epoch(now)
    }

    /// Fires what is due at `now` unless another thread holds the lock (it is firing,
    /// or registering; the next check, or the timer thread, catches up). Returns how
    /// many fired. Busy workers call this between jobs (see the module doc).
    fn try_fire_due(&self, now: Instant) -> usize {
        let mut st = match self.state.try_lock() {
            Ok(st) => st,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return 0,
        };
        let due = st.take_due(now);
        if due.is_empty() {
            return 0;
        }
        self.publish(&st);
        drop(st);
        let n = due.len();
        wake_all(due);
        n
    }

    /// Number of armed registrations.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.state).entries.len()
    }

    /// Number of armed registrations of runtime `id` or armed off the workers.
    fn len_for(&self, id: u16) -> usize {
        let st = lock(&self.state);
        st.owners.get(&id).copied().unwrap_or(0) + st.owners.get(&0).copied().unwrap_or(0)
    }

    /// Fires every entry due at `now`: removes it and wakes its waker, in firing order.
    /// Returns how many fired. The timer thread does this for the global driver; tests and
    /// loom models call it on drivers without a thread.
    #[cfg(test)]
    pub(crate) fn fire_due(&self, now: Instant) -> usize {
        let due = {
            let mut st = lock(&self.state);
            let due = st.take_due(now);
            self.publish(&st);
            due
        };
        let n = due.len();
        wake_all(due);
        n
    }

    /// Starts the `tutti-timer` thread. Called once, with the lock held, so the thread's
    /// first scan waits for the registration that started it to be complete.
    #[cold]
    fn start_thread(&'static self, st: &mut State) {
        let spawned = crate::loom::thread::Builder::new()
            .name("tutti-timer".into())
            .spawn(move || self.run());
        match spawned {
            Ok(_) => st.thread_started = true,
            // Without the thread no timer can ever fire: a broken runtime, not a user error.
            Err(e) => panic!("tutti: cannot start the timer thread: {e}"),
        }
    }

    /// The timer thread: fire what is due, then sleep until the earliest deadline.
    fn run(&self) {
        set_timer_slack();
        let mut st = lock(&self.state);
        loop {
            let now = Instant::now();
            let due = st.take_due(now);
            if !due.is_empty() {
                self.publish(&st);
                drop(st);
                wake_all(due);
                st = lock(&self.state);
                continue;
            }
            st = match st.entries.first_key_value() {
                None => self.wakeup.wait(st).unwrap_or_else(PoisonError::into_inner),
                Some((&(at, _), _)) => {
                    let wait = at.saturating_duration_since(now);
                    self.wakeup
                        .wait_timeout(st, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }
}

/// Asks the OS to pad this thread's timed sleeps by at most [`TIMER_SLACK_NS`].
fn set_timer_slack() {
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes only the
        // calling thread's timer slack; it touches no memory of ours.
        let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0) };
        // A refusal leaves the default slack: timers stay correct, only less punctual.
        let _ = rc;
    }
}

/// Fires every timer of the process that is due now, unless another thread is at the
/// driver. Workers call this each time they look for their next job (module doc, "Busy
/// workers fire due timers too"): one relaxed load while no timer is armed.
///
/// Under loom this does nothing: the scheduler's models would otherwise all include the
/// timer driver; the timer's own models race `Driver::try_fire_due` with the rest.
#[inline]
pub(crate) fn fire_due_here() {
    #[cfg(not(loom))]
    {
        let driver = Driver::global();
        if driver.next_due.0.load(Ordering::Relaxed) != NONE_DUE {
            fire_due_here_cold(driver);
        }
    }
}

/// How long until the earliest timer of the process is due, by the next-due hint;
/// `None` while no timer is armed. A worker about to block in the runtime's idle
/// waiter (the I/O driver's `epoll_wait`, a shared-memory mailbox's futex) bounds
/// the block by this, so that it wakes when the timer is due and fires it itself
/// ([`fire_due_here`] runs before its next search), with no hop through the timer
/// thread. The hint is only a hint (invariant 4): read too early, it costs one
/// wake-up; read too late, the timer thread still fires the entry, and the task it
/// wakes is injected, which wakes the blocked worker.
///
/// Under loom: `None` (the models give waiters no timeouts).
#[cfg(not(loom))]
pub(crate) fn until_next_due() -> Option<Duration> {
    let next = Driver::global().next_due.0.load(Ordering::Relaxed);
    if next == NONE_DUE {
        return None;
    }
    let now = nanos_since_epoch(Instant::now());
    Some(Duration::from_nanos(next.saturating_sub(now)))
}

/// See the other `until_next_due`.
#[cfg(loom)]
pub(crate) fn until_next_due() -> Option<Duration> {
    None
}

#[cold]
#[cfg_attr(loom, allow(dead_code))]
fn fire_due_here_cold(driver: &Driver) {
    let now = Instant::now();
    if driver.may_be_due(now) {
        driver.try_fire_due(now);
    }
}

/// Wakes `wakers` in order. A panicking waker is foreign code that must not take the
/// timer thread (and with it every other timer) down: its panic has been reported by the
/// panic hook, and the remaining wakers are still woken.
fn wake_all(wakers: Vec<Waker>) {
    for waker in wakers {
        let _ = panic::catch_unwind(AssertUnwindSafe(|| waker.wake()));
    }
}

/// Number of armed timers in the global driver (entries not yet fired or dropped).
#[cfg(all(test, not(loom)))]
pub(crate) fn pending_timers() -> usize {
    Driver::global().len()
}

/// Number of armed timers in the global driver that may wake a task of runtime `id`: its
/// own and those armed off the workers (see "Whose timer").
pub(crate) fn pending_timers_for(id: u16) -> usize {
    Driver::global().len_for(id)
}

/// Where a [`Deadline`] stands with its driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Registration {
    /// No entry in the driver.
    Unarmed,
    /// The entry `(at, seq)` is in the driver, unless the driver has fired it since.
    Armed(u64),
    /// The instant is known to have passed; polls complete at once.
    Elapsed,
}

/// A timer registration for one instant: the deadline facility behind [`Sleep`],
/// [`Timeout`] and CSP timeout guards.
///
/// Polling it with [`Deadline::poll_elapsed`] before its instant arms it with the
/// caller's waker (re-polling replaces the waker); the timer thread wakes that waker when
/// the instant passes. Disarming, resetting or dropping it removes the registration, so an
/// abandoned deadline costs nothing afterwards. `Deadline` is `Unpin`: it refers to its
/// entry by key, not by address.
pub(crate) struct Deadline {
    at: Instant,
    registration: Registration,
    driver: &'static Driver,
}

impl Deadline {
    /// A deadline at `at` on the global timer. Nothing is registered until it is polled.
    pub(crate) fn new(at: Instant) -> Self {
        Self::new_in(Driver::global(), at)
    }

    /// A deadline `d` from now (about thirty years if that overflows).
    pub(crate) fn after(d: Duration) -> Self {
        Self::new(instant_after(d))
    }

    /// A deadline at `at` on `driver`.
    fn new_in(driver: &'static Driver, at: Instant) -> Self {
        Deadline {
            at,
            registration: Registration::Unarmed,
            driver,
        }
    }

    /// The instant this deadline waits for.
    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// Whether the instant has passed.
    pub(crate) fn is_elapsed(&self) -> bool {
        self.registration == Registration::Elapsed || Instant::now() >= self.at
    }

    /// `Ready` once the instant has passed; otherwise arms the deadline with the waker of
    /// `cx` (replacing the one of an earlier poll) and returns `Pending`.
    pub(crate) fn poll_elapsed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self.registration {
            Registration::Elapsed => Poll::Ready(()),
            Registration::Unarmed => {
                if Instant::now() >= self.at {
                    self.registration = Registration::Elapsed;
                    return Poll::Ready(());
                }
                let seq = self.driver.insert(self.at, cx.waker().clone());
                self.registration = Registration::Armed(seq);
                Poll::Pending
            }
            Registration::Armed(seq) => {
                // Check the clock first so a deadline polled just after its instant
                // completes without waiting for the timer thread's own wake-up.
                if Instant::now() >= self.at {
                    self.disarm();
                    self.registration = Registration::Elapsed;
                    return Poll::Ready(());
                }
                if self.driver.update((self.at, seq), cx.waker()) {
                    Poll::Pending
                } else {
                    // Invariant 2: the driver fired the entry, so the instant has passed.
                    self.registration = Registration::Elapsed;
                    Poll::Ready(())
                }
            }
        }
    }

    /// Removes the registration, if any; a later poll arms the deadline again.
    pub(crate) fn disarm(&mut self) {
        if let Registration::Armed(seq) = self.registration {
            // The returned waker (if the entry had not fired) is dropped after the lock.
            self.registration = match self.driver.remove((self.at, seq)) {
                Some(_) => Registration::Unarmed,
                None => Registration::Elapsed,
            };
        }
    }

    /// Moves the deadline to `at`. If it was armed, the registered waker stays registered
    /// for the new instant (or is woken at once if `at` has already passed), so a task
    /// waiting on it does not have to poll again to be woken at the right time.
    pub(crate) fn reset(&mut self, at: Instant) {
        let waker = match self.registration {
            Registration::Armed(seq) => self.driver.remove((self.at, seq)),
            _ => None,
        };
        self.at = at;
        self.registration = Registration::Unarmed;
        if let Some(waker) = waker {
            if Instant::now() >= at {
                waker.wake();
            } else {
                self.registration = Registration::Armed(self.driver.insert(at, waker));
            }
        }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        self.disarm();
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline")
            .field("at", &self.at)
            .field("registration", &self.registration)
            .finish()
    }
}

/// Waits until `duration` has passed.
///
/// The returned [`Sleep`] completes on its first poll if `duration` is zero; otherwise it
/// registers with the timer thread and the awaiting task gives its worker back until the
/// timer fires. A duration too large for an [`Instant`] means about thirty years.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// tutti::block_on(tutti::runtime::sleep(Duration::from_millis(5)));
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    Sleep {
        deadline: Deadline::after(duration),
    }
}

/// Waits until `deadline`.
///
/// A deadline that has already passed completes on the first poll, without involving the
/// timer thread.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let deadline = Instant::now() + Duration::from_millis(5);
/// tutti::block_on(tutti::runtime::sleep_until(deadline));
/// assert!(Instant::now() >= deadline);
/// ```
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline: Deadline::new(deadline),
    }
}

/// Future returned by [`sleep`] and [`sleep_until`]; completes once its deadline passes.
///
/// `Sleep` is `Send`, `Sync` and `Unpin`. Dropping it before it completes removes its
/// timer registration.
///
/// ```
/// use std::time::Duration;
/// use tutti::runtime::Sleep;
///
/// let nap: Sleep = tutti::runtime::sleep(Duration::from_millis(1));
/// tutti::block_on(nap);
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
#[derive(Debug)]
pub struct Sleep {
    deadline: Deadline,
}

impl Sleep {
    /// The instant this sleep completes at.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let at = Instant::now() + Duration::from_secs(1);
    /// assert_eq!(tutti::runtime::sleep_until(at).deadline(), at);
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline.at()
    }

    /// Moves the deadline to `deadline`, whether or not this sleep has completed.
    ///
    /// A task already waiting on this sleep stays registered and is woken at the new
    /// deadline (at once if it has passed).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let mut nap = tutti::runtime::sleep(Duration::from_secs(3600));
    /// nap.reset(Instant::now());
    /// tutti::block_on(nap); // completes at once
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline.reset(deadline);
    }

    /// Whether the deadline has passed (the next poll will complete).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// assert!(tutti::runtime::sleep_until(Instant::now()).is_elapsed());
    /// assert!(!tutti::runtime::sleep(Duration::from_secs(3600)).is_elapsed());
    /// ```
    pub fn is_elapsed(&self) -> bool {
        self.deadline.is_elapsed()
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().deadline.poll_elapsed(cx)
    }
}

/// Runs `future` with a time limit of `duration`.
///
/// The returned [`Timeout`] polls `future` first, so a future that is ready at once wins
/// even with a zero duration; otherwise it completes with [`Elapsed`] once the duration
/// has passed, dropping nothing: the inner future is dropped with the `Timeout`.
///
/// ```
/// use std::time::Duration;
/// use tutti::runtime::timeout;
///
/// let fast = tutti::block_on(timeout(Duration::from_secs(60), async { 7 }));
/// assert_eq!(fast, Ok(7));
///
/// let slow = tutti::block_on(timeout(Duration::from_millis(1), std::future::pending::<()>()));
/// assert!(slow.is_err());
/// ```
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future,
        deadline: Deadline::after(duration),
    }
}

/// Runs `future` until `deadline` at the latest; see [`timeout`].
///
/// ```
/// use std::time::{Duration, Instant};
/// use tutti::runtime::timeout_at;
///
/// let at = Instant::now() + Duration::from_millis(1);
/// let r = tutti::block_on(timeout_at(at, std::future::pending::<()>()));
/// assert!(r.is_err());
/// assert!(Instant::now() >= at);
/// ```
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    Timeout {
        future,
        deadline: Deadline::new(deadline),
    }
}

/// Future returned by [`timeout`] and [`timeout_at`]: the inner future's output, or
/// [`Elapsed`] if the deadline passes first.
///
/// `Timeout<F>` is `Unpin` when `F` is, and `Send`/`Sync` when `F` is.
///
/// ```
/// use std::time::Duration;
/// use tutti::runtime::{timeout, Elapsed, Timeout};
///
/// let t: Timeout<_> = timeout(Duration::from_millis(1), std::future::pending::<u8>());
/// assert_eq!(tutti::block_on(t).unwrap_err().to_string(), "deadline elapsed");
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
#[derive(Debug)]
pub struct Timeout<F> {
    future: F,
    deadline: Deadline,
}

impl<F> Timeout<F> {
    /// The instant at which this timeout gives up.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let at = Instant::now() + Duration::from_secs(1);
    /// let t = tutti::runtime::timeout_at(at, async {});
    /// assert_eq!(t.deadline(), at);
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline.at()
    }

    /// Gives back the inner future, cancelling the time limit.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let t = tutti::runtime::timeout(Duration::from_secs(1), async { 3 });
    /// assert_eq!(tutti::block_on(t.into_inner()), 3);
    /// ```
    pub fn into_inner(self) -> F {
        // Dropping `deadline` disarms it.
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `future` is structurally pinned and `deadline` is not. `Timeout` never
        // moves `future` while pinned: it has no `Drop` impl, and the only ways to move or
        // borrow `future` mutably (`into_inner`, or this `poll`) take `self` by value or
        // through this pinned projection. `Timeout<F>` is `Unpin` only when `F` is (both
        // auto-derived; `Deadline` is `Unpin`), and the struct is not `repr(packed)`.
        // `deadline` is `Unpin`, so handing out `&mut` to it is fine.
        let (future, deadline) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.future), &mut this.deadline)
        };
        if let Poll::Ready(output) = future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        deadline.poll_elapsed(cx).map(|()| Err(Elapsed::new()))
    }
}

/// Error of a [`Timeout`] whose deadline passed before its future completed.
///
/// ```
/// use std::time::Duration;
///
/// let r = tutti::block_on(tutti::runtime::timeout(Duration::ZERO, std::future::pending::<()>()));
/// let e: tutti::runtime::Elapsed = r.unwrap_err();
/// assert_eq!(e.to_string(), "deadline elapsed");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed(());

impl Elapsed {
    /// The error value; crate code with its own timeouts (e.g. CSP) returns it too.
    pub(crate) const fn new() -> Self {
        Elapsed(())
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline elapsed")
    }
}

impl std::error::Error for Elapsed {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::loom::Mutex as StdMutex;
    use std::sync::Arc;
    use std::task::Wake;
    use std::thread;

    use crate::test_util::park_on as block_on;

    /// A waker that appends its id to a shared log when woken.
    struct Recorder {
        id: usize,
        log: Arc<StdMutex<Vec<usize>>>,
    }

    impl Wake for Recorder {
        fn wake(self: Arc<Self>) {
            self.log.lock().unwrap().push(self.id);
        }
    }

    fn recorder(id: usize, log: &Arc<StdMutex<Vec<usize>>>) -> Waker {
        Waker::from(Arc::new(Recorder {
            id,
            log: log.clone(),
        }))
    }

    /// A driver of our own, so counts are not disturbed by other tests' timers.
    fn manual_driver() -> &'static Driver {
        Box::leak(Box::new(Driver::manual()))
    }

    fn poll_with(deadline: &mut Deadline, waker: &Waker) -> Poll<()> {
        deadline.poll_elapsed(&mut Context::from_waker(waker))
    }

    /// A timer counts for the runtime whose worker armed it, and one armed off the
    /// workers for every runtime (see "Whose timer"): the deadlock detector's quietness.
    #[test]
    fn a_timer_counts_for_the_runtime_that_armed_it() {
        let driver = manual_driver();
        let far = Instant::now() + Duration::from_secs(3600);
        let (a, b) = (
            crate::runtime::Runtime::builder()
                .workers(1)
                .build()
                .unwrap(),
            crate::runtime::Runtime::builder()
                .workers(1)
                .build()
                .unwrap(),
        );
        let (ida, idb) = (a.registry.id(), b.registry.id());
        let on_a = a.block_on(a.spawn(async move {
            let mut d = Deadline::new_in(driver, far);
            std::future::poll_fn(|cx| Poll::Ready(d.poll_elapsed(cx).is_pending())).await;
            d
        }));
        assert_eq!((driver.len_for(ida), driver.len_for(idb)), (1, 0));
        let mut off = Deadline::new_in(driver, far);
        assert!(poll_with(&mut off, &noop_waker()).is_pending());
        assert_eq!((driver.len_for(ida), driver.len_for(idb)), (2, 1));
        drop(on_a);
        assert_eq!((driver.len_for(ida), driver.len_for(idb)), (1, 1));
        drop(off);
        assert_eq!(
            (driver.len_for(ida), driver.len(), driver.len_for(idb)),
            (0, 0, 0)
        );
    }

    fn noop_waker() -> Waker {
        struct Noop;
        impl Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        Waker::from(Arc::new(Noop))
    }

    fn assert_send_sync_unpin<T: Send + Sync + Unpin>() {}

    #[test]
    fn futures_are_send_sync_unpin() {
        assert_send_sync_unpin::<Sleep>();
        assert_send_sync_unpin::<Timeout<std::future::Ready<u8>>>();
        assert_send_sync_unpin::<Elapsed>();
    }

    #[test]
    fn manual_fire_order_is_deadline_then_registration() {
        let driver = manual_driver();
        let log = Arc::new(StdMutex::new(Vec::new()));
        let base = Instant::now() + Duration::from_secs(3600);
        // (id, offset in ms): registered out of order, with ties.
        let plan = [
            (0, 30),
            (1, 10),
            (2, 20),
            (3, 10),
            (4, 0),
            (5, 20),
            (6, 10),
            (7, 0),
        ];
        let mut deadlines: Vec<Deadline> = plan
            .iter()
            .map(|&(id, ms)| {
                let mut d = Deadline::new_in(driver, base + Duration::from_millis(ms));
                assert!(poll_with(&mut d, &recorder(id, &log)).is_pending());
                d
            })
            .collect();
        assert_eq!(driver.len(), plan.len());
        assert_eq!(driver.fire_due(base - Duration::from_secs(1)), 0);
        // Fire in two batches: a batch boundary must not disturb the order.
        assert_eq!(driver.fire_due(base + Duration::from_millis(10)), 5);
        assert_eq!(driver.fire_due(base + Duration::from_millis(30)), 3);
        assert_eq!(*log.lock().unwrap(), vec![4, 7, 1, 3, 6, 2, 5, 0]);
        assert_eq!(driver.len(), 0);
        // A fired deadline reports elapsed through its missing entry, whatever the clock.
        let noop = noop_waker();
        for d in &mut deadlines {
            assert!(poll_with(d, &noop).is_ready());
            assert!(d.is_elapsed());
        }
    }

    #[test]
    fn thread_fires_many_timers_in_order() {
        struct Report(usize, std::sync::mpsc::Sender<usize>);
        impl Wake for Report {
            fn wake(self: Arc<Self>) {
                let _ = self.1.send(self.0);
            }
        }
        // Register every entry before the thread exists, so the test does not depend on
        // how long registration takes compared with the deadlines; then let the real
        // thread loop fire them as the clock passes each deadline.
        let driver = manual_driver();
        let (tx, rx) = std::sync::mpsc::channel();
        let base = Instant::now() + Duration::from_millis(5);
        // Ids 0..40 at deadlines base + (id / 4) ms: ten distinct deadlines, four timers
        // each, registered in reverse so that registration order is not id order.
        for id in (0..40).rev() {
            let waker = Waker::from(Arc::new(Report(id, tx.clone())));
            driver.insert(base + Duration::from_millis(id as u64 / 4), waker);
        }
        driver.start_thread(&mut lock(&driver.state));
        let fired: Vec<usize> = rx.iter().take(40).collect();
        // By deadline group ascending; within a group, registration order (descending id).
        let expected: Vec<usize> = (0..10)
            .flat_map(|g| (0..4).rev().map(move |k| g * 4 + k))
            .collect();
        assert_eq!(fired, expected);
        assert_eq!(driver.len(), 0);
        assert!(Instant::now() >= base + Duration::from_millis(9));
    }

    #[test]
    fn drop_before_fire_removes_the_entry() {
        let driver = manual_driver();
        let far = Instant::now() + Duration::from_secs(3600);
        let mut a = Deadline::new_in(driver, far);
        let mut b = Deadline::new_in(driver, far);
        assert!(poll_with(&mut a, &noop_waker()).is_pending());
        assert!(poll_with(&mut b, &noop_waker()).is_pending());
        assert_eq!(driver.len(), 2);
        drop(a);
        assert_eq!(driver.len(), 1);
        drop(b);
        assert_eq!(driver.len(), 0);

        // The same through the public futures on the global driver.
        let mut s = sleep(Duration::from_secs(3600));
        assert!(Pin::new(&mut s)
            .poll(&mut Context::from_waker(&noop_waker()))
            .is_pending());
        let key = match s.deadline.registration {
            Registration::Armed(seq) => (s.deadline.at, seq),
            other => panic!("not armed: {other:?}"),
        };
        assert!(pending_timers() >= 1);
        assert!(lock(&Driver::global().state).entries.contains_key(&key));
        drop(s);
        assert!(!lock(&Driver::global().state).entries.contains_key(&key));
    }

    #[test]
    fn timeout_whose_future_wins_leaves_no_entry() {
        let driver = manual_driver();
        // The inner future completes on its second poll, after the deadline was armed.
        let mut polls = 0;
        let mut t = Timeout {
            future: std::future::poll_fn(move |_| {
                polls += 1;
                if polls < 2 {
                    Poll::Pending
                } else {
                    Poll::Ready(polls)
                }
            }),
            deadline: Deadline::new_in(driver, Instant::now() + Duration::from_secs(3600)),
        };
        let noop = noop_waker();
        let mut cx = Context::from_waker(&noop);
        assert!(Pin::new(&mut t).poll(&mut cx).is_pending());
        assert_eq!(driver.len(), 1);
        assert_eq!(Pin::new(&mut t).poll(&mut cx), Poll::Ready(Ok(2)));
        drop(t);
        assert_eq!(driver.len(), 0, "the winner's timer entry is gone");
    }

    #[test]
    fn repoll_replaces_the_waker() {
        let driver = manual_driver();
        let log = Arc::new(StdMutex::new(Vec::new()));
        let at = Instant::now() + Duration::from_secs(3600);
        let mut d = Deadline::new_in(driver, at);
        assert!(poll_with(&mut d, &recorder(1, &log)).is_pending());
        assert!(poll_with(&mut d, &recorder(2, &log)).is_pending());
        assert_eq!(driver.len(), 1);
        assert_eq!(driver.fire_due(at), 1);
        assert_eq!(*log.lock().unwrap(), vec![2]);
    }

    #[test]
    fn reset_moves_the_registration() {
        let driver = manual_driver();
        let log = Arc::new(StdMutex::new(Vec::new()));
        let now = Instant::now();
        let early = now + Duration::from_secs(3600);
        let late = now + Duration::from_secs(7200);
        let mut d = Deadline::new_in(driver, early);
        assert!(poll_with(&mut d, &recorder(1, &log)).is_pending());
        d.reset(late);
        assert_eq!(d.at(), late);
        assert_eq!(driver.len(), 1);
        assert_eq!(driver.fire_due(early), 0, "the old instant no longer fires");
        assert_eq!(
            driver.fire_due(late),
            1,
            "the waker moved to the new instant"
        );
        assert_eq!(*log.lock().unwrap(), vec![1]);

        // Resetting an armed deadline into the past wakes its waker at once.
        let mut d = Deadline::new_in(driver, late);
        assert!(poll_with(&mut d, &recorder(2, &log)).is_pending());
        d.reset(now);
        assert_eq!(driver.len(), 0);
        assert_eq!(*log.lock().unwrap(), vec![1, 2]);
        assert!(poll_with(&mut d, &noop_waker()).is_ready());

        // Resetting a completed deadline into the future makes it wait again.
        d.reset(late);
        assert!(!d.is_elapsed());
        assert!(poll_with(&mut d, &noop_waker()).is_pending());
        assert_eq!(driver.len(), 1);
    }

    #[test]
    fn sleep_reset_public() {
        let mut s = sleep(Duration::from_secs(3600));
        assert!(!s.is_elapsed());
        let target = Instant::now() + Duration::from_millis(5);
        s.reset(target);
        assert_eq!(s.deadline(), target);
        block_on(s);
        assert!(Instant::now() >= target);
    }

    #[test]
    fn past_and_zero_deadlines_complete_without_the_driver() {
        let driver = manual_driver();
        let mut d = Deadline::new_in(driver, Instant::now() - Duration::from_millis(1));
        assert!(d.is_elapsed());
        assert!(poll_with(&mut d, &noop_waker()).is_ready());
        assert!(poll_with(&mut d, &noop_waker()).is_ready());
        let mut z = Deadline::new_in(driver, Instant::now());
        assert!(poll_with(&mut z, &noop_waker()).is_ready());
        let st = lock(&driver.state);
        assert_eq!(st.next_seq, 0, "nothing was ever registered");
        assert!(!st.thread_started);
        drop(st);

        let noop = noop_waker();
        let mut cx = Context::from_waker(&noop);
        assert!(Pin::new(&mut sleep(Duration::ZERO))
            .poll(&mut cx)
            .is_ready());
        let past = Instant::now() - Duration::from_secs(1);
        assert!(Pin::new(&mut sleep_until(past)).poll(&mut cx).is_ready());
    }

    #[test]
    fn sleep_waits_at_least_its_duration() {
        let d = Duration::from_millis(20);
        let start = Instant::now();
        block_on(sleep(d));
        assert!(start.elapsed() >= d);
    }

    #[test]
    fn sleeps_on_many_threads() {
        let handles: Vec<_> = (0..8u64)
            .map(|i| {
                thread::spawn(move || {
                    let d = Duration::from_millis(1 + i % 4);
                    let start = Instant::now();
                    block_on(sleep(d));
                    assert!(start.elapsed() >= d);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }

    #[test]
    fn timeout_success_and_expiry() {
        assert_eq!(
            block_on(timeout(Duration::from_secs(3600), async { 1 })),
            Ok(1)
        );
        // The inner future is polled first: a ready future wins even a zero timeout.
        assert_eq!(block_on(timeout(Duration::ZERO, async { 2 })), Ok(2));
        let d = Duration::from_millis(10);
        let start = Instant::now();
        let r = block_on(timeout(d, std::future::pending::<u8>()));
        assert_eq!(r, Err(Elapsed::new()));
        assert!(start.elapsed() >= d);
        let inner_sleep_wins = block_on(timeout(Duration::from_secs(3600), async {
            sleep(Duration::from_millis(2)).await;
            3
        }));
        assert_eq!(inner_sleep_wins, Ok(3));
        let at = Instant::now() + Duration::from_millis(3);
        assert!(block_on(timeout_at(at, sleep(Duration::from_secs(3600)))).is_err());
        assert!(Instant::now() >= at);
    }

    #[test]
    fn huge_durations_do_not_overflow() {
        let s = sleep(Duration::MAX);
        assert!(!s.is_elapsed());
        let t = timeout(Duration::MAX, async {});
        assert!(t.deadline() > Instant::now());
        assert_eq!(block_on(t), Ok(()));
    }

    #[test]
    fn elapsed_error_traits() {
        let e = Elapsed::new();
        let copy = e;
        assert_eq!(e, copy);
        assert_eq!(e.to_string(), "deadline elapsed");
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
        assert_eq!(boxed.to_string(), "deadline elapsed");
    }

    #[test]
    fn a_panicking_waker_does_not_stop_the_others() {
        struct Boom;
        impl Wake for Boom {
            fn wake(self: Arc<Self>) {
                panic!("waker panics on purpose");
            }
        }
        let driver = manual_driver();
        let log = Arc::new(StdMutex::new(Vec::new()));
        let at = Instant::now() + Duration::from_secs(3600);
        let mut a = Deadline::new_in(driver, at);
        let mut b = Deadline::new_in(driver, at);
        assert!(poll_with(&mut a, &Waker::from(Arc::new(Boom))).is_pending());
        assert!(poll_with(&mut b, &recorder(9, &log)).is_pending());
        assert_eq!(driver.fire_due(at), 2);
        assert_eq!(*log.lock().unwrap(), vec![9]);
    }

    /// The next-due hint follows the earliest entry through inserts, removals and
    /// firing, and a worker's `try_fire_due` fires what is due in order, like the
    /// thread, and nothing early (invariant 4).
    #[test]
    fn next_due_hint_follows_the_earliest_entry() {
        let driver = manual_driver();
        let hint = || driver.next_due.0.load(Ordering::Relaxed);
        assert_eq!(hint(), NONE_DUE);
        let base = Instant::now() + Duration::from_secs(60);
        let log = Arc::new(StdMutex::new(Vec::new()));
        let late = driver.insert(base + Duration::from_millis(2), recorder(2, &log));
        assert_eq!(hint(), nanos_since_epoch(base + Duration::from_millis(2)));
        let early = driver.insert(base, recorder(1, &log));
        assert_eq!(hint(), nanos_since_epoch(base));
        driver.insert(base + Duration::from_millis(1), recorder(3, &log));
        assert!(!driver.may_be_due(base - Duration::from_millis(1)));
        assert!(driver.may_be_due(base));
        assert_eq!(driver.try_fire_due(base - Duration::from_millis(1)), 0);
        assert!(driver.remove((base, early)).is_some());
        assert_eq!(hint(), nanos_since_epoch(base + Duration::from_millis(1)));
        assert_eq!(driver.try_fire_due(base + Duration::from_millis(1)), 1);
        assert_eq!(hint(), nanos_since_epoch(base + Duration::from_millis(2)));
        assert_eq!(driver.try_fire_due(base + Duration::from_millis(5)), 1);
        assert_eq!(*log.lock().unwrap(), vec![3, 2]);
        assert_eq!(hint(), NONE_DUE);
        assert!(driver
            .remove((base + Duration::from_millis(2), late))
            .is_none());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::{thread, AtomicBool, Ordering};
    use std::sync::Arc as StdArc;
    use std::task::Wake;

    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: StdArc<Self>) {
            self.0.store(true, Ordering::Release);
        }
    }

    /// A registration racing with the driver firing it: the waker is woken exactly when
    /// the entry was fired, and a poll afterwards sees the deadline elapsed.
    #[test]
    fn register_races_fire() {
        loom::model(|| {
            let driver = Driver::global();
            let at = Instant::now() + Duration::from_secs(3600);
            let flag = StdArc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut d = Deadline::new_in(driver, at);
            let firer = thread::spawn(move || driver.fire_due(at + Duration::from_secs(1)));
            assert!(d
                .poll_elapsed(&mut Context::from_waker(&waker))
                .is_pending());
            let fired = firer.join().unwrap();
            assert_eq!(fired == 1, flag.0.load(Ordering::Acquire));
            if fired == 1 {
                assert!(d.poll_elapsed(&mut Context::from_waker(&waker)).is_ready());
            }
            drop(d);
            assert_eq!(driver.len(), 0);
        });
    }

    /// A busy worker firing by the hint (`try_fire_due`) racing with the timer thread
    /// firing and a deadline being dropped: each entry is fired or removed exactly
    /// once, its waker woken exactly when it was fired, and the hint ends clear
    /// (invariant 4).
    #[test]
    fn worker_fire_races_thread_fire_and_drop() {
        loom::model(|| {
            let driver = Driver::global();
            let at = Instant::now() + Duration::from_secs(3600);
            let flags: Vec<_> = (0..2)
                .map(|_| StdArc::new(Flag(AtomicBool::new(false))))
                .collect();
            let wakers: Vec<_> = flags.iter().map(|f| Waker::from(f.clone())).collect();
            let mut a = Deadline::new_in(driver, at);
            let mut b = Deadline::new_in(driver, at + Duration::from_secs(1));
            assert!(a
                .poll_elapsed(&mut Context::from_waker(&wakers[0]))
                .is_pending());
            assert!(b
                .poll_elapsed(&mut Context::from_waker(&wakers[1]))
                .is_pending());
            let later = at + Duration::from_secs(2);
            let worker = thread::spawn(move || {
                if driver.may_be_due(later) {
                    driver.try_fire_due(later)
                } else {
                    0
                }
            });
            let thread_fired = driver.fire_due(later);
            drop(a);
            let worker_fired = worker.join().unwrap();
            let woken = flags.iter().filter(|f| f.0.load(Ordering::Acquire)).count();
            assert_eq!(worker_fired + thread_fired, woken);
            // `b` was not dropped: someone fired it (the thread at least tried).
            assert!(flags[1].0.load(Ordering::Acquire));
            assert!(b
                .poll_elapsed(&mut Context::from_waker(&wakers[1]))
                .is_ready());
            drop(b);
            assert_eq!(driver.len(), 0);
            assert_eq!(driver.next_due.0.load(Ordering::Relaxed), NONE_DUE);
        });
    }

    /// Dropping an armed deadline racing with the driver firing it: exactly one of them
    /// removes the entry, and none is left behind.
    #[test]
    fn drop_races_fire() {
        loom::model(|| {
            let driver = Driver::global();
            let at = Instant::now() + Duration::from_secs(3600);
            let flag = StdArc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut d = Deadline::new_in(driver, at);
            assert!(d
                .poll_elapsed(&mut Context::from_waker(&waker))
                .is_pending());
            let firer = thread::spawn(move || driver.fire_due(at + Duration::from_secs(1)));
            drop(d);
            let fired = firer.join().unwrap();
            assert_eq!(fired == 1, flag.0.load(Ordering::Acquire));
            assert_eq!(driver.len(), 0);
        });
    }
}
