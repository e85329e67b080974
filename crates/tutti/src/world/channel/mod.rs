//! Typed channels between locations, on the same rank or on different ranks:
//! a [`RemoteTx`] on one location sends values of one type to the
//! [`RemoteRx`] on another, in order, with a bound (`capacity`) that holds
//! across ranks.
//!
//! Both ends are opened *collectively*, without a message: the sending
//! location calls [`Location::channel_to`]`(receiver, capacity)` and the
//! receiving location [`Location::channel_from`]`(sender, capacity)`. Each
//! location numbers the channels it opens towards one peer (0, 1, …), so the
//! `k`-th `channel_to(b)` of location `a` meets the `k`-th `channel_from(a)` of
//! location `b`; messages that arrive before the receiving end is opened wait
//! for it. Both must pass the same capacity: a receiver whose sender
//! announced another gets [`RemoteRecvError::Capacity`].
//!
//! ```
//! use tutti::world::{LocationId, World};
//!
//! let world = World::builder().locations(2).workers(2).build().unwrap();
//! let got = world.run(|loc| async move {
//!     if loc.id().index() == 0 {
//!         let tx = loc.channel_to::<String>(LocationId::new(1), 2).unwrap();
//!         for word in ["over", "ranks"] {
//!             tx.send(word.to_string()).await.unwrap();
//!         }
//!         Vec::new() // dropping `tx` closes the channel
//!     } else {
//!         let rx = loc.channel_from::<String>(LocationId::new(0), 2).unwrap();
//!         let mut words = Vec::new();
//!         while let Ok(w) = rx.recv().await {
//!             words.push(w);
//!         }
//!         words
//!     }
//! });
//! assert_eq!(got[1], ["over", "ranks"]);
//! ```
//!
//! Between locations of one rank a value moves as it is; to another rank it is
//! encoded with the message core's codec (as [`Location::send`] does) and
//! decoded by the receive, which names the types if they differ. Channel
//! messages to another rank travel in frames of their own (not aggregated
//! behind a location's other messages).
//!
//! # Forms
//!
//! [`RemoteTx::send`] / [`RemoteRx::recv`] are futures (named types, usable
//! as `future(…)` arms of [`select!`](crate::select) and
//! [`Alt::future`](crate::csp::Alt::future) guards), `send_blocking` /
//! `recv_blocking` their forms for plain threads, `try_send` / `try_recv`
//! never wait ([`RemoteSendError::Full`], [`RemoteRecvError::Empty`]).
//!
//! **Cancellation.** A receive takes a value only in the poll that returns it:
//! a `recv` arm that loses a selection (or a `recv` future dropped before it
//! completed) has consumed nothing. A send transmits its value only in the poll
//! that returns `Ready`, after it took room in the channel: a `send` arm that
//! loses has **not sent and never will** — the value is *withdrawn*, dropped
//! with the future, or taken back with [`ChannelSend::withdraw`] from a future
//! the selection borrowed (`alt.future(&mut send)`).
//!
//! Dropping an end closes the channel: after the sender's drop the receiver
//! takes what was sent, then gets [`RemoteRecvError::Closed`]; after the
//! receiver's drop sends fail with [`RemoteSendError::Closed`] (values that
//! were on their way are dropped with the receiving end). When the other
//! end's rank dies (a shared-memory system's rank is killed), both forms fail
//! with an error naming the rank.
//!
//! # Protocol: credits
//!
//! The sending end holds *credits*, room for that many values at the receiving
//! end; a send takes one, or waits (`try_send`: `Full`). The receiving end
//! gives credits back as values are taken:
//!
//! * **Buffered** (`capacity ≥ 1`): the sender starts with `capacity` credits;
//!   the receiver hands them back in batches of `capacity / 2` (at least 1) as
//!   it takes values, and all it holds whenever it finds its queue empty.
//! * **Rendezvous** (`capacity = 0`): the sender starts with none; a receiver
//!   that finds its queue empty grants one (an *ask*), and no second one while
//!   it is unused. So a send completes only towards a receiver that asked for a
//!   value, and at most one value is ever on its way or waiting.
//!
//! *C1 (the bound).* Values sent but not yet taken ≤ `max(capacity, 1)`: the
//! credits the sender holds, plus the values in flight or queued, plus the
//! credits taken back but not yet returned, plus credits in flight, stay equal
//! to `capacity` (buffered; at most 1 for rendezvous: an ask is granted only
//! when the previous one was used and its value taken).
//! *C2 (no deadlock of the protocol).* A sender waits only with no credit; a
//! receiver waits only with an empty queue, and then it has just handed back
//! every credit it held (or asked). So a sender and a receiver never wait on
//! each other with room or values stuck between them.
//! *C3 (no lost wake-up).* An end's state and the wakers of the tasks waiting
//! on it sit under one lock; a task registers under that lock after finding
//! nothing, and whoever delivers a value, credit, close or death to the end
//! takes the wakers under it.
//!
//! # Quiescence and diagnosis
//!
//! A channel message to another rank counts as sent (for the world's
//! quiescence detection, see the [`world`](crate::world) module) when it is
//! handed to the transport, and as handled when it reaches the other end's
//! state on the receiving rank; handling it sends nothing. So a fence that
//! completes has every channel message in its channel, none in flight. Within
//! a rank a channel message is delivered by the call that sends it and is
//! not counted. A task waiting on an end is noted for the deadlock detector
//! (it names the channel and the peer location), so a cycle of locations
//! waiting on one another's channels — on one rank or across ranks, through
//! the cross-rank stall check — is reported like any other wait.

