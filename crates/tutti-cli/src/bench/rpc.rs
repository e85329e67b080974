//! `tutti bench rpc`: Blip's cost ladder of a remote procedure call,
//! each rung as a multiple of a local call, and the loopback round trip beside
//! tarpc and remoc in the same run.
//!
//! * **local call**: the object's `Handler` future created and polled in place
//!   by the caller (what every other rung ends up running); the unit.
//!   A plain method call is shown beside it.
//! * **local proxy**: `Proxy::call` on a proxy for an object of the same
//!   endpoint (typed values, no serialization), from a task: the object
//!   published as an actor, and with a sequential-group vendor.
//! * **serialized in-process call**: the call's message framed and encoded,
//!   decoded by the object's `Dispatch` table, handled, the reply encoded and
//!   decoded — binary codec and JSON — with no socket.
//! * **oneway**: `Proxy::oneway` through a local proxy (the actor), and over
//!   loopback TCP; per call, amortized over `--calls` (resp. `--round-trips`)
//!   calls closed by one round trip that proves they were all handled.
//! * **loopback round trip**: `Proxy::call` over TCP on 127.0.0.1 from a task
//!   (binary and JSON), and `call_blocking` from a plain thread; beside a
//!   tarpc client and server (tokio, bincode, TCP_NODELAY) and a remoc
//!   `rtc` client and server (tokio, its default codec) in the same process.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};

use clap::Args;
use serde::{Deserialize, Serialize};
use tutti::actor::{self, Actor, Context};
use tutti::msg::codec::{self, Format, FrameKind, Header};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rpc::{Rpc, Vendor};

use crate::measure::{checked, repeat, Measurement, Progress, Run, RunOpts};
use crate::report::Report;

/// Arguments of `tutti bench rpc`.
#[derive(Args, Debug)]
pub struct RpcArgs {
    /// Calls per in-process measurement (local call, local proxy, serialized, local oneway).
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    calls: u64,
    /// Calls per loopback measurement (round trips, TCP oneway), for tutti and the peers alike.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    round_trips: u64,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The call: add to an accumulator, get the new total.
#[derive(Serialize, Deserialize, Clone, Copy)]
pub struct Add(pub u64);
impl Message for Add {
    type Reply = u64;
}
impl Remote for Add {
    const NAME: &'static str = "bench.rpc.Add";
}

/// The published object.
#[derive(Default)]
pub struct Acc(u64);

impl Acc {
    #[inline(never)]
    fn add(&mut self, x: u64) -> u64 {
        self.0 += x;
        self.0
    }
}

impl Object for Acc {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Add>()?;
        Ok(())
    }
}
impl Handler<Add> for Acc {
    async fn handle(&mut self, m: Add, _: &mut ()) -> u64 {
        self.add(m.0)
    }
}

/// The same object as an actor.
#[derive(Default)]
pub struct AccActor(u64);
impl Actor for AccActor {}
impl Handler<Add> for AccActor {
    async fn handle(&mut self, m: Add, _: &mut Context<Self>) -> u64 {
        self.0 += m.0;
        self.0
    }
}

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Polls a future that completes without waiting.
fn now<F: Future>(f: F, cx: &mut TaskContext<'_>) -> F::Output {
    match pin!(f).poll(cx) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("the benchmark's handlers never wait"),
    }
}

fn local_call(n: u64) -> Run {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = TaskContext::from_waker(&waker);
    let mut acc = Acc::default();
    checked(|| {
        let mut last = 0;
        for _ in 0..n {
            last = now(black_box(&mut acc).handle(Add(1), &mut ()), &mut cx);
        }
        last == n
    })
}

fn direct_call(n: u64) -> Run {
    let mut acc = Acc::default();
    checked(|| {
        let mut last = 0;
        for _ in 0..n {
            last = black_box(&mut acc).add(1);
        }
        last == n
    })
}

