//! A weather service on actors, small: stations register their names and broadcast
//! readings; clients look a station up and subscribe; a station accepts new subscribers
//! between broadcasts (`has_messages` / `try_next`); a client that crashes is noticed
//! through a monitor and dropped; at the end the whole system shuts down cleanly.
//!
//! ```sh
//! cargo run -p tutti --example actor_weather
//! ```
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tutti::actor::{self, Actor, ActorId, ActorSystem, Context, Down, Recipient, StopReason};
use tutti::msg::{Handler, Message};

const STATIONS: usize = 3;
const CLIENTS: usize = 6;
const ROUNDS: u64 = 50;

/// A reading: station index, sequence number, temperature.
#[derive(Clone, Copy)]
struct Reading {
    station: usize,
    seq: u64,
    celsius: f32,
}
impl Message for Reading {
    type Reply = ();
}

/// Subscribe a client; the reply is the sequence number of the next broadcast.
struct Subscribe(actor::Addr<Client>);
impl Message for Subscribe {
    type Reply = u64;
}

/// The station's own clock.
struct Tick;
impl Message for Tick {
    type Reply = ();
}

/// How many subscribers a station has now.
struct Subscribers;
impl Message for Subscribers {
    type Reply = usize;
}

struct Station {
    index: usize,
    seq: u64,
    subscribers: HashMap<ActorId, Recipient<Reading>>,
    stops: Arc<AtomicUsize>,
}

impl Station {
    fn subscribe(&mut self, s: Subscribe, ctx: &mut Context<Self>) -> u64 {
        // Notice a crashed subscriber (its Down overtakes queued messages).
        ctx.monitor(&s.0);
        self.subscribers.insert(s.0.id(), s.0.recipient());
        self.seq
    }
}

impl Actor for Station {
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.addr().tell(Tick).unwrap();
    }
    fn stopped(&mut self, _: &StopReason) {
        self.stops.fetch_add(1, Ordering::SeqCst);
    }
}

impl Handler<Subscribe> for Station {
    async fn handle(&mut self, s: Subscribe, ctx: &mut Context<Self>) -> u64 {
        self.subscribe(s, ctx)
    }
}

impl Handler<Tick> for Station {
    async fn handle(&mut self, _: Tick, ctx: &mut Context<Self>) {
        // Handle whoever is waiting to subscribe before broadcasting.
        while ctx.has_messages() {
            let Some(m) = ctx.try_next() else { break };
            match m.downcast::<Subscribe>() {
                Ok((s, responder)) => {
                    let next = self.subscribe(s, ctx);
                    if let Some(r) = responder {
                        r.respond(next);
                    }
                }
                Err(other) => other.handle(self, ctx).await,
            }
        }
        let r = Reading {
            station: self.index,
            seq: self.seq,
            celsius: 20.0 + (self.seq % 7) as f32,
        };
        self.subscribers.retain(|_, s| s.tell(r).is_ok());
        self.seq += 1;
        if self.seq < ROUNDS {
            tutti::sleep(Duration::from_micros(200)).await;
            ctx.addr().tell(Tick).unwrap();
        }
    }
}

impl Handler<Down> for Station {
    async fn handle(&mut self, d: Down, _: &mut Context<Self>) {
        self.subscribers.remove(&d.id);
    }
}

impl Handler<Subscribers> for Station {
    async fn handle(&mut self, _: Subscribers, _: &mut Context<Self>) -> usize {
        self.subscribers.len()
    }
}

/// Counts readings and checks that none is missing after the first.
struct Client {
    crash_after: Option<u64>,
    last: Option<u64>,
    received: u64,
    stops: Arc<AtomicUsize>,
}

impl Actor for Client {
    fn stopped(&mut self, _: &StopReason) {
        self.stops.fetch_add(1, Ordering::SeqCst);
    }
}

impl Handler<Reading> for Client {
    async fn handle(&mut self, r: Reading, _: &mut Context<Self>) {
        if let Some(last) = self.last {
            assert_eq!(r.seq, last + 1, "lost a reading of station {}", r.station);
        }
        assert!((20.0..27.0).contains(&r.celsius));
        self.last = Some(r.seq);
        self.received += 1;
        if Some(self.received) == self.crash_after {
            panic!("injected client crash");
        }
    }
}

struct Received;
impl Message for Received {
    type Reply = (u64, Option<u64>);
}
impl Handler<Received> for Client {
    async fn handle(&mut self, _: Received, _: &mut Context<Self>) -> (u64, Option<u64>) {
        (self.received, self.last)
    }
}

fn main() {
    // The injected crash is expected: report it in one line.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("(a client crashed as planned: {info})")
    }));
    let rt = tutti::Runtime::builder().workers(2).build().unwrap();
    let _g = rt.enter();
    let system = ActorSystem::new();
    let stops = Arc::new(AtomicUsize::new(0));

    let stations: Vec<_> = (0..STATIONS)
        .map(|i| {
            actor::Builder::new()
                .system(&system)
                .spawn_named(
                    format!("weather/{i}"),
                    Station {
                        index: i,
                        seq: 0,
                        subscribers: HashMap::new(),
                        stops: stops.clone(),
                    },
                )
                .unwrap()
        })
        .collect();

    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let client = system.spawn(Client {
            crash_after: (c == 0).then_some(5),
            last: None,
            received: 0,
            stops: stops.clone(),
        });
        // Find the station by name in the actor registry, subscribe.
        let station = actor::lookup::<Station>(format!("weather/{}", c % STATIONS)).unwrap();
        let first = station.ask_blocking(Subscribe(client.clone())).unwrap();
        clients.push((client, first));
    }

    // Wait until every live client has the last reading.
    while !clients[1..]
        .iter()
        .all(|(c, _)| c.ask_blocking(Received).unwrap().1 == Some(ROUNDS - 1))
    {
        std::thread::sleep(Duration::from_millis(1));
    }

    println!("client  station  from  readings");
    for (i, (c, first)) in clients.iter().enumerate() {
        match c.ask_blocking(Received) {
            Ok((n, last)) => {
                println!("{i:>6}  {:>7}  {first:>4}  {n:>8}", i % STATIONS);
                assert_eq!(last, Some(ROUNDS - 1));
                assert_eq!(n, ROUNDS - first, "a live client lost readings");
            }
            Err(e) => println!("{i:>6}  {:>7}  {first:>4}  crashed ({e})", i % STATIONS),
        }
    }
    let crashed = &clients[0].0;
    assert!(matches!(crashed.wait_blocking(), StopReason::Panicked(_)));
    assert_eq!(
        stations[0].ask_blocking(Subscribers).unwrap(),
        CLIENTS / STATIONS - 1,
        "the crashed client was dropped from its station"
    );
    drop(clients);

    system.shutdown_blocking();
    assert_eq!(stops.load(Ordering::SeqCst), STATIONS + CLIENTS);
    assert!(actor::lookup::<Station>("weather/0").is_err());
    println!("verified: no reading lost for live clients, crash noticed, clean shutdown");
}
