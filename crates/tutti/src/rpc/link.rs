//! The RPC endpoint's [`Link`]: its TCP connections. A peer is one connection
//! ([`ConnId`]); a frame to it is written to the socket at once (calls are
//! latency-bound, so nothing is held back), under the connection's write lock
//! so that frames from concurrent callers never interleave. A write that fails
//! shuts the socket down, so that the reactor — the one place where a
//! connection's end is handled — sees it fail.

use crate::loom::{AtomicBool, AtomicU64, Ordering};
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;

use crate::call::{Link, LinkError};
use crate::loom::{lock, Mutex};
use crate::msg::codec::Format;

/// One connection of an endpoint, as a peer of its conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ConnId(pub(crate) u64);

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "connection {}", self.0)
    }
}

/// Whether this end opened the connection (to call a host) or accepted it (to
/// serve a client).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// Opened by a proxy of this endpoint.
    Outgoing,
    /// Accepted from a client.
    Incoming,
}

/// A TCP connection: the socket (read by the reactor, written by anyone under
/// `write`), the peer's address and the payload format chosen at connect.
pub(crate) struct Conn {
    pub(crate) id: ConnId,
    pub(crate) stream: TcpStream,
    pub(crate) peer: SocketAddr,
    pub(crate) side: Side,
    /// Set by the handshake (an incoming connection's format is the client's
    /// choice, known once its `Hello` has arrived).
    format: AtomicU64,
    write: Mutex<()>,
    /// Set once the connection has ended (its failure is handled once).
    pub(crate) ended: AtomicBool,
}

impl Conn {
    pub(crate) fn new(id: ConnId, stream: TcpStream, peer: SocketAddr, side: Side) -> Conn {
        Conn {
            id,
            stream,
            peer,
            side,
            format: AtomicU64::new(0),
            write: Mutex::new(()),
            ended: AtomicBool::new(false),
        }
    }

    /// `tcp://ip:port` of the other end.
    pub(crate) fn peer_url(&self) -> String {
        format!("tcp://{}", self.peer)
    }

    pub(crate) fn format(&self) -> Format {
        // Relaxed: set before the connection serves or sends any request (the
        // handshake), and read by the same threads afterwards through the table's lock.
        match self.format.load(Ordering::Relaxed) {
            1 => Format::Json,
            _ => Format::Binary,
        }
    }

    pub(crate) fn set_format(&self, f: Format) {
        self.format
            .store(u64::from(f == Format::Json), Ordering::Relaxed);
    }

    /// Writes whole frames; on failure the socket is shut down (the reactor
    /// then ends the connection) and the error names the peer.
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<(), LinkError> {
        let _w = lock(&self.write);
        (&self.stream).write_all(bytes).map_err(|e| {
            let _ = self.stream.shutdown(Shutdown::Both);
            LinkError {
                why: format!("{}: {e}", self.peer_url()),
                rank_died: None,
            }
        })
    }
}

/// The connections of an endpoint: its link.
#[derive(Default)]
pub(crate) struct Conns {
    table: Mutex<HashMap<ConnId, Arc<Conn>>>,
    next: AtomicU64,
}

impl Conns {
    pub(crate) fn next_id(&self) -> ConnId {
        // Relaxed: only uniqueness matters.
        ConnId(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    pub(crate) fn insert(&self, conn: Arc<Conn>) {
        lock(&self.table).insert(conn.id, conn);
    }

    pub(crate) fn get(&self, id: ConnId) -> Option<Arc<Conn>> {
        lock(&self.table).get(&id).cloned()
    }

    pub(crate) fn remove(&self, id: ConnId) -> Option<Arc<Conn>> {
        lock(&self.table).remove(&id)
    }

    pub(crate) fn drain(&self) -> Vec<Arc<Conn>> {
        lock(&self.table).drain().map(|(_, c)| c).collect()
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.table).len()
    }
}

impl Link for Conns {
    type Peer = ConnId;

    fn send_frame(&self, to: ConnId, frame: &[u8]) -> Result<(), LinkError> {
        match self.get(to) {
            Some(conn) => conn.write(frame),
            None => Err(LinkError {
                why: format!("{to} is closed"),
                rank_died: None,
            }),
        }
    }

    fn flush(&self, _to: ConnId) {}

    fn name(&self, peer: ConnId) -> String {
        match self.get(peer) {
            Some(c) => format!("{} ({peer})", c.peer_url()),
            None => format!("{peer} (closed)"),
        }
    }
}
