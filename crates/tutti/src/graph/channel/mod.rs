//! The ends of a channel: bounded FIFO rings within a location, credits and
//! world messages between locations.
//!
//! # Within a location
//!
//! A channel is a lock-free bounded queue of capacity `n` (crossbeam's
//! `ArrayQueue`) plus two flags, `producer_done` and `consumer_done`, and the
//! wake cells of its two actors. A push notifies the consumer's cell (one swap
//! on the actor's signal word, see `sync/signal.rs`); a pop notifies the
//! producer's cell the same way: Pond runs an actor again after each of its
//! sends completes, so a producer that sends one token per `act()` into a
//! ring with room runs again when the consumer takes it, though it never saw
//! the ring full (between locations each credit does the same). Notifying
//! only producers that saw the ring full would also lose the wake-up of an
//! `AllReady` producer whose input refilled while its output was full: its
//! gate skipped that notify, and the pop that frees room would not come.
//! A producer that terminates sets `producer_done`
//! (`Release`, after its last push); a consumer reads it (`Acquire`) *before*
//! looking at the queue, so "done and empty" means no token will ever come.
//!
//! # Between locations (two-sided, credit-based)
//!
//! The producer owns `credits`, initially the capacity. Each token costs one
//! credit and travels as one world message to the consumer's location (typed,
//! boxed, between locations of one rank; encoded by the `msg` codec between
//! ranks). The consumer's router pushes it into the consumer's ring — there is
//! always room, because at most `n` credits exist — and each token the consumer
//! takes sends one credit back. So a full channel holds its producer back
//! across ranks (backpressure) without any blocking call. Termination travels
//! as `Close` (producer done) and `Gone` (consumer done) messages.
//!
//! One-sided channels (`onesided.rs`) put a token's bytes into the consumer's
//! window and send a `PUT` signal instead of the token; credits, `Close` and
//! `Gone` are as above.
//!
//! Wire form between ranks: `[kind: u8][channel: u32 LE][payload]`; a `PUT`
//! signal's payload is `[slot: u32 LE][length: u32 LE]`.
//!
//! The files: `wake.rs` (an actor's wake cell, its firing-rule gate, the
//! location's activity count), `remote.rs` (the
//! world messages between locations: tokens, credits, `Close`, `Gone`, and
//! the router's inlets), `maker.rs` (making a channel's ends for the
//! builder); this file holds the ring and the two ends the ports hold.

mod maker;
mod remote;
mod wake;

#[cfg(all(test, loom))]
mod loom_tests;

pub(crate) use maker::{Maker, TypedMaker};
pub(crate) use remote::{send_control, Carry, Inlet, RemoteOut, CLOSE, CREDIT, DATA, GONE, PUT};
pub(crate) use wake::{Activity, Cell, Probe};

use crate::loom::{AtomicBool, Ordering};
use std::any::Any;
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;

use super::onesided::Target;
use super::port::Token;
use crate::world::{Location, LocationId};

/// A channel's ring and flags (see the module docs).
pub(crate) struct Chan<T> {
    q: ArrayQueue<T>,
    producer_done: AtomicBool,
    consumer_done: AtomicBool,
    /// `None` when the producer is the router (a channel from another location).
    producer: Option<Arc<Cell>>,
    consumer: Arc<Cell>,
}

impl<T> Chan<T> {
    pub(crate) fn new(capacity: usize, producer: Option<Arc<Cell>>, consumer: Arc<Cell>) -> Self {
        Chan {
            q: ArrayQueue::new(capacity),
            producer_done: AtomicBool::new(false),
            consumer_done: AtomicBool::new(false),
            producer,
            consumer,
        }
    }
}

impl<T> Chan<T> {
    /// A token was taken: the producer's output has room again (module docs).
    #[inline]
    fn took(&self) {
        if let Some(p) = &self.producer {
            p.notify();
        }
    }
}

/// An input's probe.
struct InSide<T>(Arc<Chan<T>>);

