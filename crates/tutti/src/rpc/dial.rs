//! The client side of a connection's start: connecting to a host and saying
//! hello, once per host and payload format however many calls start at once.
//!
//! A call (async) dials on `tutti::net` sockets, so a worker never blocks
//! while a server — possibly on the same runtime — accepts and answers. A
//! oneway call is synchronous: off the runtime's workers it runs the same
//! dial to completion; on a worker it dials with blocking std sockets (a
//! worker may not wait for tasks it might have to run itself), bounded by the
//! endpoint's `connect_timeout`.
//!
//! **One dial per host.** The first caller to find no connection claims the
//! host in `Inner::dialing`; later callers wait for the claim to go (their
//! wakers are kept with it) and look again. A claim goes when its dial ends,
//! whether it succeeded, failed or was cancelled (its future dropped).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use super::endpoint::Inner;
use super::link::ConnId;
use super::protocol::{self, Hello, HELLO, REFUSED, VERSION, WELCOME};
use super::RpcError;
use crate::loom::lock;
use crate::msg::codec::{self, Format, FrameKind, Limits, HEADER_LEN};

type Key = (SocketAddr, Format);

/// The right to dial a host; dropping it lets the waiting callers look again.
struct Claim<'a> {
    inner: &'a Inner,
    key: Key,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let waiting = lock(&self.inner.dialing).remove(&self.key);
        for w in waiting.into_iter().flatten() {
            w.wake();
        }
    }
}

fn try_claim(inner: &Inner, key: Key) -> Option<Claim<'_>> {
    let mut dialing = lock(&inner.dialing);
    if dialing.contains_key(&key) {
        return None;
    }
    dialing.insert(key, Vec::new());
    Some(Claim { inner, key })
}

fn closed() -> RpcError {
    RpcError::Endpoint("the endpoint is closed".into())
}

/// The open connection to `addr` in `format`, connecting (with the
/// handshake) if there is none: a connection that failed is replaced on the
/// next use.
pub(crate) async fn connection(
    inner: &Arc<Inner>,
    addr: SocketAddr,
    format: Format,
) -> Result<ConnId, RpcError> {
    let key = (addr, format);
    let _claim = loop {
        if let Some(id) = inner.host(addr, format) {
            return Ok(id);
        }
        if inner.is_closed() {
            return Err(closed());
        }
        let mut waited = false;
        let claim = std::future::poll_fn(|cx| {
            if waited {
                return Poll::Ready(None);
            }
            let mut dialing = lock(&inner.dialing);
            match dialing.get_mut(&key) {
                Some(waiting) => {
                    waiting.push(cx.waker().clone());
                    waited = true;
                    Poll::Pending
                }
                None => {
                    dialing.insert(key, Vec::new());
                    Poll::Ready(Some(Claim { inner, key }))
                }
            }
        })
        .await;
        if let Some(c) = claim {
            // Someone may have connected between the look and the claim.
            if let Some(id) = inner.host(addr, format) {
                return Ok(id);
            }
            break c;
        }
    };
    let host = format!("tcp://{addr}");
    let cfg = &inner.config;
    let dial = async {
        let s = crate::net::TcpStream::connect(addr)
            .await
            .map_err(|e| connect_error(&host, &e))?;
        s.set_nodelay(true).map_err(|e| connect_error(&host, &e))?;
        s.write_all(&hello(inner, format)?)
            .await
            .map_err(|e| connect_error(&host, &e))?;
        let mut buf = vec![0u8; HEADER_LEN];
        s.read_exact(&mut buf)
            .await
            .map_err(|e| refused(&host, format!("no handshake answer: {e}")))?;
        let total = answer_len(&host, &buf)?;
        buf.resize(total, 0);
        s.read_exact(&mut buf[HEADER_LEN..])
            .await
            .map_err(|e| refused(&host, format!("a cut handshake answer: {e}")))?;
        welcome(&host, &buf)?;
        Ok(s)
    };
    let stream = match crate::runtime::timeout(cfg.connect_timeout, dial).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(RpcError::Connect {
                host,
                why: format!("no welcome within {:?}", cfg.connect_timeout),
            })
        }
    };
    if inner.is_closed() {
        return Err(closed());
    }
    Ok(inner.adopt(stream, addr, format))
}

