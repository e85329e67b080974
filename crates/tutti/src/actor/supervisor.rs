//! Supervisors (Erlang/OTP): an actor that starts children from factories, monitors
//! them and restarts them when they stop.
//!
//! * **Strategy** — [`Strategy::OneForOne`] restarts only the child that stopped;
//!   [`Strategy::OneForAll`] stops the other children (and waits until they have
//!   stopped), then restarts all of them in order.
//! * **Restart policy per child** — [`Restart::Permanent`] (always, the default),
//!   [`Restart::Transient`] (only after an abnormal stop), [`Restart::Temporary`] (never).
//!   A child stopped by a shutdown is never restarted.
//! * **Intensity** — at most `max_restarts` restarts within `window`; one more and the
//!   supervisor gives up: it stops all children, waits for them, and stops itself with
//!   [`StopReason::RestartLimit`] (abnormal, so it propagates to its own supervisor or
//!   links).
//! * **Backoff** — before a restart the supervisor waits `min · 2^(n-1)`, capped at
//!   `max`, where `n` is the number of restarts in the current window (no wait if `min`
//!   is zero). Meanwhile other down notices queue.
//!
//! A restarted child is a new actor with a new id and a new address: ask the supervisor
//! for the current one with [`Child`], or let the child register a name in its
//! `started` hook. When the supervisor stops, it stops its children.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::{Duration, Instant};

use super::{Actor, ActorId, Addr, Builder, Context, Down, Overflow, StopReason};
use crate::msg::{Handler, Message};

/// Which children a supervisor restarts when one stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Restart only the child that stopped.
    #[default]
    OneForOne,
    /// Stop the others too, then restart all children in order.
    OneForAll,
}

/// When a child is restarted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Restart {
    /// Whenever it stops (except in a shutdown).
    #[default]
    Permanent,
    /// Only when it stops abnormally ([`StopReason::is_abnormal`]).
    Transient,
    /// Never.
    Temporary,
}

/// A started child, whatever its type.
trait RunningChild: Send + Sync {
    fn id(&self) -> ActorId;
    fn stop(&self);
    fn wait(&self) -> Pin<Box<dyn Future<Output = StopReason> + Send + '_>>;
    fn addr(&self) -> &(dyn Any + Send + Sync);
}

impl<A: Actor> RunningChild for Addr<A> {
    fn id(&self) -> ActorId {
        Addr::id(self)
    }
    fn stop(&self) {
        Addr::stop(self);
    }
    fn wait(&self) -> Pin<Box<dyn Future<Output = StopReason> + Send + '_>> {
        Box::pin(Addr::wait(self))
    }
    fn addr(&self) -> &(dyn Any + Send + Sync) {
        self
    }
}

type StartFn = Box<dyn Fn(&mut Context<Supervisor>) -> Box<dyn RunningChild> + Send>;
/// Makes the start function of a child, given its mailbox bound.
type Factory = Box<dyn Fn(Option<(usize, Overflow)>) -> StartFn + Send>;

/// How to start (and restart) one child: a name, a factory, a restart policy.
///
/// ```
/// use tutti::actor::{Actor, ChildSpec, Overflow, Restart};
/// struct Worker;
/// impl Actor for Worker {}
/// let spec = ChildSpec::new("worker", || Worker)
///     .restart(Restart::Transient)
///     .bounded(64, Overflow::Block);
/// assert_eq!(spec.name(), "worker");
/// ```
pub struct ChildSpec {
    name: String,
    restart: Restart,
    bounded: Option<(usize, Overflow)>,
    factory: Factory,
}

impl ChildSpec {
    /// A child called `name` (unique within its supervisor), made by `factory` at every
    /// (re)start.
    pub fn new<A, F>(name: impl Into<String>, factory: F) -> ChildSpec
    where
        A: Actor,
        F: Fn() -> A + Send + Sync + Clone + 'static,
    {
        ChildSpec {
            name: name.into(),
            restart: Restart::Permanent,
            bounded: None,
            factory: Box::new(move |bounded| {
                let factory = factory.clone();
                Box::new(move |ctx: &mut Context<Supervisor>| {
                    let mut b = Builder::new().system(&ctx.system());
                    if let Some((cap, policy)) = bounded {
                        b = b.bounded(cap, policy);
                    }
                    let addr = b.spawn(factory());
                    ctx.monitor(&addr);
                    Box::new(addr) as Box<dyn RunningChild>
                })
            }),
        }
    }

