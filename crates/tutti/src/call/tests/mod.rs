//! The core over an in-memory link: two ends, frames queued per destination;
//! the serving side's tests are in `serve.rs`.

mod serve;

use std::collections::VecDeque;
use std::sync::Arc;

use crate::loom::Mutex;

use super::*;
use crate::msg::codec::{encode_frame, FrameKind, Header};
use crate::msg::{Message, MsgId, Remote};

/// Frames in flight: (from, to, bytes).
#[derive(Default)]
struct Net {
    queue: Mutex<VecDeque<(u32, u32, Vec<u8>)>>,
    gone: Mutex<Vec<u32>>,
}

struct Mem {
    me: u32,
    net: Arc<Net>,
}

impl Link for Mem {
    type Peer = u32;

    fn send_frame(&self, to: u32, frame: &[u8]) -> Result<(), LinkError> {
        if self.net.gone.lock().unwrap().contains(&to) {
            return Err(LinkError {
                why: format!("peer {to} is gone"),
                rank_died: None,
            });
        }
        self.net
            .queue
            .lock()
            .unwrap()
            .push_back((self.me, to, frame.to_vec()));
        Ok(())
    }

    fn flush(&self, _: u32) {}

    fn name(&self, peer: u32) -> String {
        format!("peer {peer}")
    }

    fn wire_id(&self, peer: u32) -> u32 {
        peer
    }

    fn local_wire_id(&self) -> u32 {
        self.me
    }
}

fn pair() -> (Arc<Net>, Conversation<Mem>, Conversation<Mem>) {
    let net = Arc::new(Net::default());
    let a = Conversation::new(Mem {
        me: 1,
        net: Arc::clone(&net),
    });
    let b = Conversation::new(Mem {
        me: 2,
        net: Arc::clone(&net),
    });
    (net, a, b)
}

/// The next frames in flight to `to`: (from, bytes).
fn next_to(net: &Net, to: u32) -> (u32, Vec<u8>) {
    let mut q = net.queue.lock().unwrap();
    let i = q.iter().position(|m| m.1 == to).expect("a frame in flight");
    let (from, _, bytes) = q.remove(i).unwrap();
    (from, bytes)
}

fn nothing_to(net: &Net, to: u32) -> bool {
    !net.queue.lock().unwrap().iter().any(|m| m.1 == to)
}

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Add(u64);
impl Message for Add {
    type Reply = u64;
}
impl Remote for Add {
    const NAME: &'static str = "call.tests.Add";
}

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Tick;
impl Message for Tick {
    type Reply = ();
}
impl Remote for Tick {
    const NAME: &'static str = "call.tests.Tick";
}

fn requests<'a>(received: impl Iterator<Item = Received<'a, u32>>) -> Vec<Frame<'a>> {
    received
        .map(|r| match r {
            Received::Request(f) => f,
            _ => panic!("expected only requests"),
        })
        .collect()
}

use crate::msg::codec::Frame;

#[test]
fn statements_to_one_target_share_a_frame() {
    let (net, a, b) = pair();
    let mut buf = FrameBuf::new();
    for i in 0..5 {
        buf.tell(a.ends(2), 7, Add::ID, &Add(i)).unwrap();
    }
    for _ in 0..3 {
        buf.tell(a.ends(2), 7, Tick::ID, &Tick).unwrap();
    }
    buf.tell(a.ends(2), 8, Add::ID, &Add(9)).unwrap();
    a.send(2, &mut buf).unwrap();
    assert!(buf.is_empty());
    let (from, bytes) = next_to(&net, 2);
    let frames = requests(b.receive(from, &bytes));
    assert_eq!(frames.len(), 3, "one frame per run");
    let mut run = Run::of(&frames[0]).unwrap();
    assert_eq!((frames[0].header().target, run.len()), (7, 5));
    let adds: Vec<Add> = std::iter::from_fn(|| run.next_message::<Add>())
        .map(Result::unwrap)
        .collect();
    assert_eq!(adds, (0..5).map(Add).collect::<Vec<_>>());
    // Zero-sized messages: the count says how many.
    let mut run = Run::of(&frames[1]).unwrap();
    let ticks = std::iter::from_fn(|| run.next_message::<Tick>()).count();
    assert_eq!(ticks, 3);
    assert_eq!(frames[2].header().target, 8);
}

#[test]
fn a_question_is_answered() {
    let (net, a, b) = pair();
    let q = a.ask(2, 7, Add::ID, &Add(41)).unwrap();
    assert_eq!(a.pending().len(), 1);
    let (from, bytes) = next_to(&net, 2);
    let frames = requests(b.receive(from, &bytes));
    let h = *frames[0].header();
    assert_eq!((h.kind, h.corr), (FrameKind::Ask, q.corr()));
    let Add(x) = Run::of(&frames[0])
        .unwrap()
        .next_message()
        .unwrap()
        .unwrap();
    let mut reply = Vec::new();
    crate::msg::codec::encode(&(x + 1), &mut reply).unwrap();
    b.answer(from, h.corr, Ok(&reply)).unwrap();
    let (from, bytes) = next_to(&net, 1);
    let got: Vec<_> = a.receive(from, &bytes).collect();
    assert!(matches!(got[..], [Received::Answered(c)] if c == h.corr));
    match crate::runtime::block_on(q) {
        Ok(ReplyBody::Bytes(b)) => assert_eq!(crate::msg::codec::decode::<u64>(&b), Ok(42)),
        other => panic!("{other:?}"),
    }
    assert_eq!(a.pending().len(), 0);
}

