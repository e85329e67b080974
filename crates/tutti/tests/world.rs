//! The world's test suite: the same bodies run on the in-process transport (plain
//! `cargo test`, several configurations) and on MPI (`.ci/run` runs this binary
//! under `mpirun -n 2` and `-n 4`; one world per process, as MPI allows).
//!
//! Every body checks its own results and panics on a mismatch; under MPI a panic
//! takes the whole job down with a non-zero exit status.

mod channels;
mod common;
mod watchdog;

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tutti::world::{LocationId, Match, TransportKind, World};

type Body = fn(&World);

const BODIES: &[(&str, Body)] = &[
    ("ids_and_config", ids_and_config),
    ("ring_of_bytes", ring_of_bytes),
    ("all_to_all_in_order", all_to_all_in_order),
    ("collectives", collectives),
    (
        "nonblocking_barrier_and_many_collectives",
        nonblocking_barrier_and_many_collectives,
    ),
    (
        "quiescence_with_message_chains",
        quiescence_with_message_chains,
    ),
    (
        "quiescence_when_nothing_is_sent",
        quiescence_when_nothing_is_sent,
    ),
    ("quiescence_separates_phases", quiescence_separates_phases),
    (
        "quiescence_alone_separates_phases",
        quiescence_alone_separates_phases,
    ),
    ("large_messages", large_messages),
    ("lent_large_messages", lent_large_messages),
    ("many_outstanding_messages", many_outstanding_messages),
    (
        "time_bound_flushes_a_waiting_buffer",
        time_bound_flushes_a_waiting_buffer,
    ),
    ("typed_values_within_a_rank", typed_values_within_a_rank),
    (
        "typed_values_to_every_location",
        typed_values_to_every_location,
    ),
    (
        "typed_receive_names_both_types",
        typed_receive_names_both_types,
    ),
    (
        "gather_scatter_and_all_to_all",
        gather_scatter_and_all_to_all,
    ),
    ("scans_and_reduce_scatter", scans_and_reduce_scatter),
    ("receive_by_source_and_tag", receive_by_source_and_tag),
];

fn main() {
    common::run_suite(
        "world suite",
        &[(1, 1, 1), (4, 2, 1), (3, 2, 8), (5, 1, 64)],
        run_all,
    );
}

fn run_all(world: &World) {
    // Off by default (4 GiB of memory per pair of ranks): a message above 2^31
    // bytes, which MPI counts cannot describe in one message.
    let huge = std::env::var("TUTTI_TEST_HUGE").is_ok();
    let extra: &[(&str, Body)] = if huge {
        &[("message_above_2_gib", message_above_2_gib)]
    } else {
        &[]
    };
    for (name, body) in BODIES.iter().chain(channels::BODIES).chain(extra) {
        body(world);
        // A later test's messages must not reach a location still in this one.
        world.run(|loc| async move { loc.barrier().await });
        if world.rank() == 0 {
            println!("test {name} ... ok");
        }
    }
}

fn id(i: usize) -> LocationId {
    LocationId::new(i as u32)
}

fn ids_and_config(world: &World) {
    assert!(world.rank() < world.ranks());
    assert_eq!(
        world.locations(),
        world.ranks() * world.locations_per_rank()
    );
    let mine: Vec<usize> = world.local_locations().map(|l| l.index()).collect();
    assert_eq!(mine, world.locations_of(world.rank()).collect::<Vec<_>>());
    for l in world.all_locations() {
        assert_eq!(
            world.rank_of(l),
            Some(l.index() / world.locations_per_rank())
        );
    }
    assert_eq!(world.rank_of(id(world.locations())), None);
    let text = world.config().to_string();
    assert!(
        text.contains(&format!("rank {} of {}", world.rank(), world.ranks())),
        "{text}"
    );
    if world.config().transport() == TransportKind::Hybrid {
        // One machine (as in CI), split into `TUTTI_HOSTS` pretend hosts of
        // consecutive ranks: the ranks of this one go by the rings.
        let (n, r) = (world.ranks(), world.rank());
        let h: usize = std::env::var("TUTTI_HOSTS").map_or(1, |v| v.parse().unwrap());
        let mates = (0..n).filter(|i| i * h / n == r * h / n).count();
        if mates > 1 {
            let want = format!("hybrid: {} host(s), shared memory: system \"mpi-", h.min(n));
            assert!(text.contains(&want), "{want} in {text}");
            let want = format!("between the {mates} ranks of this host, MPI between hosts");
            assert!(text.contains(&want), "{want} in {text}");
        } else {
            assert!(!text.contains("hybrid:"), "{text}");
        }
    }
    let ids = world.run(|loc| async move { (loc.id(), loc.rank()) });
    assert_eq!(ids.len(), world.locations_per_rank());
    for ((got, rank), want) in ids.into_iter().zip(world.local_locations()) {
        assert_eq!((got, rank), (want, world.rank()));
    }
}

