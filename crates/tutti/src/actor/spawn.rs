//! Spawning actors: [`spawn`] and the [`Builder`] for mailbox options, names and systems.

use std::sync::Arc;

use super::cell::Cell;
use super::monitor::Signals;
use super::run::ActorRun;
use super::system::ActorSystem;
use super::{registry, Actor, Addr, Name, Overflow, RegisterError, StopReason};

/// Starts `actor` as one task on the current runtime, with an unbounded mailbox, in the
/// current [`ActorSystem`] (the spawning actor's, else the global one).
///
/// The actor stops when it stops itself, when it is stopped, or when no [`Addr`] to it
/// remains and its mailbox is empty — so keep the address, or register a name.
///
/// ```
/// use tutti::actor::{self, Actor, Context};
/// use tutti::msg::{Handler, Message};
///
/// struct Add(u64);
/// impl Message for Add { type Reply = u64; }
/// #[derive(Default)]
/// struct Sum(u64);
/// impl Actor for Sum {}
/// impl Handler<Add> for Sum {
///     async fn handle(&mut self, m: Add, _: &mut Context<Self>) -> u64 { self.0 += m.0; self.0 }
/// }
///
/// let sum = actor::spawn(Sum::default());
/// for i in 1..=10 { sum.tell(Add(i)).unwrap(); }
/// assert_eq!(sum.ask_blocking(Add(0)).unwrap(), 55);
/// ```
#[must_use = "the actor stops as soon as no Addr to it remains"]
pub fn spawn<A: Actor>(actor: A) -> Addr<A> {
    Builder::new().spawn(actor)
}

/// Options for spawning an actor: mailbox bound and overflow policy, system.
///
/// ```
/// use tutti::actor::{self, Actor, Overflow};
/// struct Sink;
/// impl Actor for Sink {}
/// let sink = actor::Builder::new().bounded(16, Overflow::Fail).spawn(Sink);
/// assert_eq!(sink.capacity(), Some(16));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    bounded: Option<(usize, Overflow)>,
    system: Option<ActorSystem>,
}

impl Builder {
    /// Default options: unbounded mailbox, current system.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// A bounded mailbox holding at most `capacity` (≥ 1) queued messages, with `overflow`
    /// deciding what a full mailbox does.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Overflow};
    /// # struct A; impl Actor for A {}
    /// let a = actor::Builder::new().bounded(4, Overflow::Block).spawn(A);
    /// assert_eq!(a.capacity(), Some(4));
    /// ```
    pub fn bounded(mut self, capacity: usize, overflow: Overflow) -> Builder {
        self.bounded = Some((capacity.max(1), overflow));
        self
    }

    /// An unbounded mailbox (the default).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// assert_eq!(actor::Builder::new().unbounded().spawn(A).capacity(), None);
    /// ```
    pub fn unbounded(mut self) -> Builder {
        self.bounded = None;
        self
    }

    /// Spawns into `system` instead of the current one.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, ActorSystem};
    /// # struct A; impl Actor for A {}
    /// let s = ActorSystem::new();
    /// let _a = actor::Builder::new().system(&s).spawn(A);
    /// assert_eq!(s.live(), 1);
    /// ```
    pub fn system(mut self, system: &ActorSystem) -> Builder {
        self.system = Some(system.clone());
        self
    }

    /// Spawns the actor; see [`spawn`].
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct A; impl Actor for A {}
    /// let a = actor::Builder::new().spawn(A);
    /// assert!(!a.is_stopped());
    /// ```
    #[must_use = "the actor stops as soon as no Addr to it remains"]
    pub fn spawn<A: Actor>(self, actor: A) -> Addr<A> {
        let (cell, addr) = self.prepare(actor);
        start(cell);
        addr
    }

    /// Spawns the actor and registers it under `name` before it starts, so that
    /// [`lookup`](crate::actor::lookup) finds it from the start. If the name is taken
    /// the actor is not started (and dropped).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, RegisterError};
    /// struct Db;
    /// impl Actor for Db {}
    /// let db = actor::Builder::new().spawn_named("doc-db", Db).unwrap();
    /// assert_eq!(actor::lookup::<Db>("doc-db").unwrap().id(), db.id());
    /// assert!(matches!(actor::Builder::new().spawn_named("doc-db", Db),
    ///                  Err(RegisterError::Taken { .. })));
    /// ```
    pub fn spawn_named<A: Actor>(
        self,
        name: impl Into<Name>,
        actor: A,
    ) -> Result<Addr<A>, RegisterError> {
        let (cell, addr) = self.prepare(actor);
        registry::register(name, &addr)?;
        start(cell);
        Ok(addr)
    }

    fn prepare<A: Actor>(self, actor: A) -> (Arc<Cell<A>>, Addr<A>) {
        let system = match self.system {
            Some(s) => Arc::clone(s.inner()),
            None => Arc::clone(ActorSystem::current().inner()),
        };
        let cell = Cell::new(actor, self.bounded, system);
        let addr = Addr::from_counted(Arc::clone(&cell));
        (cell, addr)
    }
}

/// Joins the system and starts the task.
fn start<A: Actor>(cell: Arc<Cell<A>>) {
    let member: Arc<dyn Signals> = cell.clone();
    let (slot, closing) = cell.system.join(member);
    // SAFETY: the consumer (the task) does not exist yet; nobody else touches the
    // loop state.
    unsafe { (*cell.run_ptr()).slot = slot };
    if closing {
        cell.request_stop(StopReason::Shutdown);
    }
    // The task runs detached; the actor's cell is its only handle.
    drop(crate::runtime::spawn(ActorRun::new(cell)));
}
