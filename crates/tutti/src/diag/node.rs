//! A *node* of the wait-for graph: an actor, or a world location — something that runs as
//! one task, waits on one thing at a time, and that others wait for. (CSP processes are
//! nodes of their own kind, kept by `csp::deadlock`, which contributes them.)
//!
//! A node is polled inside [`Node::enter`]; a blocking primitive that returns `Pending`
//! calls [`note`] with what it waits on, which lands on the node being polled on this
//! thread (nothing happens off a node: one thread-local read). The detector
//! (`detect.rs`) and the dump read the nodes' state words and notes.
//!
//! # The state word
//!
//! ```text
//! bits 63..2  poll count (wrapping)
//! bits  1..0  RUNNING | BLOCKED (the last poll returned Pending after a note)
//!             | IDLE (Pending without a note: waiting for work, e.g. an empty mailbox)
//!             | ENDED
//! ```
//!
//! Written only by the node's own poll (`enter` / the guard's drop), read by the
//! detector with Acquire; every poll changes it (the count), so two equal reads mean
//! the node was not polled in between (the detector's double collect).
//!
//! # The note: a single-writer slot
//!
//! A wait usually lasts several polls (a fence, a reply, a receive: each wake that
//! finds the answer not there yet polls again and notes the same wait), and a
//! location in a loop of fences notes a new wait per fence. So that a note takes no
//! lock and no atomic read-modify-write, the wait is kept in three words written only
//! by the node's own poll and published with a sequence number (a seqlock); readers
//! (the detector, the dump) take a consistent copy. The waker the detector wakes on a
//! failure sits behind a lock, changed only when the waker does. A wait is encoded
//! where it is noted ([`note`] is inlined there), so a wait of constants — most are —
//! reaches the node as three constant words in one call, and one already noted costs
//! the comparison of its words and of its waker's key.
//!
//! * N1. Only the node's own note writes the wait's words and its sequence number:
//!   odd while it writes, even again (Release) once the words hold the new wait. The
//!   node's polls are serialized (the scheduler hands a task from one poll to the next
//!   with Release/Acquire), so there is one writer.
//! * N2. A reader reads the number (Acquire), the words, and the number again after
//!   an Acquire fence; it keeps the words only if both reads are the same even
//!   number: then no write overlapped, and the words are those of one note. A text is
//!   encoded as the address and length of a `&'static str` and rebuilt only from such
//!   a copy.
//! * N3. A wait that has no encoding (an owned text, a channel between locations)
//!   goes into a locked slot, its words saying so; the double collect of the
//!   detector (`detect.rs`) tells a slot read from another poll (the word changed).
//! * N4. The waker's key (its data and vtable addresses) is written by the node's
//!   note under the waker's lock, to the key of the waker it stored; [`Node::fail`]
//!   clears it (to the key no waker has) under the lock when it takes the waker. A
//!   note whose waker's key equals it leaves the lock alone. That races at most with a
//!   `fail` taking the waker: that `fail` wakes the node itself after setting the
//!   failure, so the poll it wakes takes the failure; after it, the key is cleared and
//!   the next note stores the waker again.

use std::cell::Cell;
use std::sync::{Arc, Weak};
use std::task::Waker;

use crate::loom::{
    lock, unmodelled, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Mutex, Ordering,
};

use super::report::Deadlock;
use crate::runtime::context::RuntimeRef;

pub(crate) const RUNNING: u64 = 0;
pub(crate) const BLOCKED: u64 = 1;
pub(crate) const IDLE: u64 = 2;
pub(crate) const ENDED: u64 = 3;
const STATE_MASK: u64 = 3;
const POLL_ONE: u64 = 4;

/// What kind of node (for reports and dumps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Actor,
    Location,
}