    /// The restart policy (default [`Restart::Permanent`]).
    pub fn restart(mut self, restart: Restart) -> ChildSpec {
        self.restart = restart;
        self
    }

    /// Gives the child a bounded mailbox.
    pub fn bounded(mut self, capacity: usize, overflow: Overflow) -> ChildSpec {
        self.bounded = Some((capacity, overflow));
        self
    }

    /// The child's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("name", &self.name)
            .field("restart", &self.restart)
            .finish_non_exhaustive()
    }
}

struct ChildSlot {
    name: String,
    restart: Restart,
    start: StartFn,
    running: Option<Box<dyn RunningChild>>,
    restarts: usize,
}

/// An actor that supervises children; build one with [`Supervisor::builder`].
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tutti::actor::{self, Actor, Child, Context, Stats, Supervisor};
/// use tutti::msg::{Handler, Message};
///
/// struct Crash;
/// impl Message for Crash { type Reply = (); }
/// struct Worker(Arc<Mutex<usize>>);
/// impl Actor for Worker {
///     fn started(&mut self, _: &mut Context<Self>) { *self.0.lock().unwrap() += 1; }
/// }
/// impl Handler<Crash> for Worker {
///     async fn handle(&mut self, _: Crash, _: &mut Context<Self>) { panic!("injected") }
/// }
///
/// let starts = Arc::new(Mutex::new(0));
/// let s = starts.clone();
/// let sup = Supervisor::builder()
///     .child("worker", move || Worker(s.clone()))
///     .spawn();
/// let w = sup.ask_blocking(Child::<Worker>::named("worker")).unwrap().unwrap();
/// w.tell(Crash).unwrap();
/// w.wait_blocking();
/// // The supervisor restarts it; wait for the new incarnation.
/// while sup.ask_blocking(Stats).unwrap().restarts < 1 { std::thread::yield_now(); }
/// let w2 = sup.ask_blocking(Child::<Worker>::named("worker")).unwrap().unwrap();
/// assert_ne!(w.id(), w2.id());
/// // It runs its `started` hook in its own task, shortly.
/// while *starts.lock().unwrap() < 2 { std::thread::yield_now(); }
/// assert_eq!(*starts.lock().unwrap(), 2);
/// ```
pub struct Supervisor {
    strategy: Strategy,
    max_restarts: usize,
    window: Duration,
    backoff: (Duration, Duration),
    children: Vec<ChildSlot>,
    /// Restart times within the current window.
    recent: VecDeque<Instant>,
    restarts: usize,
}

impl Supervisor {
    /// A builder: one-for-one, at most 3 restarts in 5 seconds, no backoff, no children.
    pub fn builder() -> SupervisorBuilder {
        SupervisorBuilder {
            strategy: Strategy::OneForOne,
            max_restarts: 3,
            window: Duration::from_secs(5),
            backoff: (Duration::ZERO, Duration::ZERO),
            specs: Vec::new(),
            system: None,
        }
    }

    fn start(&mut self, i: usize, ctx: &mut Context<Self>) {
        let running = (self.children[i].start)(ctx);
        self.children[i].running = Some(running);
    }

    /// Stops every running child and waits until all have stopped.
    async fn stop_all(&mut self, except: Option<usize>) {
        for (i, c) in self.children.iter().enumerate() {
            if Some(i) != except {
                if let Some(r) = &c.running {
                    r.stop();
                }
            }
        }
        for (i, c) in self.children.iter_mut().enumerate() {
            if Some(i) != except {
                if let Some(r) = c.running.take() {
                    r.wait().await;
                }
            }
        }
    }

