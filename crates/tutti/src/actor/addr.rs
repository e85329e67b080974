//! Addresses: [`Addr`] (typed by actor) and [`WeakAddr`], with every way to send.
//!
//! | form | waits? | error |
//! |---|---|---|
//! | [`tell`](Addr::tell) | never (a statement) | [`TellError`]: stopped, or bounded mailbox full |
//! | [`tell_priority`](Addr::tell_priority) | never; overtakes queued messages | [`TellError`] (stopped only) |
//! | [`send`](Addr::send)`.await` | for room in a `Block` mailbox | [`SendError`] |
//! | [`send_blocking`](Addr::send_blocking), [`send_timeout`](Addr::send_timeout) | the same, from a plain thread | [`SendError`], [`SendTimeoutError`] |
//! | [`ask`](Addr::ask)`.await` | for room (if `Block`), then for the reply | [`AskError`] |
//! | [`ask_blocking`](Addr::ask_blocking), [`ask_timeout`](Addr::ask_timeout) | the same, from a plain thread | [`AskError`], [`AskTimeoutError`] |
//!
//! Messages sent through one address by one thread (or task) are handled in the order
//! they were sent; `tell` and `ask` enqueue at the call, `send` when it finds room.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::cell::Cell;
use super::mailbox::bounded::Refusal;
use super::monitor::{self, Down, DownSink, MonitorRef, Signals};
use super::{
    Actor, ActorId, AskError, AskTimeoutError, Overflow, SendError, SendTimeoutError, StopReason,
    TellError,
};
use crate::loom::lock;
use crate::msg::{Envelope, Handler, Message, Reply};

/// The address of a running (or stopped) actor of type `A`: send it messages of every
/// type `A` handles. Cheap to clone; every clone counts as an address (the actor stops
/// when none is left and its mailbox is empty).
///
/// ```
/// use tutti::actor::{self, Actor, Context};
/// use tutti::msg::{Handler, Message};
///
/// struct Hit;
/// impl Message for Hit { type Reply = u32; }
/// struct Counter(u32);
/// impl Actor for Counter {}
/// impl Handler<Hit> for Counter {
///     async fn handle(&mut self, _: Hit, _: &mut Context<Self>) -> u32 { self.0 += 1; self.0 }
/// }
///
/// let c = actor::spawn(Counter(0));
/// let c2 = c.clone();
/// std::thread::spawn(move || c2.tell(Hit).unwrap()).join().unwrap();
/// c.tell(Hit).unwrap();
/// assert_eq!(c.ask_blocking(Hit).unwrap(), 3);
/// ```
///
/// Sending a message type the actor does not handle does not compile:
///
/// ```compile_fail
/// use tutti::actor::{self, Actor};
/// use tutti::msg::Message;
/// struct Unknown;
/// impl Message for Unknown { type Reply = (); }
/// struct Deaf;
/// impl Actor for Deaf {}
/// actor::spawn(Deaf).tell(Unknown).unwrap();
/// ```
pub struct Addr<A: Actor> {
    cell: Arc<Cell<A>>,
}

impl<A: Actor> Addr<A> {
    /// Wraps a cell reference whose address count was already incremented.
    pub(crate) fn from_counted(cell: Arc<Cell<A>>) -> Self {
        Addr { cell }
    }

    pub(crate) fn cell(&self) -> &Arc<Cell<A>> {
        &self.cell
    }

    pub(crate) fn signals(&self) -> Arc<dyn Signals> {
        self.cell.clone()
    }

    /// The actor's id.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// let a = actor::spawn(A);
    /// assert_eq!(a.id(), a.clone().id());
    /// ```
    pub fn id(&self) -> ActorId {
        self.cell.id
    }

    /// Queues a statement and returns at once. Fails — giving the message back — if the
    /// actor has stopped, or its bounded mailbox is full (policies `Block` and `Fail`;
    /// `DropOldest` makes room instead). Never silently drops.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Log(String);
    /// impl Message for Log { type Reply = (); }
    /// struct Logger;
    /// impl Actor for Logger {}
    /// impl Handler<Log> for Logger {
    ///     async fn handle(&mut self, m: Log, _: &mut Context<Self>) { let _ = m.0; }
    /// }
    /// actor::spawn(Logger).tell(Log("hello".into())).unwrap();
    /// ```
    #[inline]
    pub fn tell<M: Message>(&self, msg: M) -> Result<(), TellError<M>>
    where
        A: Handler<M>,
    {
        self.cell
            .offer(msg, Envelope::new, None)
            .map_err(|(m, why)| match why {
                Refusal::Stopped => TellError::Stopped(m),
                Refusal::Full | Refusal::Wait => TellError::Full(m),
            })
    }