/// Whom a wait depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum On {
    /// Unknown (a channel, a dataflow variable, a message from anyone).
    Unknown,
    /// One node: the actor that must answer or make room.
    Node(u64),
    /// Every location of a world (a fence or collective): the world's id.
    World(u64),
    /// One location of a world (the other end of a channel between
    /// locations): the world's id and the location's index.
    Location { world: u64, index: u32 },
    /// Any one of these (a selection over several waits that each name whom
    /// they wait for): the node is stuck only if every one of them is.
    AnyOf(Vec<On>),
}

/// What a node waits on: whom, and what for. Cheap to note (no allocation for the
/// common waits); [`Wait::describe`] makes the text when a report or dump needs it.
#[derive(Clone, Debug)]
pub(crate) struct Wait {
    pub(crate) on: On,
    pub(crate) what: What,
}

/// What a wait is for (see [`Wait`]).
#[derive(Clone, Debug)]
pub(crate) enum What {
    /// A fixed text ("waits for a dataflow variable to be bound").
    Text(&'static str),
    /// A text made when the wait was noted (rare waits: channels on nodes).
    Owned(String),
    /// The reply to a question of this type, from the node `on`.
    Reply(&'static str),
    /// Room in the full mailbox of the node `on`, to ask (or send) this type.
    Room { message: &'static str, ask: bool },
    /// A fence's quiescence detection (the world collective of this epoch).
    Fence(u64),
    /// A world collective of this epoch.
    Collective(u64),
    /// A channel between locations (`world::channel`): `what` the end waits
    /// for, the channel's number and ends, and the call that waits. Kept as
    /// data: the text is made only for a report, not on every wait.
    Channel {
        what: &'static str,
        seq: u32,
        from: crate::world::LocationId,
        to: crate::world::LocationId,
        capacity: u32,
        call: &'static str,
    },
    /// The waits of a selection, in the order of [`On::AnyOf`].
    AnyOf(Vec<What>),
}

impl Wait {
    /// The wait as a report line ("waits for the reply to `Inner` from `actor#2 (Peer)`").
    pub(crate) fn describe(&self) -> String {
        let target = || match self.on {
            On::Node(id) => format!("`{}`", name_of(id)),
            _ => "an actor".to_string(),
        };
        match &self.what {
            What::AnyOf(whats) => {
                let arms: Vec<String> = whats
                    .iter()
                    .enumerate()
                    .map(|(i, what)| {
                        let on = match &self.on {
                            On::AnyOf(ons) => ons.get(i).cloned().unwrap_or(On::Unknown),
                            _ => On::Unknown,
                        };
                        let text = Wait {
                            on,
                            what: what.clone(),
                        }
                        .describe();
                        text.strip_prefix("waits ")
                            .map_or(text.clone(), str::to_string)
                    })
                    .collect();
                format!(
                    "waits on whichever comes first (a selection): {}",
                    arms.join("; or ")
                )
            }
            What::Text(t) => (*t).to_string(),
            What::Owned(t) => t.clone(),
            What::Reply(m) => format!("waits for the reply to `{m}` from {}", target()),
            What::Room { message, ask } => format!(
                "waits for room to {} `{message}` in the full mailbox of {}",
                if *ask { "ask" } else { "send" },
                target()
            ),
            What::Fence(epoch) => format!(
                "waits in a fence (quiescence detection, collective #{epoch}) for every \
                 location to enter it"
            ),
            What::Collective(epoch) => {
                format!("waits in collective #{epoch} for every location to join it")
            }
            What::Channel {
                what,
                seq,
                from,
                to,
                capacity,
                call,
            } => {
                let kind = if *capacity == 0 {
                    "rendezvous".to_string()
                } else {
                    format!("capacity {capacity}")
                };
                format!("{what} channel #{seq} from {from} to {to} ({kind}, `{call}`)")
            }
        }
    }
}

/// `words[0]`'s tag for a wait kept in the locked slot (N3).
const IN_SLOT: u64 = 15;

/// `words[0]`'s tag for a wait on [`On::Unknown`] (no edge).
const ON_UNKNOWN: u64 = 1;

/// The wait's words (N2): `[on | what << 4 | extra << 8, on's id, payload]`, with
/// `on` 1 `Unknown`, 2 `Node`, 3 `World`; `what` 1 `Text`, 2 `Reply`, 3 `Room`, 4
/// `Fence`, 5 `Collective`; a text's length in `extra` (with `Room`'s `ask` below it)
/// and its address in the payload, an epoch in the payload. Word 0 is never 0. Equal
/// words mean equal waits. `None` for a wait with no encoding (N3: an owned text, a
/// wait on a location, a selection), which goes into the slot.
///
/// Inlined where a wait is noted, so that a wait built there from constants (most
/// are: `On::Unknown` and a fixed text) encodes to constants.
#[inline(always)]
fn encode(wait: &Wait) -> Option<[u64; 3]> {
    let (on, id) = match wait.on {
        On::Unknown => (ON_UNKNOWN, 0),
        On::Node(id) => (2, id),
        On::World(id) => (3, id),
        On::Location { .. } | On::AnyOf(_) => return None,
    };
    let text = |t: &'static str| (t.len() as u64, t.as_ptr() as u64);
    let (what, extra, payload) = match &wait.what {
        What::Text(t) => (1, text(t).0, text(t).1),
        What::Reply(m) => (2, text(m).0, text(m).1),
        What::Room { message, ask } => (3, text(message).0 << 1 | u64::from(*ask), text(message).1),
        What::Fence(epoch) => (4, 0, *epoch),
        What::Collective(epoch) => (5, 0, *epoch),
        What::Owned(_) | What::Channel { .. } | What::AnyOf(_) => return None,
    };
    Some([on | what << 4 | extra << 8, id, payload])
}

/// The words of a wait kept in the slot (N3): its `on` tag and [`IN_SLOT`]; the
/// number (for `On::Location`, its index) keeps two such waits apart.
fn slot_words(wait: &Wait) -> [u64; 3] {
    let (on, id) = match wait.on {
        On::Unknown => (ON_UNKNOWN, 0),
        On::Node(id) => (2, id),
        On::World(id) => (3, id),
        On::Location { index, .. } => (4, u64::from(index)),
        On::AnyOf(_) => (5, 0),
    };
    [on | IN_SLOT << 4, id, 0]
}

/// The wait `words` encode; `None` for none noted or a wait in the slot.
///
/// # Safety
/// `words` is a consistent copy of one note's words (N2, [`Node::read_words`]), or
/// any words whose text tags come with the address and length of a `&'static str`.
unsafe fn decode(words: [u64; 3]) -> Option<Wait> {
    let on = match words[0] & 15 {
        1 => On::Unknown,
        2 => On::Node(words[1]),
        3 => On::World(words[1]),
        _ => return None,
    };
    let extra = words[0] >> 8;
    let text = |len: u64| -> &'static str {
        // SAFETY: the caller's promise: a note writes a text's address and length only
        // from a `&'static str`, so they name valid UTF-8 that lives for the program.
        unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                words[2] as usize as *const u8,
                len as usize,
            ))
        }
    };
    let what = match (words[0] >> 4) & 15 {
        1 => What::Text(text(extra)),
        2 => What::Reply(text(extra)),
        3 => What::Room {
            message: text(extra >> 1),
            ask: extra & 1 == 1,
        },
        4 => What::Fence(words[2]),
        5 => What::Collective(words[2]),
        _ => return None,
    };
    Some(Wait { on, what })
}

