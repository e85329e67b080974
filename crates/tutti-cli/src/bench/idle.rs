//! `tutti bench idle`: how much CPU idle runtimes, worlds and servers burn.
//!
//! Each case runs alone in a process of its own (this binary, started with the
//! hidden `--case`), so that no thread of an earlier case is still winding
//! down: it builds its runtime with `--workers` workers, makes sure every
//! worker (and every connection, every rank) has started and done its part,
//! then sits idle for `--seconds` while it compares process CPU time (all
//! threads, user + system, `CLOCK_PROCESS_CPUTIME_ID`) with wall time. The
//! result is in percent of one core.
//!
//! | case          | tutti                                   | peer                                   |
//! |---------------|-----------------------------------------|----------------------------------------|
//! | `runtime`     | an idle runtime                         | tokio's multi-thread runtime; rayon    |
//! | `world`       | a 2-process shared-memory world (`tutti launch`), one location per rank waiting; per process | tokio's idle runtime |
//! | `rpc`         | an RPC endpoint with one published object and one connected client that made a call | a tokio TCP echo server with one connected client that made a round trip |
//!
//! Ratios are `cpu_tutti_over_tokio_<case>` (ours ÷ peer; 1.0 is parity).
//! Idle peers use almost no CPU, so the ratios divide two small numbers: a
//! few wake-ups per second more show as a large ratio.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Args;

use crate::measure::{process_cpu_time, Progress};
use crate::report::{Report, Stats};

/// Arguments of `tutti bench idle`.
#[derive(Args, Debug)]
pub struct IdleArgs {
    /// Length of the idle window of each case, in seconds.
    #[arg(long, default_value_t = 3.0, value_parser = crate::parse_seconds)]
    seconds: f64,
    /// Workers of each runtime (of each rank's runtime in the world case).
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = crate::default_workers(), value_parser = crate::parse_workers)]
    workers: usize,
    /// Internal: the one case a child process measures.
    #[arg(long, hide = true)]
    case: Option<String>,
    /// Internal: where a child writes its result.
    #[arg(long, hide = true)]
    out: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// How long the start-up job waits for every worker to join in.
const START_TIMEOUT: Duration = Duration::from_secs(5);

/// The cases, in the order they run: (child case, implementation, case of
/// the ratio).
const CASES: [(&str, &str, &str); 6] = [
    ("tutti-runtime", "tutti runtime", "runtime"),
    ("tokio-runtime", "tokio runtime", "runtime"),
    ("rayon-runtime", "rayon pool", "runtime"),
    ("tutti-world", "tutti shm world (per process)", "world"),
    ("tutti-rpc", "tutti RPC server + client", "rpc"),
    ("tokio-tcp", "tokio TCP server + client", "rpc"),
];

/// CPU use of the process over `window`, in percent of one core.
fn idle_cpu_percent(window: Duration) -> Option<f64> {
    let cpu0 = process_cpu_time()?;
    let wall0 = Instant::now();
    std::thread::sleep(window);
    let cpu1 = process_cpu_time()?;
    let wall = wall0.elapsed().as_secs_f64();
    (wall > 0.0).then(|| 100.0 * (cpu1 - cpu0).as_secs_f64() / wall)
}

/// A job every worker of a `w`-worker pool must take part in: `w` pieces
/// that each wait until all `w` have started, so no worker can run two and
/// each must be run by a different thread. The wait gives up after
/// [`START_TIMEOUT`] rather than hang; the answer is whether `w` distinct
/// threads ran a piece.
fn all_workers_job<S: Fn(&(dyn Fn() + Sync))>(w: usize, spawn_all: S) -> bool {
    let arrived = AtomicUsize::new(0);
    let threads = Mutex::new(HashSet::new());
    let deadline = Instant::now() + START_TIMEOUT;
    spawn_all(&|| {
        if let Ok(mut t) = threads.lock() {
            t.insert(std::thread::current().id());
        }
        arrived.fetch_add(1, Ordering::AcqRel);
        while arrived.load(Ordering::Acquire) < w && Instant::now() < deadline {
            std::thread::yield_now();
        }
    });
    threads.into_inner().map_or(0, |t| t.len()) == w
}

fn tutti_runtime(w: usize) -> Result<tutti::Runtime, String> {
    tutti::Runtime::builder()
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))
}

