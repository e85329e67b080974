//! An RPC server under clients that misbehave: one that never reads its
//! (large) answers, one that floods large requests, one that connects and says
//! nothing (or half a hello), and more clients than the server admits. Each
//! harms only itself: the well-behaved clients keep being answered within
//! their deadlines. Every socket is on 127.0.0.1; every wait is bounded.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tutti::msg::codec::{self, Format, FrameKind, Header};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rpc::{Builder, Rpc, RpcError, Vendor};

/// Answers a string of the given length.
#[derive(Serialize, Deserialize)]
struct Blob(usize);
impl Message for Blob {
    type Reply = String;
}
impl Remote for Blob {
    const NAME: &'static str = "test.admission.Blob";
}

/// Takes a (large) string, answers its length.
#[derive(Serialize, Deserialize)]
struct Sink(String);
impl Message for Sink {
    type Reply = usize;
}
impl Remote for Sink {
    const NAME: &'static str = "test.admission.Sink";
}

#[derive(Default)]
struct Files;

impl Object for Files {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Blob>()?.register::<Sink>()?;
        Ok(())
    }
}
impl Handler<Blob> for Files {
    async fn handle(&mut self, m: Blob, _: &mut ()) -> String {
        "x".repeat(m.0)
    }
}
impl Handler<Sink> for Files {
    async fn handle(&mut self, m: Sink, _: &mut ()) -> usize {
        m.0.len()
    }
}

const PATH: &str = "test/files/a";
const BIG: usize = 256 << 10;

fn addr_of(url: &str) -> String {
    url.trim_start_matches("tcp://")
        .split('/')
        .next()
        .unwrap()
        .to_string()
}

fn client() -> Rpc {
    Rpc::builder()
        .cookie("c")
        .client_only()
        .deadline(Duration::from_secs(3))
        .build()
        .unwrap()
}

/// Waits (bounded) until `f` holds.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A client's handshake frame.
fn hello(cookie: &str) -> Vec<u8> {
    #[derive(Serialize)]
    struct Hello<'a> {
        version: u32,
        cookie: &'a str,
        format: Format,
    }
    let mut f = Vec::new();
    let h = Header {
        msg: tutti::msg::MsgId::from_name("tutti.rpc.Hello"),
        ..Header::new(FrameKind::Control)
    };
    let body = Hello {
        version: 1,
        cookie,
        format: Format::Binary,
    };
    codec::encode_frame(&h, &body, &mut f).unwrap();
    f
}

/// A socket past the handshake, speaking the wire directly.
fn raw(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&hello("c")).unwrap();
    let mut head = [0u8; 48];
    s.read_exact(&mut head).unwrap();
    let n = codec::frame_len(&head, &codec::Limits::DEFAULT)
        .unwrap()
        .unwrap();
    let mut rest = vec![0u8; n - 48];
    s.read_exact(&mut rest).unwrap();
    s
}

/// A call frame (`Ask` with `corr`, or a oneway `Tell` for `corr` 0) of `m`
/// to the object at `PATH`.
fn request<M: Remote>(m: &M, corr: u64) -> Vec<u8> {
    let h = Header {
        msg: M::ID,
        target: tutti::msg::MsgId::from_name(PATH).get(),
        corr,
        ..Header::new(if corr == 0 {
            FrameKind::Tell
        } else {
            FrameKind::Ask
        })
    };
    let mut f = Vec::new();
    codec::encode_frame(&h, m, &mut f).unwrap();
    f
}

/// Well-behaved clients: `clients` endpoints (a new connection each), each
/// making `calls` calls of a small and a large answer, all within their
/// deadlines.
fn others_are_answered(url: &str, clients: usize, calls: usize) {
    let done: Vec<_> = (0..clients)
        .map(|_| {
            let url = url.to_string();
            std::thread::spawn(move || {
                let c = client();
                let p = c.proxy::<Files>(&url).unwrap();
                for _ in 0..calls {
                    assert_eq!(p.call_blocking(Blob(10)).unwrap().len(), 10);
                    assert_eq!(p.call_blocking(Blob(BIG)).unwrap().len(), BIG);
                }
            })
        })
        .collect();
    for d in done {
        d.join()
            .expect("a well-behaved client was not answered in time");
    }
}

/// A client that asks for `n` large answers and reads none of them.
fn never_reads(addr: &str, n: u64) -> TcpStream {
    let mut s = raw(addr);
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut frames = Vec::new();
    for corr in 1..=n {
        frames.extend(request(&Blob(BIG), corr));
    }
    // The requests are small: they fit the socket buffers whole.
    s.write_all(&frames).unwrap();
    s
}

