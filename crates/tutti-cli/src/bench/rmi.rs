//! `tutti bench rmi`: the cost of ARMI's remote method invocation on the
//! in-process world (Saunders 2003, Tables II–III and Figures 10–11, threads mode).
//!
//! * **empty method** (Table II): `--calls` calls of a method that does
//!   nothing, made directly, through a function pointer, and as a local
//!   `async_rmi` (one location sending to itself, executed by the automatic
//!   poll and the closing fence). Reported per call.
//! * **ping-pong** (Table III): `--round-trips` round trips between two locations
//!   with `async_rmi` (each side waits for the next request with `wait`), and
//!   with `sync_rmi` (the other side serves inside `fence`), beside the
//!   explicit version: two threads passing a counter through one atomic word
//!   (spinning briefly, then yielding). Reported per one-way message.
//! * **remote empty method, scoped**: `--spawns` empty methods run on
//!   location 1 for location 0, as `async_rmi`s (then a fence), beside the
//!   same methods spawned in one `Rmi::scope` (which returns once every one
//!   has run and answered; then the same fence). Reported per call: what a
//!   counted completion — an answer per method, collected by the scope —
//!   costs over a statement.
//! * **fence** (Figures 10–11): `--fences` fences in a row on `--locations`
//!   locations with no traffic, beside `std::sync::Barrier::wait` on as many
//!   threads. Reported per fence.
//! * **aggregation sweep** (Figures 8–9): see [`super::rmi_sweep`]; with
//!   `--sweep-only` it runs alone, on the environment's world (MPI under
//!   mpirun).
//! * **between ranks** (`--mpi`, under `mpirun -n 2` of a build with the `mpi`
//!   feature; Table III and Figure 11): the ping-pong between location 0 on
//!   rank 0 and location 1 on rank 1 (`async_rmi` chain and `sync_rmi`, the
//!   requests serialized) beside raw MPI send/recv of 8 bytes, `fence` on
//!   the two ranks beside `MPI_Barrier`, and the remote empty method from
//!   rank 0 to rank 1 as `async_rmi`s and spawned in a scope; each round runs every implementation
//!   once, in turn. Timed inside the SPMD body (rank 0's clock). Only rank 0
//!   reports.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::Args;

use crate::measure::{repeat, timed, Measurement, Progress, Run, RunOpts};
use crate::report::Report;
use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::{self, Handle};
use tutti::world::{TransportKind, World};

/// Arguments of `tutti bench rmi`.
#[derive(Args, Debug)]
pub struct RmiArgs {
    /// Calls per empty-method measurement.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    calls: u64,
    /// Round trips per ping-pong measurement.
    #[arg(long = "round-trips", default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    messages: u64,
    /// Fences (and barrier waits) per fence measurement.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    fences: u64,
    /// Remote empty methods per scoped-spawn (and async_rmi) measurement.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    spawns: u64,
    /// Locations (and barrier threads) of the fence measurement.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=1024))]
    locations: u64,
    /// Worker threads of the world's runtime [default: 2; with `--mpi` the
    /// world's default (under `mpirun -n 2` on two cores each rank is bound to
    /// one core: one worker)].
    #[arg(long, env = "TUTTI_WORKERS", value_parser = crate::parse_workers)]
    workers: Option<usize>,
    #[command(flatten)]
    sweep: super::rmi_sweep::SweepArgs,
    #[command(flatten)]
    run: RunOpts,
    /// Measure between two MPI ranks instead (run under `mpirun -n 2`, built
    /// with `--features mpi`): ping-pong and fence beside raw MPI.
    #[arg(long)]
    mpi: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn world(locations: usize, workers: usize) -> Result<World, String> {
    World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(locations)
        .workers(workers)
        .aggregation(1)
        .build()
        .map_err(|e| e.to_string())
}

// ---- the empty method ----

/// The empty method's message.
#[derive(Serialize, Deserialize)]
struct Empty;
impl Message for Empty {
    type Reply = ();
}
impl Remote for Empty {
    const NAME: &'static str = "bench.rmi.Empty";
}

/// An object whose method does nothing but count (so the runs can check that
/// every call executed).
#[derive(Default)]
struct Target {
    calls: u64,
}

impl Target {
    #[inline(never)]
    fn empty(&mut self) {
        self.calls += 1;
    }
}

impl Object for Target {
    type Context = ();
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Empty>()?;
        Ok(())
    }
}

