//! Distributed actors' suite: the same bodies run on the in-process transport
//! (plain `cargo test`, several locations in one process, each location its own
//! actor node) and on MPI (`.ci/run` runs this binary under `mpirun -n 2` and
//! `-n 4`). Every body checks its own results and panics on a mismatch; under
//! MPI a panic takes the whole job down.

mod common;
mod watchdog;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tutti::actor::{self, Actor, Context, Overflow};
use tutti::msg::{Dispatch, Handler, Message, Remote};
use tutti::remote::{Node, NodeLookupError, NodeRegisterError, RemoteDown, RemoteError, RemoteRef};
use tutti::world::{LocationId, World};

type Body = fn(&World);

const BODIES: &[(&str, Body)] = &[
    ("remote_ask", remote_ask),
    ("remote_tell_in_order", remote_tell_in_order),
    ("registry_from_every_location", registry_from_every_location),
    ("duplicate_name", duplicate_name),
    ("ask_a_stopped_actor", ask_a_stopped_actor),
    ("ask_after_a_node_left", ask_after_a_node_left),
    ("malformed_frames", malformed_frames),
    ("actors_ask_from_handlers", actors_ask_from_handlers),
    ("subscriptions_and_monitors", subscriptions_and_monitors),
    (
        "a_full_mailbox_holds_senders_back",
        a_full_mailbox_holds_senders_back,
    ),
    (
        "a_stopped_actor_returns_its_credits",
        a_stopped_actor_returns_its_credits,
    ),
    (
        "credit_tables_forget_actors_that_went",
        credit_tables_forget_actors_that_went,
    ),
];

/// Every message type that crosses locations, in the process's registry (the
/// ranks compare it when the world starts). `SquareV2` is left out on purpose:
/// it shares `Square`'s name to play a sender built from other code.
fn register_types() {
    tutti::msg::register::<Square>().unwrap();
    tutti::msg::register::<WhereAreYou>().unwrap();
    tutti::msg::register::<Note>().unwrap();
    tutti::msg::register::<Count>().unwrap();
    tutti::msg::register::<Stall>().unwrap();
    tutti::msg::register::<NotExported>().unwrap();
    tutti::msg::register::<Subscribe>().unwrap();
    tutti::msg::register::<Hold>().unwrap();
    tutti::msg::register::<Item>().unwrap();
    tutti::msg::register::<Tally>().unwrap();
}

fn main() {
    register_types();
    common::run_suite("actor_world", &[(2, 2, 1), (4, 2, 8), (3, 1, 64)], run_all);
}

fn run_all(world: &World) {
    for (name, body) in BODIES {
        body(world);
        world.run(|loc| async move { loc.barrier().await });
        if world.rank() == 0 {
            println!("test {name} ... ok");
        }
    }
}

fn id(i: usize) -> LocationId {
    LocationId::new(i as u32)
}

// ----- messages and actors -----

#[derive(Serialize, Deserialize)]
struct Square(u64);
impl Message for Square {
    type Reply = u64;
}
impl Remote for Square {
    const NAME: &'static str = "test.Square";
}

#[derive(Serialize, Deserialize)]
struct WhereAreYou;
impl Message for WhereAreYou {
    type Reply = u32;
}
impl Remote for WhereAreYou {
    const NAME: &'static str = "test.WhereAreYou";
}

/// A numbered statement from a location.
#[derive(Serialize, Deserialize)]
struct Note {
    from: u32,
    seq: u32,
}
impl Message for Note {
    type Reply = ();
}
impl Remote for Note {
    const NAME: &'static str = "test.Note";
}

/// How many notes from `from` arrived, and were they in order?
#[derive(Serialize, Deserialize)]
struct Count {
    from: u32,
}
impl Message for Count {
    type Reply = (u32, bool);
}
impl Remote for Count {
    const NAME: &'static str = "test.Count";
}

/// A question whose handler never finishes.
#[derive(Serialize, Deserialize)]
struct Stall;
impl Message for Stall {
    type Reply = ();
}
impl Remote for Stall {
    const NAME: &'static str = "test.Stall";
}

