//! Barrier synchronisation: `k` processes enrolled on one barrier each sync
//! `s` times; reported per process per sync. Peer: Go's reusable barrier of
//! `k` goroutines (`bench/go`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tutti::csp::{par, Barrier};

use super::{go_stats, Ctx};
use crate::measure::{repeat, timed, Progress, Run};
use crate::report::{Report, Stats};

/// `k` processes, `s` syncs each, doing nothing else (as the Go peer); true
/// if every process made every sync. (The barrier's safety — nobody passes a
/// phase early — is tested in the library.)
pub async fn tutti_barrier(k: u64, s: u64) -> bool {
    let barrier = Barrier::new();
    // Enroll everyone before anyone starts (occam's `PAR i = 0 FOR k ENROLL b`).
    let parties: Vec<_> = (0..k).map(|_| barrier.enroll()).collect();
    let syncs = Arc::new(AtomicU64::new(0));
    let counted = syncs.clone();
    let net = par(parties.into_iter().map(move |mut me| {
        let counted = counted.clone();
        async move {
            for _ in 0..s {
                me.sync().await;
            }
            counted.fetch_add(s, Ordering::Relaxed);
        }
    }));
    net.await.is_ok() && syncs.load(Ordering::Relaxed) == k * s
}

pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let (k, s) = (ctx.args.barrier_processes, ctx.args.barrier_syncs);
    report
        .param("barrier_processes", k)
        .param("barrier_syncs", s);
    let progress = Progress::new(ctx.plan.total(), ctx.args.json);
    progress.stage("barrier: tutti");
    let rt = &ctx.rt;
    let ours = repeat(ctx.plan, &progress, || {
        let (ok, elapsed) = timed(|| rt.block_on(rt.spawn(tutti_barrier(k, s))));
        Run { elapsed, ok }
    });
    progress.finish();
    report.verify(ours.ok);
    let per = |t: f64| t * 1e9 / (k * s) as f64;
    if let Some(t) = Stats::of(&ours.map(per)) {
        report.result("tutti", "barrier", t, "ns/process/sync");
    }
    let args = [
        "barrier".to_string(),
        "-k".to_string(),
        k.to_string(),
        "-s".to_string(),
        s.to_string(),
    ];
    if let Some(go) = ctx
        .go_runs(report, ctx.args.workers, &args)
        .and_then(|runs| go_stats(&runs, "time_per_process_per_sync"))
    {
        report.result("go", "barrier", go.clone(), "ns/process/sync");
        report.ratio(
            "time_tutti_over_go_barrier",
            per(ours.median_secs()) / go.median,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_process_makes_every_sync() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for (k, s) in [(1, 1), (2, 50), (100, 20)] {
            assert!(rt.block_on(rt.spawn(tutti_barrier(k, s))), "{k} {s}");
        }
    }
}
