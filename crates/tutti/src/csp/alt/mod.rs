//! `Alt`: waiting for the first of several events (occam `ALT` / `PRI ALT`, JCSP
//! `Alternative`, Go `select`).
//!
//! An [`Alt`] holds a set of guards built at run time: channel inputs
//! ([`recv`](Alt::recv)), channel outputs ([`send`](Alt::send), which offers a value),
//! timeouts ([`timeout`](Alt::timeout), [`deadline`](Alt::deadline)), any future
//! ([`future`](Alt::future): an actor's `ask`, a `JoinHandle`, an RMI or RPC call, a
//! `DataflowVar` read; see `alt/future.rs`), [`skip`](Alt::skip) (always ready) and [`fallback`](Alt::fallback) (ready when no other
//! guard is: `select!`'s `default`), each with an optional boolean pre-condition
//! ([`when`](Alt::when)). A selection fires **exactly one** enabled guard and reports its
//! index in a [`Selected`]: for an input guard the value has already been received and is
//! taken with [`Selected::recv`]; for an output guard the value has already been sent
//! ([`Selected::sent`] says so, or gives it back if the channel ended). The
//! [`select!`](crate::select) macro builds a one-off `Alt` and runs the fired guard's
//! branch.
//!
//! * [`pri_select`](Alt::pri_select) — `PRI ALT`: among guards ready when the selection
//!   starts, the first in order fires.
//! * [`fair_select`](Alt::fair_select) — priority rotates to just after the guard that
//!   fired last, so a guard that stays ready fires within `n` selections.
//! * [`select`](Alt::select) — any ready guard: the first selection of an `Alt` starts
//!   at a pseudo-random guard and searches in a pseudo-random direction, later ones
//!   rotate as `fair_select` does; so guards that stay ready fire about equally often
//!   also when every selection uses a fresh `Alt` (as `select!` does, like Go's
//!   `select` and crossbeam's `select!`).
//!
//! Each has a blocking form (`…_blocking`). Build an `Alt` once and reuse it (changing
//! pre-conditions with [`set_when`](Alt::set_when), output values with
//! [`offer`](Alt::offer)): a selection then allocates nothing.
//!
//! # The commit protocol
//!
//! The `Alt` owns one *selector* — a one-shot state word, `WAITING`, `SELECTED(i)` or
//! `ABORTED` (encoding in `csp/waiter.rs`), plus its waker — and one *waiter* per channel
//! guard, which it may queue in that guard's channel (an output guard's waiter holds the
//! value it offers). Selector and waiters live in heap allocations of their own, so
//! neither moving the `Alt` nor its future moves them.
//!
//! The rule that makes outputs as safe as inputs (Go's `select` and crossbeam's `Select`
//! follow it too): **a party that has a waiter queued never decides anybody; only a party
//! with nothing queued commits a counterpart** (`chan.rs`, invariant 5). A party that
//! commits another can then always complete its own side, since nobody can decide it
//! meanwhile. A **round** (one selection) goes:
//!
//! 1. *Reset.* No waiter is queued. The owner sets `WAITING`.
//! 2. *Look*, guard by guard in priority order (`pri`: 0, 1, …; `fair`: from the guard
//!    after the last one fired; `select`: the same, but from a pseudo-random guard,
//!    forwards or backwards, in an `Alt`'s first selection), with nothing queued. Under a channel guard's lock, if its
//!    operation can complete now it completes it — takes a buffered value or a waiting
//!    sender's value, or hands the offered value to a waiting receiver or into the
//!    buffer, deciding that counterpart if it is waiting (an `Alt` counterpart by winning
//!    the CAS of *its* selector; one that lost its own round is skipped) — or finds the
//!    channel ended; then it sets `SELECTED(i)` (nobody else can decide an unregistered
//!    round) and the round is over. `skip`, an elapsed timeout and a future that polls
//!    `Ready` (futures are polled only here, with nothing queued) fire the same way; a
//!    `fallback` fires so once the look found nothing else ready.
//! 3. *Register* (only when waiting is allowed, and nothing fired): the owner stores its
//!    waker, then for each guard in priority order, under its channel's lock, queues the
//!    waiter — unless the guard's operation could complete now (it became ready after
//!    the look): then the owner withdraws (`WAITING → ABORTED` by CAS), removes every
//!    waiter it queued and goes back to step 1. Timeouts arm the timer with the waker.
//! 4. *Wait.* The owner returns `Pending`; each later poll reads the state (`Acquire`),
//!    and a timer that has passed fires its guard by the CAS. With future guards, a
//!    poll that finds the round undecided withdraws it (step 7) and starts a new one, so
//!    that the futures are polled in a look.
//! 5. *Counterpart.* A party with nothing queued — a plain send or receive, or another
//!    `Alt` looking — meets a queued waiter under the channel's lock: it pops it, clones
//!    the owner's waker, moves the value (into an input guard's slot; out of an output
//!    guard's slot) and CASes `WAITING → SELECTED(i)`. If it wins it unlocks and wakes the
//!    owner; if it loses it moves the value back before unlocking and goes on as if the
//!    waiter had not been there. It never touches the waiter after its CAS. Closing or
//!    poisoning a channel decides the waiter the same way, moving no value.
//! 6. *Finish* on `SELECTED(k)`: disable every other guard (remove its waiter under its
//!    channel's lock if still queued; disarm its timer) and report `k`. Guard `k`'s waiter
//!    is not queued: whoever decided `k` popped it, or never queued it.
//! 7. *Abandon* (the future is dropped, or the `Alt` with it): CAS `WAITING → ABORTED`. If
//!    that succeeds nothing was consumed; disable all. If it fails the state is
//!    `SELECTED(k)`: disable the others and give an input guard `k`'s value back to the
//!    front of its channel (an output guard `k` decided by a counterpart was only poked,
//!    in an async selection, and still holds its value; in a blocking one, which cannot
//!    be abandoned, it has sent). A waker change between polls abandons and restarts the
//!    round.
//!
//! An async selection registers its output guards as *two-phase offers*: a counterpart
//! that meets one decides the round without taking the value (a *poke*), and the owner,
//! seeing the guard decided with its value still there and the channel open, starts a
//! new round whose look sends the value itself (`alt/output.rs`). So the value leaves an
//! output guard only in a poll that completes the selection.
//!
//! ## Invariants
//!
//! * **A1, one decision.** Within a round every transition leaves `WAITING` by a CAS (or,
//!   in the look, by the owner while nobody else can reach the selector), so exactly one
//!   party decides.
//! * **A2, consume after winning.** A counterpart consumes an event only after winning
//!   the CAS for its guard, while holding the lock that keeps the event ready; a loser
//!   leaves the event as it found it. The owner consumes in the look, where it cannot
//!   lose.
//! * **A3, slot ownership.** The owner reads slot `i` only after observing `SELECTED(i)`
//!   with `Acquire` (the winner wrote the slot before its `Release` CAS), or after
//!   removing the waiter under channel `i`'s lock, or in the look.
//! * **A4, no dangling waiter.** A waiter is queued only between its registration and
//!   its disabling or popping; finish, abandon and the withdrawal of step 3 disable all,
//!   and `Alt`'s `Drop` abandons a round whose future was leaked.
//! * **A5, no lost wake-up.** A waiter and the waker it will be woken with are stored under
//!   the channel lock before the owner returns `Pending`; whoever later makes the guard
//!   ready does so under that lock, finds the waiter, and either decides it (and wakes
//!   the owner) or finds it dead because the round was decided already (whoever decided
//!   it woke the owner).
//! * **A6, only the unregistered commit.** The owner decides counterparts only in the
//!   look; registering, it withdraws instead. So no party is ever both deciding and
//!   decidable, and a committed counterpart's side always completes.
//!
//! ## Proof sketch
//!
//! *Exactly one guard fires.* By A1 a round decides one guard `k`. By A2 the only event
//! consumed in the round is guard `k`'s, consumed once, into slot `k` or out of it; every
//! other counterpart or enabling step that met the selector left its event untouched. By
//! A3 the owner reads exactly that outcome. By A6 a counterpart decided in the look gets
//! its value (or gives one), since the looking `Alt` cannot be decided by anyone else.
//!
//! *Nothing is lost or duplicated on cancellation.* Abandoning either wins `ABORTED` (by
//! A1 nobody decided, so by A2 nothing was consumed) or finds `SELECTED(k)` and gives slot
//! `k`'s value back to its channel, where the next receiver gets it (see the cancellation
//! argument in `chan.rs`), or, for an output guard, finds it poked, its value still in
//! the slot (an async selection's guards are offers). So an abandoned selection's send
//! guard has not sent: [`Alt::withdraw`] returns the value. A value the user
//! does not take from a [`Selected`] is given back the same way; an output guard's value
//! that was not sent stays offered.
//!
//! *No selection sleeps through a ready guard.* A guard ready at the start is found by the
//! look; one that becomes ready during registration makes the round look again; one that
//! becomes ready later decides the round by A5; a timer wakes the owner, whose next poll
//! fires the guard.
//!
//! *Priority and fairness.* The look visits guards in priority order and fires the first
//! ready one; a counterpart can decide a registered round only for a guard that was not
//! ready in the look. With rotation, if guard `j` stays ready, each round fires a guard
//! between the start and `j` and the next start moves past it, so `j` fires within `n`
//! rounds. A plain sender cannot *stay* ready, though: once served it must run again
//! before it can offer its next value. So a rotating look that finds only the guard it
//! served last ready, while another guard's sender was served and has not run since,
//! leaves that guard out and waits for the sender to resume (`resume.rs`).
//!
//! The `loom_tests` module model-checks a selection racing two senders, a selection
//! abandoned while a sender commits, an output guard abandoned while a receiver takes, an
//! output guard racing a close, two `Alt`s meeting on one channel (one offering, one
//! receiving), and a fair selection waiting for a resuming sender.

