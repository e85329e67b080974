//! Unit tests of the mailbox ring and the named system's segments.

use super::ring::{Push, Ring, FIRST, LAST};
use super::system::{self, System};
use crate::world::error::WorldError;

#[test]
fn fragments_round_trip_and_a_full_ring_says_so() {
    let ring = Ring::<4, 8>::boxed();
    for i in 0..4u8 {
        assert_eq!(ring.push(1, FIRST | LAST, &[i; 5]).unwrap(), Push::Done);
    }
    assert_eq!(ring.push(1, FIRST, &[9]).unwrap(), Push::Full);
    let mut out = Vec::new();
    let f = ring.pop(&mut out, 2).unwrap().unwrap();
    assert_eq!((f.from, f.first, f.last, f.len), (1, true, true, 5));
    assert_eq!(out, [0; 5]);
    assert_eq!(ring.push(0, FIRST, &[9; 8]).unwrap(), Push::Done);
    for i in 1..4u8 {
        out.clear();
        ring.pop(&mut out, 2).unwrap().unwrap();
        assert_eq!(out, [i; 5]);
    }
    out.clear();
    let f = ring.pop(&mut out, 2).unwrap().unwrap();
    assert_eq!((f.from, f.first, f.last, out.len()), (0, true, false, 8));
    assert!(ring.pop(&mut out, 2).unwrap().is_none());
}

#[test]
fn a_slot_claimed_by_a_dead_producer_is_reclaimed_and_nothing_committed_is_lost() {
    let ring = Ring::<2, 8>::boxed();
    let mut out = Vec::new();
    // Rank 1 claims position 0 and dies; rank 0 commits position 1 behind it.
    assert_eq!(ring.claim_and_die(1), Some(0));
    assert_eq!(ring.push(0, FIRST | LAST, &[7; 3]).unwrap(), Push::Done);
    // The consumer is stuck at position 0, claimed by rank 1.
    assert!(ring.pop(&mut out, 2).unwrap().is_none());
    assert_eq!(ring.stalled(), Some(1));
    // A producer lapping the ring waits for it (full), it is not corruption.
    assert_eq!(ring.push(0, FIRST | LAST, &[8]).unwrap(), Push::Full);
    // Only the claimant's slot can be reclaimed, and only while uncommitted.
    assert_eq!(ring.reclaim(0), None);
    assert_eq!(ring.reclaim(1), Some(0));
    assert_eq!(ring.stalled(), None);
    let f = ring.pop(&mut out, 2).unwrap().unwrap();
    assert_eq!((f.from, out.as_slice()), (0, &[7u8; 3][..]));
    assert_eq!(ring.reclaim(1), None, "nothing is claimed at position 2");
    // The reclaimed slot serves the next lap.
    assert_eq!(ring.push(0, FIRST | LAST, &[8]).unwrap(), Push::Done);
    out.clear();
    assert_eq!(ring.pop(&mut out, 2).unwrap().map(|f| f.from), Some(0));
    assert_eq!(out, [8]);
}

/// A producer killed between its claim and its move of `tail`: once its
/// slot is reclaimed, the others go on past it (the consumer moved `tail`),
/// they do not take the freed slot for corruption.
#[test]
fn a_slot_reclaimed_before_its_claimant_moved_the_tail_is_passed() {
    let ring = Ring::<2, 8>::boxed();
    let mut out = Vec::new();
    assert_eq!(ring.claim_and_die_before_moving_tail(1), 0);
    assert!(ring.pop(&mut out, 2).unwrap().is_none());
    assert_eq!(ring.stalled(), Some(1));
    assert_eq!(ring.reclaim(1), Some(0));
    for i in 0..3u8 {
        assert_eq!(ring.push(0, FIRST | LAST, &[i]).unwrap(), Push::Done);
        out.clear();
        let f = ring.pop(&mut out, 2).unwrap().unwrap();
        assert_eq!((f.from, out.as_slice()), (0, &[i][..]));
    }
}

