//! A process's membership in a network: the first 32 bytes of every process (`par`'s
//! `Process` wrapper) — its `par`, its index, its state word (read by the detector), the
//! waits it noted during its last poll — and the thread-local "current member" that CSP
//! operations consult.
//!
//! The detector keeps no registry of members: processes of a network are spawned as
//! *tagged* tasks, and the detector finds them on their runtime's live list (`runtime`'s
//! third seam). A member is identified by its address.
//!
//! # The state word
//!
//! Written by the member's own poll (`begin_poll` / `end_poll`, and `note_more` within
//! a poll), and once more when the process ends; read by the detector:
//!
//! ```text
//! bits 63..36  poll count (wrapping)
//! bits 35..4   outside epoch of the network, read by the poll's first wait judged
//!              internal at note time (valid with EPOCH_READ)
//! bit  3       EPOCH_READ
//! bit  2       UNTRACKED: the process's `par` has no network (detection was off);
//!              set at creation; such a process's polls leave the word alone
//!              (`end` stores ENDED over it)
//! bits  1..0   RUNNING | BLOCKED_CSP | BLOCKED_OTHER | ENDED
//! ```
//!
//! `BLOCKED_CSP` means: the last poll returned `Pending` after noting at least one CSP
//! wait, every noted wait was on an object internal to the network (see `home.rs`), and
//! nothing it waits on is a timer or a foreign future that noted nothing… as far as the
//! CSP layer can tell (see the module docs of `deadlock` for the limits).
//!
//! `ENDED` is final: the process completed, panicked or was dropped. It is stored under
//! the read side of the scan gate, so a detector (which holds the write side) that sees a
//! member not ended may use the member's `par` for the rest of its scan: the process
//! cannot end, and release its `par`, before the scan is over.
//!
//! # What a poll costs
//!
//! A poll of a tracked process stores the word twice (running with the next count at
//! its start, the state at its end) and the note once, and makes the process the
//! thread's current member; each wait it notes is one more store of the note (and of
//! the object of the first). Nothing else is read at the start: the outside epoch is
//! read only by a further wait of the same poll (an `Alt`'s other guards), the one
//! kind of wait judged internal when it is noted rather than when the detector looks
//! (see `network.rs`, "Outside actions").
//!
//! # A withdrawn first wait
//!
//! The detector follows the object of a member's first noted wait (`Network::check`),
//! under the scan gate, which keeps every record alive while it is held. Between scans a
//! record lives as long as an end of its object, so the detector may follow the pointer
//! only while some end is sure to be alive: the wait's future, pending in the member's
//! future, borrows one until the member is polled again (which resets the note) or ends
//! (and an ended member is not looked at). That holds for a wait still pending when the
//! poll ends. A poll may also withdraw its first wait and go on — a `select` that took
//! another branch drops the receive it polled, then drops that channel's ends (or hands
//! them away, and their holder drops them later) and blocks on something else. Such a
//! wait is forgotten where it is withdrawn (`withdrawn`: the future's drop or `cancel`,
//! an `Alt`'s abandoned round), and a record freed in the poll that noted it is
//! forgotten where it is freed (`freed`): the note loses its kind and the object, and
//! the member counts as blocked elsewhere (`BLOCKED_OTHER`) unless a later wait of the
//! poll is noted, which becomes the first. A barrier wait is never withdrawn (the party
//! stays counted), and its barrier is freed only once every party resigned, which
//! completes the phase and wakes the waiting process; a first wait that completed
//! within its poll woke the process too. A woken process is polled again, which resets
//! its note, before a detector follows it: the detector starts a scan only on a quiet
//! runtime. So the object of a member seen blocked is the wait its future still holds.
//!
//! What this does not see: a wait's future polled by the process, then moved out of it
//! (a boxed future spawned or sent elsewhere) in the same poll and finished or dropped
//! there, with the last ends of its object, while the process stays blocked. Its record
//! is then freed while the note still points to it. Nor, for a moment, a first wait
//! completed within its poll by a plain thread that has not yet called the waker,
//! whose ends the poll hands away and their holder frees.
//!
//! # The note
//!
//! `note` is reset to `NOTHING` at the start of every poll; its low two bits are the
//! state the poll ends in if it returns `Pending`, so the end of a poll copies them
//! into the word without a test:
//!
//! ```text
//! bits 31..16  waits noted this poll (saturating)
//! bits 15..8   kind of the first wait (0: none yet)
//! bit  2       OPEN: a wait on something the detector cannot see through (sticky)
//! bits 1..0    BLOCKED_CSP once a first wait was noted and nothing open;
//!              BLOCKED_OTHER before any, or once one was open
//! ```

