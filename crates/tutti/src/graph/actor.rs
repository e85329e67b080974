//! What a graph actor is and sees: the [`PortActor`] trait (`act()`, and
//! `start()` once), the [`Status`] it returns, and its [`Ports`] during a
//! call — taking tokens from inputs and sending them on outputs through the
//! channels' ends (`channel/`).

use super::channel::{ErasedIn, ErasedOut, InEnd, OutEnd, Refused};
use super::port::{ActorId, InPort, OutPort, SendError, Token};
use crate::world::{Location, LocationId};

/// What `act()` tells the runner.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    /// Run me again when a port changes.
    Continue,
    /// I have terminated: my outputs close (consumers see them end once
    /// drained) and my inputs refuse further tokens.
    Done,
}

/// A graph actor (a *port actor*): a state machine whose `act()` runs when its
/// ports change (see [`Firing`](super::Firing)). Closures `FnMut(&mut Ports) -> Status` are
/// port actors. Named apart from [`crate::actor::Actor`], the mailbox actor:
/// a port actor has no mailbox and no address; it only takes and sends
/// tokens on the channels the graph connects to its ports.
pub trait PortActor: Send + 'static {
    /// Takes tokens from inputs, sends tokens to outputs, and says whether the
    /// actor goes on. Must not block: a full output or an empty input is met by
    /// returning and being called again when it changes.
    fn act(&mut self, ports: &mut Ports<'_>) -> Status;

    /// Runs once when the run starts, before any `act()` and whatever the
    /// firing rule: for tokens an actor sends before it has received any
    /// (an [`AllReady`](super::Firing::AllReady) actor whose neighbours wait for
    /// its first token). The default does nothing.
    fn start(&mut self, ports: &mut Ports<'_>) -> Status {
        let _ = ports;
        Status::Continue
    }
}

impl<F: FnMut(&mut Ports<'_>) -> Status + Send + 'static> PortActor for F {
    fn act(&mut self, ports: &mut Ports<'_>) -> Status {
        self(ports)
    }
}

/// One port of an actor during a run: its end, if the port is connected.
pub(crate) enum Slot {
    In(Option<Box<dyn ErasedIn>>),
    Out(Option<Box<dyn ErasedOut>>),
}

/// An actor's ports during `act()`.
pub struct Ports<'a> {
    me: ActorId,
    name: &'a str,
    slots: &'a mut [Slot],
    loc: &'a Location,
    sent_away: bool,
}

impl std::fmt::Debug for Ports<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ports").field("actor", &self.name).finish()
    }
}

impl<'a> Ports<'a> {
    /// The ports of actor `me` (named `name`) on `loc`, over its `slots`.
    pub(crate) fn new(
        me: ActorId,
        name: &'a str,
        slots: &'a mut [Slot],
        loc: &'a Location,
    ) -> Ports<'a> {
        Ports {
            me,
            name,
            slots,
            loc,
            sent_away: false,
        }
    }

    /// Whether a token went to another location during this `act()` (the
    /// location is then flushed).
    pub(crate) fn sent_away(&self) -> bool {
        self.sent_away
    }

    fn slot(&mut self, actor: ActorId, index: u32) -> &mut Slot {
        if actor != self.me {
            misuse(self.name, "a port of another actor");
        }
        &mut self.slots[index as usize]
    }

    fn input<T: Token>(&mut self, p: InPort<T>) -> Option<&mut InEnd<T>> {
        match self.slot(p.actor, p.index) {
            Slot::In(Some(end)) => end.as_any().downcast_mut::<InEnd<T>>(),
            Slot::In(None) => None,
            Slot::Out(_) => None,
        }
    }

    fn output<T: Token>(&mut self, p: OutPort<T>) -> Option<&mut OutEnd<T>> {
        match self.slot(p.actor, p.index) {
            Slot::Out(Some(end)) => end.as_any().downcast_mut::<OutEnd<T>>(),
            _ => None,
        }
    }

    /// Takes the oldest token of input `p`, if there is one.
    ///
    /// # Panics
    /// If `p` is a port of another actor (a programming error).
    #[inline]
    pub fn recv<T: Token>(&mut self, p: InPort<T>) -> Option<T> {
        let loc = self.loc;
        let mut away = false;
        let v = self.input(p)?.recv(loc, &mut away);
        self.sent_away |= away;
        v
    }

    /// Whether input `p` has ended: its producer terminated and every token it
    /// sent has been taken (an unconnected input has always ended).
    pub fn is_ended<T: Token>(&mut self, p: InPort<T>) -> bool {
        self.input(p).is_none_or(|e| e.is_ended())
    }

    /// Tokens waiting on input `p`.
    pub fn len<T: Token>(&mut self, p: InPort<T>) -> usize {
        self.input(p).map_or(0, |e| ErasedIn::len(e))
    }

    /// Sends `v` on output `p`, or hands it back (full, closed, unconnected).
    ///
    /// # Panics
    /// If `p` is a port of another actor (a programming error).
    #[inline]
    pub fn send<T: Token>(&mut self, p: OutPort<T>, v: T) -> Result<(), SendError<T>> {
        let loc = self.loc;
        let Some(end) = self.output(p) else {
            return Err(SendError::Unconnected(v));
        };
        match end.send(loc, v) {
            Ok(away) => {
                self.sent_away |= away;
                Ok(())
            }
            Err(Refused::Full(v)) => Err(SendError::Full(v)),
            Err(Refused::Closed(v)) => Err(SendError::Closed(v)),
        }
    }

    /// Tokens output `p` can take now (0 if unconnected).
    pub fn room<T: Token>(&mut self, p: OutPort<T>) -> usize {
        self.output(p).map_or(0, |e| e.room())
    }

    /// This actor's id.
    pub fn actor(&self) -> ActorId {
        self.me
    }

    /// This actor's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The location this actor runs on.
    pub fn location(&self) -> LocationId {
        self.loc.id()
    }
}

#[cold]
fn misuse(actor: &str, what: &str) -> ! {
    panic!("tutti graph: actor '{actor}' used {what}")
}