mod error;
mod port;
#[cfg(all(test, not(loom)))]
mod tests;

pub use error::{ChannelError, RemoteRecvError, RemoteSendError};
pub(crate) use port::Ports;

use std::any::type_name;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::frame::{self, ChannelHead};
use super::rank::Local;
use super::typed::{self, TakeError};
use super::{Location, LocationId, World};
use crate::loom::Ordering;
use port::{End, Item, Key, Msg, Room, Side, Taken};

/// Channel message kinds as frames carry them: the receiving end of each.
const VALUE: u8 = frame::CHANNEL_VALUE;
const CREDIT: u8 = frame::CHANNEL_CREDIT;
const CLOSE_TX: u8 = frame::CHANNEL_CLOSE_TX;
const CLOSE_RX: u8 = frame::CHANNEL_CLOSE_RX;

impl Location {
    /// Opens the sending end of the next channel from this location to `to`
    /// (on this rank or another), holding at most `capacity` values not yet
    /// received (0: rendezvous). Location `to` opens the other end with
    /// [`channel_from`](Self::channel_from)`(this location, capacity)`; see
    /// [the protocol](crate::world::RemoteTx).
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let tx = loc.channel_to::<u32>(loc.id(), 1).unwrap();
    /// let rx = loc.channel_from::<u32>(loc.id(), 1).unwrap();
    /// tx.try_send(7).unwrap();
    /// assert!(tx.try_send(8).is_err()); // full: capacity 1
    /// assert_eq!(rx.recv_blocking(), Ok(7));
    /// assert!(loc.channel_to::<u32>(LocationId::new(5), 1).is_err());
    /// ```
    pub fn channel_to<T>(
        &self,
        to: LocationId,
        capacity: usize,
    ) -> Result<RemoteTx<T>, ChannelError>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
    {
        let capacity = self.check_channel(to, capacity)?;
        let (link, end) = self.open_link(self.id(), to, Side::Tx, capacity);
        Ok(RemoteTx {
            link,
            end,
            capacity,
            _type: PhantomData,
        })
    }

    /// Opens the receiving end of the next channel from location `from` to
    /// this location, with the capacity the sender passes to
    /// [`channel_to`](Self::channel_to).
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let rx = loc.channel_from::<u32>(loc.id(), 0).unwrap();
    /// assert_eq!(rx.peer(), loc.id());
    /// ```
    pub fn channel_from<T>(
        &self,
        from: LocationId,
        capacity: usize,
    ) -> Result<RemoteRx<T>, ChannelError>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
    {
        let capacity = self.check_channel(from, capacity)?;
        let (link, end) = self.open_link(from, self.id(), Side::Rx, capacity);
        Ok(RemoteRx {
            link,
            end,
            capacity,
            _type: PhantomData,
        })
    }

