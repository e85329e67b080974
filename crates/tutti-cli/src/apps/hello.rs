//! `tutti hello`: Andrew Bate's "say hello to everyone" benchmark (Welch et al., CPA 2013,
//! §Performance), on `tutti::csp` processes and rendezvous channels.
//!
//! `n` nodes, an `[n][n]` matrix of channels: `c[i][j]` carries node `i`'s
//! messages to node `j`. Every node sends `m` messages (its id) to every node,
//! itself included, and receives `m` from every node, checking that each
//! message carries the id of the node whose channel it came on (the seed's
//! `ASSERT (x = j)`): `m·n²` messages in all.
//!
//! * **v1** — `PAR i = 0 FOR n  PAR (PAR j = 0 FOR n  SEQ k = 0 FOR m  c[i][j] ! i)
//!   (PAR j = 0 FOR n  SEQ k = 0 FOR m  c[j][i] ? x)`: a sender and a receiver
//!   process per pair, `2n²` processes.
//! * **v2** — the same with `SEQ j` instead of `PAR j`: one sender and one
//!   receiver per node, `2n` processes.
//!
//! The nesting of `PAR`s is kept as in the seed (a `par` of nodes, each a
//! `par` of its senders' `par` and its receivers' `par`). The channel matrix
//! is built before the clock starts (Go's peer does the same); the time covers
//! starting every process and running the network to its end.
//!
//! A wrong id or a channel error is counted, never a panic, so a broken run
//! still ends and reports `verified: NO`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use tutti::csp::{channel, par, Par, ParFuture, Rx, Tx};

use crate::measure::{check_memory, repeat, Measurement, Progress, Run, RunOpts};
use crate::mem;
use crate::report::{Report, Stats};

/// Arguments of `tutti hello`.
#[derive(Args, Debug)]
pub struct HelloArgs {
    /// Nodes: `2n²` (v1) or `2n` (v2) processes.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    n: u64,
    /// Messages from every node to every node.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    m: u32,
    /// 1: a process per sender and per receiver (2n² processes); 2: one sender
    /// and one receiver per node (2n processes).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    version: u8,
    /// Worker counts to measure on: one (`2`), a list (`1,2,4`) or a range
    /// (`1..4`) [default: 1..cores].
    #[arg(long, value_parser = crate::args::parse_worker_counts)]
    workers: Option<crate::args::Counts>,
    #[command(flatten)]
    run: RunOpts,
    /// Draw the speedup curve (over the first worker count) into this PNG file.
    #[command(flatten)]
    plot: crate::plot::PlotOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Which form of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `2n²` processes.
    V1,
    /// `2n` processes.
    V2,
}

impl Version {
    /// `1` or `2`.
    pub fn from_number(v: u8) -> Option<Version> {
        match v {
            1 => Some(Version::V1),
            2 => Some(Version::V2),
            _ => None,
        }
    }

    /// The number of processes doing the work.
    pub fn processes(self, n: usize) -> u64 {
        match self {
            Version::V1 => 2 * (n as u64) * (n as u64),
            Version::V2 => 2 * n as u64,
        }
    }

    /// The name used in reports: `hello_v1` or `hello_v2`.
    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "hello_v1",
            Version::V2 => "hello_v2",
        }
    }
}

/// Bytes per v1 process allowed for in the memory check before a run (a
/// process and its share of a channel measure well below this).
const V1_BYTES_PER_PROCESS_BOUND: u128 = 400;

/// One run of the benchmark.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Starting every process and running the network to its end.
    pub elapsed: Duration,
    /// Messages with a wrong id, plus failed channel operations: 0 when verified.
    pub errors: u64,
    /// Peak resident memory during the run, in bytes (when measurable).
    pub peak_rss: Option<u64>,
    /// Resident memory before the channels were made, in bytes (when measurable).
    pub base_rss: Option<u64>,
}

impl Outcome {
    /// Bytes of peak memory above the starting point per process, channels included.
    pub fn bytes_per_process(&self, processes: u64) -> Option<f64> {
        let (peak, base) = (self.peak_rss?, self.base_rss?);
        Some(peak.saturating_sub(base) as f64 / processes as f64)
    }
}

/// The ends of the channel matrix, by node: `rows[i][j]` sends on `c[i][j]`,
/// `cols[i][j]` receives from `c[j][i]`.
struct Matrix {
    rows: Vec<Vec<Tx<u32>>>,
    cols: Vec<Vec<Rx<u32>>>,
}

impl Matrix {
    fn new(n: usize) -> Matrix {
        let mut rows: Vec<Vec<Tx<u32>>> = (0..n).map(|_| Vec::with_capacity(n)).collect();
        let mut cols: Vec<Vec<Rx<u32>>> = (0..n).map(|_| Vec::with_capacity(n)).collect();
        for row in &mut rows {
            for col in &mut cols {
                let (tx, rx) = channel::<u32>();
                row.push(tx);
                col.push(rx);
            }
        }
        Matrix { rows, cols }
    }
}

