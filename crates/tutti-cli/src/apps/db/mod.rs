//! `tutti db`: the C task framework's client–server database (§4.5) and its message
//! strategies (Figure 4.8), beside the same protocol over Unix domain sockets
//! and over crossbeam channels between OS threads.
//!
//! A key–value store serves `N` clients; each client sends `R` requests,
//! alternately a `put` of a fresh key and a `get` of the key it just put, and
//! waits for each reply before sending the next. Every reply is checked (a
//! put of a fresh key finds no old value; a get finds what was put), and at
//! the end the store must hold exactly `N·⌈R/2⌉` keys.
//!
//! * **tutti** — the store is an actor with a `Get` and a `Put` handler; the
//!   clients are async tasks that `ask` it. Three message strategies:
//!   - `immediate`: the store runs one long handler that serves its mailbox
//!     with `has_messages`/`try_next` and yields when it is empty, on a
//!     runtime whose idle workers spin (`IdleStrategy::Spin`);
//!   - `wait`: plain handlers; idle workers yield (`IdleStrategy::Yield`);
//!   - `notify`: plain handlers; idle workers park (`IdleStrategy::Park`,
//!     the default).
//! * **uds** — one server thread multiplexing `N` Unix domain socket
//!   connections with `poll(2)`, one thread per client, a fixed 17-byte
//!   request and 9-byte reply.
//! * **crossbeam** — one server thread receiving from a shared channel, one
//!   thread per client with its own reply channel.
//!
//! With `--processes P` the clients are OS processes instead (`procs.rs`):
//! the store in one process, `P − 1` clients in others, tutti as one
//! shared-memory system (`tutti launch`'s way) beside the same protocol over
//! Unix domain sockets between the same processes; `N = P − 1`.
//!
//! Reported per `N`: total requests per second (all requests ÷ wall time)
//! and per client (`R` ÷ the mean time a client took), medians over
//! `--runs`, taken in rounds (every implementation once per round, in turn). Ratios are throughputs, tutti ÷ peer, at `N = 7` (the issue's
//! target: ≥ 10× the Unix sockets) or else at the largest `N` measured.

mod channels;
mod procs;
mod store;
mod tutti_db;
mod uds;

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::measure::{Progress, RunOpts};
use crate::report::{Report, Stats};

pub use store::{Request, Store};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 3;

/// Arguments of `tutti db`.
#[derive(Args, Debug)]
pub struct DbArgs {
    /// Clients: one count (`7`), a list (`1,2,4`) or a range (`1..16`, inclusive).
    #[arg(long, default_value = "1..16", value_parser = parse_clients)]
    clients: ClientCounts,
    /// Requests per client.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    requests: u64,
    /// tutti's message strategy (all three if not given).
    #[arg(long, value_enum)]
    strategy: Option<Strategy>,
    /// Peers to run beside tutti (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "uds,crossbeam"
    )]
    peers: Vec<Peer>,
    /// Worker threads of tutti's runtime.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = crate::default_workers(), value_parser = crate::parse_workers)]
    workers: usize,
    #[command(flatten)]
    run: RunOpts,
    /// Clients in other OS processes: the store in one process, `P − 1`
    /// clients in others, tutti (a shared-memory system) beside Unix domain
    /// sockets (replaces `--clients`, `--strategy` and `--peers`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=64))]
    processes: Option<u64>,
    #[command(flatten)]
    child: super::ChildOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// How the store waits for messages (the three message strategies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    /// The store keeps checking its mailbox; idle workers spin.
    Immediate,
    /// Idle workers yield the CPU to the OS between checks.
    Wait,
    /// Idle workers sleep until a message wakes them.
    Notify,
}

impl Strategy {
    fn name(self) -> &'static str {
        match self {
            Strategy::Immediate => "immediate",
            Strategy::Wait => "wait",
            Strategy::Notify => "notify",
        }
    }
}

/// The peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Peer {
    /// Unix domain sockets, a thread per client, a polling server thread.
    Uds,
    /// crossbeam channels between OS threads.
    Crossbeam,
}

/// One implementation under test.
#[derive(Clone, Copy, Debug)]
enum Impl {
    Tutti(Strategy),
    Peer(Peer),
}

impl Impl {
    fn name(self) -> String {
        match self {
            Impl::Tutti(s) => format!("tutti/{}", s.name()),
            Impl::Peer(Peer::Uds) => "uds".into(),
            Impl::Peer(Peer::Crossbeam) => "crossbeam".into(),
        }
    }
}

