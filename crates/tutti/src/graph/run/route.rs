//! The router: the location's own task during a run. It receives the graph's
//! world messages — tokens, one-sided `PUT` signals, credits, `Close` and
//! `Gone` — decodes them (typed values from this rank, bytes from others) and
//! hands each to its channel's entry; a message that names no channel, or a
//! kind the channel does not take here, is a problem reported for the run.
//! When every local actor is parked it fences (`recv_until_quiet`); the run
//! is over when the world is quiescent (see the module documentation).

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

use super::{Entry, Problems};
use crate::graph::channel::{Activity, Carry, CLOSE, CREDIT, DATA, GONE, PUT};
use crate::sync::Wait;
use crate::world::{Delivery, Location};

/// The router (see the module docs): returns when the world is quiescent.
pub(super) async fn route(
    loc: &Location,
    activity: &Activity,
    entries: &[Entry],
    problems: &crate::loom::Mutex<Problems>,
) {
    let mut held: Vec<Delivery<'_>> = Vec::new();
    let mut scratch = Vec::new();
    loop {
        // Actors run: hand messages on, keep the deliveries until idle.
        loop {
            let next = poll_fn(|cx| loop {
                if let Poll::Ready(d) = pin!(loc.recv()).poll(cx) {
                    return Poll::Ready(Some(d));
                }
                if activity.is_idle() {
                    return Poll::Ready(None);
                }
                match activity.router.poll_wait(cx) {
                    Wait::Notified => continue,
                    Wait::Parked | Wait::StillParked => return Poll::Pending,
                }
            })
            .await;
            match next {
                Some(mut d) => {
                    handle(loc, &mut d, entries, problems, &mut scratch);
                    held.push(d);
                }
                None => break,
            }
        }
        // Idle: what was received has had all its effects.
        held.clear();
        match loc.recv_until_quiet().await {
            Some(mut d) => {
                handle(loc, &mut d, entries, problems, &mut scratch);
                held.push(d);
            }
            None => return,
        }
    }
}

fn handle(
    loc: &Location,
    d: &mut Delivery<'_>,
    entries: &[Entry],
    problems: &crate::loom::Mutex<Problems>,
    scratch: &mut Vec<u8>,
) {
    let from = d.from();
    let r = if let Some(c) = d.take::<Carry>() {
        dispatch(
            loc,
            scratch,
            entries,
            c.kind,
            c.channel,
            c.credits,
            Payload::Value(c.value),
        )
    } else if let Some(b) = d.bytes() {
        parse(b).and_then(|(kind, ch, credits, rest)| {
            dispatch(
                loc,
                scratch,
                entries,
                kind,
                ch,
                credits,
                Payload::Bytes(rest),
            )
        })
    } else {
        Err("a message that is not the graph's".to_string())
    };
    if let Err(why) = r {
        crate::loom::lock(problems)
            .bad
            .push(format!("from {from}: {why}"));
    }
}

/// A graph message from another rank: (kind u8, channel u32 LE, then a
/// credit count u32 LE for `CREDIT`, or the token's bytes, or a `PUT`
/// signal's slot and length): kind, channel, credits and the rest.
pub(crate) fn parse(b: &[u8]) -> Result<(u8, u32, u32, &[u8]), String> {
    if b.len() < 5 {
        return Err(format!("a graph message of {} bytes is too short", b.len()));
    }
    let kind = b[0];
    let ch = u32::from_le_bytes([b[1], b[2], b[3], b[4]]);
    let rest = &b[5..];
    let credits = match (kind, rest) {
        (CREDIT, &[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        (CREDIT, _) => {
            return Err(format!(
                "a credit message for channel {ch} carries {} bytes of count, not 4",
                rest.len()
            ))
        }
        _ => 0,
    };
    Ok((kind, ch, credits, rest))
}

enum Payload<'a> {
    Value(Option<Box<dyn std::any::Any + Send>>),
    Bytes(&'a [u8]),
}

fn dispatch(
    loc: &Location,
    scratch: &mut Vec<u8>,
    entries: &[Entry],
    kind: u8,
    ch: u32,
    credits: u32,
    payload: Payload<'_>,
) -> Result<(), String> {
    let entry = entries
        .get(ch as usize)
        .ok_or_else(|| format!("channel {ch} does not exist"))?;
    match (kind, entry) {
        (PUT, Entry::In(inlet, Some(source))) => match payload {
            Payload::Bytes(b) if b.len() == 8 => {
                let k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                source.take(loc, k, len, scratch)?;
                inlet.bytes(scratch)
            }
            _ => Err(format!("a malformed one-sided signal for channel {ch}")),
        },
        (DATA, Entry::In(inlet, _)) => match payload {
            Payload::Value(Some(v)) => inlet.value(v),
            Payload::Bytes(b) => inlet.bytes(b),
            Payload::Value(None) => Err(format!("a token for channel {ch} without a value")),
        },
        (CLOSE, Entry::In(inlet, _)) => {
            inlet.close();
            Ok(())
        }
        (CREDIT, Entry::Out(out)) => {
            out.credit(credits as usize);
            Ok(())
        }
        (GONE, Entry::Out(out)) => {
            out.gone();
            Ok(())
        }
        _ => Err(format!(
            "message kind {kind} for channel {ch}, which does not take it here"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credit_count_is_exactly_four_bytes() {
        let mut b = vec![CREDIT, 7, 0, 0, 0, 3, 0, 0, 0];
        assert_eq!(parse(&b).unwrap().2, 3);
        b.pop();
        let e = parse(&b).unwrap_err();
        assert!(
            e.contains("credit message for channel 7 carries 3 bytes"),
            "{e}"
        );
        b.extend([0, 0]);
        assert!(parse(&b).is_err());
        assert!(parse(&b[..5]).is_err());
    }
}
