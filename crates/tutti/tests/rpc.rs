//! URL-addressed RPC over loopback TCP: calls in both formats, local proxies,
//! vendors, deadlines, oneway calls, the cookie, failures with their
//! callbacks and reconnection, bad frames. Every socket is on 127.0.0.1;
//! every wait is bounded.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tutti::actor::{self, Actor, Context};
use tutti::msg::codec::{self, Format, FrameKind, Header};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rpc::{Rpc, RpcError, Vendor};

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Put(String, i64);
impl Message for Put {
    type Reply = Option<i64>;
}
impl Remote for Put {
    const NAME: &'static str = "test.rpc.Put";
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Get(String);
impl Message for Get {
    type Reply = Option<i64>;
}
impl Remote for Get {
    const NAME: &'static str = "test.rpc.Get";
}

/// Sleeps for the given milliseconds, then answers.
#[derive(Serialize, Deserialize)]
struct Nap(u64);
impl Message for Nap {
    type Reply = u64;
}
impl Remote for Nap {
    const NAME: &'static str = "test.rpc.Nap";
}

/// Handled by the store, but not published (not in its remote table).
#[derive(Serialize, Deserialize)]
struct Secret;
impl Message for Secret {
    type Reply = ();
}
impl Remote for Secret {
    const NAME: &'static str = "test.rpc.Secret";
}

/// Its handler panics.
#[derive(Serialize, Deserialize)]
struct Boom;
impl Message for Boom {
    type Reply = ();
}
impl Remote for Boom {
    const NAME: &'static str = "test.rpc.Boom";
}

#[derive(Default)]
struct Store(std::collections::BTreeMap<String, i64>);

impl Object for Store {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Put>()?.register::<Get>()?.register::<Nap>()?;
        t.register::<Boom>()?;
        Ok(())
    }
}
impl Handler<Put> for Store {
    async fn handle(&mut self, m: Put, _: &mut ()) -> Option<i64> {
        self.0.insert(m.0, m.1)
    }
}
impl Handler<Get> for Store {
    async fn handle(&mut self, m: Get, _: &mut ()) -> Option<i64> {
        self.0.get(&m.0).copied()
    }
}
impl Handler<Nap> for Store {
    async fn handle(&mut self, m: Nap, _: &mut ()) -> u64 {
        tutti::sleep(Duration::from_millis(m.0)).await;
        m.0
    }
}
impl Handler<Secret> for Store {
    async fn handle(&mut self, _: Secret, _: &mut ()) {}
}
impl Handler<Boom> for Store {
    async fn handle(&mut self, _: Boom, _: &mut ()) {
        panic!("boom on purpose")
    }
}

fn server() -> (Rpc, String) {
    let rpc = Rpc::builder().cookie("c").build().unwrap();
    let url = rpc
        .publish("test/store/a", Store::default(), Vendor::Sequential)
        .unwrap();
    (rpc, url.to_string())
}

fn client() -> Rpc {
    Rpc::builder().cookie("c").client_only().build().unwrap()
}

/// Waits (bounded) until `f` holds.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn calls_in_both_formats() {
    let (_server, url) = server();
    let c = client();
    for format in [Format::Binary, Format::Json] {
        let p = c.proxy_with::<Store>(&url, format).unwrap();
        assert!(!p.is_local());
        assert_eq!(p.format(), Some(format));
        let key = format!("k-{}", format.name());
        assert_eq!(p.call_blocking(Put(key.clone(), 1)).unwrap(), None);
        assert_eq!(p.call_blocking(Put(key.clone(), 2)).unwrap(), Some(1));
        assert_eq!(tutti::block_on(p.call(Get(key))).unwrap(), Some(2));
    }
    // stcp:// names the same object; both formats share the store.
    let p = c.proxy::<Store>(&url.replace("tcp://", "stcp://")).unwrap();
    assert_eq!(p.call_blocking(Get("k-json".into())).unwrap(), Some(2));
    assert_eq!(c.stats().connects, 2, "one connection per format");
}

