//! The peers of `tutti bench rpc`: the same call (add to a total, get it back)
//! as a tarpc service and as a remoc `rtc` trait, each client and server on
//! one tokio runtime in this process over loopback TCP with `TCP_NODELAY`,
//! both with bincode (remoc with its flush delay set to 0); and a floor: 8-byte blocking echo between two threads
//! over std TCP. Each client's loop runs inside a task of its runtime, as
//! tutti's does.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use tarpc::server::Channel;

use crate::measure::{checked, Run};

#[tarpc::service]
trait Adder {
    async fn add(x: u64) -> u64;
}

#[derive(Clone)]
struct AdderServer(Arc<AtomicU64>);

impl Adder for AdderServer {
    async fn add(self, _: tarpc::context::Context, x: u64) -> u64 {
        self.0.fetch_add(x, Ordering::Relaxed) + x
    }
}

#[remoc::rtc::remote]
pub trait RemocAdder {
    async fn add(&mut self, x: u64) -> Result<u64, remoc::rtc::CallError>;
}

struct RemocAcc(u64);

#[remoc::rtc::async_trait]
impl RemocAdder for RemocAcc {
    async fn add(&mut self, x: u64) -> Result<u64, remoc::rtc::CallError> {
        self.0 += x;
        Ok(self.0)
    }
}

/// The peers, connected and ready.
pub struct Peers {
    rt: tokio::runtime::Runtime,
    tarpc: AdderClient,
    remoc: Arc<tokio::sync::Mutex<RemocAdderClient>>,
    echo: Mutex<TcpStream>,
}

impl Peers {
    /// Starts both servers and connects a client to each.
    pub fn start() -> Result<Peers, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(crate::default_workers())
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let tarpc = rt.block_on(start_tarpc())?;
        let remoc = rt.block_on(start_remoc())?;
        let echo = start_echo().map_err(|e| format!("std echo: {e}"))?;
        Ok(Peers {
            rt,
            tarpc,
            remoc: Arc::new(tokio::sync::Mutex::new(remoc)),
            echo: Mutex::new(echo),
        })
    }

    /// `n` tarpc calls in a row from a tokio task.
    pub fn tarpc(&self, n: u64) -> Run {
        let client = self.tarpc.clone();
        checked(|| {
            self.rt
                .block_on(self.rt.spawn(async move {
                    let ctx = tarpc::context::current;
                    let Ok(base) = client.add(ctx(), 0).await else {
                        return false;
                    };
                    let mut last = 0;
                    for _ in 0..n {
                        match client.add(ctx(), 1).await {
                            Ok(v) => last = v,
                            Err(_) => return false,
                        }
                    }
                    last == base + n
                }))
                .unwrap_or(false)
        })
    }

    /// `n` remoc calls in a row from a tokio task.
    pub fn remoc(&self, n: u64) -> Run {
        let client = Arc::clone(&self.remoc);
        checked(|| {
            self.rt
                .block_on(self.rt.spawn(async move {
                    let mut client = client.lock().await;
                    let Ok(base) = client.add(0).await else {
                        return false;
                    };
                    let mut last = 0;
                    for _ in 0..n {
                        match client.add(1).await {
                            Ok(v) => last = v,
                            Err(_) => return false,
                        }
                    }
                    last == base + n
                }))
                .unwrap_or(false)
        })
    }

    /// `n` blocking 8-byte round trips to an echo thread.
    pub fn echo(&self, n: u64) -> Run {
        let mut s = self.echo.lock().unwrap_or_else(|p| p.into_inner());
        checked(|| {
            let mut buf = [0u8; 8];
            for i in 0..n {
                if s.write_all(&i.to_le_bytes()).is_err() || s.read_exact(&mut buf).is_err() {
                    return false;
                }
                if u64::from_le_bytes(buf) != i {
                    return false;
                }
            }
            true
        })
    }
}

async fn start_tarpc() -> Result<AdderClient, String> {
    use tarpc::tokio_serde::formats::Bincode;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let total = Arc::new(AtomicU64::new(0));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let _ = socket.set_nodelay(true);
            let framed = tokio_util::codec::Framed::new(
                socket,
                tokio_util::codec::LengthDelimitedCodec::new(),
            );
            let transport = tarpc::serde_transport::new(framed, Bincode::default());
            let server = AdderServer(Arc::clone(&total));
            tokio::spawn(
                tarpc::server::BaseChannel::with_defaults(transport)
                    .execute(server.serve())
                    .for_each(|f| async move {
                        tokio::spawn(f);
                    }),
            );
        }
    });
    let socket = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    socket.set_nodelay(true).map_err(|e| e.to_string())?;
    let framed =
        tokio_util::codec::Framed::new(socket, tokio_util::codec::LengthDelimitedCodec::new());
    let transport = tarpc::serde_transport::new(framed, Bincode::default());
    Ok(AdderClient::new(tarpc::client::Config::default(), transport).spawn())
}

async fn start_remoc() -> Result<RemocAdderClient, String> {
    use remoc::rch::base;
    use remoc::rtc::Server;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        let _ = socket.set_nodelay(true);
        let (rx, tx) = socket.into_split();
        let Ok((conn, mut tx, _rx)) =
            remoc::Connect::io::<_, _, RemocAdderClient, (), remoc::codec::Default>(
                remoc_cfg(),
                rx,
                tx,
            )
            .await
        else {
            return;
        };
        tokio::spawn(conn);
        let (server, client) = RemocAdderServer::new(RemocAcc(0), 16);
        let _: Result<(), _> = base::Sender::send(&mut tx, client).await.map_err(drop);
        let _ = server.serve().await;
    });
    let socket = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    socket.set_nodelay(true).map_err(|e| e.to_string())?;
    let (rx, tx) = socket.into_split();
    let (conn, _tx, mut rx): (
        _,
        base::Sender<(), remoc::codec::Default>,
        base::Receiver<RemocAdderClient, remoc::codec::Default>,
    ) = remoc::Connect::io(remoc_cfg(), rx, tx)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    match rx.recv().await {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err("remoc: the server sent no client".into()),
        Err(e) => Err(format!("remoc: {e}")),
    }
}

/// remoc's configuration for latency: its default waits 20 ms for more data
/// before it flushes a connection (44 ms a round trip here); the delay is 0.
fn remoc_cfg() -> remoc::Cfg {
    remoc::Cfg {
        flush_delay: std::time::Duration::ZERO,
        ..Default::default()
    }
}

fn start_echo() -> std::io::Result<TcpStream> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let _ = s.set_nodelay(true);
            let mut buf = [0u8; 8];
            while s.read_exact(&mut buf).is_ok() {
                if s.write_all(&buf).is_err() {
                    break;
                }
            }
        }
    });
    let s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    Ok(s)
}