/// An endpoint (cookie "c", configured by `configure`) serving `Files` at
/// `PATH`: the endpoint, the object's URL and its `host:port`.
fn serve(configure: impl FnOnce(Builder) -> Builder) -> (Rpc, String, String) {
    let server = configure(Rpc::builder().cookie("c")).build().unwrap();
    let url = server
        .publish(PATH, Files, Vendor::Sequential)
        .unwrap()
        .to_string();
    let addr = addr_of(&url);
    (server, url, addr)
}

#[test]
fn a_client_that_never_reads_its_answers_stalls_only_itself() {
    let (server, url, addr) = serve(|b| {
        b.max_unsent(64 << 20)
            .write_timeout(Duration::from_secs(60))
    });
    // 64 answers of 256 KiB: 16 MiB, more than the loopback socket buffers hold.
    let stuck = never_reads(&addr, 64);
    eventually("the stuck client's requests to be served", || {
        server.stats().served >= 64
    });
    // Clients connected before and after it are answered within 3 s.
    others_are_answered(&url, 3, 10);
    eventually("the other clients' connections to end", || {
        server.stats().connections_ended == 3
    });
    let s = server.stats();
    assert_eq!(s.open_connections, 1, "the stuck client is still connected");
    drop(stuck);
    eventually("the stuck client's connection to end", || {
        server.stats().open_connections == 0
    });
}

#[test]
fn a_client_whose_answers_pile_up_beyond_the_bound_is_dropped_with_the_reason() {
    let (server, url, addr) = serve(|b| b.max_unsent(1 << 20));
    let _stuck = never_reads(&addr, 64);
    eventually("the stuck client to be dropped", || {
        server.stats().connections_ended == 1
    });
    let why = server.stats().last_error.unwrap_or_default();
    assert!(why.contains("does not read"), "{why}");
    others_are_answered(&url, 2, 5);
}

#[test]
fn a_client_flooding_large_requests_takes_turns_with_the_others() {
    let (server, url, addr) = serve(|b| b);
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = Arc::clone(&stop);
        let mut s = raw(&addr);
        std::thread::spawn(move || {
            let frame = request(&Sink("y".repeat(1 << 20)), 0);
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if s.write_all(&frame).is_err() {
                    break;
                }
                sent += 1;
            }
            sent
        })
    };
    eventually("the flood to be served", || server.stats().served >= 4);
    others_are_answered(&url, 2, 10);
    stop.store(true, Ordering::Relaxed);
    let sent = flood.join().unwrap();
    assert!(sent >= 4, "{sent}");
}

#[test]
fn a_client_that_never_completes_its_handshake_is_dropped() {
    let (server, url, addr) = serve(|b| b.handshake_timeout(Duration::from_millis(200)));
    let started = Instant::now();
    let mut silent = TcpStream::connect(&addr).unwrap();
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(&hello("c")[..20]).unwrap();
    for s in [&mut silent, &mut half] {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 64];
        // The server closes the connection: the end of the stream (or a
        // reset), never a timeout of this read.
        match s.read(&mut buf) {
            Ok(n) => assert_eq!(n, 0),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
    }
    assert!(started.elapsed() < Duration::from_secs(4));
    let s = server.stats();
    assert_eq!(s.refused_connections, 2, "{s:?}");
    assert!(
        s.last_error
            .as_deref()
            .is_some_and(|e| e.contains("no handshake within")),
        "{s:?}"
    );
    eventually("the dropped connections to be gone", || {
        server.stats().open_connections == 0
    });
    // A client that says hello in time is served.
    others_are_answered(&url, 1, 1);
}

#[test]
fn clients_beyond_the_connection_limit_are_refused_and_the_others_go_on() {
    let (server, url, _) = serve(|b| b.max_connections(2));
    let (a, b, c) = (client(), client(), client());
    let pa = a.proxy::<Files>(&url).unwrap();
    let pb = b.proxy::<Files>(&url).unwrap();
    let pc = c.proxy::<Files>(&url).unwrap();
    assert_eq!(pa.call_blocking(Blob(1)).unwrap(), "x");
    assert_eq!(pb.call_blocking(Blob(2)).unwrap(), "xx");
    match pc.call_blocking(Blob(3)) {
        Err(RpcError::Refused { why, .. }) => {
            assert!(why.contains("too many connections"), "{why}")
        }
        other => panic!("a third client was not refused: {other:?}"),
    }
    assert_eq!(server.stats().refused_connections, 1);
    // The open ones are untouched.
    assert_eq!(pa.call_blocking(Blob(4)).unwrap().len(), 4);
    assert_eq!(pb.call_blocking(Blob(5)).unwrap().len(), 5);
    // Once one leaves, the next client is admitted.
    drop((pa, a));
    eventually("the first client's connection to end", || {
        server.stats().open_connections == 1
    });
    assert_eq!(pc.call_blocking(Blob(6)).unwrap().len(), 6);
}
