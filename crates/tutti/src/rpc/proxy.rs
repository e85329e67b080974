//! Proxies: a published object's stand-in at the caller. A proxy for an object
//! of this endpoint is **local**: its calls hand the typed message to the
//! object's vendor, with no serialization. Any other is **remote**: its calls
//! are questions of the endpoint's conversation over a connection to the host
//! (made on first use, and made again after a failure).

use crate::loom::Ordering;
use std::fmt;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::dial;
use super::endpoint::{target_of, Inner};
use super::link::ConnId;
use super::{RpcError, Url};
use crate::call::serve::Deliver;
use crate::call::{with_scratch, Answer, CallError, Question, Refusal, ReplyBody};
use crate::msg::codec::Format;
use crate::msg::{Envelope, Handler, NoReply, Object, Remote};
use crate::runtime::timeout_at;

enum Route<O: Object> {
    Local(Arc<dyn Deliver<O>>),
    Remote { addr: SocketAddr, format: Format },
}

impl<O: Object> Clone for Route<O> {
    fn clone(&self) -> Self {
        match self {
            Route::Local(d) => Route::Local(Arc::clone(d)),
            Route::Remote { addr, format } => Route::Remote {
                addr: *addr,
                format: *format,
            },
        }
    }
}

/// A stand-in for the object of type `O` published at a URL: `call` it with
/// any message `M` that `O` handles (`O: Handler<M>`).
///
/// Every call has a deadline (the endpoint's default, or
/// [`with_deadline`](Self::with_deadline)); a call never waits longer. Cloning a
/// proxy is cheap; clones share the connection.
pub struct Proxy<O: Object> {
    inner: Arc<Inner>,
    url: Url,
    target: u64,
    deadline: Duration,
    route: Route<O>,
    _object: PhantomData<fn(O)>,
}

impl<O: Object> Clone for Proxy<O> {
    fn clone(&self) -> Self {
        Proxy {
            inner: Arc::clone(&self.inner),
            url: self.url.clone(),
            target: self.target,
            deadline: self.deadline,
            route: self.route.clone(),
            _object: PhantomData,
        }
    }
}

