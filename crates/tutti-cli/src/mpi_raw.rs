//! The MPI peer of `tutti mpi-bench` and `tutti bench rmi --mpi`: the same
//! measurements in plain rsmpi (blocking sends and receives, one immediate
//! send for the overlap), run inside `World::with_mpi` on the thread that
//! owns MPI.

use std::time::Duration;

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use tutti::world::World;

use crate::measure::{checked, compute, Run};

/// Runs `f` on every rank with MPI; rank 0's run.
pub fn on_mpi(world: &World, f: impl FnOnce(&SimpleCommunicator) -> Run + Send + 'static) -> Run {
    world.run(|loc| async move { loc.barrier().await });
    world.with_mpi(f).unwrap_or(Run {
        elapsed: Duration::ZERO,
        ok: false,
    })
}

pub fn pingpong(c: &SimpleCommunicator, n: u64) -> Run {
    let me = c.rank();
    let other = c.process_at_rank(1 - me);
    let mut buf = [0u8; 8];
    checked(|| {
        let mut ok = true;
        if me == 0 {
            other.send(&0u64.to_le_bytes()[..]);
        }
        for i in 0..n {
            other.receive_into(&mut buf[..]);
            let v = u64::from_le_bytes(buf);
            ok &= v == 2 * i + u64::from(me == 0);
            if !(me == 0 && i + 1 == n) {
                other.send(&(v + 1).to_le_bytes()[..]);
            }
        }
        ok
    })
}

pub fn stream(c: &SimpleCommunicator, count: u64, size: usize) -> Run {
    let me = c.rank();
    let other = c.process_at_rank(1 - me);
    let mut buf = vec![0u8; size];
    checked(|| {
        if me == 0 {
            for i in 0..count {
                buf[0] = i as u8;
                other.send(&buf[..]);
            }
            receive_ack(&other)
        } else {
            let mut ok = true;
            for i in 0..count {
                let st = other.receive_into(&mut buf[..]);
                ok &= st.count(u8::equivalent_datatype()) as usize == size && buf[0] == i as u8;
            }
            other.send(&[1u8][..]);
            ok
        }
    })
}

pub fn overlap(c: &SimpleCommunicator, bytes: usize, work: Duration) -> Run {
    let me = c.rank();
    let other = c.process_at_rank(1 - me);
    let mut buf = vec![7u8; bytes];
    checked(|| {
        if me == 0 {
            mpi::request::scope(|scope| {
                let req = other.immediate_send(scope, &buf[..]);
                if !work.is_zero() {
                    compute(work);
                }
                req.wait();
            });
            receive_ack(&other)
        } else {
            other.receive_into(&mut buf[..]);
            other.send(&[1u8][..]);
            buf[bytes - 1] == 7
        }
    })
}

/// Receives the one-byte acknowledgement that ends a stream.
fn receive_ack(other: &mpi::topology::Process<'_>) -> bool {
    let mut ack = [0u8; 1];
    other.receive_into(&mut ack[..]);
    ack == [1]
}