impl Handler<Empty> for Target {
    async fn handle(&mut self, _: Empty, _: &mut ()) {
        self.empty();
    }
}

fn direct(n: u64) -> Run {
    let mut t = Target::default();
    let ((), elapsed) = timed(|| {
        for _ in 0..n {
            black_box(&mut t).empty();
        }
    });
    Run {
        elapsed,
        ok: t.calls == n,
    }
}

fn fn_pointer(n: u64) -> Run {
    let mut t = Target::default();
    let f: fn(&mut Target) = black_box(Target::empty);
    let ((), elapsed) = timed(|| {
        for _ in 0..n {
            f(black_box(&mut t));
        }
    });
    Run {
        elapsed,
        ok: t.calls == n,
    }
}

pub(crate) fn local_async_rmi(w: &World, n: u64) -> Run {
    let start = Instant::now();
    let out = rmi::run(w, move |mut loc| async move {
        let Ok(h) = loc.register(Target::default()).await else {
            return (0, Instant::now());
        };
        for _ in 0..n {
            loc.async_rmi(0, &h, Empty).await;
        }
        loc.fence().await;
        let calls = loc.local(&h).calls;
        (calls, Instant::now())
    });
    Run {
        elapsed: until_last(start, &out),
        ok: out.iter().map(|o| o.0).eq([n]),
    }
}

/// `n` empty methods run on location 1 for location 0: `async_rmi`s, or
/// (`scoped`) spawned in one scope; then a fence. Timed on location 0 from a
/// barrier after registration to the end of the fence.
pub(crate) fn remote_empty(w: &World, n: u64, scoped: bool) -> Run {
    let out = rmi::run(w, move |mut loc| async move {
        let Ok(h) = loc.register(Target::default()).await else {
            return (Duration::ZERO, false);
        };
        loc.barrier().await;
        let start = Instant::now();
        let mut ok = true;
        if loc.id() == 0 {
            if scoped {
                let r = loc
                    .scope(|s| async move {
                        for _ in 0..n {
                            s.spawn(1, &h, Empty).await;
                        }
                    })
                    .await;
                ok = r.is_ok();
            } else {
                for _ in 0..n {
                    loc.async_rmi(1, &h, Empty).await;
                }
            }
        }
        loc.fence().await;
        let elapsed = start.elapsed();
        // Location 1 (on this rank, or on rank 1 under MPI) ran every call.
        let calls = loc.local(&h).calls;
        (elapsed, ok && (loc.id() != 1 || calls == n))
    });
    Run {
        elapsed: out.first().map_or(Duration::ZERO, |o| o.0),
        ok: out.iter().all(|o| o.1),
    }
}

// ---- ping-pong ----

/// Hit the ball back (`async_rmi` chain) or answer (`sync_rmi`).
#[derive(Serialize, Deserialize)]
struct Ball(u64);
impl Message for Ball {
    type Reply = u64;
}
impl Remote for Ball {
    const NAME: &'static str = "bench.rmi.Ball";
}

struct Player {
    me: Option<Handle<Player>>,
    last: u64,
}

impl Object for Player {
    type Context = rmi::Rmi;
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Ball>()?;
        Ok(())
    }
}

impl Handler<Ball> for Player {
    async fn handle(&mut self, m: Ball, ctx: &mut rmi::Rmi) -> u64 {
        self.last = m.0;
        // In the async chain location 1 hits back; location 0's body counts.
        if ctx.id() == 1 {
            if let Some(h) = self.me {
                if m.0 & (1 << 63) != 0 {
                    ctx.async_rmi(0, &h, Ball(m.0 + 1)).await;
                }
            }
        }
        m.0 + 1
    }
}

