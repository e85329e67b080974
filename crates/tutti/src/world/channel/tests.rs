//! Channels between locations within one process: the bound, rendezvous,
//! close, cancellation of both arms, type and capacity mismatches, and a fence
//! over channel traffic.

use std::time::Duration;

use crate::csp::Alt;
use crate::world::{LocationId, RemoteRecvError, RemoteSendError, World};

fn world(locations: usize) -> World {
    World::builder()
        .locations(locations)
        .workers(2)
        .build()
        .unwrap()
}

#[test]
fn a_buffered_channel_holds_its_bound_and_hands_room_back() {
    let w = world(2);
    let a = w.location(0).unwrap();
    let b = w.location(1).unwrap();
    let tx = a.channel_to::<u32>(b.id(), 3).unwrap();
    let rx = b.channel_from::<u32>(a.id(), 3).unwrap();
    for i in 0..3 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(tx.try_send(3), Err(RemoteSendError::Full(3)));
    assert_eq!(rx.len(), 3);
    assert_eq!(rx.try_recv(), Ok(0));
    // One taken of three: the room comes back in a batch of one (3 / 2).
    tx.try_send(3).unwrap();
    assert_eq!(tx.try_send(4), Err(RemoteSendError::Full(4)));
    for i in 1..4 {
        assert_eq!(rx.try_recv(), Ok(i));
    }
    assert_eq!(rx.try_recv(), Err(RemoteRecvError::Empty));
    // Empty: everything it held went back.
    for i in 0..3 {
        tx.try_send(i).unwrap();
    }
}

#[test]
fn a_rendezvous_send_waits_for_a_receiver_that_asks() {
    let w = world(2);
    let got = w.run(|loc| async move {
        if loc.id().index() == 0 {
            let tx = loc.channel_to::<u64>(LocationId::new(1), 0).unwrap();
            for i in 0..100 {
                tx.send(i).await.unwrap();
            }
            0
        } else {
            let rx = loc.channel_from::<u64>(LocationId::new(0), 0).unwrap();
            let mut sum = 0;
            loop {
                // At most one value is ever waiting.
                assert!(rx.len() <= 1);
                match rx.recv().await {
                    Ok(v) => sum += v,
                    Err(RemoteRecvError::Closed) => break sum,
                    Err(e) => panic!("{e}"),
                }
            }
        }
    });
    assert_eq!(got[1], 4950);
}

#[test]
fn dropping_an_end_closes_the_channel_for_the_other() {
    let w = world(1);
    let loc = w.location(0).unwrap();
    let tx = loc.channel_to::<String>(loc.id(), 4).unwrap();
    let rx = loc.channel_from::<String>(loc.id(), 4).unwrap();
    tx.try_send("last".into()).unwrap();
    drop(tx);
    assert_eq!(rx.recv_blocking().as_deref(), Ok("last"));
    assert_eq!(rx.recv_blocking(), Err(RemoteRecvError::Closed));
    let tx = loc.channel_to::<String>(loc.id(), 4).unwrap();
    let rx = loc.channel_from::<String>(loc.id(), 4).unwrap();
    drop(rx);
    let e = tx.send_blocking("lost".into()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tutti::world: the channel's receiving end was dropped"
    );
    assert_eq!(e.into_inner(), "lost");
}

#[test]
fn messages_before_the_receiving_end_is_opened_wait_for_it() {
    let w = world(2);
    let a = w.location(0).unwrap();
    let b = w.location(1).unwrap();
    let first = a.channel_to::<u8>(b.id(), 2).unwrap();
    let second = a.channel_to::<u8>(b.id(), 2).unwrap();
    second.try_send(2).unwrap();
    first.try_send(1).unwrap();
    // Opened in the same order on the other side: channel 0, then 1.
    let rx0 = b.channel_from::<u8>(a.id(), 2).unwrap();
    let rx1 = b.channel_from::<u8>(a.id(), 2).unwrap();
    assert_eq!((rx0.try_recv(), rx1.try_recv()), (Ok(1), Ok(2)));
}

#[test]
fn mismatched_types_and_capacities_are_named() {
    let w = world(1);
    let loc = w.location(0).unwrap();
    let tx = loc.channel_to::<u32>(loc.id(), 1).unwrap();
    let rx = loc.channel_from::<String>(loc.id(), 1).unwrap();
    tx.try_send(5).unwrap();
    let e = rx.try_recv().unwrap_err().to_string();
    assert!(
        e.contains("is a u32, received as a alloc::string::String"),
        "{e}"
    );
    let tx = loc.channel_to::<u32>(loc.id(), 1).unwrap();
    let rx = loc.channel_from::<u32>(loc.id(), 2).unwrap();
    tx.try_send(5).unwrap();
    assert_eq!(
        rx.try_recv(),
        Err(RemoteRecvError::Capacity {
            sender: 1,
            receiver: 2
        })
    );
}