impl<T: Send> Probe for InSide<T> {
    fn ready(&self) -> bool {
        !self.0.q.is_empty() || self.0.producer_done.load(Ordering::Acquire)
    }
}

/// A local output's probe.
struct OutSide<T>(Arc<Chan<T>>);

impl<T: Send> Probe for OutSide<T> {
    fn ready(&self) -> bool {
        !self.0.q.is_full() || self.0.consumer_done.load(Ordering::Acquire)
    }
}

/// Where a taken token's credit goes, for a channel from another location.
struct CreditTo {
    to: LocationId,
    channel: u32,
    same_rank: bool,
}

/// The consuming end, held by the consumer's port slot.
pub(crate) struct InEnd<T> {
    chan: Arc<Chan<T>>,
    credit: Option<CreditTo>,
}

/// Type-erased operations the runner needs on an input.
pub(crate) trait ErasedIn: Send {
    /// A token is waiting, or none ever will (the producer ended).
    fn ready(&self) -> bool;
    /// Tokens waiting.
    fn len(&self) -> usize;
    /// The consumer terminated: refuse further tokens; returns those discarded.
    fn close(&mut self, loc: &Location) -> u64;
    /// This input's probe, for its consumer's gate.
    fn probe(&self) -> Arc<dyn Probe>;
    fn as_any(&mut self) -> &mut dyn Any;
}

impl<T: Token> InEnd<T> {
    /// Takes a token; sets `away` if that sent a credit to another location
    /// (the location is then flushed after `act()`).
    #[inline]
    pub(crate) fn recv(&mut self, loc: &Location, away: &mut bool) -> Option<T> {
        let v = self.chan.q.pop()?;
        match &self.credit {
            None => self.chan.took(),
            Some(c) => {
                send_control(loc, c.to, c.channel, c.same_rank, CREDIT, 1);
                *away = true;
            }
        }
        Some(v)
    }

    pub(crate) fn is_ended(&self) -> bool {
        // Done first (Acquire, after the producer's last push), then empty.
        self.chan.producer_done.load(Ordering::Acquire) && self.chan.q.is_empty()
    }
}

impl<T: Token> ErasedIn for InEnd<T> {
    fn ready(&self) -> bool {
        !self.chan.q.is_empty() || self.chan.producer_done.load(Ordering::Acquire)
    }

    fn len(&self) -> usize {
        self.chan.q.len()
    }

    fn close(&mut self, loc: &Location) -> u64 {
        self.chan.consumer_done.store(true, Ordering::Release);
        let mut dropped = 0;
        while self.chan.q.pop().is_some() {
            dropped += 1;
        }
        match &self.credit {
            None => {
                if let Some(p) = &self.chan.producer {
                    p.notify();
                }
            }
            Some(c) => send_control(loc, c.to, c.channel, c.same_rank, GONE, 0),
        }
        dropped
    }

