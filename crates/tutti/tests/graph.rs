//! The actor-graph suite: the same bodies run in-process (plain `cargo test`,
//! several shapes of world) and under `mpirun -n 2` / `-n 4` (`.ci/run`), so
//! every channel kind is exercised: within a location, between locations of
//! one rank, and between ranks.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;
mod watchdog;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tutti::graph::{
    ActorGraph, ActorId, BuildError, Curve, Firing, InPort, OutPort, Partition, Placement,
    PortActor, Ports, RunError, Scheme, SendError, Status, Token,
};
use tutti::msg::codec::PodVec;
use tutti::world::{Location, World};

type Body = fn(&World);

/// A grid cell's inputs and outputs (east, west, north, south), where it has neighbours.
type CellPorts = (
    Vec<Option<InPort<PodVec<f64>>>>,
    Vec<Option<OutPort<PodVec<f64>>>>,
);

const BODIES: &[(&str, Body)] = &[
    ("pipeline_in_order", pipeline_in_order),
    (
        "all_ready_wakes_once_per_firing",
        all_ready_wakes_once_per_firing,
    ),
    ("ring_of_all_locations", ring_of_all_locations),
    (
        "credits_bound_tokens_in_flight",
        credits_bound_tokens_in_flight,
    ),
    ("pond_firing_rule", pond_firing_rule),
    (
        "one_token_per_act_never_stalls",
        one_token_per_act_never_stalls,
    ),
    (
        "all_ready_fires_when_room_frees_after_a_refill",
        all_ready_fires_when_room_frees_after_a_refill,
    ),
    ("grid_halo_exchange", grid_halo_exchange),
    ("stall_is_reported_everywhere", stall_is_reported_everywhere),
    ("panic_is_reported_everywhere", panic_is_reported_everywhere),
    ("early_consumer_end_discards", early_consumer_end_discards),
    (
        "build_errors_are_the_same_everywhere",
        build_errors_are_the_same_everywhere,
    ),
    ("different_graphs_are_refused", different_graphs_are_refused),
];

/// The bodies that move tokens, run again with every channel one-sided.
const ONE_SIDED_BODIES: &[(&str, Body)] = &[
    ("pipeline_in_order", pipeline_in_order),
    ("ring_of_all_locations", ring_of_all_locations),
    (
        "credits_bound_tokens_in_flight",
        credits_bound_tokens_in_flight,
    ),
    ("pond_firing_rule", pond_firing_rule),
    (
        "one_token_per_act_never_stalls",
        one_token_per_act_never_stalls,
    ),
    (
        "all_ready_fires_when_room_frees_after_a_refill",
        all_ready_fires_when_room_frees_after_a_refill,
    ),
    ("grid_halo_exchange", grid_halo_exchange),
    ("early_consumer_end_discards", early_consumer_end_discards),
];

/// Whether [`builder`] makes every channel one-sided (set between bodies,
/// while no body runs).
static ONE_SIDED: AtomicBool = AtomicBool::new(false);

/// A graph builder with the scheme the suite is running.
fn builder() -> tutti::graph::GraphBuilder {
    let mut b = ActorGraph::builder();
    if ONE_SIDED.load(Ordering::Relaxed) {
        b.scheme(Scheme::ONE_SIDED).unwrap();
    }
    b
}

/// Whether one-sided channels can run here: one rank (no channel crosses
/// ranks), or ranks joined by MPI.
fn one_sided_runs(world: &World) -> bool {
    world.ranks() == 1 || world.config().transport().uses_mpi()
}

/// Whether the body `name` runs: every body, or only those named on the
/// command line (`graph ring_of_all_locations` runs one case, e.g. in a loop
/// under `mpirun`).
fn chosen(name: &str) -> bool {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    named.is_empty() || named.iter().any(|n| n == name)
}

fn main() {
    common::run_suite(
        "graph suite",
        &[(1, 1, 1), (2, 2, 1), (4, 2, 1), (3, 1, 8)],
        |world| {
            ONE_SIDED.store(false, Ordering::Relaxed);
            for (name, body) in BODIES.iter().filter(|(n, _)| chosen(n)) {
                body(world);
                if world.rank() == 0 {
                    println!("  {name}: ok");
                }
            }
            if chosen("one_sided_slots_and_errors") {
                one_sided_slots_and_errors(world);
                if world.rank() == 0 {
                    println!("  one_sided_slots_and_errors: ok");
                }
            }
            if one_sided_runs(world) {
                ONE_SIDED.store(true, Ordering::Relaxed);
                for (name, body) in ONE_SIDED_BODIES.iter().filter(|(n, _)| chosen(n)) {
                    body(world);
                    if world.rank() == 0 {
                        println!("  {name} (one-sided): ok");
                    }
                }
                ONE_SIDED.store(false, Ordering::Relaxed);
            }
        },
    );
}