#[test]
fn a_losing_recv_arm_consumes_nothing() {
    let w = world(1);
    let loc = w.location(0).unwrap();
    let tx = loc.channel_to::<u8>(loc.id(), 2).unwrap();
    let rx = loc.channel_from::<u8>(loc.id(), 2).unwrap();
    tx.try_send(1).unwrap();
    // Both arms ready; priority fires `skip`, the receive loses.
    let mut alt = Alt::new().skip();
    let _arm = alt.future(rx.recv());
    assert_eq!(alt.pri_select_blocking().index(), 0);
    drop(alt);
    assert_eq!(rx.try_recv(), Ok(1));
    // Now the receive wins against a timeout.
    let mut alt = Alt::new().timeout(Duration::from_secs(10));
    let arm = alt.future(rx.recv());
    tx.try_send(2).unwrap();
    let sel = alt.select_blocking();
    assert_eq!(sel.index(), 1);
    assert_eq!(sel.output(&arm), Ok(2));
}

#[test]
fn a_losing_send_arm_is_withdrawn_and_a_winning_one_sends_once() {
    let w = world(1);
    let loc = w.location(0).unwrap();
    let tx = loc.channel_to::<u8>(loc.id(), 1).unwrap();
    let rx = loc.channel_from::<u8>(loc.id(), 1).unwrap();
    tx.try_send(0).unwrap(); // full now
    let mut send = tx.send(7);
    {
        let mut alt = Alt::new().timeout(Duration::from_millis(20));
        let _arm = alt.future(&mut send);
        assert_eq!(alt.select_blocking().index(), 0);
    }
    assert_eq!(send.withdraw(), Some(7));
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(rx.try_recv(), Err(RemoteRecvError::Empty));
    // With room, the send arm fires and its value arrives exactly once.
    let mut alt = Alt::new().timeout(Duration::from_secs(10));
    let arm = alt.future(tx.send(8));
    let sel = alt.select_blocking();
    assert_eq!(sel.index(), 1);
    assert_eq!(sel.output(&arm), Ok(()));
    drop(alt);
    assert_eq!(rx.try_recv(), Ok(8));
    assert_eq!(rx.try_recv(), Err(RemoteRecvError::Empty));
}

#[test]
fn select_waits_on_channels_from_two_locations() {
    let w = world(3);
    let got = w.run(|loc| async move {
        let me = loc.id().index();
        if me > 0 {
            let tx = loc.channel_to::<usize>(LocationId::new(0), 1).unwrap();
            for i in 0..10 {
                tx.send(me * 100 + i).await.unwrap();
            }
            return 0;
        }
        let a = loc.channel_from::<usize>(LocationId::new(1), 1).unwrap();
        let b = loc.channel_from::<usize>(LocationId::new(2), 1).unwrap();
        let (mut sum, mut open) = (0, 2);
        let (mut a_open, mut b_open) = (true, true);
        while open > 0 {
            let mut alt = Alt::new();
            let from_a = alt.future(a.recv());
            let from_b = alt.future(b.recv());
            alt.set_when(from_a.index(), a_open);
            alt.set_when(from_b.index(), b_open);
            let sel = alt.select().await;
            let (got, open_flag) = if sel.index() == from_a.index() {
                (sel.output(&from_a), &mut a_open)
            } else {
                (sel.output(&from_b), &mut b_open)
            };
            match got {
                Ok(v) => sum += v,
                Err(_) => {
                    *open_flag = false;
                    open -= 1;
                }
            }
        }
        sum
    });
    assert_eq!(
        got[0],
        (100..110).sum::<usize>() + (200..210).sum::<usize>()
    );
}

/// Channels that come and go leave nothing behind: whichever end goes first,
/// with values still queued or credits on their way, the rank's table of ends
/// is empty once both ends are dropped, however many channels there were.
#[test]
fn dropped_channels_leave_no_ends_behind() {
    let w = world(2);
    let a = w.location(0).unwrap();
    let b = w.location(1).unwrap();
    let ends = || w.shared().local.channels.len();
    for round in 0..300u32 {
        let tx = a.channel_to::<u32>(b.id(), 2).unwrap();
        let rx = b.channel_from::<u32>(a.id(), 2).unwrap();
        assert_eq!(ends(), 2);
        tx.try_send(round).unwrap();
        tx.try_send(round + 1).unwrap();
        assert_eq!(rx.try_recv(), Ok(round)); // one left queued
        if round % 2 == 0 {
            drop(tx);
            drop(rx);
        } else {
            drop(rx);
            assert_eq!(tx.try_send(0), Err(RemoteSendError::Closed(0)));
            drop(tx);
        }
        assert_eq!(ends(), 0, "round {round} left ends behind");
    }
}
