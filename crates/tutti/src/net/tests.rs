//! The sockets under the conditions a server meets: partial reads and writes,
//! a peer that resets mid-request, a thousand connections opened and
//! dropped, a slow reader, an accept flood. Each test runs on a runtime of its
//! own, bounds every wait with a timeout (a hang fails instead of blocking the
//! suite) and ends by checking that no socket is left registered.

use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::time::Duration;

use super::*;
use crate::runtime::io::Driver;
use crate::runtime::{Builder, Runtime};

/// Longest any single test step may take before the test fails as hung.
const HUNG: Duration = Duration::from_secs(20);

fn runtime(workers: usize) -> Runtime {
    Builder::new().workers(workers).build().unwrap()
}

/// Runs `f` on a fresh runtime, failing if it takes longer than [`HUNG`], then
/// checks that every socket it opened was deregistered.
fn run<F: std::future::Future<Output = ()> + Send + 'static>(workers: usize, f: F) {
    let rt = runtime(workers);
    rt.block_on(async move {
        crate::runtime::timeout(HUNG, crate::runtime::spawn(f))
            .await
            .expect("the test hung");
    });
    let left = rt.block_on(async { Driver::current().unwrap().source_count() });
    assert_eq!(left, 0, "sockets left registered with the driver");
}

#[test]
fn echo_over_tcp_with_partial_reads_and_writes() {
    run(2, async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = crate::runtime::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            // Echo in pieces of at most 7 bytes: every read is partial.
            let mut buf = [0u8; 7];
            loop {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                s.write_all(&buf[..n]).await.unwrap();
            }
        });
        let c = TcpStream::connect(addr).await.unwrap();
        c.set_nodelay(true).unwrap();
        assert!(c.nodelay().unwrap());
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let (mut r, mut w) = c.into_split();
        let writer = {
            let data = data.clone();
            crate::runtime::spawn(async move {
                // Writes of odd sizes: the kernel takes what fits.
                for chunk in data.chunks(1013) {
                    w.write_all(chunk).await.unwrap();
                }
                // Dropping the write half is the half-close the server reads as Ok(0).
            })
        };
        let mut back = vec![0u8; data.len()];
        r.read_exact(&mut back).await.unwrap();
        assert_eq!(back, data);
        writer.await;
        server.await;
        // The server closed: the read half reads the end.
        assert_eq!(r.read(&mut [0u8; 8]).await.unwrap(), 0);
    });
}

#[test]
fn a_dropped_read_loses_no_bytes() {
    run(1, async {
        let (a, b) = UnixStream::pair().unwrap();
        // A read raced by a timeout that fires first, many times over, while
        // bytes arrive: every byte is read exactly once, in order.
        let writer = crate::runtime::spawn(async move {
            for i in 0..200u8 {
                a.write_all(&[i]).await.unwrap();
                crate::runtime::yield_now().await;
            }
        });
        let mut got = Vec::new();
        while got.len() < 200 {
            let mut buf = [0u8; 3];
            if let Ok(r) =
                crate::runtime::timeout(Duration::from_micros(50), b.read(&mut buf)).await
            {
                let n = r.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
        }
        assert_eq!(got, (0..200u8).collect::<Vec<_>>());
        writer.await;
    });
}

#[test]
fn a_peer_reset_mid_request_is_an_error_not_a_hang() {
    run(2, async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The peer is a plain thread with a std socket: it sends half a
        // request and resets (SO_LINGER 0 then close sends RST).
        let peer = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"GET / HT").unwrap();
            std::thread::sleep(Duration::from_millis(50));
            set_linger_zero(&s);
            drop(s);
        });
        let (s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 64];
        let mut got = 0;
        let err = loop {
            match s.read(&mut buf[got..]).await {
                Ok(0) => panic!("a reset read as an orderly close"),
                Ok(n) => got += n,
                Err(e) => break e,
            }
        };
        assert_eq!(&buf[..got], b"GET / HT");
        assert_eq!(err.kind(), ErrorKind::ConnectionReset);
        // Writing to the reset connection fails too, without a panic or SIGPIPE.
        let e = loop {
            if let Err(e) = s.write(b"HTTP/1.1 200 OK\r\n").await {
                break e;
            }
        };
        assert!(
            matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
            "{e:?}"
        );
        peer.join().unwrap();
    });
}

