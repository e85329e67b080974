//! Client–server over shared channel ends (Welch et al., CPA 2013; occam `SHARED`).
//!
//! `C` client processes each make `R` requests on **one** request channel
//! whose sending end they share (a cloned `Tx`), and wait for each answer on
//! their own reply channel, which travels inside the request.
//!
//! 1. **any-to-one**: one server holds the receiving end; it takes every
//!    request, the waiting clients served first come, first served.
//! 2. **any-to-any**: a bank of `S` servers shares the receiving end (a cloned
//!    `Rx`); each request goes to exactly one server — the one that has been
//!    waiting longest.
//!
//! Every client checks each answer (its own id and sequence number, and the
//! answer computed from its question); every request must be served exactly
//! once, and with one server all by it. The output shows how many requests
//! of each client each server took, and the first `--trace` hand-overs.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Args;
use tutti::csp::{channel, Par, Rx, Tx};

use crate::report::{Report, Stats};
use crate::rng::Rng;

/// Arguments of `tutti csp-demo client-server`.
#[derive(Args, Debug)]
pub struct ClientServerArgs {
    /// Client processes.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    clients: u32,
    /// Servers in the bank of the any-to-any run.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    servers: u32,
    /// Requests per client.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    requests: u32,
    /// Hand-overs to show (client, request → server).
    #[arg(long, default_value_t = 6)]
    trace: usize,
    /// Seed of the questions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = crate::default_workers(), value_parser = crate::parse_workers)]
    workers: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A client's question, with the end its answer goes to.
struct Request {
    client: u32,
    seq: u32,
    question: u64,
    reply: Tx<Answer>,
}

/// A server's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Answer {
    server: u32,
    client: u32,
    seq: u32,
    value: u64,
}

/// What a server computes.
fn serve(question: u64) -> u64 {
    question.wrapping_mul(question).wrapping_add(1)
}

/// What a run saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Requests each server took, by server.
    pub served: Vec<u64>,
    /// `(client, seq, server)` of every request taken.
    pub taken: Vec<(u32, u32, u32)>,
    /// Answers that were wrong (wrong client, sequence or value), or lost.
    pub bad_answers: u64,
    /// The first hand-overs: (client, seq, server).
    pub trace: Vec<(u32, u32, u32)>,
}

impl Seen {
    /// Every request of every client was taken exactly once and answered right.
    pub fn verified(&self, clients: u32, requests: u32) -> bool {
        let mut taken: Vec<(u32, u32)> = self.taken.iter().map(|&(c, r, _)| (c, r)).collect();
        taken.sort_unstable();
        let all = (0..clients).flat_map(|c| (0..requests).map(move |r| (c, r)));
        self.bad_answers == 0
            && taken.len() == clients as usize * requests as usize
            && taken.into_iter().eq(all)
            && self.served.iter().sum::<u64>() == u64::from(clients) * u64::from(requests)
    }

    /// Requests of each client (rows) taken by each server (columns).
    pub fn by_client(&self, clients: u32) -> Vec<Vec<u64>> {
        let mut m = vec![vec![0; self.served.len()]; clients as usize];
        for &(c, _, s) in &self.taken {
            if let Some(cell) = m
                .get_mut(c as usize)
                .and_then(|row| row.get_mut(s as usize))
            {
                *cell += 1;
            }
        }
        m
    }
}

