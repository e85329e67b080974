//! The RPC endpoint's [`Link`]: its TCP connections (`tutti::net` sockets on
//! the runtime's I/O driver). A peer is one connection ([`ConnId`]).
//!
//! **Writing never blocks.** A frame to a peer is written at once with a
//! non-blocking write (calls are latency-bound, so nothing is held back);
//! what the socket does not take waits in the connection's output queue, in
//! order, and one flusher task writes it as the socket drains. Frames from
//! concurrent writers never interleave: they are appended under the queue's
//! lock, and a frame goes to the socket directly only when the queue is
//! empty. So a peer that does not read stalls only its own connection; no
//! worker ever waits on its socket.
//!
//! **Back-pressure, per connection.** The queue is bounded (the endpoint's
//! `max_unsent`): while it holds more than half of it, the connection's
//! reader stops reading requests ([`Conn::room`]), so a peer that sends
//! requests without reading the answers stops being served; a frame that
//! would take the queue beyond the bound fails the connection (a single frame
//! larger than the bound is still taken into an empty queue, `max_frame`
//! bounds it); and a queue that makes no progress for the endpoint's
//! `write_timeout` fails it too. A failure records its reason and shuts the
//! socket down, so that the reader — the one place where a connection's end
//! is handled — ends it with that reason.

use crate::loom::{AtomicBool, AtomicU64, Ordering};
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::call::{Link, LinkError};
use crate::loom::{lock, Mutex};
use crate::msg::codec::{self, Format, FrameKind};
use crate::net::TcpStream;

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

/// How a connection's output queue is bounded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutLimits {
    /// Unsent bytes beyond which a frame fails the connection; reading pauses
    /// above half of it.
    pub(crate) max_unsent: usize,
    /// How long unsent bytes may wait without the socket taking any.
    pub(crate) write_timeout: Duration,
}

/// The output queue: bytes the socket has not taken yet, in order.
struct Out {
    bytes: Vec<u8>,
    /// Where the unsent bytes start in `bytes`.
    start: usize,
    /// Whether a flusher task is writing the queue (at most one is).
    flushing: bool,
    /// Why the connection failed, once it has.
    failed: Option<String>,
    /// The reader, waiting for the queue to shrink (`Conn::room`).
    reader: Option<Waker>,
}

impl Out {
    fn unsent(&self) -> usize {
        self.bytes.len() - self.start
    }
}

/// A TCP connection: the socket (read by the connection's reader task, written
/// by anyone through the output queue), the peer's address and the payload
/// format chosen at connect.
pub(crate) struct Conn {
    pub(crate) id: ConnId,
    pub(crate) stream: TcpStream,
    pub(crate) peer: SocketAddr,
    pub(crate) side: Side,
    /// Set by the handshake (an incoming connection's format is the client's
    /// choice, known once its `Hello` has arrived).
    format: AtomicU64,
    out: Mutex<Out>,
    limits: OutLimits,
    /// Set once the connection has ended (its failure is handled once).
    pub(crate) ended: AtomicBool,
    /// Questions a client asked on this (incoming) connection whose answers
    /// have not been written yet: a client that half-closes after its calls
    /// gets them before the connection ends ([`Conn::settled`]).
    owed: AtomicU64,
}

impl Conn {
    pub(crate) fn new(
        id: ConnId,
        stream: TcpStream,
        peer: SocketAddr,
        side: Side,
        limits: OutLimits,
    ) -> Conn {
        Conn {
            id,
            stream,
            peer,
            side,
            format: AtomicU64::new(0),
            out: Mutex::new(Out {
                bytes: Vec::new(),
                start: 0,
                flushing: false,
                failed: None,
                reader: None,
            }),
            limits,
            ended: AtomicBool::new(false),
            owed: AtomicU64::new(0),
        }
    }

    /// A question arrived on this connection: its answer is owed.
    pub(crate) fn owe(&self) {
        self.owed.fetch_add(1, Ordering::AcqRel);
    }

