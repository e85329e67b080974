//! Layer 1: async sockets on the runtime's I/O driver — TCP, UDP and Unix
//! domain sockets whose operations are futures served by the runtime's own
//! idle workers (`runtime/io`: no reactor thread).
//!
//! ```
//! use tutti::net::{TcpListener, TcpStream};
//!
//! tutti::block_on(async {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let server = tutti::spawn(async move {
//!         let (stream, _) = listener.accept().await.unwrap();
//!         let mut buf = [0u8; 5];
//!         stream.read_exact(&mut buf).await.unwrap();
//!         stream.write_all(&buf).await.unwrap();
//!     });
//!     let client = TcpStream::connect(addr).await.unwrap();
//!     client.write_all(b"hello").await.unwrap();
//!     let mut back = [0u8; 5];
//!     client.read_exact(&mut back).await.unwrap();
//!     assert_eq!(&back, b"hello");
//!     server.await;
//! });
//! ```
//!
//! # Guarantees
//!
//! * **Cancellation.** `read`, `write`, `recv`, `send`, `accept` and their
//!   relatives make their system call inside one poll and complete in that
//!   same poll, so a future dropped before it completes has read, written or
//!   accepted nothing: no byte is lost. `read_exact` and `write_all` loop, so a
//!   dropped one may have moved part of its buffer (as with every runtime).
//! * **Back-pressure.** A write that finds the socket's send buffer full waits
//!   until the peer has read enough; nothing is buffered in user space.
//! * **Errors.** A reset connection, a write after the peer closed and a peer
//!   that vanished come back as the `io::Error` the OS reports
//!   (`ConnectionReset`, `BrokenPipe`, …); an orderly close reads as
//!   `Ok(0)` (and `read_exact` as `UnexpectedEof`). Nothing panics.
//! * **Traits.** Streams implement `futures_io::AsyncRead`/`AsyncWrite`;
//!   with the `tokio-io` feature also tokio's, so that code written for
//!   either runs on tutti.
//!
//! A stream's operations take `&self`: a reader task and a writer task may
//! share one stream, or own one half each after `into_split` (dropping the
//! write half shuts the write direction down, as `shutdown` does).

pub(crate) mod stream;
mod tcp;
mod udp;
mod unix;

pub use tcp::{TcpListener, TcpReadHalf, TcpStream, TcpWriteHalf};
pub use udp::UdpSocket;
pub use unix::{UnixListener, UnixReadHalf, UnixStream, UnixWriteHalf};

#[cfg(all(test, not(loom)))]
mod tests;