/// One-sided channels between ranks: tokens of sizes around the slot size
/// (16 bytes) go source → relay → sink over every location, in order and
/// intact; the ones that fit are put, the larger ones travel two-sided; with
/// MPI both kinds are counted. Where ranks are not joined by MPI the run is
/// refused with the same error on every location.
fn one_sided_slots_and_errors(world: &World) {
    let n_loc = world.locations();
    let got = on_all(world, move |loc| async move {
        let mut b = ActorGraph::builder();
        let scheme = Scheme::OneSided { slot: 16 };
        let src = b.actor("source").unwrap();
        let so = b.output::<Vec<u8>>(src, "out").unwrap();
        let rel = b.actor("relay").unwrap();
        let (ri, ro) = (
            b.input::<Vec<u8>>(rel, "in").unwrap(),
            b.output::<Vec<u8>>(rel, "out").unwrap(),
        );
        let snk = b.actor("sink").unwrap();
        let si = b.input::<Vec<u8>>(snk, "in").unwrap();
        b.connect_with(so, ri, 1, scheme).unwrap();
        b.connect_with(ro, si, 3, scheme).unwrap();
        assert_eq!(
            b.connect_with(so, si, 1, Scheme::OneSided { slot: 0 }),
            Err(BuildError::ZeroSlot)
        );
        let g = b.build();
        let place = vec![0, n_loc / 2, n_loc - 1];
        let placement = g.partition(n_loc, &Partition::Explicit(place)).unwrap();
        let token = |k: usize| -> Vec<u8> { (0..k % 40).map(|j| (k + j) as u8).collect() };
        let total = TOKENS;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = Arc::clone(&seen);
        let r = g
            .run(&loc, &placement, move |id| -> Box<dyn PortActor> {
                if id == src {
                    let mut next = 0;
                    Box::new(move |p: &mut Ports| {
                        while next < total {
                            match p.send(so, token(next)) {
                                Ok(()) => next += 1,
                                Err(SendError::Full(_)) => return Status::Continue,
                                Err(e) => panic!("source: {e}"),
                            }
                        }
                        Status::Done
                    })
                } else if id == rel {
                    let mut held: Option<Vec<u8>> = None;
                    Box::new(move |p: &mut Ports| loop {
                        if held.is_none() {
                            held = p.recv(ri);
                        }
                        match held.take() {
                            Some(v) => {
                                if let Err(SendError::Full(v)) = p.send(ro, v) {
                                    held = Some(v);
                                    return Status::Continue;
                                }
                            }
                            None if p.is_ended(ri) => return Status::Done,
                            None => return Status::Continue,
                        }
                    })
                } else {
                    let s2 = Arc::clone(&s2);
                    Box::new(move |p: &mut Ports| {
                        while let Some(v) = p.recv(si) {
                            s2.lock().unwrap().push(v);
                        }
                        if p.is_ended(si) {
                            Status::Done
                        } else {
                            Status::Continue
                        }
                    })
                }
            })
            .await;
        let here = placement.location(snk) == loc.id();
        match r {
            Ok(rep) => {
                let counts = loc
                    .all_reduce((rep.puts, rep.oversize), |a, b| (a.0 + b.0, a.1 + b.1))
                    .await;
                let v = std::mem::take(&mut *seen.lock().unwrap());
                Ok((here, v, counts))
            }
            Err(e) => Err(e),
        }
    });
    // The relay sits on another rank than the source whenever there are ranks.
    let crosses = world.ranks() > 1;
    for r in got {
        if !one_sided_runs(world) {
            match r {
                Err(RunError::Scheme(why)) => {
                    assert!(why.contains("need the MPI transport"), "{why}")
                }
                other => panic!("one-sided without MPI across ranks: {other:?}"),
            }
            continue;
        }
        let (here, v, (puts, oversize)) = r.expect("one-sided run");
        if here {
            let want: Vec<Vec<u8>> = (0..TOKENS)
                .map(|k| (0..k % 40).map(|j| (k + j) as u8).collect())
                .collect();
            assert!(v == want, "every token once, in order, intact");
        }
        if crosses {
            // Encoded: a length byte (varint) + the bytes; those of at most
            // 16 bytes are put, the others sent two-sided.
            assert!(puts > 0 && oversize > 0, "puts {puts}, oversize {oversize}");
        } else {
            assert_eq!((puts, oversize), (0, 0), "no channel crosses ranks");
        }
    }
}

const TOKENS: usize = 500;

/// Runs `f` on every location and returns what location 0 of this rank got.
fn on_all<R: Send + 'static, Fut: std::future::Future<Output = R> + Send + 'static>(
    world: &World,
    f: impl Fn(Arc<Location>) -> Fut,
) -> Vec<R> {
    world.run(|loc| f(Arc::new(loc)))
}

/// Two actors, `producer.out` joined to `consumer.in` with `capacity`, the
/// producer placed on location `at.0` and the consumer on `at.1`.
struct Pair<T> {
    graph: ActorGraph,
    placement: Placement,
    producer: ActorId,
    out: OutPort<T>,
    inp: InPort<T>,
}