fn set_linger_zero(s: &std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket descriptor and a `linger` of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
}

#[test]
fn half_close_and_a_vanished_peer() {
    run(2, async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let c = TcpStream::connect(addr).await.unwrap();
        let (s, _) = listener.accept().await.unwrap();
        // Half-close: the client stops writing but still reads.
        c.shutdown(Shutdown::Write).unwrap();
        assert_eq!(s.read(&mut [0u8; 4]).await.unwrap(), 0);
        s.write_all(b"late").await.unwrap();
        let mut b = [0u8; 4];
        c.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"late");
        // The server vanishes: the client reads the end, and read_exact says so.
        drop(s);
        let e = c.read_exact(&mut b).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
    });
}

#[test]
fn a_thousand_connections_opened_and_dropped() {
    run(2, async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = crate::runtime::spawn(async move {
            let mut served = 0;
            while served < 1000 {
                let (s, _) = listener.accept().await.unwrap();
                drop(crate::runtime::spawn(async move {
                    let mut b = [0u8; 1];
                    // Some clients send a byte, some go away at once.
                    if let Ok(1) = s.read(&mut b).await {
                        let _ = s.write_all(&b).await;
                    }
                }));
                served += 1;
            }
        });
        let mut clients = Vec::new();
        for i in 0..1000u32 {
            clients.push(crate::runtime::spawn(async move {
                let c = TcpStream::connect(addr).await.unwrap();
                if i % 2 == 0 {
                    c.write_all(&[i as u8]).await.unwrap();
                    let mut b = [0u8; 1];
                    c.read_exact(&mut b).await.unwrap();
                    assert_eq!(b[0], i as u8);
                }
            }));
            // Keep the backlog within what the kernel queues.
            if clients.len() == 64 {
                for c in clients.drain(..) {
                    c.await;
                }
            }
        }
        for c in clients {
            c.await;
        }
        server.await;
        // The server's connection tasks end once their clients are gone.
        let d = Driver::current().unwrap();
        while d.source_count() > 0 {
            crate::runtime::sleep(Duration::from_millis(1)).await;
        }
    });
}

#[test]
fn a_slow_reader_fills_the_buffer_and_the_writer_waits() {
    run(2, async {
        let (a, b) = UnixStream::pair().unwrap();
        const TOTAL: usize = 8 << 20;
        let writer = crate::runtime::spawn(async move {
            let chunk = vec![0xabu8; 64 << 10];
            let mut sent = 0;
            let mut waits = 0u32;
            while sent < TOTAL {
                // A write that cannot complete at once is back-pressure.
                let piece = &chunk[..chunk.len().min(TOTAL - sent)];
                match a.try_write(piece) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        waits += 1;
                        sent += a.write(piece).await.unwrap();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            waits
        });
        let mut read = 0;
        let mut buf = vec![0u8; 4096];
        while read < TOTAL {
            // Slow: a small read, then a pause now and then.
            let n = b.read(&mut buf).await.unwrap();
            assert!(buf[..n].iter().all(|&x| x == 0xab));
            read += n;
            if read % (1 << 20) < 4096 {
                crate::runtime::sleep(Duration::from_millis(2)).await;
            }
        }
        assert_eq!(read, TOTAL);
        assert!(
            writer.await > 0,
            "the writer never had to wait for the reader"
        );
    });
}

#[test]
fn accept_under_a_connection_flood() {
    run(2, async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        const N: usize = 2000;
        // Plain threads flood the listener, as fast as the kernel lets them
        // connect; each writes its number and waits for the echo.
        let flooders: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in (t..N).step_by(4) {
                        let mut s = std::net::TcpStream::connect(addr).unwrap();
                        s.write_all(&(i as u32).to_le_bytes()).unwrap();
                        let mut b = [0u8; 4];
                        s.read_exact(&mut b).unwrap();
                        assert_eq!(u32::from_le_bytes(b), i as u32);
                    }
                })
            })
            .collect();
        let mut seen = vec![false; N];
        for _ in 0..N {
            let (s, _) = listener.accept().await.unwrap();
            let mut b = [0u8; 4];
            s.read_exact(&mut b).await.unwrap();
            s.write_all(&b).await.unwrap();
            seen[u32::from_le_bytes(b) as usize] = true;
        }
        assert!(seen.iter().all(|&x| x));
        for f in flooders {
            f.join().unwrap();
        }
    });
}

