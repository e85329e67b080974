//! `tutti bench spawn`: async task overhead, tutti beside tokio's
//! multi-thread runtime with the same number of workers.
//!
//! * **spawn + await**: one driver task spawns `--tasks` tiny tasks, keeps
//!   their handles, then awaits them all in order. Reported per task.
//! * **ping-pong**: two tasks bounce a counter `--pingpong` times; each hop
//!   in one direction is one message. tutti passes it through a chain of
//!   single-assignment `DataflowVar`s (message `k` sets variable `k`; the
//!   chain is built in chunks so memory stays bounded, and building it is
//!   timed), tokio through two `mpsc::channel(1)`s. Reported per message.
//!
//! * **spawn_blocking**: one driver task hands `--blocking` tiny closures to
//!   the runtime's blocking pool (`spawn_blocking`, both runtimes with their
//!   default cap of 512 threads and the pool warm from the warm-up runs), keeps
//!   the handles and awaits them in order. Reported per call: the cost of the
//!   hand-off to another thread and of the wake-up back, which is what a
//!   program pays on top of the blocking call itself.
//!
//! Both drivers run as a task on their runtime (`block_on` of a spawned
//! task), so every spawn and wake-up happens on a worker thread.

use std::sync::Arc;

use clap::Args;

use crate::measure::{repeat, timed, Measurement, Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Arguments of `tutti bench spawn`.
#[derive(Args, Debug)]
pub struct SpawnArgs {
    /// Tasks to spawn and await.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    tasks: u64,
    /// Messages of the ping-pong (one per direction of each hop).
    #[arg(long = "pingpong", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    messages: u64,
    /// Closures handed to the blocking pool.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    blocking: u64,
    /// Worker threads of both runtimes.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Dataflow variables built at a time for the tutti ping-pong: small enough
/// that a chunk stays in cache and its memory is reused from the heap.
const CHAIN_CHUNK: u64 = 1 << 12;

/// Sum of `0..tasks`, what the spawned tasks return in total.
fn expected_sum(tasks: u64) -> u64 {
    tasks * tasks.saturating_sub(1) / 2
}

async fn spawn_all_tutti(tasks: u64) -> u64 {
    let handles: Vec<tutti::JoinHandle<u64>> =
        (0..tasks).map(|i| tutti::spawn(async move { i })).collect();
    let mut sum = 0;
    for h in handles {
        sum += h.await;
    }
    sum
}

async fn spawn_all_tokio(tasks: u64) -> u64 {
    let handles: Vec<tokio::task::JoinHandle<u64>> =
        (0..tasks).map(|i| tokio::spawn(async move { i })).collect();
    let mut sum = 0;
    for h in handles {
        // A failed task cannot reach the expected sum.
        sum += h.await.unwrap_or(u64::MAX / 2);
    }
    sum
}

async fn spawn_blocking_tutti(calls: u64) -> u64 {
    let handles: Vec<tutti::JoinHandle<u64>> = (0..calls)
        .map(|i| tutti::spawn_blocking(move || std::hint::black_box(i)))
        .collect();
    let mut sum = 0;
    for h in handles {
        sum += h.await;
    }
    sum
}

async fn spawn_blocking_tokio(calls: u64) -> u64 {
    let handles: Vec<tokio::task::JoinHandle<u64>> = (0..calls)
        .map(|i| tokio::task::spawn_blocking(move || std::hint::black_box(i)))
        .collect();
    let mut sum = 0;
    for h in handles {
        // A failed call cannot reach the expected sum.
        sum += h.await.unwrap_or(u64::MAX / 2);
    }
    sum
}

/// One side of the tutti ping-pong over `chain`, whose first variable is
/// message number `first`: it sets the variables of its parity and reads the
/// others. Returns the counter after the last message of the chunk.
async fn tutti_player(
    chain: Arc<Vec<tutti::DataflowVar<u64>>>,
    first: u64,
    parity: u64,
    mut value: u64,
) -> Option<u64> {
    for (k, var) in (first..).zip(chain.iter()) {
        if k % 2 == parity {
            value += 1;
            var.set(value).ok()?;
        } else {
            value = *var.read().await;
        }
    }
    Some(value)
}

async fn pingpong_tutti(messages: u64) -> Option<u64> {
    let mut value = 0;
    let mut first = 0;
    while first < messages {
        let len = CHAIN_CHUNK.min(messages - first);
        let chain: Arc<Vec<tutti::DataflowVar<u64>>> =
            Arc::new((0..len).map(|_| tutti::DataflowVar::new()).collect());
        let a = tutti::spawn(tutti_player(chain.clone(), first, 0, value));
        let b = tutti::spawn(tutti_player(chain, first, 1, value));
        let (a, b) = (a.await?, b.await?);
        if a != b {
            return None;
        }
        value = a;
        first += len;
    }
    Some(value)
}

/// One side of the tokio ping-pong: sends the messages of its parity on
/// `tx` and receives the others on `rx`.
async fn tokio_player(
    messages: u64,
    parity: u64,
    tx: tokio::sync::mpsc::Sender<u64>,
    mut rx: tokio::sync::mpsc::Receiver<u64>,
) -> Option<u64> {
    let mut value = 0;
    for k in 0..messages {
        if k % 2 == parity {
            value += 1;
            tx.send(value).await.ok()?;
        } else {
            value = rx.recv().await?;
        }
    }
    Some(value)
}

async fn pingpong_tokio(messages: u64) -> Option<u64> {
    let (to_b, from_a) = tokio::sync::mpsc::channel(1);
    let (to_a, from_b) = tokio::sync::mpsc::channel(1);
    let a = tokio::spawn(tokio_player(messages, 0, to_b, from_b));
    let b = tokio::spawn(tokio_player(messages, 1, to_a, from_a));
    let (a, b) = (a.await.ok()??, b.await.ok()??);
    (a == b).then_some(a)
}

/// Runs `tutti bench spawn`.
pub fn run(args: &SpawnArgs) -> Result<Report, String> {
    let (tasks, messages, w) = (args.tasks, args.messages, args.workers);
    let calls = args.blocking;
    let plan = args.run.plan();
    let mut report = Report::new("spawn");
    report
        .param("tasks", tasks)
        .param("pingpong", messages)
        .param("blocking", calls)
        .param("workers", w)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let progress = Progress::new(6 * plan.total(), args.json);
    let measure = |f: &dyn Fn() -> bool| -> Measurement {
        repeat(plan, &progress, || {
            let (ok, elapsed) = timed(f);
            Run { elapsed, ok }
        })
    };

    let rt = tutti::Runtime::builder()
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
    progress.stage("tutti spawn + await");
    let tutti_spawn =
        measure(&|| rt.block_on(rt.spawn(spawn_all_tutti(tasks))) == expected_sum(tasks));
    progress.stage("tutti ping-pong");
    let tutti_pp = measure(&|| rt.block_on(rt.spawn(pingpong_tutti(messages))) == Some(messages));
    progress.stage("tutti spawn_blocking");
    let tutti_blocking =
        measure(&|| rt.block_on(rt.spawn(spawn_blocking_tutti(calls))) == expected_sum(calls));
    drop(rt);

    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(w)
        .build()
        .map_err(|e| format!("cannot build a tokio runtime with {w} workers: {e}"))?;
    progress.stage("tokio spawn + await");
    let tokio_spawn = measure(
        &|| matches!(tokio_rt.block_on(tokio_rt.spawn(spawn_all_tokio(tasks))), Ok(v) if v == expected_sum(tasks)),
    );
    progress.stage("tokio ping-pong");
    let tokio_pp = measure(
        &|| matches!(tokio_rt.block_on(tokio_rt.spawn(pingpong_tokio(messages))), Ok(Some(v)) if v == messages),
    );
    progress.stage("tokio spawn_blocking");
    let tokio_blocking = measure(
        &|| matches!(tokio_rt.block_on(tokio_rt.spawn(spawn_blocking_tokio(calls))), Ok(v) if v == expected_sum(calls)),
    );
    drop(tokio_rt);
    progress.finish();

    let per = |m: &Measurement, count: u64| Stats::of(&m.map(|s| s * 1e9 / count as f64));
    for (name, metric, m, count) in [
        ("tutti", "spawn_await", &tutti_spawn, tasks),
        ("tokio", "spawn_await", &tokio_spawn, tasks),
        ("tutti", "pingpong", &tutti_pp, messages),
        ("tokio", "pingpong", &tokio_pp, messages),
        ("tutti", "spawn_blocking", &tutti_blocking, calls),
        ("tokio", "spawn_blocking", &tokio_blocking, calls),
    ] {
        report.verify(m.ok);
        if let Some(t) = per(m, count) {
            let unit = match metric {
                "pingpong" => "ns/message",
                "spawn_blocking" => "ns/call",
                _ => "ns/task",
            };
            report.result(name, metric, t, unit);
        }
    }
    report.ratio(
        "time_tutti_over_tokio_spawn",
        tutti_spawn.median_secs() / tokio_spawn.median_secs(),
    );
    report.ratio(
        "time_tutti_over_tokio_pingpong",
        tutti_pp.median_secs() / tokio_pp.median_secs(),
    );
    report.ratio(
        "time_tutti_over_tokio_spawn_blocking",
        tutti_blocking.median_secs() / tokio_blocking.median_secs(),
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums() {
        assert_eq!(expected_sum(1), 0);
        assert_eq!(expected_sum(4), 6);
    }

    #[test]
    fn pingpong_counts_every_message() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for m in [1, 2, 3, 10] {
            assert_eq!(rt.block_on(rt.spawn(pingpong_tutti(m))), Some(m));
        }
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        for m in [1, 2, 3, 10] {
            let got = tokio_rt.block_on(tokio_rt.spawn(pingpong_tokio(m)));
            assert_eq!(got.ok().flatten(), Some(m));
        }
    }

    #[test]
    fn pingpong_crosses_chunks() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        let m = CHAIN_CHUNK + 3;
        assert_eq!(rt.block_on(rt.spawn(pingpong_tutti(m))), Some(m));
    }

    #[test]
    fn spawn_blocking_sums() {
        let rt = tutti::Runtime::builder().workers(1).build().unwrap();
        assert_eq!(
            rt.block_on(rt.spawn(spawn_blocking_tutti(100))),
            expected_sum(100)
        );
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let got = tokio_rt.block_on(tokio_rt.spawn(spawn_blocking_tokio(100)));
        assert_eq!(got.ok(), Some(expected_sum(100)));
    }

    #[test]
    fn spawn_all_sums() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        assert_eq!(
            rt.block_on(rt.spawn(spawn_all_tutti(100))),
            expected_sum(100)
        );
    }
}