fn ring_of_bytes(world: &World) {
    let got = world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        let msg = format!("from {me}").into_bytes();
        loc.send_bytes(id((me + 1) % n), msg).unwrap();
        let d = loc.recv().await;
        let from = (me + n - 1) % n;
        assert_eq!(d.from(), id(from));
        String::from_utf8(d.bytes().unwrap().to_vec()).unwrap()
    });
    let n = world.locations();
    for (s, me) in got.iter().zip(world.local_locations()) {
        assert_eq!(*s, format!("from {}", (me.index() + n - 1) % n));
    }
}

/// Every location sends `K` numbered messages to every location (itself
/// included); each receiver checks that every sender's messages arrive in order.
fn all_to_all_in_order(world: &World) {
    const K: u32 = 50;
    world.run(|loc| async move {
        let n = loc.world().locations();
        for k in 0..K {
            for to in 0..n {
                let mut m = k.to_le_bytes().to_vec();
                m.extend_from_slice(&(loc.id().index() as u32).to_le_bytes());
                loc.send_bytes(id(to), m).unwrap();
            }
        }
        let mut next: HashMap<LocationId, u32> = HashMap::new();
        for _ in 0..n as u32 * K {
            let d = loc.recv().await;
            let b = d.bytes().unwrap();
            let k = u32::from_le_bytes(b[0..4].try_into().unwrap());
            let from = u32::from_le_bytes(b[4..8].try_into().unwrap());
            assert_eq!(id(from as usize), d.from());
            let want = next.entry(d.from()).or_insert(0);
            assert_eq!(k, *want, "message {k} from {:?} out of order", d.from());
            *want += 1;
        }
        assert!(next.values().all(|&k| k == K));
        assert!(loc.try_recv().is_none());
        loc.barrier().await;
    });
}

fn collectives(world: &World) {
    let n = world.locations();
    let out = world.run(move |loc| async move {
        let me = loc.id().index();
        loc.barrier().await;
        let sum = loc.all_reduce(me as u64, |a, b| a + b).await;
        // Not commutative: concatenation shows the location order.
        let order = loc.all_reduce(format!("{me},"), |a, b| a + &b).await;
        let last = id(loc.world().locations() - 1);
        let mine = (loc.id() == last).then(|| vec![7u64, me as u64]);
        let bcast = loc.broadcast(last, mine).await;
        let root = id(1 % loc.world().locations());
        let prod = loc.reduce(root, me as u64 + 1, |a, b| a * b).await;
        let max = loc
            .all_reduce((me as i32, -(me as f64)), |a, b| {
                (a.0.max(b.0), a.1.min(b.1))
            })
            .await;
        // A user type: collectives carry any serde value.
        let span = loc
            .all_reduce(
                Span {
                    lo: me as i64,
                    hi: me as i64,
                    who: vec![format!("loc{me}")],
                },
                Span::join,
            )
            .await;
        (sum, order, bcast, prod, (max, span))
    });
    let want_order: String = (0..n).map(|i| format!("{i},")).collect();
    let fact: u64 = (1..=n as u64).product();
    let want_span = Span {
        lo: 0,
        hi: n as i64 - 1,
        who: (0..n).map(|i| format!("loc{i}")).collect(),
    };
    for ((sum, order, bcast, prod, (max, span)), me) in out.into_iter().zip(world.local_locations())
    {
        assert_eq!(span, want_span);
        assert_eq!(sum, (n * (n - 1) / 2) as u64);
        assert_eq!(order, want_order);
        assert_eq!(bcast, vec![7, (n - 1) as u64]);
        if me.index() == 1 % n {
            assert_eq!(prod, Some(fact));
        } else {
            assert_eq!(prod, None);
        }
        assert_eq!(max, ((n - 1) as i32, -((n - 1) as f64)));
    }
}