#[test]
fn a_committed_slot_is_never_reclaimed() {
    let ring = Ring::<4, 8>::boxed();
    assert_eq!(ring.push(1, FIRST | LAST, &[1]).unwrap(), Push::Done);
    assert_eq!(ring.stalled(), None);
    assert_eq!(ring.reclaim(1), None);
    let mut out = Vec::new();
    assert_eq!(ring.pop(&mut out, 2).unwrap().map(|f| f.from), Some(1));
}

#[test]
fn corrupt_contents_are_errors_naming_the_slot() {
    let ring = Ring::<4, 8>::boxed();
    let mut out = Vec::new();
    // A sequence from nowhere.
    ring.scribble(0, 77, 0);
    let e = ring.pop(&mut out, 2).unwrap_err().to_string();
    assert!(e.contains("slot 0 has sequence 77"), "{e}");
    // A published slot with a length beyond the slot.
    ring.scribble(0, 1, super::ring::meta(1, FIRST | LAST, 9999));
    let e = ring.pop(&mut out, 2).unwrap_err().to_string();
    assert!(
        e.contains("bad descriptor (length 9999 of at most 8"),
        "{e}"
    );
    // A sender rank outside the system.
    ring.scribble(0, 1, super::ring::meta(5, FIRST, 1));
    let e = ring.pop(&mut out, 2).unwrap_err().to_string();
    assert!(e.contains("sender rank 5 of 2"), "{e}");
    // Unknown flags.
    ring.scribble(0, 1, (1 << 39) | 1);
    assert!(ring.pop(&mut out, 2).is_err());
    // A producer meeting a sequence far ahead is told too, not looping.
    ring.scribble(0, 1_000_000, 0);
    let e = ring.push(0, FIRST, &[1]).unwrap_err().to_string();
    assert!(e.contains("slot 0 has sequence 1000000"), "{e}");
}

fn unique(tag: &str) -> String {
    format!("unit-{tag}-{}", std::process::id())
}

#[test]
fn the_first_creates_later_ones_join_and_ranks_are_claimed_once() {
    let name = unique("join");
    let a = System::open_or_create(&name, 2).unwrap();
    assert!(super::sys::exists(&system::segment(&name)));
    let b = System::open_or_create(&name, 2).unwrap();
    assert_eq!(a.claim(None).unwrap(), 0);
    assert_eq!(b.claim(None).unwrap(), 1);
    let e = b.claim(None).unwrap_err().to_string();
    assert!(e.contains("is full"), "{e}");
    let e = b.claim(Some(0)).unwrap_err().to_string();
    assert!(e.contains("rank 0 is already taken"), "{e}");
    let e = System::open_or_create(&name, 3).unwrap_err().to_string();
    assert!(e.contains("has 2 processes"), "{e}");
    a.ready(0, 1, b"digest-a").unwrap();
    assert_eq!(a.digest(0).unwrap(), b"digest-a");
    assert!(!a.died(0));
    drop((a, b));
    super::sys::unlink(&system::segment(&name)).unwrap();
}

