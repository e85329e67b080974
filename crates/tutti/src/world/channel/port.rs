//! The ends of channels on one rank ([`Ports`]) and the state of one end
//! ([`End`]): what arrived for it (values, credits, the other end's close, the
//! other rank's death) and the wakers of the tasks waiting on it. Both the
//! other end's location on this rank (a direct call) and the receive path (a
//! frame from another rank) hand an end its messages through
//! [`Ports::apply`]; the protocol is in the module documentation of
//! `channel/`.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Waker};

use rustc_hash::FxHashMap;

use crate::loom::{lock, Mutex};
use crate::world::LocationId;

/// One channel: the `seq`-th channel opened from location `from` to location
/// `to` (each side counts the channels it opens for that pair, so both agree
/// without talking).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) from: LocationId,
    pub(crate) to: LocationId,
    pub(crate) seq: u32,
}

/// Which end of a channel.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Side {
    Tx,
    Rx,
}

/// A value in a receiving end's queue: moved as it is from this rank, or the
/// bytes of a typed envelope from another rank (decoded by the receive, which
/// knows the type).
pub(crate) enum Item {
    Value(Box<dyn Any + Send>, &'static str),
    Bytes(Vec<u8>),
}

/// A message from one end to the other.
pub(crate) enum Msg {
    /// A value, with the capacity the sending end was opened with.
    Value { capacity: u32, item: Item },
    /// Room for this many more values (to the sending end).
    Credit(u64),
    /// The other end was dropped.
    Close,
}

/// What a receiving end found.
pub(crate) enum Taken {
    /// A value, and the credits to hand back now (0: none yet).
    Item(Item, u64),
    /// The sender dropped its end and every value it sent was taken.
    Closed,
    /// The other end's rank died.
    Dead(usize),
    /// The two ends were opened with different capacities.
    Capacity { sender: u32, receiver: u32 },
    /// Nothing yet; the credits to hand back now (the receiver is about to wait).
    Empty(u64),
}

/// What a sending end found when it asked for room.
pub(crate) enum Room {
    /// A credit was taken: the value may go.
    Granted,
    /// The receiving end was dropped.
    Closed,
    /// The other end's rank died.
    Dead(usize),
    /// No credit.
    Full,
}

/// One end's state (see the module documentation of `channel/` for the
/// meaning of credits and asks).
#[derive(Default)]
struct State {
    /// Receiving end: values that arrived, in order.
    queue: VecDeque<Item>,
    /// Sending end: values it may still send.
    credits: u64,
    /// The other end was dropped.
    peer_closed: bool,
    /// The other end's rank died.
    dead: Option<usize>,
    /// Receiving end of a rendezvous channel: a credit it handed out is unused.
    asked: bool,
    /// Receiving end: values taken since credits were last handed back.
    taken: u64,
    /// Receiving end: the capacity the sender announced with its last value.
    announced: Option<u32>,
    /// Tasks waiting on this end.
    wakers: Vec<Waker>,
}

impl State {
    fn wait(&mut self, cx: &Context<'_>) {
        if !self.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            self.wakers.push(cx.waker().clone());
        }
    }

    fn wake(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.wakers)
    }
}

/// One end of a channel on this rank.
pub(crate) struct End {
    state: Mutex<State>,
}

impl Default for End {
    fn default() -> End {
        End {
            state: Mutex::new(State::default()),
        }
    }
}