    fn check_channel(&self, peer: LocationId, capacity: usize) -> Result<u32, ChannelError> {
        if peer.index() >= self.world().locations() {
            return Err(ChannelError::NoSuchLocation {
                location: peer,
                locations: self.world().locations(),
            });
        }
        u32::try_from(capacity).map_err(|_| ChannelError::Capacity(capacity))
    }

    fn open_link(
        &self,
        from: LocationId,
        to: LocationId,
        side: Side,
        capacity: u32,
    ) -> (Link, Arc<End>) {
        let world = self.world().clone();
        let local = &world.shared().local;
        let peer = if side == Side::Tx { to } else { from };
        let peer_rank = peer.rank(local.per_rank);
        let dead = (!local.alive()[peer_rank]).then_some(peer_rank);
        let (key, end) = local.channels.open(from, to, side, capacity, dead);
        let link = Link {
            world,
            me: self.id(),
            peer,
            key,
            side,
        };
        (link, end)
    }
}

/// What one end needs to reach the other: the world, both locations, and the
/// channel's key.
struct Link {
    world: World,
    me: LocationId,
    peer: LocationId,
    key: Key,
    side: Side,
}

impl Link {
    fn peer_rank(&self) -> usize {
        self.peer.rank(self.world.locations_per_rank())
    }

    fn same_rank(&self) -> bool {
        self.peer_rank() == self.world.rank()
    }

    /// Hands `msg` to the other end: directly on this rank, else in a frame
    /// (counted as sent for quiescence).
    fn send(&self, msg: Msg) {
        let shared = self.world.shared();
        let local = &shared.local;
        let other = match self.side {
            Side::Tx => Side::Rx,
            Side::Rx => Side::Tx,
        };
        let rank = self.peer_rank();
        if rank == local.rank {
            local.channels.apply(self.key, other, msg);
            return;
        }
        let (kind, arg, value) = match msg {
            Msg::Value {
                capacity,
                item: Item::Bytes(b),
            } => (VALUE, u64::from(capacity), b),
            Msg::Value { .. } => {
                local.fail_invariant("an unencoded channel value for another rank")
            }
            Msg::Credit(n) => (CREDIT, n, Vec::new()),
            Msg::Close if self.side == Side::Tx => (CLOSE_TX, 0, Vec::new()),
            Msg::Close => (CLOSE_RX, 0, Vec::new()),
        };
        match local.slot_of(self.me) {
            Some(slot) => slot.sent.fetch_add(1, Ordering::Relaxed),
            None => local.fail_invariant("a channel end on another rank's location"),
        };
        let f = frame::channel(
            self.me.raw(),
            self.peer.raw(),
            self.key.seq,
            kind,
            arg,
            value,
            local.inline_max,
        );
        shared.transport.send(rank, f);
        shared.transport.start_sends();
    }

    /// Before a task waits on an end whose other end is on another rank:
    /// drives a polled engine from here until `ready` holds, briefly, as a
    /// location's receive does (a value or credit due within a round trip then
    /// costs no trip through the scheduler). Returns whether `ready` held.
    fn spin_until(&self, ready: impl FnMut() -> bool) -> bool {
        !self.same_rank() && self.world.shared().spin_until(ready)
    }

    /// Notes for the deadlock detector that the current task waits on this
    /// end, for the peer location (the one that can send, or make room). If
    /// the detector found the wait part of a deadlock (fail mode), the
    /// location panics with its report, as a fence does.
    fn note_wait(&self, what: &'static str, capacity: u32, cx: &Context<'_>) {
        let wait = || crate::diag::node::Wait {
            on: crate::diag::node::On::Location {
                world: self.world.diag_id(),
                index: self.peer.index() as u32,
            },
            what: crate::diag::node::What::Channel {
                what,
                seq: self.key.seq,
                from: self.key.from,
                to: self.key.to,
                capacity,
                call: match self.side {
                    Side::Tx => "RemoteTx::send",
                    Side::Rx => "RemoteRx::recv",
                },
            },
        };
        if let Some(d) = crate::diag::node::take_failure() {
            panic!(
                "tutti::world: {} cannot finish: it {}\n{d}",
                self.me,
                wait().describe()
            );
        }
        crate::diag::node::note(wait, Some(cx.waker()));
    }

    /// Closes this end: the other end hears of it (unless its rank died).
    fn close(&self, dead: bool) {
        let local = &self.world.shared().local;
        local.channels.close(self.key, self.side);
        if !dead {
            self.send(Msg::Close);
        }
    }
}