use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::Arc;

use crate::loom::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::home::{Home, HomeInner};
use super::network::{Network, SCAN_GATE};
use crate::csp::par::Shared;
use crate::runtime::context::{self, TaskContext};

pub(crate) const RUNNING: u64 = 0;
pub(crate) const BLOCKED_CSP: u64 = 1;
pub(crate) const BLOCKED_OTHER: u64 = 2;
pub(crate) const ENDED: u64 = 3;
const STATE_MASK: u64 = 3;
/// The process belongs to no network: its polls leave the word alone.
const UNTRACKED: u64 = 1 << 2;
/// Bits 35..4 hold the epoch a further wait of the poll was judged at.
const EPOCH_READ: u64 = 1 << 3;
const EPOCH_SHIFT: u32 = 4;
const POLL_SHIFT: u32 = 36;
/// Everything below the poll count.
const BELOW_POLLS: u64 = (1 << POLL_SHIFT) - 1;

/// `note` at the start of a poll: nothing noted (a `Pending` then blocks on something
/// the CSP layer did not see).
const NOTHING: u32 = BLOCKED_OTHER as u32;
/// `note` bit: a noted wait was on something outside the network (or a timer).
const OPEN: u32 = 1 << 2;
const KIND_SHIFT: u32 = 8;
const KIND_MASK: u32 = 0xff << KIND_SHIFT;
const COUNT_SHIFT: u32 = 16;

/// What a member waits on (the first wait it noted in its last poll).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Sending on a channel.
    Send = 1,
    /// Receiving from a channel.
    Recv = 2,
    /// An `Alt` guard receiving from a channel.
    AltRecv = 3,
    /// Syncing at a barrier.
    Barrier = 4,
    /// Waiting for the processes of a nested `par`.
    Par = 5,
    /// An `Alt` guard sending on a channel.
    AltSend = 6,
}

impl Wait {
    fn from_bits(b: u32) -> Option<Wait> {
        Some(match b {
            1 => Wait::Send,
            2 => Wait::Recv,
            3 => Wait::AltRecv,
            4 => Wait::Barrier,
            5 => Wait::Par,
            6 => Wait::AltSend,
            _ => return None,
        })
    }
}

/// The detector's part of a process, first in every `Process` (see the module docs).
#[repr(C)]
pub(crate) struct Member {
    /// The `par` that started the process (through it, the network and the names);
    /// released when the process is dropped.
    par: ManuallyDrop<crate::csp::Arc<Shared>>,
    /// See the module docs.
    word: AtomicU64,
    /// The object of the first wait noted in the last poll.
    object: AtomicPtr<HomeInner>,
    /// The note of the current / last poll (see the module docs).
    note: AtomicU32,
    /// The process's index in its `par`.
    index: u32,
}

/// A consistent-enough view of a member for one collect of the detector.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) word: u64,
}

impl Snapshot {
    pub(crate) fn state(self) -> u64 {
        self.word & STATE_MASK
    }

    /// The outside epoch a further wait of the poll was judged internal at, if one was.
    pub(crate) fn epoch_read(self) -> Option<u32> {
        (self.word & EPOCH_READ != 0).then_some((self.word >> EPOCH_SHIFT) as u32)
    }
}

/// The tag of a task context that points to a `Member` (`runtime/context.rs`).
static MEMBER_TAG: u8 = 0;

impl Member {
    /// Process `index` of the `par` behind `par`.
    ///
    /// # Panics
    /// If a `par` has more than 2^32 processes.
    pub(crate) fn new(par: crate::csp::Arc<Shared>, index: usize) -> Member {
        let word = if par.net.is_some() {
            RUNNING
        } else {
            UNTRACKED
        };
        Member {
            par: ManuallyDrop::new(par),
            word: AtomicU64::new(word),
            object: AtomicPtr::new(ptr::null_mut()),
            note: AtomicU32::new(NOTHING),
            index: u32::try_from(index)
                .expect("tutti::csp::par: more than 2^32 processes in one par"),
        }
    }

