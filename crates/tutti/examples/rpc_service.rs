//! URL-addressed RPC: a work server published at a `tcp://` URL, clients that
//! join it over TCP, and what a client sees when the server goes away.
//!
//! ```sh
//! cargo run -p tutti --example rpc_service
//! ```
//!
//! The `WorkQueue` service is a trait declared with `#[tutti::service]`; the
//! server publishes its implementation at
//! `tcp://127.0.0.1:PORT/demo/work/queue` (loopback only), and the clients call
//! it through the generated `WorkQueueClient`. Two clients, each
//! its own endpoint as a separate program would be, fetch blocks of numbers,
//! sum them and report the sums: one speaks the binary format, the other JSON.
//! A third call style, `oneway`, sends and waits for nothing. Then the server
//! closes: the clients' failure callbacks run, and a call fails with a named
//! error instead of hanging. The program checks every reported sum and the
//! failure handling, and exits with an error if one is wrong.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tutti::msg::codec::Format;
use tutti::rpc::{Client, Rpc, RpcError, Vendor};

const TASKS: u64 = 40;
const BLOCK: u64 = 1000;

/// The service, declared once: the server implements it, the clients call it
/// through the generated `WorkQueueClient` without knowing the server's type.
#[tutti::service(name = "example.work")]
trait WorkQueue {
    /// Give me a task: its id and the numbers to sum, or nothing left.
    async fn fetch(&mut self, worker: String) -> Option<(u64, Vec<u64>)>;
    /// The sum of task `id`; the reply says whether it was right.
    async fn report(&mut self, id: u64, sum: u64) -> bool;
    /// A note for the server's log (sent `oneway`: no reply).
    async fn note(&mut self, text: String);
    /// Tasks done per worker, and notes received.
    async fn progress(&self) -> (BTreeMap<String, u64>, u64);
}

/// The server's implementation (its type stays on the server).
#[derive(Default)]
struct Queue {
    next: u64,
    handed_to: BTreeMap<u64, String>,
    done: BTreeMap<String, u64>,
    notes: u64,
}

fn block(id: u64) -> Vec<u64> {
    (id * BLOCK..(id + 1) * BLOCK).collect()
}

impl WorkQueue for Queue {
    async fn fetch(&mut self, worker: String) -> Option<(u64, Vec<u64>)> {
        if self.next == TASKS {
            return None;
        }
        let id = self.next;
        self.next += 1;
        self.handed_to.insert(id, worker);
        Some((id, block(id)))
    }

    async fn report(&mut self, id: u64, sum: u64) -> bool {
        let right = sum == block(id).iter().sum::<u64>();
        if let (true, Some(worker)) = (right, self.handed_to.remove(&id)) {
            *self.done.entry(worker).or_default() += 1;
        }
        right
    }

    async fn note(&mut self, _text: String) {
        self.notes += 1;
    }

    async fn progress(&self) -> (BTreeMap<String, u64>, u64) {
        (self.done.clone(), self.notes)
    }
}

/// A worker client: its own endpoint, a client of the queue's URL whose
/// connection speaks `format`.
fn worker(name: &str, url: &str, format: Format) -> Result<u64, RpcError> {
    let me = Rpc::builder().cookie("example").client_only().build()?;
    let queue = WorkQueueClient::from_proxy(me.proxy_with(url, format)?);
    queue.proxy().oneway(WorkQueueNote {
        text: format!("{name} joins"),
    })?;
    let mut tasks = 0;
    while let Some((id, numbers)) = queue.fetch_blocking(name.into())? {
        let sum = numbers.iter().sum();
        assert!(
            queue.report_blocking(id, sum)?,
            "the server refused task {id}"
        );
        tasks += 1;
    }
    Ok(tasks)
}

fn main() {
    let server = Rpc::builder()
        .cookie("example")
        .build()
        .expect("an endpoint");
    let url = server
        .publish(
            "demo/work/queue",
            WorkQueueServer::new(Queue::default()),
            Vendor::Sequential,
        )
        .expect("published")
        .to_string();
    println!("the work queue is at {url}");

    let clients: Vec<_> = [("binary", Format::Binary), ("json", Format::Json)]
        .into_iter()
        .map(|(name, format)| {
            let url = url.clone();
            std::thread::spawn(move || (name, worker(name, &url, format)))
        })
        .collect();
    let mut failures = Vec::new();
    let mut fetched = 0;
    for c in clients {
        let (name, result) = c.join().expect("a client thread");
        match result {
            Ok(n) => {
                println!("  client {name:<6} did {n} tasks");
                fetched += n;
            }
            Err(e) => failures.push(format!("client {name}: {e}")),
        }
    }

    // A watcher: asks for progress, and registers a callback for failures of
    // connections to the server's host.
    let watcher = Rpc::builder()
        .cookie("example")
        .client_only()
        .build()
        .unwrap();
    let lost = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&lost);
    watcher.on_failure("tcp://127.0.0.1:*", move |f| {
        println!("  failure callback: lost {}: {}", f.host, f.why);
        counted.fetch_add(1, Ordering::SeqCst);
    });
    let queue: WorkQueueClient = watcher.client(&url).unwrap();
    let (done, notes) = queue.progress_blocking().expect("progress");
    println!("server: tasks done per client {done:?}, {notes} notes");
    if fetched != TASKS || done.values().sum::<u64>() != TASKS || notes != 2 {
        failures.push(format!(
            "{fetched} tasks fetched, {done:?} done, {notes} notes: expected {TASKS} and 2"
        ));
    }

    // The server goes away: the watcher is told, and its next call fails.
    server.close();
    let deadline = Instant::now() + Duration::from_secs(10);
    while lost.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    match queue.progress_blocking() {
        Err(e @ (RpcError::Connect { .. } | RpcError::ConnectionLost { .. })) => {
            println!("a call after the server closed: {e}")
        }
        other => failures.push(format!("a call to a closed server gave {other:?}")),
    }
    if lost.load(Ordering::SeqCst) == 0 {
        failures.push("the failure callback did not run".into());
    }

    if !failures.is_empty() {
        for f in &failures {
            eprintln!("rpc_service: {f}");
        }
        std::process::exit(1);
    }
    println!("verified: every task summed right, failures named, nothing hung");
}
