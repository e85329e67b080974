//! `tutti weather`: the C task framework's weather service (§4.6) on tutti actors.
//!
//! * **Stations** register their names (`weather/station-<i>`, the thesis's
//!   repository) and run one long handler, Listing 4.1's main loop: accept
//!   whoever is waiting (`has_messages` / `try_next`: new subscribers, crash
//!   notices, the end of the run), broadcast one reading to every
//!   subscriber, sleep `--interval-us`, repeat.
//! * **Clients** join over the first half of the run: each looks its station
//!   up by name (typed lookup), subscribes with an `ask` whose answer is the
//!   sequence number of the next broadcast, and checks that the readings it
//!   gets are consecutive from there.
//! * Mid-run one client gets an injected panic. Its station notices through
//!   a monitor (`Down`) and drops it from its subscribers.
//! * At the end every station finishes its loop and reports how many
//!   readings it broadcast; every live client must have received exactly the
//!   readings from its subscription on, none lost. Then the whole actor
//!   system shuts down: every stop hook runs, the names vanish, nothing is
//!   left running.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tutti::actor::{
    self, Actor, ActorId, ActorSystem, AskError, Context, Down, LookupError, Recipient, StopReason,
};
use tutti::msg::{Handler, Message};

use crate::report::{Report, Stats};

mod args;
mod procs;
mod station;
mod tally;
mod uds;

pub use args::WeatherArgs;
use station::{
    join_at, quiet_crash, station_name, temperature, ClientTally, Finish, Post, Station,
    StationSummary, CRASH,
};

// ----- messages -----

/// One broadcast reading.
#[derive(Clone, Copy, Debug)]
struct Reading {
    station: u32,
    seq: u64,
    celsius: f32,
}
impl Message for Reading {
    type Reply = ();
}

/// Subscribe a client; the answer is the sequence number of the next broadcast.
struct Subscribe(actor::Addr<Client>);
impl Message for Subscribe {
    type Reply = u64;
}

/// A client looks its station up and subscribes (told by the client to itself).
struct Join;
impl Message for Join {
    type Reply = ();
}

/// The injected failure.
struct Crash;
impl Message for Crash {
    type Reply = ();
}

/// What a client saw.
struct Tally;
impl Message for Tally {
    type Reply = ClientTally;
}

/// The threads version: subscribers are actors of this process.
struct InProcess;

impl Post for InProcess {
    type Key = ActorId;
    type Sub = Recipient<Reading>;
    type Dropped = ActorId;
    fn post(&mut self, index: u32, seq: u64, subs: &[(ActorId, Recipient<Reading>)]) {
        let reading = Reading {
            station: index,
            seq,
            celsius: temperature(index, seq),
        };
        for (_, s) in subs {
            let _ = s.tell(reading);
        }
    }
}

impl Handler<Subscribe> for Station<InProcess> {
    async fn handle(&mut self, s: Subscribe, ctx: &mut Context<Self>) -> u64 {
        ctx.monitor(&s.0);
        self.subscribers.push((s.0.id(), s.0.recipient()));
        self.seq
    }
}

impl Handler<Down> for Station<InProcess> {
    async fn handle(&mut self, d: Down, _: &mut Context<Self>) {
        let before = self.subscribers.len();
        self.subscribers.retain(|(id, _)| *id != d.id);
        if self.subscribers.len() < before {
            self.dropped.push(d.id);
        }
    }
}

// ----- the client -----

struct Client {
    station: u32,
    tally: ClientTally,
    join_error: Option<String>,
    stops: Arc<AtomicUsize>,
}

impl Actor for Client {
    fn started(&mut self, ctx: &mut Context<Self>) {
        let _ = ctx.addr().tell(Join);
    }
    fn stopped(&mut self, _: &StopReason) {
        self.stops.fetch_add(1, Ordering::SeqCst);
    }
}

impl Handler<Join> for Client {
    async fn handle(&mut self, _: Join, ctx: &mut Context<Self>) {
        // The repository: find the station by name, checked to be a Station.
        let station = match actor::lookup::<Station<InProcess>>(station_name(self.station)) {
            Ok(s) => s,
            Err(e) => {
                self.join_error = Some(e.to_string());
                return;
            }
        };
        // Readings that arrive while we wait for the answer queue behind us.
        match station.ask(Subscribe(ctx.addr())).await {
            Ok(first) => {
                self.tally.first = Some(first);
            }
            Err(e) => self.join_error = Some(e.to_string()),
        }
    }
}

