//! "Say hello to everyone" (`tutti hello`) beside the Go program of
//! `bench/go`:
//!
//! * **v2**, `n` = `--hello-n`, `m` = `--hello-m`: ns per message on 1 and
//!   `--workers` workers (Go: `GOMAXPROCS` 1 and the same), the speedup of
//!   each, and the time ratio at each worker count.
//! * **v1**, `m` = 1, `n` = `--v1-n` (2237: about 10^7 processes; `par` spawns them in
//!   batches, so far fewer are live at the peak): ns per
//!   message, peak resident memory and bytes per process (channels included),
//!   on `--workers` workers. Go runs with `n` = `--go-v1-n`, since a goroutine
//!   needs several times the memory; bytes per process compare across sizes.
//!   Beside them, the exact heap bytes of one *blocked* process (task, future and
//!   its wait, no channel), counted by the CLI's allocator over `--v1-n`² processes
//!   that each wait in `recv` ([`blocked_process_heap`]).

use super::{go_stats, Ctx};
use crate::apps::hello::{check_v1_memory, run_once, Version};
use crate::measure::{check_memory, repeat, Measurement, Progress, Run};
use crate::report::{Report, Stats};

/// Bytes per goroutine of Go's v1 allowed for in its memory check (measured
/// ≈ 820 at n = 1000).
const GO_V1_BYTES_PER_PROCESS_BOUND: u128 = 1200;

pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    v2(ctx, report)?;
    if ctx.args.v1_n > 0 {
        v1(ctx, report)?;
    }
    Ok(())
}

fn v2(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let n = usize::try_from(ctx.args.hello_n).map_err(|_| "--hello-n is too large")?;
    let m = ctx.args.hello_m;
    let messages = u64::from(m) * (n as u64) * (n as u64);
    report.param("hello_n", n).param("hello_m", m);
    let mut counts = vec![1];
    if ctx.args.workers > 1 {
        counts.push(ctx.args.workers);
    }
    let progress = Progress::new(counts.len() * ctx.plan.total(), ctx.args.json);
    let per = |s: f64| s * 1e9 / messages as f64;
    let mut ours_by_w = Vec::new();
    let mut go_by_w = Vec::new();
    for &w in &counts {
        progress.stage(&format!("hello v2: tutti on {w} workers"));
        let rt = tutti::Runtime::builder()
            .workers(w)
            .build()
            .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
        let ours: Measurement = repeat(ctx.plan, &progress, || {
            let o = run_once(&rt, Version::V2, n, m);
            Run {
                elapsed: o.elapsed,
                ok: o.errors == 0,
            }
        });
        drop(rt);
        report.verify(ours.ok);
        if let Some(t) = Stats::of(&ours.map(per)) {
            report.result(&format!("tutti_w{w}"), "hello_v2", t, "ns/message");
        }
        ours_by_w.push(per(ours.median_secs()));
        let args = [
            "hello".to_string(),
            "-version".to_string(),
            "2".to_string(),
            "-n".to_string(),
            n.to_string(),
            "-m".to_string(),
            m.to_string(),
        ];
        let go = ctx
            .go_runs(report, w, &args)
            .and_then(|runs| go_stats(&runs, "time_per_message"));
        if let Some(go) = go.clone() {
            report.result(&format!("go_w{w}"), "hello_v2", go.clone(), "ns/message");
            report.ratio(
                &format!("time_tutti_over_go_hello_v2_w{w}"),
                per(ours.median_secs()) / go.median,
            );
        }
        go_by_w.push(go.map(|g| g.median));
    }
    progress.finish();
    if counts.len() == 2 {
        let w = counts[1];
        report.ratio(
            &format!("speedup_tutti_hello_v2_w1_to_w{w}"),
            ours_by_w[0] / ours_by_w[1],
        );
        if let (Some(g1), Some(gw)) = (go_by_w[0], go_by_w[1]) {
            report.ratio(&format!("speedup_go_hello_v2_w1_to_w{w}"), g1 / gw);
        }
    }
    Ok(())
}

