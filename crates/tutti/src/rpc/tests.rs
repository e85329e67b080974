//! Property tests of an endpoint's reading side: random bytes, mutated frames
//! and valid frames cut at random points, sent over loopback TCP after a
//! handshake. The server never panics, answers only with well-formed frames,
//! allocates only what a checked header allows, and keeps serving.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};

use super::protocol::{self, Hello, HELLO, VERSION};
use super::*;
use crate::msg::codec::{self, Format, FrameKind, Header, Limits};
use crate::msg::{Handler, Message, RegistryError, Remote};

#[derive(Serialize, Deserialize, Debug)]
struct Echo(Vec<u8>);
impl Message for Echo {
    type Reply = Vec<u8>;
}
impl Remote for Echo {
    const NAME: &'static str = "test.rpc.Echo";
}

struct Echoer;
impl Object for Echoer {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Echo>()?;
        Ok(())
    }
}
impl Handler<Echo> for Echoer {
    async fn handle(&mut self, m: Echo, _: &mut ()) -> Vec<u8> {
        m.0
    }
}

const PATH: &str = "test/echo/one";

fn server() -> (Rpc, String) {
    let rpc = Rpc::builder()
        .cookie("k")
        .max_frame(1 << 16)
        .build()
        .unwrap();
    rpc.publish(PATH, Echoer, Vendor::Sequential).unwrap();
    let addr = rpc
        .host_url()
        .unwrap()
        .trim_start_matches("tcp://")
        .to_string();
    (rpc, addr)
}

/// A raw connection past the handshake.
fn raw(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let hello = Hello {
        version: VERSION,
        cookie: "k".into(),
        format: Format::Binary,
    };
    s.write_all(&protocol::frame(HELLO, &hello).unwrap())
        .unwrap();
    let mut welcome = [0u8; 48]; // a `Welcome` has no payload
    s.read_exact(&mut welcome).unwrap();
    s
}

/// Sends `bytes`, ends the sending side, and checks that everything the
/// server answers is well-formed frames.
fn send_and_check(addr: &str, bytes: &[u8]) -> Result<Vec<(FrameKind, u64)>, TestCaseError> {
    let mut s = raw(addr);
    // The server may close early (a stream it cannot read): later writes can fail.
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let mut kinds = Vec::new();
    for f in codec::frames_with(&got, &Limits::DEFAULT) {
        let f = f.map_err(|e| TestCaseError::fail(format!("a bad frame from the server: {e}")))?;
        kinds.push((f.header().kind, f.header().corr));
    }
    Ok(kinds)
}

/// Reads one whole frame.
fn read_frame(s: &mut TcpStream) -> Result<Vec<u8>, TestCaseError> {
    let fail = |e: std::io::Error| TestCaseError::fail(format!("no answer: {e}"));
    let mut f = vec![0u8; codec::HEADER_LEN];
    s.read_exact(&mut f).map_err(fail)?;
    let n = codec::frame_len(&f, &Limits::DEFAULT)
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .unwrap_or(codec::HEADER_LEN);
    f.resize(n, 0);
    s.read_exact(&mut f[codec::HEADER_LEN..]).map_err(fail)?;
    Ok(f)
}

fn ask(corr: u64, payload: &[u8]) -> Vec<u8> {
    let h = Header {
        msg: Echo::ID,
        target: endpoint::target_of(PATH),
        corr,
        ..Header::new(FrameKind::Ask)
    };
    let mut out = Vec::new();
    codec::encode_frame(&h, &Echo(payload.to_vec()), &mut out).unwrap();
    out
}

fn still_serving(rpc: &Rpc) {
    let p = rpc.proxy_with::<Echoer>(
        &format!("{}/{PATH}", rpc.host_url().unwrap()),
        Format::Binary,
    );
    // A local proxy would not touch the socket: call through a client.
    drop(p);
    let c = Rpc::builder().cookie("k").client_only().build().unwrap();
    let p = c
        .proxy::<Echoer>(&format!("{}/{PATH}", rpc.host_url().unwrap()))
        .unwrap();
    assert_eq!(p.call_blocking(Echo(vec![1, 2, 3])).unwrap(), vec![1, 2, 3]);
}

/// A runner with a fixed seed, so a run is repeatable.
fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

#[test]
fn random_bytes_never_break_the_server() {
    let (rpc, addr) = server();
    runner(48)
        .run(&proptest::collection::vec(any::<u8>(), 0..600), |bytes| {
            send_and_check(&addr, &bytes).map(drop)
        })
        .unwrap();
    still_serving(&rpc);
}

