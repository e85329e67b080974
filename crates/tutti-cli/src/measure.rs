//! Timing: warm-up plus repeated runs, process CPU time, and progress bars.
//!
//! Every benchmark measures the same way: [`repeat`] runs a measurement
//! `warmup` times without recording it, then `runs` times recording each
//! run's wall time, and reports whether every run (warm-up included) passed
//! its own check. Each run times only its own critical section (see
//! [`timed`]), so preparing inputs is never counted.
//!
//! [`process_cpu_time`] reads the CPU time of the whole process (all
//! threads, user + system) for the idle benchmark.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// The `--runs` and `--warmup` options shared by every benchmark.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct RunOpts {
    /// Measured runs of each measurement; the report shows their median,
    /// minimum and maximum.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub runs: u64,
    /// Unmeasured warm-up runs before the measured ones.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=1000))]
    pub warmup: u64,
}

impl RunOpts {
    /// The repetition plan these options ask for. (A command whose default
    /// is not 5 runs has its own `RUNS`, which `main` makes the default.)
    pub fn plan(&self) -> Plan {
        Plan {
            warmup: self.warmup as usize,
            runs: self.runs as usize,
        }
    }
}

/// How often to repeat a measurement.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Unrecorded runs before the recorded ones.
    pub warmup: usize,
    /// Recorded runs; the report shows their median.
    pub runs: usize,
}

impl Plan {
    /// Total number of runs, warm-up included.
    pub fn total(&self) -> usize {
        self.warmup + self.runs
    }
}

/// The outcome of one run: its wall time and whether its result checked out.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// Time of the critical section.
    pub elapsed: Duration,
    /// Whether the run's own verification passed.
    pub ok: bool,
}

/// The recorded runs of one measurement.
#[derive(Clone, Debug, Default)]
pub struct Measurement {
    /// Wall time of each recorded run, in seconds.
    pub secs: Vec<f64>,
    /// Whether every run, warm-up included, verified.
    pub ok: bool,
}

impl Measurement {
    /// The samples mapped through `f` (e.g. seconds to milliseconds, or to
    /// a throughput).
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Vec<f64> {
        self.secs.iter().map(|&s| f(s)).collect()
    }

    /// Nanoseconds per operation when each run did `ops` of them (NaN
    /// statistics if nothing was recorded).
    pub fn ns_per(&self, ops: u64) -> crate::report::Stats {
        use crate::report::Stats;
        Stats::of(&self.map(|s| s * 1e9 / ops as f64)).unwrap_or(Stats::single(f64::NAN))
    }

    /// Median wall time in seconds (NaN if nothing was recorded).
    pub fn median_secs(&self) -> f64 {
        crate::report::median(&self.secs).unwrap_or(f64::NAN)
    }
}

/// Runs `one_run` `plan.warmup` times unrecorded, then `plan.runs` times
/// recorded, ticking `progress` once per run.
pub fn repeat(plan: Plan, progress: &Progress, mut one_run: impl FnMut() -> Run) -> Measurement {
    let mut m = Measurement {
        secs: Vec::with_capacity(plan.runs),
        ok: true,
    };
    for i in 0..plan.total() {
        let run = one_run();
        m.ok &= run.ok;
        if i >= plan.warmup {
            m.secs.push(run.elapsed.as_secs_f64());
        }
        progress.tick();
    }
    m
}

/// Runs `f` and returns its result with its wall time.
#[inline]
pub fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let start = Instant::now();
    let r = f();
    (r, start.elapsed())
}

/// Runs `f`, which checks its own result, and times it.
pub fn checked(f: impl FnOnce() -> bool) -> Run {
    let (ok, elapsed) = timed(f);
    Run { elapsed, ok }
}

/// CPU time consumed so far by every thread of this process, user plus
/// system, from `CLOCK_PROCESS_CPUTIME_ID`; falls back to `getrusage`.
pub fn process_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc == 0 {
        return Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
    }
    rusage_cpu_time()
}

/// User plus system CPU time of this process from `getrusage(RUSAGE_SELF)`.
pub fn rusage_cpu_time() -> Option<Duration> {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return None;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// Fails with a clear message when a run would need more memory than the
/// machine has available (`MemAvailable` of `/proc/meminfo`; unchecked where
/// that is unknown), instead of dying in the allocator or the OOM killer.
pub fn check_memory(bytes: u128, what: &str) -> Result<(), String> {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
    match available {
        Some(avail) if bytes > avail => Err(format!(
            "{what} needs about {:.1} GiB of memory, but only {:.1} GiB is available",
            bytes as f64 / (1u64 << 30) as f64,
            avail as f64 / (1u64 << 30) as f64
        )),
        _ => Ok(()),
    }
}

/// A progress bar on stderr, shown only when stdout is a terminal and the
/// output is not JSON; otherwise every method does nothing.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar of `total` steps, or a silent one when `json` is set or stdout
    /// is not a terminal.
    pub fn new(total: usize, json: bool) -> Progress {
        if json || !std::io::stdout().is_terminal() || total == 0 {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new(total as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
        {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    /// Says what is being measured now.
    pub fn stage(&self, msg: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg.to_string());
        }
    }

    /// One step done.
    pub fn tick(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Removes the bar before the table is printed.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Runs the measurements of `impls` in turn, round by round (warm-up rounds
/// unrecorded), so that a change in the machine's load affects them alike.
pub fn interleaved(
    plan: Plan,
    progress: &Progress,
    impls: &mut [&mut dyn FnMut() -> Run],
) -> Vec<Measurement> {
    let mut ms: Vec<Measurement> = impls
        .iter()
        .map(|_| Measurement {
            secs: Vec::with_capacity(plan.runs),
            ok: true,
        })
        .collect();
    for i in 0..plan.total() {
        for (f, m) in impls.iter_mut().zip(ms.iter_mut()) {
            let run = f();
            m.ok &= run.ok;
            if i >= plan.warmup {
                m.secs.push(run.elapsed.as_secs_f64());
            }
            progress.tick();
        }
    }
    ms
}

/// Busy computation for `d` that calls nothing else (no MPI, no world): the
/// work a transfer is overlapped with.
pub fn compute(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    while start.elapsed() < d {
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
    }
    std::hint::black_box(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_records_only_the_measured_runs() {
        let mut calls = 0;
        let m = repeat(Plan { warmup: 2, runs: 3 }, &Progress::new(5, true), || {
            calls += 1;
            Run {
                elapsed: Duration::from_millis(calls),
                ok: true,
            }
        });
        assert_eq!(calls, 5);
        assert_eq!(m.secs, vec![0.003, 0.004, 0.005]);
        assert!(m.ok);
        assert_eq!(m.median_secs(), 0.004);
    }

    #[test]
    fn a_failed_warmup_fails_the_measurement() {
        let mut first = true;
        let m = repeat(Plan { warmup: 1, runs: 1 }, &Progress::new(2, true), || {
            let ok = !first;
            first = false;
            Run {
                elapsed: Duration::ZERO,
                ok,
            }
        });
        assert!(!m.ok);
    }

    #[test]
    fn absurd_memory_needs_are_refused() {
        assert!(check_memory(1 << 20, "a small run").is_ok());
        if std::path::Path::new("/proc/meminfo").exists() {
            let e = check_memory(u128::MAX, "this run").unwrap_err();
            assert!(e.contains("this run needs"));
        }
    }

    #[test]
    fn cpu_time_advances_with_work() {
        let before = process_cpu_time().unwrap();
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        let after = process_cpu_time().unwrap();
        assert!(after > before);
        assert!(rusage_cpu_time().is_some());
    }
}
