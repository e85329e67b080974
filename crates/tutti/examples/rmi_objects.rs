//! Distributed objects: a histogram whose bins are spread over every location
//! of the world, filled with remote method calls.
//!
//! ```sh
//! cargo run -p tutti --example rmi_objects                       # threads of one process
//! TUTTI_LOCATIONS=4 cargo run -p tutti --example rmi_objects     # four locations
//! cargo build -p tutti --features mpi --example rmi_objects      # MPI: the same code over ranks
//! mpirun -n 2 target/debug/examples/rmi_objects
//! tutti launch -n 3 -- target/debug/examples/rmi_objects         # processes over shared memory
//! ```
//!
//! Every location registers its representative of the `Histogram` object and
//! gets the same handle. Location `i` owns the bins `b` with `b % n == i`.
//! Each location draws its keys and sends every key to the owner of its bin
//! with `async_rmi` (aggregated, serialized only when it crosses processes);
//! `fence` returns when every call issued anywhere has run; `reduce_rmi`
//! combines a method's replies from every location; `sync_rmi` asks one
//! location and waits for the answer; `broadcast_rmi` calls every location.
//! Every location checks the results; the program exits with an error if one
//! is wrong.

use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::{self, Rmi};
use tutti::world::World;

const BINS: usize = 64;
const KEYS_PER_LOCATION: u64 = 20_000;

/// Count one key in bin `.0` (a statement: no reply).
#[derive(Serialize, Deserialize)]
struct Count(u32);
impl Message for Count {
    type Reply = ();
}
impl Remote for Count {
    const NAME: &'static str = "example.histogram.Count";
}

/// How many keys this location's bins hold (a question).
#[derive(Serialize, Deserialize)]
struct Total;
impl Message for Total {
    type Reply = u64;
}
impl Remote for Total {
    const NAME: &'static str = "example.histogram.Total";
}

/// One bin's count.
#[derive(Serialize, Deserialize)]
struct Bin(u32);
impl Message for Bin {
    type Reply = u64;
}
impl Remote for Bin {
    const NAME: &'static str = "example.histogram.Bin";
}

/// Empty every bin.
#[derive(Clone, Serialize, Deserialize)]
struct Clear;
impl Message for Clear {
    type Reply = ();
}
impl Remote for Clear {
    const NAME: &'static str = "example.histogram.Clear";
}

/// This location's share of the bins (indexed by `bin / locations`).
struct Histogram {
    bins: Vec<u64>,
    locations: usize,
}

impl Object for Histogram {
    type Context = Rmi;
    // What other locations may call (decoded by this table across processes).
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Count>()?
            .register::<Total>()?
            .register::<Bin>()?
            .register::<Clear>()?;
        Ok(())
    }
}
impl Handler<Count> for Histogram {
    async fn handle(&mut self, Count(bin): Count, _: &mut Rmi) {
        self.bins[bin as usize / self.locations] += 1;
    }
}
impl Handler<Total> for Histogram {
    async fn handle(&mut self, _: Total, _: &mut Rmi) -> u64 {
        self.bins.iter().sum()
    }
}
impl Handler<Bin> for Histogram {
    async fn handle(&mut self, Bin(bin): Bin, _: &mut Rmi) -> u64 {
        self.bins[bin as usize / self.locations]
    }
}
impl Handler<Clear> for Histogram {
    async fn handle(&mut self, _: Clear, _: &mut Rmi) {
        self.bins.iter_mut().for_each(|b| *b = 0);
    }
}

/// The key stream of location `id`, the same in every run and world shape.
fn keys(id: usize) -> impl Iterator<Item = u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (id as u64 + 1);
    (0..KEYS_PER_LOCATION).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    })
}

/// The expected count of `bin` over every location's keys.
fn expected_bin(locations: usize, bin: usize) -> u64 {
    (0..locations)
        .flat_map(keys)
        .filter(|k| (k % BINS as u64) as usize == bin)
        .count() as u64
}

fn main() {
    let world = World::from_env().expect("a world");
    let checks = rmi::run(&world, |loc| async move {
        let n = loc.count();
        let mine = (0..BINS).filter(|b| b % n == loc.id()).count();
        let h = loc
            .register(Histogram {
                bins: vec![0; mine.max(1)],
                locations: n,
            })
            .await
            .expect("every location registers the histogram");

        for key in keys(loc.id()) {
            let bin = (key % BINS as u64) as usize;
            loc.async_rmi(bin % n, &h, Count(bin as u32)).await;
        }
        loc.fence().await; // every Count, from every location, has run

        let mut failures = Vec::new();
        let total = loc.reduce_rmi(&h, Total, |a, b| a + b).await;
        if total != KEYS_PER_LOCATION * n as u64 {
            failures.push(format!(
                "total {total}, expected {}",
                KEYS_PER_LOCATION * n as u64
            ));
        }
        // Ask another location about one of its bins.
        let bin = (loc.id() + 1) % n;
        let count = loc.sync_rmi(bin % n, &h, Bin(bin as u32)).await;
        if count != expected_bin(n, bin) {
            failures.push(format!(
                "bin {bin}: {count}, expected {}",
                expected_bin(n, bin)
            ));
        }
        // Every location has its answer before the Clear: requests from
        // different locations (this Bin, location 0's Clear) are not ordered.
        loc.barrier().await;
        if loc.id() == 0 {
            loc.broadcast_rmi(&h, Clear).await;
        }
        loc.fence().await;
        let after = loc.reduce_rmi(&h, Total, |a, b| a + b).await;
        if after != 0 {
            failures.push(format!("{after} keys left after Clear"));
        }
        (loc.id(), n, total, bin, count, failures)
    });

    let mut ok = true;
    for (id, n, total, bin, count, failures) in &checks {
        if *id == 0 {
            println!(
                "{} rank(s) × {} location(s): {n} locations counted {total} keys into {BINS} bins",
                world.ranks(),
                world.locations_per_rank()
            );
        }
        println!(
            "  location {id}: bin {bin} (on location {}) holds {count} keys",
            bin % n
        );
        for f in failures {
            eprintln!("rmi_objects: location {id}: {f}");
            ok = false;
        }
    }
    if !ok {
        std::process::exit(1);
    }
    if world.rank() == 0 {
        println!("verified: totals, a remote bin and the broadcast Clear, on every location");
    }
}
