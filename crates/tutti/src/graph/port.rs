//! Typed port handles and the errors of port operations.

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// What may travel through a port: any `Send` value the `msg` codec can encode
/// (a channel may end up between ranks once the graph is partitioned). Within a
/// location values move as they are; between locations of one rank they move
/// as boxed values; only between ranks are they encoded. For numeric arrays use
/// [`PodVec`](crate::msg::codec::PodVec), which the codec copies as raw bytes.
pub trait Token: Serialize + DeserializeOwned + Send + 'static {}

impl<T: Serialize + DeserializeOwned + Send + 'static> Token for T {}

/// The id of an actor in its graph (its declaration index, the same on every rank).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ActorId(pub(crate) u32);

impl ActorId {
    /// The actor declared `index`-th (ids are declaration indices, the same on
    /// every rank that built the same graph).
    ///
    /// ```
    /// assert_eq!(tutti::graph::ActorId::new(3).index(), 3);
    /// ```
    pub fn new(index: usize) -> ActorId {
        ActorId(index as u32)
    }

    /// The declaration index.
    ///
    /// ```
    /// let mut b = tutti::graph::ActorGraph::builder();
    /// let a = b.actor("a").unwrap();
    /// assert_eq!(a.index(), 0);
    /// ```
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// An input port of type `T` of one actor: a handle (copyable, no state), used
/// to connect it at build time and to receive from it in `act()`.
pub struct InPort<T> {
    pub(crate) actor: ActorId,
    pub(crate) index: u32,
    pub(crate) _t: PhantomData<fn() -> T>,
}

/// An output port of type `T` of one actor (see [`InPort`]).
pub struct OutPort<T> {
    pub(crate) actor: ActorId,
    pub(crate) index: u32,
    pub(crate) _t: PhantomData<fn(T)>,
}

macro_rules! port_handle_impls {
    ($ty:ident) => {
        impl<T> Clone for $ty<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $ty<T> {}
        impl<T> fmt::Debug for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("actor", &self.actor.0)
                    .field("index", &self.index)
                    .field("type", &std::any::type_name::<T>())
                    .finish()
            }
        }
        impl<T> $ty<T> {
            /// The actor this port belongs to.
            pub fn actor(&self) -> ActorId {
                self.actor
            }
        }
    };
}
port_handle_impls!(InPort);
port_handle_impls!(OutPort);

/// Why [`Ports::send`](super::Ports::send) did not take a token; the token is
/// handed back.
#[derive(PartialEq, Eq)]
pub enum SendError<T> {
    /// The channel holds its capacity of tokens (or, between locations, every
    /// credit is in use); `act()` runs again when room frees up.
    Full(T),
    /// The consuming actor has terminated: nothing will take the token.
    Closed(T),
    /// The port is not connected to anything.
    Unconnected(T),
}

impl<T> SendError<T> {
    /// The token that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            SendError::Full(v) | SendError::Closed(v) | SendError::Unconnected(v) => v,
        }
    }

    /// Whether the channel was full (as opposed to closed or unconnected).
    pub fn is_full(&self) -> bool {
        matches!(self, SendError::Full(_))
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendError::Full(_) => "the channel is full",
            SendError::Closed(_) => "the consuming actor has terminated",
            SendError::Unconnected(_) => "the output port is not connected",
        })
    }
}

impl<T> std::error::Error for SendError<T> {}