/// [`connection`] for a caller that cannot await (a oneway call).
pub(crate) fn connection_blocking(
    inner: &Arc<Inner>,
    addr: SocketAddr,
    format: Format,
) -> Result<ConnId, RpcError> {
    if let Some(id) = inner.host(addr, format) {
        return Ok(id);
    }
    if crate::runtime::worker_index().is_none() {
        return crate::runtime::block_on(connection(inner, addr, format));
    }
    let host = format!("tcp://{addr}");
    let cfg = &inner.config;
    let until = Instant::now() + cfg.connect_timeout;
    let _claim = loop {
        if let Some(id) = inner.host(addr, format) {
            return Ok(id);
        }
        if inner.is_closed() {
            return Err(closed());
        }
        if let Some(c) = try_claim(inner, (addr, format)) {
            if let Some(id) = inner.host(addr, format) {
                return Ok(id);
            }
            break c;
        }
        if Instant::now() >= until {
            return Err(RpcError::Connect {
                host,
                why: format!("no connection within {:?}", cfg.connect_timeout),
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let io = |e: std::io::Error| connect_error(&host, &e);
    let mut s = std::net::TcpStream::connect_timeout(&addr, cfg.connect_timeout).map_err(io)?;
    s.set_nodelay(true).map_err(io)?;
    s.set_write_timeout(Some(cfg.connect_timeout)).map_err(io)?;
    s.set_read_timeout(Some(cfg.connect_timeout)).map_err(io)?;
    s.write_all(&hello(inner, format)?).map_err(io)?;
    let mut buf = vec![0u8; HEADER_LEN];
    s.read_exact(&mut buf)
        .map_err(|e| refused(&host, format!("no handshake answer: {e}")))?;
    let total = answer_len(&host, &buf)?;
    buf.resize(total, 0);
    s.read_exact(&mut buf[HEADER_LEN..])
        .map_err(|e| refused(&host, format!("a cut handshake answer: {e}")))?;
    welcome(&host, &buf)?;
    let s = crate::net::TcpStream::from_std(s).map_err(io)?;
    Ok(inner.adopt(s, addr, format))
}

fn connect_error(host: &str, e: &std::io::Error) -> RpcError {
    RpcError::Connect {
        host: host.to_string(),
        why: e.to_string(),
    }
}

fn refused(host: &str, why: String) -> RpcError {
    RpcError::Refused {
        host: host.to_string(),
        why,
    }
}

/// The client's first frame.
fn hello(inner: &Inner, format: Format) -> Result<Vec<u8>, RpcError> {
    let hello = Hello {
        version: VERSION,
        cookie: inner.config.cookie.clone(),
        format,
    };
    protocol::frame(HELLO, &hello).map_err(|e| RpcError::Encode(e.to_string()))
}

/// The length of the server's answer from its header (at most 64 KiB: an
/// answer to a hello is short).
fn answer_len(host: &str, header: &[u8]) -> Result<usize, RpcError> {
    let small = Limits {
        max_payload: 64 << 10,
        ..Limits::DEFAULT
    };
    Ok(codec::frame_len(header, &small)
        .map_err(|e| refused(host, format!("not a tutti RPC endpoint: {e}")))?
        .unwrap_or(HEADER_LEN))
}

/// Whether the server's answer welcomes this client; why not if it does not.
fn welcome(host: &str, answer: &[u8]) -> Result<(), RpcError> {
    let f = codec::decode_frame(answer)
        .map_err(|e| refused(host, format!("a bad handshake answer: {e}")))?;
    match (f.header().kind, f.header().msg) {
        (FrameKind::Control, m) if m == WELCOME => Ok(()),
        (FrameKind::Control, m) if m == REFUSED => {
            let why: String = f
                .decode()
                .unwrap_or_else(|e| format!("(undecodable reason: {e})"));
            Err(refused(host, why))
        }
        _ => Err(refused(host, "an answer that is not a handshake".into())),
    }
}