/// The client counts to measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCounts(pub Vec<usize>);

fn parse_clients(s: &str) -> Result<ClientCounts, String> {
    let one = |t: &str| -> Result<usize, String> {
        let n: usize = t
            .trim()
            .parse()
            .map_err(|_| format!("`{t}` is not a client count"))?;
        if !(1..=1024).contains(&n) {
            return Err(format!("client counts must be in 1..=1024, got {n}"));
        }
        Ok(n)
    };
    let counts = if let Some((a, b)) = s.split_once("..") {
        let (a, b) = (one(a)?, one(b)?);
        if a > b {
            return Err(format!("empty client range {s}"));
        }
        (a..=b).collect()
    } else {
        s.split(',').map(one).collect::<Result<Vec<_>, _>>()?
    };
    Ok(ClientCounts(counts))
}

/// One measured run of one implementation with `n` clients.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Wall time from the clients' start until the last one finished.
    pub wall: Duration,
    /// Mean time one client took for its requests.
    pub per_client: Duration,
    /// Every reply and the store's final size checked out.
    pub ok: bool,
}

/// The expected request `i` of client `c`, and the reply it must get.
pub fn script(c: usize, i: u64) -> (Request, Option<u64>) {
    let key = ((c as u64) << 40) | (i / 2);
    let value = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    if i.is_multiple_of(2) {
        (Request::Put(key, value), None)
    } else {
        (Request::Get(key), Some(value))
    }
}

/// Keys the store holds after `n` clients made `r` requests each.
pub fn final_size(n: usize, r: u64) -> usize {
    n * r.div_ceil(2) as usize
}

/// Mean of the clients' times.
pub fn mean(times: &[Duration]) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    times.iter().sum::<Duration>() / times.len() as u32
}

/// Runs `tutti db`.
pub fn run(args: &DbArgs) -> Result<Report, String> {
    if let Some(role) = &args.child.role {
        let out = args.child.out.as_deref().unwrap_or_default();
        match role.as_str() {
            "tutti-member" => procs::tutti_member(args.requests, out)?,
            "uds-client" => procs::uds_client(args.requests, out, args.child.member.unwrap_or(0))?,
            other => return Err(format!("unknown role {other:?}")),
        }
        std::process::exit(0);
    }
    if let Some(p) = args.processes {
        return run_processes(args, p as usize);
    }
    let plan = args.run.plan();
    let r = args.requests;
    let counts = &args.clients.0;
    let strategies: Vec<Strategy> = match args.strategy {
        Some(s) => vec![s],
        None => vec![Strategy::Immediate, Strategy::Wait, Strategy::Notify],
    };
    let mut report = Report::new("db");
    report
        .param("clients", counts.clone())
        .param("requests", r)
        .param(
            "strategies",
            strategies.iter().map(|s| s.name()).collect::<Vec<_>>(),
        )
        .param("workers", args.workers)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    // The implementations, in the order of the report.
    let mut impls: Vec<Impl> = strategies.iter().map(|&s| Impl::Tutti(s)).collect();
    impls.extend(args.peers.iter().map(|&p| Impl::Peer(p)));
    let progress = Progress::new(impls.len() * counts.len() * plan.total(), args.json);
    // (impl name, n, total/s samples, per-client/s samples)
    let mut measured: Vec<(String, usize, Vec<f64>, Vec<f64>)> = Vec::new();
    for &n in counts {
        let first = measured.len();
        for i in &impls {
            measured.push((i.name(), n, Vec::new(), Vec::new()));
        }
        // Rounds: every implementation once per round, in turn, so that the machine's
        // load changing over time favours none of them. A tutti runtime lives for one
        // run only (an idle `immediate` runtime spins and would slow the others).
        for k in 0..plan.total() {
            for (j, i) in impls.iter().enumerate() {
                let name = i.name();
                progress.stage(&format!("{name}, {n} clients"));
                let o = match i {
                    Impl::Tutti(s) => tutti_db::TuttiDb::new(args.workers, *s)?.run(n, r)?,
                    Impl::Peer(Peer::Uds) => uds::run(n, r)?,
                    Impl::Peer(Peer::Crossbeam) => channels::run(n, r)?,
                };
                report.verify(o.ok);
                if !o.ok {
                    eprintln!("tutti db: {name} with {n} clients got a wrong reply");
                }
                if k >= plan.warmup {
                    let m = &mut measured[first + j];
                    m.2.push((n as u64 * r) as f64 / o.wall.as_secs_f64());
                    m.3.push(r as f64 / o.per_client.as_secs_f64());
                }
                progress.tick();
            }
        }
    }
    progress.finish();

    for (name, n, total, per_client) in &measured {
        if let (Some(t), Some(p)) = (Stats::of(total), Stats::of(per_client)) {
            report.result(name, &format!("total@{n}"), t, "requests/s");
            report.result(name, &format!("per_client@{n}"), p, "requests/s");
        }
    }
    let at = if counts.contains(&7) {
        7
    } else {
        counts.iter().copied().max().unwrap_or(1)
    };
    let median_at = |name: &str| {
        measured
            .iter()
            .find(|(m, n, _, _)| m == name && *n == at)
            .and_then(|(_, _, t, _)| Stats::of(t))
            .map(|s| s.median)
    };
    for &s in &strategies {
        let ours = median_at(&format!("tutti/{}", s.name()));
        for peer in ["uds", "crossbeam"] {
            if let (Some(o), Some(p)) = (ours, median_at(peer)) {
                report.ratio(
                    &format!("throughput_tutti_{}_over_{peer}@{at}", s.name()),
                    o / p,
                );
            }
        }
    }
    Ok(report)
}