    /// Queues a statement on the priority lane: it is handled before every message in
    /// the mailbox (after the current handler), ignoring the mailbox bound. For urgent
    /// control messages; ordinary traffic should use [`tell`](Addr::tell).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Urgent;
    /// impl Message for Urgent { type Reply = (); }
    /// struct A;
    /// impl Actor for A {}
    /// impl Handler<Urgent> for A { async fn handle(&mut self, _: Urgent, _: &mut Context<Self>) {} }
    /// actor::spawn(A).tell_priority(Urgent).unwrap();
    /// ```
    pub fn tell_priority<M: Message>(&self, msg: M) -> Result<(), TellError<M>>
    where
        A: Handler<M>,
    {
        self.cell.push_priority(Envelope::new(msg)).map_err(|e| {
            let (m, _) = e
                .downcast::<M>()
                .unwrap_or_else(|_| unreachable!("tutti: envelope type changed"));
            TellError::Stopped(m)
        })
    }

    /// Queues a statement, waiting for room while a bounded mailbox is full
    /// (back-pressure; policies [`Overflow::Block`] and [`Overflow::Fail`] — a
    /// `DropOldest` mailbox makes room instead). Fails only if the actor stopped.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, Overflow};
    /// # use tutti::msg::{Handler, Message};
    /// struct Item(u32);
    /// impl Message for Item { type Reply = (); }
    /// struct Slow;
    /// impl Actor for Slow {}
    /// impl Handler<Item> for Slow { async fn handle(&mut self, _: Item, _: &mut Context<Self>) {} }
    /// let a = actor::Builder::new().bounded(2, Overflow::Block).spawn(Slow);
    /// tutti::block_on(async {
    ///     for i in 0..100 { a.send(Item(i)).await.unwrap(); }
    /// });
    /// ```
    pub fn send<M: Message>(&self, msg: M) -> SendFuture<'_, A, M>
    where
        A: Handler<M>,
    {
        SendFuture {
            cell: &self.cell,
            msg: Some(msg),
            ticket: None,
        }
    }

    /// [`send`](Addr::send) for plain threads: blocks while a `Block` mailbox is full.
    ///
    /// # Panics
    /// Inside an async task; use `send(msg).await` there.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, Overflow};
    /// # use tutti::msg::{Handler, Message};
    /// # struct Item; impl Message for Item { type Reply = (); }
    /// # struct A; impl Actor for A {}
    /// # impl Handler<Item> for A { async fn handle(&mut self, _: Item, _: &mut Context<Self>) {} }
    /// let a = actor::Builder::new().bounded(1, Overflow::Block).spawn(A);
    /// for _ in 0..10 { a.send_blocking(Item).unwrap(); }
    /// ```
    pub fn send_blocking<M: Message>(&self, msg: M) -> Result<(), SendError<M>>
    where
        A: Handler<M>,
    {
        crate::runtime::block_on(self.send(msg))
    }

    /// [`send_blocking`](Addr::send_blocking) giving up after `timeout` (the message is
    /// given back).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tutti::actor::{self, Actor, Context, Overflow, SendTimeoutError};
    /// # use tutti::msg::{Handler, Message};
    /// struct Item(u8);
    /// impl Message for Item { type Reply = (); }
    /// struct Stuck;
    /// impl Actor for Stuck {}
    /// impl Handler<Item> for Stuck {
    ///     async fn handle(&mut self, _: Item, _: &mut Context<Self>) { std::future::pending::<()>().await }
    /// }
    /// let a = actor::Builder::new().bounded(1, Overflow::Block).spawn(Stuck);
    /// a.tell(Item(0)).unwrap(); // being handled (for ever)
    /// while a.mailbox_len() > 0 { std::thread::yield_now(); }
    /// a.tell(Item(1)).unwrap(); // fills the mailbox
    /// match a.send_timeout(Item(2), Duration::from_millis(10)) {
    ///     Err(SendTimeoutError::Timeout(Item(n))) => assert_eq!(n, 2),
    ///     _ => unreachable!(),
    /// }
    /// a.stop();
    /// ```
    pub fn send_timeout<M: Message>(
        &self,
        msg: M,
        timeout: Duration,
    ) -> Result<(), SendTimeoutError<M>>
    where
        A: Handler<M>,
    {
        let mut send = self.send(msg);
        let mut sleep = crate::runtime::sleep(timeout);
        crate::runtime::block_on(std::future::poll_fn(|cx| {
            match Pin::new(&mut send).poll(cx) {
                Poll::Ready(Ok(())) => return Poll::Ready(Ok(())),
                Poll::Ready(Err(SendError(m))) => {
                    return Poll::Ready(Err(SendTimeoutError::Stopped(m)))
                }
                Poll::Pending => {}
            }
            match Pin::new(&mut sleep).poll(cx) {
                Poll::Ready(()) => {
                    let m = send.take_message().expect("tutti: message already sent");
                    Poll::Ready(Err(SendTimeoutError::Timeout(m)))
                }
                Poll::Pending => Poll::Pending,
            }
        }))
    }

