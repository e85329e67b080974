//! A rank of a shared-memory system dies (`kill -9`) while others wait on it:
//! nothing hangs.
//!
//! * `ask`: actor asks pending on (or sent to) the dead rank's node fail with
//!   `RemoteError::RankDied`, and the survivors' nodes still leave and their
//!   processes end cleanly.
//! * `stall`: a producer killed between claiming a slot of a mailbox and
//!   writing it (a test hook stalls it there) does not block that mailbox:
//!   its reader reclaims the slot, says so, and reads what others committed
//!   behind it.
//! * `monitor`: a monitor (`Node::monitor`) of an actor on the dead rank
//!   fires with `RemoteError::RankDied` naming it.
//! * `rmi`: a `sync_rmi` waiting for the dead rank panics naming it (and, as
//!   any location panic with several ranks, takes the job down).
//! * `recv`: the ranks pass messages round a ring (`Location::send`,
//!   `Location::recv`) and rank 2 kills itself mid-exchange: the survivors,
//!   each blocked in `recv`, are found stalled by the world's stall check
//!   over the live ranks, and end with a report naming the dead rank.
//! * `rejoin`: rank 2 greets the others and kills itself; a new process
//!   takes rank 2 in the same system (incarnation 2), greets them and is
//!   answered; nothing of the dead incarnation reaches it, and the system
//!   ends with nothing left in `/dev/shm`.
//! * `channel`: rank 2 sends a value on a channel to each survivor
//!   (`RemoteTx`), waits for their acknowledgements on channels back, and
//!   kills itself: each survivor's receive, then its send, fails with
//!   `RankDied` naming rank 2, and the survivors end cleanly.
//! * `barrier`, `fence`: a collective (a world barrier; an RMI fence, whose
//!   quiescence waves are collectives) that includes the dead rank fails
//!   naming it.
//!
//! Each scenario starts 3 processes of this binary as one system (rank 2 is
//! the victim), with a deadline: a hang fails the test.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tutti::actor::{self, Actor, Context};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::remote::{Node, RemoteDown, RemoteError};
use tutti::world::{LocationId, World};

/// Kills the process that handles it.
#[derive(Serialize, Deserialize)]
struct Die;
impl Message for Die {
    type Reply = u32;
}
impl Remote for Die {
    const NAME: &'static str = "tests.shm_dead_rank.Die";
}

/// Stops the actor that handles it (monitor scenario).
#[derive(Serialize, Deserialize)]
struct Quit;
impl Message for Quit {
    type Reply = ();
}
impl Remote for Quit {
    const NAME: &'static str = "tests.shm_dead_rank.Quit";
}

/// A statement between the survivors (fence scenario).
#[derive(Serialize, Deserialize)]
struct Note;
impl Message for Note {
    type Reply = ();
}
impl Remote for Note {
    const NAME: &'static str = "tests.shm_dead_rank.Note";
}

fn die_now() -> ! {
    let me = std::process::id().to_string();
    let _ = Command::new("kill").args(["-9", &me]).status();
    std::thread::sleep(Duration::from_secs(60));
    unreachable!("kill -9 did not kill the victim");
}

