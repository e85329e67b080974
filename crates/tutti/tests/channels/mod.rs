//! The world suite's bodies for channels between locations (`RemoteTx` /
//! `RemoteRx`): the same code within a rank, between the processes of a
//! shared-memory system and between MPI ranks.

use std::future::Future;
use std::time::Duration;

use tutti::world::{LocationId, RemoteRecvError, World};

type Body = fn(&World);

pub const BODIES: &[(&str, Body)] = &[
    ("channels_around_a_ring", channels_around_a_ring),
    ("channel_rendezvous_ping_pong", channel_rendezvous_ping_pong),
    (
        "channel_select_over_both_neighbours",
        channel_select_over_both_neighbours,
    ),
    (
        "channel_fence_counts_values_in_flight",
        channel_fence_counts_values_in_flight,
    ),
    (
        "channel_losing_send_arm_is_withdrawn",
        channel_losing_send_arm_is_withdrawn,
    ),
];

fn neighbours(world: &World, me: usize) -> (LocationId, LocationId) {
    let n = world.locations();
    let left = LocationId::new(((me + n - 1) % n) as u32);
    let right = LocationId::new(((me + 1) % n) as u32);
    (left, right)
}

/// Each location streams values to its right through a channel of capacity 2
/// (so most sends wait for room coming back from the other rank) and checks
/// what its left sends it: every value, in order, then `Closed`.
fn channels_around_a_ring(world: &World) {
    const COUNT: u64 = 300;
    world.run(|loc| async move {
        let me = loc.id().index();
        let (left, right) = neighbours(loc.world(), me);
        let tx = loc.channel_to::<(usize, u64)>(right, 2).unwrap();
        let rx = loc.channel_from::<(usize, u64)>(left, 2).unwrap();
        let sender = tutti::spawn(async move {
            for i in 0..COUNT {
                tx.send((me, i)).await.unwrap();
            }
        });
        for i in 0..COUNT {
            assert_eq!(rx.recv().await, Ok((left.index(), i)));
            assert!(rx.len() <= 2, "more values queued than the capacity");
        }
        sender.await;
        assert_eq!(rx.recv().await, Err(RemoteRecvError::Closed));
    });
}

/// Pairs of locations (0 with 1, 2 with 3, …) bounce a counter back and forth
/// over two rendezvous channels.
fn channel_rendezvous_ping_pong(world: &World) {
    const ROUNDS: u32 = 100;
    world.run(|loc| async move {
        let me = loc.id().index();
        let partner = me ^ 1;
        if partner >= loc.world().locations() {
            return;
        }
        let partner = LocationId::new(partner as u32);
        let tx = loc.channel_to::<u32>(partner, 0).unwrap();
        let rx = loc.channel_from::<u32>(partner, 0).unwrap();
        if me % 2 == 0 {
            for i in 0..ROUNDS {
                tx.send(2 * i).await.unwrap();
                assert_eq!(rx.recv().await, Ok(2 * i + 1));
            }
        } else {
            for _ in 0..ROUNDS {
                let v = rx.recv().await.unwrap();
                tx.send(v + 1).await.unwrap();
            }
        }
    });
}

/// Every location receives from both neighbours in one `select!` until both
/// channels close (with one or two locations the neighbours coincide: the
/// channels are still two, told apart by the order they were opened in).
fn channel_select_over_both_neighbours(world: &World) {
    const COUNT: u64 = 50;
    world.run(|loc| async move {
        let me = loc.id().index();
        let (left, right) = neighbours(loc.world(), me);
        let to_right = loc.channel_to::<u64>(right, 4).unwrap();
        let to_left = loc.channel_to::<u64>(left, 4).unwrap();
        let from_left = loc.channel_from::<u64>(left, 4).unwrap();
        let from_right = loc.channel_from::<u64>(right, 4).unwrap();
        let sender = tutti::spawn(async move {
            for i in 0..COUNT {
                to_right.send(i).await.unwrap();
                to_left.send(1000 + i).await.unwrap();
            }
        });
        let (mut got_left, mut got_right) = (Vec::new(), Vec::new());
        let (mut left_open, mut right_open) = (true, true);
        while left_open || right_open {
            tutti::select! {
                future(from_left.recv()) -> v if left_open => match v {
                    Ok(v) => got_left.push(v),
                    Err(e) => { assert_eq!(e, RemoteRecvError::Closed); left_open = false; }
                },
                future(from_right.recv()) -> v if right_open => match v {
                    Ok(v) => got_right.push(v),
                    Err(e) => { assert_eq!(e, RemoteRecvError::Closed); right_open = false; }
                },
            }
        }
        sender.await;
        assert_eq!(got_left, (0..COUNT).collect::<Vec<_>>());
        assert_eq!(got_right, (1000..1000 + COUNT).collect::<Vec<_>>());
    });
}

/// Values sent on channels count for the fence: once it ends, every value is in
/// its receiving end, none in flight.
fn channel_fence_counts_values_in_flight(world: &World) {
    world.run(|loc| async move {
        let me = loc.id().index();
        let (left, right) = neighbours(loc.world(), me);
        let tx = loc.channel_to::<Vec<u64>>(right, 8).unwrap();
        let rx = loc.channel_from::<Vec<u64>>(left, 8).unwrap();
        for i in 0..5u64 {
            tx.try_send(vec![i; 100]).unwrap();
        }
        while loc.recv_until_quiet().await.is_some() {}
        assert_eq!(rx.len(), 5, "the fence ended with channel values in flight");
        for i in 0..5u64 {
            assert_eq!(rx.try_recv(), Ok(vec![i; 100]));
        }
    });
}

/// A `send` arm that loses a selection (to a timeout: the rendezvous receiver
/// has not asked yet) has not sent: its value comes back, and only the value
/// sent later arrives, once.
fn channel_losing_send_arm_is_withdrawn(world: &World) {
    world.run(|loc| async move {
        let me = loc.id().index();
        let (left, right) = neighbours(loc.world(), me);
        let tx = loc.channel_to::<u64>(right, 0).unwrap();
        let rx = loc.channel_from::<u64>(left, 0).unwrap();
        let mut send = tx.send(1);
        {
            let mut alt = tutti::csp::Alt::new().timeout(Duration::from_millis(5));
            let _arm = alt.future(&mut send);
            assert_eq!(
                alt.select().await.index(),
                0,
                "nobody asked: the send cannot fire"
            );
        }
        assert_eq!(send.withdraw(), Some(1));
        // Everyone's losing arm is settled before anyone receives.
        loc.barrier().await;
        let receive = async { rx.recv().await };
        let (got, sent) = futures_join(receive, tx.send(2)).await;
        assert_eq!(sent, Ok(()));
        assert_eq!(got, Ok(2));
        drop(tx);
        assert_eq!(rx.recv().await, Err(RemoteRecvError::Closed));
    });
}

/// Runs both futures to completion, concurrently.
async fn futures_join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none() {
            if let std::task::Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let std::task::Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        if ra.is_some() && rb.is_some() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    (ra.unwrap(), rb.unwrap())
}
