//! Layer 4: URL-addressed remote procedure calls over TCP (Blip's loosely
//! coupled level), for programs that join and leave and may fail partially.
//!
//! An [`Rpc`] endpoint publishes objects under URLs,
//! `tcp://host:port/group/obj/name` (Blip's `stcp://` spelling is accepted),
//! and gives [`Proxy`]s for URLs. A published object's methods are its
//! `msg::Handler<M>` impls — the same ones actors and RMI run — for the message
//! types its [`Object::remote`] table lists. A proxy for an object of the same
//! endpoint is local: its calls move typed values, never bytes.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
//! use tutti::rpc::{Rpc, Vendor};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Add(u64);
//! impl Message for Add { type Reply = u64; }
//! impl Remote for Add { const NAME: &'static str = "doc.Add"; }
//!
//! #[derive(Default)]
//! struct Counter(u64);
//! impl Object for Counter {
//!     type Context = ();
//!     fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
//!         t.register::<Add>()?;
//!         Ok(())
//!     }
//! }
//! impl Handler<Add> for Counter {
//!     async fn handle(&mut self, m: Add, _: &mut ()) -> u64 { self.0 += m.0; self.0 }
//! }
//!
//! // A server on a free loopback port (the default) with a cookie…
//! let server = Rpc::builder().cookie("s3cret").build()?;
//! let url = server.publish("demo/counter/main", Counter::default(), Vendor::Sequential)?;
//! // …and a client: its proxy calls over TCP.
//! let client = Rpc::builder().cookie("s3cret").client_only().build()?;
//! let counter = client.proxy::<Counter>(&url.to_string())?;
//! assert!(!counter.is_local());
//! assert_eq!(counter.call_blocking(Add(2))?, 2);
//! counter.oneway(Add(3))?;
//! assert_eq!(tutti::block_on(counter.call(Add(0)))?, 5);
//! // The server's own proxy for it is local: no serialization.
//! assert!(server.proxy::<Counter>(&url.to_string())?.is_local());
//! # Ok::<(), tutti::rpc::RpcError>(())
//! ```
//!
//! # Calls
//!
//! [`Proxy::call`] awaits the reply, [`Proxy::call_blocking`] waits for it on
//! a plain thread, [`Proxy::oneway`] sends and waits for nothing. **Every call
//! has a deadline** (the endpoint's, 30 s by default, or the proxy's own):
//! [`RpcError::Timeout`] when it passes. Calls to one object run where its
//! vendor says ([`Vendor`], or the actor's own task for
//! [`Rpc::publish_actor`]): one at a time, in arrival order.
//!
//! # Connections
//!
//! A remote proxy's first call connects to the host (one connection per host
//! and payload format, shared by all proxies of the endpoint); the client's
//! first frame is a handshake with the protocol version, the **cookie** (a
//! shared secret: a client with another one is refused, and counted) and the
//! connection's **payload format**, the binary codec or JSON
//! ([`Rpc::proxy_with`]). Sockets have `TCP_NODELAY`. An endpoint listens on
//! **loopback only** unless built with another address.
//!
//! Frames are the request/reply core's (the internal `call` module): a call is an `Ask`
//! of the endpoint's conversation, a oneway call a `Tell`, the answer a
//! `Reply` or a `Fault`; a frame's `target` is the hash of the object's path.
//! Each connection is read by a task of the runtime, woken by its I/O driver
//! (`connection.rs`); frames are written without ever blocking a worker, and
//! a connection whose peer does not read its answers is held back alone
//! (`link.rs`).
//!
//! A server protects itself from its clients: a client must complete its
//! handshake within [`Builder::handshake_timeout`], at most
//! [`Builder::max_connections`] clients are connected at once (the next one
//! is refused with a reason), and a client's unsent answers are bounded by
//! [`Builder::max_unsent`].
//!
//! # Failures
//!
//! * When a connection fails or ends, every call waiting on it fails at once
//!   with [`RpcError::ConnectionLost`] naming the host, the callbacks
//!   registered with [`Rpc::on_failure`] for a URL pattern matching the other
//!   end run (Blip's failure manager), and the next call through a proxy for
//!   that host connects again.
//! * Bytes that break the rules — a frame with a bad length or header, an
//!   unknown method, a body that does not decode — are rejected under the
//!   core's one policy: a call is answered with [`RpcError::Fault`] naming the
//!   cause, anything else gets a notice; both ends count
//!   ([`RpcStats::malformed`], [`RpcStats::rejected`]). A frame longer than
//!   the endpoint's `max_frame` is refused before anything is allocated for it,
//!   and the connection is closed. Nothing panics.
//! * A oneway call's failure at the server is silent to its caller, as Blip
//!   documents, but counted on both sides ([`RpcStats::dead_letters`] there,
//!   [`RpcStats::rejected`] here).

