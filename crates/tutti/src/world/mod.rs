//! Layer 3: the world — processes (ranks) × locations, transports, aggregation,
//! collectives and quiescence detection (ARMI's transfer layer, Miguel's
//! funneled MPI, Blip's MPI level with a local implementation).
//!
//! A program is `P` ranks × `L` locations (ARMI's flat view): location ids run
//! `0..P·L`, rank-major. The embedded default is one process of threads (the
//! in-process transport); `mpirun -n P` of the same binary, built with the `mpi`
//! feature, makes it distributed with no code change. [`World`] start-up decides
//! which ([`WorldBuilder`], [`TransportKind`]); [`World::run`] runs SPMD code on
//! every location as a task of the rank's runtime.
//!
//! ```
//! use tutti::world::{LocationId, World};
//!
//! let world = World::builder().locations(4).workers(2).build().unwrap();
//! let totals = world.run(|loc| async move {
//!     let n = loc.world().locations();
//!     // Everyone tells its right neighbour its id…
//!     let right = LocationId::new(((loc.id().index() + 1) % n) as u32);
//!     // (within a rank the value moves; to another rank it is serialized).
//!     loc.send(right, loc.id().index() as u64).unwrap();
//!     let left = loc.recv().await.typed::<u64>().unwrap();
//!     // …and the world sums what it heard.
//!     loc.all_reduce(left, |a, b| a + b).await
//! });
//! assert_eq!(totals, [6, 6, 6, 6]);
//! ```
//!
//! # Messages
//!
//! [`Location::send`] sends a typed value to any location. Between locations
//! of one rank it moves as it is (nothing is serialized: the value is boxed and
//! its pointer queued). Across ranks only bytes travel: `send` serializes the
//! value with the `msg` codec, with its type's name (`typed.rs`), and the
//! receiver's [`Delivery::typed`] decodes it — or says which type arrived
//! instead ([`TakeError`]). [`Location::send_bytes`] and its relatives send
//! bytes as they are; [`Location::send_value`] moves values that cannot be
//! serialized within a rank. Messages from one location to another arrive in order. A received
//! [`Delivery`] counts as handled when it is dropped.
//!
//! Every byte that crosses ranks is in the `msg` codec's wire form: frames are
//! codec frames (`frame.rs`: one 48-byte header per aggregated batch, then the
//! length-prefixed messages) and collective values are serde values in the codec's
//! format. When a world starts under MPI, the ranks exchange the digests of their
//! process's message registry ([`crate::msg::register`]) and refuse to start
//! ([`WorldError::Registry`], on every rank) if they differ, naming the ranks and
//! the types: register message types before building the world.
//!
//! # Aggregation
//!
//! Small messages to one destination are coalesced in the sending location's
//! buffer for that destination and sent when `aggregation` messages (ARMI's
//! factor) or `aggregation_bytes` are reached, when the location flushes, waits,
//! polls or enters a collective, and at the latest `flush_after` later (see
//! `outbox.rs`). Quiescence counts a message as sent when it enters a buffer.
//!
//! # Transports and progress
//!
//! One trait, one file each (`transport/`): in-process, and MPI (feature `mpi`).
//! With MPI, either one progress thread owns every MPI call
//! ([`ProgressMode::Thread`], `MPI_THREAD_FUNNELED`, Miguel's design), or
//! idle workers drive MPI one at a time ([`ProgressMode::Poll`],
//! `MPI_THREAD_SERIALIZED`); polling is the default, chosen by benchmark (see
//! [`ProgressMode`]'s `Default`). In polling mode a location that waits (to
//! receive, for a collective or for a quiescence wave) first drives the engine
//! itself for up to 30 µs, while no other work waits for its worker: a reply
//! due within a round trip then costs no trip through the scheduler. Large
//! bodies are received into, and sent from, buffers the rank reuses
//! ([`Location::buffer`]), so a stream of large messages pays no page faults. A rank whose location panics, or that receives a
//! frame that does not parse, takes the whole job down with `MPI_Abort` and a
//! message naming the rank and the cause, instead of leaving the others hanging.
//!
//! # Collectives
//!
//! [`Location::barrier`], [`broadcast`](Location::broadcast),
//! [`reduce`](Location::reduce), [`all_reduce`](Location::all_reduce) involve
//! every location; hierarchical: the locations of a rank combine first, then the
//! ranks along a binomial tree (see `collective.rs`). The contribution is made when
//! the method is called, so each is also its non-blocking form.
//!
//! # Channels between locations
//!
//! [`Location::channel_to`] and [`Location::channel_from`] open the two ends
//! of a typed channel between two locations, on one rank or on two: a
//! [`RemoteTx`] and a [`RemoteRx`], rendezvous (capacity 0) or buffered, whose
//! bound holds across ranks (credits), closed when either end is dropped, and
//! usable in [`select!`](crate::select) and [`Alt`](crate::csp::Alt) through
//! their futures. Protocol and cancellation contract: `channel/`'s module
//! documentation, summarised at [`RemoteTx`].
//!
//! # Quiescence
//!
//! [`Location::recv_until_quiet`] hands out messages until the whole world is
//! quiescent, then returns `None` on every location (ARMI's `rmi_fence`).
//!
//! Each location `i` counts `s_i`, the messages it has sent (counted when a send
//! is called, so buffered messages count), and `h_i`, the messages delivered to
//! it whose [`Delivery`] was dropped. A location inside `recv_until_quiet` that
//! has nothing to receive contributes `(s_i, h_i)` — reading `h_i` first — to a
//! *wave*: an all-reduce of the sums `(S_k, H_k)` over all locations (under
//! MPI, across two ranks, one exchange of 16 bytes). Waves are numbered over
//! the world's whole life, across detections. When wave `k` completes the
//! location compares `S_k` with `H_{k-1}`, the handled total of the wave before
//! it — the previous wave of this detection, or the last wave of the previous
//! detection (`H_{-1} = 0` before the first). If they are equal it returns `None`; otherwise it
//! handles what has arrived and contributes to wave `k + 1`. So a detection
//! after a phase that exchanged nothing takes **one** wave, and one after
//! traffic takes two once everything is handled.
//!
//! *Why it cannot end early.* Every location contributes to wave `k` only after
//! seeing wave `k - 1`'s result (in this detection, or before it left the
//! previous one), which exists only once every location has contributed to wave
//! `k - 1`. So there is a moment `T` after every contribution to wave `k - 1` and
//! before any contribution to wave `k`. Counters only grow, so `H_{k-1} ≤ H(T)`
//! (every wave-`k-1` read happened before `T`) and `S(T) ≤ S_k` (every wave-`k`
//! read happened after). A message is handled only after it was sent, so
//! `H(T) ≤ S(T)` at every moment. If `S_k = H_{k-1}`, then
//! `H(T) ≤ S(T) ≤ S_k = H_{k-1} ≤ H(T)`: all are equal. So (a) at `T` every
//! message ever sent had been handled — none was buffered, in flight, queued or
//! being handled (a delivery alive at `T` would make `H(T) < S(T)`); and (b) no
//! location sent anything between `T` and its wave-`k` contribution (each `s_i`
//! is the same at both moments, since the sums are and no counter shrinks).
//! Locations need not be inside `recv_until_quiet` at `T` — one may still be
//! running its phase's code — but (b) says it sent nothing more before it
//! contributed. After its contribution a location only hands out messages, and
//! sends only while handling one (a handler's sends are counted before its
//! delivery is dropped: same thread, and the drop's `Release` pairs with the
//! contribution's `Acquire` read of `h_i`, so `h_i` never runs ahead of the `s`
//! of the messages it caused). Suppose some message is sent after `T` and take
//! the first, sent by `X`: by (b) after `X`'s contribution, so while `X`
//! handles a message `m` sent before it — before `T` — and so already handled
//! (dropped) by `T` by (a), which contradicts `X` handling it after `T`. So
//! nothing is ever sent again in this phase: the world is quiescent, and all
//! locations see the same wave results and keep the same `H_{k-1}`, so they
//! decide alike. Conversely, once the world is quiescent the next wave sees
//! `S = H` and the one after it ends the detection.
//!
//! *Phases.* Each location returns `None` when *it* sees the final wave's result,
//! so one may already be past it, sending, while another has not yet seen the
//! result. Every message carries its sender's *phase* — how many detections the
//! sender has completed — and a location inside detection `p` hands out only
//! messages of phases `≤ p`. A message of phase `p + 1` reaching it was sent by a
//! location that saw the final wave, which had then completed, so the waiting
//! location sees its result too and ends; the message waits in its inbox for
//! the next phase. No message of phase `≤ p` can be behind it (all were handled
//! before `T`). So the end of a detection separates phases without a barrier,
//! and a location inside a detection keeps serving (handing out this phase's
//! messages) while its wave is pending: a location that has not yet started its
//! detection can still be answered.

