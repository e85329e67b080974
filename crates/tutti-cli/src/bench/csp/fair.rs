//! Fairness of a fair selection under contention, tutti beside crossbeam in the same
//! setup: `s` plain threads each keep sending on their own rendezvous channel, and one
//! plain thread selects over all `s` channels `n` times — tutti with
//! `Alt::fair_select_blocking`, crossbeam with `Select::select` (which starts at a random
//! operation). Two figures per implementation, from the sequence of guards that fired:
//!
//! * `min_share`: the least-served sender's share of the selections, times `s` (1: an
//!   even split; 0: a sender starved);
//! * `max_gap`: the most selections that went by between two services of one sender
//!   (`s − 1` for strict rotation) — a ready guard's longest wait.
//!
//! The senders are threads, not processes: fairness may not depend on which side spins
//! or parks (an OS-scheduled sender that is slow to come back is exactly the case).

use std::time::{Duration, Instant};

use tutti::csp::{channel, Alt, Rx, Tx};

use super::Ctx;
use crate::measure::Progress;
use crate::report::{Report, Stats};

/// The fairness figures of one run: (min_share, max_gap, time per selection).
#[derive(Clone, Copy, Debug)]
pub struct Fairness {
    /// The least-served sender's share × `s`.
    pub min_share: f64,
    /// Longest run of selections between two services of one sender.
    pub max_gap: u64,
    /// Wall time per selection.
    pub per_selection: Duration,
}

/// Fairness of `fired`, the guard index of each selection over `s` guards.
pub fn fairness(fired: &[usize], s: usize, elapsed: Duration) -> Fairness {
    let mut counts = vec![0u64; s];
    let mut last = vec![None::<usize>; s];
    let mut max_gap = 0u64;
    for (k, &i) in fired.iter().enumerate() {
        counts[i] += 1;
        let since = last[i].map_or(k, |l| k - l - 1);
        max_gap = max_gap.max(since as u64);
        last[i] = Some(k);
    }
    // A sender never served, or not since a while, waited until the end.
    for l in &last {
        let since = l.map_or(fired.len(), |l| fired.len() - l - 1);
        max_gap = max_gap.max(since as u64);
    }
    let n = fired.len().max(1) as f64;
    let min = counts.iter().copied().min().unwrap_or(0) as f64;
    Fairness {
        min_share: min * s as f64 / n,
        max_gap,
        per_selection: elapsed / fired.len().max(1) as u32,
    }
}

/// tutti: `s` sender threads, one selecting thread; the guard of every selection.
pub fn tutti_fair(s: usize, n: usize) -> (Vec<usize>, Duration) {
    let (txs, rxs): (Vec<Tx<u64>>, Vec<Rx<u64>>) = (0..s).map(|_| channel()).unzip();
    let senders: Vec<_> = txs
        .into_iter()
        .map(|tx| {
            std::thread::spawn(move || {
                let mut k = 0u64;
                while tx.send_blocking(k).is_ok() {
                    k += 1;
                }
            })
        })
        .collect();
    let mut fired = Vec::with_capacity(n);
    let start = Instant::now();
    {
        let mut alt = rxs.iter().fold(Alt::new(), |alt, rx| alt.recv(rx));
        for _ in 0..n {
            let sel = alt.fair_select_blocking();
            let i = sel.index();
            if sel.recv(&rxs[i]).is_err() {
                break;
            }
            fired.push(i);
        }
    }
    let elapsed = start.elapsed();
    drop(rxs); // the senders see `Closed` and stop
    for t in senders {
        let _ = t.join();
    }
    (fired, elapsed)
}

/// crossbeam: the same with zero-capacity channels and `Select`.
pub fn crossbeam_fair(s: usize, n: usize) -> (Vec<usize>, Duration) {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..s).map(|_| crossbeam_channel::bounded::<u64>(0)).unzip();
    let senders: Vec<_> = txs
        .into_iter()
        .map(|tx| {
            std::thread::spawn(move || {
                let mut k = 0u64;
                while tx.send(k).is_ok() {
                    k += 1;
                }
            })
        })
        .collect();
    let mut fired = Vec::with_capacity(n);
    let start = Instant::now();
    {
        let mut sel = crossbeam_channel::Select::new();
        for rx in &rxs {
            sel.recv(rx);
        }
        for _ in 0..n {
            let oper = sel.select();
            let i = oper.index();
            if oper.recv(&rxs[i]).is_err() {
                break;
            }
            fired.push(i);
        }
    }
    let elapsed = start.elapsed();
    drop(rxs);
    for t in senders {
        let _ = t.join();
    }
    (fired, elapsed)
}

/// Runs the fairness benchmark for each sender count.
pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let n = ctx.args.fair_selections as usize;
    let counts = ctx.args.fair_senders.clone();
    report
        .param("fair_selections", n)
        .param("fair_senders", &counts);
    let progress = Progress::new(2 * counts.len() * ctx.plan.total(), ctx.args.json);
    for &s in &counts {
        let s = s as usize;
        for (name, f) in [
            (
                "tutti",
                tutti_fair as fn(usize, usize) -> (Vec<usize>, Duration),
            ),
            ("crossbeam", crossbeam_fair),
        ] {
            progress.stage(&format!("fair select, {s} senders, {name}"));
            let mut shares = Vec::new();
            let mut gaps = Vec::new();
            let mut times = Vec::new();
            for i in 0..ctx.plan.total() {
                let (fired, elapsed) = f(s, n);
                progress.tick();
                let ok = fired.len() == n;
                report.verify(ok);
                if i >= ctx.plan.warmup {
                    let fair = fairness(&fired, s, elapsed);
                    shares.push(fair.min_share);
                    gaps.push(fair.max_gap as f64);
                    times.push(fair.per_selection.as_secs_f64() * 1e9);
                }
            }
            let label = format!("{name}_s{s}");
            if let Some(v) = Stats::of(&shares) {
                report.result(&label, "fair_min_share", v, "share×senders");
            }
            if let Some(v) = Stats::of(&gaps) {
                report.result(&label, "fair_max_gap", v, "selections");
            }
            if let Some(v) = Stats::of(&times) {
                report.result(&label, "fair_time_per_selection", v, "ns");
            }
        }
    }
    progress.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_of_known_sequences() {
        let d = Duration::from_millis(1);
        let even = fairness(&[0, 1, 0, 1], 2, d);
        assert_eq!(even.min_share, 1.0);
        assert_eq!(even.max_gap, 1);
        let starved = fairness(&[0, 0, 0, 1], 2, d);
        assert_eq!(starved.min_share, 0.5);
        assert_eq!(starved.max_gap, 3);
        let never = fairness(&[0, 0, 0], 2, d);
        assert_eq!(never.min_share, 0.0);
        assert_eq!(never.max_gap, 3);
    }

    #[test]
    fn both_implementations_make_every_selection() {
        assert_eq!(tutti_fair(2, 100).0.len(), 100);
        assert_eq!(crossbeam_fair(2, 100).0.len(), 100);
    }
}
