//! The error of every operation form: `tell`, `send`, `send_timeout`, `ask`,
//! `ask_timeout`, the registry. Errors that refuse a message give it back. Every
//! message starts with `tutti::actor:`, so that an actor's `SendError` is never taken
//! for a channel's (`tutti::csp:`) or the world's.

use std::fmt;
use std::sync::Arc;

use crate::diag::Deadlock;

use super::ActorId;
use super::Name;
use crate::msg::NoReply;

/// Why [`tell`](crate::actor::Addr::tell) did not queue a message (which it gives back).
///
/// ```
/// use tutti::actor::{self, Actor, TellError};
/// # use tutti::msg::{Handler, Message};
/// # struct Note(u8); impl Message for Note { type Reply = (); }
/// # struct Quiet; impl Actor for Quiet {}
/// # impl Handler<Note> for Quiet { async fn handle(&mut self, _: Note, _: &mut actor::Context<Self>) {} }
/// let addr = actor::spawn(Quiet);
/// addr.stop();
/// addr.wait_blocking();
/// match addr.tell(Note(1)) {
///     Err(TellError::Stopped(Note(n))) => assert_eq!(n, 1),
///     _ => unreachable!(),
/// }
/// ```
#[derive(PartialEq, Eq)]
pub enum TellError<M> {
    /// The actor has stopped.
    Stopped(M),
    /// Its bounded mailbox is full (policy `Block` or `Fail`).
    Full(M),
}

impl<M> TellError<M> {
    /// The message that was not queued.
    pub fn into_inner(self) -> M {
        match self {
            TellError::Stopped(m) | TellError::Full(m) => m,
        }
    }
}

/// Why [`send`](crate::actor::Addr::send) (or `send_blocking`) did not queue a message:
/// the actor stopped. The message is given back. Its message names the layer, unlike a
/// channel's [`csp::SendError`](crate::csp::SendError):
///
/// ```
/// let actor = tutti::actor::SendError("hello");
/// assert_eq!(actor.to_string(), "tutti::actor: the actor has stopped");
/// let channel = tutti::csp::SendError::Closed("hello");
/// assert!(channel.to_string().starts_with("tutti::csp: "));
/// ```
#[derive(PartialEq, Eq)]
pub struct SendError<M>(pub M);

/// Why [`send_timeout`](crate::actor::Addr::send_timeout) did not queue a message.
#[derive(PartialEq, Eq)]
pub enum SendTimeoutError<M> {
    /// The actor has stopped.
    Stopped(M),
    /// No room appeared before the deadline.
    Timeout(M),
}

/// Why an [`ask`](crate::actor::Addr::ask) got no reply.
///
/// ```
/// use tutti::actor::{self, Actor, AskError};
/// # use tutti::msg::{Handler, Message};
/// # struct Q; impl Message for Q { type Reply = (); }
/// # struct Gone; impl Actor for Gone {}
/// # impl Handler<Q> for Gone { async fn handle(&mut self, _: Q, _: &mut actor::Context<Self>) {} }
/// let addr = actor::spawn(Gone);
/// addr.stop();
/// assert_eq!(addr.ask_blocking(Q), Err(AskError::Stopped));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AskError {
    /// The actor stopped (or its handler panicked or was cancelled) before replying.
    Stopped,
    /// Its bounded mailbox (policy `Fail`) was full.
    Full,
    /// A full mailbox (policy `DropOldest`) discarded the question.
    Dropped,
    /// The ask was part of a deadlock (a cycle of asks or full mailboxes between actors,
    /// see [`crate::diag`]): the report names every participant and what it waits on.
    Deadlock(Arc<Deadlock>),
}

impl From<NoReply> for AskError {
    fn from(n: NoReply) -> Self {
        match n {
            NoReply::Dropped => AskError::Stopped,
            NoReply::Overflowed => AskError::Dropped,
        }
    }
}

