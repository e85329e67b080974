//! `tutti bench http`: the same hello-world hyper server on tutti and on
//! tokio's multi-thread runtime (same worker count), each loaded in turn by
//! the same closed-loop load generator on loopback.
//!
//! The server is hyper's HTTP/1.1 connection per accepted socket, one task
//! each, with hyper's timer set (so the header-read timeout a real server
//! keeps is armed per request on both runtimes); the answer is
//! `Hello, world!`. tutti's server hands its `net::TcpStream` to hyper as it
//! is (the `hyper` feature of the library); tokio's goes through hyper-util's
//! tokio adapters, as every tokio server does.
//!
//! The load generator is `wrk` when it is installed (`--generator wrk`
//! insists on it): `--connections` keep-alive connections, each sending its
//! next request as soon as the answer to the last is in, for `--seconds`.
//! Without wrk, a generator of this command does the same with one blocking
//! thread per connection, checking every answer. Both report requests per
//! second and the 50th and 99th percentiles of the latency. The runs of tutti
//! and tokio alternate, so a change in the machine's load affects both alike;
//! the report shows medians. Ratios per worker count `w`:
//! `throughput_tutti_over_tokio_http_w<w>` (higher is better for tutti) and
//! `p99_tutti_over_tokio_http_w<w>` (lower is better), and without a suffix
//! those of the largest worker count.
//!
//! Verified: before each server is loaded, one request checks the answer's
//! status and body; a run counts only if the generator saw no socket error,
//! no error status and at least one answer.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};

use crate::args::Counts;
use crate::measure::Progress;
use crate::report::{Report, Stats};

/// Measured runs when `--runs` is not given (each is `--seconds` of load per
/// server and worker count).
pub const RUNS: usize = 3;

/// The answer of the hello-world server.
const HELLO: &[u8] = b"Hello, world!";

/// Arguments of `tutti bench http`.
#[derive(Args, Debug)]
pub struct HttpArgs {
    /// Worker threads of both runtimes: one count, a list or a range.
    #[arg(long, default_value = "1,2", value_parser = crate::args::parse_worker_counts)]
    workers: Counts,
    /// Keep-alive connections of the load generator.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    connections: u64,
    /// Seconds of load per run (whole seconds: wrk counts in them).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=600))]
    seconds: u64,
    /// Threads of the load generator (wrk's `-t`; the command's own
    /// generator uses one thread per connection).
    #[arg(long = "generator-threads", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    generator_threads: u64,
    /// The load generator: wrk when installed (`auto`), wrk or nothing
    /// (`wrk`), or this command's own (`builtin`).
    #[arg(long, value_enum, default_value_t = Generator::Auto)]
    generator: Generator,
    #[command(flatten)]
    run: crate::measure::RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Which load generator drives the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Generator {
    /// wrk if `wrk` runs, else the built-in one.
    Auto,
    /// wrk (Debian package `wrk`).
    Wrk,
    /// The command's own closed-loop generator.
    Builtin,
}

/// What one load run measured.
#[derive(Clone, Copy, Debug)]
struct Load {
    requests_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    ok: bool,
}

mod on_tutti {
    use std::convert::Infallible;

    use http_body_util::Full;
    use hyper::body::{Bytes, Incoming};
    use hyper::{Request, Response};
    use tutti::hyper::TuttiTimer;
    use tutti::net::TcpListener;

    async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
        Ok(Response::new(Full::new(Bytes::from_static(super::HELLO))))
    }

    /// Serves `listener` until the runtime goes away.
    pub async fn serve(listener: TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            drop(tutti::spawn(async move {
                // A connection's error (a peer that vanished) ends only it.
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TuttiTimer)
                    .serve_connection(stream, hyper::service::service_fn(hello))
                    .await;
            }));
        }
    }
}

mod on_tokio {
    use std::convert::Infallible;

    use http_body_util::Full;
    use hyper::body::{Bytes, Incoming};
    use hyper::{Request, Response};
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tokio::net::TcpListener;

    async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
        Ok(Response::new(Full::new(Bytes::from_static(super::HELLO))))
    }

    /// Serves `listener` until the runtime goes away.
    pub async fn serve(listener: TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            drop(tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello))
                    .await;
            }));
        }
    }
}