struct Victim;
impl Actor for Victim {}
impl Handler<Die> for Victim {
    async fn handle(&mut self, _: Die, _: &mut Context<Self>) -> u32 {
        die_now()
    }
}
impl Handler<Quit> for Victim {
    async fn handle(&mut self, _: Quit, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

#[derive(Default)]
struct Target(u64);
impl Object for Target {
    type Context = tutti::rmi::Rmi;
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Die>()?.register::<Note>()?;
        Ok(())
    }
}
impl Handler<Die> for Target {
    async fn handle(&mut self, _: Die, _: &mut tutti::rmi::Rmi) -> u32 {
        die_now()
    }
}
impl Handler<Note> for Target {
    async fn handle(&mut self, _: Note, _: &mut tutti::rmi::Rmi) {
        self.0 += 1;
    }
}

const VICTIM: LocationId = LocationId::new(2);

fn ask(world: &World) {
    world.run(|loc| async move {
        let node = Node::join(loc);
        if node.id() == VICTIM {
            let mut table = Dispatch::new();
            table.register::<Die>().unwrap();
            let remote = node.export(&actor::spawn(Victim), table);
            node.register("victim", &remote).await.unwrap();
        }
        node.barrier().await;
        if node.id() == VICTIM {
            // Waits for its killer.
            tutti::sleep(Duration::from_secs(60)).await;
            unreachable!("nobody asked the victim to die");
        }
        let victim = node.lookup::<Victim>("victim").await.unwrap();
        // Both survivors ask: the first question kills the victim, so the
        // other is pending on a dead rank or sent to one.
        let e = victim.ask(Die).await.unwrap_err();
        assert_eq!(e, RemoteError::RankDied(VICTIM), "{e}");
        assert!(e.to_string().contains("died"), "{e}");
        // Asked again, knowing it is dead.
        assert_eq!(victim.ask(Die).await, Err(RemoteError::RankDied(VICTIM)));
        node.leave().await;
    });
    println!("rank {}: asks to the dead rank failed; left", world.rank());
}

/// Rank 0 monitors an actor on rank 1 and one on rank 2 (the victim, killed
/// by a question): the monitor of the dead rank's actor fires with
/// `RankDied`, the other one only when its actor stops.
fn monitor(world: &World) {
    world.run(|loc| async move {
        let node = Node::join(loc);
        let rank = node.id().index();
        let victim = (rank > 0).then(|| actor::spawn(Victim));
        if let Some(v) = &victim {
            let mut table = Dispatch::new();
            table.register::<Die>().unwrap().register::<Quit>().unwrap();
            let remote = node.export(v, table);
            node.register(format!("victim/{rank}"), &remote)
                .await
                .unwrap();
        }
        node.barrier().await;
        if rank == 0 {
            let (tx, rx) = std::sync::mpsc::channel();
            let rx = std::sync::Mutex::new(rx);
            let watcher = actor::spawn(Watcher(tx));
            let one = node.lookup::<Victim>("victim/1").await.unwrap();
            let two = node.lookup::<Victim>("victim/2").await.unwrap();
            node.monitor(&one, &watcher);
            node.monitor(&two, &watcher);
            // Watched on both ranks before anyone dies (a round trip each).
            node.barrier().await;
            assert_eq!(two.ask(Die).await, Err(RemoteError::RankDied(VICTIM)));
            let d = next_down(&rx).await;
            assert_eq!(d.actor.location(), VICTIM, "{d}");
            assert_eq!(d.reason, RemoteError::RankDied(VICTIM), "{d}");
            assert!(
                d.detail.contains("rank 2") && d.detail.contains("died"),
                "{d}"
            );
            println!("rank 0: {d}");
            // No barrier from now on: the world's collectives include rank 2.
            one.tell(Quit).unwrap();
            let d = next_down(&rx).await;
            assert_eq!(d.actor.location(), LocationId::new(1), "{d}");
            assert_eq!(d.reason, RemoteError::Stopped, "{d}");
            watcher.stop();
            watcher.wait().await;
        } else {
            node.barrier().await;
            if rank == 2 {
                tutti::sleep(Duration::from_secs(60)).await;
                unreachable!("nobody asked the victim to die");
            }
            // Rank 0 tells it to quit once rank 2 is dead.
            victim.unwrap().wait().await;
        }
        node.leave().await;
    });
    println!("rank {}: the monitors fired; left", world.rank());
}

struct Watcher(std::sync::mpsc::Sender<RemoteDown>);
impl Actor for Watcher {}
impl Handler<RemoteDown> for Watcher {
    async fn handle(&mut self, d: RemoteDown, _: &mut Context<Self>) {
        let _ = self.0.send(d);
    }
}

/// The next notice (bounded: a missing one fails the test, it does not hang).
async fn next_down(rx: &std::sync::Mutex<std::sync::mpsc::Receiver<RemoteDown>>) -> RemoteDown {
    for _ in 0..20_000 {
        let got = rx.lock().unwrap().try_recv();
        if let Ok(d) = got {
            return d;
        }
        tutti::sleep(Duration::from_millis(1)).await;
    }
    panic!("no RemoteDown within 20 s");
}

/// A big statement (several ring slots).
#[derive(Serialize, Deserialize)]
struct Big(Vec<u8>);
impl Message for Big {
    type Reply = ();
}
impl Remote for Big {
    const NAME: &'static str = "tests.shm_dead_rank.Big";
}

/// How many notes and big statements arrived.
#[derive(Serialize, Deserialize)]
struct Count;
impl Message for Count {
    type Reply = (u32, u32);
}
impl Remote for Count {
    const NAME: &'static str = "tests.shm_dead_rank.Count";
}

#[derive(Default)]
struct Inbox {
    notes: u32,
    bigs: u32,
}
impl Actor for Inbox {}
impl Handler<Big> for Inbox {
    async fn handle(&mut self, _: Big, _: &mut Context<Self>) {
        self.bigs += 1;
    }
}
impl Handler<Note> for Inbox {
    async fn handle(&mut self, _: Note, _: &mut Context<Self>) {
        self.notes += 1;
    }
}
impl Handler<Count> for Inbox {
    async fn handle(&mut self, _: Count, _: &mut Context<Self>) -> (u32, u32) {
        (self.notes, self.bigs)
    }
}

/// Notes rank 1 sends behind the stalled slot.
const NOTES: u32 = 50;

/// Rank 2 (`TUTTI_SHM_TEST_STALL_BYTES`) stalls between claiming a slot of
/// rank 0's mailbox and writing it, in the middle of a big statement, and is
/// killed there; rank 1's notes, queued behind that slot, must all arrive
/// once rank 0 reclaims it, and the unfinished statement must not.
fn stall(world: &World) {
    world.run(|loc| async move {
        let node = Node::join(loc);
        let rank = node.id().index();
        let inbox = (rank == 0).then(|| actor::spawn(Inbox::default()));
        if let Some(i) = &inbox {
            let mut table = Dispatch::new();
            table
                .register::<Big>()
                .unwrap()
                .register::<Note>()
                .unwrap()
                .register::<Count>()
                .unwrap();
            let remote = node.export(i, table);
            node.register("inbox", &remote).await.unwrap();
        }
        node.barrier().await;
        let to = node.lookup::<Inbox>("inbox").await.unwrap();
        match rank {
            2 => {
                // What the barrier left queued for rank 0 goes out in a frame
                // of its own: aggregated into the stalled frame, it would die
                // with it, and rank 0 would rightly fail its barrier.
                node.flush();
                to.tell(Big(vec![7; 10_000])).unwrap();
                node.flush();
                tutti::sleep(Duration::from_secs(60)).await;
                unreachable!("the stalled sender was not killed");
            }
            1 => {
                // Well after rank 2 stalled: these land behind its slot.
                tutti::sleep(Duration::from_secs(1)).await;
                for _ in 0..NOTES {
                    to.tell(Note).unwrap();
                }
                assert_eq!(to.ask(Count).await, Ok((NOTES, 0)));
            }
            _ => {
                let inbox = inbox.unwrap();
                let mut waited = 0;
                while inbox.ask(Count).await.unwrap().0 < NOTES {
                    waited += 1;
                    assert!(waited < 30_000, "rank 1's notes did not arrive");
                    tutti::sleep(Duration::from_millis(1)).await;
                }
                assert_eq!(inbox.ask(Count).await, Ok((NOTES, 0)));
            }
        }
        node.leave().await;
    });
    println!("rank {}: everything committed arrived; left", world.rank());
}

fn rmi(world: &World) {
    tutti::rmi::run(world, |loc| async move {
        let h = loc.register(Target::default()).await.unwrap();
        loc.barrier().await;
        if loc.id() == 2 {
            // Serves requests until one kills it.
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                loc.poll().await;
                tutti::sleep(Duration::from_millis(1)).await;
            }
            unreachable!("nobody asked the victim to die");
        }
        let got = loc.sync_rmi(2, &h, Die).await;
        unreachable!("a sync_rmi to a dying rank returned {got}");
    });
}