/// Why [`ask_timeout`](crate::actor::Addr::ask_timeout) returned no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AskTimeoutError {
    /// The actor stopped (or its handler panicked) before replying.
    Stopped,
    /// Its bounded mailbox (policy `Fail`) was full.
    Full,
    /// A full mailbox (policy `DropOldest`) discarded the question.
    Dropped,
    /// No reply before the deadline (the handler may still run; its reply is dropped).
    Timeout,
    /// The ask was part of a deadlock (see [`AskError::Deadlock`]).
    Deadlock(Arc<Deadlock>),
}

impl From<AskError> for AskTimeoutError {
    fn from(e: AskError) -> Self {
        match e {
            AskError::Stopped => AskTimeoutError::Stopped,
            AskError::Full => AskTimeoutError::Full,
            AskError::Dropped => AskTimeoutError::Dropped,
            AskError::Deadlock(d) => AskTimeoutError::Deadlock(d),
        }
    }
}

/// Why [`lookup`](crate::actor::lookup) found no address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookupError {
    /// No actor is registered under the name.
    NotFound {
        /// The name looked up.
        name: Name,
    },
    /// An actor of another type is registered under the name.
    WrongType {
        /// The name looked up.
        name: Name,
        /// The actor type asked for.
        expected: &'static str,
        /// The type of the registered actor.
        found: &'static str,
    },
}

/// Why [`register`](crate::actor::register) did not register a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// Another actor holds the name.
    Taken {
        /// The name.
        name: Name,
        /// The actor holding it.
        by: ActorId,
    },
    /// The actor has stopped (names vanish with their actor).
    Stopped {
        /// The name.
        name: Name,
    },
}

macro_rules! msg_error_impls {
    ($t:ident, $($variant:ident => $text:literal),+) => {
        impl<M> fmt::Debug for $t<M> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($t::$variant(_) => write!(f, concat!(stringify!($t), "::", stringify!($variant), "(..)")),)+
                }
            }
        }
        impl<M> fmt::Display for $t<M> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($t::$variant(_) => f.write_str($text),)+
                }
            }
        }
        impl<M> std::error::Error for $t<M> {}
    };
}

msg_error_impls!(TellError,
    Stopped => "tutti::actor: the actor has stopped",
    Full => "tutti::actor: the actor's mailbox is full");
msg_error_impls!(SendTimeoutError,
    Stopped => "tutti::actor: the actor has stopped",
    Timeout => "tutti::actor: no room in the actor's mailbox before the deadline");

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tutti::actor: the actor has stopped")
    }
}

impl<M> std::error::Error for SendError<M> {}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AskError::Stopped => "tutti::actor: the actor stopped before replying",
            AskError::Full => "tutti::actor: the actor's mailbox is full",
            AskError::Dropped => "tutti::actor: the actor's full mailbox discarded the question",
            AskError::Deadlock(d) => return write!(f, "tutti::actor: the ask deadlocked\n{d}"),
        })
    }
}

impl std::error::Error for AskError {}

impl fmt::Display for AskTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskTimeoutError::Timeout => f.write_str("tutti::actor: no reply before the deadline"),
            AskTimeoutError::Stopped => AskError::Stopped.fmt(f),
            AskTimeoutError::Full => AskError::Full.fmt(f),
            AskTimeoutError::Dropped => AskError::Dropped.fmt(f),
            AskTimeoutError::Deadlock(d) => write!(f, "tutti::actor: the ask deadlocked\n{d}"),
        }
    }
}

impl std::error::Error for AskTimeoutError {}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::NotFound { name } => {
                write!(f, "tutti::actor: no actor is registered as {name:?}")
            }
            LookupError::WrongType {
                name,
                expected,
                found,
            } => write!(f, "tutti::actor: {name:?} is a {found}, not a {expected}"),
        }
    }
}

impl std::error::Error for LookupError {}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::Taken { name, by } => {
                write!(f, "tutti::actor: {name:?} is already registered by {by}")
            }
            RegisterError::Stopped { name } => {
                write!(
                    f,
                    "tutti::actor: cannot register {name:?}: the actor has stopped"
                )
            }
        }
    }
}

impl std::error::Error for RegisterError {}
