//! Phases overlapped with a non-blocking barrier (Welch et al., CPA 2013, "Non-blocking
//! barriers"; `MPI_Ibarrier`).
//!
//! `P` processes run `S` steps of an explicit heat-equation stencil on a rod
//! of `N` cells, each owning a block (two buffers, time `s` in buffer
//! `s mod 2`; the rod's end cells are held fixed):
//!
//! `u'[i] = u[i] + α·(u[i−1] − 2·u[i] + u[i+1])`
//!
//! A block's **inner** cells need only the block's own values; its two
//! **edge** cells need a neighbour's. So the inner update of the next step is
//! *preparatory work* that does not disturb the others:
//!
//! * **blocking** — `SEQ (update all cells; SYNC b)` per step.
//! * **non-blocking** — per step: `arrival := arrive(b)` ("hey, I'm done"),
//!   update the inner cells of the next step, `await arrival` ("I'm waiting
//!   now"), then update the edge cells. The barrier still separates every
//!   step's writes of edge cells from the neighbours' reads of them.
//!
//! Both must give, bit for bit, what a sequential loop gives (each cell is the
//! same expression of the same three values). The report also says how often
//! the others had all arrived by the time the preparatory work was done
//! (nobody waited).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use tutti::csp::{par, Barrier, Enrollment};