fn pair<T: Token>(
    names: (&str, &str),
    capacity: usize,
    at: (usize, usize),
    n_loc: usize,
) -> Pair<T> {
    let mut b = builder();
    let producer = b.actor(names.0).unwrap();
    let out = b.output::<T>(producer, "out").unwrap();
    let consumer = b.actor(names.1).unwrap();
    let inp = b.input::<T>(consumer, "in").unwrap();
    b.connect(out, inp, capacity).unwrap();
    let graph = b.build();
    let placement = graph
        .partition(n_loc, &Partition::Explicit(vec![at.0, at.1]))
        .unwrap();
    Pair {
        graph,
        placement,
        producer,
        out,
        inp,
    }
}

/// Checks that every location's run failed with the report `pick` finds,
/// `len` entries long, its first entry naming every one of `needles`.
fn assert_reported<R: std::fmt::Debug>(
    results: Vec<Result<R, RunError>>,
    pick: fn(&RunError) -> Option<&Vec<String>>,
    len: usize,
    needles: &[&str],
) {
    for r in results {
        let err = r.expect_err("the run should have failed");
        let w = pick(&err).unwrap_or_else(|| panic!("a different failure: {err:?}"));
        assert_eq!(w.len(), len, "{w:?}");
        for n in needles {
            assert!(w[0].contains(n), "{n:?} missing from {w:?}");
        }
    }
}

/// A source sending `0..n` then ending.
fn source(out: OutPort<u64>, n: u64) -> Box<dyn PortActor> {
    let mut next = 0;
    Box::new(move |p: &mut Ports| {
        while next < n {
            match p.send(out, next) {
                Ok(()) => next += 1,
                Err(SendError::Full(_)) => return Status::Continue,
                Err(e) => panic!("source: {e}"),
            }
        }
        Status::Done
    })
}

/// Forwards tokens from `inp` to `out`, adding `add`.
fn relay(inp: InPort<u64>, out: OutPort<u64>, add: u64) -> Box<dyn PortActor> {
    let mut pending: Option<u64> = None;
    Box::new(move |p: &mut Ports| loop {
        let v = match pending.take() {
            Some(v) => v,
            None => match p.recv(inp) {
                Some(v) => v + add,
                None => {
                    return if p.is_ended(inp) {
                        Status::Done
                    } else {
                        Status::Continue
                    }
                }
            },
        };
        match p.send(out, v) {
            Ok(()) => {}
            Err(SendError::Full(v)) => {
                pending = Some(v);
                return Status::Continue;
            }
            Err(e) => panic!("relay: {e}"),
        }
    })
}

/// Checks order and collects into `seen`.
fn sink(inp: InPort<u64>, seen: Arc<Mutex<Vec<u64>>>) -> Box<dyn PortActor> {
    Box::new(move |p: &mut Ports| {
        while let Some(v) = p.recv(inp) {
            seen.lock().unwrap().push(v);
        }
        if p.is_ended(inp) {
            Status::Done
        } else {
            Status::Continue
        }
    })
}

/// source → relay × k → sink, one stage per location round-robin.
fn pipeline_in_order(world: &World) {
    let n_loc = world.locations();
    let out = on_all(world, move |loc| async move {
        let stages = 5;
        let mut b = builder();
        let mut ids = Vec::new();
        let src = b.actor("source").unwrap();
        let src_out = b.output::<u64>(src, "out").unwrap();
        let mut prev = src_out;
        ids.push(src);
        let mut relays = Vec::new();
        for s in 0..stages {
            let a = b.actor(&format!("relay{s}")).unwrap();
            let i = b.input::<u64>(a, "in").unwrap();
            let o = b.output::<u64>(a, "out").unwrap();
            b.connect(prev, i, 1 + s % 3).unwrap();
            prev = o;
            relays.push((a, i, o));
            ids.push(a);
        }
        let snk = b.actor("sink").unwrap();
        let si = b.input::<u64>(snk, "in").unwrap();
        b.connect(prev, si, 2).unwrap();
        let g = b.build();
        let n = g.actors();
        let place: Vec<usize> = (0..n).map(|a| a % n_loc).collect();
        let placement = g.partition(n_loc, &Partition::Explicit(place)).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = Arc::clone(&seen);
        g.run(&loc, &placement, move |id| {
            if id == src {
                source(src_out, 1000)
            } else if id == snk {
                sink(si, Arc::clone(&s2))
            } else {
                let &(_, i, o) = relays.iter().find(|r| r.0 == id).unwrap();
                relay(i, o, 1)
            }
        })
        .await
        .expect("pipeline");
        let v = seen.lock().unwrap().clone();
        (placement.location(snk) == loc.id(), v)
    });
    for (has_sink, v) in out {
        if has_sink {
            let want: Vec<u64> = (0..1000).map(|x| x + 5).collect();
            assert_eq!(
                v, want,
                "tokens arrive once, in order, each relayed five times"
            );
        } else {
            assert!(v.is_empty());
        }
    }
}

