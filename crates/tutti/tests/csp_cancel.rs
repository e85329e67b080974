//! Cancellation safety under random drops: send and receive futures and `Alt` selections
//! are polled and dropped at random points (fixed seeds), and afterwards every value ever
//! sent has been either received exactly once or dropped exactly once — never both,
//! never neither.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tutti::csp::{buffered, Alt, RecvError, Rx, SendError, Tx};

/// xorshift64*: deterministic and good enough to pick actions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The ids of values that were dropped without being received.
type Ledger = Arc<Mutex<Vec<u64>>>;

/// A sent value that reports its id to the ledger if dropped unreceived.
struct Value {
    id: u64,
    ledger: Ledger,
    received: bool,
}

impl Value {
    fn receive(mut self) -> u64 {
        self.received = true;
        self.id
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        if !self.received {
            self.ledger.lock().unwrap().push(self.id);
        }
    }
}

/// What a finished operation produced.
enum Outcome {
    Sent,
    NotSent,
    Received(u64),
    NothingReceived,
}

type Op = Pin<Box<dyn Future<Output = Outcome> + Send>>;

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

fn send_op(tx: Tx<Value>, v: Value) -> Op {
    Box::pin(async move {
        match tx.send(v).await {
            Ok(()) => Outcome::Sent,
            Err(SendError::Closed(v) | SendError::Poisoned(v)) => {
                drop(v);
                Outcome::NotSent
            }
        }
    })
}

fn recv_op(rx: Rx<Value>) -> Op {
    Box::pin(async move {
        match rx.recv().await {
            Ok(v) => Outcome::Received(v.receive()),
            Err(_) => Outcome::NothingReceived,
        }
    })
}

/// An `Alt` over both channels (sometimes with a pre-condition off, sometimes leaving
/// the value in the `Selected`, which gives it back).
fn alt_op(a: Rx<Value>, b: Rx<Value>, flavour: usize) -> Op {
    Box::pin(async move {
        let mut alt = Alt::new().recv(&a).recv_if(flavour != 1, &b);
        let sel = if flavour == 2 {
            alt.pri_select().await
        } else {
            alt.fair_select().await
        };
        if flavour == 3 {
            return Outcome::NothingReceived; // dropped unclaimed: given back
        }
        let i = sel.index();
        match sel.recv([&a, &b][i]) {
            Ok(v) => Outcome::Received(v.receive()),
            Err(RecvError::Closed | RecvError::Poisoned) => Outcome::NothingReceived,
        }
    })
}

/// One random run: `steps` actions over two channels of `capacity`.
fn run(seed: u64, capacity: usize, steps: usize, poison_at: Option<usize>) {
    let mut rng = Rng(seed | 1);
    let ledger: Ledger = Arc::new(Mutex::new(Vec::new()));
    let (ta, ra) = buffered::<Value>(capacity);
    let (tb, rb) = buffered::<Value>(capacity);
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut ops: Vec<Op> = Vec::new();
    let mut next_id = 0u64;
    let mut received = Vec::new();
    let mut completed_sends = 0u64;
    let mut finish = |out: Outcome, received: &mut Vec<u64>| match out {
        Outcome::Received(id) => received.push(id),
        Outcome::Sent => completed_sends += 1,
        Outcome::NotSent | Outcome::NothingReceived => {}
    };
    for step in 0..steps {
        if Some(step) == poison_at {
            ta.poison();
        }
        match rng.below(10) {
            0 | 1 => {
                let tx = if rng.below(2) == 0 {
                    ta.clone()
                } else {
                    tb.clone()
                };
                let v = Value {
                    id: next_id,
                    ledger: ledger.clone(),
                    received: false,
                };
                next_id += 1;
                ops.push(send_op(tx, v));
            }
            2 => {
                let rx = if rng.below(2) == 0 {
                    ra.clone()
                } else {
                    rb.clone()
                };
                ops.push(recv_op(rx));
            }
            3 => ops.push(alt_op(ra.clone(), rb.clone(), rng.below(4))),
            4 if !ops.is_empty() => {
                let op = ops.swap_remove(rng.below(ops.len()));
                drop(op); // cancelled at a random point
            }
            _ if !ops.is_empty() => {
                let i = rng.below(ops.len());
                if let Poll::Ready(out) = ops[i].as_mut().poll(&mut cx) {
                    drop(ops.swap_remove(i));
                    finish(out, &mut received);
                }
            }
            _ => {}
        }
    }
    // Cancel what is left, in random order, then drain the channels.
    while !ops.is_empty() {
        let op = ops.swap_remove(rng.below(ops.len()));
        drop(op);
    }
    for rx in [&ra, &rb] {
        while let Ok(v) = rx.try_recv() {
            received.push(v.receive());
        }
    }
    drop((ta, tb, ra, rb));
    let dropped = ledger.lock().unwrap().clone();
    let mut all: Vec<u64> = received.iter().chain(&dropped).copied().collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..next_id).collect::<Vec<_>>(),
        "seed {seed}, capacity {capacity}: every value received or dropped, exactly once"
    );
    assert!(
        received.len() as u64 >= completed_sends,
        "seed {seed}: a completed send's value must have been received"
    );
}

