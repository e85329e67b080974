//! `Alt` selection over `g` input guards, two ways, reported per selection:
//!
//! * **rendezvous** (`alt{g}`): a producer sends `n` values, each on a channel
//!   picked at random (fixed seed) among `g` rendezvous channels, and a
//!   consumer selects over all `g` and takes each value from the guard that
//!   fired; each selection also completes one rendezvous, and usually finds no
//!   guard ready at first, so it waits on all `g`. tutti: two processes, one
//!   reused `Alt` with `select`; crossbeam-channel: two threads,
//!   zero-capacity channels, one reused `Select`.
//! * **ready** (`alt{g}_ready`): `g` buffered channels, filled before the clock
//!   starts with `n` values in all; one consumer selects `n` times, every guard
//!   ready (until its channel runs dry): the cost of the selection itself.
//!   tutti: one process; crossbeam: the calling thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tutti::csp::{channel, Alt, Par, Rx, Tx};

use super::Ctx;
use crate::measure::{repeat, timed, Progress, Run};
use crate::report::{Report, Stats};
use crate::rng::Rng;

/// The value sent as the `k`-th message on channel `i` of `g`: it names its
/// channel, so the consumer can check the guard that fired.
fn message(k: u64, i: u64, g: u64) -> u64 {
    k * g + i
}

/// The consumer's check: every value came through the guard of its channel,
/// and the values arrived in the order sent (one producer, rendezvous).
struct Check {
    next: u64,
    g: u64,
    ok: bool,
}

impl Check {
    fn new(g: u64) -> Check {
        Check {
            next: 0,
            g,
            ok: true,
        }
    }

    fn saw(&mut self, index: usize, value: u64) {
        self.ok &= value / self.g == self.next && value % self.g == index as u64;
        self.next += 1;
    }
}

/// tutti: producer and selecting consumer processes; true if verified.
pub async fn tutti_alt(g: u64, n: u64, seed: u64) -> bool {
    let (txs, rxs): (Vec<Tx<u64>>, Vec<Rx<u64>>) = (0..g).map(|_| channel()).unzip();
    let verified = Arc::new(AtomicBool::new(false));
    let result = verified.clone();
    let net = Par::new()
        .process("producer", async move {
            let mut rng = Rng::new(seed);
            for k in 0..n {
                let i = rng.below(g);
                if txs[i as usize].send(message(k, i, g)).await.is_err() {
                    return;
                }
            }
        })
        .process("consumer", async move {
            let mut alt = rxs.iter().fold(Alt::new(), |alt, rx| alt.recv(rx));
            let mut check = Check::new(g);
            for _ in 0..n {
                let sel = alt.select().await;
                let i = sel.index();
                match sel.recv(&rxs[i]) {
                    Ok(v) => check.saw(i, v),
                    Err(_) => return,
                }
            }
            result.store(check.ok && check.next == n, Ordering::Relaxed);
        })
        .run();
    net.await.is_ok() && verified.load(Ordering::Relaxed)
}

/// crossbeam-channel: a producer thread and the calling thread selecting.
pub fn crossbeam_alt(g: u64, n: u64, seed: u64) -> (bool, Duration) {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..g).map(|_| crossbeam_channel::bounded::<u64>(0)).unzip();
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        let mut rng = Rng::new(seed);
        for k in 0..n {
            let i = rng.below(g);
            if txs[i as usize].send(message(k, i, g)).is_err() {
                return;
            }
        }
    });
    let mut sel = crossbeam_channel::Select::new();
    for rx in &rxs {
        sel.recv(rx);
    }
    let mut check = Check::new(g);
    for _ in 0..n {
        let oper = sel.select();
        let i = oper.index();
        match oper.recv(&rxs[i]) {
            Ok(v) => check.saw(i, v),
            Err(_) => break,
        }
    }
    let elapsed = start.elapsed();
    let joined = producer.join().is_ok();
    (joined && check.ok && check.next == n, elapsed)
}

/// The `n` values of the ready variant, dealt round-robin to `g` buffered
/// channels (value `v` on channel `v mod g`) by `send`, which gets a channel
/// index, its capacity and the value.
fn deal(g: u64, n: u64) -> (u64, impl Iterator<Item = (usize, u64)>) {
    let cap = n.div_ceil(g).max(1);
    (cap, (0..n).map(move |v| ((v % g) as usize, v)))
}

/// The ready variant's check: each channel's values arrive in order, and all
/// `n` arrive once.
struct ReadyCheck {
    last: Vec<Option<u64>>,
    count: u64,
    sum: u64,
    ok: bool,
}

impl ReadyCheck {
    fn new(g: u64) -> ReadyCheck {
        ReadyCheck {
            last: vec![None; g as usize],
            count: 0,
            sum: 0,
            ok: true,
        }
    }

    fn saw(&mut self, index: usize, value: u64) {
        let g = self.last.len() as u64;
        self.ok &= value % g == index as u64 && self.last[index].is_none_or(|l| l < value);
        self.last[index] = Some(value);
        self.count += 1;
        self.sum = self.sum.wrapping_add(value);
    }

    fn verified(&self, n: u64) -> bool {
        self.ok && self.count == n && self.sum == n.wrapping_mul(n.wrapping_sub(1)) / 2
    }
}

