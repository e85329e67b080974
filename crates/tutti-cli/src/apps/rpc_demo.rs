//! `tutti rpc-demo`: a work server in the spirit of Blip's Dchem.
//!
//! A server publishes its implementation of the `Work` service (a trait declared
//! with `#[tutti::service]`) at `tcp://127.0.0.1:port/chem/work/server`
//! (sequential-group vendor: its calls run one at a time); every client calls it
//! through the generated `WorkClient`, without knowing the server's type. It holds `--tasks`
//! tasks — here, the total stopping time of the Collatz sequences of a block
//! of numbers, a stand-in for a chemistry job — and leases them to clients.
//! During the computation:
//!
//! * `--clients` workers **join** one after another (each its own client
//!   endpoint, on its own thread, with `call_blocking`), fetch work, compute,
//!   and report results — half over binary connections, half over JSON;
//! * one worker **crashes**: it fetches a task and closes its endpoint without
//!   reporting; the server's failure callback sees the connection end, and the
//!   task's lease runs out and it is handed to another worker;
//! * a **monitor** queries the server's status, **pauses** it (fetches then get
//!   "wait"), resumes it, and finally asks it to stop once all is done.
//!
//! Verified: every task done exactly once, every result equal to a sequential
//! recomputation, the crash seen by the failure callback and its task
//! reassigned, the pause observed by a worker.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};
use tutti::msg::codec::Format;
use tutti::rpc::{Client, Rpc, Vendor};

use crate::report::{Report, Stats};

/// Arguments of `tutti rpc-demo`.
#[derive(Args, Debug)]
pub struct RpcDemoArgs {
    /// Tasks to compute.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    tasks: u64,
    /// Numbers per task.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    block: u64,
    /// Worker clients (joining one after another); one more crashes.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    clients: u64,
    /// How long a fetched task is leased before it is handed out again, in ms.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    lease_ms: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A task: the numbers `[start, start + len)`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    id: u64,
    start: u64,
    len: u64,
}

/// What a fetch gets.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
pub enum Lease {
    /// A task to compute.
    Do(Task),
    /// Nothing now (paused, or every task leased): ask again later.
    Wait,
    /// Every task is done.
    Done,
}

/// The work server's interface, declared once: the server implements it, the
/// workers and the monitor call it through the generated `WorkClient`.
#[tutti::service(name = "demo.chem")]
pub trait Work {
    /// Fetch a task.
    async fn fetch(&mut self, client: String) -> Lease;
    /// Report a result; the reply says whether it was taken (a late duplicate is not).
    async fn report(&mut self, client: String, id: u64, result: u64) -> bool;
    /// Query the status.
    async fn status(&self) -> Status;
    /// Pause or resume.
    async fn set_paused(&mut self, paused: bool);
    /// Every result the server holds: (task, result), by task.
    async fn results(&self) -> Vec<(u64, u64)>;
}

/// The server's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Status {
    total: u64,
    done: u64,
    leased: u64,
    paused: bool,
    reassigned: u64,
    duplicates: u64,
    clients: Vec<String>,
}

/// The work server's implementation (its type stays on the server).
struct ChemServer {
    todo: Vec<Task>,
    leased: BTreeMap<u64, (Task, Instant, String)>,
    results: BTreeMap<u64, (u64, String)>,
    lease: Duration,
    status: Status,
}

impl ChemServer {
    /// Hands leases that ran out back to the queue.
    fn expire(&mut self) {
        let now = Instant::now();
        let expired: Vec<u64> = self
            .leased
            .iter()
            .filter(|(_, (_, at, _))| now.duration_since(*at) > self.lease)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some((t, _, _)) = self.leased.remove(&id) {
                self.todo.push(t);
                self.status.reassigned += 1;
            }
        }
    }
}

