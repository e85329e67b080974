//! Monitors across nodes: a local actor is told ([`RemoteDown`]) when an
//! exported actor of any location stops, when that actor's node leaves, or
//! when its process dies — whichever comes first, once.
//!
//! The watching node keeps its monitors (`Inner::watches`, by monitor id) and
//! sends the actor's node a `Monitor`; that node records the watcher with the
//! export and sends `Down` from the actor's stop sequence (or at once if the
//! actor is not running). The watching node itself fires the monitors of a
//! node that leaves (on its `Leaving`) or whose rank dies (the world's death
//! watch). Whoever removes a monitor from `watches` fires it, so a monitor
//! fires at most once; removing is also how [`RemoteMonitor::cancel`] wins.

use crate::loom::Ordering;
use std::fmt;
use std::sync::{Arc, Weak};

use super::node::{lock, Inner};
use super::protocol::Control;
use super::{Node, RemoteAddr, RemoteError, RemoteRef};
use crate::actor::{Actor, Addr};
use crate::msg::{Handler, Message};
use crate::world::LocationId;

/// A monitored remote actor is gone ([`Node::monitor`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteDown {
    /// The monitored actor, as data (its location, id and type).
    pub actor: RemoteRef,
    /// Why: [`RemoteError::Stopped`] (the actor stopped, or was not running when
    /// the monitor arrived), [`RemoteError::NodeLeft`] (its node left) or
    /// [`RemoteError::RankDied`] (its process died).
    pub reason: RemoteError,
    /// The details: the actor's stop reason, or what happened to its node.
    pub detail: String,
}

impl Message for RemoteDown {
    type Reply = ();
}

impl fmt::Display for RemoteDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "actor {} at {} is down: {} ({})",
            self.actor.actor_id(),
            self.actor.location(),
            self.reason,
            self.detail
        )
    }
}

/// A monitor set up by [`Node::monitor`]; [`cancel`](RemoteMonitor::cancel) it
/// to stop monitoring. Dropping it keeps the monitor.
#[derive(Debug)]
pub struct RemoteMonitor {
    node: Weak<Inner>,
    watch: u64,
}

impl RemoteMonitor {
    /// Stops monitoring: no [`RemoteDown`] is sent for this monitor after
    /// `cancel` returns, and the actor's node forgets it.
    pub fn cancel(self) {
        let Some(inner) = self.node.upgrade() else {
            return;
        };
        let removed = lock(&inner.watches).remove(&self.watch);
        if let Some(w) = removed {
            let c = Control::Demonitor {
                actor: w.target.actor_id(),
                watch: self.watch,
            };
            if inner.control(w.target.location(), &c, false).is_ok() {
                inner.flush();
            }
        }
    }
}

/// One monitor of the watching node.
pub(super) struct Watch {
    target: RemoteRef,
    sink: Box<dyn Fn(RemoteDown) + Send + Sync>,
}

impl Node {
    /// Makes `watcher` (a local actor) receive one [`RemoteDown`] when the actor
    /// at `target` stops, its node leaves or its process dies. If it is already
    /// gone, the notice comes at once. A failure that cannot be answered by the
    /// actor's node is reported by this one: a monitor never waits for ever.
    ///
    /// ```
    /// use tutti::actor::{self, Actor, Context};
    /// use tutti::msg::{Dispatch, Handler};
    /// use tutti::remote::{Node, RemoteDown, RemoteError};
    /// use tutti::world::World;
    ///
    /// struct Worker;
    /// impl Actor for Worker {}
    /// struct Watcher(std::sync::mpsc::Sender<RemoteDown>);
    /// impl Actor for Watcher {}
    /// impl Handler<RemoteDown> for Watcher {
    ///     async fn handle(&mut self, d: RemoteDown, _: &mut Context<Self>) {
    ///         self.0.send(d).unwrap();
    ///     }
    /// }
    ///
    /// let world = World::builder().locations(2).workers(2).build().unwrap();
    /// world.run(|loc| async move {
    ///     let node = Node::join(loc);
    ///     let worker = (node.id().index() == 1).then(|| actor::spawn(Worker));
    ///     if let Some(w) = &worker {
    ///         let remote = node.export(w, Dispatch::new());
    ///         node.register("worker", &remote).await.unwrap();
    ///     }
    ///     node.barrier().await;
    ///     if node.id().index() == 0 {
    ///         let (tx, rx) = std::sync::mpsc::channel();
    ///         let watcher = actor::spawn(Watcher(tx));
    ///         let target = node.lookup::<Worker>("worker").await.unwrap();
    ///         node.monitor(&target, &watcher);
    ///         node.barrier().await; // watched before it stops
    ///         node.barrier().await; // stopped
    ///         let d = loop {
    ///             match rx.try_recv() {
    ///                 Ok(d) => break d,
    ///                 Err(_) => tutti::sleep(std::time::Duration::from_millis(1)).await,
    ///             }
    ///         };
    ///         assert_eq!(d.reason, RemoteError::Stopped);
    ///     } else {
    ///         node.barrier().await;
    ///         worker.unwrap().stop();
    ///         node.barrier().await;
    ///     }
    ///     node.barrier().await;
    ///     node.leave().await;
    /// });
    /// ```
    pub fn monitor<A: Actor, W: Actor + Handler<RemoteDown>>(
        &self,
        target: &RemoteAddr<A>,
        watcher: &Addr<W>,
    ) -> RemoteMonitor {
        let weak = watcher.downgrade();
        self.inner.watch(
            target.to_ref(),
            Box::new(move |d| {
                if let Some(w) = weak.upgrade() {
                    // A watcher that stopped meanwhile needs no notice.
                    let _ = w.tell(d);
                }
            }),
        )
    }

