//! What opening, sending on and receiving from a channel between locations
//! can fail with.

use std::error::Error;
use std::fmt;

use crate::world::{LocationId, TakeError};

/// Why [`Location::channel_to`](crate::world::Location::channel_to) or
/// [`channel_from`](crate::world::Location::channel_from) could not open an end.
///
/// ```
/// use tutti::world::{ChannelError, LocationId, World};
/// let world = World::builder().locations(2).workers(1).build().unwrap();
/// let loc = world.location(0).unwrap();
/// let e = loc.channel_to::<u8>(LocationId::new(9), 1).unwrap_err();
/// assert_eq!(
///     e,
///     ChannelError::NoSuchLocation { location: LocationId::new(9), locations: 2 }
/// );
/// assert_eq!(e.to_string(), "tutti::world: cannot open a channel with location 9: \
///     the world has 2 locations");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelError {
    /// The peer is not a location of the world.
    NoSuchLocation {
        /// The location asked for.
        location: LocationId,
        /// The world's number of locations.
        locations: usize,
    },
    /// The capacity is larger than a channel can hold (`u32::MAX` values).
    Capacity(usize),
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelError::NoSuchLocation {
                location,
                locations,
            } => write!(
                f,
                "tutti::world: cannot open a channel with {location}: \
                 the world has {locations} locations"
            ),
            ChannelError::Capacity(c) => write!(
                f,
                "tutti::world: a channel capacity of {c} values is more than {} allowed",
                u32::MAX
            ),
        }
    }
}

impl Error for ChannelError {}

/// Why a send on a [`RemoteTx`](crate::world::RemoteTx) did not send; the
/// value comes back in every case.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteSendError<T> {
    /// The channel is full ([`try_send`](crate::world::RemoteTx::try_send) only).
    Full(T),
    /// The receiving end was dropped.
    Closed(T),
    /// The receiving end's rank died.
    RankDied {
        /// The rank that died.
        rank: usize,
        /// The value that was not sent.
        value: T,
    },
    /// The value's `Serialize` failed on its way to another rank.
    Encode {
        /// The value that was not sent.
        value: T,
        /// The codec's error.
        why: String,
    },
}

impl<T> RemoteSendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// use tutti::world::RemoteSendError;
    /// assert_eq!(RemoteSendError::Full(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            RemoteSendError::Full(v)
            | RemoteSendError::Closed(v)
            | RemoteSendError::RankDied { value: v, .. }
            | RemoteSendError::Encode { value: v, .. } => v,
        }
    }
}

impl<T> fmt::Debug for RemoteSendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteSendError::Full(_) => f.write_str("Full(..)"),
            RemoteSendError::Closed(_) => f.write_str("Closed(..)"),
            RemoteSendError::RankDied { rank, .. } => f
                .debug_struct("RankDied")
                .field("rank", rank)
                .finish_non_exhaustive(),
            RemoteSendError::Encode { why, .. } => f
                .debug_struct("Encode")
                .field("why", why)
                .finish_non_exhaustive(),
        }
    }
}

impl<T> fmt::Display for RemoteSendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteSendError::Full(_) => f.write_str("tutti::world: the channel is full"),
            RemoteSendError::Closed(_) => {
                f.write_str("tutti::world: the channel's receiving end was dropped")
            }
            RemoteSendError::RankDied { rank, .. } => write!(
                f,
                "tutti::world: rank {rank}, where the channel's receiving end lives, died"
            ),
            RemoteSendError::Encode { why, .. } => {
                write!(f, "tutti::world: the value does not encode: {why}")
            }
        }
    }
}

impl<T> Error for RemoteSendError<T> {}

/// Why a receive on a [`RemoteRx`](crate::world::RemoteRx) gave no value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteRecvError {
    /// No value is there now ([`try_recv`](crate::world::RemoteRx::try_recv) only).
    Empty,
    /// The sending end was dropped and every value it sent was received.
    Closed,
    /// The sending end's rank died (values it sent before were received).
    RankDied(usize),
    /// The value is not of the receiver's type (the message says which it is),
    /// or its bytes do not decode; the value is dropped.
    Decode(TakeError),
    /// The two ends were opened with different capacities.
    Capacity {
        /// The sending end's capacity.
        sender: u32,
        /// The receiving end's capacity.
        receiver: u32,
    },
}

impl fmt::Display for RemoteRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteRecvError::Empty => f.write_str("tutti::world: the channel is empty"),
            RemoteRecvError::Closed => {
                f.write_str("tutti::world: the channel's sending end was dropped")
            }
            RemoteRecvError::RankDied(rank) => write!(
                f,
                "tutti::world: rank {rank}, where the channel's sending end lives, died"
            ),
            RemoteRecvError::Decode(e) => fmt::Display::fmt(e, f),
            RemoteRecvError::Capacity { sender, receiver } => write!(
                f,
                "tutti::world: the channel's sending end was opened with capacity {sender}, \
                 its receiving end with {receiver}"
            ),
        }
    }
}

impl Error for RemoteRecvError {}