impl Work for ChemServer {
    async fn fetch(&mut self, client: String) -> Lease {
        if !self.status.clients.contains(&client) {
            self.status.clients.push(client.clone());
        }
        if self.results.len() as u64 == self.status.total {
            return Lease::Done;
        }
        if self.status.paused {
            return Lease::Wait;
        }
        self.expire();
        match self.todo.pop() {
            Some(t) => {
                self.leased.insert(t.id, (t, Instant::now(), client));
                Lease::Do(t)
            }
            None => Lease::Wait,
        }
    }

    async fn report(&mut self, client: String, id: u64, result: u64) -> bool {
        if self.results.contains_key(&id) {
            self.status.duplicates += 1;
            return false;
        }
        // A result for a task whose lease ran out and that is queued again is
        // still good: take it and drop the task from the queue.
        self.leased.remove(&id);
        self.todo.retain(|t| t.id != id);
        self.results.insert(id, (result, client));
        true
    }

    async fn status(&self) -> Status {
        Status {
            done: self.results.len() as u64,
            leased: self.leased.len() as u64,
            ..self.status.clone()
        }
    }

    async fn set_paused(&mut self, paused: bool) {
        self.status.paused = paused;
    }

    async fn results(&self) -> Vec<(u64, u64)> {
        self.results.iter().map(|(id, (r, _))| (*id, *r)).collect()
    }
}

/// The task's result: the sum of the Collatz stopping times of its numbers.
fn compute(t: &Task) -> u64 {
    (t.start..t.start + t.len)
        .map(|mut n| {
            let mut steps = 0u64;
            while n > 1 {
                n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
                steps += 1;
            }
            steps
        })
        .sum()
}

/// What a worker did.
#[derive(Default)]
struct WorkerLog {
    tasks: u64,
    waits: u64,
}

