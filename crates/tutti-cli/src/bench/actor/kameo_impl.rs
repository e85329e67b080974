//! The kameo side of `tutti bench actor`: the same actors and drivers on
//! kameo 0.17 (one tokio task per actor), with unbounded mailboxes like
//! tutti's default.

use std::sync::Arc;
use std::time::Instant;

use kameo::actor::{ActorRef, WeakActorRef};
use kameo::error::{ActorStopReason, Infallible};
use kameo::mailbox;
use kameo::message::{Context, Message};
use kameo::Actor;

use super::tutti_impl::expected_share;
use super::{Countdown, Library, BATCH};
use crate::alloc::Growth;
use crate::measure::Run;

struct Hit;
struct Total;
struct Ping(u64);

struct Counter(u64);
impl Actor for Counter {
    type Args = Self;
    type Error = Infallible;
    async fn on_start(args: Self, _: ActorRef<Self>) -> Result<Self, Infallible> {
        Ok(args)
    }
}
impl Message<Hit> for Counter {
    type Reply = ();
    async fn handle(&mut self, _: Hit, _: &mut Context<Self, ()>) {
        self.0 += 1;
    }
}
impl Message<Total> for Counter {
    type Reply = u64;
    async fn handle(&mut self, _: Total, _: &mut Context<Self, u64>) -> u64 {
        self.0
    }
}

struct Echo;
impl Actor for Echo {
    type Args = Self;
    type Error = Infallible;
    async fn on_start(args: Self, _: ActorRef<Self>) -> Result<Self, Infallible> {
        Ok(args)
    }
}
impl Message<Ping> for Echo {
    type Reply = u64;
    async fn handle(&mut self, p: Ping, _: &mut Context<Self, u64>) -> u64 {
        p.0 + 1
    }
}

struct Probe {
    started: Option<Arc<Countdown>>,
    stopped: Option<Arc<Countdown>>,
}
impl Actor for Probe {
    type Args = Self;
    type Error = Infallible;
    async fn on_start(args: Self, _: ActorRef<Self>) -> Result<Self, Infallible> {
        if let Some(c) = &args.started {
            c.arrive();
        }
        Ok(args)
    }
    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: ActorStopReason,
    ) -> Result<(), Infallible> {
        if let Some(c) = &self.stopped {
            c.arrive();
        }
        Ok(())
    }
}

fn spawn<A: Actor<Args = A>>(a: A) -> ActorRef<A> {
    A::spawn_with_mailbox(a, mailbox::unbounded())
}

fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .build()
        .map_err(|e| format!("cannot build a tokio runtime with {workers} workers: {e}"))
}

/// kameo on a tokio multi-thread runtime.
pub struct Kameo {
    rt: tokio::runtime::Runtime,
    workers: usize,
}

impl Kameo {
    pub fn new(workers: usize) -> Result<Kameo, String> {
        Ok(Kameo {
            rt: runtime(workers)?,
            workers,
        })
    }
}

impl Library for Kameo {
    fn name(&self) -> &'static str {
        "kameo"
    }

    fn tell(&mut self, actors: usize, messages: u64) -> Run {
        let rt = &self.rt;
        rt.block_on(rt.spawn(async move {
            let counters: Vec<_> = (0..actors).map(|_| spawn(Counter(0))).collect();
            let start = Instant::now();
            for i in 0..messages {
                if counters[(i % actors as u64) as usize]
                    .tell(Hit)
                    .try_send()
                    .is_err()
                {
                    return super::failed();
                }
            }
            let mut ok = true;
            for (k, c) in counters.iter().enumerate() {
                ok &= c.ask(Total).await.ok() == Some(expected_share(messages, actors, k));
            }
            Run {
                elapsed: start.elapsed(),
                ok,
            }
        }))
        .unwrap_or_else(|_| super::failed())
    }

    fn ask(&mut self, round_trips: u64) -> Run {
        let rt = &self.rt;
        rt.block_on(rt.spawn(async move {
            let echo = spawn(Echo);
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
        .unwrap_or_else(|_| super::failed())
    }

    fn ask_thread(&mut self, round_trips: u64) -> Run {
        let echo = {
            let _in = self.rt.enter();
            spawn(Echo)
        };
        let start = Instant::now();
        let mut v = 0;
        for _ in 0..round_trips {
            match echo.ask(Ping(v)).blocking_send() {
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
                    spawn(Probe {
                        started: None,
                        stopped: Some(stopped.clone()),
                    })
                })
                .collect();
            for p in &probes {
                if p.stop_gracefully().await.is_err() {
                    return super::failed();
                }
            }
            drop(probes);
            stopped.wait().await;
            Run {
                elapsed: start.elapsed(),
                ok: stopped.is_zero(),
            }
        }))
        .unwrap_or_else(|_| super::failed())
    }

    fn memory(&mut self, n: usize) -> Option<Growth> {
        let rt = runtime(self.workers).ok()?;
        let started = Countdown::new();
        let stopped = Countdown::new();
        let mut addrs = Vec::with_capacity(n);
        let (addrs, growth) = crate::alloc::measure(|| {
            rt.block_on(rt.spawn({
                let started = started.clone();
                let stopped = stopped.clone();
                async move {
                    let mut left = n;
                    while left > 0 {
                        let k = left.min(BATCH);
                        started.expect(k);
                        for _ in 0..k {
                            addrs.push(spawn(Probe {
                                started: Some(started.clone()),
                                stopped: Some(stopped.clone()),
                            }));
                        }
                        started.wait().await;
                        left -= k;
                    }
                    addrs
                }
            }))
        });
        let addrs = addrs.ok()?;
        let all = addrs.len() == n && started.is_zero();
        let _ = rt.block_on(rt.spawn(async move {
            stopped.expect(n);
            for a in &addrs {
                let _ = a.stop_gracefully().await;
            }
            drop(addrs);
            stopped.wait().await;
        }));
        all.then_some(growth)
    }
}