    /// Makes a [`RemoteRef`] (received in a message) an address, checking that
    /// it names an actor of type `A` at a location of this world.
    pub fn resolve<A: Actor>(&self, r: &RemoteRef) -> Result<RemoteAddr<A>, RemoteError> {
        if r.location().index() >= self.inner.locations {
            return Err(RemoteError::BadRef(format!(
                "{} is not a location of this world of {}",
                r.location(),
                self.inner.locations
            )));
        }
        if r.type_name() != std::any::type_name::<A>() {
            return Err(RemoteError::BadRef(format!(
                "actor {} at {} is a `{}`, not a `{}`",
                r.actor_id(),
                r.location(),
                r.type_name(),
                std::any::type_name::<A>()
            )));
        }
        Ok(RemoteAddr::new(
            &self.inner,
            r.location(),
            r.actor_id(),
            r.window_raw(),
        ))
    }
}

impl Inner {
    /// Records a monitor of `target` and asks its node to watch it.
    fn watch(
        self: &Arc<Self>,
        target: RemoteRef,
        sink: Box<dyn Fn(RemoteDown) + Send + Sync>,
    ) -> RemoteMonitor {
        let watch = self.next_watch.fetch_add(1, Ordering::Relaxed) + 1;
        let (at, actor) = (target.location(), target.actor_id());
        lock(&self.watches).insert(watch, Watch { target, sink });
        match self.control(at, &Control::Monitor { actor, watch }, false) {
            Ok(()) => self.flush(),
            Err(e) => {
                let detail = format!("it could not be watched: {e}");
                self.fire(watch, e, detail);
            }
        }
        RemoteMonitor {
            node: Arc::downgrade(self),
            watch,
        }
    }

    /// Fires monitor `watch` if it is still recorded (whoever removes it fires).
    fn fire(&self, watch: u64, reason: RemoteError, detail: String) {
        let w = lock(&self.watches).remove(&watch);
        if let Some(w) = w {
            (w.sink)(RemoteDown {
                actor: w.target,
                reason,
                detail,
            });
        }
    }

    /// Fires every monitor of an actor at `at` (its node left or died).
    pub(super) fn fire_location(&self, at: LocationId, reason: RemoteError, detail: &str) {
        let ids: Vec<u64> = lock(&self.watches)
            .iter()
            .filter(|(_, w)| w.target.location() == at)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.fire(id, reason.clone(), detail.to_string());
        }
    }

    /// Forgets every monitor without a notice (this node ends).
    pub(super) fn drop_watches(&self) {
        let all = std::mem::take(&mut *lock(&self.watches));
        drop(all);
    }

    /// At the actor's node: `from` monitors `actor` (monitor `watch` there).
    pub(super) fn on_monitor(&self, from: LocationId, actor: u64, watch: u64) {
        {
            let mut exports = lock(&self.exports);
            if let Some(e) = exports.get_mut(&actor) {
                e.watchers.push((from, watch));
                return;
            }
        }
        let c = Control::Down {
            actor,
            watch,
            why: format!("no running actor {actor} at {}", self.id),
        };
        if self.control(from, &c, false).is_ok() {
            self.flush();
        }
    }

    /// At the actor's node: `from` no longer monitors `actor`.
    pub(super) fn on_demonitor(&self, from: LocationId, actor: u64, watch: u64) {
        if let Some(e) = lock(&self.exports).get_mut(&actor) {
            e.watchers.retain(|w| *w != (from, watch));
        }
    }

    /// At the actor's node: exported `actor` stopped; tell its watchers.
    pub(super) fn tell_watchers(&self, actor: u64, watchers: &[(LocationId, u64)], why: &str) {
        for &(to, watch) in watchers {
            let c = Control::Down {
                actor,
                watch,
                why: why.to_string(),
            };
            // A watcher's node that left has fired its monitors itself.
            let _ = self.control(to, &c, false);
        }
        if !watchers.is_empty() {
            self.flush();
        }
    }

    /// At the watching node: `from` says that `actor` stopped.
    pub(super) fn on_down(&self, from: LocationId, actor: u64, watch: u64, why: String) {
        let matches = lock(&self.watches)
            .get(&watch)
            .is_some_and(|w| w.target.location() == from && w.target.actor_id() == actor);
        if matches {
            self.fire(watch, RemoteError::Stopped, why);
        }
    }
}