/// Rounds of the ring exchange before rank 2 kills itself.
const ROUNDS: u32 = 50;

fn recv(world: &World) {
    world.run(|loc| async move {
        let me = loc.id().index();
        let next = LocationId::new(((me + 1) % 3) as u32);
        for round in 0..u32::MAX {
            if me == 2 && round == ROUNDS {
                die_now();
            }
            loc.send_bytes(next, round.to_le_bytes().to_vec()).unwrap();
            loc.flush();
            let mut d = loc.recv().await;
            let got = d.take_bytes().unwrap();
            assert_eq!(got, round.to_le_bytes(), "round {round} at rank {me}");
        }
    });
}

/// Rank 2 greets ranks 0 and 1 with its incarnation and waits for both
/// answers; its first incarnation then kills itself. Ranks 0 and 1 answer
/// every greeting (a greeting of the dead incarnation may find it gone) and
/// end once the second incarnation greeted them. Nobody blocks in `recv`:
/// a survivor waiting for a dead rank's successor polls.
fn rejoin(world: &World) {
    let incarnation = world.incarnation();
    world.run(|loc| async move {
        let me = loc.id().index();
        if me == 2 {
            for to in [0, 1] {
                loc.send_bytes(LocationId::new(to), incarnation.to_le_bytes().to_vec())
                    .unwrap();
            }
            loc.flush();
            let mut answered = 0;
            while answered < 2 {
                let mut d = loc.recv().await;
                let got = d.take_bytes().unwrap();
                assert_eq!(
                    got,
                    incarnation.to_le_bytes(),
                    "incarnation {incarnation} got an answer meant for another"
                );
                answered += 1;
            }
            if incarnation == 1 {
                die_now();
            }
            println!("rank 2: incarnation {incarnation} was answered by both");
            return;
        }
        let started = Instant::now();
        loop {
            let Some(mut d) = loc.try_recv() else {
                assert!(
                    started.elapsed() < Duration::from_secs(50),
                    "no second greeting"
                );
                tutti::sleep(Duration::from_millis(2)).await;
                continue;
            };
            let from = d.from();
            let got = d.take_bytes().unwrap();
            let i = u64::from_le_bytes(got.clone().try_into().unwrap());
            line(format!("rank {me}: greeting of incarnation {i} of rank 2"));
            match loc.send_bytes(from, got) {
                Ok(()) => loc.flush(),
                Err(e) => line(format!(
                    "rank {me}: the answer to incarnation {i} failed: {e}"
                )),
            }
            if i == 2 {
                break;
            }
        }
        // Rank 2's new process must have had its answer before this one ends.
        tutti::sleep(Duration::from_millis(200)).await;
    });
}

