//! `tutti bench shm`: an 8-byte message bouncing between two processes of one
//! host, `--round-trips` round trips, reported per one-way message.
//!
//! * **tutti**: two processes launched as one named shared-memory system
//!   (`tutti::world::launch`), one location and one worker each; rank 0 sends
//!   8 bytes (`send_slice`) and waits for the echo (`recv_blocking`), rank 1
//!   echoes. This is the whole world path: aggregation buffer, mailbox ring,
//!   the receiver's delivery into the location's inbox.
//! * **uds**: a Unix domain stream socket between this process and a child
//!   that echoes (blocking reads and writes of 8 bytes).
//! * **pipe**: two pipes (the child's stdin and stdout), same protocol.
//!
//! * **iceoryx2** (0.10): two publish-subscribe services of `u64` (ping and
//!   pong) between this process and a child, both polling `receive()` (spin,
//!   then yield), the pattern of iceoryx2's own latency benchmark.
//!
//! The processes are started anew for every run (outside the timed section).

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;

use crate::measure::{Measurement, Progress, Run, RunOpts};
use crate::report::Report;
use tutti::world::{LocationId, World};

/// Arguments of `tutti bench shm`.
#[derive(Args, Debug)]
pub struct ShmArgs {
    /// Round trips per measurement.
    #[arg(long = "round-trips", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    messages: u64,
    #[command(flatten)]
    run: RunOpts,
    /// Internal: the role of a child process (`tutti`, `uds`, `pipe`).
    #[arg(long, hide = true)]
    role: Option<String>,
    /// Internal: where a child writes its result, or the socket it connects to.
    #[arg(long, hide = true)]
    path: Option<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

const WARMUP: u64 = 1000;

fn me() -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let mut c = Command::new(exe);
    c.args(["bench", "shm"]);
    Ok(c)
}

/// A child's part of the tutti ping-pong; rank 0 writes the elapsed
/// nanoseconds of `n` round trips to `out`, or "fail".
fn tutti_child(n: u64, out: &str) -> Result<(), String> {
    let world = World::builder()
        .locations(1)
        .workers(1)
        .aggregation(1)
        .build()
        .map_err(|e| e.to_string())?;
    let n_all = n;
    let results = world.run(move |loc| async move {
        let peer = LocationId::new(1 - loc.rank() as u32);
        let mut ok = true;
        let mut elapsed = Duration::ZERO;
        if loc.rank() == 0 {
            let mut t = Instant::now();
            for i in 0..WARMUP + n_all {
                if i == WARMUP {
                    t = Instant::now();
                }
                if loc.send_slice(peer, &i.to_le_bytes()).is_err() {
                    return (false, elapsed);
                }
                let d = loc.recv().await;
                ok &= d.bytes() == Some(&i.to_le_bytes()[..]);
            }
            elapsed = t.elapsed();
            ok &= loc.send_slice(peer, &u64::MAX.to_le_bytes()).is_ok();
        } else {
            loop {
                let d = loc.recv().await;
                let mut b = [0u8; 8];
                let Some(bytes) = d.bytes().filter(|b| b.len() == 8) else {
                    return (false, elapsed);
                };
                b.copy_from_slice(bytes);
                drop(d);
                if b == u64::MAX.to_le_bytes() {
                    break;
                }
                if loc.send_slice(peer, &b).is_err() {
                    return (false, elapsed);
                }
            }
        }
        (ok, elapsed)
    });
    let (ok, elapsed) = results[0];
    if world.rank() == 0 {
        let text = if ok {
            elapsed.as_nanos().to_string()
        } else {
            "fail".into()
        };
        std::fs::write(out, text).map_err(|e| format!("{out}: {e}"))?;
    }
    Ok(())
}

