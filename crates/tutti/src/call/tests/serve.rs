//! The serving side over the in-memory link: an asking end (a plain
//! conversation) and a serving end (a [`Server`] with targets).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::*;
use crate::actor::{self, Actor, Context};
use crate::call::serve::{self, refusal, ServeCounters, ServedObject, Server, Target};
use crate::msg::codec::Format;
use crate::msg::{Dispatch, Handler, NoReply, RemoteReply, ReplyError};

/// An actor that adds, and stalls when asked to.
struct Acc(u64);
impl Actor for Acc {}
impl Handler<Add> for Acc {
    async fn handle(&mut self, m: Add, _: &mut Context<Self>) -> u64 {
        self.0 += m.0;
        self.0
    }
}
impl Handler<Tick> for Acc {
    async fn handle(&mut self, _: Tick, _: &mut Context<Self>) {
        crate::runtime::sleep(Duration::from_secs(3600)).await
    }
}

fn table() -> Dispatch<Acc> {
    let mut t = Dispatch::new();
    t.register::<Add>().unwrap().register::<Tick>().unwrap();
    t
}

/// A target that drops every request unhandled (its asker's reply never
/// comes), as an actor that stops (`stops`) or as an object that goes on.
struct Dropper {
    dispatch: Dispatch<Acc>,
    stops: bool,
}

impl Target for Dropper {
    fn take(&self, frame: &Frame<'_>, format: Format) -> Result<Option<RemoteReply>, Refusal> {
        let incoming = self
            .dispatch
            .incoming_in(frame, format)
            .map_err(|e| Refusal::Failed(e.to_string()))?;
        drop(incoming.envelope);
        Ok(incoming.reply)
    }

    fn dropped_means_stopped(&self) -> bool {
        self.stops
    }

    fn type_name(&self) -> &'static str {
        "Dropper"
    }
}

/// The serving end: its targets by number, and what it was told to do.
struct Desk {
    conv: Conversation<Mem>,
    counters: ServeCounters,
    targets: HashMap<u64, Arc<dyn Target>>,
    /// Statements it could not deliver: (from, target, why).
    undelivered: Mutex<Vec<(u32, u64, Refusal)>>,
}

impl Server for Desk {
    type Link = Mem;

    fn conversation(&self) -> &Conversation<Mem> {
        &self.conv
    }

    fn counters(&self) -> &ServeCounters {
        &self.counters
    }

    fn target(&self, id: u64) -> Option<Arc<dyn Target>> {
        self.targets.get(&id).cloned()
    }

    fn on_control(self: &Arc<Self>, from: u32, frame: &Frame<'_>) {
        serve::reject(
            &**self,
            from,
            Some(frame.header()),
            "no control messages here",
        );
    }

    fn undelivered(&self, from: u32, h: &Header, why: Refusal) {
        self.undelivered.lock().unwrap().push((from, h.target, why));
    }
}

/// Asker 1, server 2 with an actor (7), a dropper that stops (8) and one
/// that goes on (9).
fn serving() -> (Arc<Net>, Conversation<Mem>, Arc<Desk>, Addr) {
    let (net, a, b) = pair();
    let acc = actor::spawn(Acc(0));
    let mut targets: HashMap<u64, Arc<dyn Target>> = HashMap::new();
    targets.insert(7, Arc::new(ServedObject::new(table(), acc.clone())));
    for (id, stops) in [(8, true), (9, false)] {
        let dispatch = table();
        targets.insert(id, Arc::new(Dropper { dispatch, stops }));
    }
    let desk = Arc::new(Desk {
        conv: b,
        counters: ServeCounters::default(),
        targets,
        undelivered: Mutex::new(Vec::new()),
    });
    (net, a, desk, acc)
}

type Addr = crate::actor::Addr<Acc>;

/// Hands whatever is in flight to the server.
fn deliver_to_server(net: &Net, desk: &Arc<Desk>) {
    while !nothing_to(net, 2) {
        let (from, bytes) = next_to(net, 2);
        serve::receive(desk, from, &bytes, Format::Binary);
    }
}