fn barrier(world: &World) {
    world.run(|loc| async move {
        loc.barrier().await;
        if loc.id() == VICTIM {
            die_now();
        }
        loc.barrier().await;
        unreachable!("a barrier including a dead rank completed");
    });
}

fn fence(world: &World) {
    tutti::rmi::run(world, |loc| async move {
        let h = loc.register(Target::default()).await.unwrap();
        loc.barrier().await;
        if loc.id() == 2 {
            die_now();
        }
        loc.async_rmi(1 - loc.id(), &h, Note).await;
        loc.fence().await;
        unreachable!("a fence including a dead rank completed");
    });
}

fn channel(world: &World) {
    use tutti::world::{RemoteRecvError, RemoteSendError};
    world.run(|loc| async move {
        if loc.id() == VICTIM {
            // Kept open: the victim dies with its ends open.
            let (mut sent, mut acks) = (Vec::new(), Vec::new());
            for peer in [0, 1] {
                let tx = loc.channel_to::<u32>(LocationId::new(peer), 1).unwrap();
                tx.send(7).await.unwrap();
                sent.push(tx);
                acks.push(loc.channel_from::<u32>(LocationId::new(peer), 1).unwrap());
            }
            for ack in &acks {
                assert_eq!(ack.recv().await, Ok(0));
            }
            die_now();
        }
        let rx = loc.channel_from::<u32>(VICTIM, 1).unwrap();
        let tx = loc.channel_to::<u32>(VICTIM, 1).unwrap();
        assert_eq!(rx.recv().await, Ok(7));
        tx.send(0).await.unwrap();
        let e = rx.recv().await.unwrap_err();
        assert_eq!(e, RemoteRecvError::RankDied(2), "{e}");
        line(format!("rank {}: {e}", loc.rank()));
        match tx.send(1).await {
            Err(RemoteSendError::RankDied { rank: 2, value: 1 }) => {}
            other => panic!("a send to the dead rank: {other:?}"),
        }
    });
    println!(
        "rank {}: channels to the dead rank failed naming it",
        world.rank()
    );
}

fn member(scenario: &str) {
    tutti::msg::register::<Die>().unwrap();
    tutti::msg::register::<Note>().unwrap();
    tutti::msg::register::<Quit>().unwrap();
    tutti::msg::register::<Big>().unwrap();
    tutti::msg::register::<Count>().unwrap();
    let world = World::builder()
        .locations(1)
        .workers(1)
        .build()
        .expect("world");
    match scenario {
        "ask" => ask(&world),
        "monitor" => monitor(&world),
        "stall" => stall(&world),
        "rmi" => rmi(&world),
        "recv" => recv(&world),
        "rejoin" => rejoin(&world),
        "barrier" => barrier(&world),
        "fence" => fence(&world),
        "channel" => channel(&world),
        s => panic!("unknown scenario {s}"),
    }
}