    /// The `par` that started the process.
    #[inline]
    pub(crate) fn par(&self) -> &Shared {
        &self.par
    }

    /// The process's index in its `par`.
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index as usize
    }

    /// The network the process belongs to, if deadlock detection is on for it.
    #[inline]
    fn net(&self) -> Option<&Arc<Network>> {
        self.par.net.as_ref()
    }

    /// Starts a poll of the member's future: if the process belongs to a network, marks
    /// it running (with the next poll count) and makes it the thread's current member,
    /// and returns true (then [`end_poll`](Self::end_poll) follows the poll); else does
    /// nothing and returns false.
    #[inline]
    pub(crate) fn begin_poll(&self) -> bool {
        let word = self.word.load(Ordering::Relaxed);
        if word & UNTRACKED != 0 {
            return false;
        }
        // The next count; below it all zero: running, no epoch read yet.
        let running = (word | BELOW_POLLS).wrapping_add(1);
        self.word.store(running, Ordering::Relaxed);
        // Release: a detector that reads this reset (Acquire) then sees `running` too.
        self.note.store(NOTHING, Ordering::Release);
        // A process is always the top future of its task, and `runtime::task` polls every
        // task with the context empty (it empties it around a nested one), so there is no
        // host context to keep: `end_poll` empties it again. (Unused in release builds,
        // the old value is never loaded.)
        let host = context::replace_task_context(TaskContext {
            tag: &MEMBER_TAG,
            data: (self as *const Member).cast(),
        });
        debug_assert!(
            host.tag.is_null(),
            "tutti: a process polled inside another context"
        );
        true
    }

    /// Ends a poll begun with [`begin_poll`](Self::begin_poll) (which returned true).
    /// `pending`: the future returned `Pending`.
    #[inline]
    pub(crate) fn end_poll(&self, pending: bool) {
        context::replace_task_context(TaskContext::NONE);
        if pending {
            // The note's low bits are the state (module docs); the word's are zero
            // (running) since `begin_poll`, which `note_more` keeps.
            let state = u64::from(self.note.load(Ordering::Relaxed)) & STATE_MASK;
            let word = self.word.load(Ordering::Relaxed);
            // Release: the notes of this poll happen-before a detector's Acquire read.
            self.word.store(word | state, Ordering::Release);
        }
    }

    /// Marks the process ended (under the scan gate's read side, see the module docs);
    /// false if it was already.
    pub(crate) fn end(&self) -> bool {
        if self.state() == ENDED {
            return false;
        }
        if self.net().is_some() {
            let _gate = SCAN_GATE.read().unwrap_or_else(|e| e.into_inner());
            self.word.store(ENDED, Ordering::Release);
        } else {
            self.word.store(ENDED, Ordering::Relaxed);
        }
        true
    }

    #[inline]
    fn state(&self) -> u64 {
        self.word.load(Ordering::Relaxed) & STATE_MASK
    }

    /// The detector's read of the state word.
    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            word: self.word.load(Ordering::Acquire),
        }
    }

    /// Whether this member belongs to `net`. For the detector, holding the scan gate,
    /// after it saw the member not ended (so its `par` is alive).
    pub(crate) fn is_in(&self, net: &Network) -> bool {
        self.net().is_some_and(|n| ptr::eq(Arc::as_ptr(n), net))
    }

    /// The first wait noted in the member's last poll, and how many it noted.
    /// Meaningful only while a detector holds the scan gate and has seen the member
    /// blocked (the object is then kept alive by the member's pending future; see
    /// "A withdrawn first wait" in the module docs).
    ///
    /// Both are read with Acquire, and every store of them is Release: a value written by
    /// a poll after the one whose word the detector read brings that poll's running word
    /// with it, so the detector's second read of the word differs and the collect fails.
    pub(crate) fn wait(&self) -> (Option<Wait>, u32, *const HomeInner) {
        let note = self.note.load(Ordering::Acquire);
        let kind = Wait::from_bits((note >> KIND_SHIFT) & 0xff);
        (
            kind,
            note >> COUNT_SHIFT,
            self.object.load(Ordering::Acquire),
        )
    }

    /// The member's id: its address.
    #[inline]
    pub(crate) fn id(&self) -> usize {
        self as *const Member as usize
    }

    /// Notes a wait of the current poll (see the module docs, "The note"): the first
    /// one's kind and object are kept; `open` marks the poll open for good.
    fn add_note(&self, wait: Wait, object: Option<&HomeInner>, open: bool) {
        let note = self.note.load(Ordering::Relaxed);
        let count = (note >> COUNT_SHIFT).saturating_add(1).min(0xffff);
        let mut new = (note & !(0xffff << COUNT_SHIFT)) | (count << COUNT_SHIFT);
        if note & KIND_MASK == 0 {
            new |= (wait as u32) << KIND_SHIFT;
            self.object.store(
                object.map_or(ptr::null_mut(), |h| (h as *const HomeInner).cast_mut()),
                Ordering::Release,
            );
        }
        if open {
            new |= OPEN;
        }
        let state = if new & OPEN != 0 {
            BLOCKED_OTHER
        } else {
            BLOCKED_CSP
        };
        self.note.store(
            (new & !(STATE_MASK as u32)) | state as u32,
            Ordering::Release,
        );
    }

    /// Forgets the first wait noted in the current poll if it is on `object` (see the
    /// module docs, "A withdrawn first wait"): no object is kept, and the poll is not
    /// blocked inside the network unless it notes another wait, which is then the first
    /// (judged when noted, by `note_more`). The count and `OPEN` stay.
    fn forget(&self, object: &HomeInner) {
        let note = self.note.load(Ordering::Relaxed);
        if note & KIND_MASK == 0 || !ptr::eq(self.object.load(Ordering::Relaxed), object) {
            return;
        }
        self.object.store(ptr::null_mut(), Ordering::Release);
        let rest = note & !(KIND_MASK | STATE_MASK as u32);
        self.note
            .store(rest | BLOCKED_OTHER as u32, Ordering::Release);
    }

    /// A further wait of the current poll is judged internal to `net` now (not when the
    /// detector looks, as the first is): the word keeps the outside epoch read before
    /// that judgement, the first such of the poll (see `network.rs`, "Outside actions").
    fn keep_epoch(&self, epoch: u32) {
        let word = self.word.load(Ordering::Relaxed);
        if word & EPOCH_READ == 0 {
            let epoch = u64::from(epoch) << EPOCH_SHIFT;
            self.word
                .store(word | epoch | EPOCH_READ, Ordering::Relaxed);
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        // The process has ended (`Process` ends it before dropping it).
        debug_assert_eq!(self.state(), ENDED);
        // SAFETY: dropped once, here, after the member ended (nobody reads `par` any more:
        // a detector skips ended members).
        unsafe { ManuallyDrop::drop(&mut self.par) };
    }
}

