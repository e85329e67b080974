//! The name registry: typing, vanishing names, concurrency.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tutti::actor::{self, Actor, Context, LookupError, Name, RegisterError};
use tutti::msg::{Handler, Message};
use tutti::Runtime;

fn rt() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

struct Station(&'static str);
impl Actor for Station {}
struct WhoAreYou;
impl Message for WhoAreYou {
    type Reply = &'static str;
}
impl Handler<WhoAreYou> for Station {
    async fn handle(&mut self, _: WhoAreYou, _: &mut Context<Self>) -> &'static str {
        self.0
    }
}
struct Client;
impl Actor for Client {}

#[test]
fn lookup_is_typed_and_a_wrong_type_is_an_error() {
    let rt = rt();
    let _g = rt.enter();
    let s = actor::spawn(Station("montreal"));
    actor::register("reg-typed/montreal", &s).unwrap();
    let found = actor::lookup::<Station>("reg-typed/montreal").unwrap();
    assert_eq!(found.ask_blocking(WhoAreYou).unwrap(), "montreal");
    match actor::lookup::<Client>("reg-typed/montreal") {
        Err(LookupError::WrongType {
            name,
            expected,
            found,
        }) => {
            assert_eq!(name, Name::new("reg-typed/montreal"));
            assert!(expected.ends_with("Client"));
            assert!(found.ends_with("Station"));
        }
        other => panic!("expected WrongType, got {other:?}"),
    }
    assert_eq!(
        actor::lookup::<Station>("reg-typed/nowhere").unwrap_err(),
        LookupError::NotFound {
            name: "reg-typed/nowhere".into()
        }
    );
    assert!(actor::unregister("reg-typed/montreal").is_some());
}

#[test]
fn names_vanish_when_the_actor_stops_and_can_be_reused() {
    let rt = rt();
    let _g = rt.enter();
    let s = actor::Builder::new()
        .spawn_named("reg-vanish/db", Station("first"))
        .unwrap();
    // A registered actor stays alive without outside addresses.
    let id = s.id();
    drop(s);
    let s = actor::lookup::<Station>("reg-vanish/db").unwrap();
    assert_eq!(s.id(), id);
    s.stop();
    s.wait_blocking();
    assert!(actor::lookup::<Station>("reg-vanish/db").is_err());
    assert!(matches!(
        actor::register("reg-vanish/again", &s),
        Err(RegisterError::Stopped { .. })
    ));
    let s2 = actor::Builder::new()
        .spawn_named("reg-vanish/db", Station("second"))
        .unwrap();
    assert_eq!(
        actor::lookup::<Station>("reg-vanish/db")
            .unwrap()
            .ask_blocking(WhoAreYou)
            .unwrap(),
        "second"
    );
    // Unregistering lets the actor stop by the last-address rule again.
    assert_eq!(actor::unregister("reg-vanish/db"), Some(s2.id()));
    let weak = s2.downgrade();
    drop(s2);
    while weak.upgrade().is_some() {
        std::thread::yield_now();
    }
}

#[test]
fn a_stopping_actor_only_removes_its_own_names() {
    let rt = rt();
    let _g = rt.enter();
    let a = actor::spawn(Station("a"));
    let b = actor::spawn(Station("b"));
    actor::register("reg-own/x", &a).unwrap();
    assert_eq!(actor::unregister("reg-own/x"), Some(a.id()));
    actor::register("reg-own/x", &b).unwrap();
    a.stop();
    a.wait_blocking();
    assert_eq!(actor::whereis("reg-own/x"), Some(b.id()));
    actor::unregister("reg-own/x");
}

#[test]
fn concurrent_registration_has_exactly_one_winner_per_name() {
    const THREADS: usize = 4;
    const NAMES: usize = 50;
    let rt = rt();
    let _g = rt.enter();
    let wins = Arc::new(AtomicUsize::new(0));
    let actors: Vec<_> = (0..THREADS).map(|_| actor::spawn(Station("x"))).collect();
    let all = &actors;
    std::thread::scope(|s| {
        for a in all {
            let wins = wins.clone();
            s.spawn(move || {
                for n in 0..NAMES {
                    let name = format!("reg-race/{n}");
                    match actor::register(name.as_str(), a) {
                        Ok(()) => {
                            wins.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(RegisterError::Taken { by, .. }) => assert_ne!(by, a.id()),
                        Err(e) => panic!("{e}"),
                    }
                    // Lookups from every thread always see a consistent entry.
                    let found = actor::lookup::<Station>(name.as_str()).unwrap();
                    assert!(all.iter().any(|x| x.id() == found.id()));
                    assert!(actor::lookup::<Client>(name.as_str()).is_err());
                }
            });
        }
    });
    assert_eq!(wins.load(Ordering::SeqCst), NAMES);
    // Registration racing the actor's stop: either refused, or removed by the stop.
    for round in 0..20 {
        let a = actor::spawn(Station("r"));
        let name = format!("reg-race/stop-{round}");
        std::thread::scope(|s| {
            s.spawn(|| a.stop());
            let _ = actor::register(name.as_str(), &a);
        });
        a.wait_blocking();
        assert!(actor::whereis(name.as_str()).is_none(), "stale name {name}");
    }
    for n in 0..NAMES {
        actor::unregister(format!("reg-race/{n}"));
    }
}
