//! TCP: [`TcpListener`] and [`TcpStream`] on the runtime's I/O driver.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use super::stream::{stream_kind, Stream};
use crate::runtime::io::{Direction, Evented};

/// A TCP socket listening for connections.
///
/// ```
/// let listener = tutti::net::TcpListener::bind("127.0.0.1:0").unwrap();
/// assert!(listener.local_addr().unwrap().port() > 0);
/// ```
pub struct TcpListener {
    io: Evented<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `addr` (the first of its addresses that binds) and listens,
    /// registered with the current runtime's I/O driver.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        TcpListener::from_std(std::net::TcpListener::bind(addr)?)
    }

    /// Takes over a listening std socket (made non-blocking here).
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener {
            io: Evented::new(mio::net::TcpListener::from_std(listener))?,
        })
    }

    /// Waits for the next connection. Cancellation-safe: dropped before it
    /// completes, it has accepted nothing (the connection waits in the
    /// backlog for the next `accept`).
    ///
    /// ```
    /// tutti::block_on(async {
    ///     let l = tutti::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = l.local_addr().unwrap();
    ///     let c = tutti::spawn(async move { tutti::net::TcpStream::connect(addr).await });
    ///     let (_s, peer) = l.accept().await.unwrap();
    ///     assert_eq!(peer, c.await.unwrap().local_addr().unwrap());
    /// });
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, peer) = std::future::poll_fn(|cx| self.poll_accept(cx)).await?;
        Ok((s, peer))
    }

    /// Polls for the next connection (the poll form of [`accept`](Self::accept)).
    pub fn poll_accept(
        &self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<(TcpStream, SocketAddr)>> {
        self.io
            .poll_io(cx, Direction::Read, |l| l.accept())
            .map(|r| r.and_then(|(s, peer)| Ok((TcpStream::from_mio(s)?, peer))))
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }
}

impl std::fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.io.get().fmt(f)
    }
}

/// A TCP connection.
///
/// Operations take `&self` (see the [module doc](super) for cancellation,
/// back-pressure and errors).
pub struct TcpStream {
    inner: Stream<mio::net::TcpStream>,
}

impl TcpStream {
    /// Connects to `addr`, trying each of its addresses in turn; the last
    /// error if none accepts.
    ///
    /// ```
    /// tutti::block_on(async {
    ///     // Nobody listens on port 1 of this host.
    ///     let e = tutti::net::TcpStream::connect("127.0.0.1:1").await.unwrap_err();
    ///     assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    /// });
    /// ```
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let mut last = None;
        for addr in addr.to_socket_addrs()? {
            match TcpStream::connect_one(addr).await {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the address resolved to nothing",
            )
        }))
    }

    /// [`connect`](Self::connect) that gives up after `timeout` with
    /// `TimedOut`.
    pub async fn connect_timeout(
        addr: impl ToSocketAddrs,
        timeout: Duration,
    ) -> io::Result<TcpStream> {
        match crate::runtime::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no connection within {timeout:?}"),
            )),
        }
    }

    async fn connect_one(addr: SocketAddr) -> io::Result<TcpStream> {
        let s = TcpStream::from_mio(mio::net::TcpStream::connect(addr)?)?;
        s.inner.finish_connect().await?;
        // Writable but not connected: the connection failed without an error
        // pending (it is reported by `peer_addr`).
        s.peer_addr()?;
        Ok(s)
    }

    fn from_mio(s: mio::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            inner: Stream::new(s)?,
        })
    }

    /// Takes over a connected std stream (made non-blocking here).
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        TcpStream::from_mio(mio::net::TcpStream::from_std(stream))
    }

    /// Sets `TCP_NODELAY` (send small writes at once instead of coalescing).
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner.get().set_nodelay(nodelay)
    }

    /// Whether `TCP_NODELAY` is set.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.get().nodelay()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get().peer_addr()
    }

    /// This end's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get().local_addr()
    }

    /// Writes what the socket takes now: one system call, whatever the driver
    /// last saw of the socket's readiness (a `WouldBlock` here leaves the next
    /// `poll_write_shared` to find it out again). For writers that keep their
    /// own queue and must not wait for the driver to first report a fresh
    /// socket writable (the RPC connections).
    pub(crate) fn write_now(&self, buf: &[u8]) -> io::Result<usize> {
        use std::io::Write;
        let mut s = self.inner.get();
        s.write(buf)
    }

    /// The poll form of [`write`](Self::write) through a shared reference, for
    /// owners that keep the stream behind an `Arc` (the RPC connections' output
    /// queues).
    pub(crate) fn poll_write_shared(
        &self,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        self.inner.poll_write(cx, buf)
    }
}

stream_kind!(
    TcpStream,
    TcpReadHalf,
    TcpWriteHalf,
    mio::net::TcpStream,
    "TCP stream"
);
