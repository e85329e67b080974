//! `tutti db --processes P`: the store in one OS process, its `P − 1` clients
//! in `P − 1` others (Gingras 2018 §4.5, Figures 4.9–4.10: clients in other
//! processes of one host), each client one request at a time as in the
//! threaded runs.
//!
//! * **tutti** — the processes form one shared-memory system
//!   (`tutti::world::launch`: rank 0 the store, ranks 1.. the clients); the
//!   store is an actor exported by rank 0's node and registered as `db`, the
//!   clients look it up and `ask` it across processes. Rank 0 measures the
//!   wall time between two barriers around the clients' requests; the
//!   clients' times and checks are summed with an all-reduce.
//! * **uds** — this process serves `P − 1` client processes over Unix domain
//!   sockets with the threaded run's `poll(2)` server and wire format; it
//!   measures the wall time from its start signal until every client hung up.
//!
//! Every reply is checked, and so is the store's final size. The processes
//! are started anew for every run, outside the timed section.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tutti::actor::{self, Actor, Context};
use tutti::msg::{Dispatch, Handler, Message, Remote};
use tutti::remote::Node;
use tutti::world::World;

use super::store::{decode_reply, REPLY_BYTES};
use super::{final_size, script, Outcome, Request, Store};

#[derive(Serialize, Deserialize)]
struct Get(u64);
impl Message for Get {
    type Reply = Option<u64>;
}
impl Remote for Get {
    const NAME: &'static str = "tutti.db.Get";
}

#[derive(Serialize, Deserialize)]
struct Put(u64, u64);
impl Message for Put {
    type Reply = Option<u64>;
}
impl Remote for Put {
    const NAME: &'static str = "tutti.db.Put";
}

#[derive(Serialize, Deserialize)]
struct Len;
impl Message for Len {
    type Reply = u64;
}
impl Remote for Len {
    const NAME: &'static str = "tutti.db.Len";
}

struct Db(Store);
impl Actor for Db {}
impl Handler<Get> for Db {
    async fn handle(&mut self, m: Get, _: &mut Context<Self>) -> Option<u64> {
        self.0.apply(Request::Get(m.0))
    }
}
impl Handler<Put> for Db {
    async fn handle(&mut self, m: Put, _: &mut Context<Self>) -> Option<u64> {
        self.0.apply(Request::Put(m.0, m.1))
    }
}
impl Handler<Len> for Db {
    async fn handle(&mut self, _: Len, _: &mut Context<Self>) -> u64 {
        self.0.len() as u64
    }
}

fn me(role: &str, r: u64) -> Result<Command, String> {
    let mut c = super::super::child_command("db", role)?;
    c.args(["--requests", &r.to_string()]);
    Ok(c)
}

/// One tutti run with `p` processes; rank 0 writes its result to a file.
pub fn run_tutti(p: usize, r: u64) -> Result<Outcome, String> {
    let text = super::super::launch_members(me("tutti-member", r)?, "db", p)?;
    parse_outcome(&text)
}

/// "wall_ns per_client_ns ok"
fn parse_outcome(text: &str) -> Result<Outcome, String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let num = |i: usize| -> Result<u64, String> {
        w.get(i)
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("a malformed result {text:?}"))
    };
    Ok(Outcome {
        wall: Duration::from_nanos(num(0)?),
        per_client: Duration::from_nanos(num(1)?),
        ok: num(2)? == 1,
    })
}

