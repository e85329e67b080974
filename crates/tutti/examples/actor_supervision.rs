//! Actors under a supervisor: a parser that crashes on bad input is restarted
//! with a clean state while the store beside it keeps its data; when crashes
//! come faster than the supervisor allows, it gives up and says why.
//!
//! ```sh
//! cargo run -p tutti --example actor_supervision
//! ```
//!
//! ```text
//! supervisor (one-for-one, at most 3 restarts in 10 s)
//! ├── store   keeps the entries; registered under the name "store"
//! └── parser  turns `key=value` lines into entries for the store; panics on a bad line
//! ```
//!
//! The program checks that every good line reached the store, that each bad
//! line cost exactly one restart of the parser and none of the store, and that
//! the fourth crash within the window made the supervisor stop with its restart
//! limit; it exits with an error otherwise.

use std::collections::BTreeMap;
use std::time::Duration;

use tutti::actor::{self, Actor, Addr, AskError, Child, Context, Stats, StopReason, Supervisor};
use tutti::msg::{Handler, Message};

/// Adds to an entry of the store.
struct Put(String, u64);
impl Message for Put {
    type Reply = ();
}

/// The store's entries.
struct Entries;
impl Message for Entries {
    type Reply = BTreeMap<String, u64>;
}

#[derive(Default)]
struct Store(BTreeMap<String, u64>);
impl Actor for Store {
    fn started(&mut self, ctx: &mut Context<Self>) {
        // Siblings find the store by name, whichever incarnation is running.
        actor::register("store", &ctx.addr()).expect("the name `store` is free");
    }
}
impl Handler<Put> for Store {
    async fn handle(&mut self, Put(k, v): Put, _: &mut Context<Self>) {
        *self.0.entry(k).or_default() += v;
    }
}
impl Handler<Entries> for Store {
    async fn handle(&mut self, _: Entries, _: &mut Context<Self>) -> BTreeMap<String, u64> {
        self.0.clone()
    }
}

/// A line to parse; the reply is how many lines this parser has handled since
/// it (re)started.
struct Parse(&'static str);
impl Message for Parse {
    type Reply = u64;
}

#[derive(Default)]
struct Parser {
    handled: u64,
}
impl Actor for Parser {}
impl Handler<Parse> for Parser {
    async fn handle(&mut self, Parse(line): Parse, _: &mut Context<Self>) -> u64 {
        // "Let it crash": a bad line panics, and the supervisor restarts the
        // parser with a clean state; the store is not touched.
        let (key, value) = line.split_once('=').expect("a line of the form key=value");
        let value: u64 = value.trim().parse().expect("a number after `=`");
        let store = actor::lookup::<Store>("store").expect("the store is running");
        store.tell(Put(key.trim().to_string(), value)).unwrap();
        self.handled += 1;
        self.handled
    }
}

/// The parser's current address (a restarted child is a new actor).
fn current_parser(sup: &Addr<Supervisor>) -> Addr<Parser> {
    loop {
        if let Ok(Some(p)) = sup.ask_blocking(Child::<Parser>::named("parser")) {
            if !p.is_stopped() {
                return p;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn main() {
    // The crashes are planned: print each in one line.
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a panic");
        println!("    (a crash, as planned: {msg})");
    }));

    let sup = Supervisor::builder()
        .intensity(3, Duration::from_secs(10))
        .child("store", Store::default)
        .child("parser", Parser::default)
        .spawn();

    let lines = [
        "apples = 3",
        "pears = 2",
        "apples 5", // no `=`: the parser crashes
        "apples = 4",
        "pears = two", // not a number: crashes again
        "plums = 1",
    ];
    let mut crashes = 0;
    for line in lines {
        let parser = current_parser(&sup);
        match parser.ask_blocking(Parse(line)) {
            Ok(n) => println!("{line:<14} parsed (line {n} of this parser)"),
            Err(AskError::Stopped) => {
                crashes += 1;
                let why = parser.wait_blocking();
                println!("{line:<14} crashed the parser: {why}");
            }
            Err(e) => panic!("unexpected: {e}"),
        }
    }

    let store = actor::lookup::<Store>("store").expect("the store");
    let entries = store.ask_blocking(Entries).unwrap();
    let stats = sup.ask_blocking(Stats).unwrap();
    println!("store: {entries:?}");
    for (name, _, restarts) in &stats.children {
        println!("  child {name:<6} restarted {restarts} time(s)");
    }
    let mut failures = Vec::new();
    let expected: BTreeMap<String, u64> = [("apples", 7), ("pears", 2), ("plums", 1)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    if entries != expected {
        failures.push(format!(
            "the store holds {entries:?}, expected {expected:?}"
        ));
    }
    let restarts: Vec<usize> = stats.children.iter().map(|c| c.2).collect();
    if crashes != 2 || restarts != [0, 2] {
        failures.push(format!(
            "{crashes} crashes, restarts {restarts:?}: expected 2 and [0, 2]"
        ));
    }

    // Two more bad lines: the fourth crash within 10 s is one too many.
    println!("two more bad lines within the window:");
    for line in ["figs", "dates"] {
        let parser = current_parser(&sup);
        let _ = parser.ask_blocking(Parse(line));
        println!("{line:<14} crashed the parser: {}", parser.wait_blocking());
        if sup.is_stopped() {
            break;
        }
    }
    let reason = sup.wait_blocking();
    println!("the supervisor stopped: {reason}");
    if !matches!(&reason, StopReason::RestartLimit { child, max_restarts: 3, .. } if child == "parser")
    {
        failures.push(format!(
            "the supervisor stopped with {reason:?}, expected its restart limit"
        ));
    }
    if actor::lookup::<Store>("store").is_ok() {
        failures.push("the store outlived its supervisor".into());
    }

    if !failures.is_empty() {
        for f in &failures {
            eprintln!("actor_supervision: {f}");
        }
        std::process::exit(1);
    }
    println!("verified: good lines stored, bad ones restarted only the parser, the limit held");
}
