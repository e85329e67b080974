//! A channel between locations: the world messages it exchanges (a token,
//! a credit, `Close`, `Gone`, a one-sided `PUT` signal), the producer's
//! credits ([`RemoteOut`]) and the router's side of an incoming channel
//! ([`Inlet`]), which pushes arriving tokens into the consumer's ring. The
//! protocol is the module documentation of `graph::channel`.

use crate::loom::{AtomicBool, AtomicUsize, Ordering};
use std::any::Any;
use std::sync::Arc;

use super::{Activity, Cell, Chan, Probe};
use crate::graph::port::Token;
use crate::world::{Location, LocationId};

/// The kinds of world message a graph run exchanges.
pub(crate) const DATA: u8 = 0;
pub(crate) const CREDIT: u8 = 1;
pub(crate) const CLOSE: u8 = 2;
pub(crate) const GONE: u8 = 3;
/// A token was put into a slot of the consumer's window (`onesided.rs`).
pub(crate) const PUT: u8 = 4;

/// A graph message between two locations of one rank (moves as a typed value).
pub(crate) struct Carry {
    pub(crate) channel: u32,
    pub(crate) kind: u8,
    pub(crate) credits: u32,
    pub(crate) value: Option<Box<dyn Any + Send>>,
}

/// The producer's side of a channel to another location.
pub(crate) struct RemoteOut {
    pub(super) credits: AtomicUsize,
    pub(super) gone: AtomicBool,
    producer: Arc<Cell>,
}

impl RemoteOut {
    pub(crate) fn new(capacity: usize, producer: Arc<Cell>) -> RemoteOut {
        RemoteOut {
            credits: AtomicUsize::new(capacity),
            gone: AtomicBool::new(false),
            producer,
        }
    }

    pub(super) fn activity(&self) -> &Activity {
        &self.producer.activity
    }

    /// The router received `n` credits.
    pub(crate) fn credit(&self, n: usize) {
        self.credits.fetch_add(n, Ordering::Release);
        self.producer.notify();
    }

    /// The router heard that the consumer terminated.
    pub(crate) fn gone(&self) {
        self.gone.store(true, Ordering::Release);
        self.producer.notify();
    }
}

impl Probe for RemoteOut {
    fn ready(&self) -> bool {
        self.credits.load(Ordering::Acquire) > 0 || self.gone.load(Ordering::Acquire)
    }
}

/// Sends a credit, close or gone message for `channel` to `to`.
pub(crate) fn send_control(
    loc: &Location,
    to: LocationId,
    channel: u32,
    same_rank: bool,
    kind: u8,
    credits: u32,
) {
    let ok = if same_rank {
        loc.send_value(
            to,
            Carry {
                channel,
                kind,
                credits,
                value: None,
            },
        )
        .is_ok()
    } else {
        let mut b = [0u8; 9];
        b[0] = kind;
        b[1..5].copy_from_slice(&channel.to_le_bytes());
        b[5..9].copy_from_slice(&credits.to_le_bytes());
        loc.send_slice(to, &b).is_ok()
    };
    if !ok {
        loc.world()
            .abort("tutti graph: a channel's location vanished");
    }
}

/// The router's side of a channel coming in from another location.
pub(crate) trait Inlet: Send + Sync {
    /// A token arrived as bytes (from another rank).
    fn bytes(&self, payload: &[u8]) -> Result<(), String>;
    /// A token arrived as a value (from a location of this rank).
    fn value(&self, v: Box<dyn Any + Send>) -> Result<(), String>;
    /// The producer terminated.
    fn close(&self);
}

/// The inlet of a channel carrying `T`.
pub(crate) struct TypedInlet<T> {
    chan: Arc<Chan<T>>,
    activity: Arc<Activity>,
}

impl<T: Token> TypedInlet<T> {
    pub(super) fn new(chan: Arc<Chan<T>>, activity: Arc<Activity>) -> TypedInlet<T> {
        TypedInlet { chan, activity }
    }

    fn push(&self, v: T) -> Result<(), String> {
        if self.chan.consumer_done.load(Ordering::Acquire) {
            self.activity.discarded.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        match self.chan.q.push(v) {
            Ok(()) => {
                self.chan.consumer.notify();
                Ok(())
            }
            Err(_) => Err("more tokens arrived than the channel gave credits for".into()),
        }
    }
}

impl<T: Token> Inlet for TypedInlet<T> {
    fn bytes(&self, payload: &[u8]) -> Result<(), String> {
        let v: T = crate::msg::codec::decode(payload).map_err(|e| {
            format!(
                "a token of type {} does not decode: {e}",
                std::any::type_name::<T>()
            )
        })?;
        self.push(v)
    }

    fn value(&self, v: Box<dyn Any + Send>) -> Result<(), String> {
        match v.downcast::<T>() {
            Ok(v) => self.push(*v),
            Err(_) => Err(format!(
                "a token is not of the channel's type {}",
                std::any::type_name::<T>()
            )),
        }
    }

    fn close(&self) {
        self.chan.producer_done.store(true, Ordering::Release);
        self.chan.consumer.notify();
    }
}