const CHAIN: u64 = 1 << 63;

/// Location 0 sends ball `2i` and waits until location 1's method has hit
/// back `2i + 1`; location 1 waits until it has seen ball `2n - 2` (the
/// first may already have run inside the barrier before the chain).
async fn chain(loc: &mut rmi::Rmi, h: &Handle<Player>, n: u64) {
    let ball = |loc: &mut rmi::Rmi| loc.local(h).last & !CHAIN;
    if loc.id() == 0 {
        for i in 0..n {
            loc.async_rmi(1, h, Ball(CHAIN | (2 * i))).await;
            while ball(loc) != 2 * i + 1 {
                loc.wait().await;
            }
        }
    } else {
        while ball(loc) != 2 * n - 2 {
            loc.wait().await;
        }
    }
}

fn pingpong_async(w: &World, n: u64) -> Run {
    let (out, elapsed) = timed(|| {
        rmi::run(w, move |mut loc| async move {
            // `last` starts at no ball's number.
            let Ok(h) = loc
                .register(Player {
                    me: None,
                    last: u64::MAX,
                })
                .await
            else {
                return u64::MAX;
            };
            loc.local(&h).me = Some(h);
            loc.barrier().await;
            chain(&mut loc, &h, n).await;
            let last = loc.local(&h).last;
            last & !CHAIN
        })
    });
    Run {
        elapsed,
        ok: out == [2 * n - 1, 2 * n - 2],
    }
}

pub(crate) fn pingpong_sync(w: &World, n: u64) -> Run {
    let start = Instant::now();
    let out = rmi::run(w, move |loc| async move {
        let Ok(h) = loc.register(Player { me: None, last: 0 }).await else {
            return (false, Instant::now());
        };
        let mut ok = true;
        if loc.id() == 0 {
            for i in 0..n {
                ok &= loc.sync_rmi(1, &h, Ball(i)).await == i + 1;
            }
        }
        loc.fence().await;
        (ok, Instant::now())
    });
    Run {
        elapsed: until_last(start, &out),
        ok: out.iter().map(|o| o.0).eq([true, true]),
    }
}

/// From `start` until the last location's body returned: the time of the run's
/// work, without what `World::run` does after it (writing out a trace).
fn until_last<T>(start: Instant, out: &[(T, Instant)]) -> Duration {
    out.iter()
        .map(|o| o.1.saturating_duration_since(start))
        .max()
        .unwrap_or_default()
}

/// Two threads passing a counter through one atomic word: the odd values
/// are the ping's, the even ones the pong's.
fn pingpong_atomic(n: u64) -> Run {
    fn await_value(flag: &AtomicU64, want: u64) {
        let mut spins = 0u32;
        while flag.load(Ordering::Acquire) != want {
            if spins < 1 << 10 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
    let flag = Arc::new(AtomicU64::new(0));
    let f = Arc::clone(&flag);
    let ((), elapsed) = timed(|| {
        let other = std::thread::spawn(move || {
            for i in 0..n {
                await_value(&f, 2 * i + 1);
                f.store(2 * i + 2, Ordering::Release);
            }
        });
        for i in 0..n {
            flag.store(2 * i + 1, Ordering::Release);
            await_value(&flag, 2 * i + 2);
        }
        let _ = other.join();
    });
    Run {
        elapsed,
        ok: flag.load(Ordering::Acquire) == 2 * n,
    }
}

// ---- fence ----

pub(crate) fn fences(w: &World, n: u64) -> Run {
    let (out, elapsed) = timed(|| {
        rmi::run(w, move |loc| async move {
            for _ in 0..n {
                loc.fence().await;
            }
            true
        })
    });
    Run {
        elapsed,
        ok: out.iter().all(|&b| b),
    }
}

fn barriers(threads: usize, n: u64) -> Run {
    let barrier = Arc::new(Barrier::new(threads));
    let (leaders, elapsed) = timed(|| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let b = Arc::clone(&barrier);
                std::thread::spawn(move || (0..n).filter(|_| b.wait().is_leader()).count())
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or(0)).sum::<usize>()
    });
    Run {
        elapsed,
        ok: leaders as u64 == n,
    }
}

