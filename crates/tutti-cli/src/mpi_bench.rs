//! `tutti mpi-bench`: Miguel 2019 §5.4's MPI micro-benchmarks, raw rsmpi beside
//! tutti's MPI transport in the same run. Run it on two ranks:
//!
//! ```text
//! mpirun -n 2 target/release/tutti mpi-bench
//! ```
//!
//! * **latency**: an 8-byte ping-pong, reported per one-way message. rsmpi:
//!   blocking `send`/`receive_into` (run on the thread that owns MPI, with the
//!   world's engine paused); tutti: `send_bytes`/`recv` between a location of
//!   each rank; and tutti *thread to thread*: two locations of one in-process
//!   world (typed values); and tutti *channel*: the same ping-pong over a pair
//!   of channels between the two locations (`RemoteTx`/`RemoteRx`, capacity 1,
//!   `u64` values), ratio `time_tutti_over_rsmpi_channel_pingpong`.
//! * **bandwidth**: rank 0 streams messages of each `--sizes` size (64 MiB in
//!   all, at least 8 messages) and rank 1 answers with one byte when it has them
//!   all.
//! * **message rate**: rank 0 sends `--messages` 8-byte messages; rsmpi with
//!   blocking sends, tutti unaggregated (factor 1) and aggregated (`--aggregation`),
//!   with `send_slice` from one reused buffer as rsmpi (messages above 4 KiB
//!   with `send_slice_blocking`, which sends them from that buffer without a
//!   copy and returns when the send completed, as rsmpi's blocking send).
//! * **overlap** (asynchronous progress): rank 0 starts sending `--overlap-bytes`
//!   and then computes for `--compute-ms` without calling MPI or the world;
//!   overlap = (t_comm + t_compute − t_both) / min(t_comm, t_compute), 1 meaning
//!   the transfer was completely hidden behind the computation.
//! * **collectives** (`--what collectives`, any number of ranks): barrier,
//!   broadcast, reduce, all-reduce, gather,
//!   all-gather, scatter, all-to-all(-v), inclusive and exclusive scan and
//!   reduce-scatter beside rsmpi's, at 8 B and 64 KiB per location, reported
//!   per call with ratios `time_tutti_over_rsmpi_<collective>_<bytes>` (see
//!   `mpi_collectives.rs`).
//!
//! Only rank 0 reports. Both ranks must run the same arguments (mpirun does).

// Without the `mpi` feature only the argument parsing and the error remain.
#![cfg_attr(not(feature = "mpi"), allow(dead_code, unused_imports))]

use std::time::{Duration, Instant};

use clap::Args;

use crate::measure::{compute, interleaved, repeat, Measurement, Progress, Run, RunOpts};
use crate::mpi_collectives::{self as colls, Coll};
#[cfg(feature = "mpi")]
use crate::mpi_raw as raw;
use crate::report::{Report, Stats};
use tutti::world::{Location, LocationId, World};

/// Arguments of `tutti mpi-bench`.
#[derive(Args, Debug)]
pub struct MpiBenchArgs {
    /// Round trips of the latency ping-pongs.
    #[arg(long = "round-trips", default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    iters: u64,
    /// Messages of the message-rate measurements.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    messages: u64,
    /// Aggregation factor of the aggregated message rate: messages kept per
    /// destination before they are sent together (the MPI transport's default).
    #[arg(long = "aggregation", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    factor: u64,
    /// Message sizes of the bandwidth measurement, in bytes.
    #[arg(long, value_delimiter = ',', default_value = "1024,65536,1048576,16777216", value_parser = clap::value_parser!(u64).range(1..=(1u64 << 31)))]
    sizes: Vec<u64>,
    /// Bytes sent during the overlap test.
    #[arg(long, default_value_t = 32 << 20, value_parser = clap::value_parser!(u64).range(1..=(1u64 << 32)))]
    overlap_bytes: u64,
    /// Computation of the overlap test, in milliseconds.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    compute_ms: u64,
    /// Which measurements to run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "latency,bandwidth,rate,overlap"
    )]
    what: Vec<Part>,
    #[command(flatten)]
    run: RunOpts,
    /// Print the world's configuration on stderr.
    #[arg(long)]
    verbose: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub plot: crate::plot::PlotOpts,
}

/// The parts of the benchmark.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Ping-pong latency.
    Latency,
    /// Streaming bandwidth per message size.
    Bandwidth,
    /// 8-byte message rate.
    Rate,
    /// Overlap of communication with computation.
    Overlap,
    /// barrier, broadcast, reduce, all_reduce, gather, all_gather, scatter,
    /// all_to_all(_v), the scans and reduce_scatter beside rsmpi's, at 8 B and
    /// 64 KiB (any number of ranks).
    Collectives,
}

