//! `tutti bench graph`: the local port hand-over of actor graphs.
//!
//! A source actor sends `--messages` `u64` tokens through a channel of each
//! capacity in `--capacities` to a sink actor on the same location (one world
//! location, `--workers` workers); the sink checks order and sum. The peer is a
//! crossbeam-channel `bounded(capacity)` channel between two threads doing the
//! same. Reported per message (whole run, graph set-up included).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::Args;
use tutti::graph::{ActorGraph, OutPort, Partition, PortActor, Ports, SendError, Status};
use tutti::world::{TransportKind, World};

use crate::measure::{timed, Measurement, Progress, RunOpts};
use crate::report::{Report, Stats};

/// Arguments of `tutti bench graph`.
#[derive(Args, Debug)]
pub struct GraphArgs {
    /// Tokens sent per run.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    messages: u64,
    /// Channel capacities to measure.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 64], value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    capacities: Vec<u64>,
    /// Worker threads of tutti's runtime.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A port actor that sends 0, 1, …, `n` − 1 on `out` as fast as its credits
/// allow (a full port makes it yield until the next firing), then is done.
pub fn counting_producer(out: OutPort<u64>, n: u64) -> Box<dyn PortActor> {
    let mut next = 0u64;
    Box::new(move |p: &mut Ports| {
        while next < n {
            match p.send(out, next) {
                Ok(()) => next += 1,
                Err(SendError::Full(_)) => return Status::Continue,
                Err(_) => return Status::Done,
            }
        }
        Status::Done
    })
}

fn expected(n: u64) -> u64 {
    n * n.saturating_sub(1) / 2
}

/// One run of the tutti graph: source → sink; true if the sink saw `0..n` in order.
fn tutti_stream(world: &World, n: u64, cap: usize) -> bool {
    let got = world.run(move |loc| async move {
        let mut b = ActorGraph::builder();
        let s = b.actor("source").unwrap_or_else(|e| panic!("{e}"));
        let out = b.output::<u64>(s, "out").unwrap_or_else(|e| panic!("{e}"));
        let k = b.actor("sink").unwrap_or_else(|e| panic!("{e}"));
        let inp = b.input::<u64>(k, "in").unwrap_or_else(|e| panic!("{e}"));
        if b.connect(out, inp, cap).is_err() {
            return false;
        }
        let g = b.build();
        let Ok(p) = g.partition(1, &Partition::Block) else {
            return false;
        };
        let sum = Arc::new(AtomicU64::new(0));
        let s2 = Arc::clone(&sum);
        let loc = Arc::new(loc);
        let ran = g
            .run(&loc, &p, move |id| -> Box<dyn PortActor> {
                if id == s {
                    counting_producer(out, n)
                } else {
                    let (mut want, mut acc) = (0u64, 0u64);
                    let s2 = Arc::clone(&s2);
                    Box::new(move |p: &mut Ports| {
                        while let Some(v) = p.recv(inp) {
                            if v != want {
                                return Status::Done;
                            }
                            want += 1;
                            acc = acc.wrapping_add(v);
                        }
                        if p.is_ended(inp) {
                            s2.store(acc, Ordering::Relaxed);
                            return Status::Done;
                        }
                        Status::Continue
                    })
                }
            })
            .await;
        ran.is_ok() && sum.load(Ordering::Relaxed) == expected(n)
    });
    got.iter().all(|&ok| ok)
}

/// The peer: crossbeam bounded channel between two threads.
fn crossbeam_stream(n: u64, cap: usize) -> bool {
    let (tx, rx) = crossbeam_channel::bounded::<u64>(cap);
    let producer = std::thread::spawn(move || {
        for v in 0..n {
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    let (mut want, mut acc) = (0u64, 0u64);
    for v in rx.iter() {
        if v != want {
            return false;
        }
        want += 1;
        acc = acc.wrapping_add(v);
    }
    producer.join().is_ok() && acc == expected(n)
}

/// Runs `tutti bench graph`.
pub fn run(args: &GraphArgs) -> Result<Report, String> {
    let (n, w) = (args.messages, args.workers);
    let plan = args.run.plan();
    let mut report = Report::new("graph");
    report
        .param("messages", n)
        .param("capacities", &args.capacities)
        .param("workers", w)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);
    let world = World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(1)
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a world with {w} workers: {e}"))?;
    let progress = Progress::new(2 * args.capacities.len() * plan.total(), args.json);
    for &cap in &args.capacities {
        let cap = cap as usize;
        progress.stage(&format!("capacity {cap}"));
        // The two alternate, one run each per round, so both see the same load.
        let mut t = Measurement {
            secs: Vec::new(),
            ok: true,
        };
        let mut c = t.clone();
        for round in 0..plan.total() {
            for (m, f) in [
                (
                    &mut t,
                    &(|| tutti_stream(&world, n, cap)) as &dyn Fn() -> bool,
                ),
                (&mut c, &(|| crossbeam_stream(n, cap)) as &dyn Fn() -> bool),
            ] {
                let (ok, elapsed) = timed(f);
                m.ok &= ok;
                if round >= plan.warmup {
                    m.secs.push(elapsed.as_secs_f64());
                }
                progress.tick();
            }
        }
        let per = |m: &Measurement| Stats::of(&m.map(|s| s * 1e9 / n as f64));
        report.verify(t.ok && c.ok);
        let metric = format!("handover_cap{cap}");
        if let Some(s) = per(&t) {
            report.result("tutti graph", &metric, s, "ns/message");
        }
        if let Some(s) = per(&c) {
            report.result("crossbeam bounded (threads)", &metric, s, "ns/message");
        }
        report.ratio(
            &format!("time_tutti_over_crossbeam_cap{cap}"),
            t.median_secs() / c.median_secs(),
        );
    }
    progress.finish();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_streams_verify() {
        let world = World::builder()
            .ignore_env()
            .transport(TransportKind::InProcess)
            .locations(1)
            .workers(2)
            .build()
            .unwrap();
        for cap in [1, 3, 64] {
            assert!(tutti_stream(&world, 1000, cap));
            assert!(crossbeam_stream(1000, cap));
        }
    }
}