/// The member being polled on this thread, if any.
#[inline]
fn current() -> Option<&'static Member> {
    let cx = context::task_context();
    if !ptr::eq(cx.tag, &MEMBER_TAG) {
        return None;
    }
    // SAFETY: a context tagged `MEMBER_TAG` is set by `begin_poll` to its own `Member`
    // only for the duration of that poll, during which the member (pinned inside its
    // task) is alive; the scheduler clears the context around nested tasks. The 'static
    // lifetime never escapes: callers use the reference only within the current call.
    Some(unsafe { &*cx.data.cast::<Member>() })
}

/// A wait of the calling context on `home`'s object is withdrawn before it completed (its
/// future dropped or cancelled, its `Alt` abandoned): if the
/// member being polled noted it as the first wait of this poll, that note is forgotten
/// (see the module docs, "A withdrawn first wait"). Cold: called on withdrawal only.
#[cold]
pub(crate) fn withdrawn(home: &Home) {
    if let (Some(m), Some(h)) = (current(), home.get()) {
        m.forget(h);
    }
}

/// `object`'s record is being freed: if the member being polled noted it as the first
/// wait of this poll (a wait that completed in the poll, whose channel the poll then
/// dropped), that note is forgotten. From `HomeInner`'s drop.
pub(crate) fn freed(object: &HomeInner) {
    if let Some(m) = current() {
        m.forget(object);
    }
}