/// The key of a waker (N4).
fn waker_key(waker: Option<&Waker>) -> [u64; 2] {
    waker.map_or([0, 0], |w| {
        [w.data() as u64, std::ptr::from_ref(w.vtable()) as u64]
    })
}

/// A node (see the module docs). Held in an `Arc` by its owner (actor cell, location).
pub(crate) struct Node {
    pub(crate) id: u64,
    pub(crate) kind: Kind,
    pub(crate) name: String,
    pub(crate) rank: usize,
    /// For a location: the id of its world (`On::World`); 0 otherwise.
    pub(crate) world: u64,
    /// The world's rank count, for a location (a stall is judged only within one rank).
    pub(crate) ranks: usize,
    /// For a location: its index in the world (`On::Location`); 0 otherwise.
    pub(crate) index: u32,
    /// For a location: how many locations its world has on this rank (the
    /// detector judges a world only once it knows a node for each); 0 otherwise.
    pub(crate) locations: u32,
    pub(crate) runtime: RuntimeRef,
    word: AtomicU64,
    /// [`NOTED`] | [`EDGE`] | [`COUNTED`]: written only by the node's own poll (and
    /// read by it), one word so that a poll's start and end each touch it once.
    flags: AtomicU8,
    /// The sequence number of `words` (N1, N2).
    seq: AtomicU64,
    /// The last noted wait, encoded (see [`encode`]); word 0 is 0 before the first.
    words: [AtomicU64; 3],
    /// The last noted wait when it has no encoding (N3).
    owned: Mutex<Option<Wait>>,
    /// The waker of the last note that gave one (N4).
    waker: Mutex<Option<Waker>>,
    /// The key of `waker` (N4): its data and vtable addresses, `[0, 0]` for none.
    waker_key: [AtomicU64; 2],
    /// Set by the detector when this node's wait is part of a declared deadlock (fail
    /// mode): the waiting operation takes it and fails with it.
    failed: Mutex<Option<Arc<Deadlock>>>,
    /// `failed` is set (read first, so that the common path takes no lock).
    has_failure: AtomicBool,
}

