//! Transports: how frames move between the processes (ranks) of a world.
//!
//! Between the locations of one process nothing goes through a transport: typed
//! values move straight into the destination's inbox (`inproc.rs` is the
//! transport of a world that is one process). Across processes the world hands
//! [`Frame`]s to a [`Transport`] and receives them through a [`Sink`]. One file
//! per transport: `inproc.rs`, `mpi/` (feature `mpi`), `shm/` (processes of
//! one host); TCP is the next implementation of the same trait.

pub(crate) mod inproc;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;
pub(crate) mod shm;

use std::sync::Arc;

use super::error::WorldError;
use super::frame::Frame;
use crate::msg::{check_digests, codec, Digest};

/// The start-up check that every rank registered the same message types
/// ([`crate::msg::register`]): `encoded[r]` is rank `r`'s [`Digest`] in the
/// codec's format, as the ranks exchanged them. Every rank runs it on the same
/// input, so all reach the same verdict and fail together.
pub(crate) fn agree_on_registries(encoded: &[&[u8]]) -> Result<(), WorldError> {
    let mut digests = Vec::with_capacity(encoded.len());
    for (rank, bytes) in encoded.iter().enumerate() {
        let d = codec::decode::<Digest>(bytes).map_err(|e| {
            WorldError::Transport(format!(
                "rank {rank}'s message registry digest does not decode: {e}"
            ))
        })?;
        digests.push(d);
    }
    check_digests(&digests).map_err(WorldError::Registry)
}

/// Where a transport delivers what arrives: the world of this rank.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) trait Sink: Send + Sync {
    /// A frame from `from_rank`, in the order that rank sent it. An error means
    /// the frame is malformed, or breaks the protocol (a collective of another
    /// kind than this rank's); its text says which and names the rank, and the
    /// transport takes the job down with it.
    fn deliver(
        &self,
        from_rank: usize,
        head: Arc<[u8]>,
        body: Option<Vec<u8>>,
    ) -> Result<(), String>;
    /// [`deliver`](Self::deliver) for a frame without a body whose head is
    /// borrowed (from a posted receive buffer): a sink may copy out only what it
    /// keeps (a single message) instead of the whole head.
    fn deliver_head(&self, from_rank: usize, head: &[u8]) -> Result<(), String> {
        self.deliver(from_rank, Arc::from(head), None)
    }
    /// A buffer to receive a body of `len` bytes into, if one is kept for
    /// reuse (its contents are overwritten).
    fn body_buffer(&self, len: usize) -> Option<Vec<u8>>;
    /// A body buffer whose send completed, for reuse.
    fn recycle(&self, buffer: Vec<u8>);
    /// The sums over all ranks of quiescence wave `epoch` (see
    /// [`Transport::sum_wave`]).
    fn summed(&self, epoch: u64, sums: [u64; 2]);
    /// Rank `rank` died (the transport detected it; told once): what waits on
    /// it — questions, collectives — fails naming it.
    fn rank_died(&self, rank: usize);
    /// Rank `rank`, dead, was taken by a new process (a new incarnation of a
    /// shared-memory system's rank): messages to it go through again. What
    /// failed when it died stays failed (collectives included it).
    fn rank_revived(&self, rank: usize);
}

