//! A named system: the segment `/tutti-<name>` that the first process creates
//! and later ones join, and the members' mailboxes
//! `/tutti-<name>+<rank>.<incarnation>` (`+` is not allowed in names, so no
//! system's segment is another's mailbox: system `X.0` and the mailbox of rank
//! 0 of `X` are different segments).
//!
//! # Incarnations
//!
//! A rank whose process died can be taken again by a new process: its
//! *incarnation* (a generation number, 1 for the first process of a rank) then
//! grows by one, and the new process has a mailbox of its own (the name carries
//! the incarnation), so nothing written to the dead one reaches it. Claiming
//! goes FREE → JOINING for a rank never taken, and for a dead one (state DEAD,
//! or a process that is gone) through DEAD → CLAIMING → JOINING: both are
//! compare-exchanges of the state word, so one claimer wins; the winner bumps
//! the incarnation before it publishes JOINING. A member that buries a rank
//! (marks it DEAD) does so only while the incarnation is the one it knew, so a
//! new incarnation is never buried for its predecessor. Each member records in
//! `seen` the incarnation of every other rank it has taken in (its old frames
//! all read, its new mailbox mapped): a new incarnation starts only once every
//! live member has seen it (`engine`).
//!
//! The system segment holds a header (magic, layout version, the creator's pid
//! and start time, the system's size, an abort word) and one member entry per
//! rank (state, pid, start time, heartbeat, locations, registry digest). Every
//! field is an atomic, so a process reading a segment another one scribbled on
//! reads wrong numbers, never undefined behaviour. The first four words keep
//! their place in every version, so a segment of another version is still
//! recognised, and its creator's liveness decides between "refuse" (alive) and
//! "clean up" (a crashed earlier run).

use std::io;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::ring::Ring;
use super::sys::{self, Mapping, Opened};
use crate::loom::{AtomicU32, AtomicU64, Ordering};
use crate::world::error::WorldError;

/// "tuttiSHM": the first word of an initialized system segment.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"tuttiSHM");
/// The layout version of the segments this build reads and writes.
pub(crate) const VERSION: u64 = 7;
/// Most members a system has.
pub(crate) const MAX_MEMBERS: usize = 64;
/// Slots per mailbox.
pub(crate) const SLOTS: usize = 256;
/// Bytes per slot (a slot, with its line of control words, is 4 KiB).
pub(crate) const SLOT_BYTES: usize = 4096 - 64;
/// Words of a member's registry digest (8 KiB).
const DIGEST_WORDS: usize = 1024;

/// What a member's [`Member::probe`] points to: a word the others read
/// with cross-memory attach to learn whether they may.
pub(crate) static CMA_PROBE: u64 = u64::from_le_bytes(*b"tuttiCMA");

/// A member's mailbox.
pub(crate) type Mailbox = Ring<SLOTS, SLOT_BYTES>;

pub(crate) use super::member::{StateWord, CLAIMING, DEAD, FREE, JOINING, LEAVING, LEFT, READY};

/// One member's entry.
#[repr(C)]
pub(crate) struct Member {
    /// The state, tagged with the incarnation it belongs to (`member.rs`).
    pub(crate) state: StateWord,
    pub(crate) pid: AtomicU32,
    pub(crate) start: AtomicU64,
    /// Milliseconds since the Unix epoch of the member's last sign of life.
    pub(crate) heartbeat: AtomicU64,
    pub(crate) per_rank: AtomicU64,
    /// The rank's incarnation: 0 never taken, 1 for its first process, one
    /// more for each process that took it after the previous one died.
    pub(crate) incarnation: AtomicU64,
    /// `seen[r]`: the incarnation of rank `r` this member has taken in.
    pub(crate) seen: [AtomicU64; MAX_MEMBERS],
    /// The address in this member's process of [`CMA_PROBE`], which the
    /// others read at start-up to learn whether the kernel lets them read
    /// this process's memory (cross-memory attach).
    pub(crate) probe: AtomicU64,
    /// Bit `r`: this member reads large bodies from member `r`'s memory
    /// itself (its probe of `r` succeeded and no read failed since).
    pub(crate) reads: AtomicU64,
    /// `copied[r]`: `seq << 1 | refused` of the last large body member `r`
    /// lent this member (`engine`): copied (or refused) and done with, so
    /// `r` may reuse its memory.
    pub(crate) copied: [AtomicU64; MAX_MEMBERS],
    digest_len: AtomicU64,
    digest: [AtomicU64; DIGEST_WORDS],
}