fn tokio_runtime(w: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(w)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime with {w} workers: {e}"))
}

/// Every tutti worker runs a piece of a job first.
fn start_tutti(rt: &tutti::Runtime, w: usize) -> Result<(), String> {
    let started = all_workers_job(w, |piece| {
        rt.install(|| {
            tutti::scope(|s| {
                for _ in 0..w {
                    s.spawn(|_| piece());
                }
            })
        })
    });
    started
        .then_some(())
        .ok_or_else(|| format!("not all {w} tutti workers took part in the start-up job"))
}

/// tokio starts its workers when built; a round of tiny tasks makes sure they
/// have all been through their run loop.
fn start_tokio(rt: &tokio::runtime::Runtime, w: usize) -> Result<(), String> {
    let ok = rt.block_on(async {
        let handles: Vec<_> = (0..4 * w).map(|i| tokio::spawn(async move { i })).collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await.unwrap_or(0);
        }
        sum == (0..4 * w).sum::<usize>()
    });
    ok.then_some(())
        .ok_or_else(|| "tokio's start-up tasks did not all run".to_string())
}

fn measure(window: Duration) -> Result<f64, String> {
    idle_cpu_percent(window).ok_or_else(|| "cannot read the process's CPU time".into())
}

fn tutti_runtime_case(w: usize, window: Duration) -> Result<f64, String> {
    let rt = tutti_runtime(w)?;
    start_tutti(&rt, w)?;
    measure(window)
}

fn tokio_runtime_case(w: usize, window: Duration) -> Result<f64, String> {
    let rt = tokio_runtime(w)?;
    start_tokio(&rt, w)?;
    let pct = measure(window);
    rt.shutdown_timeout(Duration::from_secs(1));
    pct
}

fn rayon_runtime_case(w: usize, window: Duration) -> Result<f64, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(w)
        .build()
        .map_err(|e| format!("cannot build a rayon pool with {w} threads: {e}"))?;
    let started = all_workers_job(w, |piece| {
        pool.broadcast(|_| piece());
    });
    if !started {
        return Err(format!(
            "not all {w} rayon threads took part in the start-up job"
        ));
    }
    measure(window)
}

/// An RPC endpoint publishing one object and a client endpoint with a proxy
/// that has called it once (so its connection is open), both on one tutti
/// runtime; idle while the connection stays open.
fn tutti_rpc_case(w: usize, window: Duration) -> Result<f64, String> {
    use super::rpc::{Acc, Add};
    use tutti::rpc::{Rpc, Vendor};
    let rt = tutti_runtime(w)?;
    start_tutti(&rt, w)?;
    let e = |e: tutti::rpc::RpcError| e.to_string();
    let (server, client, proxy) = rt.install(|| -> Result<_, String> {
        let server = Rpc::builder().cookie("idle").build().map_err(e)?;
        let client = Rpc::builder()
            .cookie("idle")
            .client_only()
            .build()
            .map_err(e)?;
        let url = server
            .publish("bench/idle/acc", Acc::default(), Vendor::Sequential)
            .map_err(e)?;
        let proxy = client.proxy::<Acc>(&url.to_string()).map_err(e)?;
        Ok((server, client, proxy))
    })?;
    let p = proxy.clone();
    let first = rt.block_on(async move { p.call(Add(7)).await });
    if first.map_err(e)? != 7 {
        return Err("the RPC call before the idle window gave a wrong total".into());
    }
    let pct = measure(window)?;
    // The connection survived the idle window.
    let p = proxy.clone();
    let second = rt.block_on(async move { p.call(Add(1)).await });
    if second.map_err(e)? != 8 {
        return Err("the RPC call after the idle window gave a wrong total".into());
    }
    drop((proxy, client, server));
    Ok(pct)
}

