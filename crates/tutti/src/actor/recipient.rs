//! [`Recipient<M>`]: an address erased down to one message type.

use std::fmt;
use std::sync::Arc;

use super::addr::Ask;
use super::cell::Cell;
use super::mailbox::bounded::Refusal;
use super::{Actor, ActorId, AskError, TellError};
use crate::msg::{Envelope, Handler, Message};

/// What a recipient can do with its actor, whatever the actor's type.
trait Deliver<M: Message>: Send + Sync {
    fn tell(&self, msg: M) -> Result<(), TellError<M>>;
    fn ask(&self, msg: M) -> Ask<M::Reply>;
    fn id(&self) -> ActorId;
    fn add_addr(&self);
    fn drop_addr(&self);
    fn is_stopped(&self) -> bool;
}

impl<A: Actor + Handler<M>, M: Message> Deliver<M> for Cell<A> {
    fn tell(&self, msg: M) -> Result<(), TellError<M>> {
        self.offer(msg, Envelope::new, None)
            .map_err(|(m, why)| match why {
                Refusal::Stopped => TellError::Stopped(m),
                Refusal::Full | Refusal::Wait => TellError::Full(m),
            })
    }

    fn ask(&self, msg: M) -> Ask<M::Reply> {
        let mut reply = None;
        let offered = self.offer(
            msg,
            |m| {
                let (e, r) = Envelope::with_reply(m);
                reply = Some(r);
                e
            },
            None,
        );
        match offered {
            Ok(()) => Ask::waiting(reply.expect("tutti: ask without a reply slot")),
            Err((_, Refusal::Stopped)) => Ask::failed(AskError::Stopped),
            Err((_, Refusal::Full | Refusal::Wait)) => Ask::failed(AskError::Full),
        }
    }

    fn id(&self) -> ActorId {
        self.id
    }

    fn add_addr(&self) {
        Cell::add_addr(self);
    }

    fn drop_addr(&self) {
        Cell::drop_addr(self);
    }

    fn is_stopped(&self) -> bool {
        self.mailbox.state.is_closed()
    }
}

/// An address that accepts one message type `M`, whatever the type of the actor behind
/// it: lists of subscribers, callbacks. It counts as an address of its actor.
///
/// Unlike [`Addr::ask`](crate::actor::Addr::ask), a recipient's `ask` on a full `Block`
/// mailbox fails with [`AskError::Full`] instead of waiting.
///
/// ```
/// use tutti::actor::{self, Actor, Context, Recipient};
/// use tutti::msg::{Handler, Message};
///
/// struct Temp(i32);
/// impl Message for Temp { type Reply = i32; }
/// struct Celsius;
/// impl Actor for Celsius {}
/// impl Handler<Temp> for Celsius {
///     async fn handle(&mut self, t: Temp, _: &mut Context<Self>) -> i32 { t.0 }
/// }
/// struct Fahrenheit;
/// impl Actor for Fahrenheit {}
/// impl Handler<Temp> for Fahrenheit {
///     async fn handle(&mut self, t: Temp, _: &mut Context<Self>) -> i32 { t.0 * 9 / 5 + 32 }
/// }
///
/// let displays: Vec<Recipient<Temp>> =
///     vec![actor::spawn(Celsius).recipient(), actor::spawn(Fahrenheit).recipient()];
/// let shown: Vec<i32> = displays.iter().map(|d| d.ask_blocking(Temp(100)).unwrap()).collect();
/// assert_eq!(shown, vec![100, 212]);
/// ```
pub struct Recipient<M: Message> {
    target: Arc<dyn Deliver<M>>,
}

impl<M: Message> Recipient<M> {
    /// Wraps a cell whose address count was already incremented.
    pub(crate) fn from_counted<A: Actor + Handler<M>>(cell: Arc<Cell<A>>) -> Self {
        Recipient { target: cell }
    }

    /// The actor's id.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// # struct M; impl Message for M { type Reply = (); }
    /// # struct A; impl Actor for A {}
    /// # impl Handler<M> for A { async fn handle(&mut self, _: M, _: &mut Context<Self>) {} }
    /// let a = actor::spawn(A);
    /// assert_eq!(a.recipient::<M>().id(), a.id());
    /// ```
    pub fn id(&self) -> ActorId {
        self.target.id()
    }

    /// As [`Addr::tell`](crate::actor::Addr::tell).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// # struct M; impl Message for M { type Reply = (); }
    /// # struct A; impl Actor for A {}
    /// # impl Handler<M> for A { async fn handle(&mut self, _: M, _: &mut Context<Self>) {} }
    /// actor::spawn(A).recipient().tell(M).unwrap();
    /// ```
    pub fn tell(&self, msg: M) -> Result<(), TellError<M>> {
        self.target.tell(msg)
    }

    /// As [`Addr::ask`](crate::actor::Addr::ask) (but a full `Block` mailbox fails).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// # struct M; impl Message for M { type Reply = u8; }
    /// # struct A; impl Actor for A {}
    /// # impl Handler<M> for A { async fn handle(&mut self, _: M, _: &mut Context<Self>) -> u8 { 1 } }
    /// let r = actor::spawn(A).recipient::<M>();
    /// assert_eq!(tutti::block_on(r.ask(M)), Ok(1));
    /// ```
    pub fn ask(&self, msg: M) -> Ask<M::Reply> {
        self.target.ask(msg)
    }

    /// As [`Addr::ask_blocking`](crate::actor::Addr::ask_blocking).
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// # struct M; impl Message for M { type Reply = u8; }
    /// # struct A; impl Actor for A {}
    /// # impl Handler<M> for A { async fn handle(&mut self, _: M, _: &mut Context<Self>) -> u8 { 1 } }
    /// assert_eq!(actor::spawn(A).recipient::<M>().ask_blocking(M), Ok(1));
    /// ```
    pub fn ask_blocking(&self, msg: M) -> Result<M::Reply, AskError> {
        crate::runtime::block_on(self.ask(msg))
    }

    /// True once the actor has begun to stop.
    ///
    /// ```
    /// # use tutti::actor::{self, Actor, Context};
    /// # use tutti::msg::{Handler, Message};
    /// # struct M; impl Message for M { type Reply = (); }
    /// # struct A; impl Actor for A {}
    /// # impl Handler<M> for A { async fn handle(&mut self, _: M, _: &mut Context<Self>) {} }
    /// assert!(!actor::spawn(A).recipient::<M>().is_stopped());
    /// ```
    pub fn is_stopped(&self) -> bool {
        self.target.is_stopped()
    }
}

impl<M: Message> Clone for Recipient<M> {
    fn clone(&self) -> Self {
        self.target.add_addr();
        Recipient {
            target: Arc::clone(&self.target),
        }
    }
}

impl<M: Message> Drop for Recipient<M> {
    fn drop(&mut self) {
        self.target.drop_addr();
    }
}

impl<M: Message> fmt::Debug for Recipient<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recipient")
            .field("id", &self.id())
            .field("message", &std::any::type_name::<M>())
            .finish()
    }
}
