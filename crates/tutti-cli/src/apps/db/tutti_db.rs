//! The store as a tutti actor, its clients as async tasks.

use std::time::{Duration, Instant};

use tutti::actor::{self, Actor, Context};
use tutti::msg::{Handler, Message};
use tutti::{IdleStrategy, Runtime};

use super::{final_size, mean, script, Outcome, Request, Store, Strategy};

struct Get(u64);
impl Message for Get {
    type Reply = Option<u64>;
}

struct Put(u64, u64);
impl Message for Put {
    type Reply = Option<u64>;
}

/// How many keys are stored.
struct Len;
impl Message for Len {
    type Reply = usize;
}

/// `immediate`: serve the mailbox from one long handler until `Halt`.
struct Serve;
impl Message for Serve {
    type Reply = ();
}

/// Ends `Serve`.
struct Halt;
impl Message for Halt {
    type Reply = ();
}

struct Db {
    store: Store,
    serving: bool,
}

impl Actor for Db {}

impl Handler<Get> for Db {
    async fn handle(&mut self, m: Get, _: &mut Context<Self>) -> Option<u64> {
        self.store.apply(Request::Get(m.0))
    }
}

impl Handler<Put> for Db {
    async fn handle(&mut self, m: Put, _: &mut Context<Self>) -> Option<u64> {
        self.store.apply(Request::Put(m.0, m.1))
    }
}

impl Handler<Len> for Db {
    async fn handle(&mut self, _: Len, _: &mut Context<Self>) -> usize {
        self.store.len()
    }
}

impl Handler<Serve> for Db {
    async fn handle(&mut self, _: Serve, ctx: &mut Context<Self>) {
        self.serving = true;
        while self.serving {
            // message_immediate: take whatever waits, each request answered as
            // soon as it is handled ...
            while ctx.has_messages() {
                let Some(m) = ctx.try_next() else { break };
                m.handle(self, ctx).await;
            }
            // ... and with nothing waiting, let the clients run, then look again.
            tutti::runtime::yield_now().await;
        }
    }
}

impl Handler<Halt> for Db {
    async fn handle(&mut self, _: Halt, _: &mut Context<Self>) {
        self.serving = false;
    }
}

/// A tutti runtime configured for one strategy.
pub struct TuttiDb {
    rt: Runtime,
    strategy: Strategy,
}

impl TuttiDb {
    pub fn new(workers: usize, strategy: Strategy) -> Result<TuttiDb, String> {
        let idle = match strategy {
            Strategy::Immediate => IdleStrategy::Spin,
            Strategy::Wait => IdleStrategy::Yield { spins: 32 },
            Strategy::Notify => IdleStrategy::default(),
        };
        let rt = Runtime::builder()
            .workers(workers)
            .idle_strategy(idle)
            .build()
            .map_err(|e| format!("cannot build a runtime with {workers} workers: {e}"))?;
        Ok(TuttiDb { rt, strategy })
    }

    /// One run: a fresh store, `n` clients of `r` requests.
    pub fn run(&self, n: usize, r: u64) -> Result<Outcome, String> {
        let rt = &self.rt;
        let immediate = self.strategy == Strategy::Immediate;
        rt.block_on(rt.spawn(async move {
            let db = actor::spawn(Db {
                store: Store::default(),
                serving: false,
            });
            if immediate {
                db.tell(Serve).map_err(|e| e.to_string())?;
            }
            let start = Instant::now();
            let clients: Vec<_> = (0..n)
                .map(|c| {
                    let db = db.clone();
                    tutti::spawn(async move {
                        let t0 = Instant::now();
                        let mut ok = true;
                        for i in 0..r {
                            let (req, expect) = script(c, i);
                            let got = match req {
                                Request::Get(k) => db.ask(Get(k)).await,
                                Request::Put(k, v) => db.ask(Put(k, v)).await,
                            };
                            ok &= got == Ok(expect);
                        }
                        (t0.elapsed(), ok)
                    })
                })
                .collect();
            let mut times: Vec<Duration> = Vec::with_capacity(n);
            let mut ok = true;
            for c in clients {
                let (t, good) = c.await;
                times.push(t);
                ok &= good;
            }
            let wall = start.elapsed();
            if immediate {
                db.tell(Halt).map_err(|e| e.to_string())?;
            }
            ok &= db.ask(Len).await == Ok(final_size(n, r));
            Ok(Outcome {
                wall,
                per_client: mean(&times),
                ok,
            })
        }))
    }
}
