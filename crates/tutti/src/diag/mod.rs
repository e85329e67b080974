//! Seeing inside a running program: why it hangs, and what everything waits on.
//!
//! * **Deadlock detection across paradigms.** One wait-for graph, fed by every
//!   blocking primitive: CSP channels, `Alt`, barriers and `par`s (by `csp::deadlock`,
//!   a contributor of this module), actor `ask`s and sends into full `Block` mailboxes,
//!   dataflow variables, world receives, fences and collectives (noted on the actor or
//!   location that waits, `node.rs`), and across ranks: fences and collectives that
//!   another rank's locations never reach (the world's cross-rank stall check, each
//!   rank contributing its locations' waits) and `sync_rmi` chains (found by the RMI
//!   layer's chain). Both are declared here. A deadlock is printed as a [`Deadlock`]
//!   report naming each participant (rank, location, actor or process name) and what it
//!   waits on; by default the waiting operations then fail with it — see
//!   [`DeadlockMode`] for report-only and off (`TUTTI_DEADLOCK=fail|report|off`).
//! * **Dumps on demand.** [`dump`] / [`dump_json`] list every live actor, location and
//!   CSP process with its state and wait, and each runtime's live tasks, without
//!   stopping the program; the signal `SIGUSR1` (or the one named by
//!   `TUTTI_DUMP_SIGNAL`, `off` for none) prints the same on stderr. Its handler is
//!   the one process-wide side effect of the diagnosis: it is installed when the
//!   first actor, location, CSP network or diagnosed wait is made (or by
//!   [`install_dump_signal`]), never by a runtime of plain tasks, and
//!   `TUTTI_DUMP_SIGNAL=off` leaves the process's signals alone.
//! * **A timeline trace** of what every worker ran and which message led to what
//!   ([`trace`]).
//!
//! # Where it sits
//!
//! The registry of waits and the detector live here, beside layer 0 (`runtime`): they
//! use only the runtime (its idle hook, live tasks and quietness). The layers above
//! contribute: they note what their operations wait on (`note`), register their
//! waiting entities as nodes (actors, locations), or register a check and a dump source
//! of their own (CSP networks). Nothing here names a higher layer.
//!
//! ```
//! use tutti::actor::{self, Actor, AskError, Context};
//! use tutti::msg::{Handler, Message};
//!
//! // Two actors that ask each other inside their handlers: a cycle of asks.
//! struct Peer(Option<actor::Addr<Peer>>);
//! impl Actor for Peer {}
//! struct SetPeer(actor::Addr<Peer>);
//! impl Message for SetPeer { type Reply = (); }
//! struct Ping;
//! impl Message for Ping { type Reply = Result<(), AskError>; }
//! struct Pong;
//! impl Message for Pong { type Reply = (); }
//! impl Handler<SetPeer> for Peer {
//!     async fn handle(&mut self, m: SetPeer, _: &mut Context<Self>) { self.0 = Some(m.0) }
//! }
//! impl Handler<Ping> for Peer {
//!     async fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Result<(), AskError> {
//!         self.0.as_ref().unwrap().ask(Pong).await // the peer is in its own ask: stuck
//!     }
//! }
//! impl Handler<Pong> for Peer {
//!     async fn handle(&mut self, _: Pong, _: &mut Context<Self>) {}
//! }
//! let (a, b) = (actor::spawn(Peer(None)), actor::spawn(Peer(None)));
//! a.ask_blocking(SetPeer(b.clone())).unwrap();
//! b.ask_blocking(SetPeer(a.clone())).unwrap();
//! let (ra, rb) = (a.ask(Ping), b.ask(Ping));
//! let (ra, rb) = tutti::block_on(async { (ra.await, rb.await) });
//! // Both inner asks fail with the report (or one does, and its handler's return then
//! // lets the other's reply through).
//! let errs: Vec<AskError> = [ra.unwrap(), rb.unwrap()].into_iter().filter_map(Result::err).collect();
//! let AskError::Deadlock(report) = &errs[0] else { panic!("{errs:?}") };
//! assert_eq!(report.cycle().len(), 3); // a → b → a
//! assert!(report.to_string().contains("waits for the reply to `Pong` from `actor#"));
//! ```

mod detect;
mod dump;
mod mode;
pub(crate) mod node;
mod report;
pub(crate) mod signal;
pub mod trace;

#[cfg(all(test, loom))]
mod loom_tests;

pub use dump::Entry;
pub use mode::{deadlock_mode, set_deadlock_mode, DeadlockMode};
pub use report::{BlockedProcess, Deadlock, Waiter};

pub(crate) use detect::{add_check, declare};
pub(crate) use dump::add_source;
pub(crate) use node::{rank, set_rank};

/// Every live actor, location and CSP process with its state and what it waits on, and
/// each runtime's live tasks, as text (one line each). The program goes on.
///
/// ```
/// let a = tutti::actor::spawn(Quiet);
/// # struct Quiet; impl tutti::actor::Actor for Quiet {}
/// let text = tutti::diag::dump();
/// assert!(text.starts_with("tutti: dump"));
/// assert!(text.contains("actor `"));
/// # a.stop();
/// ```
pub fn dump() -> String {
    dump::text()
}

/// [`dump`] as one JSON object: `{"runtimes": [{"runtime", "live_tasks", "workers",
/// "by_priority": {"high", "normal", "low"}}],
/// "entries": [{"kind", "name", "rank", "state", "waits"}], "last_deadlock"}`.
///
/// ```
/// let v: serde_json::Value = serde_json::from_str(&tutti::diag::dump_json()).unwrap();
/// assert!(v["entries"].is_array());
/// ```
pub fn dump_json() -> String {
    dump::json()
}

/// The entries of a dump, as values.
///
/// ```
/// for e in tutti::diag::entries() {
///     println!("{} {} {}", e.kind, e.name, e.state);
/// }
/// ```
pub fn entries() -> Vec<Entry> {
    dump::entries().0
}

/// The last deadlock declared in this process (by any paradigm), if any.
///
/// ```
/// let _ = tutti::diag::last_deadlock();
/// ```
pub fn last_deadlock() -> Option<Deadlock> {
    detect::last()
}

/// Installs the dump signal handler now (it is installed anyway when the first
/// actor, location, CSP network or diagnosed wait is made): `SIGUSR1`, or the
/// signal `TUTTI_DUMP_SIGNAL` names (`off`: none). A program of plain tasks that
/// wants its live tasks dumped on a signal calls it. Returns the
/// signal number, `None` for `off`, or an error naming a bad `TUTTI_DUMP_SIGNAL`.
///
/// ```
/// let _ = tutti::diag::install_dump_signal();
/// ```
pub fn install_dump_signal() -> Result<Option<i32>, String> {
    signal::install()
}
