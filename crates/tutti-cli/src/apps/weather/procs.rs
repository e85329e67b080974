//! `tutti weather --processes P`: the weather service with its stations in
//! one OS process and its clients spread over `P − 1` others (Gingras 2018
//! §4.6 across processes of one host), verified as the threaded run is.
//!
//! * **tutti** — the processes form one shared-memory system
//!   (`tutti::world::launch`). Rank 0's node exports the stations and
//!   registers them by name; client `c` lives on rank `1 + c mod (P − 1)`,
//!   exported and registered as `weather/client-<c>`. A client subscribes by
//!   sending its own address as data ([`RemoteRef`]); the station makes it an
//!   address again, **monitors it across processes** ([`Node::monitor`]) and
//!   tells it every reading. The crashed client's station drops it when its
//!   [`RemoteDown`] arrives. At the end rank 0 asks every client for its tally
//!   (a remote ask, ordered after the readings its node sent), then every
//!   process stops its actors and the station names must vanish.
//! * **uds** — `uds.rs`: the same protocol over Unix domain sockets.
//!
//! Readings carry their send time (`CLOCK_MONOTONIC`, one clock for every
//! process of the host), so both report the delivery latency beside the
//! delivered readings per second.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tutti::actor::{self, Actor, Addr, Context, StopReason};
use tutti::msg::{Dispatch, Handler, Message, Remote};
use tutti::remote::{Node, RemoteAddr, RemoteDown, RemoteRef};
use tutti::world::World;

use super::args::WeatherArgs;
use super::station::{
    join_at, quiet_crash, station_name, temperature, Finish, Post, Station, CRASH,
};
use super::tally::{now_ns, verify, Outcome, Seen};
use crate::report::{Report, Stats};

// ----- messages across processes -----

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Reading {
    station: u32,
    seq: u64,
    celsius: f32,
    sent_ns: u64,
}
impl Message for Reading {
    type Reply = ();
}
impl Remote for Reading {
    const NAME: &'static str = "tutti.weather.Reading";
}

/// Client `client` subscribes; the answer is the next broadcast's number.
#[derive(Serialize, Deserialize)]
struct Subscribe {
    client: u32,
    addr: RemoteRef,
}
impl Message for Subscribe {
    type Reply = Result<u64, String>;
}
impl Remote for Subscribe {
    const NAME: &'static str = "tutti.weather.Subscribe";
}

/// What a client saw (asked by rank 0 at the end).
#[derive(Serialize, Deserialize)]
struct Tally;
impl Message for Tally {
    type Reply = Seen;
}
impl Remote for Tally {
    const NAME: &'static str = "tutti.weather.Tally";
}

// ----- local messages -----

struct Join(RemoteRef);
impl Message for Join {
    type Reply = ();
}

struct Crash;
impl Message for Crash {
    type Reply = ();
}

/// Local: whether the client has finished joining (queued after `Join`).
struct Joined;
impl Message for Joined {
    type Reply = ();
}

// ----- the actors -----

/// The process version: subscribers are clients in other processes, reached
/// through the node.
struct Across {
    node: Node,
}

impl Post for Across {
    type Key = u32;
    type Sub = RemoteAddr<Client>;
    type Dropped = (u32, String);
    fn post(&mut self, index: u32, seq: u64, subs: &[(u32, RemoteAddr<Client>)]) {
        let reading = Reading {
            station: index,
            seq,
            celsius: temperature(index, seq),
            sent_ns: now_ns(),
        };
        for (_, s) in subs {
            let _ = s.tell(reading);
        }
        self.node.flush();
    }
}

impl Handler<Subscribe> for Station<Across> {
    async fn handle(&mut self, s: Subscribe, ctx: &mut Context<Self>) -> Result<u64, String> {
        let addr = self
            .post
            .node
            .resolve::<Client>(&s.addr)
            .map_err(|e| e.to_string())?;
        self.post.node.monitor(&addr, &ctx.addr());
        self.subscribers.push((s.client, addr));
        Ok(self.seq)
    }
}

impl Handler<RemoteDown> for Station<Across> {
    async fn handle(&mut self, d: RemoteDown, _: &mut Context<Self>) {
        let gone = |a: &RemoteAddr<Client>| {
            a.location() == d.actor.location() && a.actor_id() == d.actor.actor_id()
        };
        if let Some(at) = self.subscribers.iter().position(|(_, a)| gone(a)) {
            let (c, _) = self.subscribers.remove(at);
            self.dropped.push((c, d.to_string()));
        }
    }
}

struct Client {
    index: u32,
    station: u32,
    node: Node,
    seen: Seen,
    stops: Arc<AtomicUsize>,
}