use crate::measure::{check_memory, repeat, Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Arguments of `tutti csp-demo nbbarrier`.
#[derive(Args, Debug)]
pub struct NbBarrierArgs {
    /// Processes, each owning a block of cells.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    processes: u64,
    /// Cells of the rod.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    cells: u64,
    /// Time steps (barrier phases).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    steps: u64,
    /// Worker threads.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = crate::default_workers(), value_parser = crate::parse_workers)]
    workers: usize,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The diffusion number α (stable for α ≤ 1/2).
const ALPHA: f64 = 0.25;

/// The initial temperature of cell `i`: a deterministic jagged profile.
fn initial(i: usize) -> f64 {
    ((i.wrapping_mul(7919) % 1000) as f64) / 1000.0
}

/// The new value of cell `i` of an `n`-cell rod from the old values `get`.
#[inline]
fn stencil(i: usize, n: usize, get: impl Fn(usize) -> f64) -> f64 {
    let u = get(i);
    if i == 0 || i + 1 == n {
        return u; // the ends are held fixed
    }
    u + ALPHA * (get(i - 1) - 2.0 * u + get(i + 1))
}

/// The reference: `steps` sequential steps.
pub fn sequential(n: usize, steps: u64) -> Vec<f64> {
    let mut cur: Vec<f64> = (0..n).map(initial).collect();
    let mut next = cur.clone();
    for _ in 0..steps {
        for (i, x) in next.iter_mut().enumerate() {
            *x = stencil(i, n, |j| cur[j]);
        }
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

/// The rod's two buffers, shared by the processes. Cells are `f64` bits in
/// atomics read and written `Relaxed`: the barrier orders every write before
/// the reads of the next step.
struct Rod {
    buf: [Vec<AtomicU64>; 2],
    n: usize,
}

impl Rod {
    fn new(n: usize) -> Rod {
        let make = || {
            (0..n)
                .map(|i| AtomicU64::new(initial(i).to_bits()))
                .collect()
        };
        Rod {
            buf: [make(), make()],
            n,
        }
    }

    #[inline]
    fn get(&self, time: u64, i: usize) -> f64 {
        f64::from_bits(self.buf[(time % 2) as usize][i].load(Ordering::Relaxed))
    }

    /// Computes cells `cells` of time `time + 1` from time `time`.
    fn update(&self, time: u64, cells: impl Iterator<Item = usize>) {
        let out = &self.buf[((time + 1) % 2) as usize];
        for i in cells {
            let v = stencil(i, self.n, |j| self.get(time, j));
            out[i].store(v.to_bits(), Ordering::Relaxed);
        }
    }

    fn values(&self, time: u64) -> Vec<f64> {
        (0..self.n).map(|i| self.get(time, i)).collect()
    }
}

/// Process `p`'s block of cells, split into inner cells and edge cells.
#[derive(Clone, Debug)]
struct Block {
    lo: usize,
    hi: usize,
}

impl Block {
    fn of(p: usize, processes: usize, n: usize) -> Block {
        Block {
            lo: p * n / processes,
            hi: (p + 1) * n / processes,
        }
    }

    /// Cells whose stencil reads only this block.
    fn inner(&self) -> std::ops::Range<usize> {
        if self.hi - self.lo <= 2 {
            self.lo..self.lo // none: every cell is an edge
        } else {
            self.lo + 1..self.hi - 1
        }
    }

    /// Cells whose stencil may read a neighbour's cell.
    fn edges(&self) -> impl Iterator<Item = usize> {
        let (lo, hi) = (self.lo, self.hi);
        let last = (hi > lo + 1).then(|| hi - 1);
        (lo < hi).then_some(lo).into_iter().chain(last)
    }
}

/// How a run went.
#[derive(Debug)]
pub struct Outcome {
    /// The rod after the last step.
    pub values: Vec<f64>,
    /// Arrivals found complete when awaited (non-blocking only).
    pub complete_when_awaited: u64,
    /// Arrivals awaited in all.
    pub awaited: u64,
    /// Wall time in seconds.
    pub secs: f64,
}

/// A process of the blocking version.
async fn blocking_process(rod: Arc<Rod>, block: Block, mut me: Enrollment, steps: u64) {
    for s in 0..steps {
        rod.update(s, block.inner());
        rod.update(s, block.edges());
        me.sync().await;
    }
}

/// A process of the non-blocking version; returns (complete when awaited, awaited).
async fn nonblocking_process(
    rod: Arc<Rod>,
    block: Block,
    mut me: Enrollment,
    steps: u64,
) -> (u64, u64) {
    let (mut complete, mut awaited) = (0, 0);
    rod.update(0, block.inner());
    rod.update(0, block.edges());
    for s in 1..steps {
        let arrival = me.arrive(); // hey, I'm done with time s ...
        rod.update(s, block.inner()); // ... preparatory work for the next step ...
        complete += u64::from(arrival.is_complete());
        awaited += 1;
        arrival.await; // ... I'm waiting now
        rod.update(s, block.edges());
    }
    me.sync().await; // time `steps` is written everywhere
    (complete, awaited)
}

/// Runs the stencil with `processes` processes; `nonblocking` picks the version.
pub fn run_once(
    rt: &tutti::Runtime,
    processes: usize,
    n: usize,
    steps: u64,
    nonblocking: bool,
) -> Result<Outcome, String> {
    let rod = Arc::new(Rod::new(n));
    let barrier = Barrier::new();
    let parties: Vec<Enrollment> = (0..processes).map(|_| barrier.enroll()).collect();
    let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let (rod2, counts2) = (rod.clone(), counts.clone());
    let net = par(parties.into_iter().enumerate().map(move |(p, me)| {
        let (rod, counts) = (rod2.clone(), counts2.clone());
        let block = Block::of(p, processes, n);
        async move {
            if nonblocking {
                let (c, a) = nonblocking_process(rod, block, me, steps).await;
                counts[0].fetch_add(c, Ordering::Relaxed);
                counts[1].fetch_add(a, Ordering::Relaxed);
            } else {
                blocking_process(rod, block, me, steps).await;
            }
        }
    }));
    let start = Instant::now();
    rt.block_on(rt.spawn(net)).map_err(|d| d.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    Ok(Outcome {
        values: rod.values(steps),
        complete_when_awaited: counts[0].load(Ordering::Relaxed),
        awaited: counts[1].load(Ordering::Relaxed),
        secs,
    })
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Runs `tutti csp-demo nbbarrier`.
pub fn run(args: &NbBarrierArgs) -> Result<Report, String> {
    let n = usize::try_from(args.cells).map_err(|_| "--cells is too large")?;
    let p = usize::try_from(args.processes).map_err(|_| "--processes is too large")?;
    let steps = args.steps;
    let w = args.workers;
    let plan = args.run.plan();
    check_memory(n as u128 * 32, &format!("a rod of {n} cells"))?;
    let mut report = Report::new("csp-demo nbbarrier");
    report
        .param("processes", p)
        .param("cells", n)
        .param("steps", steps)
        .param("workers", w)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);
    let reference = sequential(n, steps);
    let rt = tutti::Runtime::builder()
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
    let progress = Progress::new(2 * plan.total(), args.json);
    let mut medians = [0.0; 2];
    let mut error = None;
    for (k, nonblocking) in [false, true].into_iter().enumerate() {
        let name = if nonblocking { "arrive+await" } else { "sync" };
        progress.stage(name);
        let mut overlap = Vec::new();
        let m = repeat(plan, &progress, || {
            match run_once(&rt, p, n, steps, nonblocking) {
                Ok(o) => {
                    if o.awaited > 0 {
                        overlap.push(100.0 * o.complete_when_awaited as f64 / o.awaited as f64);
                    }
                    Run {
                        elapsed: std::time::Duration::from_secs_f64(o.secs),
                        ok: same_bits(&o.values, &reference),
                    }
                }
                Err(e) => {
                    error = Some(e);
                    Run {
                        elapsed: std::time::Duration::ZERO,
                        ok: false,
                    }
                }
            }
        });
        if let Some(e) = error.take() {
            return Err(e);
        }
        report.verify(m.ok);
        if let Some(t) = Stats::of(&m.map(|s| s * 1e3)) {
            report.result(name, "time", t, "ms");
        }
        if let Some(o) = Stats::of(&overlap) {
            report.result(name, "arrivals_complete_when_awaited", o, "%");
        }
        medians[k] = m.median_secs();
    }
    progress.finish();
    report.ratio("time_arrive_over_sync", medians[1] / medians[0]);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_into_inner_and_edges() {
        let cover = |p: usize, procs: usize, n: usize| {
            let b = Block::of(p, procs, n);
            let mut cells: Vec<usize> = b.inner().chain(b.edges()).collect();
            cells.sort_unstable();
            (b.lo..b.hi).eq(cells)
        };
        for (procs, n) in [(1, 1), (1, 2), (3, 3), (4, 10), (8, 1000), (5, 3)] {
            for p in 0..procs {
                assert!(cover(p, procs, n), "block {p} of {procs} over {n}");
            }
        }
    }

    #[test]
    fn both_versions_match_the_sequential_rod_bit_for_bit() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for (procs, n, steps) in [(1, 10, 5), (4, 103, 30), (8, 1000, 20), (7, 5, 9)] {
            let reference = sequential(n, steps);
            for nonblocking in [false, true] {
                let o = run_once(&rt, procs, n, steps, nonblocking).unwrap();
                assert!(
                    same_bits(&o.values, &reference),
                    "{procs} {n} {steps} {nonblocking}"
                );
            }
        }
    }

    #[test]
    fn the_stencil_diffuses() {
        let r = sequential(50, 200);
        let spread = |v: &[f64]| {
            v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
        };
        let start: Vec<f64> = (0..50).map(initial).collect();
        assert!(spread(&r[1..49]) < spread(&start[1..49]));
        assert_eq!(r[0], start[0]);
        assert_eq!(r[49], start[49]);
    }
}