/// A process of the tutti run (`--role tutti-member`).
pub fn tutti_member(r: u64, out: &str) -> Result<(), String> {
    for reg in [
        tutti::msg::register::<Get>(),
        tutti::msg::register::<Put>(),
        tutti::msg::register::<Len>(),
    ] {
        reg.map_err(|e| e.to_string())?;
    }
    let world = World::builder()
        .locations(1)
        .workers(1)
        .build()
        .map_err(|e| e.to_string())?;
    let p = world.ranks();
    let results = world.run(move |loc| async move {
        let node = Node::join(loc);
        let rank = node.id().index();
        let db = (rank == 0).then(|| actor::spawn(Db(Store::default())));
        if let Some(db) = &db {
            let mut t = Dispatch::new();
            t.register::<Get>()
                .and_then(|t| t.register::<Put>())
                .and_then(|t| t.register::<Len>())
                .expect("the db's messages");
            let remote = node.export(db, t);
            node.register("db", &remote).await.expect("register db");
        }
        node.barrier().await;
        let store = node.lookup::<Db>("db").await.expect("look up db");
        node.barrier().await;
        let start = Instant::now();
        let (mut ok, mut nanos) = (true, 0u64);
        if rank > 0 {
            let c = rank - 1;
            let t0 = Instant::now();
            for i in 0..r {
                let (req, expect) = script(c, i);
                let got = match req {
                    Request::Get(k) => store.ask(Get(k)).await,
                    Request::Put(k, v) => store.ask(Put(k, v)).await,
                };
                ok &= got == Ok(expect);
            }
            nanos = t0.elapsed().as_nanos() as u64;
        }
        node.barrier().await;
        let wall = start.elapsed();
        let (ok, nanos) = node
            .location()
            .all_reduce((ok, nanos), |a, b| (a.0 && b.0, a.1 + b.1))
            .await;
        let size_ok = match rank {
            0 => store.ask(Len).await == Ok(final_size(p - 1, r) as u64),
            _ => true,
        };
        node.barrier().await;
        node.leave().await;
        (wall, nanos / (p as u64 - 1), ok && size_ok)
    });
    if world.rank() == 0 {
        let (wall, per_client, ok) = results[0];
        let text = format!("{} {per_client} {}", wall.as_nanos(), u8::from(ok));
        std::fs::write(out, text).map_err(|e| format!("{out}: {e}"))?;
    }
    Ok(())
}

/// One Unix-socket run: this process serves `p − 1` client processes.
pub fn run_uds(p: usize, r: u64) -> Result<Outcome, String> {
    let n = p - 1;
    let path = std::env::temp_dir().join(format!("tutti-db-uds-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut children = Vec::with_capacity(n);
    for c in 0..n {
        let mut cmd = me("uds-client", r)?;
        cmd.arg("--out")
            .arg(&path)
            .arg("--member")
            .arg(c.to_string())
            .stdout(Stdio::piped());
        children.push(
            cmd.spawn()
                .map_err(|e| format!("cannot start a client: {e}"))?,
        );
    }
    // Connections in client order (each client says who it is).
    let mut conns: Vec<Option<UnixStream>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let (mut s, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
        let mut who = [0u8; 4];
        s.read_exact(&mut who)
            .map_err(|e| format!("a client's hello: {e}"))?;
        let c = u32::from_le_bytes(who) as usize;
        match conns.get_mut(c) {
            Some(slot @ None) => *slot = Some(s),
            _ => return Err(format!("an unexpected client number {c}")),
        }
    }
    let _ = std::fs::remove_file(&path);
    let mut conns: Vec<UnixStream> = conns.into_iter().map(Option::unwrap).collect();
    let start = Instant::now();
    for s in &mut conns {
        s.write_all(&[1])
            .map_err(|e| format!("start signal: {e}"))?;
    }
    let size = super::uds::serve(conns)?;
    let wall = start.elapsed();
    let (mut ok, mut total) = (size == final_size(n, r), Duration::ZERO);
    for c in children {
        let o = c.wait_with_output().map_err(|e| format!("a client: {e}"))?;
        let text = String::from_utf8_lossy(&o.stdout);
        let mut w = text.split_whitespace();
        match (w.next().and_then(|t| t.parse().ok()), w.next()) {
            (Some(ns), Some(good)) if o.status.success() => {
                total += Duration::from_nanos(ns);
                ok &= good == "1";
            }
            _ => return Err(format!("a uds client failed ({}): {text}", o.status)),
        }
    }
    Ok(Outcome {
        wall,
        per_client: total / n as u32,
        ok,
    })
}

/// A client process of the Unix-socket run (`--role uds-client`): prints
/// "elapsed_ns ok".
pub fn uds_client(r: u64, path: &str, c: usize) -> Result<(), String> {
    let mut sock = UnixStream::connect(path).map_err(|e| format!("{path}: {e}"))?;
    sock.write_all(&(c as u32).to_le_bytes())
        .map_err(|e| format!("hello: {e}"))?;
    let mut go = [0u8; 1];
    sock.read_exact(&mut go)
        .map_err(|e| format!("start signal: {e}"))?;
    let t0 = Instant::now();
    let mut ok = true;
    let mut reply = [0u8; REPLY_BYTES];
    for i in 0..r {
        let (req, expect) = script(c, i);
        sock.write_all(&req.encode())
            .map_err(|e| format!("request: {e}"))?;
        sock.read_exact(&mut reply)
            .map_err(|e| format!("reply: {e}"))?;
        ok &= decode_reply(&reply) == Ok(expect);
    }
    let ns = t0.elapsed().as_nanos();
    drop(sock);
    println!("{ns} {}", u8::from(ok));
    Ok(())
}
