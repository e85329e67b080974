//! Rendezvous ping-pong: two processes bounce a counter over two channels;
//! every hop in one direction is one message. Peer: the same with Go's
//! unbuffered channels.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tutti::csp::{channel, Par};

use super::{go_stats, Ctx};
use crate::measure::{repeat, timed, Progress, Run};
use crate::report::{Report, Stats};

/// `messages / 2` round trips; returns whether the counter came back intact.
pub async fn pingpong(messages: u64) -> bool {
    let rounds = messages / 2;
    let (to_pong, from_ping) = channel::<u64>();
    let (to_ping, from_pong) = channel::<u64>();
    let last = Arc::new(AtomicU64::new(u64::MAX));
    let seen = last.clone();
    let net = Par::new()
        .process("ping", async move {
            let mut v = 0;
            for _ in 0..rounds {
                if to_pong.send(v).await.is_err() {
                    return;
                }
                match from_pong.recv().await {
                    Ok(x) => v = x,
                    Err(_) => return,
                }
            }
            seen.store(v, Ordering::Relaxed);
        }) // dropping `to_pong` ends `pong`
        .process("pong", async move {
            while let Ok(x) = from_ping.recv().await {
                if to_ping.send(x + 1).await.is_err() {
                    return;
                }
            }
        })
        .run();
    net.await.is_ok() && last.load(Ordering::Relaxed) == rounds
}

pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let messages = ctx.args.messages / 2 * 2;
    report.param("pingpong", messages);
    let progress = Progress::new(ctx.plan.total(), ctx.args.json);
    progress.stage("ping-pong: tutti");
    let rt = &ctx.rt;
    let ours = repeat(ctx.plan, &progress, || {
        let (ok, elapsed) = timed(|| rt.block_on(rt.spawn(pingpong(messages))));
        Run { elapsed, ok }
    });
    progress.finish();
    report.verify(ours.ok);
    let per = |s: f64| s * 1e9 / messages as f64;
    if let Some(t) = Stats::of(&ours.map(per)) {
        report.result("tutti", "pingpong", t, "ns/message");
    }
    let args = [
        "pingpong".to_string(),
        "-n".to_string(),
        messages.to_string(),
    ];
    if let Some(go) = ctx
        .go_runs(report, ctx.args.workers, &args)
        .and_then(|runs| go_stats(&runs, "time_per_message"))
    {
        report.result("go", "pingpong", go.clone(), "ns/message");
        report.ratio(
            "time_tutti_over_go_pingpong",
            per(ours.median_secs()) / go.median,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_trip_counts() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for m in [2, 3, 10, 1000] {
            assert!(rt.block_on(rt.spawn(pingpong(m))), "{m}");
        }
    }
}