    fn probe(&self) -> Arc<dyn Probe> {
        Arc::new(InSide(Arc::clone(&self.chan)))
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}

/// The producing end, held by the producer's port slot.
pub(crate) enum OutEnd<T> {
    Local(Arc<Chan<T>>),
    Remote {
        out: Arc<RemoteOut>,
        to: LocationId,
        channel: u32,
        same_rank: bool,
        scratch: Vec<u8>,
        /// The consumer's window, for a one-sided channel across ranks.
        target: Option<Target>,
    },
}

/// Type-erased operations the runner needs on an output.
pub(crate) trait ErasedOut: Send {
    /// There is room for a token, or the consumer is gone (a send fails at once).
    fn ready(&self) -> bool;
    /// The producer terminated.
    fn close(&mut self, loc: &Location);
    /// This output's probe, for its producer's gate.
    fn probe(&self) -> Arc<dyn Probe>;
    fn as_any(&mut self) -> &mut dyn Any;
}

/// Why a token was not sent (the token handed back).
pub(crate) enum Refused<T> {
    Full(T),
    Closed(T),
}

impl<T: Token> OutEnd<T> {
    /// Sends `v`; `Ok(true)` if it went to another location (the location
    /// should be flushed after `act()`).
    #[inline]
    pub(crate) fn send(&mut self, loc: &Location, v: T) -> Result<bool, Refused<T>> {
        match self {
            OutEnd::Local(chan) => {
                if chan.consumer_done.load(Ordering::Acquire) {
                    return Err(Refused::Closed(v));
                }
                match chan.q.push(v) {
                    Ok(()) => {
                        chan.consumer.notify();
                        Ok(false)
                    }
                    // The pop that frees a slot will notify this producer.
                    Err(v) => Err(Refused::Full(v)),
                }
            }
            OutEnd::Remote {
                out,
                to,
                channel,
                same_rank,
                scratch,
                target,
            } => {
                if out.gone.load(Ordering::Acquire) {
                    return Err(Refused::Closed(v));
                }
                // Only this producer takes credits (the router only adds).
                if out.credits.load(Ordering::Acquire) == 0 {
                    return Err(Refused::Full(v));
                }
                out.credits.fetch_sub(1, Ordering::Relaxed);
                if *same_rank {
                    let carry = Carry {
                        channel: *channel,
                        kind: DATA,
                        credits: 0,
                        value: Some(Box::new(v)),
                    };
                    if loc.send_value(*to, carry).is_err() {
                        loc.world()
                            .abort("tutti graph: a channel's location vanished");
                    }
                } else {
                    scratch.clear();
                    scratch.push(DATA);
                    scratch.extend_from_slice(&channel.to_le_bytes());
                    if let Err(e) = crate::msg::codec::encode(&v, scratch) {
                        loc.world().abort(&format!(
                            "tutti graph: a token of type {} cannot be encoded: {e}",
                            std::any::type_name::<T>()
                        ));
                    }
                    let sent = match target {
                        Some(t) if t.fits(scratch.len() - 5) => {
                            let len = (scratch.len() - 5) as u32;
                            let k = t.put(loc, scratch, 5);
                            let mut signal = [0u8; 13];
                            signal[0] = PUT;
                            signal[1..5].copy_from_slice(&channel.to_le_bytes());
                            signal[5..9].copy_from_slice(&k.to_le_bytes());
                            signal[9..13].copy_from_slice(&len.to_le_bytes());
                            out.activity().puts.fetch_add(1, Ordering::Relaxed);
                            loc.send_slice(*to, &signal)
                        }
                        Some(_) => {
                            out.activity().oversize.fetch_add(1, Ordering::Relaxed);
                            loc.send_slice(*to, scratch)
                        }
                        None => loc.send_slice(*to, scratch),
                    };
                    if sent.is_err() {
                        loc.world()
                            .abort("tutti graph: a channel's location vanished");
                    }
                }
                Ok(true)
            }
        }
    }

    /// Tokens that can be sent now.
    pub(crate) fn room(&self) -> usize {
        match self {
            OutEnd::Local(chan) => chan.q.capacity() - chan.q.len(),
            OutEnd::Remote { out, .. } => out.credits.load(Ordering::Acquire),
        }
    }
}

impl<T: Token> ErasedOut for OutEnd<T> {
    fn ready(&self) -> bool {
        match self {
            OutEnd::Local(chan) => !chan.q.is_full() || chan.consumer_done.load(Ordering::Acquire),
            OutEnd::Remote { out, .. } => {
                out.credits.load(Ordering::Acquire) > 0 || out.gone.load(Ordering::Acquire)
            }
        }
    }

    fn close(&mut self, loc: &Location) {
        match self {
            OutEnd::Local(chan) => {
                chan.producer_done.store(true, Ordering::Release);
                chan.consumer.notify();
            }
            OutEnd::Remote {
                to,
                channel,
                same_rank,
                ..
            } => send_control(loc, *to, *channel, *same_rank, CLOSE, 0),
        }
    }

    fn probe(&self) -> Arc<dyn Probe> {
        match self {
            OutEnd::Local(chan) => Arc::new(OutSide(Arc::clone(chan))),
            OutEnd::Remote { out, .. } => Arc::clone(out) as Arc<dyn Probe>,
        }
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}
