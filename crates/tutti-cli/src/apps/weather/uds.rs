//! The peer of `tutti weather --processes P`: the same protocol over Unix
//! domain sockets. This process holds the stations (one thread each) and
//! accepts subscriptions; `P − 1` client processes hold the clients (one
//! thread and one connection each, client `c` in process `c mod (P − 1)`).
//!
//! A client connects when it joins and sends (client, station); its station
//! answers the next broadcast's number before that broadcast and then writes
//! every reading (station, seq, celsius, send time: 24 bytes). The crashing
//! client closes its connection at the middle of the run; its station drops
//! it when a write fails. At the end the stations stop, the server closes
//! every connection for writing, and each client process prints its clients'
//! tallies, checked as tutti's are.

use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::args::WeatherArgs;
use super::station::{join_at, temperature};
use super::tally::{now_ns, verify, Outcome, Seen, Summary};

const FRAME: usize = 24;

fn encode(station: u32, seq: u64, sent_ns: u64) -> [u8; FRAME] {
    let mut b = [0u8; FRAME];
    b[0..4].copy_from_slice(&station.to_le_bytes());
    b[4..12].copy_from_slice(&seq.to_le_bytes());
    b[12..16].copy_from_slice(&temperature(station, seq).to_bits().to_le_bytes());
    b[16..24].copy_from_slice(&sent_ns.to_le_bytes());
    b
}

fn decode(b: &[u8; FRAME]) -> (u32, u64, f32, u64) {
    let word = |r: std::ops::Range<usize>| {
        let mut w = [0u8; 8];
        w[..r.len()].copy_from_slice(&b[r]);
        u64::from_le_bytes(w)
    };
    (
        word(0..4) as u32,
        word(4..12),
        f32::from_bits(word(12..16) as u32),
        word(16..24),
    )
}

/// One station's thread: takes new subscribers from `joins`, broadcasts
/// every `interval` until `finish`; returns its summary and its connections.
fn station(
    index: u32,
    interval: Duration,
    joins: mpsc::Receiver<(u32, UnixStream)>,
    finish: Arc<AtomicBool>,
) -> (Summary, Vec<UnixStream>) {
    let mut seq = 0u64;
    let mut subs: Vec<(u32, UnixStream)> = Vec::new();
    let mut dropped = Vec::new();
    loop {
        let finishing = finish.load(Ordering::Acquire);
        while let Ok((c, mut s)) = joins.try_recv() {
            match s.write_all(&seq.to_le_bytes()) {
                Ok(()) => subs.push((c, s)),
                Err(e) => dropped.push((c, format!("client {c}: its subscription failed: {e}"))),
            }
        }
        if finishing {
            break;
        }
        let frame = encode(index, seq, now_ns());
        subs.retain_mut(|(c, s)| match s.write_all(&frame) {
            Ok(()) => true,
            Err(e) => {
                dropped.push((*c, format!("client {c}: its connection failed: {e}")));
                false
            }
        });
        seq += 1;
        thread::sleep(interval);
    }
    let summary = Summary {
        broadcasts: seq,
        subscribers: subs.iter().map(|(c, _)| *c).collect(),
        dropped,
    };
    (summary, subs.into_iter().map(|(_, s)| s).collect())
}