/// Moves frames between the ranks of a world.
pub(crate) trait Transport: Send + Sync {
    /// One line on the engine (library, thread level, progress mode).
    fn describe(&self) -> String;
    /// Hands `frame` over for rank `to` (never this rank). Does not block; frames
    /// to one rank arrive in the order they were handed over.
    fn send(&self, to: usize, frame: Frame);
    /// Sends a data frame of `head` whose body is `body`, borrowed: returns once
    /// the engine no longer reads `body` (MPI: its send completed), so a
    /// transport that can send from the caller's memory copies nothing. Ordered
    /// with [`send`](Self::send). This default copies the body.
    fn send_borrowed(&self, to: usize, head: Vec<u8>, body: &[u8]) {
        self.send(
            to,
            Frame {
                head,
                body: Some(body.to_vec()),
            },
        );
    }
    /// Starts summing this rank's contribution to quiescence wave `epoch` over
    /// all ranks with the engine's own messages; the result comes back through
    /// [`Sink::summed`]. `false` if this transport has
    /// no such collective (the world then uses its collective frames).
    fn sum_wave(&self, epoch: u64, value: [u64; 2]) -> bool {
        let _ = (epoch, value);
        false
    }
    /// Drives the engine once if nobody else does (polling mode); returns whether
    /// anything moved. A no-op for engines with their own progress thread.
    fn progress(&self) -> bool;
    /// Round `round` of a waiting location's spin (`Shared::spin_until`):
    /// drives the engine like [`progress`](Self::progress), or, where the
    /// engine can tell more cheaply that nothing has arrived, only looks
    /// (the shared-memory rings: one load of the mailbox's head slot) and
    /// drives it fully every few rounds. Returns whether anything moved.
    fn spin_round(&self, round: u32) -> bool {
        let _ = round;
        self.progress()
    }
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
    /// What an idle worker may block on instead of its condvar (the
    /// runtime's idle hook), for a polled engine whose input can wake it.
    fn idle_waiter(&self) -> Option<Arc<dyn crate::runtime::sleep::IdleWaiter>> {
        None
    }
    /// Whether the engine's input wakes an idle worker by itself — a parked
    /// worker blocked in its [`idle_waiter`](Self::idle_waiter), or a
    /// receiving thread that delivers what arrives — so that parked workers
    /// need not poll it on a timer (polling mode). MPI has nothing to wait on.
    fn input_wakes(&self) -> bool {
        false
    }
    /// Whether a waiting location spins on the engine itself (polling mode)
    /// before it yields its worker; not when idle workers block in the
    /// engine's [`idle_waiter`](Self::idle_waiter) (they spin adaptively).
    fn location_spins(&self) -> bool {
        true
    }
    /// For transport-specific operations (e.g. running user MPI code).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    fn as_any(&self) -> &dyn std::any::Any;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::msg::{Message, Registry, Remote};

    #[derive(Serialize, Deserialize)]
    struct Ping;
    impl Message for Ping {
        type Reply = ();
    }
    impl Remote for Ping {
        const NAME: &'static str = "transport.test.Ping";
    }

    #[derive(Serialize, Deserialize)]
    struct Pong;
    impl Message for Pong {
        type Reply = ();
    }
    impl Remote for Pong {
        const NAME: &'static str = "transport.test.Pong";
    }

    fn encoded(r: &Registry) -> Vec<u8> {
        let mut out = Vec::new();
        codec::encode(&r.digest(), &mut out).unwrap();
        out
    }

    #[test]
    fn ranks_that_registered_different_types_fail_naming_ranks_and_types() {
        let mut both = Registry::new();
        both.register::<Ping>().unwrap().register::<Pong>().unwrap();
        let mut one = Registry::new();
        one.register::<Ping>().unwrap();
        let (b, o) = (encoded(&both), encoded(&one));
        assert!(agree_on_registries(&[&b, &b, &b]).is_ok());
        assert!(agree_on_registries(&[]).is_ok());
        let e = agree_on_registries(&[&b, &b, &o]).unwrap_err();
        assert!(
            matches!(&e, WorldError::Registry(m) if m.ranks.len() == 1 && m.ranks[0].rank == 2)
        );
        let text = e.to_string();
        assert!(
            text.contains("rank 2 vs rank 0: lacks \"transport.test.Pong\""),
            "{text}"
        );
        assert!(text.contains("tutti::msg::register"), "{text}");
        let e = agree_on_registries(&[&o, &b]).unwrap_err().to_string();
        assert!(
            e.contains("rank 1 vs rank 0: has \"transport.test.Pong\""),
            "{e}"
        );
    }

    #[test]
    fn a_digest_that_does_not_decode_names_its_rank() {
        let b = encoded(&Registry::new());
        let e = agree_on_registries(&[&b, &[0xff, 0xff, 0xff]])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rank 1's message registry digest does not decode"),
            "{e}"
        );
    }
}