/// The system segment's layout.
#[repr(C)]
pub(crate) struct Header {
    // The first four words are the same in every version.
    magic: AtomicU64,
    version: AtomicU64,
    creator_pid: AtomicU64,
    creator_start: AtomicU64,
    /// Processes (ranks) in the system.
    pub(crate) ranks: AtomicU64,
    /// 0, or 1 + the rank that took the system down.
    pub(crate) abort: AtomicU64,
    abort_text: [AtomicU64; 32],
    /// Set by the member that removes the segments at the end.
    closing: AtomicU32,
    pub(crate) members: [Member; MAX_MEMBERS],
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn write_bytes(words: &[AtomicU64], len: &AtomicU64, bytes: &[u8]) {
    for (w, chunk) in words.iter().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        w.store(u64::from_le_bytes(b), Ordering::Relaxed);
    }
    len.store(bytes.len() as u64, Ordering::Release);
}

fn read_bytes(words: &[AtomicU64], len: &AtomicU64) -> Option<Vec<u8>> {
    let n = len.load(Ordering::Acquire) as usize;
    if n > words.len() * 8 {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    for w in words {
        if out.len() >= n {
            break;
        }
        let b = w.load(Ordering::Relaxed).to_le_bytes();
        out.extend_from_slice(&b[..(n - out.len()).min(8)]);
    }
    Some(out)
}

/// The system segment, mapped.
pub(crate) struct System {
    pub(crate) name: String,
    map: Mapping,
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("System")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The segment name of system `name`.
pub(crate) fn segment(name: &str) -> String {
    format!("/tutti-{name}")
}

/// The segment name of the mailbox of incarnation `incarnation` of member
/// `rank` (`+` never occurs in a system's name: see [`check_name`]).
pub(crate) fn mailbox_segment(name: &str, rank: usize, incarnation: u64) -> String {
    format!("/tutti-{name}+{rank}.{incarnation}")
}

/// Checks a system name: letters, digits, `-`, `_`, `.`; 1 to 200 characters.
pub(crate) fn check_name(name: &str) -> Result<(), WorldError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(WorldError::BadSetting {
            var: "TUTTI_SYSTEM",
            value: name.into(),
            expected: "a name of 1 to 200 letters, digits, '-', '_' or '.'",
        })
    }
}

fn fail(why: String) -> WorldError {
    WorldError::Transport(why)
}

/// How long a joiner waits for a creator to finish setting a segment up.
const SETUP_GRACE: Duration = Duration::from_secs(5);