/// The request every generator sends.
const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/// Reads one answer from `r`: whether it is `200 OK` with the hello body.
fn read_answer(r: &mut impl BufRead, line: &mut String) -> std::io::Result<bool> {
    line.clear();
    if r.read_line(line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let ok_status = line.starts_with("HTTP/1.1 200 ");
    let mut length = None;
    loop {
        line.clear();
        if r.read_line(line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let Some(n) = length.filter(|&n| n <= 1 << 20) else {
        return Ok(false);
    };
    let mut body = vec![0u8; n];
    r.read_exact(&mut body)?;
    Ok(ok_status && body == HELLO)
}

/// One request on a fresh connection: whether the server answers hello.
fn check_once(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    if s.write_all(REQUEST).is_err() {
        return false;
    }
    let mut r = BufReader::new(s);
    matches!(read_answer(&mut r, &mut String::new()), Ok(true))
}

/// Whether `wrk` runs here.
fn wrk_installed() -> bool {
    Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("wrk"))
}

/// A duration of wrk's output (`123.45us`, `1.20ms`, `2.00s`, `1.00m`) in µs.
fn wrk_micros(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(n * scale)
}

/// Reads wrk's `--latency` report.
fn parse_wrk(out: &str) -> Result<Load, String> {
    let (mut rps, mut p50, mut p99, mut errors) = (None, None, None, false);
    for line in out.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", n] => rps = n.parse::<f64>().ok(),
            ["50%", t] => p50 = wrk_micros(t),
            ["99%", t] => p99 = wrk_micros(t),
            ["Non-2xx", ..] => errors = true,
            ["Socket", "errors:", rest @ ..] => {
                // "connect 0, read 0, write 0, timeout 0"
                errors |= rest
                    .iter()
                    .filter_map(|w| w.trim_end_matches(',').parse::<u64>().ok())
                    .any(|n| n > 0);
            }
            _ => {}
        }
    }
    match (rps, p50, p99) {
        (Some(r), Some(a), Some(b)) => Ok(Load {
            requests_per_sec: r,
            p50_us: a,
            p99_us: b,
            ok: !errors && r > 0.0,
        }),
        _ => Err(format!("cannot read wrk's report:\n{out}")),
    }
}

