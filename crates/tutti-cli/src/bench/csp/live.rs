//! Many live processes at once: `--live-n` CSP processes (a replicated `par`) that all
//! block in `recv` at the same time, then are released one value each and end.
//!
//! Process `i` receives on channel `i / --live-per-channel`: with 1 (the default) every
//! process has a rendezvous channel of its own, as in occam's `PAR i = 0 FOR n` over an
//! array of channels; with more, that many processes share one channel (its receivers
//! queue in arrival order). Nothing is batched: the releasing task starts sending only
//! once every process has started and is about to wait, so all of them are alive and
//! blocked at once, and the resident memory is read at that moment.
//!
//! Reported per run (medians over `--runs`): the resident memory at the moment every
//! process waits, minus the resident memory before the channels were made (freed heap
//! is handed back to the system first), divided by the processes — channels included;
//! the peak resident memory of the run (the whole process); processes spawned per second
//! until all wait; and processes released per second (a value handed to each, which
//! wakes it, and its end). Each run checks that every process got exactly one value and
//! that the values add up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tutti::csp::{channel, par_for_each};

use super::Ctx;
use crate::measure::{check_memory, Progress};
use crate::mem;
use crate::report::{Report, Stats};

/// How long the processes may take to start (and to end) before the run fails.
const GIVE_UP: Duration = Duration::from_secs(600);

/// Resident bytes per process allowed for in the memory check (a process with its own
/// channel, with room to spare).
const BYTES_PER_PROCESS_BOUND: u128 = 400;

/// Processes that started (and are about to wait) and that ended with a value, and the
/// sum of their values: statics, so that a process carries nothing but its channel end.
static STARTED: AtomicU64 = AtomicU64::new(0);
static ENDED: AtomicU64 = AtomicU64::new(0);
static SUM: AtomicU64 = AtomicU64::new(0);

/// One run's figures.
struct LiveRun {
    /// Resident bytes per waiting process, channels included.
    rss_per_process: Option<f64>,
    /// Peak resident bytes of the whole process during the run.
    peak_rss: Option<f64>,
    spawn_secs: f64,
    release_secs: f64,
}

pub(super) fn run(ctx: &Ctx<'_>, report: &mut Report) -> Result<(), String> {
    let n = ctx.args.live_n;
    let per = ctx.args.live_per_channel;
    report.param("live_n", n).param("live_per_channel", per);
    check_memory(
        u128::from(n) * BYTES_PER_PROCESS_BOUND,
        &format!("{n} live processes"),
    )?;
    let progress = Progress::new(ctx.plan.total(), ctx.args.json);
    progress.stage(&format!("live: {n} blocked processes"));
    let mut runs = Vec::with_capacity(ctx.plan.runs);
    for i in 0..ctx.plan.total() {
        let r = once(&ctx.rt, n, per)?;
        if i >= ctx.plan.warmup {
            runs.push(r);
        }
        progress.tick();
    }
    progress.finish();
    report.verify(true);
    let name = format!("tutti_w{}", ctx.args.workers);
    report.count(&name, "live_processes", n, "processes");
    let stats = |f: &dyn Fn(&LiveRun) -> Option<f64>| {
        let v: Vec<f64> = runs.iter().filter_map(f).collect();
        (v.len() == runs.len()).then(|| Stats::of(&v)).flatten()
    };
    if let Some(s) = stats(&|r| r.rss_per_process) {
        report.result(&name, "live_rss_per_process", s, "bytes");
    }
    if let Some(s) = stats(&|r| r.peak_rss) {
        report.result(&name, "live_peak_rss", s, "bytes");
    }
    if let Some(s) = stats(&|r| Some(n as f64 / r.spawn_secs)) {
        report.result(&name, "live_spawn_rate", s, "processes/s");
    }
    if let Some(s) = stats(&|r| Some(n as f64 / r.release_secs)) {
        report.result(&name, "live_release_rate", s, "processes/s");
    }
    Ok(())
}

