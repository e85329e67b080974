//! `tutti soak shm`: a shared-memory system of `--processes` processes (4)
//! exchanging checksummed messages while this process, the supervisor, kills
//! a random member with SIGKILL every `--kill-every` seconds and starts a new
//! process into the same named system, which takes the dead rank as its next
//! incarnation (`tutti::world::World::incarnation`).
//!
//! Every member sends numbered messages of random length (some span several
//! mailbox slots) to random other ranks, at most [`WINDOW`] unanswered at a
//! time, and answers every message it receives with an acknowledgement. Each
//! writes what it did to a log of its own, one `write` per line (so a line
//! written before a SIGKILL is kept by the kernel):
//!
//! * `S to seq` — handed a message to the world;
//! * `R from incarnation seq` — received one whose checksum holds (written
//!   before the acknowledgement is sent);
//! * `A to seq` — the acknowledgement of its own message `seq` came back;
//! * `X from …` — received bytes whose checksum or shape is wrong.
//!
//! The supervisor checks, over every incarnation's log: every message whose
//! acknowledgement its sender saw was received exactly once (an
//! acknowledgement is only sent after the `R` line, so a missing one is a
//! lost message), nothing was received twice or corrupt, every member alive
//! at the end ended by itself within [`END_GRACE`] (a survivor that hangs
//! fails the soak), every replacement started, and nothing of the system is
//! left in `/dev/shm`. Messages to a rank that died before answering are
//! neither acknowledged nor expected: the sender saw a failed send or no
//! answer.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use tutti::world::{LocationId, World};

use super::now_ms;
use crate::report::Report;
use crate::rng::{mix64, Rng};

/// Messages a member may have sent and not seen answered, per destination.
pub const WINDOW: usize = 16;
/// How long after the end of the run every member must have ended.
pub const END_GRACE: Duration = Duration::from_secs(30);
/// How long members keep answering after they stopped sending.
const DRAIN: Duration = Duration::from_millis(1500);
/// No kill in the last seconds of a run: the last replacement must be up.
const QUIET_END: Duration = Duration::from_secs(3);
/// The largest message body (about three mailbox slots).
const MAX_BODY: u64 = 12_000;

const DATA: u8 = 0;
const ACK: u8 = 1;

/// Arguments of `tutti soak shm`.
#[derive(Args, Debug)]
pub struct ShmSoakArgs {
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 180.0, value_parser = crate::parse_seconds)]
    pub seconds: f64,
    /// Processes in the system.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub processes: u32,
    /// Seconds between two kills (each waits for the previous replacement
    /// to be up).
    #[arg(long, default_value_t = 3.0, value_parser = crate::parse_seconds)]
    pub kill_every: f64,
    /// Seed of the victims and of the messages.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Internal: the role of a child process (`member`).
    #[arg(long, hide = true)]
    pub role: Option<String>,
    /// Internal: a member's log folder.
    #[arg(long, hide = true)]
    pub out: Option<PathBuf>,
    /// Internal: when members stop sending (milliseconds since the epoch).
    #[arg(long, hide = true)]
    pub until: Option<u64>,
}

/// Runs the soak (or, with `--role member`, one member of it).
pub fn run(a: &ShmSoakArgs) -> Result<Report, String> {
    match a.role.as_deref() {
        Some("member") => member(a),
        Some(other) => Err(format!("unknown role {other:?}")),
        None => supervise(a),
    }
}

/// A checksum of `bytes`.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.chunks(8).fold(bytes.len() as u64, |h, c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        mix64(h ^ u64::from_le_bytes(w))
    })
}

/// A data message: kind, sender rank, its incarnation, seq, body, checksum.
fn data(rank: u32, incarnation: u64, seq: u64, body_len: usize) -> Vec<u8> {
    let mut m = Vec::with_capacity(29 + body_len + 8);
    m.push(DATA);
    m.extend_from_slice(&rank.to_le_bytes());
    m.extend_from_slice(&incarnation.to_le_bytes());
    m.extend_from_slice(&seq.to_le_bytes());
    let mut r = Rng::new(mix64(seq ^ incarnation << 32 ^ u64::from(rank)));
    m.extend((0..body_len).map(|_| r.next_u64() as u8));
    let c = checksum(&m);
    m.extend_from_slice(&c.to_le_bytes());
    m
}