/// A tokio TCP echo server (one task per connection) with one connected
/// client that made a round trip; idle while the connection stays open.
fn tokio_tcp_case(w: usize, window: Duration) -> Result<f64, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio_runtime(w)?;
    start_tokio(&rt, w)?;
    let io = |e: std::io::Error| format!("tokio TCP: {e}");
    let mut client = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let _ = s.set_nodelay(true);
                tokio::spawn(async move {
                    let mut b = [0u8; 64];
                    while let Ok(n) = s.read(&mut b).await {
                        if n == 0 || s.write_all(&b[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let s = tokio::net::TcpStream::connect(addr).await.map_err(io)?;
        s.set_nodelay(true).map_err(io)?;
        Ok::<_, String>(s)
    })?;
    let round_trip = |rt: &tokio::runtime::Runtime, c: &mut tokio::net::TcpStream| {
        rt.block_on(async {
            c.write_all(b"ping").await.map_err(io)?;
            let mut b = [0u8; 4];
            c.read_exact(&mut b).await.map_err(io)?;
            (&b == b"ping")
                .then_some(())
                .ok_or_else(|| "the tokio echo came back wrong".to_string())
        })
    };
    round_trip(&rt, &mut client)?;
    let pct = measure(window)?;
    round_trip(&rt, &mut client)?;
    drop(client);
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(pct)
}

/// One rank of the idle world (started by `tutti::world::launch`): every rank
/// meets the others at a barrier, then its one location waits for a blocking
/// thread that measures the idle window, and all meet again. Each rank
/// writes its percentage to `out.<rank>`.
fn world_rank(w: usize, window: Duration, out: &Path) -> Result<(), String> {
    let world = tutti::world::World::builder()
        .workers(w)
        .locations(1)
        .build()
        .map_err(|e| format!("cannot build the world: {e}"))?;
    let rank = world.rank();
    let got = world.run(move |loc| async move {
        loc.barrier().await;
        let pct = tutti::spawn_blocking(move || idle_cpu_percent(window)).await;
        // Every rank's window is over before any rank ends.
        loc.barrier().await;
        pct
    });
    let text = match got.first().copied().flatten() {
        Some(p) => p.to_string(),
        None => "fail: cannot read the process's CPU time".into(),
    };
    let path = rank_file(out, rank);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn rank_file(out: &Path, rank: usize) -> PathBuf {
    let mut p = out.as_os_str().to_owned();
    p.push(format!(".{rank}"));
    PathBuf::from(p)
}

/// The world case, from the parent: two ranks launched as one shared-memory
/// system; the mean of their percentages.
fn tutti_world_case(w: usize, seconds: f64, out: &Path) -> Result<f64, String> {
    let mut c = me(w, seconds)?;
    c.args(["--case", "world-rank", "--out"]).arg(out);
    let statuses = tutti::world::launch(2, c).map_err(|e| format!("cannot launch: {e}"))?;
    let mut sum = 0.0;
    for (rank, st) in statuses.iter().enumerate() {
        let path = rank_file(out, rank);
        let text = std::fs::read_to_string(&path);
        let _ = std::fs::remove_file(&path);
        if !st.success() {
            return Err(format!("rank {rank} of the idle world failed: {st}"));
        }
        sum += parse_result(&text.map_err(|e| format!("{}: {e}", path.display()))?)?;
    }
    Ok(sum / statuses.len() as f64)
}

/// This binary, as `tutti bench idle` with the run's settings.
fn me(w: usize, seconds: f64) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let mut c = Command::new(exe);
    c.args(["bench", "idle", "--workers", &w.to_string(), "--seconds"])
        .arg(seconds.to_string());
    Ok(c)
}

/// A child's result: a percentage, or `fail: why`.
fn parse_result(text: &str) -> Result<f64, String> {
    let t = text.trim();
    match t.strip_prefix("fail: ") {
        Some(why) => Err(why.to_string()),
        None => t
            .parse::<f64>()
            .map_err(|_| format!("a child reported {t:?}")),
    }
}

/// Runs one case in a child process and reads its percentage.
fn run_case(case: &str, w: usize, seconds: f64) -> Result<f64, String> {
    let out = std::env::temp_dir().join(format!("tutti-bench-idle-{}-{case}", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let result = if case == "tutti-world" {
        tutti_world_case(w, seconds, &out)
    } else {
        let mut c = me(w, seconds)?;
        c.args(["--case", case, "--out"]).arg(&out);
        match c.status() {
            Ok(st) if st.success() => std::fs::read_to_string(&out)
                .map_err(|e| format!("{}: {e}", out.display()))
                .and_then(|t| parse_result(&t)),
            Ok(st) => Err(format!("the child measuring {case} failed: {st}")),
            Err(e) => Err(format!("cannot start the child measuring {case}: {e}")),
        }
    };
    let _ = std::fs::remove_file(&out);
    result
}

/// A child's part: measures `case` and writes the result to `out`.
fn child(case: &str, w: usize, window: Duration, out: &Path) -> Result<(), String> {
    let result = match case {
        "world-rank" => return world_rank(w, window, out),
        "tutti-runtime" => tutti_runtime_case(w, window),
        "tokio-runtime" => tokio_runtime_case(w, window),
        "rayon-runtime" => rayon_runtime_case(w, window),
        "tutti-rpc" => tutti_rpc_case(w, window),
        "tokio-tcp" => tokio_tcp_case(w, window),
        other => return Err(format!("unknown idle case {other:?}")),
    };
    let text = match result {
        Ok(p) => p.to_string(),
        Err(why) => format!("fail: {why}"),
    };
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))
}

/// Runs `tutti bench idle`.
pub fn run(args: &IdleArgs) -> Result<Report, String> {
    let w = args.workers;
    let window = Duration::from_secs_f64(args.seconds);
    if let Some(case) = &args.case {
        let out = args
            .out
            .as_deref()
            .ok_or("--case needs --out (an internal option)")?;
        child(case, w, window, out)?;
        // The parent reports; a child prints nothing.
        std::process::exit(0);
    }
    let mut report = Report::new("idle");
    report.param("seconds", args.seconds).param("workers", w);

    let progress = Progress::new(CASES.len(), args.json);
    let mut measured: Vec<Option<f64>> = Vec::new();
    for (case, name, _) in CASES {
        progress.stage(name);
        let got = match run_case(case, w, args.seconds) {
            Ok(p) => Some(p),
            Err(why) => {
                eprintln!("tutti bench idle: {name}: {why}");
                None
            }
        };
        measured.push(got);
        progress.tick();
    }
    progress.finish();

    for ((_, name, _), got) in CASES.iter().zip(&measured) {
        match got {
            Some(p) => report.result(name, "idle_cpu", Stats::single(*p), "% of one core"),
            None => report.verify(false),
        }
    }
    // CPU time over the same wall window: ours ÷ peer. Infinite or NaN when
    // the peer used no measurable CPU at all.
    let at = |case: &str| {
        CASES
            .iter()
            .position(|c| c.0 == case)
            .and_then(|i| measured[i])
    };
    let mut ratio = |name: &str, ours: &str, peer: &str| {
        if let (Some(t), Some(k)) = (at(ours), at(peer)) {
            report.ratio(name, t / k);
        }
    };
    ratio(
        "cpu_tutti_over_tokio_runtime",
        "tutti-runtime",
        "tokio-runtime",
    );
    ratio(
        "cpu_tutti_over_rayon_runtime",
        "tutti-runtime",
        "rayon-runtime",
    );
    ratio("cpu_tutti_over_tokio_world", "tutti-world", "tokio-runtime");
    ratio("cpu_tutti_over_tokio_rpc", "tutti-rpc", "tokio-tcp");
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_validated() {
        assert!(crate::parse_seconds("2").is_ok());
        assert!(crate::parse_seconds("0").is_err());
        assert!(crate::parse_seconds("-1").is_err());
        assert!(crate::parse_seconds("nan").is_err());
        assert!(crate::parse_seconds("x").is_err());
    }

    #[test]
    fn the_startup_job_reaches_every_worker() {
        let rt = tutti_runtime(2).unwrap();
        assert!(start_tutti(&rt, 2).is_ok());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert!(all_workers_job(2, |piece| {
            pool.broadcast(|_| piece());
        }));
    }

    #[test]
    fn idle_measurement_is_sane() {
        let p = idle_cpu_percent(Duration::from_millis(20)).unwrap();
        assert!(p >= 0.0);
    }

    #[test]
    fn child_results_are_parsed() {
        assert_eq!(parse_result("0.25\n"), Ok(0.25));
        assert_eq!(parse_result("fail: no clock"), Err("no clock".to_string()));
        assert!(parse_result("").is_err());
        assert_eq!(rank_file(Path::new("/tmp/x"), 1), PathBuf::from("/tmp/x.1"));
    }

    #[test]
    fn the_rpc_and_tcp_cases_run() {
        assert!(tutti_rpc_case(2, Duration::from_millis(20)).is_ok());
        assert!(tokio_tcp_case(2, Duration::from_millis(20)).is_ok());
    }
}