/// Loads `addr` with wrk.
fn load_wrk(addr: SocketAddr, args: &HttpArgs) -> Result<Load, String> {
    let threads = args.generator_threads.min(args.connections);
    let out = Command::new("wrk")
        .arg(format!("-t{threads}"))
        .arg(format!("-c{}", args.connections))
        .arg(format!("-d{}s", args.seconds))
        .arg("--latency")
        .arg(format!("http://{addr}/"))
        .output()
        .map_err(|e| format!("cannot run wrk: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "wrk failed ({}): {text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    parse_wrk(&text)
}

/// Loads `addr` with the command's own generator: one thread per connection,
/// each sending a request as soon as the last is answered, until the time is
/// up; every answer is checked.
fn load_builtin(addr: SocketAddr, args: &HttpArgs) -> Result<Load, String> {
    let seconds = Duration::from_secs(args.seconds);
    let start = Instant::now();
    let end = start + seconds;
    let threads: Vec<_> = (0..args.connections)
        .map(|_| {
            std::thread::spawn(
                move || -> Result<(hdrhistogram::Histogram<u64>, bool), String> {
                    let mut h =
                        hdrhistogram::Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
                    let s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
                    let _ = s.set_nodelay(true);
                    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut w = s.try_clone().map_err(|e| e.to_string())?;
                    let mut r = BufReader::new(s);
                    let mut line = String::new();
                    let mut ok = true;
                    while Instant::now() < end {
                        let t = Instant::now();
                        w.write_all(REQUEST).map_err(|e| format!("write: {e}"))?;
                        ok &= read_answer(&mut r, &mut line).map_err(|e| format!("read: {e}"))?;
                        let us = t.elapsed().as_micros().max(1) as u64;
                        h.record(us).map_err(|e| e.to_string())?;
                    }
                    Ok((h, ok))
                },
            )
        })
        .collect();
    let mut all = hdrhistogram::Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
    let mut ok = true;
    for t in threads {
        let (h, fine) = t
            .join()
            .map_err(|_| "a generator thread panicked".to_string())??;
        all.add(&h).map_err(|e| e.to_string())?;
        ok &= fine;
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok(Load {
        requests_per_sec: all.len() as f64 / elapsed,
        p50_us: all.value_at_quantile(0.50) as f64,
        p99_us: all.value_at_quantile(0.99) as f64,
        ok: ok && !all.is_empty(),
    })
}

/// Runs `tutti bench http`.
pub fn run(args: &HttpArgs) -> Result<Report, String> {
    let wrk = match args.generator {
        Generator::Builtin => false,
        Generator::Wrk if !wrk_installed() => {
            return Err("wrk is not installed (Debian: apt-get install wrk)".into())
        }
        Generator::Wrk => true,
        Generator::Auto => wrk_installed(),
    };
    let load = |addr| {
        if wrk {
            load_wrk(addr, args)
        } else {
            load_builtin(addr, args)
        }
    };
    let plan = args.run.plan();
    let mut report = Report::new("http");
    report
        .param("generator", if wrk { "wrk" } else { "builtin" })
        .param("connections", args.connections)
        .param("seconds", args.seconds)
        .param("generator_threads", args.generator_threads)
        .param("workers", args.workers.to_string())
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);
    let progress = Progress::new(2 * args.workers.0.len() * plan.total(), args.json);
    let largest = args.workers.max();
    for &w in &args.workers.0 {
        let (rt, tokio_rt) = super::net_runtimes(w)?;
        let tutti_addr = rt.block_on(async {
            let l = tutti::net::TcpListener::bind("127.0.0.1:0")?;
            let addr = l.local_addr()?;
            drop(tutti::spawn(on_tutti::serve(l)));
            std::io::Result::Ok(addr)
        });
        let tutti_addr = tutti_addr.map_err(|e| format!("tutti's server: {e}"))?;
        let tokio_addr = tokio_rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let addr = l.local_addr()?;
            drop(tokio::spawn(on_tokio::serve(l)));
            std::io::Result::Ok(addr)
        });
        let tokio_addr = tokio_addr.map_err(|e| format!("tokio's server: {e}"))?;

        let addrs = [tutti_addr, tokio_addr];
        let mut loads: [Vec<Load>; 2] = [Vec::new(), Vec::new()];
        let mut ok = [true; 2];
        for (i, &addr) in addrs.iter().enumerate() {
            ok[i] &= check_once(addr);
        }
        progress.stage(&format!("{w} workers: tutti and tokio"));
        for round in 0..plan.total() {
            for (i, &addr) in addrs.iter().enumerate() {
                let l = load(addr)?;
                ok[i] &= l.ok;
                if round >= plan.warmup {
                    loads[i].push(l);
                }
                progress.tick();
            }
        }
        let mut medians = [(0.0, 0.0); 2];
        for (i, imp) in ["tutti", "tokio"].into_iter().enumerate() {
            report.verify(ok[i]);
            let pick = |f: fn(&Load) -> f64| loads[i].iter().map(f).collect::<Vec<f64>>();
            let metrics: [(&str, Vec<f64>, &str); 3] = [
                ("requests", pick(|l| l.requests_per_sec), "requests/s"),
                ("p50", pick(|l| l.p50_us), "µs"),
                ("p99", pick(|l| l.p99_us), "µs"),
            ];
            for (metric, samples, unit) in metrics {
                if let Some(s) = Stats::of(&samples) {
                    match metric {
                        "requests" => medians[i].0 = s.median,
                        "p99" => medians[i].1 = s.median,
                        _ => {}
                    }
                    report.result(imp, &format!("{metric}_w{w}"), s, unit);
                }
            }
        }
        let throughput = medians[0].0 / medians[1].0;
        let p99 = medians[0].1 / medians[1].1;
        report.ratio(
            &format!("throughput_tutti_over_tokio_http_w{w}"),
            throughput,
        );
        report.ratio(&format!("p99_tutti_over_tokio_http_w{w}"), p99);
        if w == largest {
            report.ratio("throughput_tutti_over_tokio_http", throughput);
            report.ratio("p99_tutti_over_tokio_http", p99);
        }
    }
    progress.finish();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrks_report_is_read() {
        let out = "Running 1s test @ http://127.0.0.1:1/\n  1 threads and 4 connections\n  \
                   Latency Distribution\n     50%   61.00us\n     75%   70.00us\n     \
                   90%   80.00us\n     99%    1.50ms\n  40000 requests in 1.00s, 3.40MB read\n\
                   Requests/sec:  39990.12\nTransfer/sec:      3.40MB\n";
        let l = parse_wrk(out).unwrap();
        assert_eq!(l.requests_per_sec, 39990.12);
        assert_eq!(l.p50_us, 61.0);
        assert_eq!(l.p99_us, 1500.0);
        assert!(l.ok);
        let bad = format!("{out}  Socket errors: connect 0, read 3, write 0, timeout 0\n");
        assert!(!parse_wrk(&bad).unwrap().ok);
        let non2xx = format!("{out}  Non-2xx or 3xx responses: 7\n");
        assert!(!parse_wrk(&non2xx).unwrap().ok);
        assert!(parse_wrk("wrk: connection refused").is_err());
    }

    #[test]
    fn both_servers_answer_hello_and_the_builtin_generator_checks_them() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let a = rt.block_on(async {
            let l = tutti::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            drop(tutti::spawn(on_tutti::serve(l)));
            addr
        });
        let b = tokio_rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            drop(tokio::spawn(on_tokio::serve(l)));
            addr
        });
        let args = HttpArgs {
            workers: Counts(vec![2]),
            connections: 2,
            seconds: 1,
            generator_threads: 1,
            generator: Generator::Builtin,
            run: crate::measure::RunOpts { runs: 1, warmup: 0 },
            json: true,
        };
        for addr in [a, b] {
            assert!(check_once(addr));
            let l = load_builtin(addr, &args).unwrap();
            assert!(l.ok && l.requests_per_sec > 0.0 && l.p50_us <= l.p99_us);
        }
    }
}
