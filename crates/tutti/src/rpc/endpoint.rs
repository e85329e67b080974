//! The endpoint's shared state and what it does with each arrival: the
//! handshake (server side); after it, every frame goes through the core's
//! serving side ([`crate::call::serve`]: answers filed, calls served to the
//! published objects, rejections counted), the endpoint adding only what is
//! its own (a control message after the handshake is rejected; a oneway call
//! that cannot be delivered is answered with a notice); and the end of a
//! connection (pending calls fail, failure callbacks fire).

use std::any::Any;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::connection::{self, After};
use super::failure::{Callbacks, Failure};
use super::link::{Conn, ConnId, Conns, OutLimits, Side};
use super::protocol::{self, Hello, HELLO, REFUSED, VERSION, WELCOME};
use super::RpcStats;
use crate::call::serve::{self, ServeCounters, Server, Target};
use crate::call::{CallError, Conversation, Refusal};
use crate::loom::{lock, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::msg::codec::{self, Format, Frame, FrameKind, Header};
use crate::runtime::JoinHandle;

pub(crate) struct Config {
    pub(crate) cookie: String,
    pub(crate) deadline: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) max_frame: u64,
    pub(crate) handshake_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_unsent: usize,
}

/// Refused clients whose sockets may linger at once (beyond, they close at once).
const MAX_LINGERING: usize = 64;

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
    /// The hosts being connected to now, with the tasks waiting for that
    /// (`dial.rs`): concurrent first calls share one connection.
    pub(crate) dialing: Mutex<HashMap<(SocketAddr, Format), Vec<std::task::Waker>>>,
    pub(crate) callbacks: Callbacks,
    pub(crate) counters: Counters,
    /// Incoming connections open now (against `max_connections`).
    incoming: AtomicUsize,
    /// Refused clients whose sockets linger now.
    lingering: AtomicUsize,
    /// The task accepting clients, if the endpoint listens.
    acceptor: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
}

/// The target number frames carry for the object at `path`.
pub(crate) fn target_of(path: &str) -> u64 {
    crate::msg::MsgId::from_name(path).get()
}

impl Inner {
    pub(crate) fn new(config: Config, local: Option<SocketAddr>) -> Inner {
        let conns = Arc::new(Conns::default());
        Inner {
            conv: Conversation::new(Arc::clone(&conns)),
            conns,
            config,
            local,
            published: Mutex::new(HashMap::new()),
            hosts: Mutex::new(HashMap::new()),
            dialing: Mutex::new(HashMap::new()),
            callbacks: Callbacks::default(),
            counters: Counters::default(),
            incoming: AtomicUsize::new(0),
            lingering: AtomicUsize::new(0),
            acceptor: Mutex::new(None),
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn note_error(&self, why: String) {
        self.counters.serving.note(why);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Starts accepting clients from `listener` (a task of the runtime).
    pub(crate) fn listen(self: &Arc<Self>, listener: crate::net::TcpListener) {
        let task = crate::runtime::spawn(connection::accept(Arc::clone(self), listener));
        *lock(&self.acceptor) = Some(task);
    }

    /// Closes the endpoint: it stops accepting, every connection ends and
    /// every waiting call fails. Returns once the listening socket is closed
    /// when called from outside the runtime's workers (a worker does not wait
    /// for the task it may have to run itself).
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(task) = lock(&self.acceptor).take() {
            let (tx, rx) = std::sync::mpsc::channel();
            task.on_finish(move |_| {
                let _ = tx.send(());
            });
            task.abort();
            if crate::runtime::worker_index().is_none() {
                let _ = rx.recv_timeout(Duration::from_secs(5));
            }
        }
        self.shut_down();
    }

    /// Whether a new client may connect: an error naming the limit if
    /// `max_connections` incoming connections are open (the count is taken
    /// then, and given back when the connection ends).
    pub(crate) fn admit(&self) -> Result<(), String> {
        let max = self.config.max_connections;
        let mut n = self.incoming.load(Ordering::Relaxed);
        loop {
            if n >= max {
                return Err(format!(
                    "too many connections: {n} are open and the limit is {max}"
                ));
            }
            // Relaxed: a counter; nothing else is published through it.
            match self
                .incoming
                .compare_exchange(n, n + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(now) => n = now,
            }
        }
    }

    /// Whether one more refused client may linger (see `connection::refuse`);
    /// [`lingered`](Self::lingered) gives the place back.
    pub(crate) fn linger(&self) -> bool {
        if self.lingering.fetch_add(1, Ordering::Relaxed) < MAX_LINGERING {
            true
        } else {
            self.lingered();
            false
        }
    }

    pub(crate) fn lingered(&self) {
        self.lingering.fetch_sub(1, Ordering::Relaxed);
    }

    /// A connection of this endpoint over `stream`.
    pub(crate) fn new_conn(
        &self,
        stream: crate::net::TcpStream,
        peer: SocketAddr,
        side: Side,
    ) -> Arc<Conn> {
        let limits = OutLimits {
            max_unsent: self.config.max_unsent,
            write_timeout: self.config.write_timeout,
        };
        Arc::new(Conn::new(self.conns.next_id(), stream, peer, side, limits))
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

    /// Adds a connection and starts its reader task.
    pub(crate) fn watch(self: &Arc<Self>, conn: Arc<Conn>) {
        self.conns.insert(Arc::clone(&conn));
        drop(crate::runtime::spawn(connection::read(
            Arc::clone(self),
            conn,
        )));
    }

    /// Takes over a welcomed socket to `addr` as this endpoint's connection
    /// to it in `format`, and starts reading it.
    pub(crate) fn adopt(
        self: &Arc<Self>,
        stream: crate::net::TcpStream,
        addr: SocketAddr,
        format: Format,
    ) -> ConnId {
        let conn = self.new_conn(stream, addr, Side::Outgoing);
        conn.set_format(format);
        let id = conn.id;
        lock(&self.hosts).insert((addr, format), id);
        self.counters.connects.fetch_add(1, Ordering::Relaxed);
        self.watch(conn);
        id
    }

    /// The open connection to `addr` in `format`, if there is one.
    pub(crate) fn host(&self, addr: SocketAddr, format: Format) -> Option<ConnId> {
        lock(&self.hosts).get(&(addr, format)).copied()
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
        if conn.side == Side::Incoming && super::link::is_question(bytes) {
            conn.owe();
        }
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
        conn.fail(why.to_string());
        self.conns.remove(conn.id);
        if conn.side == Side::Incoming {
            self.incoming.fetch_sub(1, Ordering::Relaxed);
        }
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

    /// The endpoint's last act: every connection ends, every waiting call fails.
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