/// A message `Calc` handles but does not put in its `Dispatch`.
#[derive(Serialize, Deserialize)]
struct NotExported;
impl Message for NotExported {
    type Reply = ();
}
impl Remote for NotExported {
    const NAME: &'static str = "test.NotExported";
}

/// Same name as `Square`, another shape: its payload does not decode as one.
#[derive(Serialize, Deserialize)]
struct SquareV2(String, String);
impl Message for SquareV2 {
    type Reply = u64;
}
impl Remote for SquareV2 {
    const NAME: &'static str = "test.Square";
}

struct Calc {
    at: u32,
    seen: Vec<(u32, bool)>,
}
impl Actor for Calc {}
impl Handler<Square> for Calc {
    async fn handle(&mut self, m: Square, _: &mut Context<Self>) -> u64 {
        m.0 * m.0
    }
}
impl Handler<WhereAreYou> for Calc {
    async fn handle(&mut self, _: WhereAreYou, _: &mut Context<Self>) -> u32 {
        self.at
    }
}
impl Handler<Note> for Calc {
    async fn handle(&mut self, m: Note, _: &mut Context<Self>) {
        let s = &mut self.seen[m.from as usize];
        s.1 &= m.seq == s.0;
        s.0 += 1;
    }
}
impl Handler<Count> for Calc {
    async fn handle(&mut self, m: Count, _: &mut Context<Self>) -> (u32, bool) {
        self.seen[m.from as usize]
    }
}
impl Handler<Stall> for Calc {
    async fn handle(&mut self, _: Stall, _: &mut Context<Self>) {
        tutti::sleep(Duration::from_secs(3600)).await
    }
}
impl Handler<NotExported> for Calc {
    async fn handle(&mut self, _: NotExported, _: &mut Context<Self>) {}
}
impl Handler<SquareV2> for Calc {
    async fn handle(&mut self, _: SquareV2, _: &mut Context<Self>) -> u64 {
        0
    }
}

fn calc_table() -> Dispatch<Calc> {
    let mut t = Dispatch::new();
    t.register::<Square>()
        .unwrap()
        .register::<WhereAreYou>()
        .unwrap()
        .register::<Note>()
        .unwrap()
        .register::<Count>()
        .unwrap()
        .register::<Stall>()
        .unwrap();
    t
}

fn spawn_calc(node: &Node) -> tutti::actor::Addr<Calc> {
    actor::spawn(Calc {
        at: node.id().index() as u32,
        seen: vec![(0, true); node.world().locations()],
    })
}

/// Every location exports a `Calc` registered as `calc/<location>`.
async fn export_calcs(node: &Node) -> tutti::actor::Addr<Calc> {
    let calc = spawn_calc(node);
    let remote = node.export(&calc, calc_table());
    node.register(format!("calc/{}", node.id().index()), &remote)
        .await
        .unwrap();
    node.barrier().await;
    calc
}

// ----- bodies -----

fn remote_ask(world: &World) {
    world.run(|loc| async move {
        let node = Node::join(loc);
        let n = node.world().locations();
        let _calc = export_calcs(&node).await;
        for i in 0..n {
            let c = node.lookup::<Calc>(format!("calc/{i}")).await.unwrap();
            assert_eq!(c.location(), id(i));
            assert_eq!(c.ask(WhereAreYou).await, Ok(i as u32));
            let x = (node.id().index() * 1000 + i) as u64;
            assert_eq!(c.ask(Square(x)).await, Ok(x * x));
        }
        node.barrier().await;
        node.leave().await;
    });
}

fn remote_tell_in_order(world: &World) {
    const K: u32 = 300;
    world.run(|loc| async move {
        let node = Node::join(loc);
        let n = node.world().locations();
        let me = node.id().index() as u32;
        let _calc = export_calcs(&node).await;
        let mut calcs = Vec::new();
        for i in 0..n {
            calcs.push(node.lookup::<Calc>(format!("calc/{i}")).await.unwrap());
        }
        for seq in 0..K {
            for c in &calcs {
                c.tell(Note { from: me, seq }).unwrap();
            }
        }
        // A question after the statements is handled after them.
        for c in &calcs {
            assert_eq!(c.ask(Count { from: me }).await, Ok((K, true)));
        }
        assert_eq!(node.stats().undelivered, 0);
        node.barrier().await;
        node.leave().await;
    });
}