#[test]
fn a_refusal_fails_the_question() {
    let (net, a, b) = pair();
    let q = a.ask(2, 7, Add::ID, &Add(1)).unwrap();
    let (from, bytes) = next_to(&net, 2);
    let corr = requests(b.receive(from, &bytes))[0].header().corr;
    b.answer(from, corr, Err(Refusal::NoTarget)).unwrap();
    let (from, bytes) = next_to(&net, 1);
    assert_eq!(a.receive(from, &bytes).count(), 1);
    assert_eq!(
        crate::runtime::block_on(q).unwrap_err(),
        CallError::Refused {
            peer: 2,
            refusal: Refusal::NoTarget
        }
    );
}

#[test]
fn a_peer_that_is_gone_fails_its_questions_only() {
    let (net, a, _b) = pair();
    let to_2 = a.ask(2, 7, Add::ID, &Add(1)).unwrap();
    let to_3 = a.ask(3, 7, Add::ID, &Add(1)).unwrap();
    assert_eq!(a.peer_gone(2, "it left"), 1);
    let e = crate::runtime::block_on(to_2).unwrap_err();
    assert_eq!(e.to_string(), "2 cannot be reached: it left");
    assert_eq!(a.pending().len(), 1, "the question to 3 still waits");
    drop(to_3);
    assert_eq!(a.pending().len(), 0, "a question given up is forgotten");
    // A question to a peer the link cannot reach fails at once, and is not left open.
    net.gone.lock().unwrap().push(4);
    let e = a.ask(4, 7, Add::ID, &Add(1)).unwrap_err();
    assert!(matches!(e, CallError::Gone { peer: 4, .. }), "{e:?}");
    assert_eq!(a.pending().len(), 0);
}

#[test]
fn garbage_is_rejected_naming_the_peer_and_the_sender_is_told() {
    let (net, a, b) = pair();
    let got: Vec<_> = b.receive(1, b"definitely not a frame").collect();
    let [Received::Bad(bad)] = &got[..] else {
        panic!("one rejection")
    };
    assert_eq!(bad.peer, 1);
    assert!(
        bad.to_string().starts_with("malformed bytes from peer 1: "),
        "{bad}"
    );
    // The sender's core hands the notice to its owner.
    let (from, bytes) = next_to(&net, 1);
    let got: Vec<_> = a.receive(from, &bytes).collect();
    assert!(
        matches!(&got[..], [Received::Rejected(cause)] if *cause == bad.cause),
        "the notice carries the cause"
    );
    assert!(nothing_to(&net, 2), "notices are never answered");
}

#[test]
fn a_bad_frame_loses_nothing_else() {
    let (net, a, b) = pair();
    let mut buf = FrameBuf::new();
    // A question addressed to someone else, then a good statement.
    buf.ask((1, 9), 7, Add::ID, 77, &Add(1)).unwrap();
    buf.tell(a.ends(2), 7, Add::ID, &Add(2)).unwrap();
    a.send(2, &mut buf).unwrap();
    let (from, bytes) = next_to(&net, 2);
    let got: Vec<_> = b.receive(from, &bytes).collect();
    assert_eq!(got.len(), 2);
    assert!(matches!(&got[0], Received::Bad(bad) if bad.cause.contains("to 9")));
    assert!(matches!(&got[1], Received::Request(f) if f.header().kind == FrameKind::Tell));
    // The question was refused, with the cause, rather than dropped.
    let (_, bytes) = next_to(&net, 1);
    let fault = crate::msg::codec::decode_frame(&bytes).unwrap();
    assert_eq!(
        (fault.header().kind, fault.header().corr),
        (FrameKind::Fault, 77)
    );
    let Refusal::Failed(why) = fault.decode::<Refusal>().unwrap() else {
        panic!("a failure")
    };
    assert!(why.starts_with("malformed bytes from peer 1"), "{why}");
}

#[test]
fn answers_from_the_wrong_peer_or_too_late() {
    let (net, a, b) = pair();
    let q = a.ask(2, 7, Add::ID, &Add(1)).unwrap();
    let corr = q.corr();
    let _ = next_to(&net, 2);
    // Peer 3 answers a question asked of 2: rejected, the question still waits.
    let c = Conversation::new(Mem {
        me: 3,
        net: Arc::clone(&net),
    });
    c.answer(1, corr, Ok(&[1])).unwrap();
    let (from, bytes) = next_to(&net, 1);
    let got: Vec<_> = a.receive(from, &bytes).collect();
    assert!(matches!(&got[..], [Received::Bad(bad)] if bad.peer == 3));
    assert_eq!(a.pending().len(), 1);
    let _notice = next_to(&net, 3);
    // Given up, then answered: dropped and counted.
    drop(q);
    b.answer(1, corr, Ok(&[1])).unwrap();
    let (from, bytes) = next_to(&net, 1);
    assert_eq!(a.receive(from, &bytes).count(), 1);
    assert_eq!(a.pending().late(), 1);
}