/// `n` calls through `proxy` from one task; whether the totals add up
/// (`base` is the total before).
fn calls_from_task<O: Handler<Add>>(p: &tutti::rpc::Proxy<O>, n: u64) -> Run {
    let p = p.clone();
    checked(move || {
        tutti::spawn(async move {
            let base = p.call(Add(0)).await.unwrap_or(u64::MAX);
            let mut last = 0;
            for _ in 0..n {
                match p.call(Add(1)).await {
                    Ok(v) => last = v,
                    Err(_) => return false,
                }
            }
            last == base + n
        })
        .join()
    })
}

fn blocking_calls<O: Handler<Add>>(p: &tutti::rpc::Proxy<O>, n: u64) -> Run {
    checked(|| {
        let base = p.call_blocking(Add(0)).unwrap_or(u64::MAX);
        let mut last = 0;
        for _ in 0..n {
            match p.call_blocking(Add(1)) {
                Ok(v) => last = v,
                Err(_) => return false,
            }
        }
        last == base + n
    })
}

/// `n` oneway calls then one call that sees them all.
fn oneways<O: Handler<Add>>(p: &tutti::rpc::Proxy<O>, n: u64) -> Run {
    let p = p.clone();
    checked(move || {
        tutti::spawn(async move {
            let base = p.call(Add(0)).await.unwrap_or(u64::MAX);
            for _ in 0..n {
                if p.oneway(Add(1)).is_err() {
                    return false;
                }
            }
            p.call(Add(0)).await.ok() == Some(base + n)
        })
        .join()
    })
}

fn serialized(n: u64, format: Format) -> Run {
    let mut table = Dispatch::<Acc>::new();
    if Acc::remote(&mut table).is_err() {
        return Run {
            elapsed: Default::default(),
            ok: false,
        };
    }
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = TaskContext::from_waker(&waker);
    let mut acc = Acc::default();
    let mut buf = Vec::new();
    let mut payload = Vec::new();
    checked(|| {
        let mut last = 0;
        for i in 0..n {
            buf.clear();
            payload.clear();
            let h = Header {
                msg: Add::ID,
                corr: i + 1,
                ..Header::new(FrameKind::Ask)
            };
            let framed = format
                .encode(&Add(1), &mut payload)
                .and_then(|()| codec::encode_raw_frame(&h, &payload, &mut buf));
            if framed.is_err() {
                return false;
            }
            let Ok(frame) = codec::decode_frame(&buf) else {
                return false;
            };
            let Ok(incoming) = table.incoming_in(&frame, format) else {
                return false;
            };
            now(incoming.envelope.handle(&mut acc, &mut ()), &mut cx);
            let Some(reply) = incoming.reply else {
                return false;
            };
            match now(reply, &mut cx).map(|bytes| format.decode::<u64>(&bytes)) {
                Ok(Ok(v)) => last = v,
                _ => return false,
            }
        }
        last == n
    })
}

