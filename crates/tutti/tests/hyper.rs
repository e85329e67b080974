//! hyper on tutti (the `hyper` feature): real HTTP/1.1 served and requested
//! over `tutti::net` sockets — keep-alive, request bodies, pipelined requests,
//! peers that vanish or reset mid-request, and hyper's timer.
#![cfg(feature = "hyper")]

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::{Request, Response};
use tutti::hyper::{TuttiExecutor, TuttiTimer};
use tutti::net::{TcpListener, TcpStream};

/// Long enough for a loaded CI machine; a hang fails the test instead of
/// stalling the suite.
const LIMIT: Duration = Duration::from_secs(20);

/// Answers `<method> <path> <body length>: <body>` so the client can check
/// that the server saw each request whole.
async fn describe(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await?.to_bytes();
    let text = format!(
        "{method} {path} {}: {}",
        body.len(),
        String::from_utf8_lossy(&body)
    );
    Ok(Response::new(Full::new(Bytes::from(text))))
}

/// A server on tutti accepting `connections` connections; each connection's
/// outcome (`Ok` or hyper's error) goes to the returned list once it ends.
struct Server {
    addr: SocketAddr,
    ended: tutti::JoinHandle<Vec<Result<(), String>>>,
}

fn serve(connections: usize, configure: fn(&mut http1::Builder)) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let ended = tutti::spawn(async move {
        let mut conns = Vec::new();
        for _ in 0..connections {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            let mut builder = http1::Builder::new();
            builder.timer(TuttiTimer);
            configure(&mut builder);
            conns.push(tutti::spawn(async move {
                builder
                    .serve_connection(stream, hyper::service::service_fn(describe))
                    .await
                    .map_err(|e| e.to_string())
            }));
        }
        let mut outcomes = Vec::new();
        for c in conns {
            outcomes.push(c.await);
        }
        outcomes
    });
    Server { addr, ended }
}

fn within<T: Send + 'static>(f: impl std::future::Future<Output = T> + Send + 'static) -> T {
    tutti::block_on(tutti::timeout(LIMIT, f)).expect("the exchange hung")
}

#[test]
fn a_hyper_client_and_server_keep_one_connection_alive() {
    let server = serve(1, |_| {});
    let addr = server.addr;
    let answers = within(async move {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
            .handshake::<_, Full<Bytes>>(stream)
            .await
            .unwrap();
        // The connection's own task, on tutti through hyper's executor trait.
        hyper::rt::Executor::execute(&TuttiExecutor, async move {
            let _ = conn.await;
        });
        let mut answers = Vec::new();
        for (i, body) in ["", "a body", &"x".repeat(100_000)].into_iter().enumerate() {
            let req = Request::post(format!("/r{i}"))
                .header("host", "tutti")
                .body(Full::new(Bytes::from(body.to_owned())))
                .unwrap();
            // HTTP/1.1 has one request in flight: wait until the last is done.
            sender.ready().await.unwrap();
            let resp = sender.send_request(req).await.unwrap();
            assert!(resp.status().is_success());
            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
            answers.push(String::from_utf8(bytes.to_vec()).unwrap());
        }
        drop(sender);
        answers
    });
    assert_eq!(answers[0], "POST /r0 0: ");
    assert_eq!(answers[1], "POST /r1 6: a body");
    assert_eq!(
        answers[2],
        format!("POST /r2 100000: {}", "x".repeat(100_000))
    );
    // Three requests on the one connection, which ends cleanly when the
    // client goes.
    assert_eq!(within(server.ended), vec![Ok(())]);
}

#[test]
fn pipelined_requests_from_a_plain_socket_are_answered_in_order() {
    let server = serve(1, |b| {
        b.pipeline_flush(true);
    });
    let addr = server.addr;
    let text = within(async move {
        tutti::spawn_blocking(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(
                b"GET /one HTTP/1.1\r\nHost: t\r\n\r\n\
                  POST /two HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc\
                  GET /three HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
            let mut text = String::new();
            s.read_to_string(&mut text).unwrap();
            text
        })
        .await
    });
    let one = text.find("GET /one 0: ").expect("first answer");
    let two = text.find("POST /two 3: abc").expect("second answer");
    let three = text.find("GET /three 0: ").expect("third answer");
    assert!(one < two && two < three, "answers out of order: {text}");
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 3);
    assert_eq!(within(server.ended), vec![Ok(())]);
}

#[test]
fn peers_that_vanish_or_reset_mid_request_end_their_connections() {
    let server = serve(3, |_| {});
    let addr = server.addr;
    within(async move {
        tutti::spawn_blocking(move || {
            // Half the headers, then gone.
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
            drop(s);
            // The headers and half the announced body, then gone.
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
                .unwrap();
            drop(s);
            // A reset (linger 0) in the middle of the headers.
            let s = std::net::TcpStream::connect(addr).unwrap();
            let linger = libc_linger_zero(&s);
            (&s).write_all(b"GET / HTTP/1.1\r\n").unwrap();
            std::thread::sleep(Duration::from_millis(20));
            drop(s);
            assert!(linger);
        })
        .await
    });
    // Every connection ended (none hangs) with hyper's error for it, and
    // the server task holds no connection afterwards.
    let outcomes = within(server.ended);
    assert_eq!(outcomes.len(), 3);
    for o in &outcomes {
        assert!(
            o.is_err(),
            "a vanished peer's connection ended cleanly: {outcomes:?}"
        );
    }
}

#[test]
fn hypers_header_timeout_fires_on_tuttis_timer() {
    let server = serve(1, |b| {
        b.header_read_timeout(Duration::from_millis(100));
    });
    let addr = server.addr;
    let started = std::time::Instant::now();
    let silent = std::net::TcpStream::connect(addr).unwrap();
    let outcomes = within(server.ended);
    drop(silent);
    assert_eq!(outcomes.len(), 1);
    let e = outcomes[0].as_ref().unwrap_err();
    assert!(e.contains("timeout") || e.contains("timed out"), "{e}");
    assert!(started.elapsed() >= Duration::from_millis(100));
}

/// Sets SO_LINGER to zero so that closing `s` resets the connection.
fn libc_linger_zero(s: &std::net::TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `s` owns an open socket for the call, and `linger` is a valid
    // `struct linger` of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    rc == 0
}