/// `tutti db --processes P`: tutti and Unix sockets, `P − 1` client
/// processes each, in rounds.
fn run_processes(args: &DbArgs, p: usize) -> Result<Report, String> {
    let plan = args.run.plan();
    let (n, r) = (p - 1, args.requests);
    let mut report = Report::new("db");
    report
        .param("processes", p)
        .param("clients", n)
        .param("requests", r)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);
    let progress = Progress::new(2 * plan.total(), args.json);
    let names = ["tutti/processes", "uds/processes"];
    let mut total: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut per_client: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for k in 0..plan.total() {
        for (j, name) in names.iter().enumerate() {
            progress.stage(&format!("{name}, {p} processes"));
            let o = match j {
                0 => procs::run_tutti(p, r)?,
                _ => procs::run_uds(p, r)?,
            };
            report.verify(o.ok);
            if !o.ok {
                eprintln!("tutti db: {name} with {p} processes got a wrong reply");
            }
            if k >= plan.warmup {
                total[j].push((n as u64 * r) as f64 / o.wall.as_secs_f64());
                per_client[j].push(r as f64 / o.per_client.as_secs_f64());
            }
            progress.tick();
        }
    }
    progress.finish();
    for (j, name) in names.iter().enumerate() {
        if let (Some(t), Some(c)) = (Stats::of(&total[j]), Stats::of(&per_client[j])) {
            report.result(name, &format!("total@{n}"), t, "requests/s");
            report.result(name, &format!("per_client@{n}"), c, "requests/s");
        }
    }
    if let (Some(t), Some(u)) = (Stats::of(&total[0]), Stats::of(&total[1])) {
        report.ratio(
            &format!("throughput_tutti_over_uds_processes@{n}"),
            t.median / u.median,
        );
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_counts_parse() {
        assert_eq!(parse_clients("7").unwrap().0, [7]);
        assert_eq!(parse_clients("1,2,4").unwrap().0, [1, 2, 4]);
        assert_eq!(parse_clients("1..4").unwrap().0, [1, 2, 3, 4]);
        for bad in ["0", "x", "4..1", "1..2000", "", "1,,2"] {
            assert!(parse_clients(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_script_puts_then_gets_distinct_keys() {
        let mut store = Store::default();
        for c in 0..3 {
            for i in 0..11 {
                let (req, expect) = script(c, i);
                assert_eq!(store.apply(req), expect, "client {c} request {i}");
            }
        }
        assert_eq!(store.len(), final_size(3, 11));
    }

    #[test]
    fn every_implementation_serves_the_script() {
        for s in [Strategy::Immediate, Strategy::Wait, Strategy::Notify] {
            let db = tutti_db::TuttiDb::new(2, s).unwrap();
            for n in [1, 3] {
                assert!(db.run(n, 101).unwrap().ok, "tutti {s:?} n={n}");
            }
        }
        for n in [1, 3] {
            assert!(uds::run(n, 101).unwrap().ok, "uds n={n}");
            assert!(channels::run(n, 101).unwrap().ok, "crossbeam n={n}");
        }
    }
}