/// The member being polled on this thread, if any: its network, `par` and index.
pub(crate) fn current_process() -> Option<(Arc<Network>, crate::csp::Arc<Shared>, usize)> {
    let m = current()?;
    let net = m.net()?;
    Some((Arc::clone(net), crate::csp::Arc::clone(&m.par), m.index()))
}

/// The network of the member being polled on this thread, if any.
pub(crate) fn current_network() -> Option<Arc<Network>> {
    current().and_then(|m| m.net().cloned())
}

/// The id of the calling context if it is a member of `net`.
#[inline]
pub(crate) fn current_id_in(net: &Network) -> Option<usize> {
    current().filter(|m| m.is_in(net)).map(Member::id)
}

/// A CSP operation is about to return `Pending`: note what the current member (if any)
/// waits on. The first wait of a poll is only recorded (the detector checks its object
/// when it looks, see `Network::check`); further ones (an `Alt`'s other guards) are
/// checked now.
#[inline]
pub(crate) fn note(wait: Wait, home: &Home) {
    note_from(wait, home, None);
}

/// [`note`] for a receive, with the node that alone sends on the channel, if one does
/// (`sender.rs`): an actor or location waiting there waits for that node.
#[inline]
pub(crate) fn note_from(wait: Wait, home: &Home, sender: Option<u64>) {
    let Some(m) = current() else {
        // Not a process: an actor or location (a node of `diag`) may be polled. (Out of
        // line: a channel operation's own code stays small where no node is polled.)
        if crate::diag::node::polling() {
            note_on_node(wait, home, sender);
        }
        return;
    };
    // A member is current only inside a poll that `Process::poll` tracks, which it does
    // only for a `par` with a network: no need to look at the network here.
    debug_assert!(m.net().is_some(), "tutti: an untracked process is current");
    let note = m.note.load(Ordering::Relaxed);
    if note == NOTHING {
        // The first wait of the poll (the common case): judged when the detector
        // looks (`Network::check`), so no epoch is read here.
        let object = home.get();
        // Release, as every store of the note and the object: a detector that reads one
        // of a later poll (Acquire) also sees that poll's running word, so its double
        // collect fails (see `wait`). (A plain store on x86.)
        m.object.store(
            object.map_or(ptr::null_mut(), |h| (h as *const HomeInner).cast_mut()),
            Ordering::Release,
        );
        let (open, state) = match object {
            Some(_) => (0, BLOCKED_CSP as u32),
            None => (OPEN, BLOCKED_OTHER as u32),
        };
        let first = ((wait as u32) << KIND_SHIFT) | (1 << COUNT_SHIFT) | open | state;
        m.note.store(first, Ordering::Release);
    } else {
        note_more(m, wait, home);
    }
}

/// Notes a wait of the actor or location being polled (outside every network).
#[cold]
#[inline(never)]
fn note_on_node(wait: Wait, home: &Home, sender: Option<u64>) {
    crate::diag::node::note(|| off_network(wait, home, sender), None);
}

/// What a wait outside every network (on an actor or location) is, for `diag`.
#[cold]
fn off_network(wait: Wait, home: &Home, sender: Option<u64>) -> crate::diag::node::Wait {
    let (what, object) = match wait {
        Wait::Send => ("to send on", "channel"),
        Wait::Recv => ("to receive from", "channel"),
        Wait::AltRecv => ("in an ALT to receive from", "channel"),
        Wait::AltSend => ("in an ALT to send on", "channel"),
        Wait::Barrier => ("at", "barrier"),
        Wait::Par => ("for its PAR to end", ""),
    };
    let target = match home.name() {
        Some(n) => format!(" {object} `{n}`"),
        None if object.is_empty() => String::new(),
        None => format!(" a {object}"),
    };
    let (on, from) = match sender {
        Some(id) => (
            crate::diag::node::On::Node(id),
            format!(", which only `{}` sends on", crate::diag::node::name_of(id)),
        ),
        None => (crate::diag::node::On::Unknown, String::new()),
    };
    crate::diag::node::Wait {
        on,
        what: crate::diag::node::What::Owned(format!("waits {what}{target}{from}")),
    }
}