    /// An answer was written (or failed to be: the connection failed then):
    /// one question less, and the reader waiting in [`Conn::settled`] looks
    /// again when none is left.
    fn paid(&self) {
        let mut n = self.owed.load(Ordering::Acquire);
        // Never below zero: an answer to a question not counted (its header
        // did not parse here) changes nothing.
        while n > 0 {
            match self
                .owed
                .compare_exchange_weak(n, n - 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if n == 1 {
                        wake_reader(&mut lock(&self.out));
                    }
                    return;
                }
                Err(now) => n = now,
            }
        }
    }

    /// Ready once every owed answer is written and the socket has taken
    /// every queued byte, or the connection has failed. The lock orders it
    /// with [`Conn::paid`]: the count is read under it, and a payment after
    /// the read wakes the waker stored under it.
    fn poll_settled(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut out = lock(&self.out);
        if out.failed.is_some() || (self.owed.load(Ordering::Acquire) == 0 && out.unsent() == 0) {
            out.reader = None;
            Poll::Ready(())
        } else {
            out.reader = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    /// Waits until every owed answer has gone out (see
    /// [`poll_settled`](Self::poll_settled)): the reader, at the end of
    /// the client's requests, before it ends the connection.
    pub(crate) async fn settled(&self) {
        std::future::poll_fn(|cx| self.poll_settled(cx)).await
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

    fn link_error(&self, why: &str) -> LinkError {
        LinkError {
            why: format!("{}: {why}", self.peer_url()),
            rank_died: None,
        }
    }

    /// Writes whole frames without blocking: to the socket at once when
    /// nothing waits before them, else (and for what the socket does not
    /// take) into the output queue, which a flusher task writes out. An error
    /// when the connection has failed, or fails now (a write error, a queue
    /// over its bound: see the module doc); nothing of `bytes` was queued then.
    pub(crate) fn write(self: &Arc<Self>, bytes: &[u8]) -> Result<(), LinkError> {
        let mut out = lock(&self.out);
        if let Some(why) = &out.failed {
            return Err(self.link_error(why));
        }
        let mut rest = bytes;
        if out.unsent() == 0 {
            while !rest.is_empty() {
                match self.stream.write_now(rest) {
                    Ok(0) => break,
                    Ok(n) => rest = &rest[n..],
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let why = e.to_string();
                        self.fail_locked(&mut out, why.clone());
                        return Err(self.link_error(&why));
                    }
                }
            }
            if rest.is_empty() {
                return Ok(());
            }
        }
        let unsent = out.unsent();
        if unsent > 0 && unsent + rest.len() > self.limits.max_unsent {
            let why = format!(
                "the peer does not read: {} bytes wait unsent (the limit is {})",
                unsent + rest.len(),
                self.limits.max_unsent
            );
            self.fail_locked(&mut out, why.clone());
            return Err(self.link_error(&why));
        }
        if out.start > 0 && out.start >= out.bytes.len() / 2 {
            let start = out.start;
            out.bytes.drain(..start);
            out.start = 0;
        }
        out.bytes.extend_from_slice(rest);
        if !out.flushing {
            out.flushing = true;
            drop(out);
            let conn = Arc::clone(self);
            drop(crate::runtime::spawn(async move { conn.flush().await }));
        }
        Ok(())
    }

    /// The flusher: writes the queue as the socket takes it, until it is
    /// empty; fails the connection when the socket takes nothing for
    /// `write_timeout`.
    async fn flush(self: Arc<Self>) {
        loop {
            let drained = crate::runtime::timeout(
                self.limits.write_timeout,
                std::future::poll_fn(|cx| self.poll_flush_some(cx)),
            )
            .await;
            match drained {
                Ok(true) => return,
                Ok(false) => {}
                Err(_) => {
                    let why = format!(
                        "the peer took no byte for {:?} ({} bytes wait unsent)",
                        self.limits.write_timeout,
                        lock(&self.out).unsent()
                    );
                    self.fail(why);
                    return;
                }
            }
        }
    }

    /// Writes queued bytes until the socket takes no more: `Ready(true)` when
    /// the queue is empty (the flusher ends) or the connection failed,
    /// `Ready(false)` after progress (a fresh `write_timeout` starts),
    /// `Pending` when the socket took nothing.
    fn poll_flush_some(&self, cx: &mut Context<'_>) -> Poll<bool> {
        let mut out = lock(&self.out);
        let mut progress = false;
        loop {
            if out.failed.is_some() {
                out.flushing = false;
                return Poll::Ready(true);
            }
            if out.unsent() == 0 {
                out.bytes.clear();
                out.start = 0;
                out.flushing = false;
                if out.bytes.capacity() > self.limits.max_unsent {
                    out.bytes = Vec::new();
                }
                wake_reader(&mut out);
                return Poll::Ready(true);
            }
            let r = self.stream.poll_write_shared(cx, &out.bytes[out.start..]);
            match r {
                Poll::Ready(Ok(0)) => {
                    self.fail_locked(&mut out, "the socket took no more bytes".into());
                }
                Poll::Ready(Ok(n)) => {
                    out.start += n;
                    progress = true;
                    if out.unsent() <= self.limits.max_unsent / 2 {
                        wake_reader(&mut out);
                    }
                }
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => self.fail_locked(&mut out, e.to_string()),
                Poll::Pending if progress => return Poll::Ready(false),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Ready while the output queue has room for more answers (at most half
    /// of `max_unsent` waits) or the connection has failed: the reader waits
    /// here before reading more requests.
    pub(crate) fn poll_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut out = lock(&self.out);
        if out.failed.is_some() || out.unsent() <= self.limits.max_unsent / 2 {
            out.reader = None;
            Poll::Ready(())
        } else {
            out.reader = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    /// Waits for room in the output queue (see [`poll_room`](Self::poll_room)).
    pub(crate) async fn room(&self) {
        std::future::poll_fn(|cx| self.poll_room(cx)).await
    }

    /// Why the connection failed, if it has.
    pub(crate) fn failure(&self) -> Option<String> {
        lock(&self.out).failed.clone()
    }

    /// Fails the connection (the first reason stays): nothing more is
    /// written, the socket is shut down and the reader woken, so that it
    /// ends the connection with this reason.
    pub(crate) fn fail(&self, why: String) {
        let mut out = lock(&self.out);
        self.fail_locked(&mut out, why);
    }

    fn fail_locked(&self, out: &mut Out, why: String) {
        if out.failed.is_none() {
            out.failed = Some(why);
        }
        out.bytes = Vec::new();
        out.start = 0;
        let _ = self.stream.shutdown(Shutdown::Both);
        wake_reader(out);
    }
}

fn wake_reader(out: &mut Out) {
    if let Some(w) = out.reader.take() {
        w.wake();
    }
}

/// Whether `frame` answers a question (a reply or a fault).
fn is_answer(frame: &[u8]) -> bool {
    matches!(
        codec::decode_frame(frame).map(|f| f.header().kind),
        Ok(FrameKind::Reply | FrameKind::Fault)
    )
}

/// Whether `frame` is a question (its answer will be owed).
pub(crate) fn is_question(frame: &[u8]) -> bool {
    codec::decode_frame(frame)
        .is_ok_and(|f| f.header().kind == FrameKind::Ask && f.header().corr != 0)
}

/// Deadline arithmetic that cannot overflow.
pub(crate) fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .unwrap_or(now + Duration::from_secs(86_400 * 365))
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
            Some(conn) => {
                let written = conn.write(frame);
                if conn.side == Side::Incoming && is_answer(frame) {
                    conn.paid();
                }
                written
            }
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