/// `flags`: a note was made during the current poll.
const NOTED: u8 = 1;
/// `flags`: the note of the current poll names whom it waits for (`On::Node`,
/// `On::World`, `On::Location`).
const EDGE: u8 = 2;
/// `flags`: this node is counted in [`waiting`] (blocked on a wait with an edge); kept
/// from one poll to the next.
const COUNTED: u8 = 4;

static NEXT_ID: unmodelled::AtomicU64 = unmodelled::AtomicU64::new(1);

/// Stripes of the waiting count (see [`waiting`]); fewer under loom, so that the models
/// still see two nodes share one.
#[cfg(not(loom))]
const STRIPES: usize = 64;
#[cfg(loom)]
const STRIPES: usize = 2;

/// One stripe of the waiting count, on a cache line of its own.
#[repr(align(128))]
struct Stripe(AtomicUsize);

/// How many nodes are blocked on a wait that names whom it waits for: the detector's
/// graph has an edge only then, so with none it has nothing to look at. Changed only by
/// a node's own poll (`Entered::leave`, its `counted` flag in step) and its drop.
///
/// The count is striped by node id: node `id` counts in stripe `id % STRIPES`, always
/// the same one, so every stripe is the number of its counted nodes (never below zero)
/// and nodes polled on different workers (two locations in a fence, two actors in a
/// `sync_rmi` ping-pong) change different cache lines instead of one line that both
/// workers pull back and forth on every block and unblock. The detector sums on demand
/// ([`any_waiting`]); that is at idle time only.
fn waiting(id: u64) -> &'static AtomicUsize {
    &stripes()[(id % STRIPES as u64) as usize].0
}

fn stripes() -> &'static [Stripe; STRIPES] {
    #[cfg(not(loom))]
    static WAITING: [Stripe; STRIPES] = [const { Stripe(AtomicUsize::new(0)) }; STRIPES];
    #[cfg(loom)]
    loom::lazy_static! {
        static ref WAITING: [Stripe; STRIPES] = std::array::from_fn(|_| Stripe(AtomicUsize::new(0)));
    }
    &WAITING
}

/// Whether some node is blocked on a wait with an edge (see [`waiting`]). A node
/// counted throughout the call keeps its stripe above zero meanwhile, so it is seen,
/// as with one counter; a node counted or uncounted during the call may or may not be.
pub(crate) fn any_waiting() -> bool {
    stripes().iter().any(|s| s.0.load(Ordering::Acquire) > 0)
}
static NODES: unmodelled::Mutex<Vec<Weak<Node>>> = unmodelled::Mutex::new(Vec::new());

