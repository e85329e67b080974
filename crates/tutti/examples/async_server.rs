//! A small TCP server on tutti tasks and timers: every request becomes a task,
//! every task has a deadline, and a timer task reports the load while the
//! server runs.
//!
//! ```sh
//! cargo run -p tutti --example async_server
//! ```
//!
//! The protocol is one request per line: `sum N` answers the sum of `1..=N`
//! (computed in a task), `wait MS` answers `waited MS` after a timer of `MS`
//! milliseconds, and anything else answers `error: …`. A request that takes
//! longer than the deadline (100 ms) answers `timeout`. Four clients on this
//! machine's loopback interface send requests and check every answer; the
//! program exits with an error if one is wrong.
//!
//! Sockets are read and written by plain threads (the library has no async
//! sockets yet); the work, the deadlines and the timers are tutti tasks, so a
//! slow request never holds a worker: it is a task waiting on a timer.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_millis(100);
const CLIENTS: usize = 4;

/// Counters the report task reads while the server runs.
#[derive(Default)]
struct Load {
    served: AtomicU64,
    timed_out: AtomicU64,
}

/// Answers one request. Runs as its own task, under the deadline.
async fn answer(request: String) -> String {
    let mut words = request.split_whitespace();
    match (words.next(), words.next().map(str::parse::<u64>)) {
        (Some("sum"), Some(Ok(n))) => {
            // CPU work in a task: a fork-join sum over halves of the range.
            let total = tutti::join(|| (1..=n / 2).sum::<u64>(), || (n / 2 + 1..=n).sum::<u64>());
            format!("{} {}", n, total.0 + total.1)
        }
        (Some("wait"), Some(Ok(ms))) => {
            // Waiting costs no worker: the task sleeps on the runtime's timer.
            tutti::sleep(Duration::from_millis(ms)).await;
            format!("waited {ms}")
        }
        _ => format!("error: not a request: {request:?}"),
    }
}

/// Serves one connection: reads lines, runs each request as a task with a
/// deadline, writes the answers in order.
fn serve(stream: TcpStream, load: Arc<Load>) -> std::io::Result<()> {
    // Small answers go out at once (no waiting to coalesce them with more).
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    for line in BufReader::new(stream).lines() {
        let request = line?;
        let task = tutti::spawn(tutti::timeout(DEADLINE, answer(request)));
        // A plain thread may wait for a task's result.
        let reply = match task.join() {
            Ok(reply) => reply,
            Err(_elapsed) => {
                load.timed_out.fetch_add(1, Ordering::Relaxed);
                "timeout".to_string()
            }
        };
        load.served.fetch_add(1, Ordering::Relaxed);
        writeln!(out, "{reply}")?;
    }
    Ok(())
}

/// A client: sends its requests one after the other and checks each answer.
fn client(addr: std::net::SocketAddr, id: u64) -> Result<usize, String> {
    let requests = [
        (
            format!("sum {}", 1000 * id),
            format!("{} {}", 1000 * id, 1000 * id * (1000 * id + 1) / 2),
        ),
        (format!("wait {}", 5 * id), format!("waited {}", 5 * id)),
        ("wait 500".to_string(), "timeout".to_string()),
        (
            "hello".to_string(),
            "error: not a request: \"hello\"".to_string(),
        ),
        (
            format!("sum {}", 7 + id),
            format!("{} {}", 7 + id, (7 + id) * (8 + id) / 2),
        ),
    ];
    let stream = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut out = stream.try_clone().map_err(|e| e.to_string())?;
    let mut lines = BufReader::new(stream).lines();
    for (request, expected) in &requests {
        writeln!(out, "{request}").map_err(|e| e.to_string())?;
        let got = lines
            .next()
            .ok_or("the server closed the connection")?
            .map_err(|e| e.to_string())?;
        if &got != expected {
            return Err(format!(
                "client {id}: `{request}` answered `{got}`, expected `{expected}`"
            ));
        }
    }
    Ok(requests.len())
}

fn main() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let load = Arc::new(Load::default());
    println!("serving on {addr}, deadline {DEADLINE:?} per request");

    // A timer task: reports the load every 50 ms until the server stops.
    let stopping = Arc::new(AtomicBool::new(false));
    let reporter = {
        let (load, stopping) = (load.clone(), stopping.clone());
        let start = std::time::Instant::now();
        tutti::spawn(async move {
            let mut reports = 0;
            while !stopping.load(Ordering::Acquire) {
                tutti::sleep(Duration::from_millis(50)).await;
                reports += 1;
                println!(
                    "  [{:>3} ms] served {:>2}, timed out {}",
                    start.elapsed().as_millis(),
                    load.served.load(Ordering::Relaxed),
                    load.timed_out.load(Ordering::Relaxed)
                );
            }
            reports
        })
    };

    // The acceptor: one thread per connection reads and writes the socket.
    let acceptor = {
        let load = load.clone();
        std::thread::spawn(move || {
            let mut connections = Vec::new();
            for stream in listener.incoming().take(CLIENTS) {
                let (stream, load) = (stream.expect("a connection"), load.clone());
                connections.push(std::thread::spawn(move || serve(stream, load)));
            }
            for c in connections {
                c.join()
                    .expect("a connection thread")
                    .expect("connection I/O");
            }
        })
    };

    let clients: Vec<_> = (1..=CLIENTS as u64)
        .map(|id| std::thread::spawn(move || client(addr, id)))
        .collect();
    let mut answered = 0;
    let mut failures = Vec::new();
    for c in clients {
        match c.join().expect("a client thread") {
            Ok(n) => answered += n,
            Err(e) => failures.push(e),
        }
    }
    acceptor.join().expect("the acceptor");
    stopping.store(true, Ordering::Release);
    let reports = reporter.join();

    let served = load.served.load(Ordering::Relaxed);
    let timed_out = load.timed_out.load(Ordering::Relaxed);
    println!("{answered} answers checked by {CLIENTS} clients; served {served}, {timed_out} timed out; {reports} load reports");
    if served != 5 * CLIENTS as u64 || timed_out != CLIENTS as u64 || reports == 0 {
        failures.push(format!(
            "expected {} served and {CLIENTS} timeouts, and a report",
            5 * CLIENTS
        ));
    }
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("async_server: {f}");
        }
        std::process::exit(1);
    }
    println!("verified: every answer right, every slow request cut off by its deadline");
}