impl Actor for Client {
    fn stopped(&mut self, _: &StopReason) {
        self.stops.fetch_add(1, Ordering::SeqCst);
    }
}

impl Handler<Join> for Client {
    async fn handle(&mut self, j: Join, _: &mut Context<Self>) {
        let station = match self
            .node
            .lookup::<Station<Across>>(station_name(self.station))
            .await
        {
            Ok(s) => s,
            Err(e) => {
                self.seen.join_error = Some(e.to_string());
                return;
            }
        };
        let ask = station.ask(Subscribe {
            client: self.index,
            addr: j.0,
        });
        match ask.await {
            Ok(Ok(first)) => self.seen.tally.first = Some(first),
            Ok(Err(e)) => self.seen.join_error = Some(e),
            Err(e) => self.seen.join_error = Some(e.to_string()),
        }
    }
}

impl Handler<Reading> for Client {
    async fn handle(&mut self, r: Reading, _: &mut Context<Self>) {
        self.seen
            .count(r.station, r.seq, r.celsius, r.sent_ns, self.station);
    }
}

impl Handler<Crash> for Client {
    async fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
        std::panic::panic_any(CRASH);
    }
}

impl Handler<Joined> for Client {
    async fn handle(&mut self, _: Joined, _: &mut Context<Self>) {}
}

impl Handler<Tally> for Client {
    async fn handle(&mut self, _: Tally, _: &mut Context<Self>) -> Seen {
        self.seen.clone()
    }
}

// ----- one run -----

fn me(args: &WeatherArgs, role: &str) -> Result<Command, String> {
    let mut c = crate::apps::child_command("weather", role)?;
    c.args(["--stations", &args.stations.to_string()])
        .args(["--clients", &args.clients.to_string()])
        .args(["--seconds", &args.seconds.to_string()])
        .args(["--interval-us", &args.interval_us.to_string()])
        .args(["--workers", &args.workers.to_string()]);
    Ok(c)
}

/// One tutti run with `p` processes; rank 0 writes its outcome to a file.
fn run_tutti(args: &WeatherArgs, p: usize) -> Result<Outcome, String> {
    let text = crate::apps::launch_members(me(args, "tutti-member")?, "weather", p)?;
    serde_json::from_str(&text).map_err(|e| format!("a malformed outcome ({e}): {text}"))
}