impl<O: Object> fmt::Debug for Proxy<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("url", &self.url.to_string())
            .field("local", &self.is_local())
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl<O: Object> Proxy<O> {
    pub(crate) fn local(inner: Arc<Inner>, url: Url, d: Arc<dyn Deliver<O>>) -> Self {
        Proxy::new(inner, url, Route::Local(d))
    }

    pub(crate) fn remote(inner: Arc<Inner>, url: Url, addr: SocketAddr, format: Format) -> Self {
        Proxy::new(inner, url, Route::Remote { addr, format })
    }

    fn new(inner: Arc<Inner>, url: Url, route: Route<O>) -> Self {
        Proxy {
            deadline: inner.config.deadline,
            target: target_of(url.path()),
            inner,
            url,
            route,
            _object: PhantomData,
        }
    }

    /// The object's URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Whether the object is published by this endpoint (calls then move typed
    /// values, never bytes).
    pub fn is_local(&self) -> bool {
        matches!(self.route, Route::Local(_))
    }

    /// The payload format of a remote proxy's connection (`None` for a local proxy).
    pub fn format(&self) -> Option<Format> {
        match self.route {
            Route::Local(_) => None,
            Route::Remote { format, .. } => Some(format),
        }
    }

    /// The proxy with another deadline for each of its calls.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The deadline of each call.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Calls the object: sends `msg`, waits for the reply (at most the
    /// proxy's deadline).
    pub async fn call<M: Remote>(&self, msg: M) -> Result<M::Reply, RpcError>
    where
        O: Handler<M>,
    {
        self.call_timeout(msg, self.deadline).await
    }

    /// [`call`](Self::call) with its own deadline.
    pub async fn call_timeout<M: Remote>(
        &self,
        msg: M,
        deadline: Duration,
    ) -> Result<M::Reply, RpcError>
    where
        O: Handler<M>,
    {
        self.inner.counters.calls.fetch_add(1, Ordering::Relaxed);
        let until = Instant::now() + deadline;
        let timeout = || RpcError::Timeout {
            url: self.url.to_string(),
            after: deadline,
        };
        match &self.route {
            Route::Local(object) => {
                let (e, reply) = Envelope::<O>::with_reply(msg);
                object.deliver(e).map_err(|r| self.refused(r))?;
                match timeout_at(until, reply).await {
                    Ok(Ok(v)) => Ok(v),
                    Ok(Err(no)) => Err(self.no_reply(no)),
                    Err(_) => Err(timeout()),
                }
            }
            Route::Remote { addr, format } => {
                let conn =
                    match timeout_at(until, dial::connection(&self.inner, *addr, *format)).await {
                        Ok(conn) => conn?,
                        Err(_) => return Err(timeout()),
                    };
                let q = self.ask(conn, *format, &msg)?;
                match timeout_at(until, q).await {
                    Ok(answer) => self.answer::<M::Reply>(*format, answer),
                    Err(_) => Err(timeout()),
                }
            }
        }
    }

    /// [`call`](Self::call) from a plain thread: blocks until the reply (or the
    /// deadline). Inside an async task, `.await` [`call`](Self::call) instead
    /// (blocking there panics, as [`block_on`](crate::runtime::block_on) does).
    pub fn call_blocking<M: Remote>(&self, msg: M) -> Result<M::Reply, RpcError>
    where
        O: Handler<M>,
    {
        crate::runtime::block_on(self.call(msg))
    }

    /// A oneway call: `msg` is sent and nothing is waited for. An error here
    /// means it could not be sent; a failure at the object (no such method, no
    /// such object) is silent to the caller, as in Blip, but counted: the
    /// server counts a dead letter and tells this endpoint, which counts it in
    /// [`RpcStats::rejected`](super::RpcStats::rejected). Every oneway call that
    /// fails here is counted in [`RpcStats::oneway_failed`](super::RpcStats::oneway_failed).
    pub fn oneway<M: Remote>(&self, msg: M) -> Result<(), RpcError>
    where
        O: Handler<M>,
    {
        let c = &self.inner.counters;
        let sent = match &self.route {
            Route::Local(object) => object
                .deliver(Envelope::new(msg))
                .map_err(|r| self.refused(r)),
            Route::Remote { addr, format } => self.tell(*addr, *format, &msg),
        };
        match sent {
            Ok(()) => c.oneway_sent.fetch_add(1, Ordering::Relaxed),
            Err(_) => c.oneway_failed.fetch_add(1, Ordering::Relaxed),
        };
        sent
    }

    fn host(&self) -> String {
        self.url.host_url()
    }

    fn ask<M: Remote>(
        &self,
        conn: ConnId,
        format: Format,
        msg: &M,
    ) -> Result<Question<ConnId>, RpcError> {
        let conv = &self.inner.conv;
        let asked = match format {
            Format::Binary => conv.ask(conn, self.target, M::ID, msg),
            Format::Json => {
                let ends = conv.ends(conn);
                let payload = json_payload(msg)?;
                conv.ask_with(conn, |corr, buf| {
                    buf.request_raw(ends, self.target, M::ID, corr, &payload)
                })
                .map(|corr| Question::new(Arc::clone(conv.pending()), corr))
            }
        };
        asked.map_err(|e| self.call_error(e))
    }

    fn tell<M: Remote>(&self, addr: SocketAddr, format: Format, msg: &M) -> Result<(), RpcError> {
        let conn = dial::connection_blocking(&self.inner, addr, format)?;
        let conv = &self.inner.conv;
        match format {
            Format::Binary => conv
                .tell(conn, self.target, M::ID, msg)
                .map_err(|e| self.call_error(e)),
            Format::Json => {
                let ends = conv.ends(conn);
                let payload = json_payload(msg)?;
                with_scratch(|buf| {
                    buf.request_raw(ends, self.target, M::ID, 0, &payload)
                        .map_err(|e| RpcError::Encode(e.to_string()))?;
                    conv.send(conn, buf).map_err(|e| RpcError::ConnectionLost {
                        host: self.host(),
                        why: e.why,
                    })
                })
            }
        }
    }

    fn answer<R: serde::de::DeserializeOwned>(
        &self,
        format: Format,
        answer: Answer<super::link::ConnId>,
    ) -> Result<R, RpcError> {
        match answer {
            Ok(ReplyBody::Bytes(b)) => format.decode::<R>(&b).map_err(|e| RpcError::BadAnswer {
                url: self.url.to_string(),
                why: e.to_string(),
            }),
            Ok(ReplyBody::Value(_)) => Err(RpcError::BadAnswer {
                url: self.url.to_string(),
                why: "a typed value where bytes were expected".into(),
            }),
            Err(e) => Err(self.call_error(e)),
        }
    }

    fn call_error(&self, e: CallError<super::link::ConnId>) -> RpcError {
        match e {
            CallError::Gone { why, .. } => RpcError::ConnectionLost {
                host: self.host(),
                why,
            },
            e @ CallError::RankDied { .. } => RpcError::ConnectionLost {
                host: self.host(),
                why: e.to_string(),
            },
            CallError::Refused { refusal, .. } => self.refused(refusal),
            CallError::BadAnswer { why, .. } => RpcError::BadAnswer {
                url: self.url.to_string(),
                why,
            },
            CallError::Encode(why) => RpcError::Encode(why),
        }
    }

    fn refused(&self, r: Refusal) -> RpcError {
        match r {
            Refusal::NoTarget => RpcError::NoObject {
                url: self.url.to_string(),
            },
            Refusal::Full => RpcError::Fault {
                url: self.url.to_string(),
                why: "the object is busy (its mailbox is full)".into(),
            },
            Refusal::Failed(why) => RpcError::Fault {
                url: self.url.to_string(),
                why,
            },
        }
    }

    fn no_reply(&self, no: NoReply) -> RpcError {
        RpcError::Fault {
            url: self.url.to_string(),
            why: format!("no reply: {no}"),
        }
    }
}

