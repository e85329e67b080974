//! The endpoint's shared state and what it does with each arrival: the
//! handshake (server side), requests served by the published objects (as
//! `remote/serve.rs` serves exported actors), answers filed by the core, and
//! the end of a connection (pending calls fail, failure callbacks fire).

use crate::loom::{AtomicBool, AtomicU64, Ordering};
use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Registry};

use super::failure::{Callbacks, Failure};
use super::link::{Conn, ConnId, Conns, Side};
use super::protocol::{self, Hello, HELLO, REFUSED, VERSION, WELCOME};
use super::reactor::{token, After};
use super::vendor::Desk;
use super::{RpcError, RpcStats};
use crate::call::{CallError, Conversation, Received, Refusal};
use crate::loom::{lock, Mutex};
use crate::msg::codec::{self, Format, Frame, FrameKind, Limits, HEADER_LEN};
use crate::msg::RemoteReply;

pub(crate) struct Config {
    pub(crate) cookie: String,
    pub(crate) deadline: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) max_frame: u64,
}

/// Counters behind [`RpcStats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) calls: AtomicU64,
    pub(crate) oneway_sent: AtomicU64,
    pub(crate) oneway_failed: AtomicU64,
    pub(crate) served: AtomicU64,
    pub(crate) dead_letters: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) refused_connections: AtomicU64,
    pub(crate) connects: AtomicU64,
    pub(crate) connections_ended: AtomicU64,
}

/// A published object: its path and its desk.
pub(crate) struct Published {
    pub(crate) path: String,
    pub(crate) desk: Arc<dyn Desk>,
}

pub(crate) struct Inner {
    pub(crate) conv: Conversation<Arc<Conns>>,
    pub(crate) conns: Arc<Conns>,
    pub(crate) config: Config,
    /// Where this endpoint listens, if it does.
    pub(crate) local: Option<SocketAddr>,
    pub(crate) desks: Mutex<HashMap<u64, Published>>,
    /// The open connection to each host, per payload format.
    hosts: Mutex<HashMap<(SocketAddr, Format), ConnId>>,
    /// Held while connecting, so that concurrent first calls share one connection.
    connecting: Mutex<()>,
    pub(crate) callbacks: Callbacks,
    pub(crate) counters: Counters,
    last_error: Mutex<Option<String>>,
    registry: Registry,
    waker: mio::Waker,
    closed: AtomicBool,
}

/// Sends the answer to a call once its object has replied: the reply's own
/// waker writes the answer, from the task that replied — no task of its own,
/// no hop through the runtime's queues between the handler and the socket.
struct Answering {
    inner: Arc<Inner>,
    to: ConnId,
    corr: u64,
    /// `None` once answered.
    reply: Mutex<Option<RemoteReply>>,
}

impl Answering {
    fn start(inner: Arc<Inner>, to: ConnId, corr: u64, reply: RemoteReply) {
        let a = Arc::new(Answering {
            inner,
            to,
            corr,
            reply: Mutex::new(Some(reply)),
        });
        a.try_answer();
    }

    /// Polls the reply (registering this as its waker) and answers once it is there.
    fn try_answer(self: &Arc<Self>) {
        let mut slot = lock(&self.reply);
        let Some(reply) = slot.as_mut() else {
            return;
        };
        let waker = Waker::from(Arc::clone(self));
        let out = match Pin::new(reply).poll(&mut TaskContext::from_waker(&waker)) {
            Poll::Pending => return,
            Poll::Ready(out) => out,
        };
        *slot = None;
        drop(slot);
        let r = match &out {
            Ok(bytes) => Ok(&bytes[..]),
            Err(e) => Err(Refusal::Failed(e.to_string())),
        };
        let _ = self.inner.conv.answer(self.to, self.corr, r);
    }
}

impl Wake for Answering {
    fn wake(self: Arc<Self>) {
        self.try_answer();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.try_answer();
    }
}

/// The target number frames carry for the object at `path`.
pub(crate) fn target_of(path: &str) -> u64 {
    crate::msg::MsgId::from_name(path).get()
}

