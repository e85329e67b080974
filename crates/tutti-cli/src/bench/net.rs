//! `tutti bench net`: a TCP echo server and its clients on loopback, tutti's
//! `net` sockets beside tokio's, each runtime with the same number of workers.
//!
//! One run: a listener, `--connections` client tasks that each connect and
//! do `--round-trips` request/response exchanges of one message size (write
//! the message, read the echo back whole), and one server task per
//! connection that echoes what it reads. Server and clients are tasks of the
//! same runtime, so the benchmark measures the runtime's I/O path at both
//! ends. The echo is checked byte for byte. Reported: round trips per second
//! over all connections (median of the runs), and
//! `throughput_tutti_over_tokio_echo_<size>` (higher is better for tutti).
//! The runs of tutti and tokio alternate, so a change in the machine's load
//! affects both alike.

use clap::Args;

use crate::measure::{checked, interleaved, Measurement, Progress, RunOpts};
use crate::report::{Report, Stats};

/// Arguments of `tutti bench net`.
#[derive(Args, Debug)]
pub struct NetArgs {
    /// Concurrent connections.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    connections: u64,
    /// Round trips per connection for the 64-byte messages (the 16 KiB ones
    /// do a quarter as many).
    #[arg(long = "round-trips", default_value_t = 4000, value_parser = clap::value_parser!(u64).range(4..=100_000_000))]
    round_trips: u64,
    /// Worker threads of both runtimes.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The message sizes and their names in the ratios.
const SIZES: [(usize, &str); 2] = [(64, "64"), (16 << 10, "16k")];

/// The message of round trip `k`: a pattern that differs per round trip, so a
/// lost or reordered byte fails the check.
fn message(size: usize, k: u64) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u64 ^ k.wrapping_mul(0x9e37)) as u8)
        .collect()
}

mod on_tutti {
    use tutti::net::{TcpListener, TcpStream};

    async fn serve(s: TcpStream) {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if s.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    async fn client(addr: std::net::SocketAddr, size: usize, round_trips: u64) -> bool {
        let Ok(s) = TcpStream::connect(addr).await else {
            return false;
        };
        if s.set_nodelay(true).is_err() {
            return false;
        }
        let mut back = vec![0u8; size];
        for k in 0..round_trips {
            let msg = super::message(size, k);
            if s.write_all(&msg).await.is_err() || s.read_exact(&mut back).await.is_err() {
                return false;
            }
            if back != msg {
                return false;
            }
        }
        true
    }

    /// One run: all connections to the end; whether every echo checked out.
    pub async fn run(connections: u64, size: usize, round_trips: u64) -> bool {
        let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
            return false;
        };
        let Ok(addr) = listener.local_addr() else {
            return false;
        };
        let server = tutti::spawn(async move {
            for _ in 0..connections {
                let Ok((s, _)) = listener.accept().await else {
                    return;
                };
                let _ = s.set_nodelay(true);
                drop(tutti::spawn(serve(s)));
            }
        });
        let clients: Vec<_> = (0..connections)
            .map(|_| tutti::spawn(client(addr, size, round_trips)))
            .collect();
        let mut ok = true;
        for c in clients {
            ok &= c.await;
        }
        server.await;
        ok
    }
}

mod on_tokio {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    async fn serve(mut s: TcpStream) {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if s.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    async fn client(addr: std::net::SocketAddr, size: usize, round_trips: u64) -> bool {
        let Ok(mut s) = TcpStream::connect(addr).await else {
            return false;
        };
        if s.set_nodelay(true).is_err() {
            return false;
        }
        let mut back = vec![0u8; size];
        for k in 0..round_trips {
            let msg = super::message(size, k);
            if s.write_all(&msg).await.is_err() || s.read_exact(&mut back).await.is_err() {
                return false;
            }
            if back != msg {
                return false;
            }
        }
        true
    }

    /// One run, as `on_tutti::run`.
    pub async fn run(connections: u64, size: usize, round_trips: u64) -> bool {
        let Ok(listener) = TcpListener::bind("127.0.0.1:0").await else {
            return false;
        };
        let Ok(addr) = listener.local_addr() else {
            return false;
        };
        let server = tokio::spawn(async move {
            for _ in 0..connections {
                let Ok((s, _)) = listener.accept().await else {
                    return;
                };
                let _ = s.set_nodelay(true);
                drop(tokio::spawn(serve(s)));
            }
        });
        let clients: Vec<_> = (0..connections)
            .map(|_| tokio::spawn(client(addr, size, round_trips)))
            .collect();
        let mut ok = true;
        for c in clients {
            ok &= c.await.unwrap_or(false);
        }
        ok && server.await.is_ok()
    }
}

/// Runs `tutti bench net`.
pub fn run(args: &NetArgs) -> Result<Report, String> {
    let (conns, w) = (args.connections, args.workers);
    let plan = args.run.plan();
    let mut report = Report::new("net");
    report
        .param("connections", conns)
        .param("round_trips_64", args.round_trips)
        .param("round_trips_16k", args.round_trips / 4)
        .param("workers", w)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let (rt, tokio_rt) = super::net_runtimes(w)?;
    let progress = Progress::new(2 * SIZES.len() * plan.total(), args.json);
    for (size, name) in SIZES {
        let trips = if size > 64 {
            args.round_trips / 4
        } else {
            args.round_trips
        };
        progress.stage(&format!("echo {name}: tutti and tokio"));
        let ms: Vec<Measurement> = interleaved(
            plan,
            &progress,
            &mut [
                &mut || checked(|| rt.block_on(rt.spawn(on_tutti::run(conns, size, trips)))),
                &mut || {
                    checked(|| {
                        matches!(
                            tokio_rt.block_on(tokio_rt.spawn(on_tokio::run(conns, size, trips))),
                            Ok(true)
                        )
                    })
                },
            ],
        );
        let total = (conns * trips) as f64;
        let mut rates = [0.0; 2];
        for ((imp, m), rate) in ["tutti", "tokio"].into_iter().zip(&ms).zip(&mut rates) {
            report.verify(m.ok);
            if let Some(s) = Stats::of(&m.map(|secs| total / secs)) {
                report.result(imp, &format!("echo_{name}"), s, "round trips/s");
            }
            *rate = total / m.median_secs();
        }
        report.ratio(
            &format!("throughput_tutti_over_tokio_echo_{name}"),
            rates[0] / rates[1],
        );
    }
    progress.finish();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_echo_servers_check_out() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        for (size, _) in SIZES {
            assert!(rt.block_on(rt.spawn(on_tutti::run(3, size, 20))));
            assert!(matches!(
                tokio_rt.block_on(tokio_rt.spawn(on_tokio::run(3, size, 20))),
                Ok(true)
            ));
        }
    }

    #[test]
    fn messages_differ_per_round_trip() {
        assert_ne!(message(64, 0), message(64, 1));
    }
}