#[test]
fn calls_from_many_tasks_share_one_connection() {
    let (server, url) = server();
    let c = client();
    let p = c.proxy::<Store>(&url).unwrap();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let p = p.clone();
            tutti::spawn(async move {
                for i in 0..50i64 {
                    p.call(Put(format!("t{t}-{i}"), i)).await.unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join();
    }
    for t in 0..8 {
        assert_eq!(p.call_blocking(Get(format!("t{t}-49"))).unwrap(), Some(49));
    }
    assert_eq!(c.stats().connects, 1);
    assert_eq!(server.stats().served, 8 * 50 + 8);
}

#[test]
fn a_local_url_gives_a_local_proxy() {
    let (server, url) = server();
    let p = server.proxy::<Store>(&url).unwrap();
    assert!(p.is_local());
    assert_eq!(p.format(), None);
    assert_eq!(p.call_blocking(Put("x".into(), 7)).unwrap(), None);
    p.oneway(Put("x".into(), 8)).unwrap();
    assert_eq!(p.call_blocking(Get("x".into())).unwrap(), Some(8));
    // Local calls move values: nothing was served from a connection.
    assert_eq!(server.stats().served, 0);
    // The object is a Store, not something else.
    struct Other;
    impl Object for Other {
        type Context = ();
    }
    let e = server.proxy::<Other>(&url).unwrap_err();
    assert!(matches!(e, RpcError::WrongType { .. }), "{e}");
}

#[test]
fn oneway_calls_keep_their_order_and_failures_are_counted() {
    let (server, url) = server();
    let c = client();
    let p = c.proxy::<Store>(&url).unwrap();
    for i in 0..200 {
        p.oneway(Put("n".into(), i)).unwrap();
    }
    // The call after them is served after them.
    assert_eq!(p.call_blocking(Get("n".into())).unwrap(), Some(199));
    assert_eq!(c.stats().oneway_sent, 200);

    // A oneway call to nothing: silent here, counted on both sides.
    let nothing = c
        .proxy::<Store>(&url.replace("store/a", "store/none"))
        .unwrap();
    nothing.oneway(Put("n".into(), 0)).unwrap();
    eventually("the rejection notice", || c.stats().rejected == 1);
    assert_eq!(server.stats().dead_letters, 1);
    // And to a host that is not there: an error, counted.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let gone = c
        .proxy::<Store>(&format!("tcp://127.0.0.1:{port}/x"))
        .unwrap();
    assert!(matches!(
        gone.oneway(Put("n".into(), 0)),
        Err(RpcError::Connect { .. })
    ));
    assert_eq!(c.stats().oneway_failed, 1);
}

#[test]
fn unknown_objects_and_methods_are_named_errors() {
    let (server, url) = server();
    let c = client();
    let none = c
        .proxy::<Store>(&url.replace("store/a", "store/b"))
        .unwrap();
    let e = none.call_blocking(Get("x".into())).unwrap_err();
    assert!(matches!(e, RpcError::NoObject { .. }), "{e}");
    let p = c.proxy::<Store>(&url).unwrap();
    let e = p.call_blocking(Secret).unwrap_err();
    match &e {
        RpcError::Fault { why, .. } => assert!(why.contains("handles no message type"), "{e}"),
        _ => panic!("{e}"),
    }
    assert_eq!(server.stats().malformed, 1);
    // The connection goes on.
    assert_eq!(p.call_blocking(Get("x".into())).unwrap(), None);
    // A withdrawn object is gone.
    assert!(server.withdraw("test/store/a"));
    let e = p.call_blocking(Get("x".into())).unwrap_err();
    assert!(matches!(e, RpcError::NoObject { .. }), "{e}");
    // Bad URLs and a second publication are refused.
    assert!(matches!(
        c.proxy::<Store>("tcp://127.0.0.1/x"),
        Err(RpcError::BadUrl(_))
    ));
    server
        .publish("test/store/c", Store::default(), Vendor::Sequential)
        .unwrap();
    assert!(matches!(
        server.publish("test/store/c", Store::default(), Vendor::Sequential),
        Err(RpcError::Taken(_))
    ));
}

#[test]
fn every_call_has_a_deadline() {
    let (_server, url) = server();
    let c = Rpc::builder()
        .cookie("c")
        .client_only()
        .deadline(Duration::from_millis(50))
        .build()
        .unwrap();
    let p = c.proxy::<Store>(&url).unwrap();
    assert_eq!(p.deadline(), Duration::from_millis(50));
    let e = p.call_blocking(Nap(2_000)).unwrap_err();
    assert!(matches!(e, RpcError::Timeout { .. }), "{e}");
    let long = p.clone().with_deadline(Duration::from_secs(10));
    // The store serializes its calls: this one waits for the nap to end.
    assert_eq!(long.call_blocking(Nap(1)).unwrap(), 1);
}

#[test]
fn a_wrong_cookie_is_refused() {
    let (server, url) = server();
    let c = Rpc::builder()
        .cookie("wrong")
        .client_only()
        .build()
        .unwrap();
    let e = c
        .proxy::<Store>(&url)
        .unwrap()
        .call_blocking(Get("x".into()))
        .unwrap_err();
    match &e {
        RpcError::Refused { why, .. } => assert_eq!(why, "wrong cookie"),
        _ => panic!("{e}"),
    }
    eventually("the refusal counted", || {
        server.stats().refused_connections == 1
    });
}

#[test]
fn failures_fail_pending_calls_fire_callbacks_and_reconnect() {
    let (server, url) = server();
    let port: u16 = url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let c = client();
    let fired = Arc::new(Mutex::new(Vec::new()));
    let f = Arc::clone(&fired);
    c.on_failure(&format!("tcp://127.0.0.1:{port}"), move |failure| {
        f.lock().unwrap().push(failure.clone());
    });
    let other = Arc::new(AtomicUsize::new(0));
    let o = Arc::clone(&other);
    c.on_failure("tcp://10.*", move |_| {
        o.fetch_add(1, Ordering::Relaxed);
    });
    let p = c.proxy::<Store>(&url).unwrap();
    assert_eq!(p.call_blocking(Put("k".into(), 1)).unwrap(), None);
    // A call waiting when the server goes away fails with a named error.
    let waiting = {
        let p = p.clone();
        tutti::spawn(async move { p.call(Nap(5_000)).await })
    };
    eventually("the nap to be served", || server.stats().served == 2);
    drop(server);
    let e = waiting.join().unwrap_err();
    assert!(matches!(e, RpcError::ConnectionLost { .. }), "{e}");
    eventually("the callback", || fired.lock().unwrap().len() == 1);
    {
        let f = &fired.lock().unwrap()[0];
        assert_eq!(f.host, format!("tcp://127.0.0.1:{port}"));
        assert!(f.outgoing);
        assert_eq!(f.failed_calls, 1);
    }
    assert_eq!(other.load(Ordering::Relaxed), 0);
    // While it is down, calls fail to connect.
    let e = p.call_blocking(Get("k".into())).unwrap_err();
    assert!(matches!(e, RpcError::Connect { .. }), "{e}");
    // A new server on the same port: the next call connects again.
    let again = Rpc::builder()
        .cookie("c")
        .listen(&format!("127.0.0.1:{port}"))
        .build()
        .unwrap();
    again
        .publish("test/store/a", Store::default(), Vendor::Sequential)
        .unwrap();
    assert_eq!(p.call_blocking(Get("k".into())).unwrap(), None);
    assert_eq!(c.stats().connects, 2);
}

#[test]
fn a_server_hears_of_clients_that_leave() {
    let (server, url) = server();
    let left = Arc::new(AtomicUsize::new(0));
    let l = Arc::clone(&left);
    server.on_failure("*", move |f| {
        assert!(!f.outgoing);
        l.fetch_add(1, Ordering::Relaxed);
    });
    let c = client();
    c.proxy::<Store>(&url)
        .unwrap()
        .call_blocking(Get("x".into()))
        .unwrap();
    drop(c);
    eventually("the server's callback", || {
        left.load(Ordering::Relaxed) == 1
    });
}

// ---- a published actor, with a shared sequential group ----

struct Tally(i64);
impl Actor for Tally {}
impl Handler<Put> for Tally {
    async fn handle(&mut self, m: Put, _: &mut Context<Self>) -> Option<i64> {
        self.0 += m.1;
        Some(self.0)
    }
}
impl Handler<Nap> for Tally {
    async fn handle(&mut self, m: Nap, _: &mut Context<Self>) -> u64 {
        tutti::sleep(Duration::from_millis(m.0)).await;
        m.0
    }
}

#[test]
fn a_reply_that_never_comes_is_refused_for_what_its_target_is() {
    // A published object goes on after a handler that panicked: its call
    // fails naming why, and the next call is served.
    let (server, url) = server();
    let c = client();
    let p = c.proxy::<Store>(&url).unwrap();
    match p.call_blocking(Boom) {
        Err(RpcError::Fault { why, .. }) => assert!(why.contains("no reply"), "{why}"),
        other => panic!("a panicking handler: {other:?}"),
    }
    assert_eq!(p.call_blocking(Get("x".into())).unwrap(), None);
    // An actor that stops with a call waiting: that call finds no object,
    // as the next one does.
    let mut table = Dispatch::new();
    table.register::<Put>().unwrap().register::<Nap>().unwrap();
    let tally = actor::spawn(Tally(0));
    let url = server
        .publish_actor("test/tally/stopping", &tally, table)
        .unwrap();
    let t = c.proxy::<Tally>(&url.to_string()).unwrap();
    let before = server.stats().served;
    let waiting = {
        let t = t.clone();
        tutti::spawn(async move { t.call(Nap(60_000)).await })
    };
    eventually("the nap to be served", || {
        server.stats().served == before + 1
    });
    tally.stop();
    let e = waiting.join().unwrap_err();
    assert!(matches!(e, RpcError::NoObject { .. }), "{e}");
    let e = t.call_blocking(Put(String::new(), 1)).unwrap_err();
    assert!(matches!(e, RpcError::NoObject { .. }), "{e}");
}

#[test]
fn actors_and_shared_groups_are_vendors() {
    let rpc = Rpc::builder().cookie("c").build().unwrap();
    let mut table = Dispatch::new();
    table.register::<Put>().unwrap();
    let tally = actor::spawn(Tally(0));
    let url = rpc.publish_actor("test/tally/x", &tally, table).unwrap();
    let group = Arc::new(tutti::SequentialGroup::new());
    let a = rpc
        .publish(
            "test/store/g1",
            Store::default(),
            Vendor::Group(Arc::clone(&group)),
        )
        .unwrap();
    let b = rpc
        .publish("test/store/g2", Store::default(), Vendor::Group(group))
        .unwrap();
    let c = client();
    let t = c.proxy::<Tally>(&url.to_string()).unwrap();
    for i in 1..=10 {
        t.oneway(Put(String::new(), i)).unwrap();
    }
    assert_eq!(t.call_blocking(Put(String::new(), 0)).unwrap(), Some(55));
    // The actor's local messages and the remote ones go through one mailbox.
    assert_eq!(
        tutti::block_on(tally.ask(Put(String::new(), 1))).unwrap(),
        Some(56)
    );
    let (pa, pb) = (
        c.proxy::<Store>(&a.to_string()).unwrap(),
        c.proxy::<Store>(&b.to_string()).unwrap(),
    );
    // One group serializes both objects: b's quick call waits for a's nap.
    let napping = {
        let pa = pa.clone();
        tutti::spawn(async move { pa.call(Nap(100)).await })
    };
    std::thread::sleep(Duration::from_millis(20));
    let start = Instant::now();
    assert_eq!(pb.call_blocking(Get("k".into())).unwrap(), None);
    let waited = start.elapsed();
    assert_eq!(napping.join().unwrap(), 100);
    assert!(waited >= Duration::from_millis(30), "served in {waited:?}");
}

// ---- bad bytes on the wire ----

fn raw(addr: &str, cookie: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
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
    codec::encode_frame(
        &h,
        &Hello {
            version: 1,
            cookie,
            format: Format::Binary,
        },
        &mut f,
    )
    .unwrap();
    s.write_all(&f).unwrap();
    let mut welcome = [0u8; 48];
    s.read_exact(&mut welcome).unwrap();
    let n = codec::frame_len(&welcome, &codec::Limits::DEFAULT)
        .unwrap()
        .unwrap();
    let mut rest = vec![0u8; n - 48];
    s.read_exact(&mut rest).unwrap();
    s
}

/// Reads frames until the server closes the connection (or 5 s pass).
fn read_until_closed(s: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    all
}

#[test]
fn bad_frames_are_answered_and_counted_and_the_server_goes_on() {
    let (server, url) = server();
    let addr = url
        .trim_start_matches("tcp://")
        .split('/')
        .next()
        .unwrap()
        .to_string();

    // Not a frame at all: a notice naming the cause, then the connection closes.
    let mut s = raw(&addr, "c");
    s.write_all(&[0xAB; 64]).unwrap();
    let got = read_until_closed(&mut s);
    let f = codec::decode_frame(&got).unwrap();
    assert_eq!(f.header().kind, FrameKind::Control);
    let cause = f.decode::<String>().unwrap();
    assert!(cause.contains("cannot be read"), "{cause}");

    // A frame claiming 2^40 bytes: refused before anything is allocated.
    let mut s = raw(&addr, "c");
    let mut f = Vec::new();
    codec::encode_frame(
        &Header {
            corr: 1,
            ..Header::new(FrameKind::Reply)
        },
        &1u8,
        &mut f,
    )
    .unwrap();
    f[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    s.write_all(&f).unwrap();
    let got = read_until_closed(&mut s);
    let cause = codec::decode_frame(&got)
        .unwrap()
        .decode::<String>()
        .unwrap();
    assert!(cause.contains("exceeds the maximum"), "{cause}");

    // A call with a body that does not decode: a fault, and the connection goes on.
    let mut s = raw(&addr, "c");
    let target = tutti::msg::MsgId::from_name("test/store/a").get();
    let mut f = Vec::new();
    let h = Header {
        msg: Put::ID,
        target,
        corr: 9,
        ..Header::new(FrameKind::Ask)
    };
    codec::encode_raw_frame(&h, &[0xFF, 0xFF, 0xFF], &mut f).unwrap();
    s.write_all(&f).unwrap();
    let mut head = [0u8; 48];
    s.read_exact(&mut head).unwrap();
    let n = codec::frame_len(&head, &codec::Limits::DEFAULT)
        .unwrap()
        .unwrap();
    let mut body = vec![0u8; n - 48];
    s.read_exact(&mut body).unwrap();
    let fault = [&head[..], &body[..]].concat();
    let fault = codec::decode_frame(&fault).unwrap();
    assert_eq!(
        (fault.header().kind, fault.header().corr),
        (FrameKind::Fault, 9)
    );

    assert_eq!(server.stats().malformed, 3);
    // A wrong first frame is refused too.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&f).unwrap();
    let got = read_until_closed(&mut s);
    let refusal = codec::decode_frame(&got).unwrap();
    assert!(refusal
        .decode::<String>()
        .unwrap()
        .contains("not a handshake"));
    // Good clients are still served.
    let c = client();
    assert_eq!(
        c.proxy::<Store>(&url)
            .unwrap()
            .call_blocking(Get("x".into()))
            .unwrap(),
        None
    );
}