/// Counts a failure: a wrong id or a failed channel operation.
fn fail(errors: &AtomicU64) {
    errors.fetch_add(1, Ordering::Relaxed);
}

/// `SEQ k = 0 FOR m  c ! i` — every send on one channel.
async fn send_all(tx: &Tx<u32>, i: u32, m: u32, errors: &AtomicU64) -> bool {
    for _ in 0..m {
        if tx.send(i).await.is_err() {
            fail(errors);
            return false;
        }
    }
    true
}

/// `SEQ k = 0 FOR m  c ? x; ASSERT (x = j)` — every receive on one channel.
async fn recv_all(rx: &Rx<u32>, j: u32, m: u32, errors: &AtomicU64) -> bool {
    for _ in 0..m {
        match rx.recv().await {
            Ok(x) if x == j => {}
            Ok(_) => fail(errors),
            Err(_) => {
                fail(errors);
                return false;
            }
        }
    }
    true
}

/// Node `i` of v1: `PAR (PAR j senders) (PAR j receivers)`.
fn node_v1(
    i: u32,
    row: Vec<Tx<u32>>,
    col: Vec<Rx<u32>>,
    m: u32,
    errors: &Arc<AtomicU64>,
) -> ParFuture<'static> {
    let (e1, e2) = (errors.clone(), errors.clone());
    // The loops are written out (not `send_all`/`recv_all`) to keep each of the
    // 2n² futures small: they hold only their end, ids, count and error counter.
    let senders = par(row.into_iter().map(move |tx| {
        let errors = e1.clone();
        async move {
            for _ in 0..m {
                if tx.send(i).await.is_err() {
                    return fail(&errors);
                }
            }
        }
    }));
    let receivers = par(col.into_iter().zip(0u32..).map(move |(rx, j)| {
        let errors = e2.clone();
        async move {
            for _ in 0..m {
                match rx.recv().await {
                    Ok(x) if x == j => {}
                    Ok(_) => fail(&errors),
                    Err(_) => return fail(&errors),
                }
            }
        }
    }));
    par([
        nested(senders, errors.clone()),
        nested(receivers, errors.clone()),
    ])
}

/// A `par` run as a process of an enclosing one; a deadlock report from it
/// (there can be none: every channel is used by a sender and a receiver) would
/// count as a failure.
async fn nested(p: ParFuture<'static>, errors: Arc<AtomicU64>) {
    if p.await.is_err() {
        fail(&errors);
    }
}

/// Node `i` of v2: `PAR (SEQ j sends) (SEQ j receives)`.
fn node_v2(
    i: u32,
    row: Vec<Tx<u32>>,
    col: Vec<Rx<u32>>,
    m: u32,
    errors: &Arc<AtomicU64>,
) -> ParFuture<'static> {
    let (e1, e2) = (errors.clone(), errors.clone());
    Par::new()
        .process("sender", async move {
            for tx in &row {
                if !send_all(tx, i, m, &e1).await {
                    return;
                }
            }
        })
        .process("receiver", async move {
            for (rx, j) in col.iter().zip(0u32..) {
                if !recv_all(rx, j, m, &e2).await {
                    return;
                }
            }
        })
        .run()
}

/// The whole network: `PAR i = 0 FOR n  node(i)`.
fn network(
    version: Version,
    matrix: Matrix,
    m: u32,
    errors: &Arc<AtomicU64>,
) -> ParFuture<'static> {
    let errors = errors.clone();
    let Matrix { rows, cols } = matrix;
    par(rows
        .into_iter()
        .zip(cols)
        .zip(0u32..)
        .map(move |((row, col), i)| {
            let node = match version {
                Version::V1 => node_v1(i, row, col, m, &errors),
                Version::V2 => node_v2(i, row, col, m, &errors),
            };
            nested(node, errors.clone())
        }))
}

/// Runs the benchmark once on `rt`. `n` must fit the ids (`n ≤ 2^32`).
pub fn run_once(rt: &tutti::Runtime, version: Version, n: usize, m: u32) -> Outcome {
    mem::release_free_memory();
    let base_rss = mem::current_rss();
    let matrix = Matrix::new(n);
    let errors = Arc::new(AtomicU64::new(0));
    let net = network(version, matrix, m, &errors);
    let peak_known = mem::reset_peak();
    let start = Instant::now();
    // Driven by a task so that the processes are spawned by a worker.
    let ended = rt.block_on(rt.spawn(net));
    let elapsed = start.elapsed();
    if ended.is_err() {
        fail(&errors);
    }
    Outcome {
        elapsed,
        errors: errors.load(Ordering::Relaxed),
        peak_rss: if peak_known { mem::peak_rss() } else { None },
        base_rss,
    }
}

/// Refuses a v1 run that cannot fit in memory.
pub fn check_v1_memory(n: usize) -> Result<(), String> {
    let processes = Version::V1.processes(n) as u128;
    check_memory(
        processes * V1_BYTES_PER_PROCESS_BOUND,
        &format!("hello v1 with n = {n} ({processes} processes)"),
    )
}