/// (sender rank, incarnation, seq) of a data message whose checksum holds.
fn parse_data(m: &[u8]) -> Option<(u32, u64, u64)> {
    if m.len() < 29 || m[0] != DATA {
        return None;
    }
    let (body, sum) = m.split_at(m.len() - 8);
    if checksum(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let rank = u32::from_le_bytes(m[1..5].try_into().ok()?);
    let inc = u64::from_le_bytes(m[5..13].try_into().ok()?);
    let seq = u64::from_le_bytes(m[13..21].try_into().ok()?);
    Some((rank, inc, seq))
}

fn ack(incarnation: u64, seq: u64) -> Vec<u8> {
    let mut m = vec![ACK];
    m.extend_from_slice(&incarnation.to_le_bytes());
    m.extend_from_slice(&seq.to_le_bytes());
    m
}

fn line(log: &File, text: String) {
    // One write per line: kept by the kernel even if the process is killed
    // right after.
    let _ = (&*log).write_all(text.as_bytes());
}

/// One member: sends, answers and logs until `--until`, answers a while
/// longer, then ends its world.
fn member(a: &ShmSoakArgs) -> Result<Report, String> {
    let dir = a.out.clone().ok_or("a member needs --out")?;
    let until = a.until.ok_or("a member needs --until")?;
    let world = World::builder()
        .locations(1)
        .workers(1)
        .build()
        .map_err(|e| format!("cannot join the system: {e}"))?;
    let rank = world.rank();
    let incarnation = world.incarnation();
    let ranks = world.ranks();
    let log = File::create(dir.join(format!("r{rank}.i{incarnation}.log")))
        .map_err(|e| format!("log of rank {rank}: {e}"))?;
    let log = Arc::new(log);
    line(&log, "ready\n".to_string());
    let seed = a.seed;
    world.run(|loc| {
        let log = Arc::clone(&log);
        async move {
            let mut rng = Rng::stream(seed, (rank as u64) << 32 | incarnation);
            let mut seq = 0u64;
            // Unanswered messages per destination: (seq, when sent).
            let mut open: Vec<Vec<u64>> = vec![Vec::new(); ranks];
            let mut draining_since = None;
            loop {
                let now = now_ms();
                if now >= until && draining_since.is_none() {
                    draining_since = Some(Instant::now());
                }
                if draining_since.is_some_and(|t| t.elapsed() >= DRAIN) {
                    break;
                }
                let mut busy = false;
                if draining_since.is_none() {
                    let to = {
                        let r = rng.below(ranks as u64 - 1) as usize;
                        if r >= rank {
                            r + 1
                        } else {
                            r
                        }
                    };
                    if open[to].len() < WINDOW {
                        let len = if rng.below(8) == 0 {
                            rng.below(MAX_BODY)
                        } else {
                            rng.below(256)
                        } as usize;
                        let m = data(rank as u32, incarnation, seq, len);
                        if loc.send_bytes(LocationId::new(to as u32), m).is_ok() {
                            line(&log, format!("S {to} {seq}\n"));
                            open[to].push(seq);
                            seq += 1;
                            busy = true;
                        } else {
                            // Dead: what it had not answered never will be.
                            open[to].clear();
                        }
                    } else if rng.below(64) == 0 {
                        // A destination that died (and maybe came back)
                        // answers nothing of what it had: start over.
                        open[to].clear();
                    }
                    loc.flush();
                }
                while let Some(mut d) = loc.try_recv() {
                    busy = true;
                    let from = d.from();
                    let Some(m) = d.take_bytes() else {
                        line(&log, format!("X {} not bytes\n", from.index()));
                        continue;
                    };
                    match m.first() {
                        Some(&DATA) => match parse_data(&m) {
                            Some((r, inc, s)) if r as usize == from.index() => {
                                line(&log, format!("R {r} {inc} {s}\n"));
                                let _ = loc.send_bytes(from, ack(inc, s));
                            }
                            _ => line(&log, format!("X {} {} bytes\n", from.index(), m.len())),
                        },
                        Some(&ACK) if m.len() == 17 => {
                            let inc = u64::from_le_bytes(m[1..9].try_into().unwrap_or_default());
                            let s = u64::from_le_bytes(m[9..17].try_into().unwrap_or_default());
                            // An answer meant for this rank's dead predecessor
                            // is not this process's.
                            if inc == incarnation {
                                line(&log, format!("A {} {s}\n", from.index()));
                                open[from.index()].retain(|&x| x != s);
                            }
                        }
                        _ => line(&log, format!("X {} {} bytes\n", from.index(), m.len())),
                    }
                }
                loc.flush();
                if !busy {
                    tutti::sleep(Duration::from_millis(1)).await;
                } else {
                    tutti::yield_now().await;
                }
            }
            line(&log, "end\n".to_string());
        }
    });
    drop(world);
    Ok(Report::new("soak shm member"))
}

/// What the members' logs say.
#[derive(Default, Debug)]
struct Tally {
    sent: u64,
    acked: u64,
    received: u64,
    lost: u64,
    duplicates: u64,
    corrupt: u64,
    examples: Vec<String>,
}

/// A message's identity: (sender rank, sender incarnation, sequence number).
type MessageKey = (u32, u64, u64);

/// Reads every log in `dir`, one line at a time: a 30-minute run writes
/// gigabytes of log, so nothing holds a whole file, and received messages are
/// counted by sorting their keys (a third of the memory of a map of them).
fn tally(dir: &Path) -> Result<Tally, String> {
    use std::io::BufRead as _;
    let mut t = Tally::default();
    let mut got: Vec<MessageKey> = Vec::new();
    let mut acked: Vec<MessageKey> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((r, i)) = name
            .strip_suffix(".log")
            .and_then(|n| n.strip_prefix('r'))
            .and_then(|n| n.split_once(".i"))
        else {
            continue;
        };
        let (Ok(rank), Ok(inc)) = (r.parse::<u32>(), i.parse::<u64>()) else {
            continue;
        };
        let file = File::open(e.path()).map_err(|e| format!("{name}: {e}"))?;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        let mut l = String::new();
        loop {
            l.clear();
            match reader.read_line(&mut l) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(format!("{name}: {e}")),
            }
            let l = l.trim_end_matches('\n');
            let mut f = l.split(' ');
            let kind = f.next().unwrap_or_default();
            let mut num = || f.next().and_then(|v| v.parse::<u64>().ok());
            match (kind, num(), num(), num()) {
                ("S", Some(_), Some(_), None) => t.sent += 1,
                ("R", Some(from), Some(inc), Some(seq)) => {
                    t.received += 1;
                    got.push((from as u32, inc, seq));
                }
                ("A", Some(_), Some(seq), None) => acked.push((rank, inc, seq)),
                ("X", ..) => {
                    t.corrupt += 1;
                    if t.examples.len() < 5 {
                        t.examples.push(format!("rank {rank}/{inc}: {l}"));
                    }
                }
                ("ready" | "end", ..) => {}
                // A line cut by the kill.
                _ => {}
            }
        }
    }
    t.acked = acked.len() as u64;
    got.sort_unstable();
    for k in &acked {
        if got.binary_search(k).is_err() {
            t.lost += 1;
            if t.examples.len() < 5 {
                t.examples.push(format!(
                    "message {} of rank {} (incarnation {}) acknowledged, never received",
                    k.2, k.0, k.1
                ));
            }
        }
    }
    for run in got.chunk_by(|a, b| a == b).filter(|run| run.len() > 1) {
        let (k, n) = (run[0], run.len());
        t.duplicates += 1;
        if t.examples.len() < 5 {
            t.examples.push(format!(
                "message {} of rank {} (incarnation {}) received {n} times",
                k.2, k.0, k.1
            ));
        }
    }
    Ok(t)
}