mod future;
pub(crate) mod guard;
mod input;
mod output;
mod resume;
mod selected;

use std::fmt;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::runtime::Deadline;

use super::rx::Rx;
use super::tx::Tx;
use super::waiter::{Selector, Status};
use future::{FutureGuard, Guarded};
use guard::{Aliased, Direction, Enable, Guard};
use input::InputGuard;
use output::OutputGuard;

pub use future::FutureArm;
pub use selected::{SelectFuture, Selected};

/// A set of guards to select from, built at run time; see the [module docs](crate::csp).
///
/// Guards are numbered 0, 1, … in the order they are added.
///
/// ```
/// use std::time::Duration;
/// use tutti::csp::{channel, Alt};
///
/// let (cmd_tx, cmd) = channel::<u32>();
/// let (_data_tx, data) = channel::<u32>();
/// std::thread::spawn(move || cmd_tx.send_blocking(7));
///
/// let mut alt = Alt::new()
///     .recv(&cmd)                           // 0
///     .recv(&data)                          // 1
///     .timeout(Duration::from_secs(10));    // 2
/// let sel = alt.pri_select_blocking();
/// assert_eq!(sel.index(), 0);
/// assert_eq!(sel.recv(&cmd), Ok(7));
/// ```
///
/// An `Alt` borrows the ends it guards, so it cannot outlive them:
///
/// ```compile_fail
/// use tutti::csp::{channel, Alt};
///
/// let mut alt = Alt::new();
/// {
///     let (_tx, rx) = channel::<u8>();
///     alt = alt.recv(&rx);
/// }
/// let _ = alt.pri_select_blocking();
/// ```
///
/// and a [`Selected`] borrows its `Alt`, so a selection's value must be dealt with before
/// the next selection starts:
///
/// ```compile_fail
/// use tutti::csp::Alt;
///
/// let mut alt = Alt::new().skip();
/// let first = alt.pri_select_blocking();
/// let second = alt.pri_select_blocking();
/// drop(first);
/// ```
pub struct Alt<'a> {
    guards: Vec<Entry<'a>>,
    /// The one-shot decision of the current round; stable address (commit protocol).
    selector: Aliased<Selector>,
    /// Where a fair selection starts: just after the guard that fired last.
    next: usize,
    /// A round is under way: waiters may be queued, timers armed.
    in_round: bool,
    /// The guard that fired last (`usize::MAX`: none yet).
    last_fired: usize,
    /// This round left out the guard that fired last, to wait for a resuming sender of
    /// another guard (`resume.rs`): any wake-up restarts it.
    resume_wait: bool,
    /// How long a selection waits for resuming senders (`resume.rs`); `None`: until
    /// they offer again or drop their ends (loom models, which have no clock).
    patience: Option<Duration>,
    /// When this selection stops waiting for resuming senders: set when it first waits
    /// for one, cleared when the selection ends (`resume.rs`).
    resume_deadline: Option<Deadline>,
    /// This `Alt`'s identity for [`FutureArm`]s (0 until its first future guard).
    id: u64,
    /// Some guard is a future: a wake-up restarts the round (`future.rs`).
    has_futures: bool,
    /// Send guards register as two-phase offers (async selections: `output.rs`).
    two_phase: bool,
    /// Some guard is a send guard (only those can be poked).
    has_sends: bool,
}