mod channel;
mod collective;
mod config;
mod delivery;
mod error;
mod frame;
#[cfg(feature = "fuzzing")]
pub(crate) mod fuzzing;
mod id;
mod inbox;
mod location;
mod outbox;
mod pool;
mod rank;
mod receive;
mod stall;
mod tag;
mod transport;
mod typed;
#[allow(clippy::module_inception)]
mod world;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;

pub use channel::{
    ChannelError, ChannelRecv, ChannelSend, RemoteRecvError, RemoteRx, RemoteSendError, RemoteTx,
};
pub use collective::{Collective, Portion, Reduction};
pub use config::{
    launched_by_mpi, ProgressMode, TransportKind, WorldBuilder, WorldConfig,
    DEFAULT_AGGREGATION_BYTES, DEFAULT_AGGREGATION_INPROC, DEFAULT_AGGREGATION_MPI,
    DEFAULT_FLUSH_AFTER, MAX_AGGREGATION_BYTES,
};
pub(crate) use delivery::Content;
pub use delivery::Delivery;
pub use error::{LocationPanic, SendError, WorldError};
pub use id::LocationId;
pub use location::{Location, Recv, RecvMatching, UntilQuiet};
pub(crate) use rank::RankDeath;
pub use tag::Match;
#[cfg(feature = "mpi")]
pub(crate) use transport::mpi::Window;
#[cfg(not(loom))]
pub use transport::shm::launch;
pub use typed::TakeError;
pub use world::World;