impl System {
    /// The header (the mapping is at least a header long, checked at open).
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the mapping is page aligned and at least
        // `size_of::<Header>()` bytes (checked in `open_or_create`); every
        // field is an atomic, for which any bit pattern (zero-filled by
        // ftruncate, or written by another process) is a valid value; the
        // reference borrows `self`, which owns the mapping.
        unsafe { &*self.map.ptr().cast::<Header>() }
    }

    /// Creates system `name` of `ranks` processes, or joins it if it exists
    /// and is alive. A segment of a crashed earlier run (its creator and
    /// every member gone), of another layout version whose creator is gone,
    /// or left half set up, is removed (and said so) and created anew; a
    /// live system of another version is refused.
    pub(crate) fn open_or_create(name: &str, ranks: usize) -> Result<System, WorldError> {
        check_name(name)?;
        if ranks == 0 || ranks > MAX_MEMBERS {
            return Err(WorldError::BadSetting {
                var: "TUTTI_RANKS",
                value: ranks.to_string(),
                expected: "a number of processes from 1 to 64",
            });
        }
        let seg = segment(name);
        let len = std::mem::size_of::<Header>();
        let io = |e: io::Error| fail(format!("shared-memory segment {seg}: {e}"));
        let started = Instant::now();
        let mut attempts = 0;
        while attempts < 4 {
            attempts += 1;
            match sys::open(&seg, len, true).map_err(io)? {
                Opened::Created(map) => {
                    let s = System {
                        name: name.into(),
                        map,
                    };
                    let h = s.header();
                    let me = sys::pid();
                    h.version.store(VERSION, Ordering::Relaxed);
                    h.creator_pid.store(me as u64, Ordering::Relaxed);
                    h.creator_start
                        .store(sys::start_time(me).map_or(0, |(t, _)| t), Ordering::Relaxed);
                    h.ranks.store(ranks as u64, Ordering::Relaxed);
                    h.magic.store(MAGIC, Ordering::Release);
                    return Ok(s);
                }
                Opened::Existing(map) if map.len() < 32 && started.elapsed() < SETUP_GRACE => {
                    // Its creator has not sized it yet: look again.
                    drop(map);
                    attempts -= 1;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Opened::Existing(map) => {
                    let s = System {
                        name: name.into(),
                        map,
                    };
                    match s.judge(len) {
                        Verdict::Live => {
                            let h = s.header();
                            let theirs = h.ranks.load(Ordering::Relaxed) as usize;
                            if theirs != ranks {
                                return Err(fail(format!(
                                    "system {name:?} has {theirs} processes; this one was \
                                     started for {ranks} (set TUTTI_RANKS alike everywhere)"
                                )));
                            }
                            return Ok(s);
                        }
                        Verdict::Refuse(why) => return Err(fail(why)),
                        Verdict::Stale(_) => s.remove_if_stale(len).map_err(io)?,
                    }
                }
            }
        }
        Err(fail(format!(
            "system {name:?}: the segment {seg} kept being replaced while starting"
        )))
    }

    /// Removes this stale segment and its members' mailboxes, unless
    /// another process did first (and maybe created the system anew): the
    /// check and the removal happen under the segment's lock, and only if
    /// the name still names this segment. Whoever removes says so.
    fn remove_if_stale(&self, len: usize) -> io::Result<()> {
        let seg = segment(&self.name);
        let Some(_lock) = sys::lock_segment(&seg, self.map.id())? else {
            return Ok(());
        };
        let Verdict::Stale(why) = self.judge(len) else {
            return Ok(());
        };
        test_pause();
        crate::world::say(&format!(
            "system {:?}: removing the stale segment {seg} ({why})",
            self.name
        ));
        // Its members are gone (that is what stale means): their mailboxes
        // go too, before the segment, so that none outlives it to be taken
        // for a new system's. Only a segment of this layout says how many.
        if self.map.len() >= len && self.header().version.load(Ordering::Relaxed) == VERSION {
            self.unlink_mailboxes();
        }
        sys::unlink(&seg).or_else(|e| match e.kind() {
            io::ErrorKind::NotFound => Ok(()),
            _ => Err(e),
        })
    }

    /// What an existing segment is.
    fn judge(&self, len: usize) -> Verdict {
        let deadline = Instant::now() + SETUP_GRACE;
        if self.map.len() < 32 {
            return Verdict::Stale(format!("{} bytes, never set up", self.map.len()));
        }
        // SAFETY: the mapping is page aligned and at least 32 bytes: the four
        // version-independent words, atomics valid for any bit pattern,
        // borrowed from `self`.
        let prefix: &[AtomicU64; 4] = unsafe { &*self.map.ptr().cast::<[AtomicU64; 4]>() };
        loop {
            let magic = prefix[0].load(Ordering::Acquire);
            if magic == MAGIC {
                break;
            }
            if magic != 0 {
                return Verdict::Refuse(format!(
                    "the segment {} is not a tutti system (first word {magic:#x}); remove it \
                     by hand if it is garbage",
                    segment(&self.name)
                ));
            }
            if Instant::now() > deadline {
                return Verdict::Stale("never initialized by its creator".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let version = prefix[1].load(Ordering::Relaxed);
        let cpid = prefix[2].load(Ordering::Relaxed) as u32;
        let cstart = prefix[3].load(Ordering::Relaxed);
        let creator_alive = sys::alive(cpid, cstart);
        if version != VERSION || self.map.len() < len {
            return if creator_alive {
                Verdict::Refuse(format!(
                    "system {:?} runs layout version {version} ({} bytes), this build speaks \
                     version {VERSION}: run the same tutti everywhere",
                    self.name,
                    self.map.len()
                ))
            } else {
                Verdict::Stale(format!(
                    "layout version {version} of a crashed run (creator pid {cpid} is gone)"
                ))
            };
        }
        let h = self.header();
        let mut anyone = creator_alive;
        let mut all_done = true;
        let mut seen = false;
        for m in h.members.iter() {
            let st = m.state.get();
            if st == FREE {
                continue;
            }
            seen = true;
            let pid = m.pid.load(Ordering::Acquire);
            // A rank just claimed, its pid not yet written, is starting.
            let alive = st == CLAIMING
                || (st == JOINING && pid == 0)
                || sys::alive(pid, m.start.load(Ordering::Relaxed));
            anyone |= alive && st != LEFT && st != DEAD;
            all_done &= st == LEFT || st == DEAD || !alive;
        }
        if h.abort.load(Ordering::Relaxed) != 0 && !anyone {
            return Verdict::Stale("a run that was taken down".into());
        }
        if anyone && !(seen && all_done) {
            Verdict::Live
        } else {
            Verdict::Stale(format!(
                "no live member; creator pid {cpid} {}",
                if creator_alive { "is alive" } else { "is gone" }
            ))
        }
    }

    /// Claims a rank: `want`, or the first free one, or else the first dead
    /// one (see *Incarnations*).
    pub(crate) fn claim(&self, want: Option<usize>) -> Result<usize, WorldError> {
        let h = self.header();
        let ranks = h.ranks.load(Ordering::Relaxed) as usize;
        let me = sys::pid();
        let take = |r: usize, from: u32| {
            let m = &h.members[r];
            let Some(incarnation) = m.state.claim(from, &m.incarnation) else {
                return false;
            };
            m.pid.store(0, Ordering::Relaxed);
            m.start
                .store(sys::start_time(me).map_or(0, |(t, _)| t), Ordering::Relaxed);
            m.pid.store(me, Ordering::Relaxed);
            // Release: a member that reads JOINING reads the new incarnation
            // and this process's details, and buries nothing for it.
            m.state.set(JOINING, incarnation);
            true
        };
        let try_one = |r: usize| take(r, FREE);
        let try_dead = |r: usize| {
            let m = &h.members[r];
            let known = m.incarnation.load(Ordering::Acquire);
            if matches!(m.state.get(), READY | LEAVING | JOINING) && self.died(r) {
                // Its process is gone: dead, whoever notices first (never a
                // newer incarnation that took the rank meanwhile).
                m.state.bury(known);
            }
            take(r, DEAD)
        };
        match want {
            Some(r) if r >= ranks => Err(WorldError::BadSetting {
                var: "TUTTI_RANK",
                value: r.to_string(),
                expected: "a rank below the system's process count",
            }),
            Some(r) => {
                if try_one(r) || try_dead(r) {
                    Ok(r)
                } else {
                    Err(fail(format!(
                        "system {:?}: rank {r} is already taken by pid {}",
                        self.name,
                        h.members[r].pid.load(Ordering::Relaxed)
                    )))
                }
            }
            None => (0..ranks)
                .find(|&r| try_one(r))
                .or_else(|| (0..ranks).find(|&r| try_dead(r)))
                .ok_or_else(|| {
                    fail(format!(
                        "system {:?} is full: all {ranks} ranks are taken",
                        self.name
                    ))
                }),
        }
    }

    /// Publishes member `rank`'s details and marks it ready.
    pub(crate) fn ready(
        &self,
        rank: usize,
        per_rank: usize,
        digest: &[u8],
    ) -> Result<(), WorldError> {
        if digest.len() > DIGEST_WORDS * 8 {
            return Err(fail(format!(
                "the message registry digest is {} bytes; a system member holds at most {}",
                digest.len(),
                DIGEST_WORDS * 8
            )));
        }
        let m = &self.header().members[rank];
        let me = sys::pid();
        m.pid.store(me, Ordering::Relaxed);
        m.start
            .store(sys::start_time(me).map_or(0, |(t, _)| t), Ordering::Relaxed);
        m.heartbeat.store(now_ms(), Ordering::Relaxed);
        m.per_rank.store(per_rank as u64, Ordering::Relaxed);
        m.probe
            .store(std::ptr::addr_of!(CMA_PROBE) as u64, Ordering::Relaxed);
        m.reads.store(0, Ordering::Relaxed);
        write_bytes(&m.digest, &m.digest_len, digest);
        m.state.set(READY, m.incarnation.load(Ordering::Relaxed));
        Ok(())
    }

    /// Member `rank`'s registry digest as published.
    pub(crate) fn digest(&self, rank: usize) -> Option<Vec<u8>> {
        let m = &self.header().members[rank];
        read_bytes(&m.digest, &m.digest_len)
    }

    /// Whether member `rank` is gone without leaving: its process exited or
    /// was killed (pid liveness and start time; a zombie counts as gone).
    pub(crate) fn died(&self, rank: usize) -> bool {
        let m = &self.header().members[rank];
        match m.state.get() {
            DEAD => true,
            READY | LEAVING | JOINING => {
                let pid = m.pid.load(Ordering::Relaxed);
                pid != 0 && !sys::alive(pid, m.start.load(Ordering::Relaxed))
            }
            _ => false,
        }
    }

    /// Takes the system down: records who and why.
    pub(crate) fn set_abort(&self, rank: usize, why: &str) {
        let h = self.header();
        let len = AtomicU64::new(0);
        let text = &why.as_bytes()[..why.len().min(h.abort_text.len() * 8 - 8)];
        write_bytes(&h.abort_text[1..], &len, text);
        h.abort_text[0].store(len.load(Ordering::Relaxed), Ordering::Relaxed);
        h.abort.store(rank as u64 + 1, Ordering::Release);
    }

    /// `Some((rank, why))` once some member took the system down.
    pub(crate) fn aborted(&self) -> Option<(usize, String)> {
        let h = self.header();
        let who = h.abort.load(Ordering::Acquire);
        if who == 0 {
            return None;
        }
        let text = read_bytes(&h.abort_text[1..], &h.abort_text[0]).unwrap_or_default();
        Some((
            who as usize - 1,
            String::from_utf8_lossy(&text).into_owned(),
        ))
    }

    /// Whether this member is the one to remove the segments at the end:
    /// every member left or died (its process is gone), and nobody else
    /// said so first.
    pub(crate) fn last_out(&self) -> bool {
        let h = self.header();
        let ranks = (h.ranks.load(Ordering::Relaxed) as usize).min(MAX_MEMBERS);
        let done =
            (0..ranks).all(|r| matches!(h.members[r].state.get(), LEFT | DEAD) || self.died(r));
        done && h
            .closing
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Member `rank` leaves for good (its world ended, or it refused to
    /// start, or the system was taken down): its mailbox goes, and if it is
    /// the last one out ([`last_out`](Self::last_out)) every member's
    /// mailbox (each left or is dead) and the system segment go too.
    pub(crate) fn leave(&self, rank: usize) {
        let h = self.header();
        let m = &h.members[rank];
        let incarnation = m.incarnation.load(Ordering::Relaxed);
        m.state.set(LEFT, incarnation);
        let _ = sys::unlink(&mailbox_segment(&self.name, rank, incarnation));
        if self.last_out() {
            self.unlink_mailboxes();
            let _ = sys::unlink(&segment(&self.name));
        }
    }

    /// Removes every member's mailboxes, of every incarnation (a dead
    /// incarnation's mailbox is removed when it is buried; this catches one
    /// whose burier died too).
    pub(crate) fn unlink_mailboxes(&self) {
        let h = self.header();
        let ranks = (h.ranks.load(Ordering::Relaxed) as usize).min(MAX_MEMBERS);
        for r in 0..ranks {
            let last = h.members[r].incarnation.load(Ordering::Relaxed);
            // Every incarnation but the last few was buried by a live member.
            for i in last.saturating_sub(4)..=last {
                let _ = sys::unlink(&mailbox_segment(&self.name, r, i));
            }
        }
    }

    /// Rank `rank`'s incarnation now.
    pub(crate) fn incarnation(&self, rank: usize) -> u64 {
        self.header().members[rank]
            .incarnation
            .load(Ordering::Acquire)
    }

    /// Member `me` has taken in incarnation `incarnation` of rank `rank`.
    pub(crate) fn set_seen(&self, me: usize, rank: usize, incarnation: u64) {
        self.header().members[me].seen[rank].store(incarnation, Ordering::Release);
    }

    /// The incarnation of rank `rank` that member `member` has taken in.
    pub(crate) fn seen(&self, member: usize, rank: usize) -> u64 {
        self.header().members[member].seen[rank].load(Ordering::Acquire)
    }
}

/// Removes what system `name` left behind (every member gone): every
/// member's mailboxes, as far as its segment tells, then the segment.
pub(crate) fn remove_all(name: &str) {
    let seg = segment(name);
    if let Ok(Opened::Existing(map)) = sys::open(&seg, 0, false) {
        let s = System {
            name: name.into(),
            map,
        };
        let whole = s.map.len() >= std::mem::size_of::<Header>();
        if whole && s.header().version.load(Ordering::Relaxed) == VERSION {
            s.unlink_mailboxes();
        }
    }
    for r in 0..MAX_MEMBERS {
        let _ = sys::unlink(&mailbox_segment(name, r, 1));
    }
    let _ = sys::unlink(&seg);
}

/// Removes the name of member `rank`'s first mailbox and, if `system`, of
/// the system's segment, while the members keep them mapped: a system whose
/// members all mapped every segment, and which will take in no new process
/// (the hybrid transport's), then leaves nothing behind however it ends.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn forget(name: &str, rank: usize, system: bool) {
    let _ = sys::unlink(&mailbox_segment(name, rank, 1));
    if system {
        let _ = sys::unlink(&segment(name));
    }
}

/// Test hook: `TUTTI_SHM_TEST_STALE_PAUSE_MS=n` pauses a process that
/// judged a segment stale for `n` ms before it removes it (a test starts
/// two such processes at once).
fn test_pause() {
    if let Some(ms) = std::env::var("TUTTI_SHM_TEST_STALE_PAUSE_MS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

enum Verdict {
    Live,
    Refuse(String),
    Stale(String),
}

/// A member's mailbox segment, mapped.
pub(crate) struct MailboxMap {
    map: Mapping,
}

impl MailboxMap {
    /// Creates this member's mailbox (exclusively; a leftover is replaced).
    pub(crate) fn create(
        system: &str,
        rank: usize,
        incarnation: u64,
    ) -> Result<MailboxMap, WorldError> {
        let seg = mailbox_segment(system, rank, incarnation);
        let len = std::mem::size_of::<Mailbox>();
        for _ in 0..2 {
            match sys::open(&seg, len, true) {
                Ok(Opened::Created(map)) => {
                    let m = MailboxMap { map };
                    m.ring().init();
                    return Ok(m);
                }
                Ok(Opened::Existing(_)) => {
                    let _ = sys::unlink(&seg);
                }
                Err(e) => return Err(fail(format!("mailbox segment {seg}: {e}"))),
            }
        }
        Err(fail(format!(
            "mailbox segment {seg} exists and cannot be replaced"
        )))
    }

    /// Maps the mailbox of incarnation `incarnation` of member `rank`.
    pub(crate) fn open(system: &str, rank: usize, incarnation: u64) -> Result<MailboxMap, String> {
        let seg = mailbox_segment(system, rank, incarnation);
        match sys::open(&seg, 0, false) {
            Ok(Opened::Existing(map)) if map.len() >= std::mem::size_of::<Mailbox>() => {
                Ok(MailboxMap { map })
            }
            Ok(Opened::Existing(map)) => Err(format!(
                "mailbox segment {seg} is {} bytes, not a mailbox of this version",
                map.len()
            )),
            Ok(Opened::Created(_)) => Err(format!("mailbox segment {seg} was created by mistake")),
            Err(e) => Err(format!("mailbox segment {seg}: {e}")),
        }
    }

    /// The ring.
    pub(crate) fn ring(&self) -> &Mailbox {
        // SAFETY: the mapping is page aligned and at least
        // `size_of::<Mailbox>()` bytes (checked when mapped); the ring's
        // control words are atomics (valid for any bit pattern) and its slot
        // bytes are only reached through the ring protocol, which checks
        // every descriptor before use; the reference borrows `self`.
        unsafe { &*self.map.ptr().cast::<Mailbox>() }
    }
}