/// A collective value of the user's own type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Span {
    lo: i64,
    hi: i64,
    who: Vec<String>,
}

impl Span {
    fn join(mut a: Span, b: Span) -> Span {
        a.lo = a.lo.min(b.lo);
        a.hi = a.hi.max(b.hi);
        a.who.extend(b.who);
        a
    }
}

fn nonblocking_barrier_and_many_collectives(world: &World) {
    world.run(|loc| async move {
        // Arrive, work, then wait.
        let arrival = loc.barrier();
        let work: u64 = (0..1000u64).sum();
        arrival.await;
        assert_eq!(work, 499_500);
        // Many collectives in a row, some futures dropped without waiting.
        for round in 0..30u64 {
            let v = loc.all_reduce(round, |a, b| a.max(b));
            if round % 3 == 0 {
                drop(v);
            } else {
                assert_eq!(v.await, round);
            }
        }
        loc.barrier().await;
    });
}

/// Each location starts chains of messages that handlers pass on, several hops
/// deep, to pseudo-random locations; the fence must not end before every hop is
/// handled.
fn quiescence_with_message_chains(world: &World) {
    const CHAINS: u32 = 5;
    const HOPS: u32 = 12;
    let counts = world.run(|loc| async move {
        let n = loc.world().locations() as u64;
        let me = loc.id().index() as u64;
        for c in 0..CHAINS {
            let mut m = HOPS.to_le_bytes().to_vec();
            m.extend_from_slice(&(me * 1000 + c as u64).to_le_bytes());
            loc.send_bytes(id(((me + c as u64 + 1) % n) as usize), m)
                .unwrap();
        }
        let mut handled = 0u64;
        while let Some(d) = loc.recv_until_quiet().await {
            let b = d.bytes().unwrap();
            let hops = u32::from_le_bytes(b[0..4].try_into().unwrap());
            let tag = u64::from_le_bytes(b[4..12].try_into().unwrap());
            if hops > 0 {
                let mut m = (hops - 1).to_le_bytes().to_vec();
                m.extend_from_slice(&tag.to_le_bytes());
                let next = (tag.wrapping_mul(0x9E37_79B9) ^ hops as u64) % n;
                loc.send_bytes(id(next as usize), m).unwrap();
            }
            handled += 1;
        }
        // Quiescent: nothing can still be in flight.
        assert!(loc.try_recv().is_none());
        loc.all_reduce(handled, |a, b| a + b).await
    });
    let want = world.locations() as u64 * CHAINS as u64 * (HOPS as u64 + 1);
    assert!(counts.iter().all(|&c| c == want), "{counts:?} != {want}");
}

fn quiescence_when_nothing_is_sent(world: &World) {
    world.run(|loc| async move {
        for _ in 0..3 {
            assert!(loc.recv_until_quiet().await.is_none());
        }
    });
}

/// Quiescence followed by a barrier ends a phase: a message a location sends
/// after both belongs to the next phase, and no other location receives it
/// before its own quiescence of this phase has ended.
fn quiescence_separates_phases(world: &World) {
    phases(world, 150, true);
}

/// The end of quiescence alone separates phases: with no barrier after it, a
/// location that sees the last wave first and sends the next phase's messages
/// at once must not have them handed out to a location still inside this
/// phase's detection.
fn quiescence_alone_separates_phases(world: &World) {
    phases(world, 300, false);
}