/// A ring through one actor per location: a token goes round `laps` times.
fn ring_of_all_locations(world: &World) {
    let total = on_all(world, |loc| async move {
        let n = loc.world().locations();
        let mut b = builder();
        let mut ports = Vec::new();
        for i in 0..n {
            let a = b.actor(&format!("node{i}")).unwrap();
            ports.push((
                a,
                b.input::<u64>(a, "in").unwrap(),
                b.output::<u64>(a, "out").unwrap(),
            ));
        }
        for i in 0..n {
            b.connect(ports[i].2, ports[(i + 1) % n].1, 1).unwrap();
        }
        let g = b.build();
        let placement = g.partition(n, &Partition::Block).unwrap();
        assert_eq!(placement.edge_cut(), if n > 1 { n } else { 0 });
        let hops = Arc::new(AtomicU64::new(0));
        let h2 = Arc::clone(&hops);
        let laps = 50u64;
        g.run(&loc, &placement, move |id| {
            let (_, inp, out) = ports[id.index()];
            let first = id.index() == 0;
            let hops = Arc::clone(&h2);
            // The token this node holds: the first node starts with it.
            let mut held = first.then_some(0u64);
            Box::new(move |p: &mut Ports| loop {
                if let Some(v) = held.take() {
                    match p.send(out, v) {
                        Ok(()) => {}
                        // The credit of the token's last visit here has not
                        // come back yet: messages from different locations
                        // are not ordered, so the token may have gone round
                        // the ring faster than the credit came back.
                        Err(SendError::Full(v)) => {
                            held = Some(v);
                            return Status::Continue;
                        }
                        // The first node ended the ring: its input is gone.
                        Err(_) => return Status::Done,
                    }
                }
                match p.recv(inp) {
                    Some(v) => {
                        hops.fetch_add(1, Ordering::Relaxed);
                        if first && v + 1 >= laps {
                            return Status::Done;
                        }
                        held = Some(if first { v + 1 } else { v });
                    }
                    None if p.is_ended(inp) => return Status::Done,
                    None => return Status::Continue,
                }
            }) as Box<dyn PortActor>
        })
        .await
        .expect("ring");
        loc.all_reduce(hops.load(Ordering::Relaxed), |a, b| a + b)
            .await
    });
    let n = world.locations() as u64;
    for t in total {
        assert_eq!(t, 50 * n, "every node sees every lap once");
    }
}

/// A fast producer and a consumer that keeps count of tokens in flight: with
/// capacity 3 no more than 3 are ever sent and not yet taken, across ranks too.
fn credits_bound_tokens_in_flight(world: &World) {
    let n_loc = world.locations();
    let ok = on_all(world, move |loc| async move {
        // Producer on the first location, consumer on the last.
        let Pair {
            graph: g,
            placement,
            producer: pa,
            out,
            inp,
        } = pair::<u64>(("producer", "consumer"), 3, (0, n_loc - 1), n_loc);
        let mut next = 0u64;
        let mut taken = 0u64;
        let mut max_gap = 0u64;
        let result = Arc::new(AtomicU64::new(u64::MAX));
        let r2 = Arc::clone(&result);
        let total = 2000;
        g.run(&loc, &placement, move |id| -> Box<dyn PortActor> {
            if id == pa {
                Box::new(move |p: &mut Ports| {
                    while next < total {
                        match p.send(out, next) {
                            Ok(()) => next += 1,
                            Err(_) => return Status::Continue,
                        }
                    }
                    Status::Done
                })
            } else {
                let r2 = Arc::clone(&r2);
                Box::new(move |p: &mut Ports| {
                    // Take one token per call: the producer runs ahead.
                    let queued = p.len(inp) as u64;
                    max_gap = max_gap.max(queued);
                    if let Some(v) = p.recv(inp) {
                        assert_eq!(v, taken);
                        taken += 1;
                    }
                    if taken == total {
                        r2.store(max_gap, Ordering::Relaxed);
                        return Status::Done;
                    }
                    if p.len(inp) > 0 {
                        // More waiting: ask to be run again by sending nothing;
                        // OnChange will fire again on the next arrival anyway,
                        // so drain the rest now.
                        while let Some(v) = p.recv(inp) {
                            assert_eq!(v, taken);
                            taken += 1;
                        }
                        if taken == total {
                            r2.store(max_gap, Ordering::Relaxed);
                            return Status::Done;
                        }
                    }
                    Status::Continue
                })
            }
        })
        .await
        .expect("credits");
        let gap = result.load(Ordering::Relaxed);
        gap == u64::MAX || gap <= 3
    });
    assert!(ok.iter().all(|&b| b), "never more than the capacity queued");
}

