//! An RPC server's TCP connection from a hostile client: the handshake and
//! the frames after it as one byte stream (optionally after a valid
//! handshake, so that the frames behind it are reached), then a half-close.
//! The server must close the connection within a bounded time — never
//! crash, hang or keep it — and go on serving a well-behaved client.
#![no_main]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use serde::{Deserialize, Serialize};
use tutti::fuzzing::{rpc_hello, rpc_target};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rpc::{Proxy, Rpc, Vendor};

const COOKIE: &str = "fuzz-cookie";
const PATH: &str = "fuzz/counter/main";

#[derive(Serialize, Deserialize)]
struct Add(u64);
impl Message for Add {
    type Reply = u64;
}
impl Remote for Add {
    const NAME: &'static str = "fuzz.Add";
}

#[derive(Default)]
struct Counter(u64);
impl Object for Counter {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Add>()?;
        Ok(())
    }
}
impl Handler<Add> for Counter {
    async fn handle(&mut self, m: Add, _: &mut ()) -> u64 {
        self.0 = self.0.wrapping_add(m.0);
        self.0
    }
}

struct Server {
    /// Kept alive for the process: it serves the connections.
    _rpc: Rpc,
    addr: String,
    /// A well-behaved client's proxy (another endpoint).
    proxy: Proxy<Counter>,
    _client: Rpc,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let rpc = Rpc::builder()
            .cookie(COOKIE)
            .build()
            .expect("an RPC endpoint");
        let url = rpc
            .publish(PATH, Counter::default(), Vendor::Sequential)
            .expect("publish");
        let client = Rpc::builder()
            .cookie(COOKIE)
            .client_only()
            .build()
            .expect("a client endpoint");
        let proxy = client.proxy::<Counter>(&url.to_string()).expect("a proxy");
        let addr = url.to_string();
        let addr = addr
            .trim_start_matches("tcp://")
            .split('/')
            .next()
            .expect("host:port")
            .to_string();
        Server {
            _rpc: rpc,
            addr,
            proxy,
            _client: client,
        }
    })
}

fuzz_target!(|input: (u8, &[u8])| {
    let (mode, bytes) = input;
    let s = server();
    let mut stream = TcpStream::connect(&s.addr).expect("the server accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut sent = Vec::new();
    if mode & 1 == 1 {
        sent.extend(rpc_hello(COOKIE, mode & 2 == 2));
    }
    // Frames for the published object: the fuzzer finds its target number
    // in the dictionary-like prefix below only rarely, so give it once.
    if mode & 4 == 4 {
        sent.extend(rpc_target(PATH).to_le_bytes());
    }
    sent.extend_from_slice(bytes);
    // The server may close first (a refused handshake, a bad frame).
    let _ = stream.write_all(&sent);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut sink = Vec::new();
    match stream.read_to_end(&mut sink) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server did not close a finished connection: {e}"),
    }
    // A well-behaved client is still served.
    if mode & 0x80 == 0x80 {
        s.proxy
            .call_blocking(Add(1))
            .expect("a good call after hostile bytes");
    }
});