/// Largest message the benchmark sends with `send_slice` (copied) rather than
/// `send_bytes` (moved).
const SLICE_MAX: usize = 4096;

/// Bytes streamed per bandwidth measurement.
const STREAM_BYTES: u64 = 64 << 20;

fn peer(loc: &Location) -> LocationId {
    LocationId::new(1 - loc.id().index() as u32)
}

/// tutti: `n` round trips of 8 bytes between the locations of ranks 0 and 1.
async fn tutti_pingpong(loc: Location, n: u64) -> Run {
    let other = peer(&loc);
    let first = loc.rank() == 0;
    let start = Instant::now();
    let mut ok = true;
    if first {
        let _ = loc.send_bytes(other, 0u64.to_le_bytes().to_vec());
    }
    for i in 0..n {
        let d = loc.recv().await;
        let v = d
            .bytes()
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .unwrap_or(u64::MAX);
        drop(d);
        ok &= v == 2 * i + u64::from(first);
        if !(first && i + 1 == n) {
            let _ = loc.send_bytes(other, (v + 1).to_le_bytes().to_vec());
        }
    }
    Run {
        elapsed: start.elapsed(),
        ok,
    }
}

/// tutti: `n` round trips of a `u64` over two channels of capacity 1 between
/// the locations of ranks 0 and 1.
async fn tutti_channel_pingpong(loc: Location, n: u64) -> Run {
    let other = peer(&loc);
    let first = loc.rank() == 0;
    let (Ok(tx), Ok(rx)) = (
        loc.channel_to::<u64>(other, 1),
        loc.channel_from::<u64>(other, 1),
    ) else {
        return Run {
            elapsed: Duration::ZERO,
            ok: false,
        };
    };
    let start = Instant::now();
    let mut ok = true;
    if first {
        ok &= tx.send(0).await.is_ok();
    }
    for i in 0..n {
        let v = rx.recv().await.unwrap_or(u64::MAX);
        ok &= v == 2 * i + u64::from(first);
        if !(first && i + 1 == n) {
            ok &= tx.send(v + 1).await.is_ok();
        }
    }
    Run {
        elapsed: start.elapsed(),
        ok,
    }
}

/// tutti: rank 0 sends `count` messages of `size` bytes; rank 1 receives them all
/// and answers with one byte.
async fn tutti_stream(loc: Location, count: u64, size: usize, factor: usize) -> Run {
    loc.set_aggregation(factor);
    let other = peer(&loc);
    let start = Instant::now();
    let mut ok = true;
    if loc.rank() == 0 {
        // From one reused buffer, as rsmpi sends: small messages are copied
        // into the aggregation buffer, large ones sent from it without a copy
        // (returning once the send completed, as rsmpi's blocking send).
        let mut buf = vec![0u8; size];
        for i in 0..count {
            buf[0] = i as u8;
            let _ = if size <= SLICE_MAX {
                loc.send_slice(other, &buf)
            } else {
                loc.send_slice_blocking(other, &buf)
            };
        }
        let d = loc.recv().await;
        ok &= d.bytes() == Some(&[1]);
    } else {
        for i in 0..count {
            let d = loc.recv().await;
            ok &= d
                .bytes()
                .is_some_and(|b| b.len() == size && b[0] == i as u8);
        }
        let _ = loc.send_bytes(other, vec![1]);
        loc.flush();
    }
    Run {
        elapsed: start.elapsed(),
        ok,
    }
}

/// tutti: rank 0 sends `bytes` and computes for `work` (zero: no computation)
/// before waiting for rank 1's acknowledgement.
async fn tutti_overlap(loc: Location, bytes: usize, work: Duration) -> Run {
    let other = peer(&loc);
    let start = Instant::now();
    let mut ok = true;
    if loc.rank() == 0 {
        let _ = loc.send_bytes(other, vec![7u8; bytes]);
        loc.flush();
        if !work.is_zero() {
            compute(work);
        }
        let d = loc.recv().await;
        ok &= d.bytes() == Some(&[1]);
    } else {
        let d = loc.recv().await;
        ok &= d
            .bytes()
            .is_some_and(|b| b.len() == bytes && b[bytes - 1] == 7);
        drop(d);
        let _ = loc.send_bytes(other, vec![1]);
        loc.flush();
    }
    Run {
        elapsed: start.elapsed(),
        ok,
    }
}