/// Runs the benchmark.
pub fn run(a: &RmiArgs) -> Result<Report, String> {
    if a.sweep.sweep_only {
        return super::rmi_sweep::run_only(&a.sweep, &a.run, a.json);
    }
    if a.mpi {
        return mpi_rows::run(a);
    }
    let plan = a.run.plan();
    let workers = a.workers.unwrap_or(2);
    let one = world(1, workers)?;
    let two = world(2, workers)?;
    let many = world(a.locations as usize, workers)?;
    let progress = Progress::new(
        plan.total() * 10 + super::rmi_sweep::steps(&a.sweep, plan),
        a.json,
    );
    let mut report = Report::new("bench rmi");
    report
        .param("calls", a.calls)
        .param("round_trips", a.messages)
        .param("fences", a.fences)
        .param("spawns", a.spawns)
        .param("locations", a.locations)
        .param("workers", workers)
        .param("runs", plan.runs);

    progress.stage("empty method: direct");
    let direct_m = repeat(plan, &progress, || direct(a.calls));
    progress.stage("empty method: fn pointer");
    let ptr_m = repeat(plan, &progress, || fn_pointer(a.calls));
    progress.stage("empty method: local async_rmi");
    let rmi_m = repeat(plan, &progress, || local_async_rmi(&one, a.calls));
    progress.stage("ping-pong: async_rmi");
    let pp_async = repeat(plan, &progress, || pingpong_async(&two, a.messages));
    progress.stage("ping-pong: sync_rmi");
    let pp_sync = repeat(plan, &progress, || pingpong_sync(&two, a.messages));
    progress.stage("ping-pong: atomic flag");
    let pp_atomic = repeat(plan, &progress, || pingpong_atomic(a.messages));
    progress.stage("remote empty method: async_rmi");
    let remote_rmi = repeat(plan, &progress, || remote_empty(&two, a.spawns, false));
    progress.stage("remote empty method: spawned in a scope");
    let remote_scope = repeat(plan, &progress, || remote_empty(&two, a.spawns, true));
    progress.stage("fence");
    let fence_m = repeat(plan, &progress, || fences(&many, a.fences));
    progress.stage("std::sync::Barrier");
    let barrier_m = repeat(plan, &progress, || barriers(a.locations as usize, a.fences));
    let sweep_ok = super::rmi_sweep::sweep(&a.sweep, &two, plan, &progress, &mut report)?;
    report.verify(sweep_ok);
    progress.finish();

    let per = |m: &Measurement, k: u64| m.ns_per(k);
    let d = per(&direct_m, a.calls);
    let p = per(&ptr_m, a.calls);
    let r = per(&rmi_m, a.calls);
    let pa = per(&pp_async, 2 * a.messages);
    let ps = per(&pp_sync, 2 * a.messages);
    let px = per(&pp_atomic, 2 * a.messages);
    let f = per(&fence_m, a.fences);
    let b = per(&barrier_m, a.fences);
    report.result("direct call", "empty method", d.clone(), "ns/call");
    report.result("function pointer", "empty method", p.clone(), "ns/call");
    report.result(
        "tutti local async_rmi",
        "empty method",
        r.clone(),
        "ns/call",
    );
    report.result("tutti async_rmi", "ping-pong one-way", pa.clone(), "ns");
    report.result("tutti sync_rmi", "ping-pong one-way", ps.clone(), "ns");
    report.result("atomic flag", "ping-pong one-way", px.clone(), "ns");
    let ra = per(&remote_rmi, a.spawns);
    let rs = per(&remote_scope, a.spawns);
    report.result(
        "tutti async_rmi",
        "remote empty method",
        ra.clone(),
        "ns/call",
    );
    report.result(
        "tutti scope spawn",
        "remote empty method",
        rs.clone(),
        "ns/call",
    );
    report.result("tutti fence", "fence", f.clone(), "ns/fence");
    report.result("std::sync::Barrier", "fence", b.clone(), "ns/fence");
    report.ratio("time_fn_pointer_over_direct", p.median / d.median);
    report.ratio("time_async_rmi_over_direct", r.median / d.median);
    report.ratio("latency_async_rmi_over_atomic_flag", pa.median / px.median);
    report.ratio("latency_sync_rmi_over_atomic_flag", ps.median / px.median);
    report.ratio("time_fence_over_std_barrier", f.median / b.median);
    report.ratio("time_scope_spawn_over_async_rmi", rs.median / ra.median);
    for m in [
        &direct_m,
        &ptr_m,
        &rmi_m,
        &pp_async,
        &pp_sync,
        &pp_atomic,
        &remote_rmi,
        &remote_scope,
        &fence_m,
        &barrier_m,
    ] {
        report.verify(m.ok);
    }
    Ok(report)
}