/// One guard and its per-round bookkeeping.
struct Entry<'a> {
    kind: Kind<'a>,
    /// The pre-condition.
    enabled: bool,
    /// Enabled this round and left a waiter or armed timer behind (owner-side note).
    waiting: bool,
}

/// The kinds of guard.
enum Kind<'a> {
    /// An event, e.g. a channel input (see `guard.rs` for the seam).
    Event(Aliased<dyn Guard + 'a>),
    /// Ready once its deadline passes. `after` makes the deadline relative to the start
    /// of each selection.
    Timeout {
        after: Option<Duration>,
        deadline: Deadline,
    },
    /// A future, polled only while nothing of the `Alt` is queued (`future.rs`).
    Future(Box<dyn FutureGuard + 'a>),
    /// Always ready.
    Skip,
    /// Ready when no other enabled guard is, at the look (Go's `default`).
    Fallback,
}

/// How a registration pass ended.
enum Registered {
    /// Every enabled guard waits.
    Waiting,
    /// Guard `k` fired (a counterpart decided it, or a timeout passed).
    Decided(usize),
    /// A guard was found ready; the round was withdrawn and nothing is queued.
    Retry,
}

/// The selection policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The first ready guard in index order.
    Pri,
    /// Rotating priority.
    Fair,
    /// A pseudo-random start and direction for the first selection of an `Alt`, then
    /// rotation.
    Random,
}

/// Where a round's search starts, and which way it goes round the guards.
#[derive(Clone, Copy)]
struct Start {
    first: usize,
    backwards: bool,
}

impl Start {
    /// A pseudo-random start among `n` guards (xorshift64* on a per-thread state: cheap,
    /// and uniform enough to share ready guards evenly). Under loom a model must replay
    /// the same path on every run, so the start is fixed there.
    fn random(n: usize) -> Start {
        #[cfg(not(loom))]
        {
            use std::cell::Cell;
            thread_local! {
                static STATE: Cell<u64> = const { Cell::new(0x9E37_79B9_7F4A_7C15) };
            }
            let r = STATE.with(|s| {
                let mut x = s.get();
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                s.set(x);
                x.wrapping_mul(0x2545_F491_4F6C_DD1D)
            });
            // The high bits are the best mixed: the direction from the top one, the
            // start from the 32 below it.
            Start {
                first: (((r >> 31) as u32 as u64 * n as u64) >> 32) as usize,
                backwards: r >> 63 == 1,
            }
        }
        #[cfg(loom)]
        {
            let _ = n;
            Start {
                first: 0,
                backwards: false,
            }
        }
    }
}