/// A process of the tutti run (`--role tutti-member`).
pub fn tutti_member(args: &WeatherArgs, out: &str) -> Result<(), String> {
    for reg in [
        tutti::msg::register::<Reading>(),
        tutti::msg::register::<Subscribe>(),
        tutti::msg::register::<Tally>(),
    ] {
        reg.map_err(|e| e.to_string())?;
    }
    let world = World::builder()
        .locations(1)
        .workers(args.workers)
        .build()
        .map_err(|e| e.to_string())?;
    if world.ranks() < 2 {
        return Err("a weather system needs at least 2 processes".into());
    }
    let _quiet = quiet_crash();
    let (stations, clients) = (args.stations as u32, args.clients as usize);
    let seconds = Duration::from_secs_f64(args.seconds);
    let interval = Duration::from_micros(args.interval_us);
    let results = world.run(move |loc| async move {
        let node = Node::join(loc);
        let rank = node.id().index();
        let ranks = node.world().ranks();
        let stops = Arc::new(AtomicUsize::new(0));
        let mut station_addrs = Vec::new();
        if rank == 0 {
            for i in 0..stations {
                let across = Across { node: node.clone() };
                let s = actor::spawn(Station::new(i, interval, stops.clone(), across));
                let mut t = Dispatch::new();
                t.register::<Subscribe>().expect("the station's messages");
                let remote = node.export(&s, t);
                node.register(station_name(i), &remote)
                    .await
                    .expect("register a station");
                station_addrs.push(s);
            }
        }
        node.barrier().await;
        let start = Instant::now();
        // This rank's clients join on the threaded run's schedule; client 0
        // (rank 1) crashes at the middle of the run.
        let mine: Vec<usize> = (0..clients)
            .filter(|c| rank > 0 && 1 + c % (ranks - 1) == rank)
            .collect();
        let mut client_addrs: Vec<Addr<Client>> = Vec::new();
        let mut crash_due = rank == 1;
        while client_addrs.len() < mine.len() || crash_due {
            let now = start.elapsed();
            if crash_due && now >= seconds / 2 {
                client_addrs[0].tell(Crash).expect("the victim runs");
                crash_due = false;
                continue;
            }
            if let Some(&c) = mine.get(client_addrs.len()) {
                if now >= join_at(c, clients, seconds) {
                    let a = actor::spawn(Client {
                        index: c as u32,
                        station: c as u32 % stations,
                        node: node.clone(),
                        seen: Seen::default(),
                        stops: stops.clone(),
                    });
                    let mut t = Dispatch::new();
                    t.register::<Reading>()
                        .and_then(|t| t.register::<Tally>())
                        .expect("the client's messages");
                    let remote = node.export(&a, t);
                    node.register(format!("weather/client-{c}"), &remote)
                        .await
                        .expect("register a client");
                    a.tell(Join(remote.to_ref())).expect("a new client runs");
                    client_addrs.push(a);
                    continue;
                }
            }
            tutti::sleep(Duration::from_millis(1)).await;
        }
        // Every client has finished joining (its `Joined` waits behind `Join`).
        for a in &client_addrs {
            let _ = a.ask(Joined).await;
        }
        let left = seconds.saturating_sub(start.elapsed());
        tutti::sleep(left).await;
        node.barrier().await;
        let mut outcome = None;
        if rank == 0 {
            let mut summaries = Vec::new();
            for s in &station_addrs {
                summaries.push(s.ask(Finish::new()).await.expect("a station finishes"));
            }
            let elapsed = start.elapsed();
            // Each tally is asked after the readings rank 0's node sent it.
            let mut seen = Vec::new();
            for c in 0..clients {
                let s = match node.lookup::<Client>(format!("weather/client-{c}")).await {
                    Ok(a) => a.ask(Tally).await.ok(),
                    Err(_) => None,
                };
                seen.push(s);
            }
            outcome = Some(verify(&summaries, &seen, 0, elapsed, CRASH));
        }
        node.barrier().await;
        // The end: every actor stops, the names vanish, nothing is left.
        for s in station_addrs {
            s.stop();
            s.wait().await;
        }
        for a in client_addrs {
            a.stop();
            a.wait().await;
        }
        node.barrier().await;
        if let Some(o) = &mut outcome {
            for i in 0..stations {
                let mut tries = 0;
                while node
                    .lookup::<Station<Across>>(station_name(i))
                    .await
                    .is_ok()
                {
                    tries += 1;
                    if tries > 10_000 {
                        o.problems
                            .push(format!("station {i}'s name survived its stop"));
                        break;
                    }
                    tutti::sleep(Duration::from_millis(1)).await;
                }
            }
        }
        let stopped = node
            .location()
            .all_reduce(stops.load(Ordering::SeqCst), |a, b| a + b)
            .await;
        if let Some(o) = &mut outcome {
            let expected = stations as usize + clients;
            if stopped != expected {
                o.problems
                    .push(format!("{stopped} of {expected} stop hooks ran"));
            }
        }
        node.barrier().await;
        node.leave().await;
        outcome
    });
    if let Some(Some(o)) = results.into_iter().next() {
        let text = serde_json::to_string(&o).map_err(|e| e.to_string())?;
        std::fs::write(out, text).map_err(|e| format!("{out}: {e}"))?;
    }
    Ok(())
}

/// `tutti weather --processes P`: tutti, then the Unix-socket peer.
pub fn run(args: &WeatherArgs, p: usize) -> Result<Report, String> {
    let mut report = Report::new("weather");
    report
        .param("processes", p)
        .param("stations", args.stations)
        .param("clients", args.clients)
        .param("seconds", args.seconds)
        .param("interval_us", args.interval_us)
        .param("workers", args.workers);
    let runs = [
        ("tutti/processes", run_tutti(args, p)?),
        ("uds/processes", super::uds::run(args, p)?),
    ];
    let mut rates = Vec::new();
    let mut latencies = Vec::new();
    for (name, o) in &runs {
        for problem in &o.problems {
            eprintln!("tutti weather: {name}: {problem}");
        }
        report.verify(o.problems.is_empty());
        let rate = o.delivered as f64 / (o.elapsed_ns as f64 / 1e9);
        let mean = o.latency_sum_ns as f64 / o.delivered.max(1) as f64 / 1e3;
        report.result(name, "delivered", Stats::single(rate), "readings/s");
        report.result(name, "latency_mean", Stats::single(mean), "us");
        report.result(
            name,
            "latency_max",
            Stats::single(o.latency_max_ns as f64 / 1e3),
            "us",
        );
        report.result(
            name,
            "dropped_subscribers",
            Stats::single(o.dropped as f64),
            "clients",
        );
        rates.push(rate);
        latencies.push(mean);
    }
    report.ratio("delivered_tutti_over_uds_processes", rates[0] / rates[1]);
    report.ratio(
        "latency_mean_tutti_over_uds_processes",
        latencies[0] / latencies[1].max(f64::MIN_POSITIVE),
    );
    Ok(report)
}
