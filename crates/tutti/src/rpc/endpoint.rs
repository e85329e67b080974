//! The endpoint's shared state and what it does with each arrival: the
//! handshake (server side); after it, every frame goes through the core's
//! serving side ([`crate::call::serve`]: answers filed, calls served to the
//! published objects, rejections counted), the endpoint adding only what is
//! its own (a control message after the handshake is rejected; a oneway call
//! that cannot be delivered is answered with a notice); and the end of a
//! connection (pending calls fail, failure callbacks fire).

use std::any::Any;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Registry};

use super::failure::{Callbacks, Failure};
use super::link::{Conn, ConnId, Conns, Side};
use super::protocol::{self, Hello, HELLO, REFUSED, VERSION, WELCOME};
use super::reactor::{token, After};
use super::{RpcError, RpcStats};
use crate::call::serve::{self, ServeCounters, Server, Target};
use crate::call::{CallError, Conversation, Refusal};
use crate::loom::{lock, AtomicBool, AtomicU64, Mutex, Ordering};
use crate::msg::codec::{self, Format, Frame, FrameKind, Header, Limits, HEADER_LEN};

pub(crate) struct Config {
    pub(crate) cookie: String,
    pub(crate) deadline: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) max_frame: u64,
}

/// Counters behind [`RpcStats`]: the calling side's, the connections', and
/// the core's serving side's (with the last error).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) calls: AtomicU64,
    pub(crate) oneway_sent: AtomicU64,
    pub(crate) oneway_failed: AtomicU64,
    pub(crate) refused_connections: AtomicU64,
    pub(crate) connects: AtomicU64,
    pub(crate) connections_ended: AtomicU64,
    pub(crate) serving: ServeCounters,
}

/// A published object: its path, the target its calls from connections are
/// served to, and its typed path for local proxies (an `Arc<dyn Deliver<O>>`).
pub(crate) struct Published {
    pub(crate) path: String,
    pub(crate) target: Arc<dyn Target>,
    pub(crate) local: Box<dyn Any + Send + Sync>,
}

pub(crate) struct Inner {
    pub(crate) conv: Conversation<Arc<Conns>>,
    pub(crate) conns: Arc<Conns>,
    pub(crate) config: Config,
    /// Where this endpoint listens, if it does.
    pub(crate) local: Option<SocketAddr>,
    /// The published objects, by target number ([`target_of`] their path).
    pub(crate) published: Mutex<HashMap<u64, Published>>,
    /// The open connection to each host, per payload format.
    hosts: Mutex<HashMap<(SocketAddr, Format), ConnId>>,
    /// Held while connecting, so that concurrent first calls share one connection.
    connecting: Mutex<()>,
    pub(crate) callbacks: Callbacks,
    pub(crate) counters: Counters,
    registry: Registry,
    waker: mio::Waker,
    closed: AtomicBool,
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
            published: Mutex::new(HashMap::new()),
            hosts: Mutex::new(HashMap::new()),
            connecting: Mutex::new(()),
            callbacks: Callbacks::default(),
            counters: Counters::default(),
            registry,
            waker,
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn note_error(&self, why: String) {
        self.counters.serving.note(why);
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
        let s = c.serving.snapshot();
        RpcStats {
            calls: get(&c.calls),
            oneway_sent: get(&c.oneway_sent),
            oneway_failed: get(&c.oneway_failed),
            served: s.served,
            dead_letters: s.dead_letters,
            malformed: s.malformed,
            rejected: s.rejected,
            refused_connections: get(&c.refused_connections),
            connects: get(&c.connects),
            connections_ended: get(&c.connections_ended),
            open_connections: self.conns.len() as u64,
            last_error: s.last_error,
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
        // `malformed`: bytes that are not a handshake, else a client refused.
        let refuse = |why: String, malformed: bool| {
            if malformed {
                self.counters.serving.malformed();
            } else {
                self.counters
                    .refused_connections
                    .fetch_add(1, Ordering::Relaxed);
            }
            if let Ok(f) = protocol::frame(REFUSED, &why) {
                let _ = conn.write(&f);
            }
            let why = format!("refused {}: {why}", conn.peer_url());
            self.note_error(why.clone());
            After::End(why)
        };
        match hello {
            None => refuse("the first frame is not a handshake".into(), true),
            Some(h) if h.version != VERSION => refuse(
                format!(
                    "protocol version {} (this endpoint speaks {VERSION})",
                    h.version
                ),
                false,
            ),
            Some(h) if !protocol::same_cookie(&h.cookie, &self.config.cookie) => {
                refuse("wrong cookie".into(), false)
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
        serve::reject(self, conn.id, None, why);
    }

    /// One frame of an open connection.
    pub(crate) fn on_frame(self: &Arc<Self>, conn: &Arc<Conn>, bytes: &[u8]) -> After {
        serve::receive(self, conn.id, bytes, conn.format());
        After::Go
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

impl Server for Inner {
    type Link = Arc<Conns>;

    fn conversation(&self) -> &Conversation<Arc<Conns>> {
        &self.conv
    }

    fn counters(&self) -> &ServeCounters {
        &self.counters.serving
    }

    fn target(&self, id: u64) -> Option<Arc<dyn Target>> {
        lock(&self.published)
            .get(&id)
            .map(|p| Arc::clone(&p.target))
    }

    /// After the handshake a connection carries only the conversation's
    /// frames.
    fn on_control(self: &Arc<Self>, from: ConnId, frame: &Frame<'_>) {
        let why = "a control message after the handshake";
        serve::reject(&**self, from, Some(frame.header()), why)
    }

    /// A oneway call's failure is silent to its caller, but its endpoint is
    /// told with a notice (and counts it as rejected).
    fn undelivered(&self, from: ConnId, h: &Header, why: Refusal) {
        let why = format!(
            "a oneway call to object #{:x} was not delivered: {why}",
            h.target
        );
        let bad = self.conv.reject(from, Some(h), why);
        self.note_error(bad.to_string());
    }
}