/// Runs `count` phases of two hops per location, every message tagged with its
/// phase, each ended by `recv_until_quiet` (and a barrier if `barrier`), and
/// checks that no location receives a message of another phase.
fn phases(world: &World, count: u64, barrier: bool) {
    world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        for phase in 0..count {
            for k in 1..=2 {
                loc.send_bytes(
                    id((me + k) % n),
                    [phase.to_le_bytes(), 1u64.to_le_bytes()].concat(),
                )
                .unwrap();
            }
            while let Some(d) = loc.recv_until_quiet().await {
                let b = d.bytes().unwrap();
                let got = u64::from_le_bytes(b[0..8].try_into().unwrap());
                let hops = u64::from_le_bytes(b[8..16].try_into().unwrap());
                assert_eq!(
                    got, phase,
                    "location {me} received a phase-{got} message inside phase {phase}'s quiescence"
                );
                if hops > 0 {
                    let next = id((me + 1 + phase as usize) % n);
                    loc.send_bytes(next, [phase.to_le_bytes(), 0u64.to_le_bytes()].concat())
                        .unwrap();
                }
            }
            if barrier {
                loc.barrier().await;
            }
        }
    });
}

fn large_messages(world: &World) {
    const LEN: usize = 3 << 20;
    let got = world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        let to = id((me + n / 2 + 1) % n);
        let big: Vec<u8> = (0..LEN).map(|i| (i as u8) ^ (me as u8)).collect();
        loc.send_bytes(to, big).unwrap();
        // A small one right behind it must not overtake it.
        loc.send_bytes(to, vec![me as u8]).unwrap();
        let mut d = loc.recv().await;
        let from = d.from().index();
        let b = d.take_bytes().unwrap();
        assert_eq!(b.len(), LEN);
        assert!(b
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i as u8) ^ (from as u8)));
        drop(d);
        let d = loc.recv().await;
        assert_eq!(d.bytes().unwrap(), &[from as u8]);
        assert_eq!(d.from().index(), from);
        from
    });
    let n = world.locations();
    for (from, me) in got.into_iter().zip(world.local_locations()) {
        assert_eq!((from + n / 2 + 1) % n, me.index());
    }
}

/// `send_slice_blocking`: every location streams large messages to every
/// location (itself included) from one buffer it rewrites between sends, each
/// behind a small buffered message; more bytes than the engine receives at once
/// are announced together, and the receivers check content and order.
fn lent_large_messages(world: &World) {
    const LEN: usize = (3 << 20) / 2 + 7;
    const ROUNDS: usize = 3;
    let fill = |buf: &mut [u8], from: usize, round: usize| {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(3) ^ (from as u8) ^ ((round as u8) << 4);
        }
    };
    world.run(move |loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        let mut buf = vec![0u8; LEN];
        for round in 0..ROUNDS {
            fill(&mut buf, me, round);
            for to in 0..n {
                loc.send_bytes(id(to), vec![me as u8, round as u8]).unwrap();
                loc.send_slice_blocking(id(to), &buf).unwrap();
            }
        }
        let mut want = vec![0usize; n];
        let mut expect = vec![0u8; LEN];
        for _ in 0..2 * ROUNDS * n {
            let d = loc.recv().await;
            let from = d.from().index();
            let step = want[from];
            want[from] += 1;
            let b = d.bytes().unwrap();
            if step % 2 == 0 {
                assert_eq!(b, &[from as u8, (step / 2) as u8], "order from {from}");
            } else {
                fill(&mut expect, from, step / 2);
                assert!(b == &expect[..], "body {} from {from}", step / 2);
            }
        }
        assert!(want.iter().all(|&w| w == 2 * ROUNDS));
        assert!(loc
            .send_slice_blocking(id(n), &buf)
            .is_err_and(|e| e.to_string().contains("no location")));
    });
}

fn many_outstanding_messages(world: &World) {
    const M: usize = 20_000;
    world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        if me == 0 {
            for i in 0..M {
                for to in 1..n {
                    loc.send_bytes(id(to), (i as u32).to_le_bytes().to_vec())
                        .unwrap();
                }
            }
        } else {
            for i in 0..M {
                let d = loc.recv().await;
                assert_eq!(d.bytes().unwrap(), &(i as u32).to_le_bytes());
            }
        }
        loc.barrier().await;
    });
}