    /// Counts a restart; false if it exceeds the intensity.
    fn admit_restart(&mut self) -> bool {
        let now = Instant::now();
        while let Some(&t) = self.recent.front() {
            if now.duration_since(t) > self.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        self.recent.push_back(now);
        self.recent.len() <= self.max_restarts
    }

    fn backoff_delay(&self) -> Duration {
        let (min, max) = self.backoff;
        if min.is_zero() {
            return Duration::ZERO;
        }
        let n = self.recent.len().saturating_sub(1).min(30) as u32;
        min.saturating_mul(1 << n).min(max.max(min))
    }
}

impl Actor for Supervisor {
    fn started(&mut self, ctx: &mut Context<Self>) {
        for i in 0..self.children.len() {
            self.start(i, ctx);
        }
    }

    fn stopped(&mut self, _reason: &StopReason) {
        for c in &self.children {
            if let Some(r) = &c.running {
                r.stop();
            }
        }
    }
}

impl Handler<Down> for Supervisor {
    async fn handle(&mut self, down: Down, ctx: &mut Context<Self>) {
        let Some(i) = self
            .children
            .iter()
            .position(|c| c.running.as_ref().is_some_and(|r| r.id() == down.id))
        else {
            return; // an earlier incarnation, or not ours
        };
        self.children[i].running = None;
        let wanted = match self.children[i].restart {
            Restart::Permanent => down.reason != StopReason::Shutdown,
            Restart::Transient => down.reason.is_abnormal(),
            Restart::Temporary => false,
        };
        if !wanted {
            return;
        }
        if !self.admit_restart() {
            self.stop_all(None).await;
            ctx.stop_with(StopReason::RestartLimit {
                child: self.children[i].name.clone(),
                max_restarts: self.max_restarts,
                window: self.window,
            });
            return;
        }
        let delay = self.backoff_delay();
        if !delay.is_zero() {
            crate::runtime::sleep(delay).await;
        }
        self.restarts += 1;
        self.children[i].restarts += 1;
        match self.strategy {
            Strategy::OneForOne => self.start(i, ctx),
            Strategy::OneForAll => {
                self.stop_all(Some(i)).await;
                for j in 0..self.children.len() {
                    if j == i || self.children[j].restart != Restart::Temporary {
                        self.start(j, ctx);
                    }
                }
            }
        }
    }
}

/// Asks a [`Supervisor`] for the current address of its child `name`, if that child is
/// running and is an `A`.
///
/// ```
/// # use tutti::actor::{Actor, Child, Supervisor};
/// struct W;
/// impl Actor for W {}
/// let sup = Supervisor::builder().child("w", || W).spawn();
/// assert!(sup.ask_blocking(Child::<W>::named("w")).unwrap().is_some());
/// assert!(sup.ask_blocking(Child::<W>::named("x")).unwrap().is_none());
/// ```
pub struct Child<A> {
    name: String,
    _actor: PhantomData<fn() -> A>,
}

impl<A> Child<A> {
    /// The question for child `name`.
    pub fn named(name: impl Into<String>) -> Self {
        Child {
            name: name.into(),
            _actor: PhantomData,
        }
    }
}

impl<A> fmt::Debug for Child<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Child").field(&self.name).finish()
    }
}

impl<A: Actor> Message for Child<A> {
    type Reply = Option<Addr<A>>;
}

impl<A: Actor> Handler<Child<A>> for Supervisor {
    async fn handle(&mut self, q: Child<A>, _: &mut Context<Self>) -> Option<Addr<A>> {
        self.children
            .iter()
            .find(|c| c.name == q.name)
            .and_then(|c| c.running.as_ref())
            .and_then(|r| r.addr().downcast_ref::<Addr<A>>().cloned())
    }
}

/// Asks a [`Supervisor`] for its restart counts.
///
/// ```
/// # use tutti::actor::{Actor, Stats, Supervisor};
/// # struct W; impl Actor for W {}
/// let sup = Supervisor::builder().child("w", || W).spawn();
/// let stats = sup.ask_blocking(Stats).unwrap();
/// assert_eq!((stats.restarts, stats.children.len()), (0, 1));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Stats;

