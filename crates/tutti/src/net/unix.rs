//! Unix domain stream sockets: [`UnixListener`] and [`UnixStream`].

use std::io;
use std::os::unix::net::SocketAddr;
use std::path::Path;

use super::stream::{stream_kind, Stream};
use crate::runtime::io::{Direction, Evented};

/// A Unix domain socket listening for connections.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("tutti-doc-{}", std::process::id()));
/// let _ = std::fs::remove_file(&dir);
/// let listener = tutti::net::UnixListener::bind(&dir).unwrap();
/// tutti::block_on(async {
///     let c = tutti::net::UnixStream::connect(&dir).await.unwrap();
///     let (s, _) = listener.accept().await.unwrap();
///     c.write_all(b"hi").await.unwrap();
///     let mut b = [0; 2];
///     s.read_exact(&mut b).await.unwrap();
///     assert_eq!(&b, b"hi");
/// });
/// std::fs::remove_file(&dir).unwrap();
/// ```
pub struct UnixListener {
    io: Evented<mio::net::UnixListener>,
}

impl UnixListener {
    /// Binds to the socket file `path` (which must not exist) and listens.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        UnixListener::from_std(std::os::unix::net::UnixListener::bind(path)?)
    }

    /// Takes over a listening std socket (made non-blocking here).
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(true)?;
        Ok(UnixListener {
            io: Evented::new(mio::net::UnixListener::from_std(listener))?,
        })
    }

    /// Waits for the next connection; cancellation-safe.
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        std::future::poll_fn(|cx| self.io.poll_io(cx, Direction::Read, |l| l.accept()))
            .await
            .and_then(|(s, peer)| Ok((UnixStream::from_mio(s)?, peer)))
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }
}

impl std::fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.io.get().fmt(f)
    }
}

/// A Unix domain stream connection (see the [module doc](super)).
pub struct UnixStream {
    inner: Stream<mio::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket file `path`.
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let s = UnixStream::from_mio(mio::net::UnixStream::connect(path)?)?;
        s.inner.finish_connect().await?;
        Ok(s)
    }

    /// A connected pair of streams.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((UnixStream::from_mio(a)?, UnixStream::from_mio(b)?))
    }

    fn from_mio(s: mio::net::UnixStream) -> io::Result<UnixStream> {
        Ok(UnixStream {
            inner: Stream::new(s)?,
        })
    }

    /// Takes over a connected std stream (made non-blocking here).
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        UnixStream::from_mio(mio::net::UnixStream::from_std(stream))
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get().peer_addr()
    }

    /// This end's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get().local_addr()
    }
}

stream_kind!(
    UnixStream,
    UnixReadHalf,
    UnixWriteHalf,
    mio::net::UnixStream,
    "Unix stream"
);