fn tutti_run(n: u64) -> Run {
    let out = std::env::temp_dir().join(format!("tutti-bench-shm-{}", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let result = (|| {
        let mut c = me()?;
        c.args(["--role", "tutti", "--round-trips", &n.to_string(), "--path"])
            .arg(&out);
        let st = tutti::world::launch(2, c).map_err(|e| e.to_string())?;
        if !st.iter().all(|s| s.success()) {
            return Err(format!("a process failed: {st:?}"));
        }
        let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
        text.trim().parse::<u64>().map_err(|_| text)
    })();
    let _ = std::fs::remove_file(&out);
    match result {
        Ok(ns) => Run {
            elapsed: Duration::from_nanos(ns),
            ok: true,
        },
        Err(e) => {
            eprintln!("tutti bench shm: {e}");
            Run {
                elapsed: Duration::ZERO,
                ok: false,
            }
        }
    }
}

/// Echoes 8-byte messages on `r`/`w` until end of input.
fn echo(mut r: impl Read, mut w: impl Write) -> Result<(), String> {
    let mut b = [0u8; 8];
    loop {
        match r.read_exact(&mut b) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
        w.write_all(&b).map_err(|e| e.to_string())?;
        w.flush().map_err(|e| e.to_string())?;
    }
}

/// `n` timed round trips (after a warm-up) over `r`/`w`.
fn ping(mut r: impl Read, mut w: impl Write, n: u64) -> Result<(Duration, bool), String> {
    let mut ok = true;
    let mut b = [0u8; 8];
    let mut round = |i: u64, ok: &mut bool| -> Result<(), String> {
        w.write_all(&i.to_le_bytes()).map_err(|e| e.to_string())?;
        w.flush().map_err(|e| e.to_string())?;
        r.read_exact(&mut b).map_err(|e| e.to_string())?;
        *ok &= b == i.to_le_bytes();
        Ok(())
    };
    for i in 0..WARMUP {
        round(i, &mut ok)?;
    }
    let t = Instant::now();
    for i in 0..n {
        round(i, &mut ok)?;
    }
    Ok((t.elapsed(), ok))
}

fn finish(r: Result<(Duration, bool), String>, what: &str) -> Run {
    match r {
        Ok((elapsed, ok)) => Run { elapsed, ok },
        Err(e) => {
            eprintln!("tutti bench shm ({what}): {e}");
            Run {
                elapsed: Duration::ZERO,
                ok: false,
            }
        }
    }
}

fn uds_run(n: u64) -> Run {
    let path = std::env::temp_dir().join(format!("tutti-bench-uds-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let r = (|| {
        let listener = UnixListener::bind(&path).map_err(|e| e.to_string())?;
        let mut c = me()?;
        let mut child = c
            .args(["--role", "uds", "--path"])
            .arg(&path)
            .spawn()
            .map_err(|e| e.to_string())?;
        let (s, _) = listener.accept().map_err(|e| e.to_string())?;
        let w = s.try_clone().map_err(|e| e.to_string())?;
        let r = ping(&s, &w, n);
        drop((s, w));
        let st = child.wait().map_err(|e| e.to_string())?;
        if !st.success() {
            return Err(format!("the echo process failed: {st}"));
        }
        r
    })();
    let _ = std::fs::remove_file(&path);
    finish(r, "uds")
}

fn pipe_run(n: u64) -> Run {
    let r = (|| {
        let mut c = me()?;
        let mut child = c
            .args(["--role", "pipe"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let w = child.stdin.take().ok_or("no stdin")?;
        let rd = child.stdout.take().ok_or("no stdout")?;
        let r = ping(rd, w, n);
        let st = child.wait().map_err(|e| e.to_string())?;
        if !st.success() {
            return Err(format!("the echo process failed: {st}"));
        }
        r
    })();
    finish(r, "pipe")
}

/// iceoryx2's "child is ready" value.
const READY: u64 = u64::MAX - 1;

/// Waits for one `u64` on `sub`, spinning then yielding.
fn ice_receive(
    sub: &iceoryx2::port::subscriber::Subscriber<iceoryx2::service::ipc::Service, u64, ()>,
) -> Result<u64, String> {
    let mut polls = 0u32;
    loop {
        if let Some(s) = sub.receive().map_err(|e| format!("{e:?}"))? {
            return Ok(*s);
        }
        polls += 1;
        if polls < 100 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

fn ice_send(
    publisher: &iceoryx2::port::publisher::Publisher<iceoryx2::service::ipc::Service, u64, ()>,
    v: u64,
) -> Result<(), String> {
    let s = publisher.loan_uninit().map_err(|e| format!("{e:?}"))?;
    s.write_payload(v).send().map_err(|e| format!("{e:?}"))?;
    Ok(())
}

type IcePorts = (
    iceoryx2::node::Node<iceoryx2::service::ipc::Service>,
    iceoryx2::port::publisher::Publisher<iceoryx2::service::ipc::Service, u64, ()>,
    iceoryx2::port::subscriber::Subscriber<iceoryx2::service::ipc::Service, u64, ()>,
);

/// A node publishing on `out` and subscribed to `inp`.
fn ice_ports(out: &str, inp: &str) -> Result<IcePorts, String> {
    use iceoryx2::prelude::*;
    // Its notice about a missing config file is not part of the report.
    set_log_level(LogLevel::Error);
    let e = |e: &dyn std::fmt::Debug| format!("iceoryx2: {e:?}");
    let node = NodeBuilder::new()
        .create::<ipc::Service>()
        .map_err(|x| e(&x))?;
    let open = |name: &str| -> Result<_, String> {
        let n: ServiceName = name.try_into().map_err(|x| e(&x))?;
        node.service_builder(&n)
            .publish_subscribe::<u64>()
            .open_or_create()
            .map_err(|x| e(&x))
    };
    let o = open(out)?;
    let i = open(inp)?;
    let publisher = o.publisher_builder().create().map_err(|x| e(&x))?;
    let sub = i.subscriber_builder().create().map_err(|x| e(&x))?;
    Ok((node, publisher, sub))
}

fn ice_child(tag: &str) -> Result<(), String> {
    let (_node, publisher, sub) =
        ice_ports(&format!("tutti/pong/{tag}"), &format!("tutti/ping/{tag}"))?;
    // Say ready until the first ping arrives.
    let first = loop {
        ice_send(&publisher, READY)?;
        let t = Instant::now();
        let mut got = None;
        while t.elapsed() < Duration::from_millis(1) {
            if let Some(s) = sub.receive().map_err(|e| format!("{e:?}"))? {
                got = Some(*s);
                break;
            }
        }
        if let Some(v) = got {
            break v;
        }
    };
    let mut v = first;
    while v != u64::MAX {
        ice_send(&publisher, v)?;
        v = ice_receive(&sub)?;
    }
    Ok(())
}

fn ice_run(n: u64) -> Run {
    let r = (|| {
        let tag = format!(
            "{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        );
        let (_node, publisher, sub) =
            ice_ports(&format!("tutti/ping/{tag}"), &format!("tutti/pong/{tag}"))?;
        let mut c = me()?;
        let mut child = c
            .args(["--role", "iceoryx2", "--path", &tag])
            .spawn()
            .map_err(|e| e.to_string())?;
        while ice_receive(&sub)? != READY {}
        let mut ok = true;
        let mut round = |i: u64| -> Result<(), String> {
            ice_send(&publisher, i)?;
            let mut v = ice_receive(&sub)?;
            while v == READY {
                v = ice_receive(&sub)?;
            }
            ok &= v == i;
            Ok(())
        };
        for i in 0..WARMUP {
            round(i)?;
        }
        let t = Instant::now();
        for i in 0..n {
            round(i)?;
        }
        let elapsed = t.elapsed();
        ice_send(&publisher, u64::MAX)?;
        let st = child.wait().map_err(|e| e.to_string())?;
        if !st.success() {
            return Err(format!("the iceoryx2 echo process failed: {st}"));
        }
        Ok((elapsed, ok))
    })();
    finish(r, "iceoryx2")
}

/// Runs `tutti bench shm` (or a child's role).
pub fn run(a: &ShmArgs) -> Result<Report, String> {
    if let Some(role) = &a.role {
        let path = a.path.clone().unwrap_or_default();
        match role.as_str() {
            "tutti" => tutti_child(a.messages, &path)?,
            "uds" => {
                let s = UnixStream::connect(&path).map_err(|e| format!("{path}: {e}"))?;
                let w = s.try_clone().map_err(|e| e.to_string())?;
                echo(&s, &w)?;
            }
            "pipe" => echo(std::io::stdin().lock(), std::io::stdout().lock())?,
            "iceoryx2" => ice_child(&path)?,
            other => return Err(format!("unknown role {other:?}")),
        }
        std::process::exit(0);
    }
    let plan = a.run.plan();
    let n = a.messages;
    let progress = Progress::new(plan.total() * 4, a.json);
    let mut report = Report::new("bench shm");
    report
        .param("round_trips", n)
        .param("bytes", 8)
        .param("runs", plan.runs);
    // In rounds, so that the machine's load falls on all alike.
    let (mut t, mut u, mut p, mut x) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut ok = true;
    for i in 0..plan.total() {
        progress.stage("tutti shm / uds / pipe / iceoryx2");
        let runs = [tutti_run(n), uds_run(n), pipe_run(n), ice_run(n)];
        for r in &runs {
            ok &= r.ok;
            progress.tick();
        }
        if i >= plan.warmup {
            t.push(runs[0].elapsed.as_secs_f64());
            u.push(runs[1].elapsed.as_secs_f64());
            p.push(runs[2].elapsed.as_secs_f64());
            x.push(runs[3].elapsed.as_secs_f64());
        }
    }
    progress.finish();
    let one_way = |v: &[f64]| {
        Measurement {
            secs: v.to_vec(),
            ok,
        }
        .ns_per(2 * n)
    };
    let (lt, lu, lp, lx) = (one_way(&t), one_way(&u), one_way(&p), one_way(&x));
    report.result("tutti shm", "latency one-way", lt.clone(), "ns");
    report.result("unix socket", "latency one-way", lu.clone(), "ns");
    report.result("pipe", "latency one-way", lp.clone(), "ns");
    report.result("iceoryx2", "latency one-way", lx.clone(), "ns");
    report.ratio("latency_tutti_over_iceoryx2", lt.median / lx.median);
    report.ratio("latency_tutti_over_uds", lt.median / lu.median);
    report.ratio("latency_tutti_over_pipe", lt.median / lp.median);
    report.verify(ok);
    Ok(report)
}