/// Pond's rule is evaluated where tokens arrive: an adder of four inputs of
/// capacity 1, fed a token at a time by four producers on its location, is
/// woken about once per sum, not once per token (which would be ~4 per sum).
fn all_ready_wakes_once_per_firing(world: &World) {
    let n = 300u64;
    let got = on_all(world, move |loc| async move {
        let mut b = builder();
        let add = b.actor_firing("adder", Firing::AllReady).unwrap();
        let mut ins = Vec::new();
        let mut srcs = Vec::new();
        for k in 0..4 {
            let s = b.actor(&format!("src{k}")).unwrap();
            let o = b.output::<u64>(s, "out").unwrap();
            let i = b.input::<u64>(add, &format!("in{k}")).unwrap();
            b.connect(o, i, 1).unwrap();
            ins.push(i);
            srcs.push((s, o));
        }
        let g = b.build();
        // Everything on location 0: the gate of a local actor.
        let placement = g
            .partition(loc.world().locations(), &Partition::Explicit(vec![0; 5]))
            .unwrap();
        let sum = Arc::new(AtomicU64::new(0));
        let s2 = Arc::clone(&sum);
        let report = g
            .run(&loc, &placement, move |id| -> Box<dyn PortActor> {
                if id == add {
                    let (ins, s2) = (ins.clone(), Arc::clone(&s2));
                    Box::new(move |p: &mut Ports| {
                        let mut total = 0;
                        for &i in &ins {
                            match p.recv(i) {
                                Some(v) => total += v,
                                None => return Status::Done, // ended
                            }
                        }
                        s2.fetch_add(total, Ordering::Relaxed);
                        Status::Continue
                    })
                } else {
                    let &(_, o) = srcs.iter().find(|s| s.0 == id).unwrap();
                    source(o, n)
                }
            })
            .await
            .expect("adder");
        (
            loc.id().index() == 0,
            report.wakeups,
            sum.load(Ordering::Relaxed),
        )
    });
    for (first, wakeups, sum) in got {
        if first {
            assert_eq!(sum, 4 * (n * (n - 1) / 2), "every token summed once");
            // The adder: at most one wake-up per completed set, plus the
            // closes; each source: about one per freed slot (n), so about
            // 5n in all; woken per token, the adder alone would add 4n more.
            assert!(wakeups <= 5 * n + 20, "{wakeups} wake-ups for {n} sums");
        }
    }
}