mod connection;
mod dial;
mod endpoint;
mod error;
mod failure;
mod link;
mod protocol;
mod proxy;
mod url;
mod vendor;

#[cfg(all(test, not(loom)))]
mod tests;

pub use error::RpcError;
pub use failure::Failure;
#[cfg(feature = "fuzzing")]
pub(crate) use protocol::fuzz_hello;
#[doc(hidden)]
pub use proxy::method_error;
pub use proxy::{Client, IntoUrl, Proxy};
pub use url::Url;
pub use vendor::Vendor;

use std::any::Any;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use endpoint::{target_of, Config, Inner, Published};
use vendor::Grouped;

use crate::actor::{Actor, Addr};
use crate::call::serve::{Deliver, ServedObject, Target};
use crate::loom::lock;
use crate::msg::codec::Format;
use crate::msg::{Dispatch, Object};

/// Counters of an endpoint's traffic and failures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RpcStats {
    /// Calls made through this endpoint's proxies (local and remote).
    pub calls: u64,
    /// Oneway calls sent.
    pub oneway_sent: u64,
    /// Oneway calls that could not be sent (no connection, no object here).
    pub oneway_failed: u64,
    /// Calls and oneway calls from connections handed to published objects.
    pub served: u64,
    /// Oneway calls that arrived here and could not be delivered: no object
    /// published at their path, an actor that stopped or whose mailbox is full
    /// (the caller is told).
    pub dead_letters: u64,
    /// Frames rejected here under the bad-bytes policy (bad header or length,
    /// unknown method, undecodable body, a bad handshake).
    pub malformed: u64,
    /// Frames of this endpoint that the other end rejected (including oneway
    /// calls it could not deliver).
    pub rejected: u64,
    /// Clients refused: a wrong cookie or version, no handshake within the
    /// handshake timeout, or over the connection limit.
    pub refused_connections: u64,
    /// Connections this endpoint opened (a reconnection counts again).
    pub connects: u64,
    /// Connections that ended (failed, closed by either end, refused).
    pub connections_ended: u64,
    /// Connections open now.
    pub open_connections: u64,
    /// The last error seen (a rejected frame, a refused client, …).
    pub last_error: Option<String>,
}

/// How to build an [`Rpc`] endpoint.
#[derive(Debug)]
pub struct Builder {
    listen: Option<String>,
    cookie: String,
    deadline: Duration,
    connect_timeout: Duration,
    write_timeout: Duration,
    max_frame: u64,
    handshake_timeout: Duration,
    max_connections: usize,
    max_unsent: usize,
}

impl Builder {
    /// Listens on `addr` (`host:port`; port 0 picks a free one). The default
    /// is `127.0.0.1:0`: loopback only.
    pub fn listen(mut self, addr: &str) -> Self {
        self.listen = Some(addr.to_string());
        self
    }

    /// Does not listen: the endpoint only calls others.
    pub fn client_only(mut self) -> Self {
        self.listen = None;
        self
    }

    /// The shared secret every connection must present (default: the
    /// environment variable `TUTTI_RPC_COOKIE`, or empty).
    pub fn cookie(mut self, cookie: &str) -> Self {
        self.cookie = cookie.to_string();
        self
    }