/// Runs `clients` clients against `servers` servers sharing one request
/// channel; returns what was seen and the wall time in seconds.
pub fn run_network(
    rt: &tutti::Runtime,
    clients: u32,
    servers: u32,
    requests: u32,
    trace: usize,
    seed: u64,
) -> Result<(Seen, f64), String> {
    let seen = Arc::new(Mutex::new(Seen {
        served: vec![0; servers as usize],
        ..Seen::default()
    }));
    let (requests_tx, requests_rx) = channel::<Request>();
    let mut net = Par::new();
    for s in 0..servers {
        // One-to-any / any-to-any: every server holds a clone of the receiving end.
        let rx: Rx<Request> = requests_rx.clone();
        let seen = seen.clone();
        net = net.process(format!("server {s}"), async move {
            let mut taken = Vec::new();
            while let Ok(req) = rx.recv().await {
                taken.push((req.client, req.seq, s));
                let answer = Answer {
                    server: s,
                    client: req.client,
                    seq: req.seq,
                    value: serve(req.question),
                };
                // A client that has gone cannot take its answer; it counts that.
                let _ = req.reply.send(answer).await;
            }
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.served[s as usize] = taken.len() as u64;
            seen.taken.extend(taken);
        });
    }
    drop(requests_rx);
    for c in 0..clients {
        // Any-to-one / any-to-any: every client holds a clone of the sending end.
        let tx: Tx<Request> = requests_tx.clone();
        let seen = seen.clone();
        net = net.process(format!("client {c}"), async move {
            let mut rng = Rng::stream(seed, u64::from(c));
            let (reply, answers) = channel::<Answer>();
            let mut bad = 0;
            for seq in 0..requests {
                let question = rng.next_u64();
                let request = Request {
                    client: c,
                    seq,
                    question,
                    reply: reply.clone(),
                };
                if tx.send(request).await.is_err() {
                    bad += u64::from(requests - seq);
                    break;
                }
                match answers.recv().await {
                    Ok(a) if a.client == c && a.seq == seq && a.value == serve(question) => {
                        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                        if seen.trace.len() < trace {
                            seen.trace.push((c, seq, a.server));
                        }
                    }
                    _ => bad += 1,
                }
            }
            seen.lock().unwrap_or_else(|p| p.into_inner()).bad_answers += bad;
        });
    }
    drop(requests_tx);
    let start = Instant::now();
    rt.block_on(rt.spawn(net.run()))
        .map_err(|d| d.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((seen, secs))
}

/// Prints who got which requests: the first hand-overs, and per client how
/// many requests each server took.
fn print_part(part: &str, seen: &Seen, clients: u32, ok: bool) {
    let servers = seen.served.len();
    println!("{part}: {clients} client(s) sharing one channel to {servers} server(s)");
    for (client, seq, server) in &seen.trace {
        println!("  client {client} request {seq} → server {server}");
    }
    let header: Vec<String> = (0..servers).map(|s| format!("server {s}")).collect();
    println!("  {:<10}  {}", "requests", header.join("  "));
    for (c, row) in seen.by_client(clients).iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&header)
            .map(|(n, h)| format!("{n:>w$}", w = h.len()))
            .collect();
        println!("  client {c:<3}  {}", cells.join("  "));
    }
    println!(
        "  every request taken by exactly one server and answered right: {}\n",
        if ok { "yes" } else { "NO" }
    );
}

/// Runs `tutti csp-demo client-server`.
pub fn run(args: &ClientServerArgs) -> Result<Report, String> {
    let w = args.workers;
    let rt = tutti::Runtime::builder()
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
    let (c, r) = (args.clients, args.requests);
    let mut report = Report::new("csp-demo client-server");
    report
        .param("clients", c)
        .param("servers", args.servers)
        .param("requests_per_client", r)
        .param("seed", args.seed)
        .param("workers", w);
    for (part, servers) in [("any-to-one", 1), ("any-to-any", args.servers)] {
        let (seen, secs) = run_network(&rt, c, servers, r, args.trace, args.seed)?;
        let ok =
            seen.verified(c, r) && (servers > 1 || seen.served[0] == u64::from(c) * u64::from(r));
        report.verify(ok);
        for (s, n) in seen.served.iter().enumerate() {
            report.result(
                &format!("{part} server {s}"),
                "requests",
                Stats::single(*n as f64),
                "count",
            );
        }
        let total = f64::from(c) * f64::from(r);
        report.result(
            part,
            "time_per_request",
            Stats::single(secs * 1e9 / total),
            "ns",
        );
        if !args.json {
            print_part(part, &seen, c, ok);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_is_served_once() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        for (clients, servers, requests) in [(1, 1, 1), (5, 1, 50), (7, 3, 40), (2, 9, 30)] {
            let (seen, _) = run_network(&rt, clients, servers, requests, 4, 2).unwrap();
            assert!(
                seen.verified(clients, requests),
                "{clients} {servers} {requests}: {seen:?}"
            );
            assert_eq!(seen.served.len(), servers as usize);
            assert_eq!(seen.trace.len(), 4.min((clients * requests) as usize));
        }
    }

    #[test]
    fn the_check_catches_duplicates_and_losses() {
        let seen = Seen {
            served: vec![2],
            taken: vec![(0, 0, 0), (0, 0, 0)],
            ..Seen::default()
        };
        assert!(!seen.verified(1, 2));
        let seen = Seen {
            served: vec![1],
            taken: vec![(0, 1, 0)],
            ..Seen::default()
        };
        assert!(!seen.verified(1, 2));
        let seen = Seen {
            served: vec![1, 1],
            taken: vec![(0, 1, 1), (0, 0, 0)],
            ..Seen::default()
        };
        assert!(seen.verified(1, 2));
        assert_eq!(seen.by_client(1), [[1, 1]]);
    }
}
