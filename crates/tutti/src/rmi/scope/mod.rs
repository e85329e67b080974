//! Structured scopes across ranks: [`Rmi::scope`] runs a body that spawns
//! work — RMI methods on distributed objects — on any location of any rank,
//! and returns only when every piece of it has finished; a panic or an error
//! of any piece comes back to the scope's owner, naming the location and
//! rank where it happened.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
//! use tutti::rmi;
//!
//! #[derive(Serialize, Deserialize)]
//! struct Work(u64);
//! impl Message for Work { type Reply = Result<(), String>; }
//! impl Remote for Work { const NAME: &'static str = "doc.scope.Work"; }
//!
//! struct Worker(u64);
//! impl Object for Worker {
//!     type Context = ();
//!     fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
//!         t.register::<Work>()?;
//!         Ok(())
//!     }
//! }
//! impl Handler<Work> for Worker {
//!     async fn handle(&mut self, w: Work, _: &mut ()) -> Result<(), String> {
//!         if w.0 == 13 { return Err("unlucky".into()); }
//!         self.0 += w.0;
//!         Ok(())
//!     }
//! }
//!
//! let world = tutti::world::World::builder().locations(3).workers(2).build().unwrap();
//! rmi::run(&world, |mut loc| async move {
//!     let h = loc.register(Worker(0)).await.unwrap();
//!     if loc.id() == 0 {
//!         // Work on every location; all of it has run when the scope returns.
//!         let done = loc.scope(|s| async move {
//!             for dest in 0..s.rmi().count() {
//!                 s.spawn(dest, &h, Work(dest as u64 + 1)).await;
//!             }
//!         }).await;
//!         assert!(done.is_ok());
//!         // An error (or a panic) comes back naming where it happened.
//!         let err = loc.scope(|s| async move { s.spawn(2, &h, Work(13)).await }).await;
//!         let err = err.unwrap_err();
//!         let failure = &err.failures()[0];
//!         assert_eq!((failure.location(), failure.message()), (2, "doc.scope.Work"));
//!     }
//!     loc.fence().await;
//!     loc.local(&h).0
//! });
//! ```
//!
//! # How work travels
//!
//! Closures cannot cross a process boundary, so work is what RMI already
//! ships everywhere: a [`Remote`] message for a registered object's
//! handler, run on the destination's representative with RMI's rules
//! (atomicity, deferral while the representative is busy, the deadlock check
//! for chains of waiting methods) but one: pieces of scoped work run
//! concurrently, in no issue order — among themselves or with the sender's
//! other requests. A spawn waits only for its representative, so a method
//! waiting in a scope never waits behind a request for a representative held
//! by another waiting method (with issue order, a ring of such methods over
//! the locations would deadlock). The same program
//! runs in threads, under `tutti launch` and under `mpirun`. A message the
//! work's object accepts from other locations (its
//! [`Object::remote`](crate::msg::Object::remote)) can be spawned; its reply
//! type says how it ends ([`Completion`]): `()`, or a `Result` whose `Err`
//! counts as a failure.
//!
//! # Counted completions
//!
//! Each spawn is a question of the owner's location (the request/reply
//! core's correlation ids): the destination answers it when the method
//! returns — with its reply, with the panic it raised (caught there; the
//! location goes on), or as cancelled. The scope waits for the answers to
//! *its* questions only, executing incoming requests meanwhile as a
//! `sync_rmi` does: two scopes never wait for each other's work, and a scope
//! does not wait for unrelated RMI traffic (a [`fence`](Rmi::fence) does).
//! A location whose rank dies answers nothing: its work fails with the
//! rank's death.
//!
//! # Panics, errors, cancellation
//!
//! A piece of work that panics or returns `Err` makes the scope end with a
//! [`ScopeError`] listing every failure (location, rank, message type,
//! why) and *cancels* the rest of the scope: work that has not started yet,
//! wherever it waits (on the way, queued, deferred), is answered as
//! cancelled without running; work that has started runs to its end and
//! the scope waits for it. [`Scope::cancel`] does the same on request. A
//! panic in the body itself unwinds out of the scope as usual.
//!
//! A scope whose future is dropped before it returned (the body panicked,
//! or a `select!` chose another arm) cancels its work that has not started
//! and **detaches** from the work that has: that work still runs to its end
//! on its location, and its answer is dropped on arrival. The owner's
//! location keeps the detached scope's outstanding questions and, once all
//! are answered (each piece has run or was skipped, so none of it is
//! queued anywhere), forgets the cancellation on every rank, as a scope
//! that returns does. It looks at them while it waits in another scope and
//! in a [`fence`](Rmi::fence), so after a fence no rank remembers a
//! cancelled scope.
//!
//! A method that panics keeps its representative as the panic left it (as
//! a poisoned lock would; the next method sees that state). A panic of a
//! method *nested* in the work — a request its location executed while the
//! work waited in an RMI call — is not the work's: it takes the location
//! down, as a method's panic outside a scope does.
//!
//! # Nesting
//!
//! A scope can be opened in a scope's body and in a method (its context
//! is an [`Rmi`]); each waits for its own work only. Work cannot be spawned
//! into a scope from another location (a scope belongs to its owner's
//! task); work that needs more work opens a scope of its own.
//!
//! Nesting runs on the location's stack, as for every method that waits: a
//! method waiting in a scope executes the requests that arrive meanwhile on
//! top of itself, and it can only return after they have. So work that
//! needs a representative held by a method waiting *below* it on the same
//! location can never start (that method cannot return first): RMI's
//! deadlock check reports the cycle and the work fails with it, instead of
//! a hang. Work whose methods wait in scopes therefore needs representatives
//! that no method waiting beneath it can hold — e.g. an object per owner of
//! the outer work, rather than one that every owner's work shares.
//!
//! # Diagnosis
//!
//! A scope that waits names the locations that still owe it work — in
//! [`diag::dump`](crate::diag::dump), and in the stall report when the world
//! cannot go on (`waits in an rmi scope for work owed by 1 location(s):
//! `Work` on location 3 (rank 1)`). Its wait counts as a wait on the world,
//! as a fence's does: when every location of the world is blocked and
//! nothing can wake them, the world is stalled, the report is printed and
//! (in the default `Fail` mode) the scope's owner panics with it.

