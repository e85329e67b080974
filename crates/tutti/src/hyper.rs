//! Layer 1: hyper on tutti (the `hyper` feature) — the runtime traits hyper 1.x
//! asks of the runtime under it, so that hyper's HTTP servers and clients run
//! on tutti's workers with their sockets on the runtime's own I/O driver.
//!
//! * [`TuttiExecutor`] spawns the tasks hyper starts (HTTP/2 streams, client
//!   connections) as tutti tasks.
//! * [`TuttiTimer`] gives hyper tutti's timers ([`Sleep`]), for header-read
//!   timeouts and keep-alive pings.
//! * `hyper::rt::Read` and `hyper::rt::Write` are implemented by
//!   [`net::TcpStream`](crate::net::TcpStream),
//!   [`net::UnixStream`](crate::net::UnixStream) and their halves: a stream
//!   is handed to hyper as it is, with no adapter. Reads go straight into
//!   hyper's (uninitialised) buffer, and a read or write that cannot proceed
//!   waits on the driver like every `net` operation.
//!
//! A server, one task per connection:
//!
//! ```
//! use std::convert::Infallible;
//! use http_body_util::Full;
//! use hyper::body::{Bytes, Incoming};
//! use hyper::{Request, Response};
//! use tutti::net::TcpListener;
//!
//! async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
//!     Ok(Response::new(Full::new(Bytes::from_static(b"Hello, world!"))))
//! }
//!
//! tutti::block_on(async {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     # let addr = listener.local_addr().unwrap();
//!     # let client = tutti::spawn(async move {
//!     #     use std::io::{Read, Write};
//!     #     tutti::spawn_blocking(move || {
//!     #         let mut s = std::net::TcpStream::connect(addr).unwrap();
//!     #         s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
//!     #         let mut answer = String::new();
//!     #         s.read_to_string(&mut answer).unwrap();
//!     #         assert!(answer.ends_with("Hello, world!"));
//!     #     }).await
//!     # });
//!     # for _ in 0..1 {
//!     let (stream, _) = listener.accept().await.unwrap();
//!     tutti::spawn(async move {
//!         let conn = hyper::server::conn::http1::Builder::new()
//!             .timer(tutti::hyper::TuttiTimer)
//!             .serve_connection(stream, hyper::service::service_fn(hello));
//!         if let Err(e) = conn.await {
//!             eprintln!("connection: {e}");
//!         }
//!     })
//!     # .await;
//!     # }
//!     # client.await;
//! });
//! ```

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::net::stream::{RawStream, Stream};
use crate::runtime::Sleep;

/// hyper's executor on tutti: every future hyper starts becomes a detached
/// task of the current runtime (the worker's runtime, or outside a worker the
/// one [`spawn`](crate::spawn) uses).
///
/// ```
/// use hyper::rt::Executor;
///
/// let (tx, rx) = std::sync::mpsc::channel();
/// tutti::hyper::TuttiExecutor.execute(async move { tx.send(42).unwrap() });
/// assert_eq!(rx.recv().unwrap(), 42);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct TuttiExecutor;

impl<F> ::hyper::rt::Executor<F> for TuttiExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        // Dropping the handle detaches the task: hyper never joins it.
        drop(crate::runtime::spawn(future));
    }
}

/// hyper's timer on tutti: its sleeps are tutti's [`Sleep`]s, so hyper's
/// timeouts fire from the runtime's timer like every other tutti sleep.
///
/// ```
/// use std::time::Duration;
/// use hyper::rt::Timer;
///
/// let nap = tutti::hyper::TuttiTimer.sleep(Duration::from_millis(1));
/// tutti::block_on(nap);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct TuttiTimer;

impl ::hyper::rt::Timer for TuttiTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn ::hyper::rt::Sleep>> {
        Box::pin(crate::runtime::sleep(duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn ::hyper::rt::Sleep>> {
        Box::pin(crate::runtime::sleep_until(deadline))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn ::hyper::rt::Sleep>>, new_deadline: Instant) {
        // A sleep this timer made moves its deadline in place (it stays
        // registered with the timer); any other is replaced.
        match sleep.as_mut().downcast_mut_pin::<Sleep>() {
            Some(mine) => mine.get_mut().reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

impl ::hyper::rt::Sleep for Sleep {}

/// `hyper::rt::Read` for a `net` stream: reads into hyper's unfilled buffer
/// without zeroing it first.
pub(crate) fn poll_read<S: RawStream>(
    stream: &Stream<S>,
    cx: &mut Context<'_>,
    mut buf: ::hyper::rt::ReadBufCursor<'_>,
) -> Poll<io::Result<()>>
where
    for<'a> &'a S: io::Read + io::Write,
{
    // SAFETY: `poll_read_uninit` only writes into the slice (it never
    // de-initialises a byte hyper may have initialised), as `as_mut` requires.
    let unfilled = unsafe { buf.as_mut() };
    match stream.poll_read_uninit(cx, unfilled) {
        Poll::Ready(Ok(n)) => {
            // SAFETY: the read initialised the first `n` bytes of the unfilled
            // part (the kernel wrote them), and `n` is at most its length.
            unsafe { buf.advance(n) };
            Poll::Ready(Ok(()))
        }
        Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        Poll::Pending => Poll::Pending,
    }
}