/// Runs `body` on the (single) location of every rank; rank 0's run.
fn on_world<Fut>(world: &World, body: impl Fn(Location) -> Fut) -> Run
where
    Fut: std::future::Future<Output = Run> + Send + 'static,
{
    let out = world.run(body);
    world.run(|loc| async move { loc.barrier().await });
    out.into_iter().next().unwrap_or(Run {
        elapsed: Duration::ZERO,
        ok: false,
    })
}

/// What every part of the benchmark runs with.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    a: &'a MpiBenchArgs,
    world: &'a World,
    plan: crate::measure::Plan,
    progress: &'a Progress,
}

/// The statistics of `samples`, NaN if there are none.
fn stat(samples: Vec<f64>) -> Stats {
    Stats::of(&samples).unwrap_or(Stats::single(f64::NAN))
}

/// Runs the benchmark.
pub fn run(a: &MpiBenchArgs) -> Result<Report, String> {
    #[cfg(not(feature = "mpi"))]
    {
        let _ = a;
        Err(
            "tutti was built without MPI: build with `--features mpi` and run \
             `mpirun -n 2 target/release/tutti mpi-bench` (see the README's MPI section)"
                .into(),
        )
    }
    #[cfg(feature = "mpi")]
    run_mpi(a)
}

#[cfg(feature = "mpi")]
fn run_mpi(a: &MpiBenchArgs) -> Result<Report, String> {
    let world = World::builder()
        .locations(1)
        .build()
        .map_err(|e| e.to_string())?;
    // The collectives run on any number of ranks; the rest between two.
    let only_collectives = a.what.iter().all(|&p| p == Part::Collectives);
    let ranks_ok = world.ranks() == 2 || (only_collectives && world.ranks() >= 2);
    if !ranks_ok || !world.config().transport().uses_mpi() {
        return Err(format!(
            "mpi-bench needs exactly 2 MPI ranks, or 2 or more with --what collectives \
             (this is rank {} of {} on {}): run `mpirun -n 2 target/release/tutti mpi-bench`",
            world.rank(),
            world.ranks(),
            world.config().transport()
        ));
    }
    let me = world.rank();
    if a.verbose && me == 0 {
        eprintln!("{}", world.config());
    }
    let plan = a.run.plan();
    let coll_rows: usize = Coll::ALL
        .iter()
        .map(|c| c.sizes(&COLLECTIVE_BYTES).len())
        .sum();
    let steps = plan.total() * (6 + 2 * a.sizes.len() + 4 + 2 * coll_rows);
    let progress = Progress::new(if me == 0 { steps } else { 0 }, a.json);
    let mut report = Report::new("mpi-bench");
    report
        .param("ranks", world.ranks())
        .param("progress", world.config().progress().to_string())
        .param("workers", world.config().workers())
        .param("round_trips", a.iters)
        .param("messages", a.messages)
        .param("aggregation", a.factor)
        .param("overlap_bytes", a.overlap_bytes)
        .param("compute_ms", a.compute_ms)
        .param("runs", plan.runs)
        .param(
            "engine",
            world
                .config()
                .to_string()
                .lines()
                .nth(2)
                .unwrap_or("")
                .trim()
                .to_string(),
        );
    let mut all_ok = true;

    let cx = Ctx {
        a,
        world: &world,
        plan,
        progress: &progress,
    };
    let wants = |p: Part| a.what.contains(&p);
    if wants(Part::Latency) {
        latency(&cx, &mut report, &mut all_ok)?;
    }
    if wants(Part::Bandwidth) {
        bandwidth(&cx, &mut report, &mut all_ok);
    }
    if wants(Part::Rate) {
        rate(&cx, &mut report, &mut all_ok);
    }
    if wants(Part::Overlap) {
        overlap(&cx, &mut report, &mut all_ok);
    }
    if wants(Part::Collectives) {
        collectives(&cx, &mut report, &mut all_ok);
    }
    progress.finish();
    // Both ranks verified what they received.
    let all_ok = world
        .run(move |loc| async move { loc.all_reduce(all_ok, |a, b| a && b).await })
        .into_iter()
        .all(|ok| ok);
    report.verify(all_ok);
    if me != 0 {
        // Only rank 0 reports; the others end quietly.
        drop(world);
        std::process::exit(if all_ok { 0 } else { 1 });
    }
    Ok(report)
}

