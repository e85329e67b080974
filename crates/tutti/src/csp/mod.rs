//! Layer 1: Communicating Sequential Processes (occam-π, JCSP) on tutti's scheduler.
//!
//! A *process* is an async task ([`spawn`](crate::runtime::spawn)) or a plain thread; processes
//! talk over **channels** and wait for the first of several events with an **[`Alt`]**
//! (or the [`select!`](crate::select) macro).
//!
//! * [`channel`] — synchronous (rendezvous): a send completes only when a receiver has
//!   taken the value. [`buffered`] — up to `n` values in flight. [`unbounded`] — a send
//!   never waits.
//! * [`Tx`] / [`Rx`] — typed ends. Both clone (occam `SHARED`): any-to-one, one-to-any
//!   and any-to-any channels. Each value goes to exactly one receiver; waiting senders and
//!   waiting receivers are each served first come, first served.
//! * Every operation comes as a future (`send`, `recv`), a blocking call for plain
//!   threads (`send_blocking`, `recv_blocking`), a non-blocking attempt (`try_send`,
//!   `try_recv`) and a timed call (`send_timeout`, `recv_timeout`), each with its own
//!   error type; all forms work together on the same channel.
//! * [`Alt`] selects among receives, sends (a value offered on a channel), timeouts and
//!   `skip`; [`select!`](crate::select) / [`select_blocking!`](crate::select_blocking)
//!   write a one-off selection as a `match` whose value is the fired branch's.
//! * Timer channels [`after`], [`at`], [`tick`] and [`never()`] are receivers like any
//!   other, so they serve as guards; receivers iterate ([`Rx::iter`], `for v in &rx`);
//!   [`Tx::len`], [`Tx::is_full`], [`Rx::recv_deadline`], [`Tx::send_deadline`].
//! * Ending a network: [`Tx::close`] / [`Rx::close`] (or dropping every `Tx`) closes the
//!   channel for sending — receivers drain what is buffered, then see `Closed`; when every
//!   `Rx` is dropped senders get `Closed(value)` back.
//!   [`Tx::poison`] / [`Rx::poison`] make every current and later operation on the channel
//!   fail with `Poisoned` (JCSP-style shutdown: each process that sees poison poisons its
//!   other channels and ends).
//! * [`Barrier`] — occam-π barriers: [`Barrier::enroll`] gives an [`Enrollment`], the only
//!   way to [`sync`](Enrollment::sync); dropping it resigns. [`Enrollment::arrive`] is the
//!   non-blocking barrier (`MPI_Ibarrier`).
//! * [`par`], [`par_for_each`] (`PAR i = 0 FOR n`), [`par_named`] and [`Par`] — run
//!   processes as tasks in parallel and wait for all; a panic names the process.
//! * Cancellation safety: dropping a send or receive future, or an `Alt` selection,
//!   never loses or duplicates a value (proof in `chan.rs`; the ALT commit protocol in
//!   the [`alt`](Alt) module docs).
//!
//! # Coming from std, crossbeam or tokio
//!
//! **`channel()` here is a rendezvous**: a send waits until a receiver has taken the
//! value (occam's and Go's unbuffered channel, `sync_channel(0)` in std), where
//! `std::sync::mpsc::channel()` never waits. The channel that never makes a sender wait
//! is [`unbounded`].
//!
//! | you know | in `tutti::csp` |
//! |---|---|
//! | `std::sync::mpsc::channel()`, `crossbeam_channel::unbounded()`, `tokio::sync::mpsc::unbounded_channel()` | [`unbounded()`](unbounded) |
//! | `std::sync::mpsc::sync_channel(0)`, `crossbeam_channel::bounded(0)` | [`channel()`](channel) |
//! | `sync_channel(n)`, `crossbeam_channel::bounded(n)`, `tokio::sync::mpsc::channel(n)` | [`buffered(n)`](buffered) |
//! | `Sender`, `Receiver` (crossbeam: both clone; std, tokio: only the sender) | [`Tx`], [`Rx`] — both clone |
//! | `send` on a thread (std, crossbeam) / `send(..).await` (tokio) | [`Tx::send_blocking`] / [`Tx::send`]`.await` |
//! | `recv` on a thread / `recv().await` | [`Rx::recv_blocking`] / [`Rx::recv`]`.await` |
//! | `try_send`, `try_recv`, `send_timeout`, `recv_timeout`, `recv_deadline` | the same names |
//! | `iter`, `try_iter`, `for v in &rx` | the same |
//! | `len`, `is_empty`, `is_full`, `capacity` | the same (`capacity()` is `usize::MAX` for an unbounded channel) |
//! | every sender dropped: "disconnected" (`RecvError`, `None` in tokio) | every `Tx` dropped or [`Tx::close`]: the receivers drain the buffer, then get `Closed` |
//! | every receiver dropped: `SendError(v)` | `Closed(v)` (also from a closed channel); [`poison`](Tx::poison) ends a network |
//! | `crossbeam_channel::select!`, `Select`; `tokio::select!` | [`select!`](crate::select), [`select_blocking!`](crate::select_blocking), [`Alt`] |
//! | `crossbeam_channel::after`, `tick`, `never` | [`after`], [`tick`], [`never`](fn@never) (and [`at`]) |
//!
//! Waiting costs no thread: a task that waits gives its worker back, and the runtime runs
//! the task it wakes next on the same core, so a ping-pong between two processes stays on
//! one core. Operations allocate nothing in the steady state: a waiting party's place in
//! a channel queue lives inside its (pinned) future.
//!
//! ```
//! use tutti::csp::{channel, RecvError};
//!
//! // occam: PAR (numbers(c!), double(c?, d!), collect(d?)) — then shut the network down.
//! let (c_tx, c_rx) = channel::<u64>();
//! let (d_tx, d_rx) = channel::<u64>();
//! let numbers = tutti::spawn(async move {
//!     for i in 1..=5 {
//!         c_tx.send(i).await.unwrap();
//!     }
//! }); // dropping c_tx closes c
//! let double = tutti::spawn(async move {
//!     while let Ok(x) = c_rx.recv().await {
//!         d_tx.send(2 * x).await.unwrap();
//!     }
//! });
//! let mut total = 0;
//! while let Ok(y) = d_rx.recv_blocking() {
//!     total += y;
//! }
//! assert_eq!(total, 30);
//! assert_eq!(d_rx.recv_blocking(), Err(RecvError::Closed));
//! numbers.join();
//! double.join();
//! ```

mod alt;
mod barrier;
mod blocking;
mod buffer;
mod chan;
mod channel;
pub mod deadlock;
mod error;
mod iter;
mod lock;
mod par;
mod rx;
mod select;
mod timer;
mod tx;
mod waiter;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(loom)]
use loom::sync::Arc;
#[cfg(not(loom))]
use std::sync::Arc;

pub use alt::{Alt, FutureArm, SelectFuture, Selected};
pub use barrier::{Arrival, Barrier, Completion, Enrollment, SyncFuture};
pub use channel::{buffered, buffered_named, channel, channel_named, unbounded, unbounded_named};
pub use deadlock::{deadlock_detection, run, set_deadlock_detection, BlockedProcess, Deadlock};
pub use error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
pub use iter::{IntoIter, Iter, TryIter};
pub use par::{par, par_for_each, par_named, Par, ParFuture};
pub use rx::{RecvFuture, Rx};
pub use timer::{after, at, never, tick};
pub use tx::{SendFuture, Tx};
