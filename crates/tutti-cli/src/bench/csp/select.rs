//! `select!` evaluated in a loop, as user code writes it — every evaluation builds its
//! own selection — beside crossbeam-channel's `select!`, reported per evaluation:
//!
//! * **ready** (`select3_ready`): three buffered channels, each filled before the clock
//!   starts with `n` values, and one consumer evaluating a `select!` over the three
//!   `n` times, every arm ready every time: the cost of one evaluation, and how the
//!   evaluations split among the arms (`select3_min_share`: the least-chosen arm's
//!   share × 3; 1 is an even split, 0 an arm that never ran). tutti: one process;
//!   crossbeam: the calling thread.
//! * **send** (`select_send`): a producer streams `n` values to a consumer over a
//!   rendezvous channel, each through a `select!` whose send arm carries the value
//!   (beside a receive arm on a stop channel that never fires); the consumer receives
//!   plainly. tutti: two processes; crossbeam: two threads, zero-capacity channels.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tutti::csp::{buffered, channel, Par};

use super::fair::fairness;
use super::Ctx;
use crate::measure::{repeat, timed, Progress, Run};
use crate::report::{Report, Stats};

/// The arms of the ready variant.
const ARMS: usize = 3;

/// The ready variant's outcome: which arm each evaluation ran, whether every value
/// came through its own arm in order, and the time of the `n` evaluations.
pub struct ReadyRun {
    /// The arm of each evaluation.
    pub fired: Vec<usize>,
    /// Every value came from its arm's channel, each channel's in order.
    pub ok: bool,
    /// Wall time of the evaluations.
    pub elapsed: Duration,
}

/// Checks one received value: arm `i`'s channel holds `i, i + 3, i + 6, …`.
fn in_order(next: &mut [u64; ARMS], i: usize, v: u64) -> bool {
    let ok = v == next[i];
    next[i] += ARMS as u64;
    ok
}

/// tutti, every arm ready: filled channels (untimed), then one process evaluating
/// `select!` `n` times (timed).
pub fn tutti_ready(rt: &tutti::Runtime, n: usize) -> ReadyRun {
    let chans: Vec<_> = (0..ARMS).map(|_| buffered::<u64>(n)).collect();
    let mut filled = true;
    for (i, (tx, _)) in chans.iter().enumerate() {
        for k in 0..n as u64 {
            filled &= tx.try_send(k * ARMS as u64 + i as u64).is_ok();
        }
    }
    // The senders stay alive, so that no channel ends while the process runs.
    let (txs, rxs): (Vec<_>, Vec<_>) = chans.into_iter().unzip();
    let start = Instant::now();
    let (fired, ok) = rt.block_on(rt.spawn(async move {
        let (a, b, c) = (&rxs[0], &rxs[1], &rxs[2]);
        let mut fired = Vec::with_capacity(n);
        let mut next = [0, 1, 2];
        let mut ok = true;
        for _ in 0..n {
            let (i, v) = tutti::select! {
                recv(a) -> v => (0, v),
                recv(b) -> v => (1, v),
                recv(c) -> v => (2, v),
            };
            ok &= v.is_ok_and(|v| in_order(&mut next, i, v));
            fired.push(i);
        }
        (fired, ok)
    }));
    let elapsed = start.elapsed();
    drop(txs);
    ReadyRun {
        fired,
        ok: filled && ok,
        elapsed,
    }
}

/// crossbeam, every arm ready: the same on the calling thread.
pub fn crossbeam_ready(n: usize) -> ReadyRun {
    let chans: Vec<_> = (0..ARMS)
        .map(|_| crossbeam_channel::bounded::<u64>(n))
        .collect();
    let mut filled = true;
    for (i, (tx, _)) in chans.iter().enumerate() {
        for k in 0..n as u64 {
            filled &= tx.try_send(k * ARMS as u64 + i as u64).is_ok();
        }
    }
    let (txs, rxs): (Vec<_>, Vec<_>) = chans.into_iter().unzip();
    let (a, b, c) = (&rxs[0], &rxs[1], &rxs[2]);
    let mut fired = Vec::with_capacity(n);
    let mut next = [0, 1, 2];
    let mut ok = true;
    let start = Instant::now();
    for _ in 0..n {
        let (i, v) = crossbeam_channel::select! {
            recv(a) -> v => (0, v),
            recv(b) -> v => (1, v),
            recv(c) -> v => (2, v),
        };
        ok &= v.is_ok_and(|v| in_order(&mut next, i, v));
        fired.push(i);
    }
    let elapsed = start.elapsed();
    drop(txs);
    ReadyRun {
        fired,
        ok: filled && ok,
        elapsed,
    }
}

/// The sum of `0..n`, what the send variant's consumer must see.
fn expected(n: u64) -> u64 {
    n.wrapping_mul(n.wrapping_sub(1)) / 2
}

