//! The [`Actor`] trait with its lifecycle hooks, actor identities and stop reasons.

use std::fmt;
use std::time::Duration;

use super::Context;
use crate::loom::{unmodelled, Ordering};

/// State plus handlers: the type an actor is made of.
///
/// Implement [`Handler<M>`](crate::msg::Handler) for every message type the actor
/// accepts, and [`spawn`](crate::actor::spawn) it. The hooks have empty defaults.
///
/// ```
/// use tutti::actor::{self, Actor, Context, StopReason};
/// use tutti::msg::{Handler, Message};
///
/// struct Greet(&'static str);
/// impl Message for Greet { type Reply = String; }
///
/// struct Greeter { greeted: usize }
/// impl Actor for Greeter {
///     fn started(&mut self, ctx: &mut Context<Self>) {
///         assert!(ctx.id().as_u64() > 0);
///     }
///     fn stopped(&mut self, reason: &StopReason) {
///         assert_eq!(*reason, StopReason::Requested);
///     }
/// }
/// impl Handler<Greet> for Greeter {
///     async fn handle(&mut self, m: Greet, _: &mut Context<Self>) -> String {
///         self.greeted += 1;
///         format!("hello, {} (#{})", m.0, self.greeted)
///     }
/// }
///
/// let addr = actor::spawn(Greeter { greeted: 0 });
/// assert_eq!(addr.ask_blocking(Greet("tutti")).unwrap(), "hello, tutti (#1)");
/// addr.stop();
/// assert_eq!(addr.wait_blocking(), StopReason::Requested);
/// ```
pub trait Actor: Send + Sized + 'static {
    /// Runs once, in the actor's task, before the first message is handled — also when
    /// the actor was asked to stop before it got to run (the hooks always come in
    /// pairs).
    fn started(&mut self, ctx: &mut Context<Self>) {
        let _ = ctx;
    }

    /// Runs once when the actor stops for any reason (always after `started`), after its
    /// mailbox was closed and the messages left in it were dropped (their askers get
    /// [`AskError::Stopped`](crate::actor::AskError::Stopped)), before monitors and links
    /// are told. Also runs when the actor's runtime or system shuts down. A panic here is
    /// reported on stderr and does not change the stop reason.
    fn stopped(&mut self, reason: &StopReason) {
        let _ = reason;
    }

    /// A bounded mailbox with [`Overflow::DropOldest`](crate::actor::Overflow::DropOldest)
    /// discarded `count` messages since the last call. Runs before the next message is
    /// handled. The default reports nothing further (the total stays visible in
    /// [`Addr::dropped`](crate::actor::Addr::dropped)).
    fn messages_dropped(&mut self, count: u64, ctx: &mut Context<Self>) {
        let _ = (count, ctx);
    }
}

/// The identity of one actor, unique within the process for its whole life.
///
/// Later, when the world spans processes, ids will carry the rank in their high bits
/// so they stay unique world-wide.
///
/// ```
/// use tutti::actor::{self, Actor};
/// struct Idle;
/// impl Actor for Idle {}
/// let (a, b) = (actor::spawn(Idle), actor::spawn(Idle));
/// assert_ne!(a.id(), b.id());
/// assert!(a.id().to_string().starts_with("actor#"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActorId(u64);

impl ActorId {
    pub(crate) fn next() -> ActorId {
        static NEXT: unmodelled::AtomicU64 = unmodelled::AtomicU64::new(1);
        ActorId(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The id as a number.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor};
    /// # struct Idle; impl Actor for Idle {}
    /// assert!(actor::spawn(Idle).id().as_u64() >= 1);
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "actor#{}", self.0)
    }
}

/// Why an actor stopped.
///
/// `Normal`, `Requested`, `NoAddrs` and `Shutdown` are normal ends; the others are
/// **abnormal** ([`is_abnormal`](StopReason::is_abnormal)) and propagate over links.
///
/// ```
/// use tutti::actor::StopReason;
/// assert!(!StopReason::Normal.is_abnormal());
/// assert!(StopReason::Panicked("boom".into()).is_abnormal());
/// assert_eq!(StopReason::Panicked("boom".into()).to_string(), "panicked: boom");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The actor called [`Context::stop`].
    Normal,
    /// Someone called [`Addr::stop`](crate::actor::Addr::stop).
    Requested,
    /// No address to the actor remained and its mailbox was empty.
    NoAddrs,
    /// Its [`ActorSystem`](crate::actor::ActorSystem) or runtime shut down.
    Shutdown,
    /// A handler or the `started` hook panicked; the panic message.
    Panicked(String),
    /// A linked actor stopped abnormally (and this actor does not trap exits).
    Linked {
        /// The linked actor.
        id: ActorId,
        /// Why it stopped.
        reason: Box<StopReason>,
    },
    /// A supervisor gave up: a child needed more restarts than its intensity allows.
    RestartLimit {
        /// The child's name in the supervisor.
        child: String,
        /// Restarts allowed within `window`.
        max_restarts: usize,
        /// The intensity window.
        window: Duration,
    },
    /// The actor stopped itself with a failure of its own
    /// ([`Context::stop_with`]).
    Failed(String),
}

impl StopReason {
    /// True for reasons that propagate over links and make supervisors of transient
    /// children restart them.
    ///
    /// ```
    /// use tutti::actor::StopReason;
    /// assert!(StopReason::Failed("disk full".into()).is_abnormal());
    /// assert!(!StopReason::Shutdown.is_abnormal());
    /// ```
    pub fn is_abnormal(&self) -> bool {
        matches!(
            self,
            StopReason::Panicked(_)
                | StopReason::Linked { .. }
                | StopReason::RestartLimit { .. }
                | StopReason::Failed(_)
        )
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Normal => f.write_str("stopped itself"),
            StopReason::Requested => f.write_str("stop requested"),
            StopReason::NoAddrs => f.write_str("no address left"),
            StopReason::Shutdown => f.write_str("shut down"),
            StopReason::Panicked(m) => write!(f, "panicked: {m}"),
            StopReason::Linked { id, reason } => write!(f, "linked {id} stopped ({reason})"),
            StopReason::RestartLimit {
                child,
                max_restarts,
                window,
            } => write!(
                f,
                "child {child:?} needed more than {max_restarts} restarts within {window:?}"
            ),
            StopReason::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

/// Best-effort text of a panic payload.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}