impl Node {
    /// A new node, on the current runtime, known to the detector and the dump.
    pub(crate) fn new(
        kind: Kind,
        name: String,
        rank: usize,
        world: u64,
        ranks: usize,
        index: u32,
        locations: u32,
    ) -> Arc<Node> {
        let node = Arc::new(Node::unlisted(
            NEXT_ID.fetch_add(1, Ordering::Relaxed),
            kind,
            name,
            (rank, world, ranks, index, locations),
            RuntimeRef::current(),
        ));
        super::detect::install();
        let mut all = lock(&NODES);
        if all.len() >= 64 && all.len().is_power_of_two() {
            all.retain(|w| w.strong_count() > 0);
        }
        all.push(Arc::downgrade(&node));
        node
    }

    /// A node not known to the detector or the dump (the loom models' nodes).
    fn unlisted(
        id: u64,
        kind: Kind,
        name: String,
        (rank, world, ranks, index, locations): (usize, u64, usize, u32, u32),
        runtime: RuntimeRef,
    ) -> Node {
        Node {
            id,
            kind,
            name,
            rank,
            world,
            ranks,
            index,
            locations,
            runtime,
            word: AtomicU64::new(RUNNING),
            flags: AtomicU8::new(0),
            seq: AtomicU64::new(0),
            words: std::array::from_fn(|_| AtomicU64::new(0)),
            owned: Mutex::new(None),
            waker: Mutex::new(None),
            waker_key: std::array::from_fn(|_| AtomicU64::new(0)),
            failed: Mutex::new(None),
            has_failure: AtomicBool::new(false),
        }
    }

    /// An actor node `id` on no runtime, for the loom models (`loom_tests.rs`).
    #[cfg(all(test, loom))]
    pub(crate) fn for_model(id: u64) -> Arc<Node> {
        Arc::new(Node::unlisted(
            id,
            Kind::Actor,
            format!("node {id}"),
            (0, 0, 1, 0, 0),
            RuntimeRef::none(),
        ))
    }

    /// Whether a failure waits to be taken (the loom models).
    #[cfg(all(test, loom))]
    pub(crate) fn has_failure(&self) -> bool {
        self.has_failure.load(Ordering::Acquire)
    }