#[cfg(feature = "mpi")]
fn latency(cx: &Ctx<'_>, report: &mut Report, all_ok: &mut bool) -> Result<(), String> {
    let Ctx {
        a,
        world,
        plan,
        progress,
    } = *cx;
    let n = a.iters;
    progress.stage("latency: rsmpi and tutti");
    let mut ms = interleaved(
        plan,
        progress,
        &mut [
            &mut || raw::on_mpi(world, move |c| raw::pingpong(c, n)),
            &mut || on_world(world, move |loc| tutti_pingpong(loc, n)),
            &mut || on_world(world, move |loc| tutti_channel_pingpong(loc, n)),
        ],
    );
    let lat_ch = ms.pop().unwrap_or_default();
    let lat_t = ms.pop().unwrap_or_default();
    let lat_raw = ms.pop().unwrap_or_default();
    let threads = crate::bench::world::world(world.config().workers().max(1))?;
    progress.stage("latency: tutti thread to thread");
    let lat_tt = repeat(plan, progress, || {
        crate::bench::world::tutti_pingpong(&threads, n)
    });
    drop(threads);
    let one_way_us = |m: &Measurement| m.map(|s| s * 1e6 / (2 * n) as f64);
    let (l_raw, l_t, l_tt, l_ch) = (
        stat(one_way_us(&lat_raw)),
        stat(one_way_us(&lat_t)),
        stat(one_way_us(&lat_tt)),
        stat(one_way_us(&lat_ch)),
    );
    report.result(
        "rsmpi",
        "latency one-way (process to process)",
        l_raw.clone(),
        "us",
    );
    report.result(
        "tutti",
        "latency one-way (process to process)",
        l_t.clone(),
        "us",
    );
    report.result(
        "tutti",
        "latency one-way (thread to thread)",
        l_tt.clone(),
        "us",
    );
    report.result(
        "tutti",
        "latency one-way (channel between ranks)",
        l_ch.clone(),
        "us",
    );
    report.ratio("latency_tutti_over_rsmpi", l_t.median / l_raw.median);
    report.ratio(
        "time_tutti_over_rsmpi_channel_pingpong",
        l_ch.median / l_raw.median,
    );
    report.ratio(
        "latency_thread_to_thread_over_process_to_process",
        l_tt.median / l_t.median,
    );
    *all_ok &= lat_raw.ok && lat_t.ok && lat_tt.ok && lat_ch.ok;
    Ok(())
}

#[cfg(feature = "mpi")]
fn bandwidth(cx: &Ctx<'_>, report: &mut Report, all_ok: &mut bool) {
    let Ctx {
        a,
        world,
        plan,
        progress,
    } = *cx;
    for &size in &a.sizes {
        let size = size as usize;
        let count = (STREAM_BYTES / size as u64).max(8);
        let bytes = (count * size as u64) as f64;
        progress.stage(&format!("bandwidth {size} B"));
        let mut ms = interleaved(
            plan,
            progress,
            &mut [
                &mut || raw::on_mpi(world, move |c| raw::stream(c, count, size)),
                &mut || on_world(world, move |loc| tutti_stream(loc, count, size, 1)),
            ],
        );
        let t_m = ms.pop().unwrap_or_default();
        let raw_m = ms.pop().unwrap_or_default();
        let mbs = |m: &Measurement| m.map(|s| bytes / s / 1e6);
        let (r, t) = (stat(mbs(&raw_m)), stat(mbs(&t_m)));
        let metric = format!("bandwidth {size} B");
        report.result("rsmpi", &metric, r.clone(), "MB/s");
        report.result("tutti", &metric, t.clone(), "MB/s");
        report.ratio(
            &format!("bandwidth_{size}B_tutti_over_rsmpi"),
            t.median / r.median,
        );
        *all_ok &= raw_m.ok && t_m.ok;
    }
}

#[cfg(feature = "mpi")]
fn rate(cx: &Ctx<'_>, report: &mut Report, all_ok: &mut bool) {
    let Ctx {
        a,
        world,
        plan,
        progress,
    } = *cx;
    let m = a.messages;
    let factor = a.factor as usize;
    progress.stage("rate");
    let mut ms = interleaved(
        plan,
        progress,
        &mut [
            &mut || raw::on_mpi(world, move |c| raw::stream(c, m, 8)),
            &mut || on_world(world, move |loc| tutti_stream(loc, m, 8, 1)),
            &mut || on_world(world, move |loc| tutti_stream(loc, m, 8, factor)),
        ],
    );
    let rate_f = ms.pop().unwrap_or_default();
    let rate_1 = ms.pop().unwrap_or_default();
    let rate_raw = ms.pop().unwrap_or_default();
    let per_sec = |x: &Measurement| x.map(|s| m as f64 / s);
    let (r_raw, r_1, r_f) = (
        stat(per_sec(&rate_raw)),
        stat(per_sec(&rate_1)),
        stat(per_sec(&rate_f)),
    );
    report.result("rsmpi", "rate 8 B", r_raw.clone(), "messages/s");
    report.result("tutti factor 1", "rate 8 B", r_1.clone(), "messages/s");
    report.result(
        &format!("tutti factor {factor}"),
        "rate 8 B",
        r_f.clone(),
        "messages/s",
    );
    report.ratio(
        "throughput_aggregated_over_unaggregated",
        r_f.median / r_1.median,
    );
    report.ratio(
        "throughput_tutti_unaggregated_over_rsmpi",
        r_1.median / r_raw.median,
    );
    report.ratio(
        "throughput_tutti_aggregated_over_rsmpi",
        r_f.median / r_raw.median,
    );
    *all_ok &= rate_raw.ok && rate_1.ok && rate_f.ok;
}

