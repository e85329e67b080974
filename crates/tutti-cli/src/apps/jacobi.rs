//! `tutti jacobi`: Jacobi iteration for Poisson's equation in 1D (Saunders 2003
//! §V.D), block-partitioned over the locations of a world, with one
//! neighbour (halo) exchange per iteration through `async_rmi`.
//!
//! The problem is `-u'' = f` on `(0, 1)` with `u(0) = u(1) = 0` and
//! `f(x) = π² sin(πx)`, discretized on `n` interior points (`h = 1/(n+1)`).
//! One sweep computes `u'[i] = (u[i-1] + u[i+1] + h² f[i]) / 2`, from a
//! pseudo-random initial guess (so the error has every frequency and the
//! residual falls visibly within a few iterations).
//!
//! Each location owns a contiguous block of the points. At the start of
//! iteration `k` it sends its first value to its left neighbour and its last
//! to its right one (an `async_rmi` of [`Ghost`] each), then waits (`wait`)
//! until both neighbours' values for iteration `k` have arrived, and sweeps.
//! A neighbour can be at most one iteration ahead, so each side keeps two
//! ghost slots, by the iteration's parity.
//!
//! **Verification.** The sequential run sweeps the whole vector with the same
//! expression in the same operand order, so the distributed result must equal
//! it **bit for bit**. At ten checkpoints the residual `‖h² f + u[i-1] - 2u[i] +
//! u[i+1]‖₂` is summed over the locations (`reduce_rmi`); it must equal the
//! sequential one within a relative 1e-9 (the sums are added in a different
//! order) and never increase (Jacobi contracts the residual in the 2-norm for
//! this matrix), and the last must be below the first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi;

use crate::measure::{check_memory, repeat, timed, Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 3;

/// Arguments of `tutti jacobi`.
#[derive(Args, Debug)]
pub struct JacobiArgs {
    /// Interior grid points.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    n: u64,
    /// Jacobi iterations (sweeps over the grid; a fixed number).
    #[arg(long = "steps", default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    iters: u64,
    #[command(flatten)]
    world: crate::apps::WorldOpts,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Relative tolerance between the distributed and the sequential residuals.
pub const RESIDUAL_TOLERANCE: f64 = 1e-9;

/// Number of residual checkpoints.
const CHECKPOINTS: u64 = 10;

/// `h² f(x_i)` for global point `i` of `n`.
fn h2f(i: usize, n: usize) -> f64 {
    let h = 1.0 / (n as f64 + 1.0);
    let x = (i as f64 + 1.0) * h;
    h * h * std::f64::consts::PI * std::f64::consts::PI * (std::f64::consts::PI * x).sin()
}

/// The initial guess at global point `i`: pseudo-random in `[0, 1)`, so the
/// error has every frequency and the residual visibly falls.
fn initial(i: usize) -> f64 {
    (crate::rng::mix64(i as u64) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// One Jacobi sweep of a block whose neighbours' values are `left` and
/// `right` (0 at the domain's ends).
pub fn sweep(u: &[f64], left: f64, right: f64, f: &[f64], out: &mut [f64]) {
    let n = u.len();
    for i in 0..n {
        let l = if i == 0 { left } else { u[i - 1] };
        let r = if i + 1 == n { right } else { u[i + 1] };
        out[i] = 0.5 * (l + r + f[i]);
    }
}

/// The block's share of the squared residual.
pub fn residual_sq(u: &[f64], left: f64, right: f64, f: &[f64]) -> f64 {
    let n = u.len();
    (0..n)
        .map(|i| {
            let l = if i == 0 { left } else { u[i - 1] };
            let r = if i + 1 == n { right } else { u[i + 1] };
            let d = f[i] + l - 2.0 * u[i] + r;
            d * d
        })
        .sum()
}

/// Whether iteration `k` of `iters` is a residual checkpoint.
fn checkpoint(k: u64, iters: u64) -> bool {
    k.is_multiple_of(iters.div_ceil(CHECKPOINTS)) || k + 1 == iters
}

/// The sequential solver: the final `u` and the residual at each checkpoint.
pub fn sequential(n: usize, iters: u64) -> (Vec<f64>, Vec<f64>) {
    let f: Vec<f64> = (0..n).map(|i| h2f(i, n)).collect();
    let mut u: Vec<f64> = (0..n).map(initial).collect();
    let mut next = vec![0.0; n];
    let mut res = Vec::new();
    for k in 0..iters {
        if checkpoint(k, iters) {
            res.push(residual_sq(&u, 0.0, 0.0, &f).sqrt());
        }
        sweep(&u, 0.0, 0.0, &f, &mut next);
        std::mem::swap(&mut u, &mut next);
    }
    (u, res)
}

/// Whether `dist` matches the sequential residuals within the tolerance,
/// never increases, and ends below where it started.
pub fn residuals_ok(dist: &[f64], seq: &[f64]) -> bool {
    dist.len() == seq.len()
        && dist
            .iter()
            .zip(seq)
            .all(|(d, s)| (d - s).abs() <= RESIDUAL_TOLERANCE * s.abs().max(f64::MIN_POSITIVE))
        && dist.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12))
        && (dist.len() < 2 || dist[dist.len() - 1] < dist[0])
}

// ---- the distributed solver ----

/// A neighbour's boundary value for iteration `iter`; `side` 0 is from the
/// left neighbour (its last value), 1 from the right one (its first).
#[derive(Serialize, Deserialize)]
pub struct Ghost {
    side: u8,
    iter: u64,
    value: f64,
}

impl Message for Ghost {
    type Reply = ();
}

impl Remote for Ghost {
    const NAME: &'static str = "tutti-cli.jacobi.Ghost";
}

/// "Your share of the squared residual" (for `reduce_rmi`).
#[derive(Serialize, Deserialize)]
pub struct Partial;

impl Message for Partial {
    type Reply = f64;
}

impl Remote for Partial {
    const NAME: &'static str = "tutti-cli.jacobi.Partial";
}

/// A location's representative: the ghost slots `[side][iter % 2]` and the
/// share of the residual at the current checkpoint.
#[derive(Default)]
struct Halo {
    ghosts: [[Option<(u64, f64)>; 2]; 2],
    partial: f64,
}

impl Halo {
    /// Takes the ghost of `side` for iteration `k`, if it has arrived.
    fn take(&mut self, side: usize, k: u64) -> Option<f64> {
        let slot = &mut self.ghosts[side][(k % 2) as usize];
        match *slot {
            Some((iter, v)) if iter == k => {
                *slot = None;
                Some(v)
            }
            _ => None,
        }
    }
}

impl Object for Halo {
    type Context = ();
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Ghost>()?;
        table.register::<Partial>()?;
        Ok(())
    }
}

impl Handler<Ghost> for Halo {
    async fn handle(&mut self, m: Ghost, _: &mut ()) {
        let slot = &mut self.ghosts[usize::from(m.side & 1)][(m.iter % 2) as usize];
        if let Some((old, _)) = *slot {
            panic!(
                "jacobi: the ghost for iteration {} arrived while iteration {old}'s was \
                 still unused (a neighbour ran two iterations ahead)",
                m.iter
            );
        }
        *slot = Some((m.iter, m.value));
    }
}

impl Handler<Partial> for Halo {
    async fn handle(&mut self, _: Partial, _: &mut ()) -> f64 {
        self.partial
    }
}

/// What one location reports: the slowest location's time, whether its block
/// equals the sequential result bit for bit, and the residuals.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Seconds from the start barrier to the last location's last sweep.
    pub secs: f64,
    /// Whether every location's block equals the sequential solution's.
    pub exact: bool,
    /// The residual at each checkpoint.
    pub residuals: Vec<f64>,
}