#[test]
fn an_undecodable_refusal_fails_only_its_question() {
    let (net, a, _b) = pair();
    let q1 = a.ask(2, 7, Add::ID, &Add(1)).unwrap();
    let q2 = a.ask(2, 7, Add::ID, &Add(2)).unwrap();
    let h = Header {
        src: 2,
        dst: 1,
        corr: q1.corr(),
        ..Header::new(FrameKind::Fault)
    };
    let mut bytes = Vec::new();
    crate::msg::codec::encode_raw_frame(&h, &[0xff, 0xff], &mut bytes).unwrap();
    let got: Vec<_> = a.receive(2, &bytes).collect();
    assert!(matches!(&got[..], [Received::Bad(_)]));
    assert!(matches!(
        crate::runtime::block_on(q1),
        Err(CallError::BadAnswer { peer: 2, .. })
    ));
    assert_eq!(a.pending().len(), 1, "{q2:?} still waits");
    drop(net);
}

#[test]
fn runs_that_lie_about_their_length_are_errors() {
    let (net, a, _b) = pair();
    let mut bytes = Vec::new();
    // Claims 3 messages, holds 2.
    let h = Header {
        src: 1,
        dst: 2,
        msg: Add::ID,
        target: 7,
        corr: 2,
        ..Header::new(FrameKind::Tell)
    };
    let mut payload = Vec::new();
    crate::msg::codec::encode(&Add(1), &mut payload).unwrap();
    crate::msg::codec::encode(&Add(2), &mut payload).unwrap();
    crate::msg::codec::encode_raw_frame(&h, &payload, &mut bytes).unwrap();
    let frame = crate::msg::codec::decode_frame(&bytes).unwrap();
    let mut run = Run::of(&frame).unwrap();
    assert!(run.next_message::<Add>().unwrap().is_ok());
    assert!(run.next_message::<Add>().unwrap().is_ok());
    assert!(run.next_message::<Add>().unwrap().is_err());
    assert!(run.next_message::<Add>().is_none());
    // Claims 1, holds 2: the extra bytes are an error at the end.
    let h = Header { corr: 0, ..h };
    bytes.clear();
    crate::msg::codec::encode_raw_frame(&h, &payload, &mut bytes).unwrap();
    let frame = crate::msg::codec::decode_frame(&bytes).unwrap();
    let mut run = Run::of(&frame).unwrap();
    assert!(run.next_message::<Add>().unwrap().is_ok());
    assert!(run.next_message::<Add>().unwrap().is_err());
    // Claims more than a run may hold: refused before anything is decoded.
    let h = Header { corr: MAX_RUN, ..h };
    bytes.clear();
    encode_frame(&h, &(), &mut bytes).unwrap();
    let frame = crate::msg::codec::decode_frame(&bytes).unwrap();
    assert!(Run::of(&frame).is_err());
    drop((net, a));
}

#[test]
fn the_world_link_names_ranks() {
    let world = crate::world::World::builder()
        .ignore_env()
        .locations(2)
        .workers(1)
        .build()
        .unwrap();
    let loc = world.location(1).unwrap();
    let peer = crate::world::LocationId::new(0);
    assert_eq!(loc.name(peer), "location 0 (rank 0)");
    assert_eq!((loc.wire_id(peer), loc.local_wire_id()), (0, 1));
    let _ = MsgId::NONE;
}

#[test]
fn a_dead_rank_fails_the_questions_to_its_peers_only() {
    let (_net, a, _b) = pair();
    // Peers 10..20 live in rank 1, 20..30 in rank 2.
    let rank_of = |p: u32| (p / 10) as usize;
    let in_2 = [
        a.ask(20, 7, Add::ID, &Add(1)).unwrap(),
        a.ask(25, 7, Add::ID, &Add(1)).unwrap(),
    ];
    let in_1 = a.ask(12, 7, Add::ID, &Add(1)).unwrap();
    assert_eq!(a.rank_died(2, rank_of), 2);
    for (q, peer) in in_2.into_iter().zip([20, 25]) {
        let e = crate::runtime::block_on(q).unwrap_err();
        assert_eq!(e, CallError::RankDied { peer, rank: 2 });
        assert_eq!(
            e.to_string(),
            format!("{peer} cannot answer: its rank 2 died")
        );
    }
    assert_eq!(a.pending().len(), 1, "the question to rank 1 still waits");
    assert_eq!(a.rank_died(2, rank_of), 0, "told twice, nothing more fails");
    drop(in_1);
}
