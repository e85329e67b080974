//! What TCP and Unix streams share: reads and writes on a registered
//! non-blocking socket, and the macro that gives each stream kind its public
//! operations, its halves and its trait implementations.

use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::runtime::io::{Direction, Evented};

/// A connected byte stream mio can register (TCP or Unix).
pub(crate) trait RawStream: mio::event::Source + AsRawFd + Send + Sync + 'static
where
    for<'a> &'a Self: Read + Write,
{
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
    fn take_error(&self) -> io::Result<Option<io::Error>>;
}

impl RawStream for mio::net::TcpStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        mio::net::TcpStream::shutdown(self, how)
    }
    fn take_error(&self) -> io::Result<Option<io::Error>> {
        mio::net::TcpStream::take_error(self)
    }
}

impl RawStream for mio::net::UnixStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        mio::net::UnixStream::shutdown(self, how)
    }
    fn take_error(&self) -> io::Result<Option<io::Error>> {
        mio::net::UnixStream::take_error(self)
    }
}

/// A registered stream, shared by the stream and its halves.
pub(crate) struct Stream<S: RawStream>
where
    for<'a> &'a S: Read + Write,
{
    io: Arc<Evented<S>>,
}

impl<S: RawStream> Clone for Stream<S>
where
    for<'a> &'a S: Read + Write,
{
    fn clone(&self) -> Self {
        Stream {
            io: self.io.clone(),
        }
    }
}

impl<S: RawStream> Stream<S>
where
    for<'a> &'a S: Read + Write,
{
    pub(crate) fn new(source: S) -> io::Result<Self> {
        Ok(Stream {
            io: Arc::new(Evented::new(source)?),
        })
    }

    pub(crate) fn get(&self) -> &S {
        self.io.get()
    }

    /// Waits until a connect started without blocking has ended; its error if
    /// it failed.
    pub(crate) async fn finish_connect(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.io.poll_ready(cx, Direction::Write).map(|_| ())).await;
        match self.get().take_error()? {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let len = buf.len();
        self.io.poll_transfer(cx, Direction::Read, len, |s| {
            let mut s = s;
            s.read(buf)
        })
    }

    /// Reads into memory that may be uninitialised (hyper's read
    /// buffer), so that it need not be zeroed before every read.
    #[cfg_attr(not(feature = "hyper"), allow(dead_code))]
    pub(crate) fn poll_read_uninit(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let len = buf.len();
        self.io.poll_transfer(cx, Direction::Read, len, |s| {
            // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the
            // whole call, and read(2) writes at most that many and never reads
            // them, so their being uninitialised does not matter.
            let n = unsafe { libc::read(s.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            // A negative count is -1 with the error in errno.
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        })
    }

    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let len = buf.len();
        self.io.poll_transfer(cx, Direction::Write, len, |s| {
            let mut s = s;
            s.write(buf)
        })
    }

    pub(crate) fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let len = bufs.iter().map(|b| b.len()).sum();
        self.io.poll_transfer(cx, Direction::Write, len, |s| {
            let mut s = s;
            s.write_vectored(bufs)
        })
    }

    pub(crate) fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Read, |s| {
            let mut s = s;
            s.read(buf)
        })
    }

    pub(crate) fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.try_io(Direction::Write, |s| {
            let mut s = s;
            s.write(buf)
        })
    }

    pub(crate) async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_read(cx, buf)).await
    }

    pub(crate) async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_write(cx, buf)).await
    }

    pub(crate) async fn read_exact(&self, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read(buf).await? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the peer closed the stream before the buffer was full",
                    ))
                }
                n => buf = &mut buf[n..],
            }
        }
        Ok(())
    }

    pub(crate) async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(buf).await? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the stream accepted no more bytes",
                    ))
                }
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self.get().shutdown(how) {
            // The peer is gone already: the direction is shut either way.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        }
    }
}