// ---- between ranks ----

mod mpi_rows {
    //! `--mpi`: RMI between two ranks beside raw MPI.
    #![cfg_attr(not(feature = "mpi"), allow(dead_code, unused_imports))]

    use std::time::{Duration, Instant};

    use super::*;

    /// The ping-pong between location 0 (rank 0) and location 1 (rank 1):
    /// an `async_rmi` chain (each side `wait`s for the next request), timed
    /// inside the body.
    fn pingpong_async(w: &World, n: u64) -> Run {
        let out = rmi::run(w, move |mut loc| async move {
            // `last` starts at no ball's number.
            let Ok(h) = loc
                .register(Player {
                    me: None,
                    last: u64::MAX,
                })
                .await
            else {
                return (Duration::ZERO, false);
            };
            loc.local(&h).me = Some(h);
            loc.barrier().await;
            let start = Instant::now();
            chain(&mut loc, &h, n).await;
            (start.elapsed(), true)
        });
        first(out)
    }

    /// The same with `sync_rmi` from location 0; location 1 serves in `fence`.
    fn pingpong_sync(w: &World, n: u64) -> Run {
        let out = rmi::run(w, move |loc| async move {
            let Ok(h) = loc.register(Player { me: None, last: 0 }).await else {
                return (Duration::ZERO, false);
            };
            loc.barrier().await;
            let start = Instant::now();
            let mut ok = true;
            if loc.id() == 0 {
                for i in 0..n {
                    ok &= loc.sync_rmi(1, &h, Ball(i)).await == i + 1;
                }
            }
            let elapsed = start.elapsed();
            loc.fence().await;
            (elapsed, ok)
        });
        first(out)
    }

    fn fences(w: &World, n: u64) -> Run {
        let out = rmi::run(w, move |loc| async move {
            loc.barrier().await;
            let start = Instant::now();
            for _ in 0..n {
                loc.fence().await;
            }
            (start.elapsed(), true)
        });
        first(out)
    }

    /// This rank's first location's run.
    fn first(out: Vec<(Duration, bool)>) -> Run {
        let (elapsed, ok) = out.into_iter().next().unwrap_or((Duration::ZERO, false));
        Run { elapsed, ok }
    }

    pub(super) fn run(a: &RmiArgs) -> Result<Report, String> {
        #[cfg(not(feature = "mpi"))]
        {
            let _ = a;
            Err(
                "tutti was built without MPI: build with `--features mpi` and run \
                 `mpirun -n 2 target/release/tutti bench rmi --mpi`"
                    .into(),
            )
        }
        #[cfg(feature = "mpi")]
        run_mpi(a)
    }