/// Segments of system `name` in `/dev/shm`.
fn segments_of(name: &str) -> Vec<String> {
    let prefix = format!("tutti-{name}");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n == &prefix || n.starts_with(&format!("{prefix}+")))
                .collect()
        })
        .unwrap_or_default()
}

/// A started member: its process and when it was started.
struct Running {
    child: Child,
    incarnation: u64,
}

fn supervise(a: &ShmSoakArgs) -> Result<Report, String> {
    let p = a.processes as usize;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("soak-{}-{nanos:x}", std::process::id());
    let dir = std::env::temp_dir().join(format!("tutti-{name}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let run_for = Duration::from_secs_f64(a.seconds);
    let started = Instant::now();
    let until = now_ms() + run_for.as_millis() as u64;
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let start = |rank: usize, incarnation: u64| -> Result<Running, String> {
        let err = File::create(dir.join(format!("r{rank}.i{incarnation}.err")))
            .map_err(|e| format!("stderr file: {e}"))?;
        let child = Command::new(&exe)
            .args(["soak", "shm", "--role", "member", "--seed"])
            .arg(a.seed.to_string())
            .arg("--out")
            .arg(&dir)
            .arg("--until")
            .arg(until.to_string())
            .env("TUTTI_SYSTEM", &name)
            .env("TUTTI_RANKS", p.to_string())
            .env("TUTTI_RANK", rank.to_string())
            .env("TUTTI_TRANSPORT", "shm")
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start rank {rank}: {e}"))?;
        Ok(Running { child, incarnation })
    };
    let mut members: Vec<Running> = Vec::with_capacity(p);
    for r in 0..p {
        members.push(start(r, 1)?);
    }
    let ready = |rank: usize, inc: u64| {
        std::fs::read_to_string(dir.join(format!("r{rank}.i{inc}.log")))
            .is_ok_and(|t| t.starts_with("ready"))
    };
    let mut rng = Rng::new(a.seed);
    let kill_every = Duration::from_secs_f64(a.kill_every);
    let mut kills = 0u64;
    let mut failures: Vec<String> = Vec::new();
    let mut last_kill = Instant::now();
    let mut pending: Option<(usize, Instant)> = None;
    let progress = !a.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    while started.elapsed() + QUIET_END < run_for {
        std::thread::sleep(Duration::from_millis(20));
        // A member that ended by itself before the end is a failure.
        for (r, m) in members.iter_mut().enumerate() {
            if let Ok(Some(st)) = m.child.try_wait() {
                failures.push(format!(
                    "rank {r} (incarnation {}) ended early: {st}",
                    m.incarnation
                ));
            }
        }
        if !failures.is_empty() {
            break;
        }
        if let Some((r, since)) = pending {
            if ready(r, members[r].incarnation) {
                pending = None;
            } else if since.elapsed() > Duration::from_secs(30) {
                failures.push(format!(
                    "the new process of rank {r} (incarnation {}) did not join within 30 s",
                    members[r].incarnation
                ));
                break;
            }
            continue;
        }
        if last_kill.elapsed() < kill_every {
            continue;
        }
        let victim = rng.below(p as u64) as usize;
        let m = &mut members[victim];
        let _ = m.child.kill();
        let _ = m.child.wait();
        kills += 1;
        last_kill = Instant::now();
        let next = m.incarnation + 1;
        members[victim] = start(victim, next)?;
        pending = Some((victim, Instant::now()));
        if progress {
            eprint!(
                "\rtutti soak shm: {:.0} s of {:.0}, {kills} processes killed",
                started.elapsed().as_secs_f64(),
                a.seconds
            );
        }
    }
    if progress {
        eprintln!();
    }
    // The end: every member stops sending at `until`, drains, and ends.
    let deadline = Instant::now() + run_for.saturating_sub(started.elapsed()) + DRAIN + END_GRACE;
    let mut hung = Vec::new();
    for (r, m) in members.iter_mut().enumerate() {
        loop {
            match m.child.try_wait() {
                Ok(Some(st)) if st.success() => break,
                Ok(Some(st)) => {
                    failures.push(format!(
                        "rank {r} (incarnation {}) failed: {st}",
                        m.incarnation
                    ));
                    break;
                }
                Ok(None) if Instant::now() > deadline => {
                    hung.push(r);
                    let _ = m.child.kill();
                    let _ = m.child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => {
                    failures.push(format!("rank {r}: {e}"));
                    break;
                }
            }
        }
    }
    for r in &hung {
        failures.push(format!(
            "rank {r} did not end within {} s of the run's end",
            END_GRACE.as_secs()
        ));
    }
    let left = segments_of(&name);
    for seg in &left {
        let _ = std::fs::remove_file(Path::new("/dev/shm").join(seg));
    }
    let t = tally(&dir)?;
    // The members' complaints, for a failed run.
    let mut stderr_text = String::new();
    if !failures.is_empty() || t.lost + t.duplicates + t.corrupt > 0 {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.ends_with(".err") {
                    let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                    if !text.trim().is_empty() {
                        stderr_text.push_str(&format!("--- {n}\n{}\n", text.trim_end()));
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut report = Report::new("soak shm");
    report
        .param("seconds", a.seconds)
        .param("processes", p)
        .param("kill_every_s", a.kill_every)
        .param("seed", a.seed);
    report.count("tutti", "faults injected (SIGKILL)", kills, "processes");
    report.count("tutti", "messages sent", t.sent, "messages");
    report.count("tutti", "messages acknowledged", t.acked, "messages");
    report.count("tutti", "messages received", t.received, "messages");
    report.count("tutti", "acknowledged but not received", t.lost, "messages");
    report.count("tutti", "received more than once", t.duplicates, "messages");
    report.count("tutti", "corrupt", t.corrupt, "messages");
    report.count("tutti", "hung survivors", hung.len() as u64, "processes");
    report.count(
        "tutti",
        "segments left in /dev/shm",
        left.len() as u64,
        "segments",
    );
    let ok = failures.is_empty()
        && left.is_empty()
        && t.lost == 0
        && t.duplicates == 0
        && t.corrupt == 0
        && t.acked > 0;
    report.verify(ok);
    for f in failures.iter().chain(&t.examples) {
        eprintln!("tutti soak shm: {f}");
    }
    if !left.is_empty() {
        eprintln!("tutti soak shm: left in /dev/shm (removed now): {left:?}");
    }
    if !ok && !stderr_text.is_empty() {
        eprintln!("{stderr_text}");
    }
    Ok(report)
}