fn worker(
    name: String,
    url: String,
    format: Format,
    deadline: Instant,
) -> Result<WorkerLog, String> {
    let e = |e: tutti::rpc::RpcError| format!("{name}: {e}");
    let rpc = Rpc::builder()
        .cookie("dchem")
        .client_only()
        .build()
        .map_err(e)?;
    let server = WorkClient::from_proxy(rpc.proxy_with(&url, format).map_err(e)?);
    let mut log = WorkerLog::default();
    loop {
        if Instant::now() > deadline {
            return Err(format!("{name}: the computation did not end in time"));
        }
        match server.fetch_blocking(name.clone()).map_err(e)? {
            Lease::Do(t) => {
                let result = compute(&t);
                server
                    .report_blocking(name.clone(), t.id, result)
                    .map_err(e)?;
                log.tasks += 1;
            }
            Lease::Wait => {
                log.waits += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            Lease::Done => return Ok(log),
        }
    }
}

pub fn run(a: &RpcDemoArgs) -> Result<Report, String> {
    let e = |e: tutti::rpc::RpcError| e.to_string();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(120);
    let server = Rpc::builder().cookie("dchem").build().map_err(e)?;
    let tasks: Vec<Task> = (0..a.tasks)
        .rev()
        .map(|id| Task {
            id,
            start: 1 + id * a.block,
            len: a.block,
        })
        .collect();
    let url = server
        .publish(
            "chem/work/server",
            WorkServer::new(ChemServer {
                todo: tasks.clone(),
                leased: BTreeMap::new(),
                results: BTreeMap::new(),
                lease: Duration::from_millis(a.lease_ms),
                status: Status {
                    total: a.tasks,
                    ..Status::default()
                },
            }),
            Vendor::Sequential,
        )
        .map_err(e)?
        .to_string();
    let lost = Arc::new(AtomicU64::new(0));
    let l = Arc::clone(&lost);
    server.on_failure("tcp://127.0.0.1:*", move |f| {
        if !f.outgoing {
            l.fetch_add(1, Ordering::Relaxed);
        }
    });
    // The server's own view of the object: a local client.
    let local: WorkClient = server.client(&url).map_err(e)?;

    // The crash: fetch one task and leave without reporting.
    let crashed = {
        let rpc = Rpc::builder()
            .cookie("dchem")
            .client_only()
            .build()
            .map_err(e)?;
        let p: WorkClient = rpc.client(&url).map_err(e)?;
        let got = p.fetch_blocking("crasher".into()).map_err(e)?;
        drop(rpc); // closes its connection: the server's callback fires
        got
    };

    // Workers join one after another, during the computation.
    let mut joins = Vec::new();
    for k in 0..a.clients {
        let url = url.clone();
        let format = if k % 2 == 0 {
            Format::Binary
        } else {
            Format::Json
        };
        joins.push(std::thread::spawn(move || {
            worker(format!("worker-{k}"), url, format, deadline)
        }));
        std::thread::sleep(Duration::from_millis(10));
    }

    // The monitor: watch, pause, resume.
    let monitor_rpc = Rpc::builder()
        .cookie("dchem")
        .client_only()
        .build()
        .map_err(e)?;
    let monitor = WorkClient::from_proxy(monitor_rpc.proxy_with(&url, Format::Json).map_err(e)?);
    let mut paused_once = false;
    let mut queries = 0u64;
    loop {
        let s = monitor.status_blocking().map_err(e)?;
        queries += 1;
        if !paused_once && s.done * 4 >= s.total {
            monitor.set_paused_blocking(true).map_err(e)?;
            std::thread::sleep(Duration::from_millis(30));
            monitor.set_paused_blocking(false).map_err(e)?;
            paused_once = true;
        }
        if s.done == s.total || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut logs = Vec::new();
    for j in joins {
        logs.push(j.join().map_err(|_| "a worker panicked".to_string())??);
    }
    let status = local.status_blocking().map_err(e)?;
    let elapsed = start.elapsed();

    // Verification: every task done once, by the workers, with the right result.
    let held = local.results_blocking().map_err(e)?;
    let right = held.len() as u64 == a.tasks
        && held
            .iter()
            .zip(tasks.iter().rev())
            .all(|(&(id, r), t)| id == t.id && r == compute(t));
    let crash_seen = lost.load(Ordering::Relaxed) >= 1;
    let crash_task = matches!(crashed, Lease::Do(_));
    let waits: u64 = logs.iter().map(|l| l.waits).sum();
    let by_workers: u64 = logs.iter().map(|l| l.tasks).sum();
    let ok = right
        && status.done == a.tasks
        && by_workers == a.tasks
        && crash_seen
        && crash_task
        && status.reassigned >= 1
        && paused_once
        && waits >= 1;

    let mut report = Report::new("rpc-demo");
    report
        .param("tasks", a.tasks)
        .param("block", a.block)
        .param("clients", a.clients)
        .param("lease_ms", a.lease_ms)
        .param("url", &url);
    let single = |v: f64| Stats::single(v);
    report.result(
        "tutti",
        "elapsed",
        single(elapsed.as_secs_f64() * 1e3),
        "ms",
    );
    report.result("tutti", "tasks done", single(status.done as f64), "tasks");
    report.result(
        "tutti",
        "clients seen",
        single(status.clients.len() as f64),
        "clients",
    );
    report.result(
        "tutti",
        "client connections lost",
        single(lost.load(Ordering::Relaxed) as f64),
        "connections",
    );
    report.result(
        "tutti",
        "tasks reassigned",
        single(status.reassigned as f64),
        "tasks",
    );
    report.result(
        "tutti",
        "late duplicate reports",
        single(status.duplicates as f64),
        "reports",
    );
    report.result(
        "tutti",
        "waits (paused or all leased)",
        single(waits as f64),
        "fetches",
    );
    report.result("tutti", "status queries", single(queries as f64), "calls");
    let st = server.stats();
    report.result(
        "tutti",
        "calls served over TCP",
        single(st.served as f64),
        "calls",
    );
    report.result(
        "tutti",
        "malformed frames",
        single(st.malformed as f64),
        "frames",
    );
    report.verify(ok && st.malformed == 0);
    drop(monitor_rpc);
    Ok(report)
}