/// Runs `scenario` in 3 processes; their statuses and their stderr.
fn launch(scenario: &str) -> (Vec<ExitStatus>, String) {
    let name = format!("dead-{scenario}-{}", std::process::id());
    let log = std::env::temp_dir().join(format!("tutti-{name}.log"));
    let file = std::fs::File::create(&log).expect("log file");
    let stall = scenario == "stall";
    let mut children: Vec<_> = (0..3)
        .map(|rank| {
            let mut c = Command::new(std::env::current_exe().expect("own path"));
            if stall && rank == 2 {
                // Stalls in its big statement's second slot.
                c.env("TUTTI_SHM_TEST_STALL_BYTES", "8000");
            }
            c.env("SHM_DEAD_RANK", scenario)
                .env("TUTTI_SYSTEM", &name)
                .env("TUTTI_RANKS", "3")
                .env("TUTTI_RANK", rank.to_string())
                .env("TUTTI_TRANSPORT", "shm")
                .stdout(Stdio::null())
                .stderr(file.try_clone().expect("log file"))
                .spawn()
                .expect("spawn")
        })
        .collect();
    // What the system left in /dev/shm (removed, so that a failing run
    // leaves nothing either).
    let cleanup = || {
        let mut left = Vec::new();
        for seg in std::iter::once(format!("tutti-{name}"))
            .chain((0..3).map(|r| format!("tutti-{name}+{r}")))
        {
            if std::fs::remove_file(format!("/dev/shm/{seg}")).is_ok() {
                left.push(seg);
            }
        }
        left
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut statuses = vec![None; 3];
    let mut killed = false;
    while statuses.iter().any(Option::is_none) {
        if stall && !killed {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("stalled after claiming") {
                // kill -9 between its claim and its commit.
                children[2].kill().expect("kill rank 2");
                killed = true;
            }
        }
        for (c, s) in children.iter_mut().zip(statuses.iter_mut()) {
            if s.is_none() {
                *s = c.try_wait().expect("wait");
            }
        }
        if Instant::now() > deadline {
            for c in &mut children {
                let _ = c.kill();
                let _ = c.wait();
            }
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_file(&log);
            cleanup();
            panic!("scenario {scenario} hung: {statuses:?}\n{text}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let left = cleanup();
    assert!(
        left.is_empty(),
        "scenario {scenario}: a system with a member killed left {left:?} in /dev/shm\n{text}"
    );
    (statuses.into_iter().map(Option::unwrap).collect(), text)
}

/// The `rejoin` scenario: 3 processes; once rank 2 killed itself, a new
/// process is started as rank 2 of the same system.
fn launch_rejoin() -> (Vec<ExitStatus>, String) {
    let name = format!("dead-rejoin-{}", std::process::id());
    let log = std::env::temp_dir().join(format!("tutti-{name}.log"));
    let file = std::fs::File::create(&log).expect("log file");
    let start = |rank: usize| {
        Command::new(std::env::current_exe().expect("own path"))
            .env("SHM_DEAD_RANK", "rejoin")
            .env("TUTTI_SYSTEM", &name)
            .env("TUTTI_RANKS", "3")
            .env("TUTTI_RANK", rank.to_string())
            .env("TUTTI_TRANSPORT", "shm")
            .stdout(file.try_clone().expect("log file"))
            .stderr(file.try_clone().expect("log file"))
            .spawn()
            .expect("spawn")
    };
    let mut children: Vec<_> = (0..3).map(start).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut statuses = vec![None; 4];
    while statuses.iter().any(Option::is_none) {
        for (c, s) in children.iter_mut().zip(statuses.iter_mut()) {
            if s.is_none() {
                *s = c.try_wait().expect("wait");
            }
        }
        if statuses[2].is_some() && children.len() == 3 {
            children.push(start(2));
        }
        if Instant::now() > deadline {
            for c in &mut children {
                let _ = c.kill();
                let _ = c.wait();
            }
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_file(&log);
            panic!("scenario rejoin hung: {statuses:?}\n{text}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("tutti-{name}")))
                .collect()
        })
        .unwrap_or_default();
    for seg in &left {
        let _ = std::fs::remove_file(format!("/dev/shm/{seg}"));
    }
    assert!(
        left.is_empty(),
        "scenario rejoin left {left:?} in /dev/shm\n{text}"
    );
    (statuses.into_iter().map(Option::unwrap).collect(), text)
}

/// Writes `text` and a newline to stderr in one write: the ranks share one
/// log file, and `eprintln!` writes its pieces separately, so two ranks'
/// lines could interleave mid-line.
fn line(text: String) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{text}\n").as_bytes());
}

fn check_killed(st: &[ExitStatus], text: &str) {
    assert_eq!(st[2].signal(), Some(9), "rank 2: {}\n{text}", st[2]);
}

fn main() {
    if let Ok(s) = std::env::var("SHM_DEAD_RANK") {
        member(&s);
        return;
    }
    let (st, text) = launch("ask");
    check_killed(&st, &text);
    assert!(st[0].success() && st[1].success(), "{st:?}\n{text}");
    println!("shm_dead_rank: actor asks on a dead rank fail with RankDied ... ok");

    let (st, text) = launch("monitor");
    check_killed(&st, &text);
    assert!(st[0].success() && st[1].success(), "{st:?}\n{text}");
    println!("shm_dead_rank: a monitor of an actor on a dead rank fires with RankDied ... ok");

    let (st, text) = launch("stall");
    check_killed(&st, &text);
    assert!(st[0].success() && st[1].success(), "{st:?}\n{text}");
    assert!(
        text.contains("was claimed by rank 2, which died before writing it")
            && text.contains("the unfinished frame from rank 2"),
        "{text}"
    );
    println!("shm_dead_rank: a slot claimed by a producer killed mid-write is reclaimed ... ok");

    let (st, text) = launch("rmi");
    check_killed(&st, &text);
    assert!(!st[0].success() || !st[1].success(), "{st:?}\n{text}");
    assert!(
        text.contains("sync_rmi of `tests.shm_dead_rank.Die` to location 2 (rank 2) got no reply")
            && text.contains("its rank 2 died"),
        "{text}"
    );
    println!("shm_dead_rank: a sync_rmi pending on a dead rank fails naming it ... ok");

    let started = Instant::now();
    let (st, text) = launch("recv");
    check_killed(&st, &text);
    assert!(!st[0].success() && !st[1].success(), "{st:?}\n{text}");
    assert!(
        text.contains("waits to receive a message (`Location::recv`) that can never come")
            && text.contains("rank 2 died (killed or crashed)"),
        "{text}"
    );
    println!(
        "shm_dead_rank: survivors blocked in recv when a rank is killed end naming it \
         ({:.1} s) ... ok",
        started.elapsed().as_secs_f64()
    );

    let (st, text) = launch_rejoin();
    check_killed(&st, &text);
    assert!(
        st[0].success() && st[1].success() && st[3].success(),
        "{st:?}\n{text}"
    );
    assert!(
        text.contains("rank 2 is back (incarnation 2")
            && text.contains("rank 2: incarnation 2 was answered by both"),
        "{text}"
    );
    println!("shm_dead_rank: a new process takes a dead rank and is answered ... ok");

    let (st, text) = launch("channel");
    check_killed(&st, &text);
    assert!(st[0].success() && st[1].success(), "{st:?}\n{text}");
    assert!(
        text.contains("rank 2, where the channel's sending end lives, died"),
        "{text}"
    );
    println!("shm_dead_rank: channel ends towards a dead rank fail naming it ... ok");

    let (st, text) = launch("barrier");
    check_killed(&st, &text);
    assert!(!st[0].success() && !st[1].success(), "{st:?}\n{text}");
    assert!(
        text.contains("(a barrier) cannot complete: rank 2 of the world died"),
        "{text}"
    );
    println!("shm_dead_rank: a barrier including a dead rank fails naming it ... ok");

    let (st, text) = launch("fence");
    check_killed(&st, &text);
    assert!(!st[0].success() && !st[1].success(), "{st:?}\n{text}");
    assert!(
        text.contains("cannot complete: rank 2 of the world died"),
        "{text}"
    );
    println!("shm_dead_rank: a fence including a dead rank fails naming it ... ok");
}