/// Runs `tutti hello`.
pub fn run(args: &HelloArgs) -> Result<Report, String> {
    let version = Version::from_number(args.version)
        .ok_or_else(|| format!("--version must be 1 or 2, got {}", args.version))?;
    let n = usize::try_from(args.n).map_err(|_| "--n is too large".to_string())?;
    let m = args.m;
    let workers = args
        .workers
        .clone()
        .unwrap_or_else(|| crate::args::Counts((1..=crate::default_workers()).collect()));
    let plan = args.run.plan();
    let messages = u64::from(m) * (n as u64) * (n as u64);
    let processes = version.processes(n);
    if version == Version::V1 {
        check_v1_memory(n)?;
    }

    let mut report = Report::new(version.name());
    report
        .param("n", n)
        .param("m", m)
        .param("version", args.version)
        .param("processes", processes)
        .param("messages", messages)
        .param("workers", workers.to_string())
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let progress = Progress::new(workers.0.len() * plan.total(), args.json);
    let mut medians = Vec::new();
    for &w in &workers.0 {
        let rt = tutti::Runtime::builder()
            .workers(w)
            .build()
            .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
        progress.stage(&format!("{} on {w} workers", version.name()));
        let mut peaks = Vec::new();
        let mut per_process = Vec::new();
        let m_runs: Measurement = repeat(plan, &progress, || {
            let o = run_once(&rt, version, n, m);
            if let (Some(p), Some(b)) = (o.peak_rss, o.bytes_per_process(processes)) {
                peaks.push(p as f64);
                per_process.push(b);
            }
            Run {
                elapsed: o.elapsed,
                ok: o.errors == 0,
            }
        });
        report.verify(m_runs.ok);
        let name = format!("tutti_w{w}");
        if let Some(t) = Stats::of(&m_runs.map(|s| s * 1e9 / messages as f64)) {
            report.result(&name, "time_per_message", t, "ns");
        }
        if version == Version::V1 {
            if let Some(p) = Stats::of(&peaks) {
                report.result(&name, "peak_rss", p, "bytes");
            }
            if let Some(b) = Stats::of(&per_process) {
                report.result(&name, "bytes_per_process", b, "bytes");
            }
        }
        medians.push((w, m_runs.median_secs()));
    }
    progress.finish();
    // Speedup over the first worker count measured (one, by default).
    if let Some(&(w0, t0)) = medians.first() {
        for &(w, t) in &medians[1..] {
            report.ratio(&format!("speedup_w{w}_over_w{w0}"), t0 / t);
        }
        if let Some(path) = &args.plot.plot {
            let pts = medians
                .iter()
                .map(|&(w, t)| (w as f64, w0 as f64 * t0 / t))
                .collect();
            let title = format!(
                "{}: n = {n}, m = {m}, speedup (the run on {w0} worker(s) on the ideal line)",
                version.name()
            );
            crate::plot::speedup(path, &title, "workers", &[("tutti".to_string(), pts)])?;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(w: usize) -> tutti::Runtime {
        tutti::Runtime::builder().workers(w).build().unwrap()
    }

    #[test]
    fn both_versions_deliver_every_message() {
        let rt = rt(2);
        for version in [Version::V1, Version::V2] {
            for (n, m) in [(1, 1), (3, 2), (10, 3)] {
                let o = run_once(&rt, version, n, m);
                assert_eq!(o.errors, 0, "{version:?} n={n} m={m}");
            }
        }
    }

    #[test]
    fn one_worker_suffices() {
        let rt = rt(1);
        assert_eq!(run_once(&rt, Version::V1, 8, 2).errors, 0);
        assert_eq!(run_once(&rt, Version::V2, 8, 2).errors, 0);
    }

    #[test]
    fn a_wrong_id_is_counted() {
        // Node 0's receiver of node 1 gets a message claiming to be from node 5.
        let (tx, rx) = channel::<u32>();
        let errors = AtomicU64::new(0);
        let rt = rt(2);
        let sender = rt.spawn(async move { tx.send(5).await.is_ok() });
        assert!(rt.block_on(recv_all(&rx, 1, 1, &errors)));
        assert!(rt.block_on(sender));
        assert_eq!(errors.load(Ordering::Relaxed), 1);
        // A channel whose senders are gone is an error, not a hang.
        assert!(!rt.block_on(recv_all(&rx, 1, 1, &errors)));
        assert_eq!(errors.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn report_has_speedups() {
        let args = HelloArgs {
            n: 6,
            m: 2,
            version: 1,
            workers: Some(crate::args::Counts(vec![1, 2])),
            run: RunOpts { runs: 1, warmup: 0 },
            plot: Default::default(),
            json: true,
        };
        let r = run(&args).unwrap();
        assert_eq!(r.verified(), Some(true));
        let v = r.to_json();
        assert!(v["ratios"]["speedup_w2_over_w1"].as_f64().unwrap() > 0.0);
        assert_eq!(v["params"]["processes"], 72);
    }
}