/// Pond's rule: an adder fires only with a token on both inputs and room out.
fn pond_firing_rule(world: &World) {
    let n_loc = world.locations();
    let sums = on_all(world, move |loc| async move {
        let mut b = builder();
        let a1 = b.actor("a").unwrap();
        let o1 = b.output::<u64>(a1, "out").unwrap();
        let a2 = b.actor("b").unwrap();
        let o2 = b.output::<u64>(a2, "out").unwrap();
        let add = b.actor_firing("add", Firing::AllReady).unwrap();
        let (x, y) = (
            b.input::<u64>(add, "x").unwrap(),
            b.input::<u64>(add, "y").unwrap(),
        );
        let z = b.output::<u64>(add, "z").unwrap();
        let s = b.actor("sink").unwrap();
        let si = b.input::<u64>(s, "in").unwrap();
        b.connect(o1, x, 2).unwrap();
        b.connect(o2, y, 5).unwrap();
        b.connect(z, si, 1).unwrap();
        let g = b.build();
        let placement = g.partition(n_loc, &Partition::Block).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = Arc::clone(&seen);
        let fired_without = Arc::new(AtomicUsize::new(0));
        let f2 = Arc::clone(&fired_without);
        g.run(&loc, &placement, move |id| -> Box<dyn PortActor> {
            if id == a1 {
                source(o1, 100)
            } else if id == a2 {
                source(o2, 100)
            } else if id == add {
                let f2 = Arc::clone(&f2);
                Box::new(move |p: &mut Ports| {
                    match (p.recv(x), p.recv(y)) {
                        (Some(a), Some(b)) => p.send(z, a * 1000 + b).unwrap(),
                        (None, None) if p.is_ended(x) && p.is_ended(y) => return Status::Done,
                        _ => {
                            f2.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Status::Continue
                })
            } else {
                sink(si, Arc::clone(&s2))
            }
        })
        .await
        .expect("pond");
        assert_eq!(
            fired_without.load(Ordering::Relaxed),
            0,
            "fired without both tokens"
        );
        let v = seen.lock().unwrap().clone();
        (placement.location(s) == loc.id(), v)
    });
    for (has, v) in sums {
        if has {
            let want: Vec<u64> = (0..100).map(|i| i * 1000 + i).collect();
            assert_eq!(v, want);
        }
    }
}

/// A producer that sends one token per `act()` and returns, into a channel of
/// capacity 4: it runs again after each completed send — when the consumer takes
/// the token — even though it never saw the channel full (Pond calls `act()` after
/// every completed send). Both on one location, and on two where there are.
fn one_token_per_act_never_stalls(world: &World) {
    let n_loc = world.locations();
    for at in [(0, 0), (0, n_loc - 1)] {
        let got = on_all(world, move |loc| async move {
            let Pair {
                graph: g,
                placement: p,
                producer,
                out,
                inp,
            } = pair::<u64>(("one_at_a_time", "sink"), 4, at, n_loc);
            let n = 200;
            let seen = Arc::new(Mutex::new(Vec::new()));
            let s2 = Arc::clone(&seen);
            g.run(&loc, &p, move |id| -> Box<dyn PortActor> {
                if id == producer {
                    let mut next = 0u64;
                    Box::new(move |p: &mut Ports| {
                        match p.send(out, next) {
                            Ok(()) => next += 1,
                            Err(SendError::Full(_)) => {}
                            Err(e) => panic!("one_at_a_time: {e}"),
                        }
                        if next == n {
                            Status::Done
                        } else {
                            Status::Continue
                        }
                    })
                } else {
                    sink(inp, Arc::clone(&s2))
                }
            })
            .await
            .unwrap_or_else(|e| panic!("one token per act() on {at:?}: {e}"));
            let v = std::mem::take(&mut *seen.lock().unwrap());
            (p.location(ActorId::new(1)) == loc.id(), v)
        });
        for (has, v) in got {
            if has {
                assert_eq!(v, (0..200).collect::<Vec<u64>>(), "on {at:?}");
            }
        }
    }
}

/// Pond's rule on one location: an `AllReady` relay whose input refills while
/// its output is full fires once the output frees room. The source sends the
/// relay's next token before it tells the sink (on a second channel) to take
/// the relay's last one, so the relay, having just filled its output and found
/// its input empty, sees the input refill while the output is still full; then
/// the sink takes from the output.
fn all_ready_fires_when_room_frees_after_a_refill(world: &World) {
    let n = 100u64;
    let got = on_all(world, move |loc| async move {
        let mut b = builder();
        let src = b.actor("source").unwrap();
        let (sx, sgo) = (
            b.output::<u64>(src, "data").unwrap(),
            b.output::<u64>(src, "go").unwrap(),
        );
        let relay = b.actor_firing("relay", Firing::AllReady).unwrap();
        let (rx, rz) = (
            b.input::<u64>(relay, "in").unwrap(),
            b.output::<u64>(relay, "out").unwrap(),
        );
        let snk = b.actor_firing("sink", Firing::AllReady).unwrap();
        let (kz, kgo) = (
            b.input::<u64>(snk, "in").unwrap(),
            b.input::<u64>(snk, "go").unwrap(),
        );
        b.connect(sx, rx, 1).unwrap();
        b.connect(rz, kz, 1).unwrap();
        b.connect(sgo, kgo, n as usize).unwrap();
        let g = b.build();
        // Everything on location 0: the channels and gates within a location.
        let placement = g
            .partition(loc.world().locations(), &Partition::Explicit(vec![0; 3]))
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = Arc::clone(&seen);
        let r = g
            .run(&loc, &placement, move |id| -> Box<dyn PortActor> {
                if id == src {
                    let (mut next, mut told) = (0u64, 0u64);
                    Box::new(move |p: &mut Ports| loop {
                        // "go" for token i once token i + 1 is out (or all are).
                        let may_tell = if next == n { n } else { next.saturating_sub(1) };
                        if told < may_tell {
                            p.send(sgo, told).expect("go has room for every token");
                            told += 1;
                            continue;
                        }
                        if next < n {
                            match p.send(sx, next) {
                                Ok(()) => {
                                    next += 1;
                                    continue;
                                }
                                Err(SendError::Full(_)) => return Status::Continue,
                                Err(e) => panic!("source: {e}"),
                            }
                        }
                        return Status::Done;
                    })
                } else if id == relay {
                    Box::new(move |p: &mut Ports| match p.recv(rx) {
                        Some(v) => {
                            p.send(rz, v).expect("the rule promised room");
                            Status::Continue
                        }
                        None => Status::Done, // ended
                    })
                } else {
                    let s2 = Arc::clone(&s2);
                    Box::new(move |p: &mut Ports| match (p.recv(kz), p.recv(kgo)) {
                        (Some(v), Some(go)) => {
                            s2.lock().unwrap().push((v, go));
                            Status::Continue
                        }
                        (None, None) => Status::Done, // both ended
                        other => panic!("sink fired with {other:?}"),
                    })
                }
            })
            .await;
        let v = std::mem::take(&mut *seen.lock().unwrap());
        (loc.id().index() == 0, r.map(|_| v))
    });
    for (first, r) in got {
        let v = r.unwrap_or_else(|e| panic!("relay with a refilled input: {e}"));
        if first {
            let want: Vec<(u64, u64)> = (0..n).map(|i| (i, i)).collect();
            assert_eq!(v, want);
        }
    }
}

/// A 4 × 4 grid of cells exchanging `PodVec<f64>` halos with their four
/// neighbours for several steps; each cell's value is checked against the
/// sequential result.
fn grid_halo_exchange(world: &World) {
    let n_loc = world.locations();
    let got = on_all(world, move |loc| async move {
        let (w, h, steps) = (4usize, 4usize, 6u32);
        let mut b = builder();
        // dir 0..4 = east, west, north, south.
        let mut ports: Vec<CellPorts> = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let a = b.actor(&format!("cell{x}_{y}")).unwrap();
                let mut ins = Vec::new();
                let mut outs = Vec::new();
                for (d, name) in ["e", "w", "n", "s"].iter().enumerate() {
                    let exists = match d {
                        0 => x + 1 < w,
                        1 => x > 0,
                        2 => y > 0,
                        _ => y + 1 < h,
                    };
                    ins.push(exists.then(|| b.input(a, &format!("in_{name}")).unwrap()));
                    outs.push(exists.then(|| b.output(a, &format!("out_{name}")).unwrap()));
                }
                ports.push((ins, outs));
            }
        }
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                if x + 1 < w {
                    b.connect(ports[i].1[0].unwrap(), ports[i + 1].0[1].unwrap(), 1)
                        .unwrap();
                    b.connect(ports[i + 1].1[1].unwrap(), ports[i].0[0].unwrap(), 1)
                        .unwrap();
                }
                if y + 1 < h {
                    b.connect(ports[i].1[3].unwrap(), ports[i + w].0[2].unwrap(), 1)
                        .unwrap();
                    b.connect(ports[i + w].1[2].unwrap(), ports[i].0[3].unwrap(), 1)
                        .unwrap();
                }
            }
        }
        let g = b.build();
        let placement: Placement = g
            .partition(
                n_loc,
                &Partition::Grid {
                    cols: w,
                    rows: h,
                    curve: Curve::Hilbert,
                },
            )
            .unwrap();
        let results = Arc::new(Mutex::new(vec![0.0f64; w * h]));
        let r2 = Arc::clone(&results);
        let ports = Arc::new(ports);
        g.run(&loc, &placement, move |id| -> Box<dyn PortActor> {
            let i = id.index();
            let (ins, outs) = ports[i].clone();
            let mut value = i as f64;
            let mut step = 0;
            let mut sent = false;
            let r2 = Arc::clone(&r2);
            Box::new(move |p: &mut Ports| loop {
                if step == steps {
                    r2.lock().unwrap()[i] = value;
                    return Status::Done;
                }
                if !sent {
                    for o in outs.iter().flatten() {
                        if p.room(*o) == 0 {
                            return Status::Continue;
                        }
                    }
                    for o in outs.iter().flatten() {
                        p.send(*o, PodVec(vec![value; 3])).unwrap();
                    }
                    sent = true;
                }
                if ins.iter().flatten().any(|i| p.len(*i) == 0) {
                    return Status::Continue;
                }
                let mut sum = value;
                for inp in ins.iter().flatten() {
                    let halo = p.recv(*inp).unwrap().into_inner();
                    assert_eq!(halo.len(), 3);
                    sum += halo[0];
                }
                value = sum / 2.0;
                step += 1;
                sent = false;
            })
        })
        .await
        .expect("grid");
        let mine = results.lock().unwrap().clone();
        loc.all_reduce(mine, |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect())
            .await
    });
    // Sequential reference.
    let (w, h) = (4usize, 4usize);
    let mut v: Vec<f64> = (0..w * h).map(|i| i as f64).collect();
    for _ in 0..6 {
        let old = v.clone();
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                let mut s = old[i];
                if x + 1 < w {
                    s += old[i + 1];
                }
                if x > 0 {
                    s += old[i - 1];
                }
                if y > 0 {
                    s += old[i - w];
                }
                if y + 1 < h {
                    s += old[i + w];
                }
                v[i] = s / 2.0;
            }
        }
    }
    for g in got {
        assert_eq!(
            g, v,
            "the distributed grid equals the sequential one bit for bit"
        );
    }
}