/// Waits (bounded) for `n` answers to the asker and files them there.
fn answers_reach_the_asker(net: &Net, a: &Conversation<Mem>, n: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    let mut got = 0;
    while got < n {
        if nothing_to(net, 1) {
            assert!(Instant::now() < until, "{got} of {n} answers came");
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let (from, bytes) = next_to(net, 1);
        for r in a.receive(from, &bytes) {
            assert!(matches!(r, Received::Answered(_)), "only answers");
            got += 1;
        }
    }
}

#[test]
fn an_actor_serves_a_question_and_is_counted() {
    let (net, a, desk, _acc) = serving();
    let q = a.ask(2, 7, Add::ID, &Add(41)).unwrap();
    a.tell(2, 7, Add::ID, &Add(1)).unwrap();
    deliver_to_server(&net, &desk);
    answers_reach_the_asker(&net, &a, 1);
    match crate::runtime::block_on(q) {
        Ok(ReplyBody::Bytes(b)) => assert_eq!(crate::msg::codec::decode::<u64>(&b), Ok(41)),
        other => panic!("{other:?}"),
    }
    let s = desk.counters.snapshot();
    assert_eq!((s.served, s.dead_letters, s.malformed), (2, 0, 0), "{s:?}");
}

#[test]
fn a_dropped_reply_is_refused_for_what_its_target_is() {
    let (net, a, desk, _acc) = serving();
    let stopped = a.ask(2, 8, Add::ID, &Add(1)).unwrap();
    let goes_on = a.ask(2, 9, Add::ID, &Add(1)).unwrap();
    deliver_to_server(&net, &desk);
    answers_reach_the_asker(&net, &a, 2);
    let refused = |q| match crate::runtime::block_on(q) {
        Err(CallError::Refused { refusal, .. }) => refusal,
        other => panic!("{other:?}"),
    };
    assert_eq!(refused(stopped), Refusal::NoTarget);
    match refused(goes_on) {
        Refusal::Failed(why) => assert!(why.contains("no reply"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_actor_that_stops_with_a_question_waiting_refuses_it_as_stopped() {
    let (net, a, desk, acc) = serving();
    // One question is being handled (it stalls), one waits behind it.
    let handled = a.ask(2, 7, Tick::ID, &Tick).unwrap();
    let queued = a.ask(2, 7, Add::ID, &Add(1)).unwrap();
    deliver_to_server(&net, &desk);
    acc.stop();
    answers_reach_the_asker(&net, &a, 2);
    for q in [handled, queued] {
        let e = crate::runtime::block_on(q).unwrap_err();
        assert!(
            matches!(
                e,
                CallError::Refused {
                    refusal: Refusal::NoTarget,
                    ..
                }
            ),
            "{e:?}"
        );
    }
    // And a question after the stop gets the same.
    let after = a.ask(2, 7, Add::ID, &Add(1)).unwrap();
    deliver_to_server(&net, &desk);
    answers_reach_the_asker(&net, &a, 1);
    assert!(matches!(
        crate::runtime::block_on(after),
        Err(CallError::Refused {
            refusal: Refusal::NoTarget,
            ..
        })
    ));
}

#[test]
fn the_one_mapping_from_a_missing_reply_to_a_refusal() {
    let dropped = ReplyError::NoReply(NoReply::Dropped);
    assert_eq!(refusal(dropped.clone(), true), Refusal::NoTarget);
    assert_eq!(
        refusal(dropped, false),
        Refusal::Failed("no reply: the message was dropped before it was answered".into())
    );
    for stops in [true, false] {
        let overflowed = ReplyError::NoReply(NoReply::Overflowed);
        assert_eq!(refusal(overflowed, stops), Refusal::Full);
        let bad = ReplyError::Encode(crate::msg::codec::CodecError::InvalidHeader("test"));
        assert!(matches!(refusal(bad, stops), Refusal::Failed(_)));
    }
}

#[test]
fn undeliverable_statements_are_dead_letters_and_unknown_targets_refuse_questions() {
    let (net, a, desk, _acc) = serving();
    a.tell(2, 99, Add::ID, &Add(1)).unwrap();
    let q = a.ask(2, 99, Add::ID, &Add(1)).unwrap();
    deliver_to_server(&net, &desk);
    assert_eq!(
        *desk.undelivered.lock().unwrap(),
        [(1, 99, Refusal::NoTarget)],
        "the owner tells the sender its way"
    );
    answers_reach_the_asker(&net, &a, 1);
    assert!(matches!(
        crate::runtime::block_on(q),
        Err(CallError::Refused {
            refusal: Refusal::NoTarget,
            ..
        })
    ));
    let s = desk.counters.snapshot();
    assert_eq!((s.served, s.dead_letters, s.malformed), (0, 1, 0), "{s:?}");
}

#[test]
fn bad_requests_are_rejected_counted_and_the_sender_is_told() {
    let (net, a, desk, _acc) = serving();
    // A run of two statements (served one per frame), a question whose
    // payload is not an `Add`, and a control message the owner rejects.
    let mut buf = FrameBuf::new();
    buf.tell(a.ends(2), 7, Add::ID, &Add(1)).unwrap();
    buf.tell(a.ends(2), 7, Add::ID, &Add(2)).unwrap();
    a.send(2, &mut buf).unwrap();
    let corr = a.pending().open(2);
    buf.request_raw(a.ends(2), 7, Add::ID, corr, &[0xff; 12])
        .unwrap();
    buf.control(a.ends(2), MsgId::from_name("call.tests.Other"), 0, &1u8)
        .unwrap();
    a.send(2, &mut buf).unwrap();
    deliver_to_server(&net, &desk);
    let s = desk.counters.snapshot();
    assert_eq!((s.served, s.malformed), (0, 3), "{s:?}");
    assert!(
        s.last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("malformed bytes from peer 1: ")),
        "{s:?}"
    );
    // The asker: two notices and a refusal naming the cause.
    let mut notices = 0;
    while !nothing_to(&net, 1) {
        let (from, bytes) = next_to(&net, 1);
        for r in a.receive(from, &bytes) {
            match r {
                Received::Rejected(_) => notices += 1,
                Received::Answered(c) => assert_eq!(c, corr),
                _ => panic!("notices and an answer only"),
            }
        }
    }
    assert_eq!(notices, 2);
    match a.pending().take(corr) {
        Some(Err(CallError::Refused {
            refusal: Refusal::Failed(why),
            ..
        })) => assert!(why.contains("malformed bytes from peer 1"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rejection_of_the_servers_bytes_is_counted_there() {
    let (net, a, desk, _acc) = serving();
    // The asker rejects bytes from the server; the notice reaches it.
    let bad = a.reject(2, None, "test garbage");
    assert_eq!(bad.peer, 2);
    let (from, bytes) = next_to(&net, 2);
    serve::receive(&desk, from, &bytes, Format::Binary);
    let s = desk.counters.snapshot();
    assert_eq!(s.rejected, 1, "{s:?}");
    assert_eq!(
        s.last_error.as_deref(),
        Some("peer 1 rejected a message from here: test garbage")
    );
}