mod work;

use std::collections::BTreeSet;
use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

pub(crate) use work::{decoded_scoped, ScopeTag, NOTICE_TAG};

use self::work::{cancel_here, forget_here, Notice, Stop, WireOutcome};
use super::{Handle, HandlerContext, Rmi};
use crate::call::{Answer, ReplyBody};
use crate::loom::{lock, unmodelled, Mutex, Ordering};
use crate::msg::{codec, Handler, Remote};
use crate::world::LocationId;

/// How a piece of scoped work ends, read from its method's reply: `()` never
/// fails; `Result<T, E>` fails with `E`'s text.
///
/// ```
/// use tutti::rmi::Completion;
/// assert_eq!(().failure(), None);
/// assert_eq!(Err::<(), _>("disk full").failure().as_deref(), Some("disk full"));
/// ```
pub trait Completion {
    /// Why the work failed, if it did.
    fn failure(&self) -> Option<String>;
}

impl Completion for () {
    fn failure(&self) -> Option<String> {
        None
    }
}

impl<T, E: fmt::Display> Completion for Result<T, E> {
    fn failure(&self) -> Option<String> {
        self.as_ref().err().map(|e| e.to_string())
    }
}

/// Why one piece of scoped work failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkError {
    /// The method panicked (the panic's message).
    Panicked(String),
    /// The method returned an error (its text, [`Completion::failure`]).
    Failed(String),
    /// No answer can come: the location's rank died, or the request or its
    /// answer was refused or did not decode (the explanation).
    Lost(String),
}

