//! The seam between the request/reply core and what carries its frames.
//!
//! The core encodes a question, a statement, a reply or a fault as `msg` codec
//! frames and hands them to a [`Link`] for a peer. Whoever owns the receiving
//! side (a world location's receive loop, an RPC connection's reader) gives each
//! frame that arrives back to the core together with the peer it came from; the
//! core completes the pending reply it answers, or returns the request for the
//! owner to serve. When the owner learns that a peer is gone (a rank died, a
//! node left, a TCP connection failed) it tells the core, which fails every
//! reply pending on that peer with an error naming it.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

/// Carries a conversation's frames to its peers.
///
/// Implemented by the world (peers are `LocationId`s; frames take the world's
/// transports and aggregation, and count for quiescence) and by `rpc` (peers
/// are connections to a host over TCP).
pub(crate) trait Link: Send + Sync {
    /// Who frames go to and come from.
    type Peer: Copy + Eq + Hash + fmt::Debug + fmt::Display + Send + Sync + 'static;

    /// Sends complete codec frames (one, or several concatenated: a batch) to
    /// `to`. The link may hold them back to aggregate them with others; frames
    /// to one peer arrive in the order they were sent, and a batch arrives
    /// whole. An error means `to` cannot be reached (it left, it died, the
    /// connection failed) and says why; nothing was sent.
    fn send_frame(&self, to: Self::Peer, frame: &[u8]) -> Result<(), LinkError>;

    /// Sends now whatever the link holds back for `to`: called before the
    /// core waits for a reply from it.
    fn flush(&self, to: Self::Peer);

    /// How errors name `peer` (e.g. "location 3 (rank 1)"); its `Display` by
    /// default.
    fn name(&self, peer: Self::Peer) -> String {
        peer.to_string()
    }

    /// The number frames to `peer` carry in their header's `dst` (and frames
    /// from it in `src`), which the core checks on arrival; 0 where the link
    /// has no such numbering (a connection is its own address).
    fn wire_id(&self, peer: Self::Peer) -> u32 {
        let _ = peer;
        0
    }

    /// This end's number in frame headers (see [`wire_id`](Self::wire_id)).
    fn local_wire_id(&self) -> u32 {
        0
    }
}

impl<L: Link + ?Sized> Link for Arc<L> {
    type Peer = L::Peer;

    fn send_frame(&self, to: Self::Peer, frame: &[u8]) -> Result<(), LinkError> {
        (**self).send_frame(to, frame)
    }

    fn flush(&self, to: Self::Peer) {
        (**self).flush(to)
    }

    fn name(&self, peer: Self::Peer) -> String {
        (**self).name(peer)
    }

    fn wire_id(&self, peer: Self::Peer) -> u32 {
        (**self).wire_id(peer)
    }

    fn local_wire_id(&self) -> u32 {
        (**self).local_wire_id()
    }
}

/// A peer cannot be reached, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LinkError {
    /// What happened, naming the peer (e.g. "rank 2 died", "tcp://h:7000: connection refused").
    pub(crate) why: String,
    /// The rank of the peer, if it cannot be reached because that rank died.
    pub(crate) rank_died: Option<usize>,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for LinkError {}