    /// Asks a question: queues `msg` at once and returns a future for the reply. If the
    /// actor stops before replying, the future resolves to [`AskError::Stopped`] —
    /// never a hang. Dropping the future does not unsend the question.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Square(u64);
    /// impl Message for Square { type Reply = u64; }
    /// struct Calc;
    /// impl Actor for Calc {}
    /// impl Handler<Square> for Calc {
    ///     async fn handle(&mut self, m: Square, _: &mut Context<Self>) -> u64 { m.0 * m.0 }
    /// }
    /// let calc = actor::spawn(Calc);
    /// let v = tutti::block_on(async { calc.ask(Square(12)).await });
    /// assert_eq!(v, Ok(144));
    /// ```
    pub fn ask<M: Message>(&self, msg: M) -> Ask<M::Reply>
    where
        A: Handler<M>,
    {
        let mut reply = None;
        let offered = self.cell.offer(
            msg,
            |m| {
                let (e, r) = Envelope::with_reply(m);
                reply = Some(r);
                e
            },
            None,
        );
        let ask = match offered {
            Ok(()) => Ask::waiting(reply.expect("tutti: ask without a reply slot")),
            Err((_, Refusal::Stopped)) => Ask::failed(AskError::Stopped),
            Err((m, Refusal::Full | Refusal::Wait)) => {
                if self.cell.bounds().map(|(_, p)| p) == Some(Overflow::Block) {
                    // Wait for room first (rare: boxed).
                    let addr = self.clone();
                    Ask::sending(Box::pin(async move {
                        let mut reply = None;
                        let mut pending = Some(m);
                        let mut ticket = None;
                        std::future::poll_fn(|cx| {
                            let m = pending.take().expect("tutti: polled after completion");
                            let offered = addr.cell.offer(
                                m,
                                |m| {
                                    let (e, r) = Envelope::with_reply(m);
                                    reply = Some(r);
                                    e
                                },
                                Some((cx.waker(), &mut ticket)),
                            );
                            match offered {
                                Ok(()) => Poll::Ready(Ok(())),
                                Err((_, Refusal::Stopped)) => Poll::Ready(Err(AskError::Stopped)),
                                Err((_, Refusal::Full)) => Poll::Ready(Err(AskError::Full)),
                                Err((m, Refusal::Wait)) => {
                                    pending = Some(m);
                                    Poll::Pending
                                }
                            }
                        })
                        .await?;
                        Ok(reply.expect("tutti: ask without a reply slot"))
                    }))
                } else {
                    Ask::failed(AskError::Full)
                }
            }
        };
        ask.on(
            self.cell.node.id,
            short_type_name(std::any::type_name::<M>()),
        )
    }

    /// [`ask`](Addr::ask) for plain threads: blocks until the reply arrives.
    ///
    /// # Panics
    /// Inside an async task (including a handler); use `ask(msg).await` there.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// # struct Ping; impl Message for Ping { type Reply = &'static str; }
    /// # struct A; impl Actor for A {}
    /// # impl Handler<Ping> for A { async fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> &'static str { "pong" } }
    /// assert_eq!(actor::spawn(A).ask_blocking(Ping), Ok("pong"));
    /// ```
    pub fn ask_blocking<M: Message>(&self, msg: M) -> Result<M::Reply, AskError>
    where
        A: Handler<M>,
    {
        crate::runtime::block_on(self.ask(msg))
    }

