//! The same protocol over crossbeam channels: a server thread, a thread per
//! client.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded};

use super::{final_size, mean, script, Outcome, Store};

/// One run: `n` client threads of `r` requests each.
pub fn run(n: usize, r: u64) -> Result<Outcome, String> {
    let (requests, inbox) = unbounded();
    let mut replies = Vec::with_capacity(n);
    let mut answers = Vec::with_capacity(n);
    for _ in 0..n {
        let (tx, rx) = bounded::<Option<u64>>(1);
        replies.push(tx);
        answers.push(rx);
    }
    let server = std::thread::Builder::new()
        .name("db-server".into())
        .spawn(move || {
            let mut store = Store::default();
            // Ends when every client has hung up.
            for (c, req) in inbox.iter() {
                let c: usize = c;
                if replies[c].send(store.apply(req)).is_err() {
                    break;
                }
            }
            store.len()
        })
        .map_err(|e| format!("cannot start the server thread: {e}"))?;
    let start_line = Arc::new(Barrier::new(n + 1));
    let clients: Vec<_> = answers
        .into_iter()
        .enumerate()
        .map(|(c, answers)| {
            let requests = requests.clone();
            let start_line = start_line.clone();
            std::thread::Builder::new()
                .name(format!("db-client-{c}"))
                .spawn(move || {
                    start_line.wait();
                    let t0 = Instant::now();
                    let mut ok = true;
                    for i in 0..r {
                        let (req, expect) = script(c, i);
                        if requests.send((c, req)).is_err() {
                            return (t0.elapsed(), false);
                        }
                        ok &= answers.recv() == Ok(expect);
                    }
                    (t0.elapsed(), ok)
                })
                .map_err(|e| format!("cannot start a client thread: {e}"))
        })
        .collect::<Result<_, _>>()?;
    drop(requests);
    start_line.wait();
    let start = Instant::now();
    let mut times: Vec<Duration> = Vec::with_capacity(n);
    let mut ok = true;
    for c in clients {
        let (t, good) = c.join().map_err(|_| "a client thread panicked")?;
        times.push(t);
        ok &= good;
    }
    let wall = start.elapsed();
    let size = server.join().map_err(|_| "the server thread panicked")?;
    Ok(Outcome {
        wall,
        per_client: mean(&times),
        ok: ok && size == final_size(n, r),
    })
}