/// The block of `n` points location `me` of `p` owns.
fn block(n: usize, p: usize, me: usize) -> std::ops::Range<usize> {
    (n * me / p)..(n * (me + 1) / p)
}

/// Runs the distributed solver on `world`, comparing each block with
/// `expect` (the sequential solution).
pub fn distributed(
    world: &tutti::world::World,
    n: usize,
    iters: u64,
    expect: &Arc<Vec<f64>>,
) -> Vec<Outcome> {
    let expect = Arc::clone(expect);
    rmi::run(world, move |mut loc| {
        let expect = Arc::clone(&expect);
        async move {
            let (me, p) = (loc.id(), loc.count());
            let range = block(n, p, me);
            let f: Vec<f64> = range.clone().map(|i| h2f(i, n)).collect();
            let mut u: Vec<f64> = range.clone().map(initial).collect();
            let mut next = vec![0.0; range.len()];
            let h = match loc.register(Halo::default()).await {
                Ok(h) => h,
                Err(e) => panic!("jacobi: {e}"),
            };
            let mut residuals = Vec::new();
            loc.barrier().await;
            let start = Instant::now();
            for k in 0..iters {
                if me > 0 {
                    let g = Ghost {
                        side: 1,
                        iter: k,
                        value: u[0],
                    };
                    loc.async_rmi(me - 1, &h, g).await;
                }
                if me + 1 < p {
                    let g = Ghost {
                        side: 0,
                        iter: k,
                        value: u[u.len() - 1],
                    };
                    loc.async_rmi(me + 1, &h, g).await;
                }
                let mut left = (me == 0).then_some(0.0);
                let mut right = (me + 1 == p).then_some(0.0);
                while left.is_none() || right.is_none() {
                    {
                        let mut halo = loc.local(&h);
                        left = left.or_else(|| halo.take(0, k));
                        right = right.or_else(|| halo.take(1, k));
                    }
                    if left.is_none() || right.is_none() {
                        loc.wait().await;
                    }
                }
                let (l, r) = (left.unwrap_or(0.0), right.unwrap_or(0.0));
                if checkpoint(k, iters) {
                    loc.local(&h).partial = residual_sq(&u, l, r, &f);
                    let sq = loc.reduce_rmi(&h, Partial, |a, b| a + b).await;
                    residuals.push(sq.sqrt());
                }
                sweep(&u, l, r, &f, &mut next);
                std::mem::swap(&mut u, &mut next);
            }
            let secs = start.elapsed().as_secs_f64();
            loc.fence().await;
            loc.unregister(h);
            let exact = u
                .iter()
                .zip(&expect[range])
                .all(|(a, b)| a.to_bits() == b.to_bits());
            let w = loc.world();
            let secs = w.all_reduce(secs, f64::max).await;
            let exact = w.all_reduce(u64::from(exact), |a, b| a & b).await == 1;
            Outcome {
                secs,
                exact,
                residuals,
            }
        }
    })
}