fn wake(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

impl End {
    /// An end opened with `capacity` (a sending end starts with as many credits).
    fn opened(&self, side: Side, capacity: u32, dead: Option<usize>) {
        let mut s = lock(&self.state);
        if side == Side::Tx {
            s.credits += u64::from(capacity);
        }
        if s.dead.is_none() {
            s.dead = dead;
        }
    }

    fn apply(&self, msg: Msg) {
        let wakers = {
            let mut s = lock(&self.state);
            match msg {
                Msg::Value { capacity, item } => {
                    s.announced = Some(capacity);
                    s.queue.push_back(item);
                    s.asked = false;
                }
                Msg::Credit(n) => s.credits += n,
                Msg::Close => s.peer_closed = true,
            }
            s.wake()
        };
        wake(wakers);
    }

    /// Marks the other end's rank dead; the wakers to wake once every end of that
    /// rank is marked.
    fn die(&self, rank: usize) -> Vec<Waker> {
        let mut s = lock(&self.state);
        s.dead.get_or_insert(rank);
        s.wake()
    }

    /// Receiving end (opened with `capacity`): takes the next value, or says
    /// why there is none; when there is none and `cx` is given, registers it.
    pub(crate) fn take(&self, capacity: u32, cx: Option<&Context<'_>>) -> Taken {
        let mut s = lock(&self.state);
        if let Some(sender) = s.announced.filter(|&c| c != capacity) {
            return Taken::Capacity {
                sender,
                receiver: capacity,
            };
        }
        if let Some(item) = s.queue.pop_front() {
            s.taken += 1;
            // Hand room back in batches of half the capacity (at least one).
            let batch = u64::from(capacity / 2).max(1);
            let back = if capacity > 0 && s.taken >= batch {
                std::mem::take(&mut s.taken)
            } else {
                0
            };
            return Taken::Item(item, back);
        }
        if s.peer_closed {
            return Taken::Closed;
        }
        if let Some(rank) = s.dead {
            return Taken::Dead(rank);
        }
        // About to wait (or to report `Empty`): whatever room it holds goes
        // back now, so a sender waiting for room is never left waiting on a
        // receiver that waits for a value.
        let back = if capacity == 0 {
            if std::mem::replace(&mut s.asked, true) {
                0
            } else {
                1
            }
        } else {
            std::mem::take(&mut s.taken)
        };
        if let Some(cx) = cx {
            s.wait(cx);
        }
        Taken::Empty(back)
    }

    /// Sending end: takes a credit, or says why there is none; when there is
    /// none and `cx` is given, registers it.
    pub(crate) fn room(&self, cx: Option<&Context<'_>>) -> Room {
        let mut s = lock(&self.state);
        if s.peer_closed {
            return Room::Closed;
        }
        if let Some(rank) = s.dead {
            return Room::Dead(rank);
        }
        if s.credits > 0 {
            s.credits -= 1;
            return Room::Granted;
        }
        if let Some(cx) = cx {
            s.wait(cx);
        }
        Room::Full
    }

    /// Receiving end: whether a receive would end now (a value, the close or
    /// the death of the other end is there); no credit moves.
    pub(crate) fn can_take(&self) -> bool {
        let s = lock(&self.state);
        !s.queue.is_empty() || s.peer_closed || s.dead.is_some()
    }

    /// Sending end: whether a send would end now (a credit, the close or the
    /// death of the other end is there); no credit is taken.
    pub(crate) fn can_send(&self) -> bool {
        let s = lock(&self.state);
        s.credits > 0 || s.peer_closed || s.dead.is_some()
    }

    /// Sending end: gives back a credit taken for a value that was not sent.
    pub(crate) fn unsend(&self) {
        lock(&self.state).credits += 1;
    }

    /// The other end's rank, if it died.
    pub(crate) fn dead(&self) -> Option<usize> {
        lock(&self.state).dead
    }

    /// Receiving end: values waiting to be taken.
    pub(crate) fn queued(&self) -> usize {
        lock(&self.state).queue.len()
    }
}

/// The channel ends of one rank, by channel and side, and how many ends each
/// location of this rank has opened towards each peer (to number them).
pub(crate) struct Ports {
    inner: Mutex<Inner>,
}

impl Default for Ports {
    fn default() -> Ports {
        Ports {
            inner: Mutex::new(Inner::default()),
        }
    }
}

#[derive(Default)]
struct Inner {
    /// Ends opened per (from, to, side): the next end's `seq`. The keys
    /// are ids of this job's own locations and channels, looked up for
    /// every message: hashed with Fx (a multiply and a rotate per word),
    /// not SipHash, whose resistance to chosen keys buys nothing here.
    opened: FxHashMap<(LocationId, LocationId, Side), u32>,
    /// Live ends, and ends a message reached before they were opened.
    ends: FxHashMap<(Key, Side), Arc<End>>,
}

impl Ports {
    /// Opens the next end on `side` of a channel from `from` to `to`, with
    /// `capacity`; `dead` if the other end's rank is known dead.
    pub(crate) fn open(
        &self,
        from: LocationId,
        to: LocationId,
        side: Side,
        capacity: u32,
        dead: Option<usize>,
    ) -> (Key, Arc<End>) {
        let mut inner = lock(&self.inner);
        let n = inner.opened.entry((from, to, side)).or_insert(0);
        let key = Key { from, to, seq: *n };
        *n += 1;
        let end = Arc::clone(inner.ends.entry((key, side)).or_default());
        drop(inner);
        end.opened(side, capacity, dead);
        (key, end)
    }

    /// Ends this rank keeps now (open ones, and ones a message reached first).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.inner).ends.len()
    }

    /// The end on `side` of channel `key` was dropped: messages for it are
    /// dropped from now on.
    pub(crate) fn close(&self, key: Key, side: Side) {
        lock(&self.inner).ends.remove(&(key, side));
    }

    /// Hands `msg` to the end on `side` of channel `key` (an end of this rank).
    /// An end not opened yet keeps it until it is; for an end dropped already
    /// it is dropped (its channel is closed: a value's sender hears so from the
    /// close on its way).
    pub(crate) fn apply(&self, key: Key, side: Side, msg: Msg) {
        let end = {
            let mut inner = lock(&self.inner);
            let made = inner
                .opened
                .get(&(key.from, key.to, side))
                .copied()
                .unwrap_or(0);
            match inner.ends.get(&(key, side)) {
                Some(end) => Arc::clone(end),
                None if key.seq < made => return,
                None => Arc::clone(inner.ends.entry((key, side)).or_default()),
            }
        };
        end.apply(msg);
    }

    /// Rank `rank` died: every end whose other end lives there fails (all are
    /// marked before any waiting task is woken).
    pub(crate) fn rank_died(&self, rank: usize, per_rank: usize) {
        let ends: Vec<Arc<End>> = lock(&self.inner)
            .ends
            .iter()
            .filter(|((key, side), _)| {
                let peer = match side {
                    Side::Tx => key.to,
                    Side::Rx => key.from,
                };
                peer.rank(per_rank) == rank
            })
            .map(|(_, end)| Arc::clone(end))
            .collect();
        // Every end first, then the wake-ups: a task woken by one end's failure
        // finds the others failed too (it may send on them next).
        let wakers: Vec<Waker> = ends.iter().flat_map(|end| end.die(rank)).collect();
        wake(wakers);
    }
}