impl fmt::Display for WorkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkError::Panicked(p) => write!(f, "panicked: {p}"),
            WorkError::Failed(e) => write!(f, "failed: {e}"),
            WorkError::Lost(why) => write!(f, "was lost: {why}"),
        }
    }
}

/// One failed piece of scoped work: where it ran and why it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkFailure {
    location: usize,
    rank: usize,
    message: &'static str,
    error: WorkError,
}

impl WorkFailure {
    /// The location it was spawned on.
    pub fn location(&self) -> usize {
        self.location
    }

    /// That location's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The message type's stable name ([`Remote::NAME`]).
    pub fn message(&self) -> &'static str {
        self.message
    }

    /// Why it failed.
    pub fn error(&self) -> &WorkError {
        &self.error
    }
}

impl fmt::Display for WorkFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` on location {} (rank {}) {}",
            self.message, self.location, self.rank, self.error
        )
    }
}

/// A scope whose work failed: every failure, in the order the work was
/// spawned, and how much work was cancelled because of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeError {
    owner: usize,
    owner_rank: usize,
    failures: Vec<WorkFailure>,
    cancelled: usize,
}

impl ScopeError {
    /// The failures.
    pub fn failures(&self) -> &[WorkFailure] {
        &self.failures
    }

    /// How many pieces of work were cancelled before they started.
    pub fn cancelled(&self) -> usize {
        self.cancelled
    }
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the rmi scope of location {} (rank {}) failed: ",
            self.owner, self.owner_rank
        )?;
        for (i, failure) in self.failures.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{failure}")?;
        }
        if self.cancelled > 0 {
            write!(
                f,
                " ({} more cancelled before they started)",
                self.cancelled
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ScopeError {}

/// How many cancelled scopes this process remembers (sixteen bytes each):
/// scopes cancelled, or dropped, whose work may still wait somewhere. Zero
/// once every location has returned from a [`fence`](Rmi::fence) after the
/// scopes ended; for tests and leak checks.
///
/// ```
/// assert_eq!(tutti::rmi::scope::cancelled_scopes_remembered(), 0);
/// ```
pub fn cancelled_scopes_remembered() -> usize {
    work::remembered()
}

/// Spawned work that has not been answered.
struct Owed {
    dest: usize,
    corr: u64,
    message: &'static str,
    /// Reads the answer as the work's message type's reply.
    settle: fn(Answer<LocationId>) -> Settled,
}

/// How a piece of work ended, as its owner reads the answer.
enum Settled {
    Done,
    Cancelled,
    Failed(WorkError),
}

/// Reads the answer to scoped work of message type `M`.
fn settle<M>(answer: Answer<LocationId>) -> Settled
where
    M: Remote,
    M::Reply: Completion,
{
    let finished = |reply: M::Reply| match reply.failure() {
        None => Settled::Done,
        Some(e) => Settled::Failed(WorkError::Failed(e)),
    };
    match answer {
        Ok(ReplyBody::Value(v)) => match v.downcast::<Result<M::Reply, Stop>>() {
            Ok(r) => match *r {
                Ok(reply) => finished(reply),
                Err(Stop::Panicked(p)) => Settled::Failed(WorkError::Panicked(p)),
                Err(Stop::Cancelled) => Settled::Cancelled,
            },
            Err(_) => Settled::Failed(WorkError::Lost("an answer of another type".into())),
        },
        Ok(ReplyBody::Bytes(b)) => match codec::decode::<WireOutcome>(&b) {
            Ok(WireOutcome::Done(bytes)) => match codec::decode::<M::Reply>(&bytes) {
                Ok(reply) => finished(reply),
                Err(e) => Settled::Failed(WorkError::Lost(format!(
                    "a reply that does not decode: {e}"
                ))),
            },
            Ok(WireOutcome::Panicked(p)) => Settled::Failed(WorkError::Panicked(p)),
            Ok(WireOutcome::Cancelled) => Settled::Cancelled,
            Ok(WireOutcome::NoReply(why)) => Settled::Failed(WorkError::Lost(why)),
            Err(e) => Settled::Failed(WorkError::Lost(format!(
                "an answer that does not decode: {e}"
            ))),
        },
        Err(e) => Settled::Failed(WorkError::Lost(e.to_string())),
    }
}