fn registry_from_every_location(world: &World) {
    world.run(|loc| async move {
        let node = Node::join(loc);
        let n = node.world().locations();
        let _calc = export_calcs(&node).await;
        // Every location agrees on every name's home.
        let homes: u64 = (0..n)
            .map(|i| node.home_of(format!("calc/{i}")).index() as u64)
            .sum();
        let agreed = node
            .location()
            .all_reduce((homes, homes), |a, b| (a.0.min(b.0), a.1.max(b.1)))
            .await;
        assert_eq!(agreed.0, agreed.1);
        for i in 0..n {
            let c = node.lookup::<Calc>(format!("calc/{i}")).await.unwrap();
            assert_eq!(c.ask(WhereAreYou).await, Ok(i as u32));
        }
        // Unknown names and wrong types are errors naming what is wrong.
        match node.lookup::<Calc>("nobody").await {
            Err(NodeLookupError::NotFound { name }) => assert_eq!(name.as_str(), "nobody"),
            other => panic!("lookup of an unknown name: {other:?}"),
        }
        struct Other;
        impl Actor for Other {}
        match node.lookup::<Other>("calc/0").await {
            Err(NodeLookupError::WrongType {
                expected, found, ..
            }) => {
                assert!(expected.ends_with("Other"), "{expected}");
                assert!(found.ends_with("Calc"), "{found}");
            }
            other => panic!("lookup with a wrong type: {other:?}"),
        }
        node.barrier().await;
        // Unregistering removes the name for everyone.
        let mine = format!("calc/{}", node.id().index());
        assert_eq!(node.unregister(mine.as_str()).await, Ok(true));
        assert_eq!(node.unregister(mine.as_str()).await, Ok(false));
        node.barrier().await;
        for i in 0..n {
            assert!(matches!(
                node.lookup::<Calc>(format!("calc/{i}")).await,
                Err(NodeLookupError::NotFound { .. })
            ));
        }
        node.barrier().await;
        node.leave().await;
    });
}

fn duplicate_name(world: &World) {
    let wins = world.run(|loc| async move {
        let node = Node::join(loc);
        let calc = spawn_calc(&node);
        let remote = node.export(&calc, calc_table());
        let won = match node.register("the-one", &remote).await {
            Ok(()) => 1u64,
            Err(NodeRegisterError::Taken { name, location, .. }) => {
                assert_eq!(name.as_str(), "the-one");
                assert_ne!(location, node.id());
                0
            }
            Err(e) => panic!("register: {e}"),
        };
        // Registering again, even the same actor, is refused.
        if won == 1 {
            assert!(matches!(
                node.register("the-one", &remote).await,
                Err(NodeRegisterError::Taken { .. })
            ));
        }
        let total = node.location().all_reduce(won, |a, b| a + b).await;
        assert_eq!(total, 1, "exactly one location holds the name");
        // Everyone finds the winner.
        let one = node.lookup::<Calc>("the-one").await.unwrap();
        let at = one.ask(WhereAreYou).await.unwrap();
        let winner = node
            .location()
            .all_reduce(
                if won == 1 {
                    node.id().index() as u64
                } else {
                    0
                },
                |a, b| a + b,
            )
            .await;
        assert_eq!(at as u64, winner);
        node.barrier().await;
        node.leave().await;
        won
    });
    let _ = wins;
}