    /// [`ask_blocking`](Addr::ask_blocking) giving up after `timeout`. The question may
    /// still be handled later; its reply is then dropped.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tutti::actor::{self, Actor, AskTimeoutError, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Never;
    /// impl Message for Never { type Reply = (); }
    /// struct Slow;
    /// impl Actor for Slow {}
    /// impl Handler<Never> for Slow {
    ///     async fn handle(&mut self, _: Never, _: &mut Context<Self>) { std::future::pending::<()>().await }
    /// }
    /// let s = actor::spawn(Slow);
    /// assert_eq!(s.ask_timeout(Never, Duration::from_millis(5)), Err(AskTimeoutError::Timeout));
    /// s.stop();
    /// ```
    pub fn ask_timeout<M: Message>(
        &self,
        msg: M,
        timeout: Duration,
    ) -> Result<M::Reply, AskTimeoutError>
    where
        A: Handler<M>,
    {
        match crate::runtime::block_on(crate::runtime::timeout(timeout, self.ask(msg))) {
            Ok(r) => r.map_err(AskTimeoutError::from),
            Err(_) => Err(AskTimeoutError::Timeout),
        }
    }

    /// Asks the actor to stop ([`StopReason::Requested`]). The request overtakes queued
    /// messages (which are dropped, their askers told) and cancels a handler that is
    /// waiting at an `.await`; a handler that is computing finishes first.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, StopReason};
    /// # struct A; impl Actor for A {}
    /// let a = actor::spawn(A);
    /// a.stop();
    /// assert_eq!(a.wait_blocking(), StopReason::Requested);
    /// ```
    pub fn stop(&self) {
        self.cell.request_stop(StopReason::Requested);
    }

    /// True once the actor has begun to stop (its mailbox is closed).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// let a = actor::spawn(A);
    /// assert!(!a.is_stopped());
    /// a.stop();
    /// a.wait_blocking();
    /// assert!(a.is_stopped());
    /// ```
    pub fn is_stopped(&self) -> bool {
        self.cell.mailbox.state.is_closed()
    }