const SEEDS: u64 = 40;
const STEPS: usize = 1_500;

#[test]
fn random_drops_rendezvous() {
    for seed in 0..SEEDS {
        run(0x9E37_79B9 + seed * 7919, 0, STEPS, None);
    }
}

#[test]
fn random_drops_buffered() {
    for seed in 0..SEEDS {
        run(0x5DEE_CE66 + seed * 104_729, 2, STEPS, None);
    }
}

#[test]
fn random_drops_with_poison() {
    for seed in 0..SEEDS / 2 {
        run(
            0xC0FF_EE00 + seed * 31,
            (seed % 3) as usize,
            STEPS,
            Some(STEPS / 2),
        );
    }
}

/// The same ledger check with real concurrency: tasks on a runtime and plain threads
/// give up on sends and receives through timeouts at arbitrary points. Senders withdraw
/// with `SendFuture::cancel`, so they know exactly which of their values were received.
#[test]
fn concurrent_timeouts_never_lose_values() {
    let rt = tutti::Runtime::builder().workers(2).build().unwrap();
    let ledger: Ledger = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = buffered::<Value>(0);
    const SENDERS: u64 = 4;
    const EACH: u64 = 200;
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let tx = tx.clone();
            let ledger = ledger.clone();
            rt.spawn(async move {
                let mut delivered = 0u64;
                for i in 0..EACH {
                    let v = Value {
                        id: s * EACH + i,
                        ledger: ledger.clone(),
                        received: false,
                    };
                    let wait = Duration::from_micros((i * 37 + s * 11) % 50);
                    // Give up after `wait`, but withdraw with `cancel` rather than by
                    // dropping: it tells whether a receiver took the value meanwhile.
                    let mut send = std::pin::pin!(tx.send(v));
                    let sent = match tutti::timeout(wait, send.as_mut()).await {
                        Ok(r) => r.is_ok(),
                        Err(_) => send.as_mut().cancel().is_none(),
                    };
                    delivered += u64::from(sent);
                }
                delivered
            })
        })
        .collect();
    drop(tx);
    let receivers: Vec<_> = (0..2)
        .map(|r| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                let mut k = 0u64;
                loop {
                    k += 1;
                    match rx.recv_timeout(Duration::from_micros((k * 13 + r) % 40)) {
                        Ok(v) => got.push(v.receive()),
                        Err(tutti::csp::RecvTimeoutError::Timeout) => {}
                        Err(_) => return got,
                    }
                }
            })
        })
        .collect();
    drop(rx);
    let delivered: u64 = senders.into_iter().map(|h| rt.block_on(h)).sum();
    let received: Vec<u64> = receivers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(
        received.len() as u64,
        delivered,
        "completed sends = receptions"
    );
    let mut all: Vec<u64> = received
        .iter()
        .chain(ledger.lock().unwrap().iter())
        .copied()
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..SENDERS * EACH).collect::<Vec<_>>());
}