    /// Starts a poll of the node: it runs, and notes made on this thread land on it
    /// until the guard is dropped.
    #[inline]
    pub(crate) fn enter(self: &Arc<Node>) -> Entered<'_> {
        if !super::mode::detecting() {
            // Detection off: no bookkeeping at all (the node keeps its last state).
            return Entered {
                node: None,
                prev: std::ptr::null(),
                polls: 0,
            };
        }
        let word = self.word.load(Ordering::Relaxed);
        let polls = (word & !STATE_MASK).wrapping_add(POLL_ONE);
        self.word.store(polls | RUNNING, Ordering::Relaxed);
        // A new poll has noted nothing yet; whether the node is counted carries over.
        let flags = self.flags.load(Ordering::Relaxed);
        self.flags.store(flags & COUNTED, Ordering::Relaxed);
        let prev = CURRENT.with(|c| c.replace(Arc::as_ptr(self)));
        Entered {
            node: Some(self),
            prev,
            polls,
        }
    }

    /// The state word (see the module docs), for the detector.
    pub(crate) fn word(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    /// The state of a word.
    pub(crate) fn state_of(word: u64) -> u64 {
        word & STATE_MASK
    }

    /// What the node waits on, as noted in its last poll.
    pub(crate) fn wait(&self) -> Option<Wait> {
        let words = self.read_words();
        if words[0] == 0 {
            return None;
        }
        if (words[0] >> 4) & 15 == IN_SLOT {
            return crate::loom::lock(&self.owned).clone();
        }
        // SAFETY: `read_words` returns a consistent copy of one note's words (N2).
        unsafe { decode(words) }
    }

    /// A consistent copy of the wait's words (N2).
    fn read_words(&self) -> [u64; 3] {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let words = std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
                // Acquire: the words' reads happen before the second read of the number,
                // so a write that overlapped them has changed it.
                crate::loom::fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before {
                    return words;
                }
            }
            crate::loom::spin_hint();
        }
    }

    /// Fails the node's current wait with `report` and wakes it.
    pub(crate) fn fail(&self, report: Arc<Deadlock>) {
        *crate::loom::lock(&self.failed) = Some(report);
        self.has_failure.store(true, Ordering::Release);
        let waker = {
            let mut slot = crate::loom::lock(&self.waker);
            // N4: the slot loses its waker, so its key no longer holds.
            for k in &self.waker_key {
                k.store(u64::MAX, Ordering::Relaxed);
            }
            slot.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    #[cold]
    fn set_counted(&self, flags: u8, counted: bool) {
        let flags = if counted {
            flags | COUNTED
        } else {
            flags & !COUNTED
        };
        self.flags.store(flags, Ordering::Relaxed);
        if counted {
            waiting(self.id).fetch_add(1, Ordering::Release);
        } else {
            waiting(self.id).fetch_sub(1, Ordering::Release);
        }
    }

    #[cold]
    fn clear_failure(&self) {
        self.has_failure.store(false, Ordering::Relaxed);
        crate::loom::lock(&self.failed).take();
    }

    /// Notes `wait` (any wait, with or without an encoding).
    fn note(&self, wait: Wait, waker: Option<&Waker>) {
        // Only this poll writes the flags (polls are serialized): no read-modify-write.
        let flags = self.flags.load(Ordering::Relaxed);
        if flags & NOTED != 0 {
            // The first wait of a poll is the one that counts, unless a wait on
            // a location takes part: then the poll waits on any of them (a
            // selection), see `merge`.
            self.merge(wait, waker);
            return;
        }
        self.write(flags, wait, waker);
    }

    /// Notes the wait `words` encode (the common case, see [`note`]).
    #[inline(always)]
    fn note_words(&self, words: [u64; 3], waker: Option<&Waker>) {
        let flags = self.flags.load(Ordering::Relaxed);
        if flags & NOTED != 0 {
            // SAFETY: `words` come from `encode` (the caller's), so their texts are
            // `&'static str`s.
            if let Some(wait) = unsafe { decode(words) } {
                self.merge(wait, waker);
            }
            return;
        }
        let edge = if words[0] & 15 == ON_UNKNOWN { 0 } else { EDGE };
        self.flags.store(flags | NOTED | edge, Ordering::Relaxed);
        self.write_words(words, waker);
    }

    /// Writes `wait` as the wait of this poll (N1, N3, N4); `flags` are the node's.
    fn write(&self, flags: u8, wait: Wait, waker: Option<&Waker>) {
        let edge = if has_edge(&wait.on) { EDGE } else { 0 };
        self.flags.store(flags | NOTED | edge, Ordering::Relaxed);
        let words = match encode(&wait) {
            Some(words) => words,
            None => {
                let words = slot_words(&wait);
                *crate::loom::lock(&self.owned) = Some(wait);
                words
            }
        };
        self.write_words(words, waker);
    }

    /// Publishes the wait's words (N1, N2) and stores the waker if it changed (N4).
    #[inline(always)]
    fn write_words(&self, words: [u64; 3], waker: Option<&Waker>) {
        // N1: the words are this node's own; an unchanged wait is not written again.
        let same = self.words[0].load(Ordering::Relaxed) == words[0]
            && self.words[1].load(Ordering::Relaxed) == words[1]
            && self.words[2].load(Ordering::Relaxed) == words[2];
        if !same {
            let seq = self.seq.load(Ordering::Relaxed);
            self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
            // Release: a reader that sees a word written below sees the odd number.
            crate::loom::fence(Ordering::Release);
            for (w, v) in self.words.iter().zip(words) {
                w.store(v, Ordering::Relaxed);
            }
            self.seq.store(seq.wrapping_add(2), Ordering::Release);
        }
        let key = waker_key(waker);
        if self.waker_key[0].load(Ordering::Relaxed) != key[0]
            || self.waker_key[1].load(Ordering::Relaxed) != key[1]
        {
            self.set_waker(waker, key);
        }
    }

    /// Stores the waker of a note (N4).
    #[cold]
    fn set_waker(&self, waker: Option<&Waker>, key: [u64; 2]) {
        let mut slot = crate::loom::lock(&self.waker);
        *slot = waker.cloned();
        for (k, v) in self.waker_key.iter().zip(key) {
            k.store(v, Ordering::Relaxed);
        }
    }
}

impl Node {
    /// A further wait noted in the same poll. Where a wait on a location (a
    /// channel between locations) meets another wait with an edge, the node
    /// waits on any of them ([`On::AnyOf`]); where it meets a wait the
    /// detector cannot follow ([`On::Unknown`], [`On::World`]), on something
    /// it cannot judge ([`On::Unknown`]): a selection is stuck only if every
    /// arm is. Waits without a location keep the first-note rule.
    #[cold]
    fn merge(&self, wait: Wait, waker: Option<&Waker>) {
        let Some(mut old) = self.wait() else { return };
        let located = |on: &On| match on {
            On::Location { .. } => true,
            On::AnyOf(ons) => ons.iter().any(|o| matches!(o, On::Location { .. })),
            _ => false,
        };
        if !located(&old.on) && !located(&wait.on) {
            return;
        }
        let (mut ons, mut whats) = match (old.on, old.what) {
            (On::AnyOf(ons), What::AnyOf(whats)) => (ons, whats),
            (on, what) => (vec![on], vec![what]),
        };
        ons.push(wait.on);
        whats.push(wait.what);
        if !ons.iter().all(has_edge) {
            // One arm waits on what the detector cannot follow: so does the
            // selection (its text keeps every arm).
            ons = vec![On::Unknown; ons.len()];
        }
        old = Wait {
            on: On::AnyOf(ons),
            what: What::AnyOf(whats),
        };
        self.write(self.flags.load(Ordering::Relaxed), old, waker);
    }
}

/// Whether a wait on `on` is an edge of the wait-for graph (it names whom it
/// waits for, and for a selection, every arm does).
fn has_edge(on: &On) -> bool {
    match on {
        On::Unknown => false,
        On::Node(_) | On::World(_) | On::Location { .. } => true,
        On::AnyOf(ons) => ons
            .iter()
            .all(|o| matches!(o, On::Node(_) | On::Location { .. })),
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.flags.load(Ordering::Relaxed) & COUNTED != 0 {
            waiting(self.id).fetch_sub(1, Ordering::Release);
        }
    }
}

/// A poll of a node under way (see [`Node::enter`]).
pub(crate) struct Entered<'a> {
    /// `None`: detection is off, nothing was entered.
    node: Option<&'a Arc<Node>>,
    prev: *const Node,
    polls: u64,
}