/// Spawns `n` processes on channels of `per` receivers each, waits until all wait,
/// reads the memory, releases them and checks their values.
fn once(rt: &tutti::Runtime, n: u64, per: u64) -> Result<LiveRun, String> {
    let count = usize::try_from(n).map_err(|_| "--live-n is too large")?;
    let per = usize::try_from(per).map_err(|_| "--live-per-channel is too large")?;
    STARTED.store(0, Ordering::Relaxed);
    ENDED.store(0, Ordering::Relaxed);
    SUM.store(0, Ordering::Relaxed);
    mem::release_free_memory();
    mem::reset_peak();
    let before = mem::current_rss();

    // The channels are made as the processes are spawned: each process gets its
    // receiving end (the last of a channel's processes the original, the others a
    // clone), and only the sending ends are kept, in `txs`.
    let txs = std::sync::Arc::new(std::sync::Mutex::new(Vec::with_capacity(
        count.div_ceil(per),
    )));
    let keep = txs.clone();
    let mut current = None;
    let start = Instant::now();
    let net = rt.spawn(par_for_each(0..count, move |i| {
        if i % per == 0 {
            let (tx, rx) = channel::<u32>();
            keep.lock().expect("live: the list of senders").push(tx);
            current = Some(rx);
        }
        let rx = if i % per == per - 1 || i == count - 1 {
            current.take()
        } else {
            current.clone()
        }
        .expect("live: a process without a channel");
        async move {
            STARTED.fetch_add(1, Ordering::Relaxed);
            if let Ok(v) = rx.recv().await {
                SUM.fetch_add(u64::from(v), Ordering::Relaxed);
                ENDED.fetch_add(1, Ordering::Relaxed);
            }
        }
    }));
    wait_for(&STARTED, n, "start")?;
    let spawn_secs = start.elapsed().as_secs_f64();
    let rss_per_process = match (before, mem::current_rss()) {
        (Some(b), Some(now)) => Some(now.saturating_sub(b) as f64 / n as f64),
        _ => None,
    };

    // Process `i` of channel `c` is handed `i` (receivers are served in arrival order,
    // so which process gets which value is not fixed; the sum is).
    let release = Instant::now();
    let txs = std::mem::take(&mut *txs.lock().expect("live: the list of senders"));
    let sender = rt.spawn(async move {
        let mut left = count;
        for tx in txs {
            for v in 0..per.min(left) {
                // `v < per`, which fits: `--live-per-channel` is at most 2^32 − 1.
                if tx.send(v as u32).await.is_err() {
                    return false;
                }
            }
            left = left.saturating_sub(per);
        }
        true
    });
    let sent = rt.block_on(sender);
    let ended = rt.block_on(net);
    let release_secs = release.elapsed().as_secs_f64();
    let peak_rss = mem::peak_rss().map(|p| p as f64);
    if !sent {
        return Err("live: a send failed (a process ended early)".into());
    }
    if let Err(d) = ended {
        return Err(format!("live: the processes deadlocked: {d}"));
    }
    let full = (count / per) as u64;
    let rest = (count % per) as u64;
    let sum_of = |k: u64| k * k.saturating_sub(1) / 2;
    let expected = full * sum_of(per as u64) + sum_of(rest);
    let (ended, sum) = (ENDED.load(Ordering::Relaxed), SUM.load(Ordering::Relaxed));
    if ended != n || sum != expected {
        return Err(format!(
            "live: {ended} of {n} processes got a value, summing to {sum} instead of {expected}"
        ));
    }
    Ok(LiveRun {
        rss_per_process,
        peak_rss,
        spawn_secs,
        release_secs,
    })
}

/// Waits until `counter` reaches `n`.
fn wait_for(counter: &AtomicU64, n: u64, what: &str) -> Result<(), String> {
    let give_up = Instant::now() + GIVE_UP;
    while counter.load(Ordering::Relaxed) < n {
        if Instant::now() > give_up {
            return Err(format!(
                "live: only {} of {n} processes did {what} within {GIVE_UP:?}",
                counter.load(Ordering::Relaxed)
            ));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_process_is_released_once_alone_or_sharing_a_channel() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for per in [1, 7, 1000] {
            let r = once(&rt, 5000, per).unwrap();
            assert!(r.spawn_secs > 0.0 && r.release_secs > 0.0);
        }
    }
}
