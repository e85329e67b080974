//! Remote handling in one process: frames encoded on one side, decoded and dispatched on
//! the other, replies back.

use crate::loom::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::*;
use crate::msg::codec::{
    self, decode_frame, encode_frame, encode_pod_frame, encode_raw_frame, frames, Header, PodVec,
};
use crate::msg::Message;

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Add(i64);
impl Message for Add {
    type Reply = i64;
}
impl Remote for Add {
    const NAME: &'static str = "test.Add";
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Log(String);
impl Message for Log {
    type Reply = ();
}
impl Remote for Log {
    const NAME: &'static str = "test.Log";
}

/// A reply that is computed after an await and is bulky plain-old-data.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Snapshot;
impl Message for Snapshot {
    type Reply = (Vec<String>, PodVec<f64>);
}
impl Remote for Snapshot {
    const NAME: &'static str = "test.Snapshot";
}

/// Its reply cannot be encoded.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Broken;
impl Message for Broken {
    type Reply = Unencodable;
}
impl Remote for Broken {
    const NAME: &'static str = "test.Broken";
}
#[derive(Debug, Deserialize)]
struct Unencodable;
impl Serialize for Unencodable {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("cannot"))
    }
}

/// Not handled by `Ledger`.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Other;
impl Message for Other {
    type Reply = ();
}
impl Remote for Other {
    const NAME: &'static str = "test.Other";
}

/// Same name as `Add`: a collision.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct AddToo;
impl Message for AddToo {
    type Reply = ();
}
impl Remote for AddToo {
    const NAME: &'static str = "test.Add";
}

#[derive(Default)]
struct Ledger {
    total: i64,
    log: Vec<String>,
}

/// The context counts handled messages, to see that it is passed through.
impl Object for Ledger {
    type Context = usize;
}

impl Handler<Add> for Ledger {
    async fn handle(&mut self, m: Add, calls: &mut usize) -> i64 {
        *calls += 1;
        self.total += m.0;
        self.total
    }
}

impl Handler<Log> for Ledger {
    async fn handle(&mut self, m: Log, calls: &mut usize) {
        *calls += 1;
        self.log.push(m.0);
    }
}

impl Handler<Snapshot> for Ledger {
    async fn handle(&mut self, _: Snapshot, calls: &mut usize) -> (Vec<String>, PodVec<f64>) {
        crate::runtime::yield_now().await;
        *calls += 1;
        (self.log.clone(), vec![self.total as f64; 3].into())
    }
}

impl Handler<Broken> for Ledger {
    async fn handle(&mut self, _: Broken, _: &mut usize) -> Unencodable {
        Unencodable
    }
}

impl Handler<AddToo> for Ledger {
    async fn handle(&mut self, _: AddToo, _: &mut usize) {}
}

fn table() -> Dispatch<Ledger> {
    let mut d = Dispatch::new();
    d.register::<Add>()
        .unwrap()
        .register::<Log>()
        .unwrap()
        .register::<Snapshot>()
        .unwrap()
        .register::<Broken>()
        .unwrap();
    d
}

fn tell_header<M: Remote>() -> Header {
    Header {
        msg: M::ID,
        target: 1,
        ..Header::new(FrameKind::Tell)
    }
}

fn ask_header<M: Remote>(corr: u64) -> Header {
    Header {
        msg: M::ID,
        corr,
        ..Header::new(FrameKind::Ask)
    }
}

/// The receiving side of a toy transport: handles every frame of `batch`, returns the
/// frames it sends back (replies and faults).
fn serve(
    table: &Dispatch<Ledger>,
    ledger: &mut Ledger,
    calls: &mut usize,
    batch: &[u8],
) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames(batch) {
        let frame = frame.unwrap();
        let h = *frame.header();
        let answer = match table.handle(ledger, calls, &frame) {
            Ok(running) => crate::runtime::block_on(running).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match (h.kind, answer) {
            (FrameKind::Ask, Ok(Some(bytes))) => {
                let reply = Header {
                    msg: h.msg,
                    corr: h.corr,
                    ..Header::new(FrameKind::Reply)
                };
                encode_raw_frame(&reply, &bytes, &mut out).unwrap();
            }
            (FrameKind::Ask, Err(why)) => {
                let fault = Header {
                    corr: h.corr,
                    ..Header::new(FrameKind::Fault)
                };
                encode_frame(&fault, &why, &mut out).unwrap();
            }
            (FrameKind::Tell, Ok(None)) => {}
            (kind, answer) => panic!("{kind:?} frame answered {answer:?}"),
        }
    }
    out
}

