//! `tutti gauss`: Blip's Gaussian benchmark, a parallel loop of independent
//! floating-point work.
//!
//! The output array gets one Gaussian `exp(−a·(x² + y² + z²))` per point of
//! a regular grid filling the cube `[−L, L]³`, point `i` at grid position
//! `(i mod s, ⌊i/s⌋ mod s, ⌊i/s²⌋)`. tutti fills it with `par_chunks_mut`
//! at each `--blocks` grain on each of the `--workers` counts; a sequential
//! loop and rayon (`par_chunks_mut` with the same block size, on
//! the largest count of threads) run beside it. Every parallel output must be
//! bit-identical to the sequential one: each element is computed by the same
//! expression whatever the chunking.

use clap::Args;
use rayon::iter::{IndexedParallelIterator, ParallelIterator};
use rayon::slice::ParallelSliceMut;

use crate::measure::{check_memory, repeat, timed, Measurement, Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 11;

/// Arguments of `tutti gauss`.
#[derive(Args, Debug)]
pub struct GaussArgs {
    /// Number of Gaussians to evaluate.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    points: u64,
    /// Block (grain) sizes to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [16_000, 4_000], value_parser = clap::value_parser!(u64).range(1..))]
    blocks: Vec<u64>,
    /// Worker counts to measure tutti on: one (`2`), a list (`1,2,4`) or a
    /// range (`1..4`); rayon runs on the largest [default: 1..cores].
    #[arg(long, value_parser = crate::args::parse_worker_counts)]
    workers: Option<crate::args::Counts>,
    #[command(flatten)]
    run: RunOpts,
    /// Draw the speedup curves (over the sequential loop, per block size; rayon
    /// beside them) into this PNG file.
    #[command(flatten)]
    plot: crate::plot::PlotOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The exponent's factor `a`.
const A: f64 = 0.75;
/// Half the side of the cube the grid fills.
const HALF_SIDE: f64 = 2.0;

/// The grid: `side³ ≥ points` positions, with the squared coordinate of
/// every index along one axis precomputed.
struct Grid {
    side: usize,
    squares: Vec<f64>,
}

impl Grid {
    fn new(points: usize) -> Grid {
        let mut side = (points as f64).cbrt().round().max(1.0) as usize;
        while side.saturating_mul(side).saturating_mul(side) < points {
            side += 1;
        }
        let h = 2.0 * HALF_SIDE / side as f64;
        let squares = (0..side)
            .map(|i| {
                let c = -HALF_SIDE + (i as f64 + 0.5) * h;
                c * c
            })
            .collect();
        Grid { side, squares }
    }

    /// Fills `out` with the Gaussians of points `offset..offset + out.len()`.
    fn fill(&self, offset: usize, out: &mut [f64]) {
        let s = self.side;
        let sq = &self.squares;
        let (mut ix, mut iy, mut iz) = (offset % s, (offset / s) % s, offset / (s * s));
        let mut yz = sq[iy] + sq[iz];
        for o in out {
            *o = (-A * (sq[ix] + yz)).exp();
            ix += 1;
            if ix == s {
                ix = 0;
                iy += 1;
                if iy == s {
                    iy = 0;
                    iz += 1;
                }
                // Past the last point `iz` may leave the grid; nothing is
                // computed from it then.
                yz = sq[iy] + sq.get(iz).copied().unwrap_or(0.0);
            }
        }
    }
}

/// Runs `tutti gauss`.
pub fn run(args: &GaussArgs) -> Result<Report, String> {
    let n = usize::try_from(args.points).map_err(|_| "--points is too large".to_string())?;
    let mut blocks: Vec<usize> = args.blocks.iter().map(|&b| b as usize).collect();
    blocks.dedup();
    let workers = args
        .workers
        .clone()
        .unwrap_or_else(|| crate::args::Counts((1..=crate::default_workers()).collect()));
    let max_w = workers.max();
    let plan = args.run.plan();

    let mut report = Report::new("gauss");
    report
        .param("points", n)
        .param("blocks", &blocks)
        .param("workers", workers.to_string())
        .param("a", A)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    check_memory(n as u128 * 16, &format!("{n} points"))?;
    let grid = Grid::new(n);
    let mut reference = vec![0.0; n];
    grid.fill(0, &mut reference);
    let sum: f64 = reference.iter().sum();
    report.param("sum", sum);

    let steps = (1 + (workers.0.len() + 1) * blocks.len()) * plan.total();
    let progress = Progress::new(steps, args.json);
    let mut out = vec![0.0f64; n];
    // One run: poison the output (untimed), fill it (timed), compare it.
    let mut measure = |fill: &mut dyn FnMut(&mut [f64])| -> Measurement {
        repeat(plan, &progress, || {
            out.fill(f64::NAN);
            let ((), elapsed) = timed(|| fill(&mut out));
            let ok = out
                .iter()
                .zip(&reference)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            Run { elapsed, ok }
        })
    };

    progress.stage("sequential");
    let seq = measure(&mut |o| grid.fill(0, o));
    report.verify(seq.ok);
    record(&mut report, "seq", &seq, n);

    // tutti at every worker count and block size; keyed (w, block).
    let mut tutti_times = Vec::new();
    for &w in &workers.0 {
        let rt = tutti::Runtime::builder()
            .workers(w)
            .build()
            .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
        for &b in &blocks {
            progress.stage(&format!("tutti, {w} workers, block {b}"));
            let m = measure(&mut |o| {
                rt.install(|| tutti::par_chunks_mut(o, b, |off, chunk| grid.fill(off, chunk)))
            });
            report.verify(m.ok);
            record(&mut report, &format!("tutti_w{w}_block{b}"), &m, n);
            tutti_times.push((w, b, m.median_secs()));
        }
    }

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(max_w)
        .build()
        .map_err(|e| format!("cannot build a rayon pool with {max_w} threads: {e}"))?;
    let mut rayon_times = Vec::new();
    for &b in &blocks {
        progress.stage(&format!("rayon, {max_w} threads, block {b}"));
        let m = measure(&mut |o| {
            pool.install(|| {
                o.par_chunks_mut(b)
                    .enumerate()
                    .for_each(|(i, chunk)| grid.fill(i * b, chunk))
            })
        });
        report.verify(m.ok);
        record(&mut report, &format!("rayon_w{max_w}_block{b}"), &m, n);
        rayon_times.push((b, m.median_secs()));
        if let Some(&(_, _, t)) = tutti_times
            .iter()
            .find(|&&(w, bb, _)| w == max_w && bb == b)
        {
            report.ratio(
                &format!("time_tutti_over_rayon_w{max_w}_block{b}"),
                t / m.median_secs(),
            );
        }
    }
    drop(pool);
    progress.finish();

    for &(w, b, t) in &tutti_times {
        // Speedup over tutti on the fewest workers measured (one, by default).
        let w0 = workers.0.iter().copied().min().unwrap_or(1);
        if let Some(&(_, _, t1)) = tutti_times.iter().find(|&&(w1, b1, _)| w1 == w0 && b1 == b) {
            if w > w0 {
                report.ratio(&format!("speedup_w{w}_over_w{w0}_block{b}"), t1 / t);
            }
        }
        report.ratio(
            &format!("speedup_vs_seq_w{w}_block{b}"),
            seq.median_secs() / t,
        );
    }
    if let Some(path) = &args.plot.plot {
        let s = seq.median_secs();
        let mut curves: Vec<crate::plot::Curve> = blocks
            .iter()
            .map(|&b| {
                let pts = tutti_times
                    .iter()
                    .filter(|&&(_, bb, _)| bb == b)
                    .map(|&(w, _, t)| (w as f64, s / t))
                    .collect();
                (format!("tutti, block {b}"), pts)
            })
            .collect();
        for &(b, t) in &rayon_times {
            curves.push((format!("rayon, block {b}"), vec![(max_w as f64, s / t)]));
        }
        let title = format!("gauss: {n} points, speedup over the sequential loop");
        crate::plot::speedup(path, &title, "workers", &curves)?;
    }
    Ok(report)
}

fn record(report: &mut Report, name: &str, m: &Measurement, n: usize) {
    if let Some(t) = Stats::of(&m.map(|s| s * 1e3)) {
        report.result(name, "time", t, "ms");
    }
    if let Some(t) = Stats::of(&m.map(|s| s * 1e9 / n as f64)) {
        report.result(name, "time_per_point", t, "ns");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_the_points() {
        for n in [1, 7, 8, 9, 1000, 1001] {
            let g = Grid::new(n);
            assert!(g.side.pow(3) >= n);
            assert!((g.side - 1).pow(3) < n || g.side == 1);
        }
    }

    #[test]
    fn chunked_fill_matches_sequential() {
        let n = 5000;
        let g = Grid::new(n);
        let mut seq = vec![0.0; n];
        g.fill(0, &mut seq);
        // The grid is symmetric about the origin, so the values are in (0, 1].
        assert!(seq.iter().all(|&v| v > 0.0 && v <= 1.0));
        for block in [1, 7, 64, 4999, 5000] {
            let mut par = vec![f64::NAN; n];
            for (i, chunk) in par.chunks_mut(block).enumerate() {
                g.fill(i * block, chunk);
            }
            assert_eq!(par, seq, "block {block}");
        }
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        let mut par = vec![f64::NAN; n];
        rt.install(|| tutti::par_chunks_mut(&mut par, 100, |off, c| g.fill(off, c)));
        assert_eq!(par, seq);
    }
}
