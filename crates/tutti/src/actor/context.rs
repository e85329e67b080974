//! [`Context`]: what a handler can do besides replying — its address, stopping,
//! looking at its mailbox (the C task framework's `message_immediate`), monitors, links, children.

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use super::cell::{Cell, Next};
use super::monitor::{self, Down, DownSink, MonitorRef, Signals};
use super::system::ActorSystem;
use super::{Actor, ActorId, Addr, StopReason};
use crate::loom::lock;
use crate::msg::{Envelope, Handler};

/// The context of an actor, passed to its handlers and hooks as `&mut Context<Self>`.
///
/// ```
/// use tutti::actor::{self, Actor, Context};
/// use tutti::msg::{Handler, Message};
///
/// struct Quit;
/// impl Message for Quit { type Reply = (); }
/// struct Worker;
/// impl Actor for Worker {}
/// impl Handler<Quit> for Worker {
///     async fn handle(&mut self, _: Quit, ctx: &mut Context<Self>) {
///         ctx.stop(); // after this handler returns
///     }
/// }
///
/// let w = actor::spawn(Worker);
/// w.tell(Quit).unwrap();
/// assert_eq!(w.wait_blocking(), actor::StopReason::Normal);
/// ```
pub struct Context<A: Actor> {
    cell: NonNull<Cell<A>>,
    /// Discarded by a `DropOldest` mailbox and not yet reported to the actor.
    pub(crate) dropped: u32,
    /// `LANE`, `STOPPING`, `LIVE`.
    flags: u8,
}

/// The priority lane may hold envelopes.
const LANE: u8 = 1;
/// A stop is pending (its reason is in the aux state).
const STOPPING: u8 = 2;
/// The actor's state is initialised in the cell.
const LIVE: u8 = 4;

// SAFETY: a context is used only by its actor's task (one poll at a time); it points to
// its own cell, which is `Sync`.
unsafe impl<A: Actor> Send for Context<A> {}

impl<A: Actor> Context<A> {
    pub(crate) fn new(cell: NonNull<Cell<A>>) -> Self {
        Context {
            cell,
            dropped: 0,
            flags: LIVE,
        }
    }

    /// Clears `LIVE`, returning whether it was set (the state is then the caller's).
    pub(crate) fn take_live(&mut self) -> bool {
        let live = self.flags & LIVE != 0;
        self.flags &= !LIVE;
        live
    }

    pub(crate) fn lane(&self) -> bool {
        self.flags & LANE != 0
    }

    fn set_lane(&mut self, on: bool) {
        if on {
            self.flags |= LANE;
        } else {
            self.flags &= !LANE;
        }
    }

    /// True if a stop is pending.
    pub(crate) fn stopping(&self) -> bool {
        self.flags & STOPPING != 0
    }

    /// Takes the pending stop's reason.
    pub(crate) fn take_stop(&mut self) -> Option<StopReason> {
        if self.flags & STOPPING == 0 {
            return None;
        }
        self.flags &= !STOPPING;
        let aux = self.cell_unbound().aux_if_any()?;
        lock(&aux.inner).stop.take()
    }

    pub(crate) fn set_cell(&mut self, cell: NonNull<Cell<A>>) {
        self.cell = cell;
    }

    pub(crate) fn cell(&self) -> &Cell<A> {
        self.cell_unbound()
    }

    /// The cell, with a lifetime not tied to this borrow of the context, so that the
    /// context's own fields can be updated while the cell is in use. Callers use it only
    /// within one method call; the cell outlives that, since it contains the context.
    fn cell_unbound<'c>(&self) -> &'c Cell<A> {
        // SAFETY: the context lives inside the cell it points to, which outlives every
        // call on the context; only shared access to the cell is created.
        unsafe { self.cell.as_ref() }
    }