/// tutti, every guard ready: filled channels (untimed), then one process
/// selecting `n` times (timed).
pub fn tutti_alt_ready(rt: &tutti::Runtime, g: u64, n: u64) -> (bool, Duration) {
    let (cap, values) = deal(g, n);
    let (txs, rxs): (Vec<Tx<u64>>, Vec<Rx<u64>>) =
        (0..g).map(|_| tutti::csp::buffered(cap as usize)).unzip();
    let mut filled = true;
    for (i, v) in values {
        filled &= txs[i].try_send(v).is_ok();
    }
    // The senders stay alive, so that a drained channel is not ready (closed).
    let start = Instant::now();
    let verified = rt.block_on(rt.spawn(async move {
        let mut alt = rxs.iter().fold(Alt::new(), |alt, rx| alt.recv(rx));
        let mut check = ReadyCheck::new(g);
        for _ in 0..n {
            let sel = alt.select().await;
            let i = sel.index();
            match sel.recv(&rxs[i]) {
                Ok(v) => check.saw(i, v),
                Err(_) => return false,
            }
        }
        check.verified(n)
    }));
    let elapsed = start.elapsed();
    drop(txs);
    (filled && verified, elapsed)
}

/// crossbeam, every guard ready: filled channels (untimed), then the calling
/// thread selecting `n` times (timed).
pub fn crossbeam_alt_ready(g: u64, n: u64) -> (bool, Duration) {
    let (cap, values) = deal(g, n);
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..g)
        .map(|_| crossbeam_channel::bounded::<u64>(cap as usize))
        .unzip();
    let mut filled = true;
    for (i, v) in values {
        filled &= txs[i].try_send(v).is_ok();
    }
    // The senders stay alive, so that a drained channel is not ready (closed).
    let start = Instant::now();
    let mut sel = crossbeam_channel::Select::new();
    for rx in &rxs {
        sel.recv(rx);
    }
    let mut check = ReadyCheck::new(g);
    for _ in 0..n {
        let oper = sel.select();
        let i = oper.index();
        match oper.recv(&rxs[i]) {
            Ok(v) => check.saw(i, v),
            Err(_) => break,
        }
    }
    let elapsed = start.elapsed();
    drop(txs);
    (filled && check.verified(n), elapsed)
}

pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let (n, seed) = (ctx.args.alt_selections, ctx.args.seed);
    let mut guards = ctx.args.alt_guards.clone();
    guards.dedup();
    report
        .param("alt_guards", &guards)
        .param("alt_selections", n)
        .param("seed", seed);
    let progress = Progress::new(4 * guards.len() * ctx.plan.total(), ctx.args.json);
    let rt = &ctx.rt;
    let per = |s: f64| s * 1e9 / n as f64;
    for &g in &guards {
        progress.stage(&format!("alt over {g}: tutti"));
        let ours = repeat(ctx.plan, &progress, || {
            let (ok, elapsed) = timed(|| rt.block_on(rt.spawn(tutti_alt(g, n, seed))));
            Run { elapsed, ok }
        });
        progress.stage(&format!("alt over {g}: crossbeam"));
        let theirs = repeat(ctx.plan, &progress, || {
            let (ok, elapsed) = crossbeam_alt(g, n, seed);
            Run { elapsed, ok }
        });
        report.verify(ours.ok && theirs.ok);
        let metric = format!("alt{g}");
        for (name, m) in [("tutti", &ours), ("crossbeam", &theirs)] {
            if let Some(t) = Stats::of(&m.map(per)) {
                report.result(name, &metric, t, "ns/selection");
            }
        }
        report.ratio(
            &format!("time_tutti_over_crossbeam_alt{g}"),
            ours.median_secs() / theirs.median_secs(),
        );

        progress.stage(&format!("alt over {g} ready guards: tutti"));
        let ours = repeat(ctx.plan, &progress, || {
            let (ok, elapsed) = tutti_alt_ready(rt, g, n);
            Run { elapsed, ok }
        });
        progress.stage(&format!("alt over {g} ready guards: crossbeam"));
        let theirs = repeat(ctx.plan, &progress, || {
            let (ok, elapsed) = crossbeam_alt_ready(g, n);
            Run { elapsed, ok }
        });
        report.verify(ours.ok && theirs.ok);
        let metric = format!("alt{g}_ready");
        for (name, m) in [("tutti", &ours), ("crossbeam", &theirs)] {
            if let Some(t) = Stats::of(&m.map(per)) {
                report.result(name, &metric, t, "ns/selection");
            }
        }
        report.ratio(
            &format!("time_tutti_over_crossbeam_alt{g}_ready"),
            ours.median_secs() / theirs.median_secs(),
        );
    }
    progress.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_selection_takes_the_right_value() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for g in [1, 2, 8, 64] {
            assert!(rt.block_on(rt.spawn(tutti_alt(g, 2000, 3))), "tutti {g}");
            assert!(crossbeam_alt(g, 2000, 3).0, "crossbeam {g}");
        }
    }

    #[test]
    fn ready_selections_take_every_value_once() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for (g, n) in [(1, 10), (2, 2001), (8, 1000), (64, 5000)] {
            assert!(tutti_alt_ready(&rt, g, n).0, "tutti {g} {n}");
            assert!(crossbeam_alt_ready(g, n).0, "crossbeam {g} {n}");
        }
    }

    #[test]
    fn the_ready_check_catches_loss_and_disorder() {
        let mut c = ReadyCheck::new(2);
        c.saw(0, 0);
        c.saw(1, 1);
        assert!(c.verified(2));
        assert!(!c.verified(3));
        c.saw(0, 0); // again, out of order
        assert!(!c.ok);
    }

    #[test]
    fn the_check_catches_a_wrong_guard() {
        let mut c = Check::new(4);
        c.saw(2, message(0, 2, 4));
        assert!(c.ok);
        c.saw(1, message(1, 3, 4));
        assert!(!c.ok);
    }
}