/// Two actors on different locations each waiting for the other.
fn stall_is_reported_everywhere(world: &World) {
    let n_loc = world.locations();
    let errs = on_all(world, move |loc| async move {
        let mut b = builder();
        let a = b.actor("a").unwrap();
        let c = b.actor("c").unwrap();
        let (ao, ai) = (
            b.output::<u8>(a, "out").unwrap(),
            b.input::<u8>(a, "in").unwrap(),
        );
        let (co, ci) = (
            b.output::<u8>(c, "out").unwrap(),
            b.input::<u8>(c, "in").unwrap(),
        );
        b.connect(ao, ci, 1).unwrap();
        b.connect(co, ai, 1).unwrap();
        let g = b.build();
        let p = g
            .partition(n_loc, &Partition::Explicit(vec![0, n_loc - 1]))
            .unwrap();
        g.run(&loc, &p, |_| -> Box<dyn PortActor> {
            Box::new(|_: &mut Ports| Status::Continue)
        })
        .await
    });
    assert_reported(
        errs,
        |e| match e {
            RunError::Stalled(w) => Some(w),
            _ => None,
        },
        2,
        &["actor 'a'", "input 'in' holds 0"],
    );
}

fn panic_is_reported_everywhere(world: &World) {
    let n_loc = world.locations();
    let errs = on_all(world, move |loc| async move {
        let Pair {
            graph: g,
            placement: p,
            producer: a,
            inp: i,
            ..
        } = pair::<u64>(("bad", "sink"), 1, (n_loc - 1, 0), n_loc);
        let seen = Arc::new(Mutex::new(Vec::new()));
        g.run(&loc, &p, move |id| -> Box<dyn PortActor> {
            if id == a {
                Box::new(|_: &mut Ports| panic!("boom in act"))
            } else {
                sink(i, Arc::clone(&seen))
            }
        })
        .await
    });
    assert_reported(
        errs,
        |e| match e {
            RunError::Panicked(w) => Some(w),
            _ => None,
        },
        1,
        &["actor 'bad'", "boom in act"],
    );
}