use std::any::Any;

/// `a` as a `B`, if `A` is `B` (no allocation: the value moves through an
/// `Option` seen as `dyn Any`).
pub(crate) fn cast<A: 'static, B: 'static>(a: A) -> Result<B, A> {
    let mut slot = Some(a);
    if let Some(b) = (&mut slot as &mut dyn Any)
        .downcast_mut::<Option<B>>()
        .and_then(Option::take)
    {
        return Ok(b);
    }
    match slot {
        Some(a) => Err(a),
        None => unreachable!("the value is taken only when the cast succeeds"),
    }
}

/// Writes one line to stderr in a single write, so that an MPI launcher that
/// forwards the ranks' output does not split it.
pub(crate) fn say(line: &str) {
    use std::io::Write;
    let mut text = String::with_capacity(line.len() + 8);
    text.push_str("tutti: ");
    text.push_str(line);
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The last panic message seen while an MPI world was alive, for the abort
/// message of a rank that unwinds past its world.
pub(crate) fn panic_note() -> String {
    match crate::loom::lock(&LAST_PANIC).as_deref() {
        Some(m) => format!(": {m}"),
        None => String::new(),
    }
}

static LAST_PANIC: crate::loom::unmodelled::Mutex<Option<String>> =
    crate::loom::unmodelled::Mutex::new(None);

/// Records panic messages (then runs the previous hook) so that a rank that
/// unwinds past its world can say why when it takes the job down.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn record_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = crate::runtime::payload_text(info.payload()).to_string();
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            *crate::loom::lock(&LAST_PANIC) = Some(format!("{msg}{at}"));
            previous(info);
        }));
    });
}