/// A scope's book: the work owed, what went wrong, whether it is cancelled.
#[derive(Default)]
struct Book {
    /// In spawn order.
    owed: std::collections::VecDeque<Owed>,
    failures: Vec<WorkFailure>,
    cancelled: bool,
    /// Work answered as cancelled, or never sent because the scope was.
    skipped: usize,
    /// The cancellation was announced (named in the cancelled set, notices
    /// sent): to be forgotten when the scope closes.
    announced: bool,
    /// Locations of other ranks that were sent work (to be told of a
    /// cancellation).
    remote: BTreeSet<usize>,
    /// The scope returned (its work answered) or detached.
    closed: bool,
}

struct Shared {
    tag: ScopeTag,
    book: Mutex<Book>,
}

/// Numbers the scopes of this process.
static SERIAL: unmodelled::AtomicU64 = unmodelled::AtomicU64::new(1);

/// An open scope of [`Rmi::scope`]: spawns work on any location and
/// cancels it. Cheap to clone; it belongs to its owner's task (using it
/// from another task or thread is a clear panic, as for its [`Rmi`]).
pub struct Scope {
    loc: Rmi,
    shared: Arc<Shared>,
}

impl Clone for Scope {
    fn clone(&self) -> Self {
        Scope {
            loc: self.loc.share(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let book = lock(&self.shared.book);
        f.debug_struct("rmi::Scope")
            .field("owner", &self.shared.tag.owner)
            .field("owed", &book.owed.len())
            .field("cancelled", &book.cancelled)
            .finish()
    }
}

impl Rmi {
    /// Runs `body` with a new [`Scope`] and returns its output once every
    /// piece of work spawned in the scope has finished, wherever it ran;
    /// incoming requests keep executing while the scope waits. See the
    /// [module docs](crate::rmi::scope) for the rules.
    ///
    /// # Errors
    /// [`ScopeError`] if some work panicked, returned an error, or was lost
    /// (its rank died): each failure names its location and rank.
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
    /// # #[derive(Serialize, Deserialize)] struct Boom;
    /// # impl Message for Boom { type Reply = (); }
    /// # impl Remote for Boom { const NAME: &'static str = "doc.scope.Boom"; }
    /// # struct Obj;
    /// # impl Object for Obj {
    /// #     type Context = ();
    /// #     fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> { t.register::<Boom>()?; Ok(()) }
    /// # }
    /// # impl Handler<Boom> for Obj { async fn handle(&mut self, _: Boom, _: &mut ()) { panic!("boom") } }
    /// let world = tutti::world::World::builder().locations(2).workers(1).build().unwrap();
    /// let errors = tutti::rmi::run(&world, |loc| async move {
    ///     let h = loc.register(Obj).await.unwrap();
    ///     let dest = 1 - loc.id();
    ///     let r = loc.scope(|s| async move { s.spawn(dest, &h, Boom).await }).await;
    ///     r.unwrap_err().to_string()
    /// });
    /// assert!(errors[0].contains("`doc.scope.Boom` on location 1 (rank 0) panicked: boom"));
    /// ```
    pub async fn scope<F, Fut>(&self, body: F) -> Result<Fut::Output, ScopeError>
    where
        F: FnOnce(Scope) -> Fut,
        Fut: Future,
    {
        let scope = Scope {
            loc: self.share(),
            shared: Arc::new(Shared {
                tag: ScopeTag {
                    owner: self.id() as u32,
                    // Relaxed: only uniqueness matters.
                    serial: SERIAL.fetch_add(1, Ordering::Relaxed),
                },
                book: Mutex::new(Book::default()),
            }),
        };
        // Dropped before the scope returns: cancels and detaches.
        let open = Detach(scope.clone());
        let out = body(scope.clone()).await;
        scope.join().await;
        let closed = scope.close();
        drop(open);
        closed.map(|()| out)
    }
}

impl Scope {
    /// The owner's endpoint (its location id and count, more scopes).
    pub fn rmi(&self) -> &Rmi {
        &self.loc
    }

    /// Spawns `msg` for `dest`'s representative of `h`, as scoped work: the
    /// scope returns only after it has run there (or was cancelled before it
    /// started). Returns once it is sent (a statement, like
    /// [`async_rmi`](Rmi::async_rmi), with the same automatic poll). On a
    /// cancelled scope nothing is sent.
    ///
    /// # Panics
    /// As [`async_rmi`](Rmi::async_rmi): `dest` is not a location; `T` does
    /// not accept `M` from other locations; `M` does not serialize. On a
    /// scope that has returned (a clone kept beyond it).
    pub async fn spawn<T, M>(&self, dest: usize, h: &Handle<T>, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
        M::Reply: Completion,
    {
        {
            let mut book = lock(&self.shared.book);
            if book.closed {
                drop(book);
                self.closed_cold(M::NAME);
            }
            if book.cancelled {
                book.skipped += 1;
                return;
            }
        }
        let loc = &self.loc;
        let chain = loc.waiting_chain();
        let corr = loc.scoped_question::<T, M>(dest, h.id(), chain, msg, self.shared.tag);
        {
            let mut book = lock(&self.shared.book);
            book.owed.push_back(Owed {
                dest,
                corr,
                message: M::NAME,
                settle: settle::<M>,
            });
            if dest / loc.inner.per_rank != loc.inner.rank {
                book.remote.insert(dest);
            }
        }
        loc.counted_call().await;
    }

    #[cold]
    #[track_caller]
    fn closed_cold(&self, message: &str) -> ! {
        panic!(
            "tutti::rmi: `{message}` spawned on a scope of location {} that has already \
             returned (a `Scope` kept beyond its `Rmi::scope`)",
            self.loc.id()
        )
    }

    /// Cancels the scope's work that has not started, wherever it waits:
    /// it is answered as cancelled without running, and later spawns are
    /// not sent. Work that has started runs to its end; the scope still
    /// waits for it. Cancelling is not a failure: the scope ends with
    /// `Ok` unless some work failed.
    pub fn cancel(&self) {
        let remote = {
            let mut book = lock(&self.shared.book);
            if book.cancelled {
                return;
            }
            book.cancelled = true;
            if book.owed.is_empty() {
                return;
            }
            book.announced = true;
            book.remote.iter().copied().collect::<Vec<_>>()
        };
        let tag = self.shared.tag;
        cancel_here(tag);
        self.notify(&remote, false);
    }

    /// Whether the scope was cancelled ([`cancel`](Self::cancel), or a
    /// failure of its work).
    pub fn is_cancelled(&self) -> bool {
        lock(&self.shared.book).cancelled
    }

    /// How many pieces of work have not been answered yet (as far as the
    /// owner has read its answers).
    pub fn owed(&self) -> usize {
        lock(&self.shared.book).owed.len()
    }

    /// Sends the scope's notice to the locations of other ranks in `dests`.
    fn notify(&self, dests: &[usize], forget: bool) {
        notify(&self.loc, self.shared.tag, dests, forget);
    }

    /// Reads the answers that have arrived, in spawn order; a failure
    /// cancels the rest.
    fn settle_arrived(&self) {
        let pending = self.loc.conv().pending();
        loop {
            let answer = {
                let mut book = lock(&self.shared.book);
                let Some(front) = book.owed.front() else {
                    return;
                };
                let Some(answer) = pending.take(front.corr) else {
                    return;
                };
                let owed = book.owed.pop_front().expect("the front is there");
                (owed, answer)
            };
            let (owed, answer) = answer;
            match (owed.settle)(answer) {
                Settled::Done => {}
                Settled::Cancelled => lock(&self.shared.book).skipped += 1,
                Settled::Failed(error) => {
                    let rank = owed.dest / self.loc.inner.per_rank;
                    lock(&self.shared.book).failures.push(WorkFailure {
                        location: owed.dest,
                        rank,
                        message: owed.message,
                        error,
                    });
                    self.cancel();
                }
            }
        }
    }

    /// Waits until every piece of work has been answered, executing
    /// incoming requests meanwhile (as `sync_rmi` does).
    async fn join(&self) {
        let loc = &self.loc;
        loop {
            loc.sweep_detached();
            self.settle_arrived();
            let Some(front) = lock(&self.shared.book).owed.front().map(|o| o.corr) else {
                loc.resume();
                return;
            };
            if loc.run_own().await > 0 {
                continue;
            }
            loc.flush_out();
            // The answer comes as a delivery, or fails because the rank it
            // went to died (`RankDeath`): `watch` sees both.
            let mut recv = loc.world().recv_claimed(crate::rmi::execute::claims);
            let d = poll_fn(|cx| {
                if loc.conv().pending().watch(front, cx) {
                    return Poll::Ready(None);
                }
                if !loc.world().has_arrived() {
                    if let Some(d) = crate::diag::node::take_failure() {
                        // The world stalled (every location blocked): the work
                        // owed can never be done.
                        panic!(
                            "tutti::rmi: location {} cannot finish: it {}\n{d}",
                            loc.id(),
                            self.waits().describe()
                        );
                    }
                    // The first note of a poll counts: this one, ahead of
                    // the receive's own.
                    crate::diag::node::note(|| self.waits(), Some(cx.waker()));
                }
                Pin::new(&mut recv).poll(cx).map(Some)
            })
            .await;
            if let Some(d) = d {
                loc.handle(d).await;
            }
        }
    }

    /// What a waiting scope waits for, for the diagnosis: the locations that
    /// owe it work.
    #[cold]
    fn waits(&self) -> crate::diag::node::Wait {
        let book = lock(&self.shared.book);
        let mut by_dest: Vec<(usize, usize, &'static str)> = Vec::new();
        for o in &book.owed {
            match by_dest.iter_mut().find(|(d, _, _)| *d == o.dest) {
                Some((_, n, _)) => *n += 1,
                None => by_dest.push((o.dest, 1, o.message)),
            }
        }
        let per_rank = self.loc.inner.per_rank;
        let shown: Vec<String> = by_dest
            .iter()
            .take(8)
            .map(|&(d, n, m)| {
                let more = if n > 1 {
                    format!(" and {} more", n - 1)
                } else {
                    String::new()
                };
                format!("`{m}`{more} on location {d} (rank {})", d / per_rank)
            })
            .collect();
        let rest = by_dest.len().saturating_sub(shown.len());
        let mut text = format!(
            "waits in an rmi scope for work owed by {} location(s): {}",
            by_dest.len(),
            shown.join(", ")
        );
        if rest > 0 {
            text.push_str(&format!(", and {rest} more location(s)"));
        }
        // On the world: like a fence, the wait can only end through other
        // locations of it, so a world whose every location is blocked (and
        // whose runtime is quiet) is stalled.
        crate::diag::node::Wait {
            on: crate::diag::node::On::World(self.loc.world().world().diag_id()),
            what: crate::diag::node::What::Owned(text),
        }
    }

    /// Ends a joined scope: forgets its cancellation (every piece of work
    /// has been answered, so none is left anywhere) and says how it went.
    fn close(&self) -> Result<(), ScopeError> {
        let (announced, remote, failures, skipped) = {
            let mut book = lock(&self.shared.book);
            book.closed = true;
            (
                book.announced,
                std::mem::take(&mut book.remote),
                std::mem::take(&mut book.failures),
                book.skipped,
            )
        };
        if announced {
            forget_here(self.shared.tag);
            self.notify(&remote.into_iter().collect::<Vec<_>>(), true);
        }
        if failures.is_empty() {
            return Ok(());
        }
        Err(ScopeError {
            owner: self.loc.id(),
            owner_rank: self.loc.inner.rank,
            failures,
            cancelled: skipped,
        })
    }

    /// Detaches a scope dropped before it returned: cancels what has not
    /// started and leaves the answers still to come to its location, which
    /// forgets the cancellation once they are all in
    /// ([`Rmi::sweep_detached`]).
    fn detach(&self) {
        let closed = lock(&self.shared.book).closed;
        if closed {
            return;
        }
        self.cancel();
        let detached = {
            let mut book = lock(&self.shared.book);
            book.closed = true;
            let corrs: Vec<u64> = book.owed.drain(..).map(|o| o.corr).collect();
            // Announced exactly when work was owed as it was cancelled.
            book.announced.then(|| Detached {
                tag: self.shared.tag,
                corrs,
                remote: std::mem::take(&mut book.remote).into_iter().collect(),
            })
        };
        if let Some(d) = detached {
            // The task's state may be out of reach here (a scope future
            // dropped by another task): then its answers are left unread, as
            // the `Rmi` is misused anyway.
            let _ = self.loc.inner.state.with(|st| st.detached.push(d));
        }
    }
}

/// A cancelled scope dropped before it returned, whose work is still to be
/// answered: its owner's location forgets the cancellation (here and on the
/// ranks in `remote`) when every question in `corrs` is answered. Dropping
/// it forgets it in this process — also when the location's endpoint ends
/// first (its world failed, or stalled), so no entry outlives its world here.
pub(super) struct Detached {
    tag: ScopeTag,
    corrs: Vec<u64>,
    remote: Vec<usize>,
}

impl Drop for Detached {
    fn drop(&mut self) {
        forget_here(self.tag);
    }
}

impl Rmi {
    /// Forgets the cancellation of every detached scope whose work has all
    /// been answered (the answers are dropped): see the module docs.
    pub(super) fn sweep_detached(&self) {
        let mut list = self.with_state(|st| std::mem::take(&mut st.detached));
        if list.is_empty() {
            return;
        }
        let pending = self.conv().pending();
        // Dropped outside the task's state: an answer may hold a user value.
        let mut answers = Vec::new();
        list.retain_mut(|d| {
            d.corrs.retain(|&corr| match pending.take(corr) {
                Some(a) => {
                    answers.push(a);
                    false
                }
                None => true,
            });
            if !d.corrs.is_empty() {
                return true;
            }
            // Dropped by `retain_mut`, it is forgotten here too.
            notify(self, d.tag, &d.remote, true);
            false
        });
        drop(answers);
        self.with_state(|st| st.detached.append(&mut list));
    }
}

/// Sends scope `tag`'s notice to the locations of other ranks in `dests`.
/// A location whose rank died is skipped (its work is lost anyway).
fn notify(loc: &Rmi, tag: ScopeTag, dests: &[usize], forget: bool) {
    for &dest in dests {
        let to = LocationId::new(dest as u32);
        // An error means the rank is gone or the world is shutting down:
        // nothing there can run the scope's work any more.
        let _ = loc
            .world()
            .send_tagged(to, NOTICE_TAG, Notice { tag, forget });
    }
    if !dests.is_empty() {
        loc.world().flush();
    }
}

/// Detaches its scope if dropped before the scope returned.
struct Detach(Scope);

impl Drop for Detach {
    fn drop(&mut self) {
        self.0.detach();
    }
}