/// Runs `tutti jacobi`.
pub fn run(a: &JacobiArgs) -> Result<Report, String> {
    let n = usize::try_from(a.n).map_err(|_| format!("--n {} is too large", a.n))?;
    check_memory(n as u128 * 8 * 6, &format!("Jacobi on {n} points"))?;
    let world = a.world.world()?;
    if n < world.locations() {
        return Err(format!(
            "--n {n} is smaller than the {} locations: every location needs a point",
            world.locations()
        ));
    }
    let plan = a.run.plan();
    let progress = Progress::new(2 * plan.total(), a.json || world.rank() != 0);
    let mut report = Report::new("jacobi");
    report
        .param("n", n)
        .param("steps", a.iters)
        .param("ranks", world.ranks())
        .param("locations", world.locations())
        .param("workers", world.config().workers())
        .param("residual_tolerance", RESIDUAL_TOLERANCE)
        .param("runs", plan.runs);

    // Under mpirun each rank times its own sequential run, one rank at a time.
    progress.stage("sequential");
    let mut seq = (Vec::new(), Vec::new());
    let seq_m = super::in_turns(&world, || {
        repeat(plan, &progress, || {
            let (out, elapsed) = timed(|| sequential(n, a.iters));
            seq = out;
            Run { elapsed, ok: true }
        })
    });
    let (expect, seq_res) = (Arc::new(std::mem::take(&mut seq.0)), seq.1);

    progress.stage("rmi");
    let mut last = None;
    let rmi_m = repeat(plan, &progress, || {
        let out = distributed(&world, n, a.iters, &expect);
        let ok = !out.is_empty()
            && out
                .iter()
                .all(|o| o.exact && residuals_ok(&o.residuals, &seq_res));
        let elapsed = Duration::from_secs_f64(out.first().map_or(0.0, |o| o.secs));
        last = out.into_iter().next();
        Run { elapsed, ok }
    });
    progress.finish();

    report.verify(seq_m.ok && rmi_m.ok);
    if let Some(t) = Stats::of(&seq_m.map(|s| s * 1e3)) {
        report.result("sequential", "time", t, "ms");
    }
    if let Some(t) = Stats::of(&rmi_m.map(|s| s * 1e3)) {
        report.result("tutti_rmi", "time", t, "ms");
    }
    let per_update = |s: f64| s * 1e9 / (n as f64 * a.iters as f64);
    if let Some(t) = Stats::of(&rmi_m.map(per_update)) {
        report.result("tutti_rmi", "time per point update", t, "ns");
    }
    if let (Some(first), Some(end)) = (seq_res.first(), seq_res.last()) {
        report.result("sequential", "residual first", Stats::single(*first), "");
        report.result("sequential", "residual last", Stats::single(*end), "");
    }
    if let Some(o) = &last {
        if let Some(end) = o.residuals.last() {
            report.result("tutti_rmi", "residual last", Stats::single(*end), "");
        }
        report.param("bit_for_bit", o.exact);
    }
    report.ratio(
        "time_rmi_over_sequential",
        rmi_m.median_secs() / seq_m.median_secs(),
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tutti::world::World;

    fn world(p: usize) -> World {
        crate::apps::test_world(p, 8)
    }

    #[test]
    fn distributed_equals_sequential_bit_for_bit() {
        for (n, iters, p) in [(100, 37, 3), (7, 5, 7), (64, 1, 2), (1, 4, 1)] {
            let (u, res) = sequential(n, iters);
            let expect = Arc::new(u);
            let out = distributed(&world(p), n, iters, &expect);
            assert_eq!(out.len(), p);
            for o in &out {
                assert!(o.exact, "n={n} iters={iters} p={p}");
                assert!(
                    residuals_ok(&o.residuals, &res),
                    "{:?} vs {res:?}",
                    o.residuals
                );
            }
        }
    }

    #[test]
    fn a_wrong_result_is_detected() {
        let (u, res) = sequential(50, 20);
        let mut wrong = u.clone();
        wrong[17] = f64::from_bits(wrong[17].to_bits() + 1);
        let out = distributed(&world(2), 50, 20, &Arc::new(wrong));
        assert!(out.iter().all(|o| !o.exact));
        // Residuals off by more than the tolerance, or increasing.
        let mut off = res.clone();
        off[3] *= 1.0 + 1e-6;
        assert!(!residuals_ok(&off, &res));
        let mut up = res.clone();
        up[2] = up[1] * 1.5;
        assert!(!residuals_ok(&up, &up));
        assert!(residuals_ok(&res, &res));
        assert!(res.last() < res.first());
    }
}