    #[cfg(feature = "mpi")]
    fn run_mpi(a: &RmiArgs) -> Result<Report, String> {
        use crate::measure::interleaved;
        use crate::mpi_raw as raw;
        use mpi::traits::CommunicatorCollectives;

        let mut builder = World::builder().locations(1);
        if let Some(n) = a.workers {
            builder = builder.workers(n);
        }
        let w = builder.build().map_err(|e| e.to_string())?;
        if w.ranks() != 2 || !w.config().transport().uses_mpi() {
            return Err(format!(
                "bench rmi --mpi needs exactly 2 MPI ranks (this is rank {} of {} on {}): \
                 run `mpirun -n 2 target/release/tutti bench rmi --mpi`",
                w.rank(),
                w.ranks(),
                w.config().transport()
            ));
        }
        let me = w.rank();
        let plan = a.run.plan();
        let progress = Progress::new(if me == 0 { plan.total() * 7 } else { 0 }, a.json);
        let mut report = Report::new("bench rmi --mpi");
        report
            .param("ranks", w.ranks())
            .param("round_trips", a.messages)
            .param("fences", a.fences)
            .param("spawns", a.spawns)
            .param("workers", w.config().workers())
            .param("progress", w.config().progress().to_string())
            .param("aggregation", w.config().aggregation())
            .param("runs", plan.runs);
        let (n, f, k) = (a.messages, a.fences, a.spawns);
        progress.stage("ping-pong, fence, remote empty method: rmi and raw MPI, in rounds");
        let ms = interleaved(
            plan,
            &progress,
            &mut [
                &mut || raw::on_mpi(&w, move |c| raw::pingpong(c, n)),
                &mut || pingpong_async(&w, n),
                &mut || pingpong_sync(&w, n),
                &mut || {
                    raw::on_mpi(&w, move |c| {
                        let start = Instant::now();
                        for _ in 0..f {
                            c.barrier();
                        }
                        Run {
                            elapsed: start.elapsed(),
                            ok: true,
                        }
                    })
                },
                &mut || fences(&w, f),
                &mut || remote_empty(&w, k, false),
                &mut || remote_empty(&w, k, true),
            ],
        );
        progress.finish();
        let per = |m: &Measurement, k: u64| m.ns_per(k);
        let [raw_pp, async_pp, sync_pp, raw_bar, fence_m, remote_rmi, remote_scope] = &ms[..]
        else {
            return Err("bench rmi --mpi: a measurement is missing".into());
        };
        let (rp, ap, sp) = (
            per(raw_pp, 2 * n),
            per(async_pp, 2 * n),
            per(sync_pp, 2 * n),
        );
        let (rb, fm) = (per(raw_bar, f), per(fence_m, f));
        report.result(
            "raw MPI send/recv",
            "ping-pong one-way (ranks)",
            rp.clone(),
            "ns",
        );
        report.result(
            "tutti async_rmi",
            "ping-pong one-way (ranks)",
            ap.clone(),
            "ns",
        );
        report.result(
            "tutti sync_rmi",
            "ping-pong one-way (ranks)",
            sp.clone(),
            "ns",
        );
        report.result("MPI_Barrier", "fence (ranks)", rb.clone(), "ns/fence");
        report.result("tutti fence", "fence (ranks)", fm.clone(), "ns/fence");
        report.ratio("latency_async_rmi_over_mpi", ap.median / rp.median);
        report.ratio("latency_sync_rmi_over_mpi", sp.median / rp.median);
        let (ra, rs) = (per(remote_rmi, k), per(remote_scope, k));
        report.result(
            "tutti async_rmi",
            "remote empty method (ranks)",
            ra.clone(),
            "ns/call",
        );
        report.result(
            "tutti scope spawn",
            "remote empty method (ranks)",
            rs.clone(),
            "ns/call",
        );
        report.ratio("time_fence_over_mpi_barrier", fm.median / rb.median);
        report.ratio(
            "time_scope_spawn_over_async_rmi_ranks",
            rs.median / ra.median,
        );
        let ok = ms.iter().all(|m| m.ok);
        // Both ranks checked what they saw.
        let all_ok = w
            .run(move |loc| async move { loc.all_reduce(ok, |a, b| a && b).await })
            .into_iter()
            .all(|ok| ok);
        report.verify(all_ok);
        if me != 0 {
            drop(w);
            std::process::exit(if all_ok { 0 } else { 1 });
        }
        Ok(report)
    }
}