#[inline(never)]
fn note_more(m: &Member, wait: Wait, home: &Home) {
    let Some(net) = m.net() else { return };
    // The epoch before the object's outside flag: an outside action that sets the flag
    // after we read it moves the epoch after this read (see `network.rs`).
    let epoch = net.outside_epoch();
    let open = !home.get().is_some_and(|h| h.is_internal_to(net));
    if !open {
        m.keep_epoch(epoch);
    }
    m.add_note(wait, home.get(), open);
}

/// The current member waits for a nested `par` of the same network.
pub(crate) fn note_par() {
    if let Some(m) = current() {
        m.add_note(Wait::Par, None, false);
    }
}

/// The current member waits on something the detector cannot see through (a timer).
pub(crate) fn note_open() {
    if let Some(m) = current() {
        let note = m.note.load(Ordering::Relaxed);
        let open = (note & !(STATE_MASK as u32)) | OPEN | BLOCKED_OTHER as u32;
        m.note.store(open, Ordering::Release);
    }
}

/// Loom models of the member's state word on its real code: the detector's
/// double collect, a withdrawn first wait it must not follow, `ENDED` stored
/// under the scan gate, and the epoch a further wait records against an outside
/// action.
#[cfg(all(test, loom))]
mod loom_tests {
    use std::sync::Arc as StdArc;

    use super::{note_more, Member, Wait, BLOCKED_CSP, ENDED, POLL_SHIFT};
    use crate::csp::deadlock::home::Home;
    use crate::csp::deadlock::network::{Network, SCAN_GATE};
    use crate::csp::par::Shared;
    use crate::loom::{thread, Arc, AtomicBool, Ordering};

    fn member(net: Option<StdArc<Network>>) -> Arc<Member> {
        Arc::new(Member::new(crate::csp::Arc::new(Shared::new(net, None)), 0))
    }

    /// The process polls twice, noting a receive and then a send, each poll
    /// ending blocked; the detector reads the word, the wait, and the word
    /// again. Two equal reads of a blocked word mean the wait read between
    /// them is the one noted in the poll that wrote that word.
    #[test]
    fn a_double_collect_reads_the_waits_of_the_poll_it_saw() {
        loom::model(|| {
            let m = member(Some(Network::for_model()));
            let polled = Arc::new(AtomicBool::new(false));
            let process = {
                let (m, polled) = (Arc::clone(&m), Arc::clone(&polled));
                thread::spawn(move || {
                    for wait in [Wait::Recv, Wait::Send] {
                        assert!(m.begin_poll());
                        m.add_note(wait, None, false);
                        m.end_poll(true);
                        polled.store(true, Ordering::Release);
                    }
                    m.end();
                })
            };
            // Once the first poll is over (left to itself, loom had the detector read
            // the word only before it, so the check below never ran). Fails with the
            // note's stores Relaxed: the detector then reads the second poll's wait
            // between two reads of the first poll's word.
            while !polled.load(Ordering::Acquire) {
                thread::yield_now();
            }
            let first = m.snapshot();
            let (kind, count, _) = m.wait();
            let second = m.snapshot();
            if first == second && first.state() == BLOCKED_CSP {
                let poll = first.word >> POLL_SHIFT;
                let noted = if poll == 1 { Wait::Recv } else { Wait::Send };
                assert_eq!(kind, Some(noted), "poll {poll}: another poll's wait");
                assert_eq!(count, 1);
            }
            process.join().unwrap();
        });
    }