#[test]
fn the_same_handlers_run_on_decoded_messages() {
    let table = table();
    let mut batch = Vec::new();
    encode_frame(&tell_header::<Add>(), &Add(40), &mut batch).unwrap();
    encode_frame(&tell_header::<Log>(), &Log("hello".into()), &mut batch).unwrap();
    encode_frame(&ask_header::<Add>(1), &Add(2), &mut batch).unwrap();
    encode_frame(&ask_header::<Snapshot>(2), &Snapshot, &mut batch).unwrap();

    let (mut ledger, mut calls) = (Ledger::default(), 0);
    let replies = serve(&table, &mut ledger, &mut calls, &batch);
    assert_eq!((ledger.total, calls), (42, 4));

    let replies: Vec<_> = frames(&replies).map(Result::unwrap).collect();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0].header().corr, 1);
    assert_eq!(replies[0].decode::<<Add as Message>::Reply>(), Ok(42));
    assert_eq!(replies[1].header().corr, 2);
    let (log, values) = replies[1].decode::<<Snapshot as Message>::Reply>().unwrap();
    assert_eq!(
        (log, values.into_inner()),
        (vec!["hello".to_string()], vec![42.0; 3])
    );
}

#[test]
fn every_failure_becomes_a_fault_not_a_hang() {
    let table = table();
    let mut batch = Vec::new();
    // No handler for this type; a payload that is not an Add; a reply that cannot be
    // encoded; a plain-old-data payload where a message was expected.
    encode_frame(&ask_header::<Other>(1), &Other, &mut batch).unwrap();
    encode_frame(&ask_header::<Add>(2), &"not a number", &mut batch).unwrap();
    encode_frame(&ask_header::<Broken>(3), &Broken, &mut batch).unwrap();
    encode_pod_frame(&ask_header::<Add>(4), &[1u64], &mut batch).unwrap();

    let (mut ledger, mut calls) = (Ledger::default(), 0);
    let out = serve(&table, &mut ledger, &mut calls, &batch);
    let faults: Vec<(u64, String)> = frames(&out)
        .map(|f| {
            let f = f.unwrap();
            assert_eq!(f.header().kind, FrameKind::Fault);
            (f.header().corr, f.decode::<String>().unwrap())
        })
        .collect();
    assert_eq!(faults.len(), 4);
    assert!(
        faults[0]
            .1
            .contains("Ledger` handles no message type with id"),
        "{}",
        faults[0].1
    );
    assert!(
        faults[1]
            .1
            .starts_with("cannot decode a \"test.Add\" message"),
        "{}",
        faults[1].1
    );
    assert!(
        faults[2].1.contains("the reply could not be sent"),
        "{}",
        faults[2].1
    );
    assert!(faults[3].1.contains("plain-old-data"), "{}", faults[3].1);
    assert_eq!(faults.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
}

#[test]
fn only_tell_and_ask_frames_are_dispatched() {
    let table = table();
    for kind in [FrameKind::Reply, FrameKind::Fault, FrameKind::Control] {
        let h = Header {
            msg: Add::ID,
            corr: 1,
            ..Header::new(kind)
        };
        let mut buf = Vec::new();
        encode_frame(&h, &Add(1), &mut buf).unwrap();
        let frame = decode_frame(&buf).unwrap();
        assert_eq!(
            table.incoming(&frame).unwrap_err(),
            DispatchError::NotAMessage(kind)
        );
    }
}

#[test]
fn incoming_envelopes_can_be_queued_and_handled_later() {
    let table = table();
    let mut buf = Vec::new();
    encode_frame(&ask_header::<Add>(9), &Add(5), &mut buf).unwrap();
    encode_frame(&ask_header::<Add>(10), &Add(6), &mut buf).unwrap();
    let mut queue: Vec<Incoming<Ledger>> = frames(&buf)
        .map(|f| table.incoming(&f.unwrap()).unwrap())
        .collect();
    assert!(queue
        .iter()
        .all(|i| i.envelope.is::<Add>() && i.reply.is_some()));

    // The second is dropped unhandled (say its actor stopped): its asker learns so.
    let dropped = queue.pop().unwrap();
    drop(dropped.envelope);
    assert_eq!(
        crate::runtime::block_on(dropped.reply.unwrap()),
        Err(ReplyError::NoReply(NoReply::Dropped))
    );

    let first = queue.pop().unwrap();
    let (mut ledger, mut calls) = (Ledger::default(), 0);
    crate::runtime::block_on(first.envelope.handle(&mut ledger, &mut calls));
    let bytes = crate::runtime::block_on(first.reply.unwrap()).unwrap();
    assert_eq!(codec::decode::<i64>(&bytes), Ok(5));
}

#[test]
fn replies_are_awaited_from_other_threads() {
    // The handler runs on a worker; the transport's task awaits the encoded reply.
    let rt = crate::runtime::Runtime::builder()
        .workers(2)
        .build()
        .unwrap();
    let table = Arc::new(table());
    let mut buf = Vec::new();
    encode_frame(&ask_header::<Snapshot>(1), &Snapshot, &mut buf).unwrap();
    let Incoming { envelope, reply } = table.incoming(&decode_frame(&buf).unwrap()).unwrap();
    let handled = Arc::new(AtomicUsize::new(0));
    let seen = handled.clone();
    let task = rt.spawn(async move {
        let (mut ledger, mut calls) = (Ledger::default(), 0);
        ledger.total = 3;
        envelope.handle(&mut ledger, &mut calls).await;
        seen.fetch_add(calls, Ordering::SeqCst);
    });
    let bytes = rt.block_on(reply.unwrap()).unwrap();
    let (log, values) = codec::decode::<(Vec<String>, PodVec<f64>)>(&bytes).unwrap();
    assert!(log.is_empty());
    assert_eq!(values.into_inner(), vec![3.0; 3]);
    rt.block_on(task);
    assert_eq!(handled.load(Ordering::SeqCst), 1);
}

#[test]
fn tables_refuse_collisions_and_feed_the_registry() {
    let mut d = table();
    d.register::<Add>().unwrap(); // again: harmless
    assert_eq!(d.message_types().count(), 4);
    let e = d.register::<AddToo>().unwrap_err();
    assert!(matches!(e, RegistryError::Collision { id, .. } if id == Add::ID));
    assert!(d.accepts(Add::ID) && !d.accepts(Other::ID));

    let mut registry = Registry::new();
    d.register_into(&mut registry).unwrap();
    assert_eq!(registry.len(), 4);
    assert_eq!(registry.name(Snapshot::ID), Some("test.Snapshot"));
    let ids: Vec<MsgId> = d.message_types().map(|(id, _)| id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "sorted by id");
    // A registry that already has another type under one of these ids refuses.
    let mut other = Registry::new();
    other.register::<AddToo>().unwrap();
    assert!(d.register_into(&mut other).is_err());
}

#[test]
fn a_panicking_handler_unwinds_to_the_transport() {
    #[derive(Serialize, Deserialize)]
    struct Boom;
    impl Message for Boom {
        type Reply = u8;
    }
    impl Remote for Boom {
        const NAME: &'static str = "test.Boom";
    }
    struct Fragile;
    impl Object for Fragile {
        type Context = ();
    }
    impl Handler<Boom> for Fragile {
        async fn handle(&mut self, _: Boom, _: &mut ()) -> u8 {
            panic!("boom")
        }
    }
    let mut d = Dispatch::<Fragile>::new();
    d.register::<Boom>().unwrap();
    let mut buf = Vec::new();
    encode_frame(&ask_header::<Boom>(1), &Boom, &mut buf).unwrap();
    let frame = decode_frame(&buf).unwrap();

    // Through `handle`: the panic reaches whoever polls, who sends a Fault.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::runtime::block_on(d.handle(&mut Fragile, &mut (), &frame).unwrap())
    }));
    assert!(r.is_err());
    // Through `incoming`: the reply learns that none will come.
    let Incoming { envelope, reply } = d.incoming(&frame).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::runtime::block_on(envelope.handle(&mut Fragile, &mut ()))
    }));
    assert!(r.is_err());
    assert_eq!(
        crate::runtime::block_on(reply.unwrap()),
        Err(ReplyError::NoReply(NoReply::Dropped))
    );
}