/// What arrives from another rank for a channel end of this rank: applied to
/// the end, then counted as handled by its location. An error names what is
/// wrong with the frame.
pub(crate) fn incoming(
    local: &Local,
    from_rank: usize,
    h: &ChannelHead,
    value: Vec<u8>,
) -> Result<(), String> {
    let src = LocationId::new(h.from);
    let dst = LocationId::new(h.to);
    if src.index() >= local.ranks * local.per_rank || src.rank(local.per_rank) != from_rank {
        return Err(format!(
            "a channel frame from rank {from_rank} claims to come from {src}"
        ));
    }
    let Some(slot) = local.slot_of(dst) else {
        return Err(format!(
            "a channel frame from rank {from_rank} for {dst}, which is not on this rank"
        ));
    };
    let (from, to, side, msg) = match h.kind {
        VALUE => {
            let capacity = u32::try_from(h.arg)
                .map_err(|_| format!("a channel value announces capacity {}", h.arg))?;
            let item = Item::Bytes(value);
            (src, dst, Side::Rx, Msg::Value { capacity, item })
        }
        CREDIT => (dst, src, Side::Tx, Msg::Credit(h.arg)),
        CLOSE_TX => (src, dst, Side::Rx, Msg::Close),
        CLOSE_RX => (dst, src, Side::Tx, Msg::Close),
        k => return Err(format!("unknown channel message kind {k}")),
    };
    let key = Key {
        from,
        to,
        seq: h.seq,
    };
    local.channels.apply(key, side, msg);
    // Handled once it is in its end's state (it causes no send): `Release`
    // pairs with the quiescence wave's `Acquire` read, as a delivery's drop.
    slot.handled.fetch_add(1, Ordering::Release);
    Ok(())
}

/// The sending end of a channel between locations (see the [module
/// docs](crate::world#channels-between-locations) and
/// [`Location::channel_to`]). Dropping it closes the channel.
pub struct RemoteTx<T> {
    link: Link,
    end: Arc<End>,
    capacity: u32,
    _type: PhantomData<fn(T)>,
}

impl<T> fmt::Debug for RemoteTx<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteTx")
            .field("from", &self.link.me)
            .field("to", &self.link.peer)
            .field("seq", &self.link.key.seq)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl<T: Serialize + Send + 'static> RemoteTx<T> {
    /// Sends `value`, waiting (without holding a worker) while the channel is
    /// full. Cancellation-safe: the value is sent only in the poll that
    /// completes the future (see [`ChannelSend`]).
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let tx = loc.channel_to::<u8>(loc.id(), 4).unwrap();
    /// let rx = loc.channel_from::<u8>(loc.id(), 4).unwrap();
    /// tutti::runtime::block_on(tx.send(3)).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(3));
    /// ```
    pub fn send(&self, value: T) -> ChannelSend<'_, T> {
        ChannelSend {
            tx: self,
            value: Some(value),
        }
    }

    /// [`send`](Self::send) for plain threads (on a worker, outside an async
    /// task, the worker keeps executing other work meanwhile).
    ///
    /// ```
    /// use tutti::world::{RemoteSendError, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let tx = loc.channel_to::<u8>(loc.id(), 1).unwrap();
    /// drop(loc.channel_from::<u8>(loc.id(), 1).unwrap());
    /// assert_eq!(tx.send_blocking(1), Err(RemoteSendError::Closed(1)));
    /// ```
    pub fn send_blocking(&self, value: T) -> Result<(), RemoteSendError<T>> {
        crate::runtime::block_on(self.send(value))
    }

    /// Sends `value` if the channel has room now; [`RemoteSendError::Full`]
    /// (with the value) if not.
    ///
    /// ```
    /// use tutti::world::{RemoteSendError, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let tx = loc.channel_to::<u8>(loc.id(), 0).unwrap();
    /// // Rendezvous: no receiver asked yet.
    /// assert_eq!(tx.try_send(1), Err(RemoteSendError::Full(1)));
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), RemoteSendError<T>> {
        match self.end.room(None) {
            Room::Granted => self.transmit(value),
            Room::Full => Err(RemoteSendError::Full(value)),
            Room::Closed => Err(RemoteSendError::Closed(value)),
            Room::Dead(rank) => Err(RemoteSendError::RankDied { rank, value }),
        }
    }

    /// Sends `value` with the credit just taken.
    fn transmit(&self, value: T) -> Result<(), RemoteSendError<T>> {
        let item = if self.link.same_rank() {
            Item::Value(Box::new(value), type_name::<T>())
        } else {
            match typed::encode(&value) {
                Ok(bytes) => Item::Bytes(bytes),
                Err(e) => {
                    self.end.unsend();
                    return Err(RemoteSendError::Encode {
                        value,
                        why: e.to_string(),
                    });
                }
            }
        };
        self.link.send(Msg::Value {
            capacity: self.capacity,
            item,
        });
        Ok(())
    }
}

