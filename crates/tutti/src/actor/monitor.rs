//! Monitors and links (Erlang): how actors learn that other actors stopped.
//!
//! * A **monitor** is one-way: the watcher gets a [`Down`] message (on its priority lane,
//!   ahead of ordinary messages) when the target stops, for any reason — at once if the
//!   target had already stopped.
//! * A **link** is two-way: when either side stops *abnormally*, the other receives an
//!   exit signal, which stops it with [`StopReason::Linked`] — or, if it traps exits,
//!   arrives as a `Down` with `link: true`. Normal stops just remove the link.
//!
//! Both are recorded in the target's `aux` state under its lock, and the stopping actor
//! reads them after it has marked itself finished under the same lock: a registration
//! either lands before (and is notified by the stopping actor) or finds the actor
//! finished (and notifies itself). Neither keeps the other actor alive: the handles are
//! cell references, not addresses.

use std::fmt;
use std::sync::Arc;

use super::{ActorId, StopReason};
use crate::loom::{unmodelled, Ordering};
use crate::msg::Message;

/// An actor that was monitored (or linked, with `trap_exits`) has stopped.
///
/// Implement [`Handler<Down>`](crate::msg::Handler) to monitor; see
/// [`Context::monitor`](crate::actor::Context::monitor).
///
/// ```
/// use tutti::actor::{ActorId, Down, StopReason};
/// fn restart_if_crashed(d: &Down) -> bool { d.reason.is_abnormal() }
/// # let _ = restart_if_crashed;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    /// The actor that stopped.
    pub id: ActorId,
    /// Why it stopped.
    pub reason: StopReason,
    /// True for a trapped exit signal of a linked actor, false for a monitor.
    pub link: bool,
}

impl Message for Down {
    type Reply = ();
}

/// What an actor can be told about other actors' ends (type-erased over the actor).
pub(crate) trait Signals: Send + Sync {
    fn id(&self) -> ActorId;
    /// Stops the actor (interrupting a suspended handler); first request wins.
    fn request_stop(&self, reason: StopReason);
    /// A linked actor stopped abnormally.
    fn exit_signal(&self, from: ActorId, reason: &StopReason);
    /// Adds a watcher, or tells it at once if the actor has already stopped.
    fn watch(&self, monitor: u64, sink: Arc<dyn DownSink>);
    fn unwatch(&self, monitor: u64);
    /// Adds a link; returns the stop reason instead if the actor has already stopped.
    fn link(&self, other: Arc<dyn Signals>) -> Option<StopReason>;
    fn unlink(&self, other: ActorId);
}

/// An actor that handles [`Down`] messages (type-erased).
pub(crate) trait DownSink: Send + Sync {
    fn down(&self, down: Down);
}

/// A monitor set up by [`Context::monitor`](crate::actor::Context::monitor) or
/// [`Addr::monitor`](crate::actor::Addr::monitor); pass it to
/// [`Context::demonitor`](crate::actor::Context::demonitor) (or call
/// [`cancel`](MonitorRef::cancel)) to stop monitoring.
#[derive(Clone)]
pub struct MonitorRef {
    id: u64,
    target: Arc<dyn Signals>,
}

impl MonitorRef {
    /// The monitored actor.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, Down};
    /// # use tutti::msg::Handler;
    /// # struct W; impl Actor for W {}
    /// # impl Handler<Down> for W { async fn handle(&mut self, _: Down, _: &mut Context<Self>) {} }
    /// # struct T; impl Actor for T {}
    /// let (w, t) = (actor::spawn(W), actor::spawn(T));
    /// assert_eq!(t.monitor(&w).target(), t.id());
    /// ```
    pub fn target(&self) -> ActorId {
        self.target.id()
    }

    /// Stops monitoring.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context, Down};
    /// # use tutti::msg::Handler;
    /// # struct W; impl Actor for W {}
    /// # impl Handler<Down> for W { async fn handle(&mut self, _: Down, _: &mut Context<Self>) { panic!() } }
    /// # struct T; impl Actor for T {}
    /// let (w, t) = (actor::spawn(W), actor::spawn(T));
    /// t.monitor(&w).cancel();
    /// t.stop();
    /// ```
    pub fn cancel(self) {
        self.target.unwatch(self.id);
    }
}

impl fmt::Debug for MonitorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MonitorRef")
            .field("id", &self.id)
            .field("target", &self.target.id())
            .finish()
    }
}

/// Makes `sink` watch `target`.
pub(crate) fn watch(target: Arc<dyn Signals>, sink: Arc<dyn DownSink>) -> MonitorRef {
    static NEXT: unmodelled::AtomicU64 = unmodelled::AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    target.watch(id, sink);
    MonitorRef { id, target }
}

/// Links `me` (a running actor) with `other`.
pub(crate) fn link(me: &Arc<dyn Signals>, other: Arc<dyn Signals>) {
    if me.id() == other.id() {
        return;
    }
    match other.link(Arc::clone(me)) {
        Some(reason) => {
            if reason.is_abnormal() {
                me.exit_signal(other.id(), &reason);
            }
        }
        None => {
            if let Some(reason) = me.link(Arc::clone(&other)) {
                // We are stopping ourselves: undo, and tell the other side if abnormal.
                other.unlink(me.id());
                if reason.is_abnormal() {
                    other.exit_signal(me.id(), &reason);
                }
            }
        }
    }
}