fn time_bound_flushes_a_waiting_buffer(world: &World) {
    world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        if n > 1 && me == 0 {
            // One message, then no flush: the sender sleeps (sleep does not flush),
            // so only the world's time bound can send the buffer.
            loc.send_bytes(id(n - 1), vec![42]).unwrap();
            tutti::sleep(Duration::from_millis(50)).await;
            let _ = loc.recv().await;
        } else if n > 1 && me == n - 1 {
            let d = loc.recv().await;
            assert_eq!(d.bytes().unwrap(), &[42]);
            drop(d);
            loc.send_bytes(id(0), vec![1]).unwrap();
        }
        loc.barrier().await;
    });
}

fn typed_values_within_a_rank(world: &World) {
    world.run(|loc| async move {
        let w = loc.world().clone();
        let mine: Vec<LocationId> = w.local_locations().collect();
        let me = loc.id();
        for &to in &mine {
            loc.send(to, (me, vec![me.index(); 3])).unwrap();
        }
        // A value sent with `send_value` (not serialized) cannot go to another rank.
        if w.ranks() > 1 {
            let other = id((loc.world().rank() + 1) % w.ranks() * w.locations_per_rank());
            let e = loc.send_value(other, 5u8).unwrap_err();
            assert!(matches!(e, tutti::world::SendError::NotLocal(_, 5)));
        }
        let mut from = Vec::new();
        for _ in 0..mine.len() {
            let mut d = loc.recv().await;
            let (sender, v) = d.take::<(LocationId, Vec<usize>)>().unwrap();
            assert_eq!(sender, d.from());
            assert_eq!(v, vec![sender.index(); 3]);
            from.push(sender);
        }
        from.sort();
        assert_eq!(from, mine);
        loc.barrier().await;
    });
}

fn message_above_2_gib(world: &World) {
    const LEN: usize = (1 << 31) + 17;
    world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        let last = n - 1;
        if me == 0 && last != 0 {
            let mut big = vec![0u8; LEN];
            for (i, b) in big.iter_mut().enumerate().step_by(4093) {
                *b = (i % 251) as u8;
            }
            big[LEN - 1] = 0xAB;
            loc.send_bytes(id(last), big).unwrap();
        }
        if me == last && last != 0 {
            let mut d = loc.recv().await;
            let b = d.take_bytes().unwrap();
            assert_eq!(b.len(), LEN);
            assert_eq!(b[LEN - 1], 0xAB);
            assert!(b
                .iter()
                .enumerate()
                .step_by(4093)
                .all(|(i, &x)| x == (i % 251) as u8));
        }
        loc.barrier().await;
    });
}

/// A record with owned fields, sent with one call to every location: moved
/// within a rank, serialized across ranks.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Note {
    from: u32,
    to: u32,
    words: Vec<String>,
}

fn typed_values_to_every_location(world: &World) {
    world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index() as u32;
        for to in 0..n as u32 {
            let note = Note {
                from: me,
                to,
                words: vec![format!("{me}->{to}"); (to % 3) as usize],
            };
            loc.send(id(to as usize), note).unwrap();
            // Two messages per destination: their order must be kept.
            loc.send(id(to as usize), (me, u64::from(to) << 32))
                .unwrap();
        }
        let mut seen = vec![0u8; n];
        for _ in 0..2 * n {
            let mut d = loc.recv().await;
            let from = d.from().index();
            if seen[from] == 0 {
                let note = d.typed::<Note>().unwrap();
                assert_eq!((note.from as usize, note.to), (from, me));
                assert_eq!(note.words, vec![format!("{from}->{me}"); (me % 3) as usize]);
            } else {
                assert_eq!(
                    d.typed::<(u32, u64)>().unwrap(),
                    (from as u32, u64::from(me) << 32)
                );
            }
            seen[from] += 1;
        }
        assert!(seen.iter().all(|&s| s == 2), "{seen:?}");
    });
}