    /// The deadline of every call of this endpoint's proxies (default 30 s).
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// How long connecting (and the handshake) may take (default 5 s).
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }

    /// How long a connection's unsent frames may wait without the peer
    /// taking a byte before the connection fails (default 10 s). Writes never
    /// block a worker: what the socket does not take waits in the
    /// connection's output queue ([`max_unsent`](Self::max_unsent)).
    pub fn write_timeout(mut self, d: Duration) -> Self {
        self.write_timeout = d;
        self
    }

    /// The largest frame payload accepted from a connection, in bytes
    /// (default 16 MiB); a longer one closes the connection.
    pub fn max_frame(mut self, bytes: u64) -> Self {
        self.max_frame = bytes.max(64);
        self
    }

    /// How long a client may take to send its whole handshake after it
    /// connected (default 5 s); a client that says nothing, or half a
    /// handshake, is dropped then, counted in
    /// [`RpcStats::refused_connections`] and named in
    /// [`RpcStats::last_error`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let rpc = tutti::rpc::Rpc::builder()
    ///     .handshake_timeout(Duration::from_millis(200))
    ///     .build()
    ///     .unwrap();
    /// let addr = rpc.host_url().unwrap().replace("tcp://", "");
    /// let _silent = std::net::TcpStream::connect(addr).unwrap();
    /// while rpc.stats().refused_connections == 0 {
    ///     std::thread::sleep(Duration::from_millis(10));
    /// }
    /// assert!(rpc.stats().last_error.unwrap().contains("no handshake"));
    /// ```
    pub fn handshake_timeout(mut self, d: Duration) -> Self {
        self.handshake_timeout = d;
        self
    }

    /// How many clients may be connected at once (default 1024; at least
    /// 1). A client beyond it is refused: it gets [`RpcError::Refused`]
    /// naming the limit, and the connections already open are untouched.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// The bound on a connection's frames written but not yet taken by its
    /// socket, in bytes (default 4 MiB; at least 64 KiB). While more than
    /// half of it waits, the server reads no more requests from that client;
    /// a frame that would go beyond it fails the connection (a single frame
    /// up to `max_frame` is always taken into an empty queue). So a client
    /// that does not read its answers holds back only itself.
    pub fn max_unsent(mut self, bytes: usize) -> Self {
        self.max_unsent = bytes.max(64 << 10);
        self
    }

    /// Starts the endpoint: binds its address and starts accepting clients
    /// (a task of the current runtime).
    pub fn build(self) -> Result<Rpc, RpcError> {
        let io = |what: &str, e: std::io::Error| RpcError::Endpoint(format!("{what}: {e}"));
        let listener = match &self.listen {
            Some(a) => {
                let l =
                    TcpListener::bind(a).map_err(|e| io(&format!("cannot listen on {a}"), e))?;
                l.set_nonblocking(true).map_err(|e| io("listener", e))?;
                Some(l)
            }
            None => None,
        };
        let local = match &listener {
            Some(l) => Some(l.local_addr().map_err(|e| io("listener", e))?),
            None => None,
        };
        let listener = match listener {
            Some(l) => Some(crate::net::TcpListener::from_std(l).map_err(|e| io("listener", e))?),
            None => None,
        };
        let config = Config {
            cookie: self.cookie,
            deadline: self.deadline,
            connect_timeout: self.connect_timeout,
            write_timeout: self.write_timeout,
            max_frame: self.max_frame,
            handshake_timeout: self.handshake_timeout,
            max_connections: self.max_connections,
            max_unsent: self.max_unsent,
        };
        let inner = Arc::new(Inner::new(config, local));
        if let Some(l) = listener {
            inner.listen(l);
        }
        Ok(Rpc { inner })
    }
}

/// An RPC endpoint: publishes objects, makes proxies, watches connections.
/// Dropping it (or [`close`](Rpc::close)) closes every connection; calls
/// still waiting fail with [`RpcError::ConnectionLost`].
pub struct Rpc {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Rpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rpc")
            .field("listening", &self.inner.local)
            .finish_non_exhaustive()
    }
}

impl Rpc {
    /// The settings of a new endpoint (loopback, a free port).
    ///
    /// ```
    /// let rpc = tutti::rpc::Rpc::builder().listen("127.0.0.1:0").build().unwrap();
    /// assert!(rpc.host_url().unwrap().starts_with("tcp://127.0.0.1:"));
    /// ```
    pub fn builder() -> Builder {
        Builder {
            listen: Some("127.0.0.1:0".into()),
            cookie: std::env::var("TUTTI_RPC_COOKIE").unwrap_or_default(),
            deadline: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            max_frame: 16 << 20,
            handshake_timeout: Duration::from_secs(5),
            max_connections: 1024,
            max_unsent: 4 << 20,
        }
    }

    /// An endpoint with the default settings.
    pub fn new() -> Result<Rpc, RpcError> {
        Rpc::builder().build()
    }

    /// Where the endpoint listens, `tcp://ip:port` (`None` for a client only).
    pub fn host_url(&self) -> Option<String> {
        self.inner.local.map(|a| format!("tcp://{a}"))
    }

    fn url_of(&self, path: &str) -> Result<Url, RpcError> {
        url::check_path(path)?;
        let a = self
            .inner
            .local
            .ok_or_else(|| RpcError::Endpoint("a client-only endpoint cannot publish".into()))?;
        Ok(Url::new(a.ip().to_string(), a.port(), path.to_string()))
    }

    /// Publishes `target` at `path`; `local` is its typed path for local
    /// proxies (an `Arc<dyn Deliver<O>>`).
    fn add(
        &self,
        path: &str,
        target: Arc<dyn Target>,
        local: Box<dyn Any + Send + Sync>,
    ) -> Result<Url, RpcError> {
        let url = self.url_of(path)?;
        let mut published = lock(&self.inner.published);
        let id = target_of(path);
        if let Some(p) = published.get(&id) {
            return Err(RpcError::Taken(if p.path == path {
                path.to_string()
            } else {
                format!("{path} (its hash is that of {})", p.path)
            }));
        }
        published.insert(
            id,
            Published {
                path: path.to_string(),
                target,
                local,
            },
        );
        Ok(url)
    }