    /// A poll notes a first wait on `a`, withdraws it (forgotten) and notes a
    /// further wait on `b`; the next poll notes a first wait on `c` and withdraws
    /// it, noting nothing else. A detector whose double collect accepts the member
    /// as blocked inside never reads `a`: a poll's withdrawn first wait, whose
    /// record may be freed before the next scan, is never the object it follows.
    /// (It may read `c`, written during its collect: a record is freed only under
    /// the scan gate's read side, so not during a scan.) Fails with `forget` made
    /// a no-op (the detector then follows `a` after the first poll).
    #[test]
    fn a_withdrawn_first_wait_is_not_followed() {
        loom::model(|| {
            let net = Network::for_model();
            let m = member(Some(StdArc::clone(&net)));
            let home = || StdArc::new(Home::for_model(StdArc::clone(&net)));
            let (a, b, c) = (home(), home(), home());
            let polled = Arc::new(AtomicBool::new(false));
            let process = {
                let (m, a, b, c) = (Arc::clone(&m), a.clone(), b.clone(), c.clone());
                let polled = Arc::clone(&polled);
                thread::spawn(move || {
                    assert!(m.begin_poll());
                    m.add_note(Wait::Recv, a.get(), false);
                    m.forget(a.get().unwrap());
                    note_more(&m, Wait::Send, &b);
                    m.end_poll(true);
                    polled.store(true, Ordering::Release);
                    assert!(m.begin_poll());
                    m.add_note(Wait::Recv, c.get(), false);
                    m.forget(c.get().unwrap());
                    m.end_poll(true);
                })
            };
            // The detector looks once the first poll is over (a scan starting
            // earlier sees a running member).
            while !polled.load(Ordering::Acquire) {
                thread::yield_now();
            }
            let first = m.snapshot();
            let (_, _, object) = m.wait();
            let second = m.snapshot();
            if first == second && first.state() == BLOCKED_CSP {
                assert!(
                    !std::ptr::eq(object, a.get().unwrap()),
                    "a withdrawn first wait was followed"
                );
            }
            process.join().unwrap();
        });
    }

    /// A detector that holds the scan gate and sees the member not ended may
    /// use its `par` until it lets the gate go: the process cannot finish
    /// ending (and free its `par`) before then.
    #[test]
    fn a_member_seen_alive_under_the_gate_stays_alive() {
        loom::model(|| {
            let m = member(Some(Network::for_model()));
            let ended = Arc::new(AtomicBool::new(false));
            let process = {
                let (m, ended) = (Arc::clone(&m), Arc::clone(&ended));
                thread::spawn(move || {
                    assert!(m.end());
                    ended.store(true, Ordering::Release);
                })
            };
            {
                let _gate = SCAN_GATE.write().unwrap();
                if m.snapshot().state() != ENDED {
                    // The scan goes on, using the member's `par`.
                    thread::yield_now();
                    assert!(
                        !ended.load(Ordering::Acquire),
                        "the process ended during a scan that saw it alive"
                    );
                }
            }
            process.join().unwrap();
        });
    }

    /// A poll notes a first wait and then a further one on an object that an
    /// outside party acts on meanwhile (it is judged internal or open when
    /// noted); the detector reads the epoch, the word twice, then whether the
    /// outside action is over, then the epoch again. It never accepts the
    /// member as blocked inside once the outside action was over before its
    /// second read of the epoch: either the member saw the object outside, or
    /// the epoch it recorded is not the current one.
    #[test]
    fn a_further_wait_judged_before_an_outside_action_is_not_accepted() {
        loom::model(|| {
            let net = Network::for_model();
            let m = member(Some(StdArc::clone(&net)));
            let home = StdArc::new(Home::for_model(StdArc::clone(&net)));
            let process = {
                let (m, home) = (Arc::clone(&m), StdArc::clone(&home));
                thread::spawn(move || {
                    assert!(m.begin_poll());
                    m.add_note(Wait::AltRecv, None, false);
                    note_more(&m, Wait::AltRecv, &home);
                    m.end_poll(true);
                })
            };
            let done = Arc::new(AtomicBool::new(false));
            let outside = {
                let (home, done) = (StdArc::clone(&home), Arc::clone(&done));
                thread::spawn(move || {
                    home.act_from_outside();
                    done.store(true, Ordering::Release);
                })
            };
            let epoch = net.outside_epoch();
            let first = m.snapshot();
            let second = m.snapshot();
            let over = done.load(Ordering::Acquire);
            let accepted = first == second
                && first.state() == BLOCKED_CSP
                && first.epoch_read().is_none_or(|e| e == epoch)
                && net.outside_epoch() == epoch;
            assert!(
                !(accepted && over),
                "a wait judged internal before an outside action was accepted after it"
            );
            process.join().unwrap();
            outside.join().unwrap();
        });
    }
}