/// A consumer that stops after 3 tokens: the producer sees `Closed`, and what
/// was left is counted as discarded, not silently lost.
fn early_consumer_end_discards(world: &World) {
    let n_loc = world.locations();
    let got = on_all(world, move |loc| async move {
        let Pair {
            graph: g,
            placement: p,
            producer: a,
            out: o,
            inp: i,
        } = pair::<u64>(("p", "c"), 4, (0, n_loc - 1), n_loc);
        let sent = Arc::new(AtomicU64::new(0));
        let s2 = Arc::clone(&sent);
        let mut took = 0;
        let report = g
            .run(&loc, &p, move |id| -> Box<dyn PortActor> {
                if id == a {
                    let s2 = Arc::clone(&s2);
                    Box::new(move |p: &mut Ports| loop {
                        match p.send(o, 1) {
                            Ok(()) => {
                                s2.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(SendError::Full(_)) => return Status::Continue,
                            Err(SendError::Closed(_)) => return Status::Done,
                            Err(e) => panic!("{e}"),
                        }
                    })
                } else {
                    Box::new(move |p: &mut Ports| {
                        while took < 3 {
                            if p.recv(i).is_none() {
                                return Status::Continue;
                            }
                            took += 1;
                        }
                        Status::Done
                    })
                }
            })
            .await
            .expect("early end");
        let (s, d) = (sent.load(Ordering::Relaxed), report.discarded);
        loc.all_reduce((s, d), |a, b| (a.0 + b.0, a.1 + b.1)).await
    });
    for (sent, discarded) in got {
        assert_eq!(sent, 3 + discarded, "every token sent is taken or counted");
    }
}

fn build_errors_are_the_same_everywhere(world: &World) {
    let errs = on_all(world, |loc| async move {
        let mut b = builder();
        let a = b.actor("a").unwrap();
        let o = b.output::<u32>(a, "out").unwrap();
        let c = b.actor("c").unwrap();
        let i = b.input::<u32>(c, "in").unwrap();
        b.input::<String>(c, "text").unwrap();
        b.connect(o, i, 1).unwrap();
        let twice = b.connect(o, i, 1).unwrap_err();
        let types = b.connect_named("a.out", "c.text", 1).unwrap_err();
        let missing = b.connect_named("a.nope", "c.in", 1).unwrap_err();
        let dir = b.connect_named("c.in", "a.out", 1).unwrap_err();
        let texts = vec![
            twice.to_string(),
            types.to_string(),
            missing.to_string(),
            dir.to_string(),
        ];
        assert!(matches!(types, BuildError::TypeMismatch { .. }));
        let joined = texts.join("|");
        let (lo, hi) = loc
            .all_reduce((joined.clone(), joined.clone()), |a, b| {
                (a.0.min(b.0), a.1.max(b.1))
            })
            .await;
        assert_eq!(lo, hi, "every location sees the same errors");
        texts
    });
    let t = &errs[0];
    assert_eq!(t[0], "port 'a.out' is connected twice");
    assert_eq!(
        t[1],
        "cannot connect 'a.out' (sends u32) to 'c.text' (takes alloc::string::String): the types differ"
    );
    assert_eq!(t[2], "there is no port 'a.nope'");
    assert_eq!(
        t[3],
        "port 'c.in' has the wrong direction for this connection"
    );
}

fn different_graphs_are_refused(world: &World) {
    if world.locations() == 1 {
        return;
    }
    let errs = on_all(world, |loc| async move {
        let mut b = builder();
        let a = b.actor("a").unwrap();
        let o = b.output::<u32>(a, "out").unwrap();
        let c = b.actor("c").unwrap();
        let i = b.input::<u32>(c, "in").unwrap();
        // Location 0 builds a different capacity: a bug in SPMD code.
        b.connect(o, i, if loc.id().index() == 0 { 1 } else { 2 })
            .unwrap();
        let g = b.build();
        let p = g
            .partition(loc.world().locations(), &Partition::Block)
            .unwrap();
        g.run(&loc, &p, |_| -> Box<dyn PortActor> {
            Box::new(|_: &mut Ports| Status::Done)
        })
        .await
    });
    for e in errs {
        assert_eq!(e, Err(RunError::Mismatch));
    }
}