/// A client type of a service declared with [`#[tutti::service]`](crate::service): made
/// from a proxy for the service's server object, by [`Rpc::client`](super::Rpc::client).
pub trait Client: Sized {
    /// The published object the client calls (the service's generated server type).
    type Object: Object;
    /// The client calling through `proxy`.
    fn from_proxy(proxy: Proxy<Self::Object>) -> Self;
}

/// What [`Rpc::proxy`](super::Rpc::proxy) and [`Rpc::client`](super::Rpc::client) accept
/// as a URL: the [`Url`] that [`Rpc::publish`](super::Rpc::publish) returns (or a
/// reference to it), or its text.
///
/// ```
/// use tutti::rpc::{IntoUrl, Url};
/// let url: Url = "tcp://127.0.0.1:9000/a/b/c".parse().unwrap();
/// assert_eq!((&url).into_url().unwrap(), url);
/// assert_eq!(url.to_string().into_url().unwrap(), url);
/// assert!("ftp://nowhere".into_url().is_err());
/// ```
pub trait IntoUrl {
    /// The URL, or why the text is not one.
    fn into_url(self) -> Result<Url, RpcError>;
}

impl IntoUrl for Url {
    fn into_url(self) -> Result<Url, RpcError> {
        Ok(self)
    }
}

impl IntoUrl for &Url {
    fn into_url(self) -> Result<Url, RpcError> {
        Ok(self.clone())
    }
}

impl IntoUrl for &str {
    fn into_url(self) -> Result<Url, RpcError> {
        self.parse()
    }
}

impl IntoUrl for String {
    fn into_url(self) -> Result<Url, RpcError> {
        self.parse()
    }
}

impl IntoUrl for &String {
    fn into_url(self) -> Result<Url, RpcError> {
        self.parse()
    }
}

/// What a service client's call of the method whose wire name is `method` reports for
/// `e`: a server that has no handler for the method's message (an older or newer
/// version of the service, whose method or signature differs, or another object
/// altogether) is told as such, naming the method and signature; anything else is `e`.
#[doc(hidden)]
pub fn method_error(e: RpcError, method: &'static str) -> RpcError {
    match e {
        RpcError::Fault { url, why } if why.contains(crate::msg::UNHANDLED_MARK) => {
            RpcError::Fault {
                url,
                why: format!(
                    "the server does not offer the method `{method}` (no such method, or one \
                     with another signature: client and server built from different versions \
                     of the service?): {why}"
                ),
            }
        }
        e => e,
    }
}

/// `msg` as JSON, for a connection that speaks JSON.
fn json_payload<M: Remote>(msg: &M) -> Result<Vec<u8>, RpcError> {
    let mut payload = Vec::new();
    Format::Json
        .encode(msg, &mut payload)
        .map_err(|e| RpcError::Encode(e.to_string()))?;
    Ok(payload)
}
