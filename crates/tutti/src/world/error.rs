//! Errors of the world: start-up, sending, and running locations.

use std::error::Error;
use std::fmt;

use super::LocationId;

/// Why a [`World`](super::World) could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum WorldError {
    /// A setting (builder value or environment variable) is not usable.
    BadSetting {
        /// The environment variable the setting belongs to.
        var: &'static str,
        /// The value given.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// MPI is needed (launched by `mpirun` with several processes, or asked for)
    /// but this binary was built without the `mpi` feature.
    MpiNotBuilt {
        /// Processes in the job.
        size: usize,
        /// What asked for MPI (the launcher's variable or `TUTTI_TRANSPORT`).
        var: &'static str,
    },
    /// The rank's runtime could not start.
    Runtime(crate::runtime::BuildError),
    /// The transport could not start (e.g. MPI was already initialized, or offers
    /// too low a thread level).
    Transport(String),
    /// The ranks disagree on the number of locations per rank.
    LocationsDiffer {
        /// This rank's setting.
        here: usize,
        /// Another rank's setting.
        there: usize,
        /// That rank.
        rank: usize,
    },
    /// The ranks registered different message types
    /// ([`tutti::msg::register`](crate::msg::register)) or run on different
    /// platforms: the error names each differing rank and type.
    Registry(crate::msg::Mismatch),
}

impl fmt::Display for WorldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldError::BadSetting {
                var,
                value,
                expected,
            } => write!(f, "{var}={value:?} is not valid: expected {expected}"),
            WorldError::MpiNotBuilt { size, var } => write!(
                f,
                "MPI is needed ({var} asks for it, {size} process(es)) but tutti was built \
                 without MPI: rebuild with `--features mpi` (see the README's MPI section)"
            ),
            WorldError::Runtime(e) => write!(f, "the rank's runtime could not start: {e}"),
            WorldError::Transport(why) => write!(f, "the transport could not start: {why}"),
            WorldError::LocationsDiffer { here, there, rank } => write!(
                f,
                "ranks disagree on locations per rank: {here} here, {there} on rank {rank} \
                 (set TUTTI_LOCATIONS the same everywhere)"
            ),
            WorldError::Registry(m) => write!(
                f,
                "{m} (register the same types with tutti::msg::register on every rank \
                 before building the world)"
            ),
        }
    }
}

impl Error for WorldError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            WorldError::Runtime(e) => Some(e),
            WorldError::Registry(m) => Some(m),
            _ => None,
        }
    }
}

/// Why a send failed. The message comes back.
///
/// ```
/// use tutti::world::{LocationId, SendError, World};
/// let world = World::builder().locations(1).workers(1).build().unwrap();
/// let out = world.run(|loc| async move { loc.send(LocationId::new(5), 1u8) });
/// let e = out[0].clone().unwrap_err();
/// assert_eq!(e, SendError::NoSuchLocation(LocationId::new(5), 1u8));
/// // Like every send error of tutti, its message names its layer.
/// assert!(e.to_string().starts_with("tutti::world: there is no location 5"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub enum SendError<T> {
    /// No location has this id.
    NoSuchLocation(LocationId, T),
    /// The destination is on another rank and the value was sent with
    /// [`Location::send_value`](super::Location::send_value), which moves
    /// values only within a rank.
    NotLocal(LocationId, T),
    /// The destination's process died without leaving (shared-memory systems:
    /// killed or crashed; detected by pid liveness).
    RankDied(LocationId, T),
    /// The destination is on another rank and the value's `Serialize`
    /// implementation failed (the codec's reason is the string).
    Encode(LocationId, T, String),
}

impl<T> SendError<T> {
    /// The message that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            SendError::NoSuchLocation(_, v)
            | SendError::NotLocal(_, v)
            | SendError::RankDied(_, v)
            | SendError::Encode(_, v, _) => v,
        }
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NoSuchLocation(id, _) => write!(f, "NoSuchLocation({id:?}, ..)"),
            SendError::NotLocal(id, _) => write!(f, "NotLocal({id:?}, ..)"),
            SendError::RankDied(id, _) => write!(f, "RankDied({id:?}, ..)"),
            SendError::Encode(id, _, why) => write!(f, "Encode({id:?}, .., {why:?})"),
        }
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NoSuchLocation(id, _) => write!(f, "tutti::world: there is no {id} in this world"),
            SendError::NotLocal(id, _) => write!(
                f,
                "tutti::world: {id} is on another rank: a value sent with send_value cannot cross processes (use send)"
            ),
            SendError::RankDied(id, _) => {
                write!(f, "tutti::world: {id} is on a process that died (killed or crashed)")
            }
            SendError::Encode(id, _, why) => write!(
                f,
                "tutti::world: the message for {id} (on another rank) does not serialize: {why}"
            ),
        }
    }
}

impl<T> Error for SendError<T> {}

/// A location's body panicked during [`World::try_run`](super::World::try_run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocationPanic {
    /// The location whose body panicked.
    pub location: LocationId,
    /// The panic message.
    pub message: String,
}

impl fmt::Display for LocationPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} panicked: {}", self.location, self.message)
    }
}

impl Error for LocationPanic {}