impl Default for Alt<'_> {
    /// An `Alt` without guards; see [`Alt::new`].
    ///
    /// ```
    /// let alt: tutti::csp::Alt<'_> = Default::default();
    /// assert!(alt.is_empty());
    /// ```
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Alt<'a> {
    /// An `Alt` without guards.
    ///
    /// ```
    /// let alt = tutti::csp::Alt::new().skip();
    /// assert_eq!(alt.len(), 1);
    /// ```
    pub fn new() -> Self {
        Alt {
            guards: Vec::new(),
            selector: Aliased::new(Box::new(Selector::new())),
            next: 0,
            in_round: false,
            last_fired: usize::MAX,
            resume_wait: false,
            patience: resume::PATIENCE,
            resume_deadline: None,
            id: 0,
            has_futures: false,
            two_phase: false,
            has_sends: false,
        }
    }

    fn push(mut self, kind: Kind<'a>) -> Self {
        self.guards.push(Entry {
            kind,
            enabled: true,
            waiting: false,
        });
        self
    }

    /// Adds an input guard on `rx`: ready when a value can be received, or when the
    /// channel is closed (all senders gone) or poisoned — then [`Selected::recv`] reports
    /// that.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, rx) = buffered::<&str>(1);
    /// tx.try_send("hi").unwrap();
    /// let mut alt = Alt::new().recv(&rx);
    /// let sel = alt.pri_select_blocking();
    /// assert_eq!(sel.recv(&rx), Ok("hi"));
    /// ```
    pub fn recv<T: Send>(self, rx: &'a Rx<T>) -> Self {
        let index = self.guards.len();
        let guard: Box<dyn Guard + 'a> =
            Box::new(InputGuard::new(rx.chan(), self.selector.get(), index));
        self.push(Kind::Event(Aliased::new(guard)))
    }

    /// Adds an input guard on `rx` with the pre-condition `cond` (occam `cond & rx ? x`).
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// tx.try_send(1).unwrap();
    /// let mut alt = Alt::new().recv_if(false, &rx).skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 1); // the input is disabled
    /// ```
    pub fn recv_if<T: Send>(self, cond: bool, rx: &'a Rx<T>) -> Self {
        self.recv(rx).when(cond)
    }

    /// Adds an output guard offering `value` on `tx` (Go's `case tx <- value`): ready when
    /// the value can be sent now (a receiver waits, or there is room), or when the channel
    /// ended (closed, every receiver gone, or poisoned) — [`Selected::sent`] then reports
    /// that and returns the value.
    ///
    /// The guard fires only once the value was really handed over: to a receiver (which
    /// has taken it, for a rendezvous) or into the buffer. If another guard fires, the
    /// value stays offered for the next selection. Once sent, the guard has nothing to
    /// offer and selections skip it until [`offer`](Self::offer) gives it a new value.
    ///
    /// ```
    /// use tutti::csp::{buffered, channel, Alt};
    ///
    /// let (_in_tx, input) = channel::<u32>();
    /// let (out, out_rx) = buffered::<u32>(1);
    /// let mut alt = Alt::new().recv(&input).send(&out, 7);
    /// let sel = alt.pri_select_blocking();
    /// assert_eq!(sel.index(), 1); // nothing to receive; room to send
    /// assert_eq!(sel.sent(&out), Ok(()));
    /// assert_eq!(out_rx.try_recv(), Ok(7));
    /// ```
    pub fn send<T: Send>(self, tx: &'a Tx<T>, value: T) -> Self {
        let index = self.guards.len();
        let guard: Box<dyn Guard + 'a> = Box::new(OutputGuard::new(
            tx.chan(),
            self.selector.get(),
            index,
            value,
        ));
        guard.set_two_phase(self.two_phase);
        let mut alt = self.push(Kind::Event(Aliased::new(guard)));
        alt.has_sends = true;
        alt
    }

    /// Adds an output guard on `tx` offering `value`, with the pre-condition `cond`.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, _rx) = buffered::<u8>(1);
    /// let mut alt = Alt::new().send_if(false, &tx, 1).skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 1); // the output is disabled
    /// ```
    pub fn send_if<T: Send>(self, cond: bool, tx: &'a Tx<T>, value: T) -> Self {
        self.send(tx, value).when(cond)
    }

    /// Gives send guard `index` (on `tx`) a new value to offer in later selections, and
    /// returns the value it still held, if it had not been sent.
    ///
    /// # Panics
    /// If guard `index` is not a send guard on `tx`'s channel.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, rx) = buffered::<u32>(4);
    /// let mut alt = Alt::new().send(&tx, 0);
    /// for next in 1..4 {
    ///     alt.select_blocking().sent(&tx).unwrap();
    ///     assert_eq!(alt.offer(0, &tx, next), None); // the last one was sent
    /// }
    /// assert_eq!(alt.offer(0, &tx, 9), Some(3)); // 3 was still offered
    /// assert_eq!((rx.try_recv(), rx.try_recv(), rx.try_recv()), (Ok(0), Ok(1), Ok(2)));
    /// ```
    pub fn offer<T: Send>(&mut self, index: usize, tx: &Tx<T>, value: T) -> Option<T> {
        // A leaked selection's round may still be under way: end it first.
        self.abandon();
        let guard = self.typed_event(index, tx.chan().id(), Direction::Send, "Alt::offer");
        let mut slot = Some(value);
        // SAFETY: the guard is a send guard on `tx`'s channel, whose values are `T`s (a
        // channel is invariant in its value type); no round is under way.
        unsafe { guard.swap_value((&mut slot as *mut Option<T>).cast()) };
        slot
    }

    /// Takes back the value send guard `index` (on `tx`) still offers: `Some(value)` if
    /// it was not sent, `None` if it was (or was taken already). The guard then offers
    /// nothing until [`offer`](Self::offer) gives it a value.
    ///
    /// A selection future dropped before it completed (by an enclosing timeout or
    /// `select!`) has not sent: a receiver that came while it waited only woke it (the
    /// two-phase offer of the module docs), so `withdraw` then returns the value and a
    /// retry delivers it once.
    ///
    /// # Panics
    /// If guard `index` is not a send guard on `tx`'s channel.
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Waker};
    /// use tutti::csp::{channel, Alt, TryRecvError};
    ///
    /// let (tx, rx) = channel::<u32>();
    /// let mut alt = Alt::new().send(&tx, 7);
    /// let mut cx = Context::from_waker(Waker::noop());
    /// {
    ///     let sel = pin!(alt.select());
    ///     assert!(sel.poll(&mut cx).is_pending()); // no receiver: 7 waits in the channel
    /// } // abandoned (say, by a timeout)
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty)); // withdrawn with the selection
    /// assert_eq!(alt.withdraw(0, &tx), Some(7)); // not sent: the caller may retry
    /// ```
    pub fn withdraw<T: Send>(&mut self, index: usize, tx: &Tx<T>) -> Option<T> {
        // An abandoned selection's round may still be under way: end it first.
        self.abandon();
        let guard = self.typed_event(index, tx.chan().id(), Direction::Send, "Alt::withdraw");
        let mut slot = None;
        // SAFETY: the guard is a send guard on `tx`'s channel, whose values are `T`s (a
        // channel is invariant in its value type); no round is under way.
        unsafe { guard.swap_value((&mut slot as *mut Option<T>).cast()) };
        slot
    }

    /// Adds a future guard: ready when `future` completes (an actor's `ask`, a
    /// `sync_rmi`, an RPC call, a `JoinHandle`, a `DataflowVar` read, a barrier's
    /// `sync`, …). Returns the handle that takes its output from the [`Selected`]
    /// ([`Selected::output`]).
    ///
    /// The `Alt` polls the future with its own waker, and only while it has nothing
    /// queued on any channel, so a future's output is produced only for a selection that
    /// the future wins: if another guard fires, the future has not completed (its
    /// event — a reply, a join — is still to come). The guard owns `future`: it is
    /// dropped with the `Alt` (cancelling it) unless it fired. Pass `&mut fut` (an
    /// `Unpin` future, or a pinned one) to keep a losing future and poll it again
    /// later. Once its output is taken, the guard is spent and selections skip it.
    ///
    /// ```
    /// use tutti::csp::{channel, Alt};
    ///
    /// tutti::block_on(async {
    ///     let (_tx, rx) = channel::<u32>();
    ///     let job = tutti::spawn(async { 6 * 7 });
    ///     let mut alt = Alt::new().recv(&rx);
    ///     let joined = alt.future(job);
    ///     let sel = alt.select().await;
    ///     assert_eq!(sel.index(), joined.index());
    ///     assert_eq!(sel.output(&joined), 42);
    /// });
    /// ```
    pub fn future<F>(&mut self, future: F) -> FutureArm<F::Output>
    where
        F: std::future::Future + Send + 'a,
        F::Output: Send,
    {
        // A leaked selection's round may still be under way: end it first.
        self.abandon();
        if self.id == 0 {
            use crate::loom::{unmodelled::AtomicU64, Ordering};
            // Relaxed: the id only has to be unique.
            static NEXT: AtomicU64 = AtomicU64::new(1);
            self.id = NEXT.fetch_add(1, Ordering::Relaxed);
        }
        self.has_futures = true;
        let index = self.guards.len();
        self.guards.push(Entry {
            kind: Kind::Future(Box::new(Guarded::new(future))),
            enabled: true,
            waiting: false,
        });
        FutureArm::new(self.id, index)
    }

    /// Adds a timeout guard: ready once `after` has passed since the start of the
    /// selection (each selection starts its own clock).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tutti::csp::{channel, Alt};
    ///
    /// let (_tx, rx) = channel::<u8>();
    /// let mut alt = Alt::new().recv(&rx).timeout(Duration::from_millis(1));
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// ```
    pub fn timeout(self, after: Duration) -> Self {
        self.push(Kind::Timeout {
            after: Some(after),
            deadline: Deadline::after(after),
        })
    }

    /// Adds a timeout guard ready from the instant `at` (occam `tim ? AFTER t`).
    ///
    /// ```
    /// use std::time::Instant;
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().deadline(Instant::now());
    /// assert_eq!(alt.pri_select_blocking().index(), 0);
    /// ```
    pub fn deadline(self, at: Instant) -> Self {
        self.push(Kind::Timeout {
            after: None,
            deadline: Deadline::new(at),
        })
    }

    /// Adds a `SKIP` guard: always ready. Last in a `PRI ALT` it makes the selection a
    /// poll that never waits.
    ///
    /// ```
    /// use tutti::csp::{channel, Alt};
    ///
    /// let (_tx, rx) = channel::<u8>();
    /// let mut alt = Alt::new().recv(&rx).skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// ```
    pub fn skip(self) -> Self {
        self.push(Kind::Skip)
    }

    /// Adds a fallback guard: it fires when, at the start of a selection, no other
    /// enabled guard is ready, wherever it stands in the order (Go's `default`;
    /// [`select!`](crate::select)'s `default` arm). A selection with a fallback never
    /// waits.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// let mut alt = Alt::new().fallback().recv(&rx);
    /// assert_eq!(alt.pri_select_blocking().index(), 0); // nothing to receive
    /// tx.try_send(1).unwrap();
    /// let sel = alt.pri_select_blocking();
    /// assert_eq!(sel.index(), 1); // the receive is ready: it wins, though second
    /// assert_eq!(sel.recv(&rx), Ok(1));
    /// ```
    pub fn fallback(self) -> Self {
        self.push(Kind::Fallback)
    }

    /// Sets the pre-condition of the guard added last; a guard whose pre-condition is
    /// false is ignored by selections.
    ///
    /// # Panics
    /// If the `Alt` has no guard yet.
    ///
    /// ```
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().skip().when(false).skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// ```
    pub fn when(mut self, cond: bool) -> Self {
        let last = self
            .guards
            .last_mut()
            .expect("tutti: Alt::when needs a guard to apply to; add one first");
        last.enabled = cond;
        self
    }

    /// Changes the pre-condition of guard `index`, for reusing an `Alt`.
    ///
    /// # Panics
    /// If there is no guard `index`.
    ///
    /// ```
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().skip().skip();
    /// alt.set_when(0, false);
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// alt.set_when(0, true);
    /// assert_eq!(alt.pri_select_blocking().index(), 0);
    /// ```
    pub fn set_when(&mut self, index: usize, cond: bool) {
        self.guard_mut(index).enabled = cond;
    }

    /// Moves timeout guard `index` to the fixed instant `at`.
    ///
    /// # Panics
    /// If guard `index` is not a timeout guard.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().timeout(Duration::from_secs(3600));
    /// alt.set_deadline(0, Instant::now());
    /// assert_eq!(alt.pri_select_blocking().index(), 0);
    /// ```
    pub fn set_deadline(&mut self, index: usize, at: Instant) {
        match &mut self.guard_mut(index).kind {
            Kind::Timeout { after, deadline } => {
                *after = None;
                *deadline = Deadline::new(at);
            }
            _ => panic!("tutti: Alt::set_deadline: guard {index} is not a timeout guard"),
        }
    }

    fn guard_mut(&mut self, index: usize) -> &mut Entry<'a> {
        let n = self.guards.len();
        self.guards
            .get_mut(index)
            .unwrap_or_else(|| panic!("tutti: Alt has {n} guards, there is no guard {index}"))
    }

    /// Number of guards.
    ///
    /// ```
    /// assert_eq!(tutti::csp::Alt::new().skip().skip().len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether the `Alt` has no guards.
    ///
    /// ```
    /// assert!(tutti::csp::Alt::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// Waits until a guard fires, favouring the first ready guard in index order (occam
    /// `PRI ALT`).
    ///
    /// With no enabled guard at all the selection waits forever (occam `STOP`).
    ///
    /// # Panics
    /// If the `Alt` has no guards.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx_a, a) = buffered::<u8>(1);
    /// let (tx_b, b) = buffered::<u8>(1);
    /// tx_a.try_send(1).unwrap();
    /// tx_b.try_send(2).unwrap();
    /// let mut alt = Alt::new().recv(&a).recv(&b);
    /// let sel = tutti::block_on(alt.pri_select());
    /// assert_eq!(sel.index(), 0); // both ready: the first wins
    /// ```
    pub fn pri_select(&mut self) -> SelectFuture<'_, 'a> {
        SelectFuture::new(self, Mode::Pri, true)
    }

    /// Waits until a guard fires, with rotating priority: the search starts just after
    /// the guard that fired last, so no ready guard starves.
    ///
    /// # Panics
    /// If the `Alt` has no guards.
    ///
    /// ```
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().skip().skip().skip();
    /// let order: Vec<usize> =
    ///     (0..4).map(|_| tutti::block_on(alt.fair_select()).index()).collect();
    /// assert_eq!(order, [0, 1, 2, 0]);
    /// ```
    pub fn fair_select(&mut self) -> SelectFuture<'_, 'a> {
        SelectFuture::new(self, Mode::Fair, true)
    }

    /// Waits until any guard fires. An `Alt`'s first selection starts its search at a
    /// pseudo-random guard, in a pseudo-random direction, and later ones rotate as in
    /// [`fair_select`](Self::fair_select); so among guards that are ready together none
    /// is favoured — also across selections on fresh `Alt`s (each evaluation of a
    /// [`select!`](crate::select)), which rotation alone, kept by one `Alt`, cannot do.
    ///
    /// # Panics
    /// If the `Alt` has no guards.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// tx.try_send(3).unwrap();
    /// let mut alt = Alt::new().recv(&rx);
    /// let sel = tutti::block_on(alt.select());
    /// assert_eq!(sel.recv(&rx), Ok(3));
    /// ```
    pub fn select(&mut self) -> SelectFuture<'_, 'a> {
        SelectFuture::new(self, Mode::Random, true)
    }

    /// The blocking form of [`pri_select`](Self::pri_select).
    ///
    /// # Panics
    /// If the `Alt` has no guards, or when called inside an async task.
    ///
    /// ```
    /// let mut alt = tutti::csp::Alt::new().skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 0);
    /// ```
    pub fn pri_select_blocking(&mut self) -> Selected<'_, 'a> {
        self.select_blocking_in(Mode::Pri)
    }

    /// The blocking form of [`fair_select`](Self::fair_select).
    ///
    /// # Panics
    /// If the `Alt` has no guards, or when called inside an async task.
    ///
    /// ```
    /// let mut alt = tutti::csp::Alt::new().skip().skip();
    /// assert_eq!(alt.fair_select_blocking().index(), 0);
    /// assert_eq!(alt.fair_select_blocking().index(), 1);
    /// ```
    pub fn fair_select_blocking(&mut self) -> Selected<'_, 'a> {
        self.select_blocking_in(Mode::Fair)
    }

    /// The blocking form of [`select`](Self::select).
    ///
    /// # Panics
    /// If the `Alt` has no guards, or when called inside an async task.
    ///
    /// ```
    /// let mut alt = tutti::csp::Alt::new().skip();
    /// assert_eq!(alt.select_blocking().index(), 0);
    /// ```
    pub fn select_blocking(&mut self) -> Selected<'_, 'a> {
        self.select_blocking_in(Mode::Random)
    }

    /// The blocking forms. On a plain thread, look-only rounds are retried with back-off
    /// first, so that a selector that is about to be served does not queue on (and then
    /// remove itself from) every guarded channel; see `csp/blocking.rs`.
    fn select_blocking_in(&mut self, mode: Mode) -> Selected<'_, 'a> {
        if let Ok(index) = super::blocking::retry((), |()| self.try_round(mode).ok_or(())) {
            return Selected::new(self, index);
        }
        // Nobody can cancel a blocking selection: its send guards hand over in one step.
        super::blocking::wait(std::pin::pin!(SelectFuture::new(self, mode, false)))
    }

    // ---- the round (see the commit protocol) -------------------------------------------

    /// One poll of the current round; `Ready(k)` once guard `k` fired.
    fn poll_round(&mut self, mode: Mode, cx: &mut Context<'_>) -> Poll<usize> {
        if !self.in_round {
            return self.start_round(mode, cx);
        }
        if let Status::Selected(k) = self.selector.get().status() {
            return self.settle(k, mode, cx);
        }
        if let Some(k) = self.poll_timeouts(cx) {
            return self.settle(k, mode, cx);
        }
        // A future may be ready: it is polled only in a look, with nothing queued. A round
        // that waits for a resuming sender is woken when it resumes (`resume.rs`): look
        // again, now with the guard it left out.
        if self.has_futures || self.resume_wait {
            return self.restart_round(mode, cx);
        }
        if self.selector.get().will_wake(cx.waker()) {
            self.note_waits();
            return Poll::Pending;
        }
        self.restart_round(mode, cx)
    }

    /// Steps 1 and 2: reset, then enable the guards in priority order.
    fn start_round(&mut self, mode: Mode, cx: &mut Context<'_>) -> Poll<usize> {
        match self.enable_pass(mode, Some(&mut *cx)) {
            Some(k) => self.settle(k, mode, cx),
            None => {
                self.note_waits();
                Poll::Pending
            }
        }
    }

    /// The round waits: tell the deadlock detector on what (a timeout makes the wait
    /// one it cannot judge).
    fn note_waits(&self) {
        for e in self.guards.iter().filter(|e| e.waiting) {
            match &e.kind {
                Kind::Event(g) => g.get().note_wait(),
                // The detector cannot see what a timer or a foreign future waits for.
                Kind::Timeout { .. } | Kind::Future(_) => crate::csp::deadlock::note_open(),
                Kind::Skip | Kind::Fallback => {}
            }
        }
    }

    /// A round that only looks: fires the first ready guard in priority order, queueing
    /// nothing (so nobody else can decide it); `None` if no guard is ready.
    fn try_round(&mut self, mode: Mode) -> Option<usize> {
        self.abandon();
        let fired = self.enable_pass(mode, None);
        self.in_round = false;
        fired.map(|k| self.finish(k, mode))
    }

    /// Steps 1 and 2 of a round: reset, look, and (with a context, if nothing fired)
    /// register. Returns the guard that fired, if any (`in_round` is left set).
    fn enable_pass(&mut self, mode: Mode, mut cx: Option<&mut Context<'_>>) -> Option<usize> {
        assert!(
            !self.guards.is_empty(),
            "tutti: selecting on an Alt without guards; it could never fire"
        );
        // Relative timeouts start now.
        for e in self.guards.iter_mut().filter(|e| e.enabled) {
            if let Kind::Timeout {
                after: Some(d),
                deadline,
            } = &mut e.kind
            {
                *deadline = Deadline::after(*d);
            }
        }
        let n = self.guards.len();
        let first = match mode {
            Mode::Pri => Start {
                first: 0,
                backwards: false,
            },
            // A reused `Alt` rotates (cheap, and fair already); a fresh one — each
            // evaluation of a `select!` — starts at random.
            Mode::Random if self.last_fired == usize::MAX => Start::random(n),
            Mode::Fair | Mode::Random => Start {
                first: self.next % n,
                backwards: false,
            },
        };
        // Whether a look may leave out the guard that fired last (`resume.rs`).
        let mut may_wait = self.rotates(mode) && !self.patience_spent();
        loop {
            let sel = self.selector.get();
            sel.reset();
            self.in_round = true;
            self.resume_wait = false;
            if let Some(k) = self.look(first, may_wait, cx.as_deref_mut()) {
                return Some(k);
            }
            let cx = cx.as_deref_mut()?;
            match self.register(first, cx) {
                Registered::Waiting if self.resume_wait => {
                    let resuming = self.still_resuming();
                    if resuming && self.wait_patiently(cx) {
                        return None;
                    }
                    // The sender we would wait for offered (or dropped its end) before we
                    // registered, so it will not wake us; or we have waited long enough.
                    // Withdraw and look again, without leaving anything out.
                    match self.selector.get().abort() {
                        Ok(()) => self.disable_all(None),
                        Err(k) => return Some(k),
                    }
                    if resuming {
                        self.give_up_resuming();
                    }
                    may_wait = false;
                }
                Registered::Waiting => return None,
                Registered::Decided(k) => return Some(k),
                // A guard became ready while registering: we withdrew; look again.
                Registered::Retry => continue,
            }
        }
    }

    /// The guard indices in priority order, from `start`.
    fn order(&self, start: Start) -> impl Iterator<Item = usize> {
        let n = self.guards.len();
        let Start { first, backwards } = start;
        // No division per step: a selection visits guards on its fast path.
        let (mut next, mut left) = (first, n);
        std::iter::from_fn(move || {
            left = left.checked_sub(1)?;
            let i = next;
            next = match (backwards, i) {
                (false, i) if i + 1 == n => 0,
                (false, i) => i + 1,
                (true, 0) => n - 1,
                (true, i) => i - 1,
            };
            Some(i)
        })
    }

    /// Step 2a, look: with nothing of ours queued anywhere, fire the first ready guard in
    /// priority order. Firing an event completes it at once (takes the value, or hands it
    /// over), committing any counterpart it meets; nobody can decide our round meanwhile.
    ///
    /// A rotating look (`may_wait`) marks the plain senders it takes from, and leaves out
    /// the guard that fired last — visited last — when it alone is ready and a guard
    /// before it waits for a sender that was taken from and has not resumed
    /// (`resume.rs`); `resume_wait` says so.
    fn look(
        &mut self,
        first: Start,
        may_wait: bool,
        mut cx: Option<&mut Context<'_>>,
    ) -> Option<usize> {
        let sel = self.selector.get();
        let mut fallback = None;
        let mut resuming = false;
        for i in self.order(first) {
            let e = &mut self.guards[i];
            if !e.enabled {
                continue;
            }
            if resuming && i == self.last_fired && fallback.is_none() {
                self.resume_wait = true;
                continue;
            }
            let fired = match &mut e.kind {
                Kind::Skip => true,
                Kind::Fallback => {
                    fallback = fallback.or(Some(i));
                    false
                }
                Kind::Timeout { deadline, .. } => deadline.is_elapsed(),
                // Nothing of ours is queued, so a ready future fires (`future.rs`). A
                // look-only pass (a blocking selection's first tries) polls with a
                // no-op waker; the round that waits polls again with the real one.
                Kind::Future(f) => match cx.as_deref_mut() {
                    Some(cx) => f.poll_ready(cx),
                    None => f.poll_ready(&mut Context::from_waker(std::task::Waker::noop())),
                },
                Kind::Event(g) => {
                    let g = g.get();
                    // SAFETY: nothing of ours is queued; each guard is enabled once a pass.
                    let enable = unsafe {
                        match may_wait {
                            true => g.look_rotating(sel, i),
                            false => g.enable(sel, i, false),
                        }
                    };
                    match enable {
                        Enable::Fired => return Some(i),
                        Enable::NotReady => {
                            resuming |= may_wait && g.is_resuming();
                            false
                        }
                        other => unreachable!("tutti: a look-only enable returned {other:?}"),
                    }
                }
            };
            if fired {
                return Some(self_select(sel, i));
            }
        }
        fallback.map(|i| self_select(sel, i))
    }

    /// Step 2b, register: queue a waiter on every enabled event and arm every timeout,
    /// with the owner's waker, so that whoever makes a guard ready decides the round.
    /// Finding a guard ready here (it became ready after the look) means withdrawing
    /// and looking again: a registered `Alt` may not decide anybody (`chan.rs`,
    /// invariant 5).
    fn register(&mut self, first: Start, cx: &mut Context<'_>) -> Registered {
        let sel = self.selector.get();
        // SAFETY: no waiter of ours is queued yet.
        unsafe { sel.set_waker(cx.waker()) };
        let left_out = if self.resume_wait {
            self.last_fired
        } else {
            usize::MAX
        };
        for i in self.order(first) {
            let e = &mut self.guards[i];
            if !e.enabled || i == left_out {
                continue;
            }
            if let Status::Selected(k) = sel.status() {
                return Registered::Decided(k); // a counterpart was quicker
            }
            match &mut e.kind {
                Kind::Skip | Kind::Fallback => {
                    unreachable!("tutti: a skip or fallback guard survived the look")
                }
                // Polled in the look with this waker; its wake-up restarts the round.
                Kind::Future(f) => e.waiting = !f.is_spent(),
                Kind::Timeout { deadline, .. } => {
                    e.waiting = true;
                    if deadline.poll_elapsed(cx).is_ready() {
                        return Registered::Decided(self_select(sel, i));
                    }
                }
                // SAFETY: the selector is `Aliased` and outlives the round (finish and
                // abandon disable every guard first); each guard is enabled once a pass.
                Kind::Event(g) => match unsafe { g.get().enable(sel, i, true) } {
                    Enable::Waiting => e.waiting = true,
                    Enable::NotReady => {}
                    Enable::Retry => {
                        return match sel.abort() {
                            Ok(()) => {
                                self.disable_all(None);
                                Registered::Retry
                            }
                            Err(k) => Registered::Decided(k),
                        }
                    }
                    other => unreachable!("tutti: a registering enable returned {other:?}"),
                },
            }
        }
        match sel.status() {
            Status::Selected(k) => Registered::Decided(k),
            _ => Registered::Waiting,
        }
    }

    /// Fires the first armed timeout guard that has passed, if any.
    fn poll_timeouts(&mut self, cx: &mut Context<'_>) -> Option<usize> {
        let sel = self.selector.get();
        for (i, e) in self.guards.iter_mut().enumerate() {
            if let (true, Kind::Timeout { deadline, .. }) = (e.waiting, &mut e.kind) {
                if deadline.poll_elapsed(cx).is_ready() {
                    return Some(self_select(sel, i));
                }
            }
        }
        None
    }

    /// The owner's waker changed: withdraw, then run the round again with the new one.
    #[cold]
    fn restart_round(&mut self, mode: Mode, cx: &mut Context<'_>) -> Poll<usize> {
        match self.selector.get().abort() {
            Err(k) => self.settle(k, mode, cx),
            Ok(()) => {
                self.disable_all(None);
                self.in_round = false;
                self.start_round(mode, cx)
            }
        }
    }

    /// The round was decided for guard `k`: finish it, unless `k` is a two-phase offer
    /// that a receiver only poked (`output.rs`) — then nothing was consumed, and a new
    /// round looks again (and sends, if the receiver still waits).
    fn settle(&mut self, k: usize, mode: Mode, cx: &mut Context<'_>) -> Poll<usize> {
        if self.two_phase && self.has_sends {
            if let Kind::Event(g) = &self.guards[k].kind {
                if g.get().poked() {
                    return self.repoll_poked(k, mode, cx);
                }
            }
        }
        Poll::Ready(self.finish(k, mode))
    }

    #[cold]
    fn repoll_poked(&mut self, k: usize, mode: Mode, cx: &mut Context<'_>) -> Poll<usize> {
        // Whoever poked guard `k` popped its waiter.
        self.disable_all(Some(k));
        self.in_round = false;
        self.start_round(mode, cx)
    }

    /// Makes the send guards register as two-phase offers, or not (between rounds).
    pub(super) fn set_two_phase(&mut self, two_phase: bool) {
        if self.two_phase == two_phase {
            return;
        }
        self.two_phase = two_phase;
        if !self.has_sends {
            return;
        }
        for e in &self.guards {
            if let Kind::Event(g) = &e.kind {
                g.get().set_two_phase(two_phase);
            }
        }
    }

    /// Step 5: guard `k` fired; disable the rest and end the round.
    fn finish(&mut self, k: usize, mode: Mode) -> usize {
        self.disable_all(Some(k));
        self.in_round = false;
        self.resume_deadline = None;
        if mode != Mode::Pri {
            self.next = k + 1;
        }
        self.last_fired = k;
        k
    }

    /// Removes every waiter and timer left this round, except guard `fired`'s (whoever
    /// decided it has popped it).
    fn disable_all(&mut self, fired: Option<usize>) {
        for (i, e) in self.guards.iter_mut().enumerate() {
            if !std::mem::take(&mut e.waiting) || Some(i) == fired {
                continue;
            }
            match &mut e.kind {
                Kind::Event(g) => g.get().disable(),
                Kind::Timeout { deadline, .. } => deadline.disarm(),
                // The future stays in the guard, pending, for a later selection.
                Kind::Future(_) | Kind::Skip | Kind::Fallback => {}
            }
        }
    }

    /// Step 6: the round's future went away before reporting.
    fn abandon(&mut self) {
        if !self.in_round {
            return;
        }
        for entry in &self.guards {
            if let Kind::Event(g) = &entry.kind {
                g.get().withdraw_wait();
            }
        }
        match self.selector.get().abort() {
            Ok(()) => self.disable_all(None),
            Err(k) => {
                self.disable_all(Some(k));
                self.give_back(k);
            }
        }
        self.in_round = false;
        self.resume_deadline = None;
    }

    /// Returns the value of fired guard `k`, if it holds one, to its channel.
    fn give_back(&self, k: usize) {
        if let Kind::Event(g) = &self.guards[k].kind {
            g.get().give_back();
        }
    }

    /// Event guard `k`, checked to move values `direction` on the channel `id`; `what`
    /// names the caller in the panic message.
    fn typed_event(&self, k: usize, id: *const (), direction: Direction, what: &str) -> &dyn Guard {
        let n = self.guards.len();
        let Some(Entry {
            kind: Kind::Event(g),
            ..
        }) = self.guards.get(k)
        else {
            panic!("tutti: {what}: guard {k} (of {n}) is not a channel guard");
        };
        let g = g.get();
        let want = match direction {
            Direction::Receive => "an input",
            Direction::Send => "an output",
        };
        assert!(
            g.direction() == direction,
            "tutti: {what}: guard {k} is not {want} guard"
        );
        assert!(
            g.id() == id,
            "tutti: {what}: guard {k} is on another channel"
        );
        g
    }
}

/// The owner fires guard `i` itself, unless a counterpart decided first.
fn self_select(sel: &Selector, i: usize) -> usize {
    if sel.try_select(i) {
        i
    } else {
        decided(sel)
    }
}

/// The guard a lost CAS lost to.
fn decided(sel: &Selector) -> usize {
    match sel.status() {
        Status::Selected(k) => k,
        s => unreachable!("tutti: Alt selector in state {s:?} after a lost CAS"),
    }
}

impl Drop for Alt<'_> {
    fn drop(&mut self) {
        // A round whose future was leaked may still have waiters queued.
        self.abandon();
    }
}

impl fmt::Debug for Alt<'_> {
    /// ```
    /// let alt = tutti::csp::Alt::new().skip();
    /// assert!(format!("{alt:?}").contains("guards: 1"));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Alt")
            .field("guards", &self.guards.len())
            .field("in_round", &self.in_round)
            .finish_non_exhaustive()
    }
}