fn typed_receive_names_both_types(world: &World) {
    world.run(|loc| async move {
        let n = loc.world().locations();
        let right = id((loc.id().index() + 1) % n);
        let left = id((loc.id().index() + n - 1) % n);
        loc.send(right, String::from("not a number")).unwrap();
        loc.send_bytes(right, vec![1, 2, 3]).unwrap();
        let mut d = loc.recv().await;
        let e = d.typed::<u64>().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "tutti::world: the message from {left} is a alloc::string::String, received as a u64"
            )
        );
        // The message stays: taken as the right type it is there.
        assert_eq!(d.typed::<String>().unwrap(), "not a number");
        assert!(matches!(d.typed::<String>(), Err(tutti::world::TakeError::Taken { .. })));
        drop(d);
        let mut d = loc.recv().await;
        let e = d.typed::<String>().unwrap_err();
        assert!(e.to_string().contains("is a plain bytes"), "{e}");
        assert_eq!(d.typed::<Vec<u8>>().unwrap(), [1, 2, 3]);
    });
}

fn gather_scatter_and_all_to_all(world: &World) {
    world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        let last = id(n - 1);
        // Gather at two roots, with owned values.
        for root in [id(0), last] {
            let got = loc.gather(root, format!("v{me}")).await;
            if loc.id() == root {
                let want: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
                assert_eq!(got.as_deref(), Some(&want[..]));
            } else {
                assert_eq!(got, None);
            }
        }
        let all = loc.all_gather((me as u32, vec![me as u8; me % 3])).await;
        assert_eq!(all.len(), n);
        for (i, (who, v)) in all.iter().enumerate() {
            assert_eq!((*who as usize, v.len()), (i, i % 3));
        }
        // Scatter from the last location.
        let values = (loc.id() == last).then(|| (0..n).map(|i| i * i).collect());
        assert_eq!(loc.scatter(last, values).await, me * me);
        // All-to-all: location i sends (i, j) to j.
        let got = loc.all_to_all((0..n).map(|j| (me, j)).collect()).await;
        assert_eq!(got, (0..n).map(|i| (i, me)).collect::<Vec<_>>());
        // All-to-all-v: location i sends i + j copies of i·n + j to j (none
        // when both are 0), one of them a large block across ranks.
        let rows: Vec<Vec<u64>> = (0..n)
            .map(|j| {
                let len = if me == 0 && j + 1 == n {
                    20_000
                } else {
                    me + j
                };
                vec![(me * n + j) as u64; len]
            })
            .collect();
        let got = loc.all_to_all_v(rows).await;
        for (i, v) in got.iter().enumerate() {
            let len = if i == 0 && me + 1 == n {
                20_000
            } else {
                i + me
            };
            assert_eq!(v, &vec![(i * n + me) as u64; len], "from {i}");
        }
        // Scatter from a location in the middle (not its rank's first when
        // ranks hold several), with owned values.
        let mid = id(n / 2 + usize::from(n > 2));
        let values = (loc.id() == mid).then(|| (0..n).map(|i| format!("s{i}")).collect());
        assert_eq!(loc.scatter(mid, values).await, format!("s{me}"));
        // Two all-to-alls in flight at once, awaited in the other order: each
        // rank's pieces of one must not be taken for the other's.
        let first = loc.all_to_all((0..n).map(|j| me * n + j).collect());
        let second = loc.all_to_all((0..n).map(|j| vec![me as u16; j + 1]).collect());
        let want: Vec<Vec<u16>> = (0..n).map(|i| vec![i as u16; me + 1]).collect();
        assert_eq!(second.await, want);
        assert_eq!(first.await, (0..n).map(|i| i * n + me).collect::<Vec<_>>());
        // Non-blocking: contribute to two, then wait in the other order.
        let a = loc.all_gather(me);
        let b = loc.scatter(id(0), (me == 0).then(|| vec![7u8; n]));
        assert_eq!(b.await, 7);
        assert_eq!(a.await, (0..n).collect::<Vec<_>>());
    });
}