pub fn run(a: &RpcArgs) -> Result<Report, String> {
    let plan = a.run.plan();
    let e = |e: tutti::rpc::RpcError| e.to_string();
    let server = Rpc::builder().cookie("bench").build().map_err(e)?;
    let client = Rpc::builder()
        .cookie("bench")
        .client_only()
        .build()
        .map_err(e)?;
    let group_url = server
        .publish("bench/acc/group", Acc::default(), Vendor::Sequential)
        .map_err(e)?;
    let mut table = Dispatch::new();
    table.register::<Add>().map_err(|e| e.to_string())?;
    let acc_actor = actor::spawn(AccActor::default());
    let actor_url = server
        .publish_actor("bench/acc/actor", &acc_actor, table)
        .map_err(e)?;
    let local_group = server.proxy::<Acc>(&group_url.to_string()).map_err(e)?;
    let local_actor = server
        .proxy::<AccActor>(&actor_url.to_string())
        .map_err(e)?;
    let remote_bin = client
        .proxy::<AccActor>(&actor_url.to_string())
        .map_err(e)?;
    let remote_json = client
        .proxy_with::<AccActor>(&actor_url.to_string(), Format::Json)
        .map_err(e)?;
    let remote_group = client.proxy::<Acc>(&group_url.to_string()).map_err(e)?;
    let peers = super::rpc_peers::Peers::start()?;

    let n = a.calls;
    let rt = a.round_trips;
    let stages = 15;
    let progress = Progress::new(plan.total() * stages, a.json);
    let mut ms: Vec<(&str, &str, u64, Measurement)> = Vec::new();
    let mut m = |name: &'static str, metric: &'static str, k: u64, f: &mut dyn FnMut() -> Run| {
        progress.stage(name);
        ms.push((name, metric, k, repeat(plan, &progress, f)));
    };
    m("local call", "call", n, &mut || local_call(n));
    m("direct method", "call", n, &mut || direct_call(n));
    m("local proxy (actor)", "call", n, &mut || {
        calls_from_task(&local_actor, n)
    });
    m("local proxy (sequential group)", "call", n, &mut || {
        calls_from_task(&local_group, n)
    });
    m("serialized in-process (binary)", "call", n, &mut || {
        serialized(n, Format::Binary)
    });
    m("serialized in-process (json)", "call", n, &mut || {
        serialized(n, Format::Json)
    });
    m("oneway local proxy (actor)", "oneway", n, &mut || {
        oneways(&local_actor, n)
    });
    m("oneway loopback tcp (actor)", "oneway", rt, &mut || {
        oneways(&remote_bin, rt)
    });
    m(
        "tutti loopback (binary, actor)",
        "round trip",
        rt,
        &mut || calls_from_task(&remote_bin, rt),
    );
    m(
        "tutti loopback (binary, sequential group)",
        "round trip",
        rt,
        &mut || calls_from_task(&remote_group, rt),
    );
    m(
        "tutti loopback (json, actor)",
        "round trip",
        rt,
        &mut || calls_from_task(&remote_json, rt),
    );
    m(
        "tutti loopback call_blocking (thread)",
        "round trip",
        rt,
        &mut || blocking_calls(&remote_bin, rt),
    );
    m("tarpc loopback", "round trip", rt, &mut || peers.tarpc(rt));
    m("remoc loopback", "round trip", rt, &mut || peers.remoc(rt));
    m(
        "std TCP echo (threads, blocking)",
        "round trip",
        rt,
        &mut || peers.echo(rt),
    );
    progress.finish();

    let mut report = Report::new("bench rpc");
    report
        .param("calls", n)
        .param("round_trips", rt)
        .param("runs", plan.runs)
        .param("workers", tutti::runtime::current_workers());
    let per = |m: &Measurement, k: u64| m.ns_per(k);
    let mut medians = std::collections::HashMap::new();
    for (name, metric, k, meas) in &ms {
        let s = per(meas, *k);
        medians.insert(*name, s.median);
        report.result(name, metric, s, "ns");
        report.verify(meas.ok);
    }
    let unit = medians["local call"];
    for (name, _, _, _) in &ms {
        if *name != "local call" {
            report.ratio(
                &format!("time_{}_over_local_call", slug(name)),
                medians[name] / unit,
            );
        }
    }
    let tutti_rt = medians["tutti loopback (binary, actor)"];
    report.ratio(
        "time_tutti_over_tarpc_loopback",
        tutti_rt / medians["tarpc loopback"],
    );
    report.ratio(
        "time_tutti_over_remoc_loopback",
        tutti_rt / medians["remoc loopback"],
    );
    report.ratio(
        "time_tutti_over_std_tcp_echo_loopback",
        tutti_rt / medians["std TCP echo (threads, blocking)"],
    );
    drop(peers);
    acc_actor.stop();
    Ok(report)
}

fn slug(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('_') {
            s.push('_');
        }
    }
    s.trim_end_matches('_').to_string()
}