impl<T> RemoteTx<T> {
    /// The receiving end's location.
    pub fn peer(&self) -> LocationId {
        self.link.peer
    }

    /// The capacity the channel was opened with.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }
}

impl<T> Drop for RemoteTx<T> {
    fn drop(&mut self) {
        self.link.close(self.end.dead().is_some());
    }
}

/// Future of [`RemoteTx::send`]. It sends its value only in the poll that
/// returns `Ready`; dropped before, it has sent nothing. A selection that
/// borrows it (`alt.future(&mut send)`) and fires another guard leaves the
/// value in it: [`withdraw`](Self::withdraw) takes it back.
#[must_use = "futures do nothing unless polled"]
pub struct ChannelSend<'a, T> {
    tx: &'a RemoteTx<T>,
    value: Option<T>,
}

// The value is never pinned: it is only moved out, by value.
impl<T> Unpin for ChannelSend<'_, T> {}

impl<T> fmt::Debug for ChannelSend<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChannelSend")
            .field("tx", self.tx)
            .field("sent", &self.value.is_none())
            .finish()
    }
}

impl<T> ChannelSend<'_, T> {
    /// Takes the value back: `Some` if it was not sent (and never will be).
    ///
    /// ```
    /// use tutti::csp::Alt;
    /// use tutti::world::World;
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let tx = loc.channel_to::<u8>(loc.id(), 0).unwrap(); // nobody asks
    /// let mut send = tx.send(9);
    /// let mut alt = Alt::new().skip();
    /// let _arm = alt.future(&mut send);
    /// assert_eq!(alt.pri_select_blocking().index(), 0); // `skip` wins
    /// drop(alt);
    /// assert_eq!(send.withdraw(), Some(9));
    /// ```
    pub fn withdraw(self) -> Option<T> {
        self.value
    }
}

impl<T: Serialize + Send + 'static> Future for ChannelSend<'_, T> {
    type Output = Result<(), RemoteSendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(value) = this.value.take() else {
            panic!("tutti::world: a `ChannelSend` polled after it completed");
        };
        let tx = this.tx;
        let mut room = tx.end.room(None);
        if matches!(room, Room::Full) {
            tx.link.spin_until(|| tx.end.can_send());
            room = tx.end.room(Some(cx));
        }
        let out = match room {
            Room::Granted => tx.transmit(value),
            Room::Closed => Err(RemoteSendError::Closed(value)),
            Room::Dead(rank) => Err(RemoteSendError::RankDied { rank, value }),
            Room::Full => {
                this.value = Some(value);
                tx.link.note_wait("waits for room in the", tx.capacity, cx);
                return Poll::Pending;
            }
        };
        Poll::Ready(out)
    }
}