/// One Unix-socket run: this process serves `p − 1` client processes.
pub(super) fn run(args: &WeatherArgs, p: usize) -> Result<Outcome, String> {
    let (stations, clients) = (args.stations as u32, args.clients as usize);
    let seconds = Duration::from_secs_f64(args.seconds);
    let interval = Duration::from_micros(args.interval_us);
    let path = std::env::temp_dir().join(format!("tutti-weather-uds-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let finish = Arc::new(AtomicBool::new(false));
    let mut joins = Vec::new();
    let mut threads = Vec::new();
    for i in 0..stations {
        let (tx, rx) = mpsc::channel();
        joins.push(tx);
        let f = Arc::clone(&finish);
        threads.push(thread::spawn(move || station(i, interval, rx, f)));
    }
    // Subscriptions: (client, station) from each new connection.
    let acceptor = thread::spawn(move || -> Result<(), String> {
        for _ in 0..clients {
            let (mut s, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
            let mut hello = [0u8; 8];
            s.read_exact(&mut hello)
                .map_err(|e| format!("a client's hello: {e}"))?;
            let c = u32::from_le_bytes([hello[0], hello[1], hello[2], hello[3]]);
            let st = u32::from_le_bytes([hello[4], hello[5], hello[6], hello[7]]);
            let to = joins
                .get(st as usize)
                .ok_or_else(|| format!("client {c} asked for station {st}"))?;
            to.send((c, s))
                .map_err(|_| format!("station {st} ended before client {c} joined"))?;
        }
        Ok(())
    });
    let start = Instant::now();
    let mut children = Vec::new();
    for k in 0..p - 1 {
        let mut cmd = crate::apps::child_command("weather", "uds-client")?;
        cmd.args(["--member", &k.to_string()])
            .args(["--processes", &p.to_string()])
            .args(["--stations", &args.stations.to_string()])
            .args(["--clients", &args.clients.to_string()])
            .args(["--seconds", &args.seconds.to_string()])
            .args(["--interval-us", &args.interval_us.to_string()])
            .arg("--out")
            .arg(&path)
            .stdout(Stdio::piped());
        children.push(
            cmd.spawn()
                .map_err(|e| format!("cannot start a client process: {e}"))?,
        );
    }
    thread::sleep(seconds.saturating_sub(start.elapsed()));
    let mut problems = Vec::new();
    if !acceptor.is_finished() {
        problems.push("not every client connected within the run".to_string());
    } else if let Err(e) = acceptor
        .join()
        .map_err(|_| "the acceptor panicked".to_string())?
    {
        problems.push(e);
    }
    finish.store(true, Ordering::Release);
    let mut summaries = Vec::new();
    for t in threads {
        let (summary, conns) = t.join().map_err(|_| "a station panicked".to_string())?;
        // End of the readings: the clients see end-of-file after the last one.
        for s in conns {
            let _ = s.shutdown(Shutdown::Write);
        }
        summaries.push(summary);
    }
    let elapsed = start.elapsed();
    let _ = std::fs::remove_file(&path);
    let mut seen: Vec<Option<Seen>> = vec![None; clients];
    for c in children {
        let o = c
            .wait_with_output()
            .map_err(|e| format!("a client process: {e}"))?;
        let text = String::from_utf8_lossy(&o.stdout);
        if !o.status.success() {
            return Err(format!(
                "a uds client process failed ({}): {text}",
                o.status
            ));
        }
        let got: Vec<(usize, Option<Seen>)> = serde_json::from_str(&text)
            .map_err(|e| format!("a client process's malformed tallies ({e}): {text}"))?;
        for (c, s) in got {
            match seen.get_mut(c) {
                Some(slot) => *slot = s,
                None => return Err(format!("a tally of an unknown client {c}")),
            }
        }
    }
    let mut o = verify(&summaries, &seen, 0, elapsed, "connection failed");
    o.problems.extend(problems);
    Ok(o)
}

/// One client's thread: joins on schedule, reads readings until end-of-file
/// (or, for the victim, closes its connection at the middle of the run).
fn client(
    path: &str,
    c: usize,
    args: &WeatherArgs,
    start: Instant,
) -> Result<Option<Seen>, String> {
    let (stations, clients) = (args.stations as u32, args.clients as usize);
    let seconds = Duration::from_secs_f64(args.seconds);
    thread::sleep(join_at(c, clients, seconds).saturating_sub(start.elapsed()));
    let mut s = UnixStream::connect(path).map_err(|e| format!("{path}: {e}"))?;
    let station = c as u32 % stations;
    let mut hello = [0u8; 8];
    hello[..4].copy_from_slice(&(c as u32).to_le_bytes());
    hello[4..].copy_from_slice(&station.to_le_bytes());
    s.write_all(&hello).map_err(|e| format!("hello: {e}"))?;
    let mut seen = Seen::default();
    let mut first = [0u8; 8];
    s.read_exact(&mut first)
        .map_err(|e| format!("client {c}'s subscription: {e}"))?;
    seen.tally.first = Some(u64::from_le_bytes(first));
    let victim = c == 0;
    if victim {
        // The crash: the connection closes mid-run, unread.
        thread::sleep((seconds / 2).saturating_sub(start.elapsed()));
        let _ = s.shutdown(Shutdown::Both);
        return Ok(None);
    }
    let mut frame = [0u8; FRAME];
    loop {
        match s.read_exact(&mut frame) {
            Ok(()) => {
                let (st, seq, celsius, sent) = decode(&frame);
                seen.count(st, seq, celsius, sent, station);
            }
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(Some(seen)),
            Err(e) => return Err(format!("client {c}'s readings: {e}")),
        }
    }
}

/// A client process of the Unix-socket run (`--role uds-client`): prints its
/// clients' tallies as JSON.
pub fn client_process(args: &WeatherArgs, path: &str, k: usize) -> Result<(), String> {
    let start = Instant::now();
    let p = args.processes.unwrap_or(2) as usize;
    let mine: Vec<usize> = (0..args.clients as usize)
        .filter(|c| c % (p - 1) == k)
        .collect();
    let threads: Vec<_> = mine
        .into_iter()
        .map(|c| {
            let (path, args) = (path.to_string(), args.clone());
            thread::spawn(move || client(&path, c, &args, start).map(|s| (c, s)))
        })
        .collect();
    let mut out = Vec::new();
    for t in threads {
        out.push(
            t.join()
                .map_err(|_| "a client thread panicked".to_string())??,
        );
    }
    println!(
        "{}",
        serde_json::to_string(&out).map_err(|e| e.to_string())?
    );
    Ok(())
}