fn scans_and_reduce_scatter(world: &World) {
    world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        // Not commutative: string concatenation keeps location order.
        let s = loc.scan(me.to_string(), |a, b| a + &b).await;
        assert_eq!(s, (0..=me).map(|i| i.to_string()).collect::<String>());
        let e = loc.exclusive_scan(me.to_string(), |a, b| a + &b).await;
        let want = (me > 0).then(|| (0..me).map(|i| i.to_string()).collect::<String>());
        assert_eq!(e, want);
        let sums = loc.scan(me as u64 + 1, |a, b| a + b).await;
        assert_eq!(sums, ((me + 1) * (me + 2) / 2) as u64);
        // Reduce-scatter: location j gets the sum over i of i·n + j.
        let values: Vec<u64> = (0..n).map(|j| (me * n + j) as u64).collect();
        let got = loc.reduce_scatter(values, |a, b| a + b).await;
        let want: u64 = (0..n).map(|i| (i * n + me) as u64).sum();
        assert_eq!(got, want);
        // Blocks: make the element a vector.
        let blocks: Vec<Vec<u32>> = (0..n).map(|j| vec![j as u32; 3]).collect();
        let got = loc
            .reduce_scatter(blocks, |a, b| {
                a.iter().zip(&b).map(|(x, y)| x + y).collect()
            })
            .await;
        assert_eq!(got, vec![(me * n) as u32; 3]);
    });
}

/// Every location sends every location (itself too) messages with tags 0, 1
/// (as bytes) and 2, and untagged ones, interleaved; each receiver takes them
/// out of order — one source's tag 2 first, then every source's tags 0 and 1
/// from the last source to the first, then the untagged ones with a plain
/// `recv` — and checks that each (source, tag) stream is complete and in order.
fn receive_by_source_and_tag(world: &World) {
    const K: u64 = 30;
    const UNTAGGED: u64 = 5;
    world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index() as u64;
        for to in 0..n {
            for k in 0..K {
                match k % 3 {
                    1 => loc.send_tagged(id(to), 1, vec![me as u8, k as u8]).unwrap(),
                    t => loc.send_tagged(id(to), t, (me, k)).unwrap(),
                }
                if k % 6 == 0 {
                    loc.send(id(to), (me, k / 6)).unwrap();
                }
            }
        }
        let per_tag = K / 3;
        let first = id((loc.id().index() + 1) % n);
        let expect = |from: usize, tag: u64, j: u64| (from as u64, j * 3 + tag);
        for j in 0..per_tag {
            let mut d = loc.recv_matching(Match::any().source(first).tag(2)).await;
            assert_eq!((d.from(), d.tag()), (first, Some(2)));
            assert_eq!(
                d.typed::<(u64, u64)>().unwrap(),
                expect(first.index(), 2, j)
            );
        }
        assert!(loc
            .try_recv_matching(Match::any().source(first).tag(2))
            .is_none());
        for from in (0..n).rev() {
            for tag in [0, 1, 2] {
                if tag == 2 && id(from) == first {
                    continue;
                }
                for j in 0..per_tag {
                    let m = Match::any().source(id(from)).tag(tag);
                    let mut d = loc.recv_matching(m).await;
                    assert_eq!((d.from(), d.tag()), (id(from), Some(tag)));
                    let (f, k) = expect(from, tag, j);
                    if tag == 1 {
                        assert_eq!(d.bytes().unwrap(), [f as u8, k as u8]);
                    } else {
                        assert_eq!(d.typed::<(u64, u64)>().unwrap(), (f, k));
                    }
                }
            }
        }
        // Only the untagged messages are left, each sender's in order.
        let mut next = vec![0u64; n];
        for _ in 0..n as u64 * UNTAGGED {
            let mut d = loc.recv().await;
            assert_eq!(d.tag(), None);
            let from = d.from().index();
            assert_eq!(d.typed::<(u64, u64)>().unwrap(), (from as u64, next[from]));
            next[from] += 1;
        }
        assert!(next.iter().all(|&c| c == UNTAGGED));
        assert!(loc.try_recv().is_none());
    });
}