impl Entered<'_> {
    /// The poll returned: `pending` if the node's future returned `Pending`.
    #[inline]
    pub(crate) fn leave(self, pending: bool) {
        let Some(node) = self.node else { return };
        let flags = node.flags.load(Ordering::Relaxed);
        let state = if !pending {
            ENDED
        } else if flags & NOTED != 0 {
            BLOCKED
        } else {
            IDLE
        };
        // Release: the note of this poll happens-before a detector's Acquire read.
        node.word.store(self.polls | state, Ordering::Release);
        let counted = state == BLOCKED && flags & EDGE != 0;
        if counted != (flags & COUNTED != 0) {
            node.set_counted(flags, counted);
        }
        // A failure is for the poll right after it was set (the detector runs only while
        // the node is parked): if that poll did not take it (the wait ended anyway, say
        // a reply came as another wait of the cycle failed), it is stale.
        if node.has_failure.load(Ordering::Relaxed) {
            node.clear_failure();
        }
    }
}

impl Drop for Entered<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.node.is_some() {
            CURRENT.with(|c| c.set(self.prev));
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    static CURRENT: Cell<*const Node> = const { Cell::new(std::ptr::null()) };
}
#[cfg(loom)]
loom::thread_local! {
    static CURRENT: Cell<*const Node> = Cell::new(std::ptr::null());
}