/// A rank whose process died is taken again by a new process, as a new
/// incarnation; a live rank, or one being taken, is not.
#[test]
fn a_dead_rank_is_claimed_again_as_a_new_incarnation() {
    let name = unique("reclaim");
    let s = System::open_or_create(&name, 2).unwrap();
    assert_eq!(s.claim(None).unwrap(), 0);
    assert_eq!(s.claim(None).unwrap(), 1);
    assert_eq!((s.incarnation(0), s.incarnation(1)), (1, 1));
    s.ready(0, 1, b"d").unwrap();
    s.ready(1, 1, b"d").unwrap();
    let e = s.claim(Some(1)).unwrap_err().to_string();
    assert!(e.contains("rank 1 is already taken"), "{e}");
    // Rank 1's process is gone (no process has that pid).
    let m = &s.header().members[1];
    m.pid.store(u32::MAX - 1, crate::loom::Ordering::Relaxed);
    assert!(s.died(1));
    assert_eq!(s.claim(None).unwrap(), 1, "the dead rank, no free one left");
    assert_eq!(s.incarnation(1), 2);
    assert_eq!(m.state.get(), system::JOINING);
    assert_eq!(
        m.pid.load(crate::loom::Ordering::Relaxed),
        std::process::id()
    );
    assert!(!s.died(1));
    let e = s.claim(Some(1)).unwrap_err().to_string();
    assert!(e.contains("rank 1 is already taken"), "{e}");
    // A rank buried by a member (DEAD) is claimed by name too.
    m.state.set(system::DEAD, s.incarnation(1));
    assert_eq!(s.claim(Some(1)).unwrap(), 1);
    assert_eq!(s.incarnation(1), 3);
    assert_ne!(
        system::mailbox_segment(&name, 1, 2),
        system::mailbox_segment(&name, 1, 3)
    );
    s.leave(0);
    s.leave(1);
    assert!(!super::sys::exists(&system::segment(&name)), "left behind");
}

#[test]
fn a_stale_segment_of_a_crashed_run_is_removed_and_created_anew() {
    let name = unique("stale");
    let seg = system::segment(&name);
    // A crashed run: a member whose process is gone (pid 0 never is ours).
    {
        let s = System::open_or_create(&name, 2).unwrap();
        let r = s.claim(Some(1)).unwrap();
        s.ready(r, 4, b"x").unwrap();
        let m = &s.header().members[1];
        m.pid.store(u32::MAX - 1, crate::loom::Ordering::Relaxed);
        // Pretend the creator is gone too.
        overwrite(&seg, 2, u64::from(u32::MAX - 1));
    }
    let s = System::open_or_create(&name, 2).unwrap();
    assert_eq!(s.claim(None).unwrap(), 0, "a fresh system: rank 0 is free");
    drop(s);
    // Another layout version whose creator is alive (this process): refused.
    overwrite(&seg, 2, u64::from(std::process::id()));
    overwrite(&seg, 1, 99);
    let e = System::open_or_create(&name, 2).unwrap_err().to_string();
    assert!(e.contains("layout version 99"), "{e}");
    // The same with its creator gone: cleaned, never reused.
    overwrite(&seg, 2, u64::from(u32::MAX - 1));
    let s = System::open_or_create(&name, 2).unwrap();
    assert_eq!(s.claim(None).unwrap(), 0);
    drop(s);
    // Not a tutti segment at all: refused, left alone.
    overwrite(&seg, 0, 0xdead_beef);
    let e = System::open_or_create(&name, 2).unwrap_err().to_string();
    assert!(e.contains("not a tutti system"), "{e}");
    super::sys::unlink(&seg).unwrap();
    let e = System::open_or_create("bad/name", 2).unwrap_err();
    assert!(matches!(
        e,
        WorldError::BadSetting {
            var: "TUTTI_SYSTEM",
            ..
        }
    ));
}

/// Systems `X` and `X.0` are independent: creating `X` (fresh) leaves the
/// live system `X.0` alone, and neither's segments are the other's mailboxes.
#[test]
fn distinct_names_are_independent() {
    let x = unique("names");
    let x0 = format!("{x}.0");
    let other = System::open_or_create(&x0, 1).unwrap();
    assert_eq!(other.claim(None).unwrap(), 0);
    other.ready(0, 1, b"x.0").unwrap();
    let _mailbox = system::MailboxMap::create(&x0, 0, 1).unwrap();
    let s = System::open_or_create(&x, 1).unwrap();
    assert_eq!(s.claim(None).unwrap(), 0);
    let _mine = system::MailboxMap::create(&x, 0, 1).unwrap();
    assert!(
        super::sys::exists(&system::segment(&x0)),
        "X.0 removed by X's start-up"
    );
    assert_eq!(other.digest(0).unwrap(), b"x.0");
    let again = System::open_or_create(&x0, 1).unwrap();
    assert_eq!(
        again.digest(0).unwrap(),
        b"x.0",
        "X.0 is the same live system"
    );
    assert_ne!(system::mailbox_segment(&x, 0, 1), system::segment(&x0));
    s.leave(0);
    other.leave(0);
    for seg in [system::segment(&x), system::segment(&x0)] {
        assert!(!super::sys::exists(&seg), "{seg} left behind");
    }
}