fn ask_a_stopped_actor(world: &World) {
    world.run(|loc| async move {
        let node = Node::join(loc);
        let calc = export_calcs(&node).await;
        let victim = node.lookup::<Calc>("calc/0").await.unwrap();
        let alive = node
            .lookup::<Calc>(format!("calc/{}", node.world().locations() - 1))
            .await
            .unwrap();
        // A question that waits in the actor when it stops (one handled, the
        // others queued behind it) gets what a question after the stop gets.
        let waiting = victim.ask(Stall);
        node.barrier().await;
        if node.id().index() == 0 {
            let n = node.world().locations() as u64;
            let mut tries = 0;
            while node.stats().served < n {
                tries += 1;
                assert!(
                    tries < 10_000,
                    "the stalls were not served: {:?}",
                    node.stats()
                );
                tutti::sleep(Duration::from_millis(1)).await;
            }
            calc.stop();
            calc.wait().await;
        }
        assert_eq!(waiting.await, Err(RemoteError::Stopped));
        node.barrier().await;
        // A question to a stopped actor is an error, not a hang.
        assert_eq!(victim.ask(Square(3)).await, Err(RemoteError::Stopped));
        // A statement to it is reported back as a dead letter: it is counted
        // before the answer to a later question to that node arrives.
        let before = node.stats().undelivered;
        victim.tell(Note { from: 0, seq: 0 }).unwrap();
        assert_eq!(victim.ask(WhereAreYou).await, Err(RemoteError::Stopped));
        let stats = node.stats();
        assert_eq!(stats.undelivered, before + 1, "{stats:?}");
        assert!(
            stats
                .last_error
                .as_deref()
                .unwrap_or("")
                .contains("not delivered"),
            "{stats:?}"
        );
        // The others still answer.
        if node.world().locations() > 1 {
            assert!(alive.ask(WhereAreYou).await.is_ok());
        }
        // The stopped actor's name vanishes (its node told the home).
        let mut tries = 0;
        while node.lookup::<Calc>("calc/0").await.is_ok() {
            tries += 1;
            assert!(tries < 10_000, "calc/0 still registered");
            tutti::sleep(Duration::from_millis(1)).await;
        }
        node.barrier().await;
        node.leave().await;
    });
}

fn ask_after_a_node_left(world: &World) {
    if world.locations() < 2 {
        return;
    }
    world.run(|loc| async move {
        let node = Node::join(loc);
        let n = node.world().locations();
        let last = id(n - 1);
        let calc = export_calcs(&node).await;
        let far = node
            .lookup::<Calc>(format!("calc/{}", n - 1))
            .await
            .unwrap();
        // A question that is still being handled when its node leaves.
        let in_flight = (node.id() != last).then(|| far.ask(Stall));
        node.barrier().await;
        if node.id() == last {
            node.leave().await;
            // After leaving, this node sends nothing more.
            assert_eq!(far.ask(WhereAreYou).await, Err(RemoteError::NodeLeft(last)));
        }
        node.barrier().await;
        assert!(node.has_left(last));
        if let Some(q) = in_flight {
            assert_eq!(q.await, Err(RemoteError::NodeLeft(last)));
            assert_eq!(far.ask(WhereAreYou).await, Err(RemoteError::NodeLeft(last)));
            assert_eq!(far.tell(Square(2)), Err(RemoteError::NodeLeft(last)));
        }
        // The stalled handler is cancelled (its reply, if any, is not sent).
        calc.stop();
        calc.wait().await;
        node.barrier().await;
        if node.id() != last {
            node.leave().await;
        }
    });
}

fn malformed_frames(world: &World) {
    world.run(|loc| async move {
        let node = Node::join(loc);
        let n = node.world().locations();
        let _calc = export_calcs(&node).await;
        let right = (node.id().index() + 1) % n;
        let next = node.lookup::<Calc>(format!("calc/{right}")).await.unwrap();
        // Bytes that are not a frame: counted there, reported back here.
        node.send_raw(id(right), b"definitely not a frame").unwrap();
        // A message type the actor handles but its node does not export.
        match next.ask(NotExported).await {
            Err(RemoteError::Fault(why)) => {
                assert!(why.contains("handles no message type"), "{why}")
            }
            other => panic!("not exported: {other:?}"),
        }
        // A payload that does not decode as the type its id names.
        match next.ask(SquareV2("a".into(), "b".into())).await {
            Err(RemoteError::Fault(why)) => {
                assert!(why.contains("cannot decode a \"test.Square\""), "{why}")
            }
            other => panic!("bad payload: {other:?}"),
        }
        // The node still works, and the report of the bad bytes came first
        // (the receiver answered the garbage before these questions).
        assert_eq!(next.ask(Square(4)).await, Ok(16));
        let s = node.stats();
        assert_eq!(s.rejected, 1, "{s:?}");
        node.barrier().await;
        // Here: the garbage from the left, and the two questions whose
        // payloads did not decode (refused with the cause). The last error
        // kept names a location and its rank: one of those, or the
        // rejection of this node's own garbage.
        let s = node.stats();
        assert_eq!(s.malformed, 3, "{s:?}");
        let left = (node.id().index() + n - 1) % n;
        let rank = |i: usize| i / node.world().locations_per_rank();
        let why = s.last_error.as_deref().unwrap_or("");
        let from_left = format!("malformed bytes from location {left} (rank {})", rank(left));
        let by_right = format!(
            "location {right} (rank {}) rejected a message from here",
            rank(right)
        );
        assert!(
            why.starts_with(&from_left) || why.starts_with(&by_right),
            "{s:?}"
        );
        node.barrier().await;
        node.leave().await;
    });
}

