//! The tutti side of `tutti bench actor`.

use std::sync::Arc;
use std::time::Instant;

use tutti::actor::{self, Actor, ActorSystem, Context, StopReason};
use tutti::msg::{Handler, Message};

use super::{Countdown, Library, BATCH};
use crate::alloc::Growth;
use crate::measure::Run;

/// A statement: count one.
struct Hit;
impl Message for Hit {
    type Reply = ();
}

/// A question: how many so far?
struct Total;
impl Message for Total {
    type Reply = u64;
}

/// A question: the number plus one.
struct Ping(u64);
impl Message for Ping {
    type Reply = u64;
}

struct Counter(u64);
impl Actor for Counter {}
impl Handler<Hit> for Counter {
    async fn handle(&mut self, _: Hit, _: &mut Context<Self>) {
        self.0 += 1;
    }
}
impl Handler<Total> for Counter {
    async fn handle(&mut self, _: Total, _: &mut Context<Self>) -> u64 {
        self.0
    }
}

struct Echo;
impl Actor for Echo {}
impl Handler<Ping> for Echo {
    async fn handle(&mut self, p: Ping, _: &mut Context<Self>) -> u64 {
        p.0 + 1
    }
}

/// Reports its start and its stop to countdowns.
struct Probe {
    started: Option<Arc<Countdown>>,
    stopped: Option<Arc<Countdown>>,
}
impl Actor for Probe {
    fn started(&mut self, _: &mut Context<Self>) {
        if let Some(c) = &self.started {
            c.arrive();
        }
    }
    fn stopped(&mut self, _: &StopReason) {
        if let Some(c) = &self.stopped {
            c.arrive();
        }
    }
}

/// tutti with its own runtime.
pub struct Tutti {
    rt: tutti::Runtime,
    workers: usize,
}

fn runtime(workers: usize) -> Result<tutti::Runtime, String> {
    tutti::Runtime::builder()
        .workers(workers)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {workers} workers: {e}"))
}

impl Tutti {
    pub fn new(workers: usize) -> Result<Tutti, String> {
        Ok(Tutti {
            rt: runtime(workers)?,
            workers,
        })
    }
}

impl Library for Tutti {
    fn name(&self) -> &'static str {
        "tutti"
    }

    fn tell(&mut self, actors: usize, messages: u64) -> Run {
        let rt = &self.rt;
        rt.block_on(rt.spawn(async move {
            let counters: Vec<_> = (0..actors).map(|_| actor::spawn(Counter(0))).collect();
            let start = Instant::now();
            for i in 0..messages {
                if counters[(i % actors as u64) as usize].tell(Hit).is_err() {
                    return super::failed();
                }
            }
            let mut ok = true;
            for (k, c) in counters.iter().enumerate() {
                ok &= c.ask(Total).await == Ok(expected_share(messages, actors, k));
            }
            Run {
                elapsed: start.elapsed(),
                ok,
            }
        }))
    }

    fn ask(&mut self, round_trips: u64) -> Run {
        let rt = &self.rt;
        rt.block_on(rt.spawn(async move {
            let echo = actor::spawn(Echo);
            let start = Instant::now();
            let mut v = 0;
            for _ in 0..round_trips {
                match echo.ask(Ping(v)).await {
                    Ok(r) => v = r,
                    Err(_) => return super::failed(),
                }
            }
            Run {
                elapsed: start.elapsed(),
                ok: v == round_trips,
            }
        }))
    }

    fn ask_thread(&mut self, round_trips: u64) -> Run {
        let _in = self.rt.enter();
        let echo = actor::spawn(Echo);
        let start = Instant::now();
        let mut v = 0;
        for _ in 0..round_trips {
            match echo.ask_blocking(Ping(v)) {
                Ok(r) => v = r,
                Err(_) => return super::failed(),
            }
        }
        Run {
            elapsed: start.elapsed(),
            ok: v == round_trips,
        }
    }

    fn spawn_stop(&mut self, n: usize) -> Run {
        let rt = &self.rt;
        rt.block_on(rt.spawn(async move {
            let stopped = Countdown::new();
            let start = Instant::now();
            stopped.expect(n);
            let probes: Vec<_> = (0..n)
                .map(|_| {
                    actor::spawn(Probe {
                        started: None,
                        stopped: Some(stopped.clone()),
                    })
                })
                .collect();
            for p in &probes {
                p.stop();
            }
            drop(probes);
            stopped.wait().await;
            Run {
                elapsed: start.elapsed(),
                ok: stopped.is_zero(),
            }
        }))
    }

    fn memory(&mut self, n: usize) -> Option<Growth> {
        // A fresh runtime and system, so that their tables grow in the window.
        let rt = runtime(self.workers).ok()?;
        let system = ActorSystem::new();
        let started = Countdown::new();
        // Allocated before the window: the driver's list is not the actors'.
        let mut addrs = Vec::with_capacity(n);
        let spawner = system.clone();
        let (addrs, growth) = crate::alloc::measure(|| {
            rt.block_on(rt.spawn(async move {
                let mut left = n;
                while left > 0 {
                    let k = left.min(BATCH);
                    started.expect(k);
                    for _ in 0..k {
                        addrs.push(spawner.spawn(Probe {
                            started: Some(started.clone()),
                            stopped: None,
                        }));
                    }
                    started.wait().await;
                    left -= k;
                }
                addrs
            }))
        });
        let live = system.live();
        drop(addrs);
        system.shutdown_blocking();
        drop(rt);
        (live == n).then_some(growth)
    }
}

/// What actor `k` of `actors` receives out of `messages` told round-robin.
pub fn expected_share(messages: u64, actors: usize, k: usize) -> u64 {
    let a = actors as u64;
    messages / a + u64::from((k as u64) < messages % a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for (m, a) in [(10, 3), (3, 10), (100, 100), (1, 1)] {
            let total: u64 = (0..a).map(|k| expected_share(m, a, k)).sum();
            assert_eq!(total, m);
        }
    }
}