#[cfg(feature = "mpi")]
fn overlap(cx: &Ctx<'_>, report: &mut Report, all_ok: &mut bool) {
    let Ctx {
        a,
        world,
        plan,
        progress,
    } = *cx;
    let bytes = a.overlap_bytes as usize;
    let work = Duration::from_millis(a.compute_ms);
    let secs = |x: &Measurement| x.median_secs();
    progress.stage("overlap");
    let mut ms = interleaved(
        plan,
        progress,
        &mut [
            &mut || raw::on_mpi(world, move |c| raw::overlap(c, bytes, Duration::ZERO)),
            &mut || raw::on_mpi(world, move |c| raw::overlap(c, bytes, work)),
            &mut || on_world(world, move |loc| tutti_overlap(loc, bytes, Duration::ZERO)),
            &mut || on_world(world, move |loc| tutti_overlap(loc, bytes, work)),
        ],
    );
    let t_both = ms.pop().unwrap_or_default();
    let t_comm = ms.pop().unwrap_or_default();
    let raw_both = ms.pop().unwrap_or_default();
    let raw_comm = ms.pop().unwrap_or_default();
    let overlap = |comm: f64, both: f64| {
        let w = work.as_secs_f64();
        ((comm + w - both) / comm.min(w)).clamp(0.0, 1.0)
    };
    let o_raw = overlap(secs(&raw_comm), secs(&raw_both));
    let o_t = overlap(secs(&t_comm), secs(&t_both));
    report.result(
        "rsmpi",
        "overlap comm time",
        stat(raw_comm.map(|s| s * 1e3)),
        "ms",
    );
    report.result(
        "rsmpi",
        "overlap comm+compute time",
        stat(raw_both.map(|s| s * 1e3)),
        "ms",
    );
    report.result(
        "tutti",
        "overlap comm time",
        stat(t_comm.map(|s| s * 1e3)),
        "ms",
    );
    report.result(
        "tutti",
        "overlap comm+compute time",
        stat(t_both.map(|s| s * 1e3)),
        "ms",
    );
    report.result("rsmpi", "overlap", Stats::single(o_raw), "fraction hidden");
    report.result("tutti", "overlap", Stats::single(o_t), "fraction hidden");
    *all_ok &= raw_comm.ok && raw_both.ok && t_comm.ok && t_both.ok;
}

/// Bytes per location of the collectives (per pair for the all-to-alls).
const COLLECTIVE_BYTES: [usize; 2] = [8, 64 << 10];

#[cfg(feature = "mpi")]
fn collectives(cx: &Ctx<'_>, report: &mut Report, all_ok: &mut bool) {
    let Ctx {
        world,
        plan,
        progress,
        ..
    } = *cx;
    for c in Coll::ALL {
        for bytes in c.sizes(&COLLECTIVE_BYTES) {
            let words = bytes / 8;
            // About the same wall time per run at either size.
            let reps: u64 = if bytes <= 64 { 1000 } else { 50 };
            progress.stage(&format!("{} {bytes} B", c.name()));
            let mut ms = interleaved(
                plan,
                progress,
                &mut [
                    &mut || raw::on_mpi(world, move |m| colls::rsmpi(m, c, words, reps)),
                    &mut || on_world(world, move |loc| colls::tutti(loc, c, words, reps)),
                ],
            );
            let t_m = ms.pop().unwrap_or_default();
            let raw_m = ms.pop().unwrap_or_default();
            let per_call_us = |m: &Measurement| m.map(|s| s * 1e6 / reps as f64);
            let (r, t) = (stat(per_call_us(&raw_m)), stat(per_call_us(&t_m)));
            let metric = format!("{} {bytes} B", c.name());
            report.result("rsmpi", &metric, r.clone(), "us");
            report.result("tutti", &metric, t.clone(), "us");
            report.ratio(
                &format!("time_tutti_over_rsmpi_{}_{bytes}", c.name()),
                t.median / r.median,
            );
            *all_ok &= raw_m.ok && t_m.ok;
        }
    }
}