impl Message for Stats {
    type Reply = SupervisorStats;
}

/// The reply to [`Stats`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupervisorStats {
    /// Restart events so far (a one-for-all restart counts once).
    pub restarts: usize,
    /// Per child: name, current id (if running), times restarted.
    pub children: Vec<(String, Option<ActorId>, usize)>,
}

impl Handler<Stats> for Supervisor {
    async fn handle(&mut self, _: Stats, _: &mut Context<Self>) -> SupervisorStats {
        SupervisorStats {
            restarts: self.restarts,
            children: self
                .children
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        c.running.as_ref().map(|r| r.id()),
                        c.restarts,
                    )
                })
                .collect(),
        }
    }
}

impl fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("strategy", &self.strategy)
            .field("children", &self.children.len())
            .field("restarts", &self.restarts)
            .finish()
    }
}

/// Configures a [`Supervisor`]; see its documentation.
///
/// ```
/// use std::time::Duration;
/// use tutti::actor::{Actor, Restart, Strategy, Supervisor, ChildSpec};
/// struct Db;
/// impl Actor for Db {}
/// struct Cache;
/// impl Actor for Cache {}
/// let sup = Supervisor::builder()
///     .strategy(Strategy::OneForAll)
///     .intensity(5, Duration::from_secs(10))
///     .backoff(Duration::from_millis(1), Duration::from_millis(100))
///     .child("db", || Db)
///     .child_spec(ChildSpec::new("cache", || Cache).restart(Restart::Transient))
///     .spawn();
/// # drop(sup);
/// ```
pub struct SupervisorBuilder {
    strategy: Strategy,
    max_restarts: usize,
    window: Duration,
    backoff: (Duration, Duration),
    specs: Vec<ChildSpec>,
    system: Option<super::ActorSystem>,
}

impl SupervisorBuilder {
    /// The restart strategy (default one-for-one).
    pub fn strategy(mut self, s: Strategy) -> Self {
        self.strategy = s;
        self
    }

    /// At most `max_restarts` restarts within `window` (default 3 in 5 s).
    pub fn intensity(mut self, max_restarts: usize, window: Duration) -> Self {
        self.max_restarts = max_restarts;
        self.window = window;
        self
    }

    /// Exponential backoff before restarts, from `min` up to `max` (default none).
    pub fn backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff = (min, max);
        self
    }

    /// Adds a permanent child with an unbounded mailbox, made by `factory`.
    pub fn child<A, F>(self, name: impl Into<String>, factory: F) -> Self
    where
        A: Actor,
        F: Fn() -> A + Send + Sync + Clone + 'static,
    {
        self.child_spec(ChildSpec::new(name, factory))
    }

    /// Adds a child described by `spec`. Children start in the order they were added.
    pub fn child_spec(mut self, spec: ChildSpec) -> Self {
        self.specs.push(spec);
        self
    }

    /// Spawns the supervisor (and its children) into `system` instead of the current one.
    pub fn system(mut self, system: &super::ActorSystem) -> Self {
        self.system = Some(system.clone());
        self
    }

    /// Spawns the supervisor; it starts its children before handling any message.
    #[must_use = "the supervisor (and its children) stop when no Addr to it remains"]
    pub fn spawn(self) -> Addr<Supervisor> {
        let sup = Supervisor {
            strategy: self.strategy,
            max_restarts: self.max_restarts,
            window: self.window,
            backoff: self.backoff,
            children: self
                .specs
                .into_iter()
                .map(|s| ChildSlot {
                    start: (s.factory)(s.bounded),
                    name: s.name,
                    restart: s.restart,
                    running: None,
                    restarts: 0,
                })
                .collect(),
            recent: VecDeque::new(),
            restarts: 0,
        };
        let mut b = Builder::new();
        if let Some(s) = &self.system {
            b = b.system(s);
        }
        b.spawn(sup)
    }
}

impl fmt::Debug for SupervisorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorBuilder")
            .field("strategy", &self.strategy)
            .field("children", &self.specs.len())
            .finish_non_exhaustive()
    }
}
