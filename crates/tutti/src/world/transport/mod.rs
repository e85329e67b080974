//! Transports: how frames move between the processes (ranks) of a world.
//!
//! Between the locations of one process nothing goes through a transport: typed
//! values move straight into the destination's inbox (`inproc.rs` is the
//! transport of a world that is one process). Across processes the world hands
//! [`Frame`]s to a [`Transport`] and receives them through a [`Sink`]. One file
//! per transport: `inproc.rs`, `mpi/` (feature `mpi`); shared-memory and TCP
//! transports are the next implementations of the same trait.

pub(crate) mod inproc;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;

use std::sync::Arc;

use super::frame::Frame;

/// Where a transport delivers what arrives: the world of this rank.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) trait Sink: Send + Sync {
    /// A frame from `from_rank`, in the order that rank sent it. An error means
    /// the frame is malformed; the transport then takes the job down naming it.
    fn deliver(
        &self,
        from_rank: usize,
        head: Arc<[u8]>,
        body: Option<Vec<u8>>,
    ) -> Result<(), String>;
}

/// Moves frames between the ranks of a world.
pub(crate) trait Transport: Send + Sync {
    /// One line on the engine (library, thread level, progress mode).
    fn describe(&self) -> String;
    /// Hands `frame` over for rank `to` (never this rank). Does not block; frames
    /// to one rank arrive in the order they were handed over.
    fn send(&self, to: usize, frame: Frame);
    /// Drives the engine once if nobody else does (polling mode); returns whether
    /// anything moved. A no-op for engines with their own progress thread.
    fn progress(&self) -> bool;
    /// Starts sending the frames handed over so far, if nobody else does
    /// (polling mode; cheaper than a full [`progress`](Self::progress)).
    fn start_sends(&self);
    /// Whether waiting locations and idle workers must call [`progress`](Self::progress).
    fn polled(&self) -> bool;
    /// Takes the whole job down with `why` (naming this rank); never returns.
    fn abort(&self, why: &str) -> !;
    /// Completes outstanding sends, waits until every frame another rank sent
    /// here has arrived, and releases the engine (MPI_Finalize). Idempotent.
    fn shutdown(&self);
    /// For transport-specific operations (e.g. running user MPI code).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    fn as_any(&self) -> &dyn std::any::Any;
}