    /// A future that resolves, with the reason, once the actor has finished stopping
    /// (its stop hook ran, monitors were told).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, StopReason};
    /// # struct A; impl Actor for A {}
    /// let a = actor::spawn(A);
    /// a.stop();
    /// assert_eq!(tutti::block_on(a.wait()), StopReason::Requested);
    /// ```
    pub fn wait(&self) -> WaitStop<'_, A> {
        WaitStop { cell: &self.cell }
    }

    /// [`wait`](Addr::wait) for plain threads.
    ///
    /// # Panics
    /// Inside an async task; use `wait().await` there.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, StopReason};
    /// # struct A; impl Actor for A {}
    /// let a = actor::spawn(A);
    /// a.stop();
    /// assert_eq!(a.wait_blocking(), StopReason::Requested);
    /// ```
    pub fn wait_blocking(&self) -> StopReason {
        crate::runtime::block_on(self.wait())
    }

    /// Makes `watcher` receive a [`Down`] message when this actor stops (see
    /// [`Context::monitor`](crate::actor::Context::monitor), which is the same from
    /// inside the watcher).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, Down};
    /// # use tutti::msg::Handler;
    /// struct Watcher(std::sync::mpsc::Sender<Down>);
    /// impl Actor for Watcher {}
    /// impl Handler<Down> for Watcher {
    ///     async fn handle(&mut self, d: Down, _: &mut Context<Self>) { self.0.send(d).unwrap(); }
    /// }
    /// struct Worker;
    /// impl Actor for Worker {}
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let w = actor::spawn(Watcher(tx));
    /// let worker = actor::spawn(Worker);
    /// worker.monitor(&w);
    /// worker.stop();
    /// assert_eq!(rx.recv().unwrap().id, worker.id());
    /// ```
    pub fn monitor<B: Actor + Handler<Down>>(&self, watcher: &Addr<B>) -> MonitorRef {
        let sink: Arc<dyn DownSink> = watcher.cell.clone();
        monitor::watch(self.signals(), sink)
    }

    /// Queues a ready envelope (a message decoded from another rank, with its reply
    /// slot if it is a question) as [`tell`](Addr::tell) queues a message. It never
    /// waits: a full bounded mailbox refuses it whatever its policy (`DropOldest`
    /// still makes room), and a stopped actor refuses it; the envelope is given back
    /// with the reason, and dropping it tells its asker.
    pub(crate) fn enqueue(&self, env: Envelope<A>) -> Result<(), (Envelope<A>, AskError)> {
        self.cell
            .offer(env, |e| e, None)
            .map_err(|(e, why)| match why {
                Refusal::Stopped => (e, AskError::Stopped),
                Refusal::Full | Refusal::Wait => (e, AskError::Full),
            })
    }

    /// [`enqueue`](Addr::enqueue) that waits for room as [`send`](Addr::send) does:
    /// a full `Block` or `Fail` mailbox queues `waker` under `ticket` (kept by the
    /// caller from one try to the next) and gives the envelope back with `false`;
    /// a stopped actor gives it back with `true`.
    pub(crate) fn enqueue_waiting(
        &self,
        env: Envelope<A>,
        waker: &Waker,
        ticket: &mut Option<u64>,
    ) -> Result<(), (Envelope<A>, bool)> {
        self.cell
            .offer(env, |e| e, Some((waker, ticket)))
            .map_err(|(e, why)| (e, matches!(why, Refusal::Stopped)))
    }

    /// Calls `f` with the actor's [`Down`] once it has stopped (at once if it has
    /// already stopped), from the stopping actor's task: for runtime parts that are
    /// not actors (`f` must not block).
    pub(crate) fn on_stop(&self, f: impl Fn(Down) + Send + Sync + 'static) -> MonitorRef {
        struct FnSink<F>(F);
        impl<F: Fn(Down) + Send + Sync> DownSink for FnSink<F> {
            fn down(&self, down: Down) {
                (self.0)(down)
            }
        }
        monitor::watch(self.signals(), Arc::new(FnSink(f)))
    }

    /// Messages in the mailbox now (a snapshot; for an unbounded mailbox it may include
    /// messages the actor is handling in its current turn).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// let _ = actor::spawn(A).mailbox_len();
    /// ```
    pub fn mailbox_len(&self) -> usize {
        self.cell.queued()
    }

    /// The bound of the mailbox, `None` if unbounded.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Overflow};
    /// # struct A; impl Actor for A {}
    /// assert_eq!(actor::Builder::new().bounded(3, Overflow::Fail).spawn(A).capacity(), Some(3));
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.cell.bounds().map(|(c, _)| c)
    }

    /// Messages a `DropOldest` mailbox has discarded so far.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// assert_eq!(actor::spawn(A).dropped(), 0);
    /// ```
    pub fn dropped(&self) -> u64 {
        self.cell.dropped()
    }

    /// An address that does not keep the actor alive.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// let a = actor::spawn(A);
    /// let w = a.downgrade();
    /// assert!(w.upgrade().is_some());
    /// ```
    pub fn downgrade(&self) -> WeakAddr<A> {
        WeakAddr {
            cell: Arc::clone(&self.cell),
        }
    }

    /// A type-erased address accepting only `M`, usable for actors of different types.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, Recipient};
    /// # use tutti::msg::{Handler, Message};
    /// struct Reading(f32);
    /// impl Message for Reading { type Reply = (); }
    /// struct Display;
    /// impl Actor for Display {}
    /// impl Handler<Reading> for Display { async fn handle(&mut self, _: Reading, _: &mut Context<Self>) {} }
    /// struct Logger;
    /// impl Actor for Logger {}
    /// impl Handler<Reading> for Logger { async fn handle(&mut self, _: Reading, _: &mut Context<Self>) {} }
    /// let subscribers: Vec<Recipient<Reading>> =
    ///     vec![actor::spawn(Display).recipient(), actor::spawn(Logger).recipient()];
    /// for s in &subscribers { s.tell(Reading(21.5)).unwrap(); }
    /// ```
    pub fn recipient<M: Message>(&self) -> super::Recipient<M>
    where
        A: Handler<M>,
    {
        self.cell.add_addr();
        super::Recipient::from_counted(self.cell.clone())
    }
}

impl<A: Actor> Clone for Addr<A> {
    fn clone(&self) -> Self {
        self.cell.add_addr();
        Addr {
            cell: Arc::clone(&self.cell),
        }
    }
}

impl<A: Actor> Drop for Addr<A> {
    fn drop(&mut self) {
        self.cell.drop_addr();
    }
}

impl<A: Actor> PartialEq for Addr<A> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }
}

impl<A: Actor> Eq for Addr<A> {}

impl<A: Actor> std::hash::Hash for Addr<A> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id().hash(state);
    }
}