/// Declares a stream kind's public type (`$stream` around `Stream<$raw>`),
/// its owned halves, and the `futures-io` (and `tokio-io`) traits for all
/// three.
macro_rules! stream_kind {
    ($stream:ident, $read:ident, $write:ident, $raw:ty, $what:literal) => {
        impl $stream {
            /// Reads what is available, waiting for at least one byte; `Ok(0)`
            /// once the peer has closed its writing direction (or for an empty
            /// `buf`). Cancellation-safe: dropped before it completes, it has
            /// read nothing.
            pub async fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.inner.read(buf).await
            }

            /// Reads exactly `buf.len()` bytes; `UnexpectedEof` if the peer
            /// closes first. Dropped before it completes, it may have consumed
            /// part of the bytes.
            pub async fn read_exact(&self, buf: &mut [u8]) -> std::io::Result<()> {
                self.inner.read_exact(buf).await
            }

            /// Writes part of `buf`, waiting while the send buffer is full
            /// (back-pressure); how much it wrote. Cancellation-safe.
            pub async fn write(&self, buf: &[u8]) -> std::io::Result<usize> {
                self.inner.write(buf).await
            }

            /// Writes all of `buf`, waiting as needed. Dropped before it
            /// completes, it may have written part of `buf`.
            pub async fn write_all(&self, buf: &[u8]) -> std::io::Result<()> {
                self.inner.write_all(buf).await
            }

            /// Reads without waiting: `WouldBlock` if nothing is there.
            pub fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.inner.try_read(buf)
            }

            /// Writes without waiting: `WouldBlock` if the send buffer is full.
            pub fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
                self.inner.try_write(buf)
            }

            /// Shuts down the reading, writing or both directions (a write
            /// shutdown is the half-close: the peer reads `Ok(0)`).
            pub fn shutdown(&self, how: std::net::Shutdown) -> std::io::Result<()> {
                self.inner.shutdown(how)
            }

            /// Splits the stream into a read half and a write half that
            /// different tasks can own. Dropping the write half shuts the
            /// writing direction down.
            pub fn into_split(self) -> ($read, $write) {
                (
                    $read {
                        inner: self.inner.clone(),
                    },
                    $write { inner: self.inner },
                )
            }
        }

        #[doc = concat!("The reading half of a ", $what, " (see `into_split`).")]
        pub struct $read {
            inner: $crate::net::stream::Stream<$raw>,
        }

        #[doc = concat!("The writing half of a ", $what, " (see `into_split`); dropping it shuts the writing direction down.")]
        pub struct $write {
            inner: $crate::net::stream::Stream<$raw>,
        }

        impl $read {
            /// As the stream's `read`: cancellation-safe.
            pub async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.inner.read(buf).await
            }

            /// As the stream's `read_exact`.
            pub async fn read_exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
                self.inner.read_exact(buf).await
            }
        }

        impl $write {
            /// As the stream's `write`: cancellation-safe.
            pub async fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.inner.write(buf).await
            }

            /// As the stream's `write_all`.
            pub async fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
                self.inner.write_all(buf).await
            }

            /// Shuts the writing direction down now (the peer reads `Ok(0)`).
            pub fn shutdown(&self) -> std::io::Result<()> {
                self.inner.shutdown(std::net::Shutdown::Write)
            }
        }

        impl Drop for $write {
            fn drop(&mut self) {
                // The peer sees the end of the stream; a peer already gone
                // has nothing to be told.
                let _ = self.inner.shutdown(std::net::Shutdown::Write);
            }
        }

        impl std::fmt::Debug for $stream {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.inner.get().fmt(f)
            }
        }

        impl std::fmt::Debug for $read {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple(stringify!($read)).field(self.inner.get()).finish()
            }
        }

        impl std::fmt::Debug for $write {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple(stringify!($write)).field(self.inner.get()).finish()
            }
        }

        $crate::net::stream::stream_kind!(@read $stream);
        $crate::net::stream::stream_kind!(@read $read);
        $crate::net::stream::stream_kind!(@write $stream);
        $crate::net::stream::stream_kind!(@write $write);
        $crate::net::stream::stream_kind!(@hyper_read $stream);
        $crate::net::stream::stream_kind!(@hyper_read $read);
        $crate::net::stream::stream_kind!(@hyper_write $stream);
        $crate::net::stream::stream_kind!(@hyper_write $write);
    };

    (@hyper_read $ty:ident) => {
        #[cfg(feature = "hyper")]
        impl ::hyper::rt::Read for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: ::hyper::rt::ReadBufCursor<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                $crate::hyper::poll_read(&self.inner, cx, buf)
            }
        }
    };

    (@hyper_write $ty:ident) => {
        #[cfg(feature = "hyper")]
        $crate::net::stream::stream_kind!(@write_shutdown ::hyper::rt::Write, $ty);
    };

    // hyper's and tokio's write traits have the same methods.
    (@write_shutdown $trait:path, $ty:ident) => {
        impl $trait for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.inner.poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.inner.poll_write_vectored(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // Nothing is buffered in user space.
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(self.inner.shutdown(std::net::Shutdown::Write))
            }
        }
    };

    (@read $ty:ident) => {
        impl futures_io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.inner.poll_read(cx, buf)
            }
        }

        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let unfilled = buf.initialize_unfilled();
                match self.inner.poll_read(cx, unfilled) {
                    std::task::Poll::Ready(Ok(n)) => {
                        buf.advance(n);
                        std::task::Poll::Ready(Ok(()))
                    }
                    std::task::Poll::Ready(Err(e)) => std::task::Poll::Ready(Err(e)),
                    std::task::Poll::Pending => std::task::Poll::Pending,
                }
            }
        }
    };

    (@write $ty:ident) => {
        impl futures_io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.inner.poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.inner.poll_write_vectored(cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // Nothing is buffered in user space.
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(self.inner.shutdown(std::net::Shutdown::Write))
            }
        }

        #[cfg(feature = "tokio-io")]
        $crate::net::stream::stream_kind!(@write_shutdown tokio::io::AsyncWrite, $ty);
    };
}

pub(crate) use stream_kind;