    /// A new strong reference to the cell.
    fn arc(&self) -> Arc<Cell<A>> {
        let p = self.cell.as_ptr().cast_const();
        // SAFETY: `p` came from `Arc::as_ptr` of the live cell that holds this context.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }

    /// This actor's id.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Who;
    /// impl Message for Who { type Reply = actor::ActorId; }
    /// struct Me;
    /// impl Actor for Me {}
    /// impl Handler<Who> for Me {
    ///     async fn handle(&mut self, _: Who, ctx: &mut Context<Self>) -> actor::ActorId { ctx.id() }
    /// }
    /// let me = actor::spawn(Me);
    /// assert_eq!(me.ask_blocking(Who).unwrap(), me.id());
    /// ```
    pub fn id(&self) -> ActorId {
        self.cell().id
    }

    /// A new address of this actor. While the actor holds an address to itself, it does
    /// not stop by the last-address rule.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Myself;
    /// impl Message for Myself { type Reply = actor::Addr<Me>; }
    /// struct Me;
    /// impl Actor for Me {}
    /// impl Handler<Myself> for Me {
    ///     async fn handle(&mut self, _: Myself, ctx: &mut Context<Self>) -> actor::Addr<Me> { ctx.addr() }
    /// }
    /// let me = actor::spawn(Me);
    /// assert_eq!(me.ask_blocking(Myself).unwrap().id(), me.id());
    /// ```
    pub fn addr(&self) -> Addr<A> {
        self.cell().add_addr();
        Addr::from_counted(self.arc())
    }

    /// Stops the actor once the current handler returns (reason
    /// [`StopReason::Normal`]). Messages still queued are dropped; their askers get
    /// [`AskError::Stopped`](crate::actor::AskError::Stopped).
    ///
    /// See the [`Context`] example.
    pub fn stop(&mut self) {
        self.stop_with(StopReason::Normal);
    }

    /// Stops the actor once the current handler returns, with `reason` (e.g.
    /// [`StopReason::Failed`] to count as abnormal for links and supervisors).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, StopReason};
    /// # use tutti::msg::{Handler, Message};
    /// struct Fail;
    /// impl Message for Fail { type Reply = (); }
    /// struct Fragile;
    /// impl Actor for Fragile {}
    /// impl Handler<Fail> for Fragile {
    ///     async fn handle(&mut self, _: Fail, ctx: &mut Context<Self>) {
    ///         ctx.stop_with(StopReason::Failed("disk full".into()));
    ///     }
    /// }
    /// let f = actor::spawn(Fragile);
    /// f.tell(Fail).unwrap();
    /// assert!(f.wait_blocking().is_abnormal());
    /// ```
    pub fn stop_with(&mut self, reason: StopReason) {
        let mut g = lock(&self.cell_unbound().aux().inner);
        if g.stop.is_none() {
            g.stop = Some(reason);
            g.stop_interrupts = false;
        }
        self.flags |= STOPPING;
    }

    /// True if the actor will stop when the current handler returns: it stopped itself,
    /// or a stop was requested (by [`Addr::stop`](crate::actor::Addr::stop), a linked
    /// actor, a shutdown). A long handler can poll this to return early.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Check;
    /// impl Message for Check { type Reply = bool; }
    /// struct A;
    /// impl Actor for A {}
    /// impl Handler<Check> for A {
    ///     async fn handle(&mut self, _: Check, ctx: &mut Context<Self>) -> bool {
    ///         ctx.stop();
    ///         ctx.is_stopping()
    ///     }
    /// }
    /// assert!(actor::spawn(A).ask_blocking(Check).unwrap());
    /// ```
    pub fn is_stopping(&mut self) -> bool {
        self.sync_system();
        self.stopping()
    }

    /// True if a message is waiting: in the mailbox (possibly still being pushed), on the
    /// priority lane, or a system event (the C task framework's `message_immediate`). A long
    /// handler uses it to serve new messages between units of work, with
    /// [`try_next`](Context::try_next).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Peek;
    /// impl Message for Peek { type Reply = bool; }
    /// struct A;
    /// impl Actor for A {}
    /// impl Handler<Peek> for A {
    ///     async fn handle(&mut self, _: Peek, ctx: &mut Context<Self>) -> bool { ctx.has_messages() }
    /// }
    /// assert!(!actor::spawn(A).ask_blocking(Peek).unwrap());
    /// ```
    pub fn has_messages(&self) -> bool {
        let c = self.cell();
        self.lane() || c.mailbox.state.has_system() || c.mailbox.waiting() > 0
    }

    /// Takes the next message — priority lane first, then the mailbox — without
    /// returning to the actor loop. The handler applies it to the actor itself with
    /// [`Envelope::handle`], or takes it apart with [`Envelope::downcast`]; dropping it
    /// drops the message (an asker gets an error). `None` if nothing is waiting.
    ///
    /// ```
    /// use tutti::actor::{self, Actor, Context};
    /// use tutti::msg::{Handler, Message};
    ///
    /// struct Sub(u32);
    /// impl Message for Sub { type Reply = (); }
    /// struct Broadcast;
    /// impl Message for Broadcast { type Reply = usize; }
    ///
    /// #[derive(Default)]
    /// struct Station { subscribers: Vec<u32> }
    /// impl Actor for Station {}
    /// impl Handler<Sub> for Station {
    ///     async fn handle(&mut self, m: Sub, _: &mut Context<Self>) { self.subscribers.push(m.0); }
    /// }
    /// impl Handler<Broadcast> for Station {
    ///     async fn handle(&mut self, _: Broadcast, ctx: &mut Context<Self>) -> usize {
    ///         // Accept new subscribers before broadcasting (Gingras 2018, weather station).
    ///         while let Some(m) = ctx.try_next() {
    ///             m.handle(self, ctx).await;
    ///         }
    ///         self.subscribers.len()
    ///     }
    /// }
    ///
    /// let s = actor::spawn(Station::default());
    /// let n = s.ask(Broadcast);
    /// s.tell(Sub(1)).unwrap();
    /// s.tell(Sub(2)).unwrap();
    /// let n = tutti::block_on(n).unwrap();
    /// assert!(n <= 2); // the subscriptions may or may not have arrived yet
    /// ```
    pub fn try_next(&mut self) -> Option<Envelope<A>> {
        if self.cell().mailbox.state.has_system() {
            self.sync_system();
        }
        if self.lane() {
            if let Some(e) = self.pop_lane() {
                return Some(e);
            }
        }
        for _ in 0..64 {
            match self.pop_mailbox() {
                Next::Env(e) => return Some(e),
                Next::Empty => return None,
                Next::Busy => crate::loom::spin_hint(),
            }
        }
        None
    }

    /// Moves system events into the context: a stop request, the priority lane flag.
    pub(crate) fn sync_system(&mut self) {
        let c = self.cell_unbound();
        if !c.mailbox.state.take_system() {
            return;
        }
        let Some(aux) = c.aux_if_any() else {
            return;
        };
        let g = lock(&aux.inner);
        if g.stop.is_some() {
            self.flags |= STOPPING;
        }
        let lane = !g.lane.is_empty();
        drop(g);
        self.set_lane(lane);
    }

    pub(crate) fn pop_lane(&mut self) -> Option<Envelope<A>> {
        let aux = self.cell_unbound().aux_if_any()?;
        let mut g = lock(&aux.inner);
        let e = g.lane.pop_front();
        let lane = !g.lane.is_empty();
        drop(g);
        self.set_lane(lane);
        e
    }

    pub(crate) fn pop_mailbox(&mut self) -> Next<A> {
        let mut dropped = 0;
        // SAFETY: the context is only used by the actor's task, the consumer.
        let next = unsafe { self.cell().pop(&mut dropped) };
        self.dropped = self
            .dropped
            .saturating_add(u32::try_from(dropped).unwrap_or(u32::MAX));
        next
    }

    /// Makes this actor receive a [`Down`] message when `target` stops (at once if it
    /// already has). Down notices overtake ordinary messages.
    ///
    /// ```
    /// use tutti::actor::{self, Actor, Context, Down, StopReason};
    /// use tutti::msg::{Handler, Message};
    ///
    /// struct Watch(actor::Addr<Child>);
    /// impl Message for Watch { type Reply = (); }
    /// struct Child;
    /// impl Actor for Child {}
    /// struct Parent(std::sync::mpsc::Sender<StopReason>);
    /// impl Actor for Parent {}
    /// impl Handler<Watch> for Parent {
    ///     async fn handle(&mut self, m: Watch, ctx: &mut Context<Self>) { ctx.monitor(&m.0); }
    /// }
    /// impl Handler<Down> for Parent {
    ///     async fn handle(&mut self, d: Down, _: &mut Context<Self>) { self.0.send(d.reason).unwrap(); }
    /// }
    ///
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let parent = actor::spawn(Parent(tx));
    /// let child = actor::spawn(Child);
    /// parent.ask_blocking(Watch(child.clone())).unwrap();
    /// child.stop();
    /// assert_eq!(rx.recv().unwrap(), StopReason::Requested);
    /// ```
    pub fn monitor<B: Actor>(&mut self, target: &Addr<B>) -> MonitorRef
    where
        A: Handler<Down>,
    {
        let sink: Arc<dyn DownSink> = self.arc();
        monitor::watch(target.signals(), sink)
    }

    /// Cancels a monitor; no `Down` is delivered for it afterwards (one already queued
    /// may still arrive).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, Down};
    /// # use tutti::msg::{Handler, Message};
    /// # struct Child; impl Actor for Child {}
    /// struct Unwatch(actor::Addr<Child>);
    /// impl Message for Unwatch { type Reply = (); }
    /// struct P;
    /// impl Actor for P {}
    /// impl Handler<Down> for P { async fn handle(&mut self, _: Down, _: &mut Context<Self>) { unreachable!() } }
    /// impl Handler<Unwatch> for P {
    ///     async fn handle(&mut self, m: Unwatch, ctx: &mut Context<Self>) {
    ///         let r = ctx.monitor(&m.0);
    ///         ctx.demonitor(r);
    ///     }
    /// }
    /// let child = actor::spawn(Child);
    /// let p = actor::spawn(P);
    /// p.ask_blocking(Unwatch(child.clone())).unwrap();
    /// child.stop();
    /// child.wait_blocking();
    /// ```
    pub fn demonitor(&mut self, monitor: MonitorRef) {
        monitor.cancel();
    }

    /// Links this actor with `other`, both ways: when either stops abnormally
    /// ([`StopReason::is_abnormal`]), the other is stopped with [`StopReason::Linked`] —
    /// unless it [traps exits](Context::trap_exits). Linking to an actor that already
    /// stopped abnormally stops this one.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, StopReason};
    /// # use tutti::msg::{Handler, Message};
    /// struct LinkTo(actor::Addr<B>);
    /// impl Message for LinkTo { type Reply = (); }
    /// struct Crash;
    /// impl Message for Crash { type Reply = (); }
    /// struct A;
    /// impl Actor for A {}
    /// impl Handler<LinkTo> for A {
    ///     async fn handle(&mut self, m: LinkTo, ctx: &mut Context<Self>) { ctx.link(&m.0); }
    /// }
    /// struct B;
    /// impl Actor for B {}
    /// impl Handler<Crash> for B {
    ///     async fn handle(&mut self, _: Crash, _: &mut Context<Self>) { panic!("crash") }
    /// }
    /// let (a, b) = (actor::spawn(A), actor::spawn(B));
    /// a.ask_blocking(LinkTo(b.clone())).unwrap();
    /// b.tell(Crash).unwrap();
    /// assert!(matches!(a.wait_blocking(), StopReason::Linked { .. }));
    /// ```
    pub fn link<B: Actor>(&mut self, other: &Addr<B>) {
        let me: Arc<dyn Signals> = self.arc();
        monitor::link(&me, other.signals());
    }

    /// Removes a link made with [`link`](Context::link).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// # struct B; impl Actor for B {}
    /// struct Toggle(actor::Addr<B>);
    /// impl Message for Toggle { type Reply = (); }
    /// struct A;
    /// impl Actor for A {}
    /// impl Handler<Toggle> for A {
    ///     async fn handle(&mut self, m: Toggle, ctx: &mut Context<Self>) {
    ///         ctx.link(&m.0);
    ///         ctx.unlink(&m.0);
    ///     }
    /// }
    /// actor::spawn(A).ask_blocking(Toggle(actor::spawn(B))).unwrap();
    /// ```
    pub fn unlink<B: Actor>(&mut self, other: &Addr<B>) {
        let other = other.signals();
        other.unlink(self.id());
        Signals::unlink(self.cell(), other.id());
    }

    /// With `true`, an abnormal stop of a linked actor no longer stops this one; it
    /// arrives as a [`Down`] message with `link: true` instead (Erlang's `trap_exit`).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, Down};
    /// # use tutti::msg::{Handler, Message};
    /// struct Trapper;
    /// impl Actor for Trapper {
    ///     fn started(&mut self, ctx: &mut Context<Self>) { ctx.trap_exits(true); }
    /// }
    /// impl Handler<Down> for Trapper {
    ///     async fn handle(&mut self, d: Down, _: &mut Context<Self>) { assert!(d.link); }
    /// }
    /// let _t = actor::spawn(Trapper);
    /// ```
    pub fn trap_exits(&mut self, trap: bool)
    where
        A: Handler<Down>,
    {
        lock(&self.cell().aux().inner).trap = trap.then_some(down_envelope::<A> as fn(Down) -> _);
    }

    /// Spawns an actor in this actor's system (the same as [`actor::spawn`](crate::actor::spawn)
    /// from a handler).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// struct Child;
    /// impl Actor for Child {}
    /// struct MakeChild;
    /// impl Message for MakeChild { type Reply = actor::Addr<Child>; }
    /// struct Parent;
    /// impl Actor for Parent {}
    /// impl Handler<MakeChild> for Parent {
    ///     async fn handle(&mut self, _: MakeChild, ctx: &mut Context<Self>) -> actor::Addr<Child> {
    ///         ctx.spawn(Child)
    ///     }
    /// }
    /// let child = actor::spawn(Parent).ask_blocking(MakeChild).unwrap();
    /// assert!(!child.is_stopped());
    /// ```
    pub fn spawn<B: Actor>(&self, actor: B) -> Addr<B> {
        self.system().spawn(actor)
    }

    /// The system this actor belongs to.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, ActorSystem};
    /// # use tutti::msg::{Handler, Message};
    /// struct Live;
    /// impl Message for Live { type Reply = usize; }
    /// struct A;
    /// impl Actor for A {}
    /// impl Handler<Live> for A {
    ///     async fn handle(&mut self, _: Live, ctx: &mut Context<Self>) -> usize { ctx.system().live() }
    /// }
    /// let sys = ActorSystem::new();
    /// assert_eq!(sys.spawn(A).ask_blocking(Live).unwrap(), 1);
    /// ```
    pub fn system(&self) -> ActorSystem {
        ActorSystem::from_inner(Arc::clone(&self.cell().system))
    }
}

fn down_envelope<A: Handler<Down>>(d: Down) -> Envelope<A> {
    Envelope::new(d)
}

impl<A: Actor> fmt::Debug for Context<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id())
            .field("stopping", &self.stopping())
            .finish_non_exhaustive()
    }
}
