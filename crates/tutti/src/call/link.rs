//! The seam between the request/reply core and what carries its frames.
//!
//! The core encodes a question, a statement, a reply or a fault as one `msg`
//! codec frame and hands it to a [`Link`] for a peer. Whoever owns the receiving
//! side (a world location's receive loop, an RPC connection's reader) gives each
//! frame that arrives back to the core together with the peer it came from; the
//! core completes the pending reply it answers, or returns the request for the
//! owner to serve. When the owner learns that a peer is gone (a rank died, a
//! node left, a TCP connection failed) it tells the core, which fails every
//! reply pending on that peer with an error naming it.

use std::fmt;
use std::hash::Hash;

/// Carries a conversation's frames to its peers.
///
/// Implemented by the world (peers are `LocationId`s; frames take the world's
/// transports and aggregation, and count for quiescence) and by `rpc` (peers
/// are connections to a host over TCP).
#[allow(dead_code)] // the seam: rmi, distributed actors and rpc move onto it
pub(crate) trait Link: Send + Sync {
    /// Who frames go to and come from.
    type Peer: Copy + Eq + Hash + fmt::Debug + fmt::Display + Send + Sync + 'static;

    /// Sends one complete codec frame to `to`. The link may hold it back to
    /// aggregate it with others; frames to one peer arrive in the order they
    /// were sent. An error means `to` cannot be reached (it left, it died, the
    /// connection failed) and says why; the frame was not sent.
    fn send_frame(&self, to: Self::Peer, frame: &[u8]) -> Result<(), LinkError>;

    /// Sends now whatever the link holds back for `to`: called before the
    /// core waits for a reply from it.
    fn flush(&self, to: Self::Peer);
}

/// A peer cannot be reached, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(dead_code)] // the seam: rmi, distributed actors and rpc move onto it
pub(crate) struct LinkError {
    /// What happened, naming the peer (e.g. "rank 2 died", "tcp://h:7000: connection refused").
    pub(crate) why: String,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for LinkError {}