impl<A: Actor> fmt::Debug for Addr<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Addr")
            .field("id", &self.id())
            .field("actor", &std::any::type_name::<A>())
            .field("stopped", &self.is_stopped())
            .finish()
    }
}

/// An address that does not count: it does not keep the actor from stopping by the
/// last-address rule. [`upgrade`](WeakAddr::upgrade) it to send.
///
/// ```
/// # use tutti::actor::{self, Actor, StopReason};
/// # struct A; impl Actor for A {}
/// let a = actor::spawn(A);
/// let weak = a.downgrade();
/// let again = weak.upgrade().unwrap();
/// drop((a, again));
/// while weak.upgrade().is_some() { std::thread::yield_now(); }
/// ```
pub struct WeakAddr<A: Actor> {
    cell: Arc<Cell<A>>,
}

impl<A: Actor> WeakAddr<A> {
    /// An address, unless none is left (the actor has stopped or is stopping for good).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// let a = actor::spawn(A);
    /// assert_eq!(a.downgrade().upgrade().map(|b| b.id()), Some(a.id()));
    /// ```
    pub fn upgrade(&self) -> Option<Addr<A>> {
        if self.cell.mailbox.state.is_closed() || !self.cell.try_add_addr() {
            return None;
        }
        Some(Addr::from_counted(Arc::clone(&self.cell)))
    }

    /// The actor's id.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// let a = actor::spawn(A);
    /// assert_eq!(a.downgrade().id(), a.id());
    /// ```
    pub fn id(&self) -> ActorId {
        self.cell.id
    }
}

impl<A: Actor> Clone for WeakAddr<A> {
    fn clone(&self) -> Self {
        WeakAddr {
            cell: Arc::clone(&self.cell),
        }
    }
}

impl<A: Actor> fmt::Debug for WeakAddr<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakAddr").field("id", &self.id()).finish()
    }
}

enum AskState<R> {
    Waiting(Reply<R>),
    Sending(Pin<Box<dyn Future<Output = Result<Reply<R>, AskError>> + Send>>),
    Failed(AskError),
    Done,
}

/// The future of an [`ask`](Addr::ask): the reply, or why there is none.
#[must_use = "the question is sent, but the reply is only received if this is awaited"]
pub struct Ask<R> {
    state: AskState<R>,
    /// The asked actor's node in the wait-for graph (`crate::diag`), 0 if unknown.
    target: u64,
    /// The question's type, for reports.
    message: &'static str,
}

impl<R> Ask<R> {
    pub(crate) fn waiting(reply: Reply<R>) -> Self {
        Ask {
            state: AskState::Waiting(reply),
            target: 0,
            message: "",
        }
    }

    pub(crate) fn failed(e: AskError) -> Self {
        Ask {
            state: AskState::Failed(e),
            target: 0,
            message: "",
        }
    }

    fn sending(f: Pin<Box<dyn Future<Output = Result<Reply<R>, AskError>> + Send>>) -> Self {
        Ask {
            state: AskState::Sending(f),
            target: 0,
            message: "",
        }
    }

    /// Names whom this ask waits for (the asked actor's node) and the question's type.
    pub(crate) fn on(mut self, target: u64, message: &'static str) -> Self {
        self.target = target;
        self.message = message;
        self
    }
}

/// A wait on actor node `target` (0: unknown) for `what`.
#[inline]
fn waits_on(target: u64, what: crate::diag::node::What) -> crate::diag::node::Wait {
    use crate::diag::node::{On, Wait};
    Wait {
        on: if target == 0 {
            On::Unknown
        } else {
            On::Node(target)
        },
        what,
    }
}