impl Inner {
    pub(crate) fn new(
        config: Config,
        local: Option<SocketAddr>,
        registry: Registry,
        waker: mio::Waker,
    ) -> Inner {
        let conns = Arc::new(Conns::default());
        Inner {
            conv: Conversation::new(Arc::clone(&conns)),
            conns,
            config,
            local,
            desks: Mutex::new(HashMap::new()),
            hosts: Mutex::new(HashMap::new()),
            connecting: Mutex::new(()),
            callbacks: Callbacks::default(),
            counters: Counters::default(),
            last_error: Mutex::new(None),
            registry,
            waker,
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn note_error(&self, why: String) {
        *lock(&self.last_error) = Some(why);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Closes the endpoint: the reactor stops and ends every connection.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _ = self.waker.wake();
    }

    pub(crate) fn stats(&self) -> RpcStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RpcStats {
            calls: get(&c.calls),
            oneway_sent: get(&c.oneway_sent),
            oneway_failed: get(&c.oneway_failed),
            served: get(&c.served),
            dead_letters: get(&c.dead_letters),
            malformed: get(&c.malformed),
            rejected: get(&c.rejected),
            refused_connections: get(&c.refused_connections),
            connects: get(&c.connects),
            connections_ended: get(&c.connections_ended),
            open_connections: self.conns.len() as u64,
            last_error: lock(&self.last_error).clone(),
        }
    }

    /// Adds a connection and lets the reactor watch it.
    pub(crate) fn watch(&self, conn: Arc<Conn>) {
        let fd = conn.stream.as_raw_fd();
        let id = conn.id;
        self.conns.insert(Arc::clone(&conn));
        if let Err(e) = self
            .registry
            .register(&mut SourceFd(&fd), token(id), Interest::READABLE)
        {
            self.end(&conn, &format!("cannot be watched: {e}"));
        }
    }

    /// The open connection to `addr` in `format`, connecting (with the
    /// handshake) if there is none: a connection that failed is replaced on
    /// the next use.
    pub(crate) fn connection(&self, addr: SocketAddr, format: Format) -> Result<ConnId, RpcError> {
        if let Some(&id) = lock(&self.hosts).get(&(addr, format)) {
            return Ok(id);
        }
        if self.is_closed() {
            return Err(RpcError::Endpoint("the endpoint is closed".into()));
        }
        let _one = lock(&self.connecting);
        if let Some(&id) = lock(&self.hosts).get(&(addr, format)) {
            return Ok(id);
        }
        let host = format!("tcp://{addr}");
        let stream = self.handshake(addr, format, &host)?;
        let conn = Arc::new(Conn::new(
            self.conns.next_id(),
            stream,
            addr,
            Side::Outgoing,
        ));
        conn.set_format(format);
        let id = conn.id;
        lock(&self.hosts).insert((addr, format), id);
        self.counters.connects.fetch_add(1, Ordering::Relaxed);
        self.watch(conn);
        Ok(id)
    }

    /// Connects to `addr` and says hello; the socket once welcomed.
    fn handshake(
        &self,
        addr: SocketAddr,
        format: Format,
        host: &str,
    ) -> Result<TcpStream, RpcError> {
        let cfg = &self.config;
        let connect_err = |e: std::io::Error| RpcError::Connect {
            host: host.to_string(),
            why: e.to_string(),
        };
        let mut s = TcpStream::connect_timeout(&addr, cfg.connect_timeout).map_err(connect_err)?;
        s.set_nodelay(true).map_err(connect_err)?;
        s.set_write_timeout(Some(cfg.write_timeout))
            .map_err(connect_err)?;
        s.set_read_timeout(Some(cfg.connect_timeout))
            .map_err(connect_err)?;
        let hello = Hello {
            version: VERSION,
            cookie: cfg.cookie.clone(),
            format,
        };
        let frame = protocol::frame(HELLO, &hello).map_err(|e| RpcError::Encode(e.to_string()))?;
        s.write_all(&frame).map_err(connect_err)?;
        // The answer, read exactly: nothing else is sent before it.
        let refused = |why: String| RpcError::Refused {
            host: host.to_string(),
            why,
        };
        let mut buf = vec![0u8; HEADER_LEN];
        s.read_exact(&mut buf)
            .map_err(|e| refused(format!("no handshake answer: {e}")))?;
        let small = Limits {
            max_payload: 64 << 10,
            ..Limits::DEFAULT
        };
        let total = codec::frame_len(&buf, &small)
            .map_err(|e| refused(format!("not a tutti RPC endpoint: {e}")))?
            .unwrap_or(HEADER_LEN);
        buf.resize(total, 0);
        s.read_exact(&mut buf[HEADER_LEN..])
            .map_err(|e| refused(format!("a cut handshake answer: {e}")))?;
        let f = codec::decode_frame(&buf)
            .map_err(|e| refused(format!("a bad handshake answer: {e}")))?;
        match (f.header().kind, f.header().msg) {
            (FrameKind::Control, m) if m == WELCOME => {}
            (FrameKind::Control, m) if m == REFUSED => {
                let why: String = f
                    .decode()
                    .unwrap_or_else(|e| format!("(undecodable reason: {e})"));
                return Err(refused(why));
            }
            _ => return Err(refused("an answer that is not a handshake".into())),
        }
        s.set_read_timeout(None).map_err(connect_err)?;
        Ok(s)
    }

    /// The first frame of an accepted connection: it must be a `Hello` with
    /// this endpoint's cookie.
    pub(crate) fn on_hello(&self, conn: &Arc<Conn>, bytes: &[u8]) -> After {
        let hello = codec::decode_frame(bytes).ok().and_then(|f| {
            (f.header().kind == FrameKind::Control && f.header().msg == HELLO)
                .then(|| f.decode::<Hello>().ok())
                .flatten()
        });
        let refuse = |why: String, counter: &AtomicU64| {
            counter.fetch_add(1, Ordering::Relaxed);
            if let Ok(f) = protocol::frame(REFUSED, &why) {
                let _ = conn.write(&f);
            }
            let why = format!("refused {}: {why}", conn.peer_url());
            self.note_error(why.clone());
            After::End(why)
        };
        let c = &self.counters;
        match hello {
            None => refuse("the first frame is not a handshake".into(), &c.malformed),
            Some(h) if h.version != VERSION => refuse(
                format!(
                    "protocol version {} (this endpoint speaks {VERSION})",
                    h.version
                ),
                &c.refused_connections,
            ),
            Some(h) if !protocol::same_cookie(&h.cookie, &self.config.cookie) => {
                refuse("wrong cookie".into(), &c.refused_connections)
            }
            Some(h) => {
                conn.set_format(h.format);
                match protocol::frame(WELCOME, &()) {
                    Ok(f) => match conn.write(&f) {
                        Ok(()) => After::Go,
                        Err(e) => After::End(e.why),
                    },
                    Err(e) => After::End(e.to_string()),
                }
            }
        }
    }

    /// A stream that lost its place: the peer is told why (best effort) and
    /// the connection ends.
    pub(crate) fn reject_stream(&self, conn: &Arc<Conn>, why: &str) {
        self.counters.malformed.fetch_add(1, Ordering::Relaxed);
        let bad = self.conv.reject(conn.id, None, why.to_string());
        self.note_error(bad.to_string());
    }

    /// One frame of an open connection.
    pub(crate) fn on_frame(self: &Arc<Self>, conn: &Arc<Conn>, bytes: &[u8]) -> After {
        let from = conn.id;
        for r in self.conv.receive(from, bytes) {
            match r {
                Received::Request(frame) => self.on_request(conn, &frame),
                Received::Control(frame) => {
                    self.reject(from, &frame, "a control message after the handshake")
                }
                Received::Rejected(cause) => {
                    self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                    self.note_error(format!(
                        "{} rejected a message from here: {cause}",
                        conn.peer_url()
                    ));
                }
                Received::Answered(_) => {}
                Received::Bad(bad) => {
                    self.counters.malformed.fetch_add(1, Ordering::Relaxed);
                    self.note_error(bad.to_string());
                }
            }
        }
        After::Go
    }

    fn reject(&self, from: ConnId, frame: &Frame<'_>, cause: &str) {
        // Counted before the sender is told, so that it sees the count.
        self.counters.malformed.fetch_add(1, Ordering::Relaxed);
        let bad = self.conv.reject(from, Some(frame.header()), cause);
        self.note_error(bad.to_string());
    }

    /// A call (`Ask`) or a oneway call (`Tell`) for a published object.
    fn on_request(self: &Arc<Self>, conn: &Arc<Conn>, frame: &Frame<'_>) {
        let h = *frame.header();
        let from = conn.id;
        if h.kind == FrameKind::Tell && h.corr != 0 {
            let why = format!(
                "a run of {} calls in one frame (a connection takes one per frame)",
                h.corr.saturating_add(1)
            );
            return self.reject(from, frame, &why);
        }
        let desk = lock(&self.desks)
            .get(&h.target)
            .map(|p| Arc::clone(&p.desk));
        let outcome = match desk {
            Some(d) => d.incoming(frame, conn.format()),
            None => Err(Refusal::NoTarget),
        };
        match (h.kind, outcome) {
            (FrameKind::Tell, Ok(_)) => {
                self.counters.served.fetch_add(1, Ordering::Relaxed);
            }
            // Bytes that do not decode as what they claim, or a method the
            // object does not publish: the core's policy for bad bytes.
            (_, Err(Refusal::Failed(why))) => self.reject(from, frame, &why),
            (FrameKind::Tell, Err(r)) => {
                // A oneway call that cannot be delivered: counted here, and the
                // caller is told (it counts it too).
                self.counters.dead_letters.fetch_add(1, Ordering::Relaxed);
                let why = format!(
                    "a oneway call to object #{:x} was not delivered: {r}",
                    h.target
                );
                let bad = self.conv.reject(from, Some(&h), why);
                self.note_error(bad.to_string());
            }
            (_, Ok(Some(reply))) => {
                self.counters.served.fetch_add(1, Ordering::Relaxed);
                Answering::start(Arc::clone(self), from, h.corr, reply);
            }
            (_, Ok(None)) => {
                let why = Refusal::Failed("a question without a reply slot".into());
                let _ = self.conv.answer(from, h.corr, Err(why));
            }
            (_, Err(r)) => {
                let _ = self.conv.answer(from, h.corr, Err(r));
            }
        }
    }

    /// Ends a connection once: the socket is closed, the calls waiting on it
    /// fail with an error naming the host, and the failure callbacks whose
    /// pattern matches the other end run (as tasks of the runtime).
    pub(crate) fn end(&self, conn: &Arc<Conn>, why: &str) {
        if conn.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        let fd = conn.stream.as_raw_fd();
        let _ = self.registry.deregister(&mut SourceFd(&fd));
        let _ = conn.stream.shutdown(Shutdown::Both);
        self.conns.remove(conn.id);
        lock(&self.hosts).retain(|_, id| *id != conn.id);
        self.counters
            .connections_ended
            .fetch_add(1, Ordering::Relaxed);
        let failed_calls = self.conv.peer_gone(conn.id, why);
        let host = conn.peer_url();
        let callbacks = self.callbacks.matching(&host);
        if !callbacks.is_empty() {
            let failure = Failure {
                host,
                outgoing: conn.side == Side::Outgoing,
                why: why.to_string(),
                failed_calls,
            };
            drop(crate::runtime::spawn(async move {
                for f in callbacks {
                    f(&failure);
                }
            }));
        }
    }

    /// The reactor's last act: every connection ends, every waiting call fails.
    pub(crate) fn shut_down(&self) {
        for conn in self.conns.drain() {
            self.end(&conn, "the endpoint was closed");
        }
        self.conv.pending().fail_all(|peer| CallError::Gone {
            peer,
            why: "the endpoint was closed".into(),
        });
    }
}