/// tutti: a producer process sending through a `select!` send arm, a consumer process
/// receiving; true if every value arrived once, in order.
pub async fn tutti_send(n: u64) -> bool {
    let (tx, rx) = channel::<u64>();
    let (stop_tx, stop) = channel::<()>();
    let verified = Arc::new(AtomicBool::new(false));
    let result = verified.clone();
    let net = Par::new()
        .process("producer", async move {
            for k in 0..n {
                let sent = tutti::select! {
                    send(tx, k) -> r => r.is_ok(),
                    recv(stop) -> _ => false,
                };
                if !sent {
                    return;
                }
            }
            drop(stop_tx);
        })
        .process("consumer", async move {
            let (mut want, mut sum) = (0u64, 0u64);
            for _ in 0..n {
                match rx.recv().await {
                    Ok(v) if v == want => {
                        want += 1;
                        sum = sum.wrapping_add(v);
                    }
                    _ => return,
                }
            }
            result.store(sum == expected(n), Ordering::Relaxed);
        })
        .run();
    net.await.is_ok() && verified.load(Ordering::Relaxed)
}

/// crossbeam: a producer thread sending through `select!`, the calling thread receiving.
pub fn crossbeam_send(n: u64) -> (bool, Duration) {
    let (tx, rx) = crossbeam_channel::bounded::<u64>(0);
    let (stop_tx, stop) = crossbeam_channel::bounded::<()>(0);
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        for k in 0..n {
            let sent = crossbeam_channel::select! {
                send(tx, k) -> r => r.is_ok(),
                recv(stop) -> _ => false,
            };
            if !sent {
                return;
            }
        }
    });
    let (mut want, mut sum) = (0u64, 0u64);
    for _ in 0..n {
        match rx.recv() {
            Ok(v) if v == want => {
                want += 1;
                sum = sum.wrapping_add(v);
            }
            _ => break,
        }
    }
    let elapsed = start.elapsed();
    drop(stop_tx);
    let joined = producer.join().is_ok();
    (joined && want == n && sum == expected(n), elapsed)
}

pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let n = ctx.args.select_evaluations;
    report.param("select_evaluations", n);
    let progress = Progress::new(4 * ctx.plan.total(), ctx.args.json);
    let rt = &ctx.rt;
    let per = |s: f64| s * 1e9 / n as f64;

    let mut times = [Vec::new(), Vec::new()];
    let mut shares = [Vec::new(), Vec::new()];
    for (k, name) in ["tutti", "crossbeam"].into_iter().enumerate() {
        progress.stage(&format!("select! over {ARMS} ready arms: {name}"));
        for i in 0..ctx.plan.total() {
            let run = if k == 0 {
                tutti_ready(rt, n as usize)
            } else {
                crossbeam_ready(n as usize)
            };
            progress.tick();
            report.verify(run.ok && run.fired.len() == n as usize);
            if i >= ctx.plan.warmup {
                let fair = fairness(&run.fired, ARMS, run.elapsed);
                shares[k].push(fair.min_share);
                times[k].push(per(run.elapsed.as_secs_f64()));
            }
        }
    }
    for (k, name) in ["tutti", "crossbeam"].into_iter().enumerate() {
        if let Some(t) = Stats::of(&times[k]) {
            report.result(name, "select3_ready", t, "ns/evaluation");
        }
        if let Some(s) = Stats::of(&shares[k]) {
            report.result(name, "select3_min_share", s, "share×arms");
        }
    }
    if let (Some(ours), Some(theirs)) = (Stats::of(&times[0]), Stats::of(&times[1])) {
        report.ratio(
            "time_tutti_over_crossbeam_select3_ready",
            ours.median / theirs.median,
        );
    }

    progress.stage("select! send arm stream: tutti");
    let ours = repeat(ctx.plan, &progress, || {
        let (ok, elapsed) = timed(|| rt.block_on(rt.spawn(tutti_send(n))));
        Run { elapsed, ok }
    });
    progress.stage("select! send arm stream: crossbeam");
    let theirs = repeat(ctx.plan, &progress, || {
        let (ok, elapsed) = crossbeam_send(n);
        Run { elapsed, ok }
    });
    progress.finish();
    report.verify(ours.ok && theirs.ok);
    for (name, m) in [("tutti", &ours), ("crossbeam", &theirs)] {
        if let Some(t) = Stats::of(&m.map(per)) {
            report.result(name, "select_send", t, "ns/message");
        }
    }
    report.ratio(
        "time_tutti_over_crossbeam_select_send",
        ours.median_secs() / theirs.median_secs(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_evaluation_takes_its_arms_value_in_order() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for n in [1, 10, 3000] {
            let ours = tutti_ready(&rt, n);
            assert!(ours.ok && ours.fired.len() == n, "tutti {n}");
            let theirs = crossbeam_ready(n);
            assert!(theirs.ok && theirs.fired.len() == n, "crossbeam {n}");
        }
    }

    #[test]
    fn every_sent_value_arrives_once() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for n in [1, 2, 5000] {
            assert!(rt.block_on(rt.spawn(tutti_send(n))), "tutti {n}");
            assert!(crossbeam_send(n).0, "crossbeam {n}");
        }
    }

    #[test]
    fn the_order_check_catches_a_wrong_arm() {
        let mut next = [0, 1, 2];
        assert!(in_order(&mut next, 0, 0));
        assert!(in_order(&mut next, 1, 1));
        assert!(!in_order(&mut next, 2, 5));
    }
}