/// The short name of a type (its path and generic arguments dropped), for reports.
pub(crate) fn short_type_name(full: &'static str) -> &'static str {
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

impl<R> Ask<R> {
    /// The ask cannot go on yet: it fails with the deadlock report the
    /// detector handed this task, or notes that it waits for `what`.
    fn pending(
        &mut self,
        cx: &Context<'_>,
        what: crate::diag::node::What,
    ) -> Poll<Result<R, AskError>> {
        if let Some(d) = crate::diag::node::take_failure() {
            self.state = AskState::Done;
            return Poll::Ready(Err(AskError::Deadlock(d)));
        }
        let target = self.target;
        crate::diag::node::note(|| waits_on(target, what), Some(cx.waker()));
        Poll::Pending
    }
}

impl<R> Future for Ask<R> {
    type Output = Result<R, AskError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match &mut self.state {
                AskState::Waiting(r) => {
                    return match r.poll_reply(cx) {
                        Poll::Pending => {
                            let msg = self.message;
                            self.pending(cx, crate::diag::node::What::Reply(msg))
                        }
                        Poll::Ready(out) => {
                            self.state = AskState::Done;
                            Poll::Ready(out.map_err(AskError::from))
                        }
                    }
                }
                AskState::Sending(f) => match f.as_mut().poll(cx) {
                    Poll::Pending => {
                        let message = self.message;
                        let room = crate::diag::node::What::Room { message, ask: true };
                        return self.pending(cx, room);
                    }
                    Poll::Ready(Ok(r)) => self.state = AskState::Waiting(r),
                    Poll::Ready(Err(e)) => self.state = AskState::Failed(e),
                },
                AskState::Failed(_) => {
                    let AskState::Failed(e) = std::mem::replace(&mut self.state, AskState::Done)
                    else {
                        unreachable!()
                    };
                    return Poll::Ready(Err(e));
                }
                AskState::Done => panic!("tutti: Ask polled after it completed"),
            }
        }
    }
}

impl<R> fmt::Debug for Ask<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match &self.state {
            AskState::Waiting(_) => "waiting",
            AskState::Sending(_) => "sending",
            AskState::Failed(_) => "failed",
            AskState::Done => "done",
        };
        f.debug_struct("Ask").field("state", &s).finish()
    }
}

/// The future of [`send`](Addr::send).
#[must_use = "the message is only sent if this is awaited"]
pub struct SendFuture<'a, A: Actor, M> {
    cell: &'a Arc<Cell<A>>,
    msg: Option<M>,
    ticket: Option<u64>,
}

impl<A: Actor, M> SendFuture<'_, A, M> {
    fn take_message(&mut self) -> Option<M> {
        if let Some(t) = self.ticket.take() {
            self.cell.cancel_wait(t);
        }
        self.msg.take()
    }
}

impl<A: Actor, M> Unpin for SendFuture<'_, A, M> {}

impl<A: Actor + Handler<M>, M: Message> Future for SendFuture<'_, A, M> {
    type Output = Result<(), SendError<M>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let msg = this
            .msg
            .take()
            .expect("tutti: SendFuture polled after it completed");
        match this
            .cell
            .offer(msg, Envelope::new, Some((cx.waker(), &mut this.ticket)))
        {
            Ok(()) => Poll::Ready(Ok(())),
            Err((m, Refusal::Stopped)) => Poll::Ready(Err(SendError(m))),
            Err((m, Refusal::Wait | Refusal::Full)) => {
                // Our waker is queued for room.
                this.msg = Some(m);
                if let Some(d) = crate::diag::node::take_failure() {
                    // A send has no error for this: the waiting actor or location fails
                    // with the report (a handler's panic stops its actor).
                    panic!("tutti::actor: the send deadlocked\n{d}");
                }
                let target = this.cell.node.id;
                crate::diag::node::note(
                    || {
                        waits_on(
                            target,
                            crate::diag::node::What::Room {
                                message: short_type_name(std::any::type_name::<M>()),
                                ask: false,
                            },
                        )
                    },
                    Some(cx.waker()),
                );
                Poll::Pending
            }
        }
    }
}

impl<A: Actor, M> Drop for SendFuture<'_, A, M> {
    fn drop(&mut self) {
        if let Some(t) = self.ticket.take() {
            self.cell.cancel_wait(t);
        }
    }
}

impl<A: Actor, M> fmt::Debug for SendFuture<'_, A, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture")
            .field("sent", &self.msg.is_none())
            .finish()
    }
}

/// The future of [`wait`](Addr::wait): the reason the actor stopped.
#[must_use = "futures do nothing unless awaited"]
pub struct WaitStop<'a, A: Actor> {
    cell: &'a Arc<Cell<A>>,
}

impl<A: Actor> Future for WaitStop<'_, A> {
    type Output = StopReason;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<StopReason> {
        let mut g = lock(&self.cell.aux().inner);
        if g.stop_complete {
            if let Some(r) = &g.finished {
                return Poll::Ready(r.clone());
            }
        }
        if !g.stop_waiters.iter().any(|w| w.will_wake(cx.waker())) {
            g.stop_waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<A: Actor> fmt::Debug for WaitStop<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitStop")
            .field("id", &self.cell.id)
            .finish()
    }
}