/// The receiving end of a channel between locations (see [`RemoteTx`] and
/// [`Location::channel_from`]). Dropping it closes the channel.
pub struct RemoteRx<T> {
    link: Link,
    end: Arc<End>,
    capacity: u32,
    _type: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for RemoteRx<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteRx")
            .field("from", &self.link.peer)
            .field("to", &self.link.me)
            .field("seq", &self.link.key.seq)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl<T: DeserializeOwned + Send + 'static> RemoteRx<T> {
    /// Receives the next value, waiting (without holding a worker) until one
    /// arrives; [`RemoteRecvError::Closed`] once the sender dropped its end
    /// and everything it sent was received. Cancellation-safe: a value is
    /// taken only in the poll that returns it.
    ///
    /// ```
    /// use tutti::world::{RemoteRecvError, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let tx = loc.channel_to::<u8>(loc.id(), 2).unwrap();
    /// let rx = loc.channel_from::<u8>(loc.id(), 2).unwrap();
    /// tx.try_send(5).unwrap();
    /// drop(tx);
    /// assert_eq!(tutti::runtime::block_on(rx.recv()), Ok(5));
    /// assert_eq!(rx.recv_blocking(), Err(RemoteRecvError::Closed));
    /// ```
    pub fn recv(&self) -> ChannelRecv<'_, T> {
        ChannelRecv { rx: self }
    }

    /// [`recv`](Self::recv) for plain threads (on a worker, outside an async
    /// task, the worker keeps executing other work meanwhile).
    pub fn recv_blocking(&self) -> Result<T, RemoteRecvError> {
        crate::runtime::block_on(self.recv())
    }

    /// Receives a value if one is there now; [`RemoteRecvError::Empty`] if
    /// not. On a rendezvous channel an empty `try_recv` asks the sender for a
    /// value, as a waiting `recv` does.
    ///
    /// ```
    /// use tutti::world::{RemoteRecvError, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let _tx = loc.channel_to::<u8>(loc.id(), 0).unwrap();
    /// let rx = loc.channel_from::<u8>(loc.id(), 0).unwrap();
    /// assert_eq!(rx.try_recv(), Err(RemoteRecvError::Empty));
    /// ```
    pub fn try_recv(&self) -> Result<T, RemoteRecvError> {
        match self.take(None) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(RemoteRecvError::Empty),
        }
    }

    fn take(&self, cx: Option<&Context<'_>>) -> Poll<Result<T, RemoteRecvError>> {
        match self.end.take(self.capacity, cx) {
            Taken::Item(item, back) => {
                if back > 0 {
                    self.link.send(Msg::Credit(back));
                }
                Poll::Ready(self.decode(item))
            }
            Taken::Empty(back) => {
                if back > 0 {
                    self.link.send(Msg::Credit(back));
                }
                Poll::Pending
            }
            Taken::Closed => Poll::Ready(Err(RemoteRecvError::Closed)),
            Taken::Dead(rank) => Poll::Ready(Err(RemoteRecvError::RankDied(rank))),
            Taken::Capacity { sender, receiver } => {
                Poll::Ready(Err(RemoteRecvError::Capacity { sender, receiver }))
            }
        }
    }

    fn decode(&self, item: Item) -> Result<T, RemoteRecvError> {
        let from = self.link.peer;
        match item {
            Item::Bytes(b) => typed::decode::<T>(from, &b).map_err(RemoteRecvError::Decode),
            Item::Value(v, name) => v.downcast::<T>().map(|v| *v).map_err(|_| {
                RemoteRecvError::Decode(TakeError::Mismatch {
                    from,
                    expected: type_name::<T>(),
                    found: name.to_string(),
                })
            }),
        }
    }
}

impl<T> RemoteRx<T> {
    /// The sending end's location.
    pub fn peer(&self) -> LocationId {
        self.link.peer
    }

    /// The capacity the channel was opened with.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// Values that arrived and wait to be received.
    pub fn len(&self) -> usize {
        self.end.queued()
    }

    /// Whether no value waits to be received.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Drop for RemoteRx<T> {
    fn drop(&mut self) {
        self.link.close(self.end.dead().is_some());
    }
}

/// Future of [`RemoteRx::recv`].
#[must_use = "futures do nothing unless polled"]
pub struct ChannelRecv<'a, T> {
    rx: &'a RemoteRx<T>,
}

impl<T> fmt::Debug for ChannelRecv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChannelRecv").field("rx", self.rx).finish()
    }
}

impl<T: DeserializeOwned + Send + 'static> Future for ChannelRecv<'_, T> {
    type Output = Result<T, RemoteRecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let rx = self.rx;
        // Without registering first: a value that comes while it spins is
        // taken by the next look, and a waker left behind would be woken for
        // nothing. An empty look hands the credits back before the spin.
        if let Poll::Ready(out) = rx.take(None) {
            return Poll::Ready(out);
        }
        rx.link.spin_until(|| rx.end.can_take());
        let out = rx.take(Some(cx));
        if out.is_pending() {
            rx.link
                .note_wait("waits to receive on the", rx.capacity, cx);
        }
        out
    }
}