/// Writes word `i` of segment `seg` through the file system.
fn overwrite(seg: &str, i: usize, value: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/dev/shm{seg}"))
        .unwrap();
    f.seek(SeekFrom::Start(8 * i as u64)).unwrap();
    f.write_all(&value.to_le_bytes()).unwrap();
}

/// A producer preempted between reading `tail` and reading its slot's
/// sequence, while other producers and the consumer go round the ring one
/// or more times: its position is stale, the ring is not corrupt; it
/// publishes at the next free position and nothing is lost or reordered.
#[test]
fn a_producer_preempted_while_the_ring_laps_it_is_not_corruption() {
    let ring = Ring::<4, 8>::boxed();
    let mut out = Vec::new();
    let mut pos = 0u64;
    for laps in [1u64, 2, 3, 7] {
        // The slow producer (rank 2) reads `tail`, then is preempted...
        let stale = pos;
        // ...while rank 1 and the consumer go round `laps` times, and rank 1
        // leaves one fragment unread in the slot the slow producer looks at.
        for i in 0..laps * 4 + 1 {
            assert_eq!(ring.push(1, FIRST | LAST, &[i as u8]).unwrap(), Push::Done);
            if i < laps * 4 {
                out.clear();
                let f = ring.pop(&mut out, 3).unwrap().unwrap();
                assert_eq!((f.from, out.as_slice()), (1, &[i as u8][..]));
            }
        }
        pos += laps * 4 + 1;
        let pushed = ring
            .push_after_reading(2, FIRST | LAST, &[0xee], stale)
            .unwrap_or_else(|e| panic!("after {laps} lap(s): {e}"));
        assert_eq!(pushed, Push::Done);
        pos += 1;
        out.clear();
        let f = ring.pop(&mut out, 3).unwrap().unwrap();
        assert_eq!((f.from, out.as_slice()), (1, &[(laps * 4) as u8][..]));
        out.clear();
        let f = ring.pop(&mut out, 3).unwrap().unwrap();
        assert_eq!((f.from, out.as_slice()), (2, &[0xee][..]));
        assert!(ring.pop(&mut out, 3).unwrap().is_none());
    }
}

/// Many producers on a small ring, preempted at will by the OS (more
/// threads than cores): every fragment arrives once, each producer's in
/// order, and no producer takes its stale view of the ring for corruption.
#[test]
fn producers_racing_on_a_small_ring_lose_nothing() {
    use std::sync::Arc;
    const PRODUCERS: usize = 6;
    const EACH: u32 = 20_000;
    let ring: Arc<Ring<4, 8>> = Arc::from(Ring::<4, 8>::boxed());
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|from| {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                for i in 0..EACH {
                    while ring.push(from, FIRST | LAST, &i.to_le_bytes()).unwrap() == Push::Full {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let mut next = [0u32; PRODUCERS];
    let mut out = Vec::new();
    let mut got = 0;
    while got < PRODUCERS * EACH as usize {
        out.clear();
        match ring.pop(&mut out, PRODUCERS).unwrap() {
            Some(f) => {
                let i = u32::from_le_bytes(out[..4].try_into().unwrap());
                assert_eq!(i, next[f.from], "producer {}'s order", f.from);
                next[f.from] += 1;
                got += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    for p in producers {
        p.join().unwrap();
    }
}