    /// Publishes `obj` at `path` (`group/obj/name`); its calls run where
    /// `vendor` says, one at a time. Its methods are the message types of
    /// [`Object::remote`]. Returns its URL.
    pub fn publish<O: Object>(&self, path: &str, obj: O, vendor: Vendor) -> Result<Url, RpcError>
    where
        O::Context: Default,
    {
        let mut table = Dispatch::new();
        O::remote(&mut table).map_err(|e| RpcError::Publish(e.to_string()))?;
        let grouped = Grouped::new(obj, O::Context::default(), vendor);
        let local: Arc<dyn Deliver<O>> = Arc::new(Arc::clone(&grouped));
        self.add(
            path,
            Arc::new(ServedObject::new(table, grouped)),
            Box::new(local),
        )
    }

    /// Publishes a running actor at `path`: its calls queue in its mailbox
    /// and run in its task, in order with its local messages. Its methods are
    /// the message types of `dispatch`. Returns its URL.
    pub fn publish_actor<A: Actor>(
        &self,
        path: &str,
        addr: &Addr<A>,
        dispatch: Dispatch<A>,
    ) -> Result<Url, RpcError> {
        let local: Arc<dyn Deliver<A>> = Arc::new(addr.clone());
        let target = ServedObject::new(dispatch, addr.clone());
        self.add(path, Arc::new(target), Box::new(local))
    }

    /// Withdraws the object at `path`: later calls get
    /// [`RpcError::NoObject`]. Whether it was published.
    pub fn withdraw(&self, path: &str) -> bool {
        lock(&self.inner.published)
            .remove(&target_of(path))
            .is_some()
    }

    /// A proxy for the object of type `O` at `url` (the [`Url`] that
    /// [`publish`](Self::publish) returned, or its text), binary payloads.
    pub fn proxy<O: Object>(&self, url: impl IntoUrl) -> Result<Proxy<O>, RpcError> {
        self.proxy_with(url, Format::Binary)
    }

    /// A client of the service published at `url` (see [`crate::service`]): the caller
    /// names the service's client type, never the server's implementation. Local if
    /// this endpoint publishes it (calls then move typed values), remote otherwise.
    pub fn client<C: Client>(&self, url: impl IntoUrl) -> Result<C, RpcError> {
        self.proxy::<C::Object>(url).map(C::from_proxy)
    }

    /// A proxy for the object at `url` whose connection carries payloads in
    /// `format` (a local proxy serializes nothing, whatever the format).
    /// Nothing is sent before the first call.
    pub fn proxy_with<O: Object>(
        &self,
        url: impl IntoUrl,
        format: Format,
    ) -> Result<Proxy<O>, RpcError> {
        let url = url.into_url()?;
        let addr = url.resolve()?;
        let here = self.inner.local.is_some_and(|l| {
            l.port() == addr.port()
                && (l.ip() == addr.ip() || (l.ip().is_unspecified() && addr.ip().is_loopback()))
        });
        if here {
            if let Some(p) = lock(&self.inner.published).get(&target_of(url.path())) {
                return match p.local.downcast_ref::<Arc<dyn Deliver<O>>>() {
                    Some(d) => Ok(Proxy::local(Arc::clone(&self.inner), url, Arc::clone(d))),
                    None => Err(RpcError::WrongType {
                        url: url.to_string(),
                        published: p.target.type_name(),
                    }),
                };
            }
        }
        Ok(Proxy::remote(Arc::clone(&self.inner), url, addr, format))
    }

    /// Calls `f` whenever a connection whose other end matches `pattern`
    /// fails or ends (`*` matches any characters: `"tcp://127.0.0.1:*"`, or
    /// `"*"` for all). Callbacks run as tasks of the runtime, after the calls
    /// waiting on the connection have failed.
    pub fn on_failure(&self, pattern: &str, f: impl Fn(&Failure) + Send + Sync + 'static) {
        self.inner.callbacks.add(pattern, Arc::new(f));
    }

    /// The endpoint's counters.
    pub fn stats(&self) -> RpcStats {
        self.inner.stats()
    }

    /// Closes the endpoint (as dropping it does): it stops listening, every
    /// connection ends and every waiting call fails.
    pub fn close(self) {}
}

impl Drop for Rpc {
    fn drop(&mut self) {
        self.inner.close();
    }
}
