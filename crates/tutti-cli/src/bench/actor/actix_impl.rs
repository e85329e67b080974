//! The actix side of `tutti bench actor`: the same actors and drivers on
//! actix 0.13 (each arbiter is one thread running its actors).

use std::sync::Arc;
use std::time::Instant;

use actix::{Actor, Addr, Arbiter, Context, Handler, Message, System, SystemRunner};

use super::tutti_impl::expected_share;
use super::{park_block_on, Countdown, Library, BATCH};
use crate::alloc::Growth;
use crate::measure::Run;

struct Hit;
impl Message for Hit {
    type Result = ();
}

struct Total;
impl Message for Total {
    type Result = u64;
}

struct Ping(u64);
impl Message for Ping {
    type Result = u64;
}

struct Stop;
impl Message for Stop {
    type Result = ();
}

struct Counter(u64);
impl Actor for Counter {
    type Context = Context<Self>;
}
impl Handler<Hit> for Counter {
    type Result = ();
    fn handle(&mut self, _: Hit, _: &mut Context<Self>) {
        self.0 += 1;
    }
}
impl Handler<Total> for Counter {
    type Result = u64;
    fn handle(&mut self, _: Total, _: &mut Context<Self>) -> u64 {
        self.0
    }
}

struct Echo;
impl Actor for Echo {
    type Context = Context<Self>;
}
impl Handler<Ping> for Echo {
    type Result = u64;
    fn handle(&mut self, p: Ping, _: &mut Context<Self>) -> u64 {
        p.0 + 1
    }
}

struct Probe {
    started: Option<Arc<Countdown>>,
    stopped: Option<Arc<Countdown>>,
}
impl Actor for Probe {
    type Context = Context<Self>;
    fn started(&mut self, _: &mut Context<Self>) {
        if let Some(c) = &self.started {
            c.arrive();
        }
    }
    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(c) = &self.stopped {
            c.arrive();
        }
    }
}
impl Handler<Stop> for Probe {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        actix::ActorContext::stop(ctx);
    }
}

/// actix: the system thread (this one, while a driver runs) plus
/// `workers - 1` arbiter threads.
pub struct Actix {
    runner: SystemRunner,
    arbiters: Vec<Arbiter>,
}

impl Actix {
    pub fn new(workers: usize) -> Result<Actix, String> {
        let runner = System::new();
        let arbiters = (1..workers)
            .map(|_| Arbiter::try_new().map_err(|e| format!("cannot start an actix arbiter: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(Actix { runner, arbiters })
    }
}

impl Drop for Actix {
    fn drop(&mut self) {
        for a in self.arbiters.drain(..) {
            a.stop();
            let _ = a.join();
        }
    }
}

impl Library for Actix {
    fn name(&self) -> &'static str {
        "actix"
    }

    fn tell(&mut self, actors: usize, messages: u64) -> Run {
        let handles: Vec<_> = self.arbiters.iter().map(Arbiter::handle).collect();
        self.runner.block_on(async move {
            // Actor k lives on thread k mod workers (0 = this one).
            let counters: Vec<Addr<Counter>> = (0..actors)
                .map(|k| match k % (handles.len() + 1) {
                    0 => Counter(0).start(),
                    t => Counter::start_in_arbiter(&handles[t - 1], |_| Counter(0)),
                })
                .collect();
            let start = Instant::now();
            for i in 0..messages {
                counters[(i % actors as u64) as usize].do_send(Hit);
            }
            let mut ok = true;
            for (k, c) in counters.iter().enumerate() {
                ok &= c.send(Total).await.ok() == Some(expected_share(messages, actors, k));
            }
            Run {
                elapsed: start.elapsed(),
                ok,
            }
        })
    }

    fn ask(&mut self, round_trips: u64) -> Run {
        self.runner.block_on(async move {
            let echo = Echo.start();
            let start = Instant::now();
            let mut v = 0;
            for _ in 0..round_trips {
                match echo.send(Ping(v)).await {
                    Ok(r) => v = r,
                    Err(_) => return super::failed(),
                }
            }
            Run {
                elapsed: start.elapsed(),
                ok: v == round_trips,
            }
        })
    }

    fn ask_thread(&mut self, round_trips: u64) -> Run {
        // The system thread runs the actor while a plain thread asks.
        self.runner.block_on(async move {
            let echo = Echo.start();
            let (tx, rx) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut v = 0;
                for _ in 0..round_trips {
                    match park_block_on(echo.send(Ping(v))) {
                        Ok(r) => v = r,
                        Err(_) => break,
                    }
                }
                let _ = tx.send(Run {
                    elapsed: start.elapsed(),
                    ok: v == round_trips,
                });
            });
            rx.await.unwrap_or_else(|_| super::failed())
        })
    }

    fn spawn_stop(&mut self, n: usize) -> Run {
        self.runner.block_on(async move {
            let stopped = Countdown::new();
            let start = Instant::now();
            stopped.expect(n);
            let probes: Vec<_> = (0..n)
                .map(|_| {
                    Probe {
                        started: None,
                        stopped: Some(stopped.clone()),
                    }
                    .start()
                })
                .collect();
            for p in &probes {
                p.do_send(Stop);
            }
            drop(probes);
            stopped.wait().await;
            Run {
                elapsed: start.elapsed(),
                ok: stopped.is_zero(),
            }
        })
    }

    fn memory(&mut self, n: usize) -> Option<Growth> {
        // A fresh system on a thread of its own.
        std::thread::spawn(move || {
            let runner = System::new();
            let started = Countdown::new();
            let stopped = Countdown::new();
            let mut addrs = Vec::with_capacity(n);
            let (addrs, growth) = crate::alloc::measure(|| {
                runner.block_on({
                    let started = started.clone();
                    let stopped = stopped.clone();
                    async move {
                        let mut left = n;
                        while left > 0 {
                            let k = left.min(BATCH);
                            started.expect(k);
                            for _ in 0..k {
                                addrs.push(
                                    Probe {
                                        started: Some(started.clone()),
                                        stopped: Some(stopped.clone()),
                                    }
                                    .start(),
                                );
                            }
                            started.wait().await;
                            left -= k;
                        }
                        addrs
                    }
                })
            });
            let all = addrs.len() == n && started.is_zero();
            runner.block_on(async move {
                stopped.expect(n);
                for a in &addrs {
                    a.do_send(Stop);
                }
                drop(addrs);
                stopped.wait().await;
            });
            all.then_some(growth)
        })
        .join()
        .ok()
        .flatten()
    }
}
