//! UDP: [`UdpSocket`] on the runtime's I/O driver.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use crate::runtime::io::{Direction, Evented};

/// A UDP socket. Every operation is cancellation-safe: a datagram is sent or
/// received whole within one poll, or not at all.
///
/// ```
/// tutti::block_on(async {
///     let a = tutti::net::UdpSocket::bind("127.0.0.1:0").unwrap();
///     let b = tutti::net::UdpSocket::bind("127.0.0.1:0").unwrap();
///     a.send_to(b"ping", b.local_addr().unwrap()).await.unwrap();
///     let mut buf = [0; 16];
///     let (n, from) = b.recv_from(&mut buf).await.unwrap();
///     assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr().unwrap()));
/// });
/// ```
pub struct UdpSocket {
    io: Evented<mio::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds to `addr` (the first of its addresses that binds).
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        UdpSocket::from_std(std::net::UdpSocket::bind(addr)?)
    }

    /// Takes over a bound std socket (made non-blocking here).
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket {
            io: Evented::new(mio::net::UdpSocket::from_std(socket))?,
        })
    }

    /// Sets the default peer of [`send`](Self::send) and
    /// [`recv`](Self::recv), and filters what is received to it.
    pub fn connect(&self, addr: SocketAddr) -> io::Result<()> {
        self.io.get().connect(addr)
    }

    /// Sends one datagram to `target`, waiting while the send buffer is full.
    pub async fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        std::future::poll_fn(|cx| {
            self.io
                .poll_io(cx, Direction::Write, |s| s.send_to(buf, target))
        })
        .await
    }

    /// Receives one datagram and its sender; a datagram longer than `buf`
    /// is cut to `buf.len()`.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        std::future::poll_fn(|cx| self.io.poll_io(cx, Direction::Read, |s| s.recv_from(buf))).await
    }

    /// Sends one datagram to the connected peer.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.io.poll_io(cx, Direction::Write, |s| s.send(buf))).await
    }

    /// Receives one datagram from the connected peer.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.io.poll_io(cx, Direction::Read, |s| s.recv(buf))).await
    }

    /// This socket's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// The connected peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }
}

impl std::fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.io.get().fmt(f)
    }
}