#[test]
fn udp_round_trip_and_connected_send() {
    run(1, async {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        for i in 0..100u8 {
            a.send(&[i; 32]).await.unwrap();
            let mut buf = [0u8; 64];
            let n = b.recv(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], &[i; 32]);
        }
        assert_eq!(a.peer_addr().unwrap(), b.local_addr().unwrap());
    });
}

#[test]
fn connect_refused_and_timeout_are_errors() {
    run(1, async {
        let e = TcpStream::connect("127.0.0.1:1").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        // A bound of zero ends the connect before the driver has seen it
        // complete: the caller gets `TimedOut`, and the abandoned socket is
        // deregistered (checked by `run`).
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let e = TcpStream::connect_timeout(addr, Duration::ZERO)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        // With time enough the same connect succeeds.
        TcpStream::connect_timeout(addr, HUNG).await.unwrap();
    });
}

#[test]
fn sockets_work_from_outside_the_workers() {
    // `block_on` on a plain thread drives the global runtime's driver.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"x").unwrap();
    });
    crate::runtime::block_on(async {
        let (s, _) = listener.accept().await.unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"x");
    });
    t.join().unwrap();
}

#[test]
fn the_futures_io_traits_read_and_write() {
    use futures_io::{AsyncRead, AsyncWrite};
    use std::pin::Pin;
    run(1, async {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut r, mut w) = b.into_split();
        let mut a = a;
        let n = std::future::poll_fn(|cx| Pin::new(&mut a).poll_write(cx, b"traits"))
            .await
            .unwrap();
        assert_eq!(n, 6);
        std::future::poll_fn(|cx| Pin::new(&mut a).poll_close(cx))
            .await
            .unwrap();
        let mut buf = [0u8; 16];
        let mut got = Vec::new();
        loop {
            let n = std::future::poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf))
                .await
                .unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, b"traits");
        std::future::poll_fn(|cx| Pin::new(&mut w).poll_flush(cx))
            .await
            .unwrap();
    });
}

#[cfg(feature = "tokio-io")]
#[test]
fn the_tokio_traits_read_and_write() {
    use std::pin::Pin;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    run(1, async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut c = TcpStream::connect(addr).await.unwrap();
        let (mut s, _) = listener.accept().await.unwrap();
        std::future::poll_fn(|cx| Pin::new(&mut c).poll_write(cx, b"tokio"))
            .await
            .unwrap();
        std::future::poll_fn(|cx| Pin::new(&mut c).poll_shutdown(cx))
            .await
            .unwrap();
        let mut got = Vec::new();
        loop {
            let mut storage = [0u8; 3];
            let mut buf = ReadBuf::new(&mut storage);
            std::future::poll_fn(|cx| Pin::new(&mut s).poll_read(cx, &mut buf))
                .await
                .unwrap();
            if buf.filled().is_empty() {
                break;
            }
            got.extend_from_slice(buf.filled());
        }
        assert_eq!(got, b"tokio");
    });
}
