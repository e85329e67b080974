//! Buffered channel throughput: one producer sends `n` values through a
//! channel of capacity `cap` to one consumer, which sums them. tutti: two
//! processes; crossbeam-channel: two threads (`bounded(cap)`); Go: two
//! goroutines.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tutti::csp::{buffered, Par};

use super::{go_stats, Ctx};
use crate::measure::{repeat, timed, Progress, Run};
use crate::report::{Report, Stats};

/// The sum of `1..=n`, what the consumer must see.
fn expected(n: u64) -> u64 {
    n.wrapping_mul(n.wrapping_add(1)) / 2
}

/// tutti: producer and consumer processes; true if every value arrived.
pub async fn tutti_buffered(n: u64, cap: usize) -> bool {
    let (tx, rx) = buffered::<u64>(cap);
    let sum = Arc::new(AtomicU64::new(0));
    let total = sum.clone();
    let net = Par::new()
        .process("producer", async move {
            for v in 1..=n {
                if tx.send(v).await.is_err() {
                    return;
                }
            }
        })
        .process("consumer", async move {
            let mut s = 0u64;
            while let Ok(v) = rx.recv().await {
                s = s.wrapping_add(v);
            }
            total.store(s, Ordering::Relaxed);
        })
        .run();
    net.await.is_ok() && sum.load(Ordering::Relaxed) == expected(n)
}

/// crossbeam-channel: a producer thread and the calling thread consuming.
pub fn crossbeam_buffered(n: u64, cap: usize) -> (bool, std::time::Duration) {
    let (tx, rx) = crossbeam_channel::bounded::<u64>(cap);
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        for v in 1..=n {
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    let mut s = 0u64;
    while let Ok(v) = rx.recv() {
        s = s.wrapping_add(v);
    }
    let elapsed = start.elapsed();
    let joined = producer.join().is_ok();
    (joined && s == expected(n), elapsed)
}

pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let n = ctx.args.buffered_messages;
    let cap = usize::try_from(ctx.args.capacity).map_err(|_| "--capacity is too large")?;
    report.param("buffered_messages", n).param("capacity", cap);
    let progress = Progress::new(2 * ctx.plan.total(), ctx.args.json);
    progress.stage("buffered: tutti");
    let rt = &ctx.rt;
    let ours = repeat(ctx.plan, &progress, || {
        let (ok, elapsed) = timed(|| rt.block_on(rt.spawn(tutti_buffered(n, cap))));
        Run { elapsed, ok }
    });
    progress.stage("buffered: crossbeam");
    let theirs = repeat(ctx.plan, &progress, || {
        let (ok, elapsed) = crossbeam_buffered(n, cap);
        Run { elapsed, ok }
    });
    progress.finish();
    report.verify(ours.ok && theirs.ok);
    let per = |s: f64| s * 1e9 / n as f64;
    for (name, m) in [("tutti", &ours), ("crossbeam", &theirs)] {
        if let Some(t) = Stats::of(&m.map(per)) {
            report.result(name, "buffered", t, "ns/message");
        }
    }
    report.ratio(
        "time_tutti_over_crossbeam_buffered",
        ours.median_secs() / theirs.median_secs(),
    );
    let args = [
        "buffered".to_string(),
        "-n".to_string(),
        n.to_string(),
        "-cap".to_string(),
        cap.to_string(),
    ];
    if let Some(go) = ctx
        .go_runs(report, ctx.args.workers, &args)
        .and_then(|runs| go_stats(&runs, "time_per_message"))
    {
        report.result("go", "buffered", go.clone(), "ns/message");
        report.ratio(
            "time_tutti_over_go_buffered",
            per(ours.median_secs()) / go.median,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_deliver_every_value() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for (n, cap) in [(1, 1), (10, 1), (5000, 16), (100, 1024)] {
            assert!(rt.block_on(rt.spawn(tutti_buffered(n, cap))), "{n} {cap}");
            assert!(crossbeam_buffered(n, cap).0, "{n} {cap}");
        }
    }
}