// Actors on every location ask a service through their handlers.

#[derive(Serialize, Deserialize)]
struct Go(u64);
impl Message for Go {
    type Reply = Result<u64, String>;
}

struct Client {
    service: tutti::remote::RemoteAddr<Calc>,
}
impl Actor for Client {}
impl Handler<Go> for Client {
    async fn handle(&mut self, m: Go, _: &mut Context<Self>) -> Result<u64, String> {
        let mut sum = 0;
        for i in 0..m.0 {
            sum += self
                .service
                .ask(Square(i))
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(sum)
    }
}

fn actors_ask_from_handlers(world: &World) {
    world.run(|loc| async move {
        let node = Node::join(loc);
        if node.id().index() == 0 {
            let calc = spawn_calc(&node);
            let remote = node.export(&calc, calc_table());
            node.register("service", &remote).await.unwrap();
        }
        node.barrier().await;
        let service = node.lookup::<Calc>("service").await.unwrap();
        let clients: Vec<_> = (0..3)
            .map(|_| {
                actor::spawn(Client {
                    service: service.clone(),
                })
            })
            .collect();
        let asks: Vec<_> = clients.iter().map(|c| c.ask(Go(20))).collect();
        for a in asks {
            assert_eq!(a.await, Ok(Ok((0..20u64).map(|i| i * i).sum())));
        }
        node.barrier().await;
        node.leave().await;
    });
}

// ----- subscriptions and monitors across locations -----

/// A subscription: the subscriber's address travels as data.
#[derive(Serialize, Deserialize)]
struct Subscribe(RemoteRef);
impl Message for Subscribe {
    type Reply = Result<usize, String>;
}
impl Remote for Subscribe {
    const NAME: &'static str = "test.Subscribe";
}

/// Local: tell every subscriber `0..k` as `Note`s.
struct Publish(u32);
impl Message for Publish {
    type Reply = ();
}

/// Local: the notices received so far.
struct Downs;
impl Message for Downs {
    type Reply = Vec<RemoteDown>;
}

/// Local: monitor `RemoteRef` again (it may be gone already).
struct Watch(RemoteRef);
impl Message for Watch {
    type Reply = ();
}

struct Publisher {
    node: Node,
    subscribers: Vec<tutti::remote::RemoteAddr<Calc>>,
    downs: Vec<RemoteDown>,
}
impl Actor for Publisher {}
impl Handler<Subscribe> for Publisher {
    async fn handle(&mut self, m: Subscribe, ctx: &mut Context<Self>) -> Result<usize, String> {
        let s = self.node.resolve::<Calc>(&m.0).map_err(|e| e.to_string())?;
        self.node.monitor(&s, &ctx.addr());
        self.subscribers.push(s);
        Ok(self.subscribers.len())
    }
}
impl Handler<Publish> for Publisher {
    async fn handle(&mut self, m: Publish, _: &mut Context<Self>) {
        for seq in 0..m.0 {
            for s in &self.subscribers {
                s.tell(Note { from: 0, seq }).unwrap();
            }
        }
        self.node.flush();
    }
}
impl Handler<RemoteDown> for Publisher {
    async fn handle(&mut self, d: RemoteDown, _: &mut Context<Self>) {
        self.subscribers
            .retain(|s| s.location() != d.actor.location());
        self.downs.push(d);
    }
}
impl Handler<Downs> for Publisher {
    async fn handle(&mut self, _: Downs, _: &mut Context<Self>) -> Vec<RemoteDown> {
        self.downs.clone()
    }
}
impl Handler<Watch> for Publisher {
    async fn handle(&mut self, m: Watch, ctx: &mut Context<Self>) {
        let s = self.node.resolve::<Calc>(&m.0).unwrap();
        self.node.monitor(&s, &ctx.addr());
    }
}

/// Waits (bounded) until the publisher holds `n` notices.
async fn downs(p: &tutti::actor::Addr<Publisher>, n: usize) -> Vec<RemoteDown> {
    for _ in 0..20_000 {
        let d = p.ask(Downs).await.unwrap();
        if d.len() >= n {
            return d;
        }
        tutti::sleep(Duration::from_millis(1)).await;
    }
    panic!(
        "the publisher got {:?}, expected {n} notices",
        p.ask(Downs).await
    );
}

/// Location 0 publishes to a `Calc` of every location, which subscribed by
/// sending its address; the publisher monitors each: a stopped subscriber and
/// a subscriber whose node left are dropped with a notice naming why, a
/// monitor of an actor already gone fires at once, and a reference of the
/// wrong type is refused by name.
fn subscriptions_and_monitors(world: &World) {
    const K: u32 = 200;
    world.run(|loc| async move {
        let node = Node::join(loc);
        let n = node.world().locations();
        let calc = export_calcs(&node).await;
        let me = node
            .lookup::<Calc>(format!("calc/{}", node.id().index()))
            .await
            .unwrap();
        let publisher = (node.id().index() == 0).then(|| {
            actor::spawn(Publisher {
                node: node.clone(),
                subscribers: Vec::new(),
                downs: Vec::new(),
            })
        });
        if let Some(p) = &publisher {
            let mut t = Dispatch::new();
            t.register::<Subscribe>().unwrap();
            let remote = node.export(p, t);
            node.register("pub", &remote).await.unwrap();
        }
        node.barrier().await;
        let p = node.lookup::<Publisher>("pub").await.unwrap();
        assert!(p.ask(Subscribe(me.to_ref())).await.unwrap().is_ok());
        // A reference to a `Calc` is not a `Publisher`'s.
        let e = node.resolve::<Publisher>(&me.to_ref()).unwrap_err();
        assert!(matches!(e, RemoteError::BadRef(_)), "{e}");
        assert!(e.to_string().contains("not a"), "{e}");
        node.barrier().await;
        if let Some(p) = &publisher {
            p.ask(Publish(K)).await.unwrap();
        }
        // Every subscriber gets every note, in order.
        let mut tries = 0;
        loop {
            let (got, in_order) = calc.ask(Count { from: 0 }).await.unwrap();
            assert!(in_order);
            if got == K {
                break;
            }
            tries += 1;
            assert!(tries < 20_000, "{got} of {K} notes");
            tutti::sleep(Duration::from_millis(1)).await;
        }
        node.barrier().await;
        let last = n - 1;
        if n >= 2 {
            // The last location's subscriber stops: the publisher drops it.
            if node.id().index() == last {
                calc.stop();
                calc.wait().await;
            }
            if let Some(p) = &publisher {
                let d = downs(p, 1).await;
                assert_eq!(d[0].actor.location(), id(last));
                assert_eq!(d[0].reason, RemoteError::Stopped, "{}", d[0]);
                // Monitoring it again: the notice comes at once.
                let stale = d[0].actor.clone();
                p.ask(Watch(stale)).await.unwrap();
                let d = downs(p, 2).await;
                assert_eq!(d[1].reason, RemoteError::Stopped, "{}", d[1]);
                assert!(d[1].detail.contains("no running actor"), "{}", d[1]);
            }
        }
        node.barrier().await;
        if n >= 3 {
            // Location n − 2's node leaves: its subscriber is dropped too.
            let leaver = n - 2;
            if node.id().index() == leaver {
                node.leave().await;
            }
            if let Some(p) = &publisher {
                let d = downs(p, 3).await;
                assert_eq!(d[2].actor.location(), id(leaver));
                assert_eq!(d[2].reason, RemoteError::NodeLeft(id(leaver)), "{}", d[2]);
            }
        }
        node.barrier().await;
        if !node.has_left(node.id()) {
            node.leave().await;
        }
        // The publisher holds a handle of the node (and its location).
        if let Some(p) = publisher {
            p.stop();
            p.wait().await;
        }
    });
}

// ----- backpressure across locations and ranks -----

/// Makes a `Slow` actor wait at its gate.
#[derive(Serialize, Deserialize)]
struct Hold;
impl Message for Hold {
    type Reply = ();
}
impl Remote for Hold {
    const NAME: &'static str = "test.Hold";
}

/// A numbered statement.
#[derive(Serialize, Deserialize)]
struct Item(u32);
impl Message for Item {
    type Reply = ();
}
impl Remote for Item {
    const NAME: &'static str = "test.Item";
}

/// How many items arrived, and were they in order?
#[derive(Serialize, Deserialize)]
struct Tally;
impl Message for Tally {
    type Reply = (u32, bool);
}
impl Remote for Tally {
    const NAME: &'static str = "test.Tally";
}

/// An actor with a bounded mailbox that can be made to wait at a gate.
struct Slow {
    gate: Arc<tutti::DataflowVar<()>>,
    next: u32,
    in_order: bool,
}
impl Actor for Slow {}
impl Handler<Hold> for Slow {
    async fn handle(&mut self, _: Hold, _: &mut Context<Self>) {
        self.gate.read().await;
    }
}
impl Handler<Item> for Slow {
    async fn handle(&mut self, m: Item, _: &mut Context<Self>) {
        self.in_order &= m.0 == self.next;
        self.next += 1;
    }
}
impl Handler<Tally> for Slow {
    async fn handle(&mut self, _: Tally, _: &mut Context<Self>) -> (u32, bool) {
        (self.next, self.in_order)
    }
}

fn slow_table() -> Dispatch<Slow> {
    let mut t = Dispatch::new();
    t.register::<Hold>()
        .unwrap()
        .register::<Item>()
        .unwrap()
        .register::<Tally>()
        .unwrap();
    t
}

/// The last location exports a `Slow` actor with a mailbox of `capacity`
/// (policy `Block`) under `name`; every location looks it up.
async fn export_slow(
    node: &Node,
    name: &str,
    capacity: usize,
    gate: &Arc<tutti::DataflowVar<()>>,
) -> (
    Option<tutti::actor::Addr<Slow>>,
    tutti::remote::RemoteAddr<Slow>,
) {
    let mut local = None;
    if node.id().index() == node.world().locations() - 1 {
        let slow = actor::Builder::new()
            .bounded(capacity, Overflow::Block)
            .spawn(Slow {
                gate: Arc::clone(gate),
                next: 0,
                in_order: true,
            });
        let remote = node.export(&slow, slow_table());
        node.register(name, &remote).await.unwrap();
        local = Some(slow);
    }
    node.barrier().await;
    let remote = node.lookup::<Slow>(name).await.unwrap();
    assert_eq!(remote.window(), Some(capacity));
    (local, remote)
}

/// A sender on the first location and a bounded actor on the last (another
/// rank under `mpirun` or `tutti launch`): while the actor waits at its gate,
/// the sender gets exactly `capacity` statements into its mailbox and
/// `capacity` more held at its node, then `Full` — for as long as the actor
/// waits; once it goes on, `send` gets thousands more through, in order,
/// never more than the window on the way.
fn a_full_mailbox_holds_senders_back(world: &World) {
    const CAPACITY: usize = 4;
    const MORE: u32 = 2000;
    world.run(|loc| async move {
        let node = Node::join(loc);
        let gate = Arc::new(tutti::DataflowVar::new());
        let (local, slow) = export_slow(&node, "slow", CAPACITY, &gate).await;
        let first = node.id().index() == 0;
        let mut sent = 0u32;
        if first {
            slow.tell(Hold).unwrap();
            // Tell until the window has stayed spent for a while.
            let mut full_since: Option<Instant> = None;
            loop {
                match slow.tell(Item(sent)) {
                    Ok(()) => {
                        sent += 1;
                        full_since = None;
                    }
                    Err(RemoteError::Full) => {
                        let since = *full_since.get_or_insert_with(Instant::now);
                        if since.elapsed() > Duration::from_millis(300) {
                            break;
                        }
                        tutti::sleep(Duration::from_millis(1)).await;
                    }
                    Err(e) => panic!("tell: {e}"),
                }
            }
            assert_eq!(
                sent as usize,
                2 * CAPACITY,
                "the mailbox's capacity, plus the window held at its node"
            );
        }
        node.barrier().await;
        if local.is_some() {
            gate.set(()).unwrap();
        }
        if first {
            for i in sent..sent + MORE {
                slow.send(Item(i)).await.unwrap();
            }
            // Held behind the statements, as the mailbox is bounded `Block`.
            assert_eq!(slow.ask(Tally).await, Ok((sent + MORE, true)));
            assert_eq!(node.stats().undelivered, 0);
        }
        node.barrier().await;
        node.leave().await;
    });
}

/// Statements to an actor that stopped are dead letters, and each notice
/// returns its credit: a sender never waits for ever on a stopped actor.
fn a_stopped_actor_returns_its_credits(world: &World) {
    const SENDS: u64 = 50;
    world.run(|loc| async move {
        let node = Node::join(loc);
        let gate = Arc::new(tutti::DataflowVar::new());
        let (local, doomed) = export_slow(&node, "doomed", 2, &gate).await;
        node.barrier().await; // every location has its address
        if let Some(a) = &local {
            a.stop();
            a.wait().await;
        }
        node.barrier().await;
        if node.id().index() == 0 {
            for i in 0..SENDS as u32 {
                doomed.send(Item(i)).await.unwrap();
            }
            while node.stats().undelivered < SENDS {
                tutti::sleep(Duration::from_millis(1)).await;
            }
            assert_eq!(node.stats().undelivered, SENDS);
        }
        node.barrier().await;
        node.leave().await;
    });
}

/// Waits (bounded) until `done` holds for this node's statistics.
async fn stats_until(node: &Node, what: &str, done: impl Fn(&tutti::remote::NodeStats) -> bool) {
    let start = Instant::now();
    loop {
        let s = node.stats();
        if done(&s) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}: the credit tables of {} kept {} flows and {} owed pairs",
            node.id(),
            s.credit_flows,
            s.credits_owed
        );
        tutti::sleep(Duration::from_millis(1)).await;
    }
}