fn v1(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let n = usize::try_from(ctx.args.v1_n).map_err(|_| "--v1-n is too large")?;
    let processes = Version::V1.processes(n);
    let messages = (n as u64) * (n as u64);
    report.param("v1_n", n).param("v1_processes", processes);
    check_v1_memory(n)?;
    let progress = Progress::new(ctx.plan.total(), ctx.args.json);
    progress.stage(&format!("hello v1: tutti, {processes} processes"));
    let mut peaks = Vec::new();
    let mut per_process = Vec::new();
    let rt = &ctx.rt;
    let ours = repeat(ctx.plan, &progress, || {
        let o = run_once(rt, Version::V1, n, 1);
        if let (Some(p), Some(b)) = (o.peak_rss, o.bytes_per_process(processes)) {
            peaks.push(p as f64);
            per_process.push(b);
        }
        Run {
            elapsed: o.elapsed,
            ok: o.errors == 0,
        }
    });
    progress.finish();
    report.verify(ours.ok);
    let w = ctx.args.workers;
    let name = format!("tutti_w{w}");
    if let Some(t) = Stats::of(&ours.map(|s| s * 1e9 / messages as f64)) {
        report.result(&name, "hello_v1_time", t, "ns/message");
    }
    let peak = Stats::of(&peaks);
    let ours_bpp = Stats::of(&per_process);
    if let Some(p) = peak {
        report.result(&name, "hello_v1_peak_rss", p, "bytes");
    }
    if let Some(b) = ours_bpp.clone() {
        report.result(&name, "hello_v1_bytes_per_process", b, "bytes");
    }
    let (heap, blocks) = blocked_process_heap(rt, n * n)?;
    report.result(&name, "blocked_process_heap", Stats::single(heap), "bytes");
    report.result(
        &name,
        "blocked_process_heap_blocks",
        Stats::single(blocks),
        "allocations",
    );

    let go_n = ctx.args.go_v1_n;
    if go_n == 0 || ctx.go.is_err() {
        return Ok(());
    }
    let go_processes = 2 * go_n * go_n;
    report.param("go_v1_n", go_n);
    if let Err(e) = check_memory(
        u128::from(go_processes) * GO_V1_BYTES_PER_PROCESS_BOUND,
        &format!("Go's hello v1 with n = {go_n}"),
    ) {
        eprintln!("tutti: skipping Go's hello v1: {e}");
        report.param("go_v1_skipped", e);
        return Ok(());
    }
    let args = [
        "hello".to_string(),
        "-version".to_string(),
        "1".to_string(),
        "-n".to_string(),
        go_n.to_string(),
        "-m".to_string(),
        "1".to_string(),
    ];
    let Some(runs) = ctx.go_runs(report, w, &args) else {
        return Ok(());
    };
    let go_name = format!("go_w{w}");
    if let Some(t) = go_stats(&runs, "time_per_message") {
        report.result(&go_name, "hello_v1_time", t, "ns/message");
    }
    if let Some(p) = go_stats(&runs, "peak_rss") {
        report.result(&go_name, "hello_v1_peak_rss", p.clone(), "bytes");
        let bpp = p.median / go_processes as f64;
        report.result(
            &go_name,
            "hello_v1_bytes_per_process",
            Stats::single(bpp),
            "bytes",
        );
        if let Some(b) = ours_bpp {
            report.ratio("bytes_per_process_tutti_over_go_hello_v1", b.median / bpp);
        }
    }
    Ok(())
}

/// Heap bytes (as requested from the allocator) and allocations per blocked CSP
/// process, counted exactly by the CLI's allocator: `count` processes of one `par`,
/// each like a hello v1 receiver (its end, an id, a count and the shared error
/// counter) waiting in `recv` on a channel of its own. The channels are made before the
/// count starts, so the figure is the process alone: its task header, its `par`
/// member, its future with the wait inside it. (glibc adds 8 bytes per allocation and
/// rounds to 16.)
pub fn blocked_process_heap(rt: &tutti::Runtime, count: usize) -> Result<(f64, f64), String> {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Arc;

    /// One shared counter block, as hello's processes share one error counter.
    #[derive(Default)]
    struct Counters {
        waiting: AtomicUsize,
        errors: AtomicU64,
    }

    let count = count.max(1);
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..count).map(|_| tutti::csp::channel::<u32>()).unzip();
    let counters = Arc::new(Counters::default());
    let c = counters.clone();
    let m = 1u32; // hello v1's messages per channel
    let (net, growth) = crate::alloc::measure(|| {
        let net = rt.spawn(tutti::csp::par(rxs.into_iter().zip(0u32..).map(
            move |(rx, j)| {
                let c = c.clone();
                async move {
                    c.waiting.fetch_add(1, Ordering::Relaxed);
                    for _ in 0..m {
                        match rx.recv().await {
                            Ok(x) if x == j => {}
                            _ => {
                                c.errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            },
        )));
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while counters.waiting.load(Ordering::Relaxed) < count {
            if std::time::Instant::now() > give_up {
                return Err("blocked-process count: the processes did not start".to_string());
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(net)
    });
    let net = net?;
    for (tx, j) in txs.iter().zip(0u32..) {
        tx.send_blocking(j)
            .map_err(|e| format!("blocked-process count: {e}"))?;
    }
    drop(txs);
    rt.block_on(net)
        .map_err(|d| format!("blocked-process count: {d}"))?;
    if counters.errors.load(Ordering::Relaxed) != 0 {
        return Err("blocked-process count: a process received a wrong value".to_string());
    }
    Ok((
        growth.bytes as f64 / count as f64,
        growth.blocks as f64 / count as f64,
    ))
}