impl Handler<Reading> for Client {
    async fn handle(&mut self, r: Reading, _: &mut Context<Self>) {
        self.tally.count(r.station, r.seq, r.celsius, self.station);
    }
}

impl Handler<Crash> for Client {
    async fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
        std::panic::panic_any(CRASH);
    }
}

impl Handler<Tally> for Client {
    async fn handle(&mut self, _: Tally, _: &mut Context<Self>) -> ClientTally {
        self.tally
    }
}

// ----- the run -----

/// What one client ended with.
struct ClientOutcome {
    station: u32,
    tally: Result<ClientTally, AskError>,
    crashed: bool,
    stop: Option<StopReason>,
}

/// Runs `tutti weather`.
pub fn run(args: &WeatherArgs) -> Result<Report, String> {
    if let Some(role) = &args.child.role {
        let out = args.child.out.as_deref().unwrap_or_default();
        match role.as_str() {
            "tutti-member" => procs::tutti_member(args, out)?,
            "uds-client" => uds::client_process(args, out, args.child.member.unwrap_or(0))?,
            other => return Err(format!("unknown role {other:?}")),
        }
        std::process::exit(0);
    }
    if let Some(p) = args.processes {
        return procs::run(args, p as usize);
    }
    let (stations, clients) = (args.stations as u32, args.clients as usize);
    let seconds = Duration::from_secs_f64(args.seconds);
    let interval = Duration::from_micros(args.interval_us);
    let mut report = Report::new("weather");
    report
        .param("stations", stations)
        .param("clients", clients)
        .param("seconds", args.seconds)
        .param("interval_us", args.interval_us)
        .param("workers", args.workers);

    let rt = tutti::Runtime::builder()
        .workers(args.workers)
        .build()
        .map_err(|e| format!("cannot build a runtime with {} workers: {e}", args.workers))?;
    let _in = rt.enter();
    let _quiet = quiet_crash();
    let system = ActorSystem::new();
    let stops = Arc::new(AtomicUsize::new(0));

    // Stations register their names as they are spawned.
    let mut station_addrs = Vec::new();
    for i in 0..stations {
        let s = actor::Builder::new()
            .system(&system)
            .spawn_named(
                station_name(i),
                Station::new(i, interval, stops.clone(), InProcess),
            )
            .map_err(|e| format!("cannot register station {i}: {e}"))?;
        station_addrs.push(s);
    }

    // Clients join over the first half of the run (half of them at once);
    // one crashes at the middle.
    let start = Instant::now();
    let join_at = |c: usize| -> Duration { join_at(c, clients, seconds) };
    let crash_victim = 0;
    let mut crashed = false;
    let mut client_addrs: Vec<actor::Addr<Client>> = Vec::with_capacity(clients);
    while client_addrs.len() < clients || !crashed {
        let now = start.elapsed();
        if !crashed && now >= seconds / 2 {
            client_addrs[crash_victim]
                .tell(Crash)
                .map_err(|_| "the crash victim stopped before its crash".to_string())?;
            crashed = true;
            continue;
        }
        let c = client_addrs.len();
        if c < clients && now >= join_at(c) {
            client_addrs.push(system.spawn(Client {
                station: c as u32 % stations,
                tally: ClientTally::default(),
                join_error: None,
                stops: stops.clone(),
            }));
            continue;
        }
        let next_event = if c < clients {
            join_at(c).min(seconds / 2)
        } else {
            seconds / 2
        };
        std::thread::sleep(next_event.saturating_sub(now).min(Duration::from_millis(5)));
    }
    std::thread::sleep(seconds.saturating_sub(start.elapsed()));

    // The end: stations finish (after which nothing more is broadcast), then
    // every client has its readings queued before our question.
    let summaries: Vec<StationSummary<ActorId, ActorId>> = station_addrs
        .iter()
        .map(|s| s.ask_timeout(Finish::new(), Duration::from_secs(30)))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("a station did not finish: {e}"))?;
    let elapsed = start.elapsed();
    let outcomes: Vec<ClientOutcome> = client_addrs
        .iter()
        .enumerate()
        .map(|(c, a)| {
            let tally = a.ask_blocking(Tally);
            ClientOutcome {
                station: c as u32 % stations,
                tally,
                crashed: c == crash_victim,
                stop: (c == crash_victim).then(|| a.wait_blocking()),
            }
        })
        .collect();
    let victim_id = client_addrs[crash_victim].id();
    drop(client_addrs);

    // Verification.
    let mut problems = Vec::new();
    let mut total = 0u64;
    for (c, o) in outcomes.iter().enumerate() {
        let summary = &summaries[o.station as usize];
        if o.crashed {
            if !matches!(o.stop, Some(StopReason::Panicked(_))) {
                problems.push(format!("client {c} should have crashed: {:?}", o.stop));
            }
            if o.tally.is_ok() {
                problems.push(format!("crashed client {c} still answers"));
            }
            continue;
        }
        match &o.tally {
            Err(e) => problems.push(format!("live client {c} did not answer: {e}")),
            Ok(t) => {
                total += t.received;
                problems.extend(t.check(c, summary.broadcasts));
            }
        }
    }
    let victim_station = &summaries[(crash_victim as u32 % stations) as usize];
    let noticed = victim_station.dropped == [victim_id]
        && !victim_station.subscribers.contains(&victim_id)
        && summaries.iter().map(|s| s.dropped.len()).sum::<usize>() == 1;
    if !noticed {
        problems.push("the crashed client was not dropped through its Down notice".into());
    }
    let subscribed: usize = summaries.iter().map(|s| s.subscribers.len()).sum();
    if subscribed != clients - 1 {
        problems.push(format!(
            "{subscribed} subscribers at the end, expected {}",
            clients - 1
        ));
    }

    // Clean shutdown of the whole system.
    drop(station_addrs);
    system.shutdown_blocking();
    let all_stopped = stops.load(Ordering::SeqCst) == stations as usize + clients;
    if !all_stopped {
        problems.push(format!(
            "{} of {} stop hooks ran",
            stops.load(Ordering::SeqCst),
            stations as usize + clients
        ));
    }
    if system.live() != 0 {
        problems.push(format!(
            "{} actors still live after shutdown",
            system.live()
        ));
    }
    for i in 0..stations {
        if !matches!(
            actor::lookup::<Station<InProcess>>(station_name(i)),
            Err(LookupError::NotFound { .. })
        ) {
            problems.push(format!("station {i}'s name survived the shutdown"));
        }
    }
    for p in &problems {
        eprintln!("tutti weather: {p}");
    }
    report.verify(problems.is_empty());

    for (c, o) in outcomes.iter().enumerate() {
        let name = format!("client-{c}@station-{}", o.station);
        match &o.tally {
            Ok(t) => report.result(
                &name,
                "readings",
                Stats::single(t.received as f64),
                "readings",
            ),
            Err(_) => report.result(&name, "crashed", Stats::single(1.0), "crash"),
        }
    }
    for (i, s) in summaries.iter().enumerate() {
        report.result(
            &format!("station-{i}"),
            "broadcasts",
            Stats::single(s.broadcasts as f64),
            "readings",
        );
    }
    report.result(
        "tutti",
        "delivered",
        Stats::single(total as f64 / elapsed.as_secs_f64()),
        "readings/s",
    );
    report.result(
        "tutti",
        "dropped_subscribers",
        Stats::single(summaries.iter().map(|s| s.dropped.len()).sum::<usize>() as f64),
        "clients",
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_verifies() {
        let args = WeatherArgs {
            stations: 2,
            clients: 5,
            seconds: 0.2,
            interval_us: 500,
            workers: 2,
            processes: None,
            child: Default::default(),
            json: true,
        };
        let report = run(&args).unwrap();
        assert_eq!(report.verified(), Some(true));
    }

    #[test]
    fn temperatures_are_plausible() {
        for s in 0..20 {
            for q in 0..100 {
                assert!((15.0..31.0).contains(&temperature(s, q)));
            }
        }
    }
}
