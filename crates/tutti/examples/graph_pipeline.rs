//! An actor graph: a three-stage pipeline whose stages are actors with typed
//! ports, joined by bounded channels and placed on three locations.
//!
//! ```sh
//! cargo run -p tutti --example graph_pipeline
//! ```
//!
//! ```text
//!  location 0          location 1          location 2
//!  numbers ──out──▶ in─ square ─out──▶ in─ sum
//!           (capacity 16)       (capacity 16)
//! ```
//!
//! An actor's `act()` runs when one of its ports changes: a token arrived, or
//! room freed up on an output. It takes what it can, sends what fits, and
//! returns; a full channel holds its producer back, across locations too. The
//! graph is built the same way on every location, placed (here one actor per
//! location), and run. The `sum` stage checks the total; the program exits with
//! an error if it is wrong.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tutti::graph::{ActorGraph, Partition, PortActor, Ports, Status};
use tutti::world::World;

const N: u64 = 100_000;

fn main() {
    let world = World::builder()
        .locations(3)
        .workers(2)
        .build()
        .expect("a world of 3 locations");
    let results = world.run(|loc| async move {
        // Every location builds the same graph.
        let mut b = ActorGraph::builder();
        let numbers = b.actor("numbers").unwrap();
        let square = b.actor("square").unwrap();
        let sum = b.actor("sum").unwrap();
        let numbers_out = b.output::<u64>(numbers, "out").unwrap();
        let square_in = b.input::<u64>(square, "in").unwrap();
        let square_out = b.output::<u64>(square, "out").unwrap();
        let sum_in = b.input::<u64>(sum, "in").unwrap();
        b.connect(numbers_out, square_in, 16).unwrap();
        b.connect(square_out, sum_in, 16).unwrap();
        let graph = b.build();

        // One actor per location: both channels cross locations.
        let placement = graph.partition(3, &Partition::Block).unwrap();
        let here = loc.id();
        let total = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&total);
        let loc = Arc::new(loc);
        let report = graph
            .run(&loc, &placement, move |id| -> Box<dyn PortActor> {
                if id == numbers {
                    let mut next = 1;
                    Box::new(move |p: &mut Ports| {
                        while next <= N && p.send(numbers_out, next).is_ok() {
                            next += 1;
                        }
                        if next > N {
                            Status::Done
                        } else {
                            Status::Continue
                        }
                    })
                } else if id == square {
                    // A token taken from the input is held until the output has room.
                    let mut held = None;
                    Box::new(move |p: &mut Ports| {
                        loop {
                            if held.is_none() {
                                held = p.recv(square_in);
                            }
                            let Some(x) = held else { break };
                            match p.send(square_out, x * x) {
                                Ok(()) => held = None,
                                Err(_) => return Status::Continue, // full: wait for room
                            }
                        }
                        if p.is_ended(square_in) {
                            Status::Done
                        } else {
                            Status::Continue
                        }
                    })
                } else {
                    let total = Arc::clone(&seen);
                    Box::new(move |p: &mut Ports| {
                        while let Some(v) = p.recv(sum_in) {
                            total.fetch_add(v, Ordering::Relaxed);
                        }
                        if p.is_ended(sum_in) {
                            Status::Done
                        } else {
                            Status::Continue
                        }
                    })
                }
            })
            .await
            .expect("the pipeline runs to its end");
        (
            here,
            placement.edge_cut(),
            report,
            total.load(Ordering::Relaxed),
        )
    });

    let expected = N * (N + 1) * (2 * N + 1) / 6;
    let mut total = 0;
    for (loc, cut, report, sum) in &results {
        println!(
            "location {}: {} actor, {} act() calls, {} wake-ups; channels between locations: {cut}",
            loc.index(),
            report.actors,
            report.acts,
            report.wakeups
        );
        total += sum;
    }
    println!("sum of the squares of 1..={N}: {total}");
    if total != expected {
        eprintln!("graph_pipeline: expected {expected}");
        std::process::exit(1);
    }
    println!("verified: every number went through the pipeline once");
}