/// Bounded actors come and go, one after the other; every location holds an
/// address of each and the first sends it statements (more than one credit
/// batch, and a remainder owed until the inbox empties). The credit tables —
/// flows on the senders, credits owed on the actor's node — hold the current
/// actor while it is used and nothing of the ones that went: they shrink back
/// to empty rather than grow with the number of actors.
fn credit_tables_forget_actors_that_went(world: &World) {
    const ACTORS: u32 = 30;
    const SENDS: u32 = 5;
    world.run(|loc| async move {
        let node = Node::join(loc);
        let gate = Arc::new(tutti::DataflowVar::new());
        gate.set(()).unwrap();
        let first = node.id().index() == 0;
        for round in 0..ACTORS {
            let name = format!("passing-{round}");
            let (local, addr) = export_slow(&node, &name, 8, &gate).await;
            // This actor's flow; the last one's goes once its last credits
            // are back (they may still be on their way).
            stats_until(&node, "while one actor is reached", |s| s.credit_flows == 1).await;
            if first {
                for i in 0..SENDS {
                    addr.send(Item(i)).await.unwrap();
                }
                assert_eq!(addr.ask(Tally).await, Ok((SENDS, true)));
            }
            drop(addr);
            node.barrier().await;
            if let Some(a) = local {
                assert_eq!(node.unregister(name.as_str()).await, Ok(true));
                a.stop();
                a.wait().await;
            }
        }
        // Every credit returned (the last of each actor's when its node's inbox
        // emptied), every address dropped: nothing is left in either table.
        stats_until(&node, "after every actor went", |s| {
            s.credit_flows == 0 && s.credits_owed == 0
        })
        .await;
        node.barrier().await;
        node.leave().await;
    });
}
