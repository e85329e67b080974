//! Unbounded channel throughput: `P` producers send `n` values in all (`n / P` each)
//! through one unbounded channel to one consumer, which sums them.
//!
//! | implementation | producers | consumer |
//! |---|---|---|
//! | `tutti` | `P` processes (async tasks) | a process, on the same runtime |
//! | `tutti_threads` | `P` threads, `send_blocking` | the calling thread, `recv_blocking` |
//! | `crossbeam` | `P` threads, `crossbeam_channel::unbounded` | the calling thread |
//! | `std` | `P` threads, `std::sync::mpsc::channel` | the calling thread |
//!
//! `tutti_threads` is the like-for-like comparison with the thread-based peers; `tutti`
//! is how a tutti program would run it. A run's time spans from starting the producers
//! to the consumer's last value. The runs of the implementations are interleaved (one of
//! each per round, the starting one rotating) so that drifts of the machine's speed hit
//! all alike.

use std::time::{Duration, Instant};

use tutti::csp::{unbounded, Par};

use super::Ctx;
use crate::measure::{Measurement, Progress, Run};
use crate::report::{Report, Stats};

/// The sum of every value the producers send: producer `p` sends `p·per .. (p+1)·per`.
fn expected(total: u64) -> u64 {
    total.wrapping_mul(total.wrapping_sub(1)) / 2
}

/// tutti: producer and consumer processes; true if every value arrived.
pub async fn tutti_processes(producers: u64, per: u64) -> bool {
    let (tx, rx) = unbounded::<u64>();
    let mut net = Par::new();
    for p in 0..producers {
        let tx = tx.clone();
        net = net.process(format!("producer {p}"), async move {
            for v in p * per..(p + 1) * per {
                if tx.send(v).await.is_err() {
                    return;
                }
            }
        });
    }
    drop(tx);
    let total = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sum = total.clone();
    net = net.process("consumer", async move {
        let mut s = 0u64;
        while let Ok(v) = rx.recv().await {
            s = s.wrapping_add(v);
        }
        sum.store(s, std::sync::atomic::Ordering::Relaxed);
    });
    net.run().await.is_ok()
        && total.load(std::sync::atomic::Ordering::Relaxed) == expected(producers * per)
}

/// Producer threads feeding a consumer on the calling thread; `send` and `recv` are the
/// channel's blocking operations. Returns whether the sum checked out and the time.
fn threads<S, R>(
    producers: u64,
    per: u64,
    channel: (S, R),
    send: fn(&S, u64) -> bool,
    recv: fn(&R) -> Option<u64>,
) -> (bool, Duration)
where
    S: Clone + Send + 'static,
{
    let (tx, rx) = channel;
    let start = Instant::now();
    let handles: Vec<_> = (0..producers)
        .map(|p| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for v in p * per..(p + 1) * per {
                    if !send(&tx, v) {
                        return;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let mut s = 0u64;
    while let Some(v) = recv(&rx) {
        s = s.wrapping_add(v);
    }
    let elapsed = start.elapsed();
    let joined = handles.into_iter().all(|h| h.join().is_ok());
    (joined && s == expected(producers * per), elapsed)
}

/// `tutti::csp::unbounded` between threads.
pub fn tutti_threads(producers: u64, per: u64) -> (bool, Duration) {
    threads(
        producers,
        per,
        unbounded::<u64>(),
        |tx, v| tx.send_blocking(v).is_ok(),
        |rx| rx.recv_blocking().ok(),
    )
}

/// `crossbeam_channel::unbounded` between threads.
pub fn crossbeam(producers: u64, per: u64) -> (bool, Duration) {
    threads(
        producers,
        per,
        crossbeam_channel::unbounded::<u64>(),
        |tx, v| tx.send(v).is_ok(),
        |rx| rx.recv().ok(),
    )
}

/// `std::sync::mpsc::channel` between threads.
pub fn std_mpsc(producers: u64, per: u64) -> (bool, Duration) {
    threads(
        producers,
        per,
        std::sync::mpsc::channel::<u64>(),
        |tx, v| tx.send(v).is_ok(),
        |rx| rx.recv().ok(),
    )
}

const IMPLS: [&str; 4] = ["tutti", "tutti_threads", "crossbeam", "std"];

pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let n = ctx.args.unbounded_messages;
    let counts = &ctx.args.producers;
    report
        .param("unbounded_messages", n)
        .param("producers", counts);
    let plan = ctx.plan;
    let progress = Progress::new(IMPLS.len() * counts.len() * plan.total(), ctx.args.json);
    let rt = &ctx.rt;
    let mut all_ok = true;
    for &p in counts {
        let per = n / p;
        let total = per * p;
        progress.stage(&format!("unbounded, {p} producers"));
        let mut m: Vec<Measurement> = (0..IMPLS.len())
            .map(|_| Measurement {
                secs: Vec::with_capacity(plan.runs),
                ok: true,
            })
            .collect();
        for round in 0..plan.total() {
            for k in 0..IMPLS.len() {
                let which = (round + k) % IMPLS.len();
                let (ok, elapsed) = match which {
                    0 => {
                        let start = Instant::now();
                        let ok = rt.block_on(rt.spawn(tutti_processes(p, per)));
                        (ok, start.elapsed())
                    }
                    1 => tutti_threads(p, per),
                    2 => crossbeam(p, per),
                    _ => std_mpsc(p, per),
                };
                let run = Run { elapsed, ok };
                m[which].ok &= run.ok;
                if round >= plan.warmup {
                    m[which].secs.push(run.elapsed.as_secs_f64());
                }
                progress.tick();
            }
        }
        let per_msg = |s: f64| s * 1e9 / total as f64;
        for (name, meas) in IMPLS.iter().zip(&m) {
            all_ok &= meas.ok;
            if let Some(t) = Stats::of(&meas.map(per_msg)) {
                report.result(name, &format!("unbounded_p{p}"), t, "ns/message");
            }
        }
        let median = |k: usize| m[k].median_secs();
        report.ratio(
            &format!("time_tutti_over_crossbeam_unbounded_p{p}"),
            median(0) / median(2),
        );
        report.ratio(
            &format!("time_tutti_threads_over_crossbeam_unbounded_p{p}"),
            median(1) / median(2),
        );
        report.ratio(
            &format!("time_tutti_over_std_unbounded_p{p}"),
            median(0) / median(3),
        );
        report.ratio(
            &format!("time_tutti_threads_over_std_unbounded_p{p}"),
            median(1) / median(3),
        );
    }
    progress.finish();
    report.verify(all_ok);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_implementation_delivers_every_value() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for (p, per) in [(1, 1), (1, 5000), (4, 2000), (3, 1)] {
            assert!(rt.block_on(rt.spawn(tutti_processes(p, per))), "{p} {per}");
            assert!(tutti_threads(p, per).0, "{p} {per}");
            assert!(crossbeam(p, per).0, "{p} {per}");
            assert!(std_mpsc(p, per).0, "{p} {per}");
        }
    }
}