#[test]
fn mutated_frames_are_answered_or_rejected() {
    let (rpc, addr) = server();
    let strategy = (
        proptest::collection::vec(any::<u8>(), 0..64),
        any::<prop::sample::Index>(),
        any::<u8>(),
        any::<bool>(),
    );
    runner(64)
        .run(&strategy, |(payload, at, byte, truncate)| {
            let mut f = ask(7, &payload);
            let i = at.index(f.len());
            if truncate {
                f.truncate(i);
            } else {
                f[i] ^= byte | 1;
            }
            // A mutation inside the header's `corr` asks another question:
            // its answer carries that id.
            let corr = codec::decode_frame(&f).map_or(7, |frame| frame.header().corr);
            let kinds = send_and_check(&addr, &f)?;
            // At most one answer to the one question, and whatever comes back
            // for it is its reply or its refusal.
            prop_assert!(kinds.len() <= 1, "{kinds:?}");
            for (kind, got) in kinds {
                prop_assert!(
                    matches!(
                        kind,
                        FrameKind::Reply | FrameKind::Fault | FrameKind::Control
                    ),
                    "{kind:?}"
                );
                if kind != FrameKind::Control {
                    prop_assert_eq!(got, corr);
                }
            }
            Ok(())
        })
        .unwrap();
    still_serving(&rpc);
}

#[test]
fn a_mutated_question_id_is_answered_under_that_id() {
    let (rpc, addr) = server();
    let mut f = ask(7, &[1, 2, 3]);
    let corr_at = (0..f.len())
        .find(|&i| {
            let mut g = f.clone();
            g[i] ^= 0x10;
            codec::decode_frame(&g).is_ok_and(|frame| frame.header().corr == 7 ^ 0x10)
        })
        .expect("the header carries corr");
    f[corr_at] ^= 0x10;
    for (kind, got) in send_and_check(&addr, &f).unwrap() {
        if kind != FrameKind::Control {
            assert_eq!(got, 7 ^ 0x10);
        }
    }
    still_serving(&rpc);
}

#[test]
fn frames_cut_anywhere_arrive_whole() {
    let (rpc, addr) = server();
    let strategy = (
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..8),
        proptest::collection::vec(1usize..97, 1..16),
    );
    runner(32)
        .run(&strategy, |(payloads, cuts)| {
            let mut batch = Vec::new();
            for (i, p) in payloads.iter().enumerate() {
                batch.extend(ask(i as u64 + 1, p));
            }
            let mut s = raw(&addr);
            s.set_nodelay(true).unwrap();
            let mut at = 0;
            for c in cuts.iter().cycle() {
                if at >= batch.len() {
                    break;
                }
                let end = (at + c).min(batch.len());
                s.write_all(&batch[at..end]).unwrap();
                at = end;
            }
            // One answer per question, read while the connection is open.
            let mut replies = Vec::new();
            for _ in 0..payloads.len() {
                let f = read_frame(&mut s)?;
                let f = codec::decode_frame(&f).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(f.header().kind, FrameKind::Reply);
                replies.push((f.header().corr, f.decode::<Vec<u8>>().unwrap()));
            }
            replies.sort();
            let want: Vec<_> = payloads
                .iter()
                .enumerate()
                .map(|(i, p)| (i as u64 + 1, p.clone()))
                .collect();
            prop_assert_eq!(replies, want);
            Ok(())
        })
        .unwrap();
    assert_eq!(rpc.stats().malformed, 0);
    still_serving(&rpc);
}

#[derive(Serialize, Deserialize, Debug)]
struct Slow(u64);
impl Message for Slow {
    type Reply = u64;
}
impl Remote for Slow {
    const NAME: &'static str = "test.rpc.Slow";
}

/// Answers after a pause, so that its answers are still owed when the
/// client's end of its requests arrives.
struct Sleeper;
impl Object for Sleeper {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Slow>()?;
        Ok(())
    }
}
impl Handler<Slow> for Sleeper {
    async fn handle(&mut self, m: Slow, _: &mut ()) -> u64 {
        crate::runtime::sleep(Duration::from_millis(20)).await;
        m.0
    }
}

/// A client that sends its calls and half-closes at once gets every answer
/// (in order: the object serves one call at a time), then the end of the
/// connection.
#[test]
fn a_client_half_closing_after_its_calls_gets_every_answer() {
    const SLOW: &str = "test/slow";
    let (rpc, addr) = server();
    rpc.publish(SLOW, Sleeper, Vendor::Sequential).unwrap();
    let mut s = raw(&addr);
    let mut bytes = Vec::new();
    for corr in 1..=5u64 {
        let h = Header {
            msg: Slow::ID,
            target: endpoint::target_of(SLOW),
            corr,
            ..Header::new(FrameKind::Ask)
        };
        codec::encode_frame(&h, &Slow(corr * 10), &mut bytes).unwrap();
    }
    s.write_all(&bytes).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let answers: Vec<(FrameKind, u64, u64)> = codec::frames_with(&got, &Limits::DEFAULT)
        .map(|f| {
            let f = f.unwrap();
            (f.header().kind, f.header().corr, f.decode::<u64>().unwrap())
        })
        .collect();
    let want: Vec<_> = (1..=5u64).map(|c| (FrameKind::Reply, c, c * 10)).collect();
    assert_eq!(answers, want);
    still_serving(&rpc);
}