#[inline]
fn with_current<R>(f: impl FnOnce(&Node) -> R) -> Option<R> {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        return None;
    }
    // SAFETY: `CURRENT` is set by `Node::enter` to a node kept alive by the `Arc` the
    // guard borrows, and restored when the guard drops; so while it is non-null the node
    // is alive. The reference does not escape `f`.
    Some(f(unsafe { &*p }))
}

/// Whether a node is being polled on this thread (a note would land on it).
#[inline]
pub(crate) fn polling() -> bool {
    !CURRENT.with(Cell::get).is_null()
}

/// The id of the node being polled on this thread, 0 if none.
#[inline]
pub(crate) fn current_id() -> u64 {
    with_current(|n| n.id).unwrap_or(0)
}

/// A blocking operation is about to return `Pending` on this thread: if a node is being
/// polled, it now waits on what `wait` describes (built only then), and `waker` (if
/// given: the operation can fail with a deadlock report) wakes it.
///
/// The wait is built and encoded here, inlined, so that a wait of constants (most are)
/// is three constant words by the time the one call below takes them; only a wait
/// with no encoding is passed whole.
#[inline(always)]
pub(crate) fn note(wait: impl FnOnce() -> Wait, waker: Option<&Waker>) {
    if CURRENT.with(Cell::get).is_null() {
        return;
    }
    let wait = wait();
    match encode(&wait) {
        Some(words) => {
            // An encoded wait owns nothing (its texts are `&'static str`, the rest
            // numbers): forgetting it skips drop glue that would free nothing.
            std::mem::forget(wait);
            note_encoded(words, waker);
        }
        None => note_in_slot(wait, waker),
    }
}

#[inline(never)]
fn note_encoded(words: [u64; 3], waker: Option<&Waker>) {
    with_current(|n| n.note_words(words, waker));
}

#[cold]
#[inline(never)]
fn note_in_slot(wait: Wait, waker: Option<&Waker>) {
    with_current(|n| n.note(wait, waker));
}

/// The deadlock the detector failed the current node's wait with, if any (taken).
#[inline]
pub(crate) fn take_failure() -> Option<Arc<Deadlock>> {
    if CURRENT.with(Cell::get).is_null() {
        return None;
    }
    with_current(|n| {
        if !n.has_failure.load(Ordering::Acquire) {
            return None;
        }
        n.has_failure.store(false, Ordering::Relaxed);
        crate::loom::lock(&n.failed).take()
    })
    .flatten()
}

/// Every live node.
pub(crate) fn all() -> Vec<Arc<Node>> {
    let mut all = lock(&NODES);
    all.retain(|w| w.strong_count() > 0);
    all.iter().filter_map(Weak::upgrade).collect()
}

static RANK: unmodelled::AtomicUsize = unmodelled::AtomicUsize::new(0);

/// This process's rank in its world (set by the world at start-up; 0 before).
pub(crate) fn rank() -> usize {
    RANK.load(Ordering::Relaxed)
}

/// Records this process's rank (the world, at start-up).
pub(crate) fn set_rank(rank: usize) {
    RANK.store(rank, Ordering::Relaxed);
}

/// The name of the live node `id` ("a finished actor" if it is gone).
pub(crate) fn name_of(id: u64) -> String {
    all()
        .iter()
        .find(|n| n.id == id)
        .map_or_else(|| "a finished actor".to_string(), |n| n.name.clone())
}
