//! The reply slot: a one-shot hand-off of a handler's reply to whoever asked.
//!
//! A [`ReplyCell`] lives inside the allocation of the question's envelope (see
//! `envelope.rs`), so an `ask` costs one allocation for the message, the queue link and
//! the reply together. Two parties share it:
//!
//! * the **receiver** — a [`Reply`] future held by the asker;
//! * the **responder** — first the envelope, then, once the message is being handled,
//!   a [`Responder`] (inside the handler's future, or handed out by
//!   [`Envelope::downcast`](super::Envelope::downcast)).
//!
//! # The state word
//!
//! `state: AtomicUsize`, flags in the low bits and a reference count above them:
//!
//! | bit | name | set by | meaning |
//! |---|---|---|---|
//! | 0 | `VALUE` | responder, once | `value` holds the reply (written before the bit, `Release`) |
//! | 1 | `CLOSED` | responder, once | no reply will come; `OVERFLOW` says why |
//! | 2 | `OVERFLOW` | responder, with `CLOSED` | a full mailbox discarded the message |
//! | 3 | `WAKER` | receiver | `waker` holds the receiver's waker (written before the bit) |
//! | 4 | `TAKEN` | receiver | the receiver moved the value out |
//! | 5.. | refs | both | 2 at creation: one for each party |
//!
//! At most one of `VALUE` and `CLOSED` is ever set.
//!
//! # Protocol
//!
//! *Respond*: write `value`; `fetch_or(VALUE)`. If the previous state had `WAKER`, the
//! receiver has published its waker and — because `VALUE` is now set — will never touch
//! `waker` again (see below), so the responder takes it and wakes it. Then it drops its
//! reference. *Close* is the same with `CLOSED` (and `OVERFLOW`) instead of a value.
//!
//! *Receive* (a poll): load the state. With `VALUE`, read the value and set `TAKEN`; with
//! `CLOSED`, report why. Otherwise, to (re)place the waker the receiver first takes the
//! `WAKER` bit back with a compare-exchange that fails if `VALUE`/`CLOSED` appeared
//! meanwhile — so while `WAKER` is set only the responder may touch `waker`, and only
//! after it has set `VALUE`/`CLOSED`. It then writes its waker and sets `WAKER` with a
//! `fetch_or`; if that `fetch_or` finds `VALUE`/`CLOSED` already set, the responder did
//! not see `WAKER` and will not wake, so the receiver loops and takes the result itself.
//!
//! *No lost wake-up*: the responder's `fetch_or` and the receiver's `fetch_or(WAKER)` are
//! read-modify-writes of one word, so one precedes the other. If the receiver's comes
//! first, the responder sees `WAKER` and wakes it; if the responder's comes first, the
//! receiver sees the result in the value its own `fetch_or` returns.
//!
//! *Freeing*: each party ends with `fetch_sub(REF)`; the one that drops the count to zero
//! drops what is left (a waker, an untaken value) and frees the whole envelope allocation
//! through `dealloc`, a function the envelope stored when it was created.
//!
//! The `loom_tests` module checks a reply racing the receiver's first and second polls,
//! a close racing a poll, and a receiver dropped while the responder replies.

use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use crate::loom::{AtomicUsize, Ordering, UnsafeCell};

const VALUE: usize = 1 << 0;
const CLOSED: usize = 1 << 1;
const OVERFLOW: usize = 1 << 2;
const WAKER: usize = 1 << 3;
const TAKEN: usize = 1 << 4;
const REF: usize = 1 << 5;
const DONE: usize = VALUE | CLOSED;

/// Why a question was never answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoReply {
    /// The message, or the handler working on it, was dropped before it replied: its
    /// target stopped (or panicked), or a handler dropped the [`Responder`].
    Dropped,
    /// A full mailbox discarded the message (the drop-oldest overflow policy).
    Overflowed,
}

impl fmt::Display for NoReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoReply::Dropped => f.write_str("the message was dropped before it was answered"),
            NoReply::Overflowed => f.write_str("a full mailbox discarded the message"),
        }
    }
}

impl std::error::Error for NoReply {}

/// The shared slot; see the module documentation for the protocol.
pub(crate) struct ReplyCell<R> {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
    value: UnsafeCell<MaybeUninit<R>>,
    /// Frees the allocation this cell is embedded in (after the cell has been emptied).
    dealloc: unsafe fn(NonNull<ReplyCell<R>>),
}

impl<R> ReplyCell<R> {
    /// A fresh cell with both references, embedded in an allocation that `dealloc` frees.
    pub(crate) fn new(dealloc: unsafe fn(NonNull<ReplyCell<R>>)) -> Self {
        ReplyCell {
            state: AtomicUsize::new(2 * REF),
            waker: UnsafeCell::new(None),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            dealloc,
        }
    }
}

/// Drops one reference; the last one empties the cell and frees the allocation.
///
/// # Safety
/// `cell` points to a live cell on which the caller holds a reference it gives up here.
unsafe fn release<R>(cell: NonNull<ReplyCell<R>>) {
    // SAFETY: the caller's reference keeps the cell alive until this RMW.
    let c = unsafe { cell.as_ref() };
    // AcqRel: the last releaser must see every write the other party made before its
    // own release (the value, `TAKEN`, the waker).
    let prev = c.state.fetch_sub(REF, Ordering::AcqRel);
    if prev >> 5 != 1 {
        return;
    }
    // Last reference: nobody else can reach the cell any more.
    c.waker.with_mut(|w| {
        // SAFETY: exclusive access (last reference).
        unsafe { *w = None }
    });
    if prev & VALUE != 0 && prev & TAKEN == 0 {
        c.value.with_mut(|v| {
            // SAFETY: `VALUE` says the value was written; `TAKEN` clear says nobody
            // moved it out; we have exclusive access.
            unsafe { (*v).assume_init_drop() }
        });
    }
    let dealloc = c.dealloc;
    // SAFETY: exclusive access; the cell is not used after this call.
    unsafe { dealloc(cell) }
}

/// The receiving half of a reply slot: a future for the handler's reply.
///
/// Made by [`Envelope::with_reply`](super::Envelope::with_reply). Dropping it before the
/// reply arrives is fine: the handler still runs and its reply is dropped.
///
/// ```
/// use tutti::msg::{Envelope, Handler, Message, NoReply, Object};
///
/// struct Double(u32);
/// impl Message for Double { type Reply = u32; }
/// struct Doubler;
/// impl Object for Doubler { type Context = (); }
/// impl Handler<Double> for Doubler {
///     async fn handle(&mut self, m: Double, _: &mut ()) -> u32 { 2 * m.0 }
/// }
///
/// let (envelope, reply) = Envelope::<Doubler>::with_reply(Double(21));
/// tutti::block_on(envelope.handle(&mut Doubler, &mut ()));
/// assert_eq!(tutti::block_on(reply), Ok(42));
///
/// let (envelope, reply) = Envelope::<Doubler>::with_reply(Double(1));
/// drop(envelope); // never handled
/// assert_eq!(tutti::block_on(reply), Err(NoReply::Dropped));
/// ```
#[must_use = "a Reply does nothing unless awaited"]
pub struct Reply<R> {
    cell: Option<NonNull<ReplyCell<R>>>,
}

// SAFETY: the receiver only moves an `R` out (R: Send) and stores a `Waker` (Send); the
// cell's shared state is synchronised by the protocol above.
unsafe impl<R: Send> Send for Reply<R> {}
// SAFETY: `&Reply` gives no access to the cell at all.
unsafe impl<R: Send> Sync for Reply<R> {}

impl<R> Reply<R> {
    /// # Safety
    /// `cell` is a live cell holding a reference for the receiver.
    pub(crate) unsafe fn from_cell(cell: NonNull<ReplyCell<R>>) -> Self {
        Reply { cell: Some(cell) }
    }

    /// Polls for the reply.
    pub(crate) fn poll_reply(&mut self, cx: &mut Context<'_>) -> Poll<Result<R, NoReply>> {
        let cell = self
            .cell
            .expect("tutti: a Reply was polled after it completed");
        // SAFETY: our reference keeps the cell alive.
        let c = unsafe { cell.as_ref() };
        let mut s = c.state.load(Ordering::Acquire);
        loop {
            if s & DONE != 0 {
                return Poll::Ready(self.take(s));
            }
            if s & WAKER != 0 {
                // Take the waker slot back before touching it; fails if the responder
                // finished meanwhile (then it may be reading the waker).
                if let Err(actual) =
                    c.state
                        .compare_exchange(s, s & !WAKER, Ordering::Acquire, Ordering::Acquire)
                {
                    s = actual;
                    continue;
                }
            }
            let waker = cx.waker().clone();
            c.waker.with_mut(|w| {
                // SAFETY: `WAKER` is clear, so the responder never touches the slot.
                unsafe { *w = Some(waker) }
            });
            // Release publishes the waker; Acquire makes a value written before a
            // racing `VALUE` visible if we find it here.
            let prev = c.state.fetch_or(WAKER, Ordering::AcqRel);
            if prev & DONE != 0 {
                // The responder finished first and did not see our waker: take the
                // result ourselves.
                return Poll::Ready(self.take(prev));
            }
            return Poll::Pending;
        }
    }

    /// Takes the outcome once `VALUE` or `CLOSED` has been observed in `s`.
    fn take(&mut self, s: usize) -> Result<R, NoReply> {
        let cell = self.cell.take().expect("tutti: Reply taken twice");
        // SAFETY: our reference keeps the cell alive.
        let c = unsafe { cell.as_ref() };
        let out = if s & VALUE != 0 {
            let v = c.value.with(|v| {
                // SAFETY: `VALUE` was observed with Acquire after the responder wrote
                // the value; only the receiver reads it, once (the cell is released
                // right below, and `TAKEN` tells the last releaser not to drop it).
                unsafe { (*v).assume_init_read() }
            });
            c.state.fetch_or(TAKEN, Ordering::Relaxed);
            Ok(v)
        } else if s & OVERFLOW != 0 {
            Err(NoReply::Overflowed)
        } else {
            Err(NoReply::Dropped)
        };
        // SAFETY: we held the receiver's reference.
        unsafe { release(cell) };
        out
    }

    /// True once the reply (or the news that none will come) has arrived.
    pub fn is_ready(&self) -> bool {
        match self.cell {
            // SAFETY: our reference keeps the cell alive.
            Some(c) => unsafe { c.as_ref() }.state.load(Ordering::Acquire) & DONE != 0,
            None => true,
        }
    }
}

impl<R> Future for Reply<R> {
    type Output = Result<R, NoReply>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_reply(cx)
    }
}

impl<R> Drop for Reply<R> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            // SAFETY: we held the receiver's reference.
            unsafe { release(cell) };
        }
    }
}

impl<R> fmt::Debug for Reply<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("ready", &self.is_ready())
            .finish()
    }
}

/// The answering half of a question: [`respond`](Responder::respond) once, or drop it
/// and the asker learns [`NoReply::Dropped`].
///
/// Handlers normally just return their reply; a `Responder` appears when a handler takes
/// a message apart with [`Envelope::downcast`](super::Envelope::downcast), e.g. to answer
/// later.
///
/// ```
/// use tutti::msg::{Envelope, Handler, Message, Object};
///
/// struct Ask;
/// impl Message for Ask { type Reply = &'static str; }
/// struct Obj;
/// impl Object for Obj { type Context = (); }
/// impl Handler<Ask> for Obj {
///     async fn handle(&mut self, _: Ask, _: &mut ()) -> &'static str { "handled" }
/// }
///
/// let (envelope, reply) = Envelope::<Obj>::with_reply(Ask);
/// let (Ask, responder) = envelope.downcast::<Ask>().ok().unwrap();
/// responder.unwrap().respond("answered by hand");
/// assert_eq!(tutti::block_on(reply), Ok("answered by hand"));
/// ```
pub struct Responder<R> {
    cell: Option<NonNull<ReplyCell<R>>>,
}

// SAFETY: the responder moves an `R` in (R: Send) and may wake a `Waker` (Send + Sync).
unsafe impl<R: Send> Send for Responder<R> {}
// SAFETY: `&Responder` gives no access to the cell.
unsafe impl<R: Send> Sync for Responder<R> {}

impl<R> Responder<R> {
    /// # Safety
    /// `cell` is a live cell holding a reference for the responder.
    pub(crate) unsafe fn from_cell(cell: NonNull<ReplyCell<R>>) -> Self {
        Responder { cell: Some(cell) }
    }

    /// Delivers the reply to the asker (dropped if the asker is gone).
    pub fn respond(mut self, value: R) {
        let cell = self.cell.take().expect("tutti: Responder used twice");
        // SAFETY: our reference keeps the cell alive.
        let c = unsafe { cell.as_ref() };
        c.value.with_mut(|v| {
            // SAFETY: only the responder writes the value, once, before setting `VALUE`;
            // the receiver reads it only after observing `VALUE`.
            unsafe { (*v).write(value) };
        });
        // SAFETY: we hold the responder's reference.
        unsafe { finish(cell, VALUE) };
    }

    /// Closes the slot without a reply; the asker learns `why`.
    pub(crate) fn close(mut self, why: NoReply) {
        if let Some(cell) = self.cell.take() {
            let bits = match why {
                NoReply::Dropped => CLOSED,
                NoReply::Overflowed => CLOSED | OVERFLOW,
            };
            // SAFETY: we hold the responder's reference.
            unsafe { finish(cell, bits) };
        }
    }

    /// True if the asker has dropped its [`Reply`] (the reply would be discarded).
    pub fn is_abandoned(&self) -> bool {
        match self.cell {
            // SAFETY: our reference keeps the cell alive.
            Some(c) => unsafe { c.as_ref() }.state.load(Ordering::Relaxed) >> 5 == 1,
            None => true,
        }
    }
}

/// Sets `bits` (`VALUE` or `CLOSED…`), wakes the receiver if it waits, and releases the
/// responder's reference.
///
/// # Safety
/// The caller holds the responder's reference to a live cell.
unsafe fn finish<R>(cell: NonNull<ReplyCell<R>>, bits: usize) {
    // SAFETY: the caller's reference keeps the cell alive.
    let c = unsafe { cell.as_ref() };
    // Release publishes the value; Acquire makes the receiver's waker visible.
    let prev = c.state.fetch_or(bits, Ordering::AcqRel);
    if prev & WAKER != 0 {
        let waker = c.waker.with_mut(|w| {
            // SAFETY: `WAKER` was set and we have now set `VALUE`/`CLOSED`: the receiver
            // never touches the slot again (its compare-exchange fails), so it is ours.
            unsafe { (*w).take() }
        });
        if let Some(w) = waker {
            w.wake();
        }
    }
    // SAFETY: the caller's reference.
    unsafe { release(cell) };
}

impl<R> Drop for Responder<R> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            // SAFETY: we hold the responder's reference.
            unsafe { finish(cell, CLOSED) };
        }
    }
}

impl<R> fmt::Debug for Responder<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Responder")
            .field("abandoned", &self.is_abandoned())
            .finish()
    }
}

/// A free-standing slot pair (the cell in its own allocation), for tests and models.
#[cfg(test)]
pub(crate) fn pair<R>() -> (Responder<R>, Reply<R>) {
    unsafe fn dealloc<R>(cell: NonNull<ReplyCell<R>>) {
        // SAFETY: the cell was allocated by `Box::new` below and is freed once.
        drop(unsafe { Box::from_raw(cell.as_ptr()) });
    }
    let cell = NonNull::from(Box::leak(Box::new(ReplyCell::new(dealloc::<R>))));
    // SAFETY: a fresh cell holds one reference for each party.
    unsafe { (Responder::from_cell(cell), Reply::from_cell(cell)) }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::test_util::WakeCount as Count;

    #[test]
    fn reply_before_and_after_poll() {
        let (tx, rx) = pair::<String>();
        tx.respond("a".into());
        assert_eq!(crate::runtime::block_on(rx), Ok("a".to_string()));

        let count = Arc::new(Count(0.into()));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let (tx, mut rx) = pair::<String>();
        assert!(rx.poll_reply(&mut cx).is_pending());
        assert!(
            rx.poll_reply(&mut cx).is_pending(),
            "re-poll replaces the waker"
        );
        tx.respond("b".into());
        assert_eq!(count.0.load(crate::loom::Ordering::SeqCst), 1);
        assert_eq!(rx.poll_reply(&mut cx), Poll::Ready(Ok("b".to_string())));
    }

    #[test]
    fn close_reasons_and_abandon() {
        let (tx, rx) = pair::<u8>();
        tx.close(NoReply::Overflowed);
        assert_eq!(crate::runtime::block_on(rx), Err(NoReply::Overflowed));
        let (tx, rx) = pair::<u8>();
        drop(tx);
        assert_eq!(crate::runtime::block_on(rx), Err(NoReply::Dropped));
        let (tx, rx) = pair::<Vec<u8>>();
        assert!(!tx.is_abandoned());
        drop(rx);
        assert!(tx.is_abandoned());
        tx.respond(vec![1, 2, 3]); // dropped by the last release, no leak
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::thread;
    use std::sync::Arc as StdArc;

    use crate::test_util::loom::flag;

    /// A reply racing the receiver's first poll and a re-poll with another waker: the
    /// receiver either gets the value or is woken through its latest waker, then gets it.
    #[test]
    fn respond_races_poll_and_repoll() {
        loom::model(|| {
            let (tx, mut rx) = pair::<String>();
            let t = thread::spawn(move || tx.respond("v".to_string()));
            let (_f1, w1) = flag();
            let (f2, w2) = flag();
            let mut got = None;
            if let Poll::Ready(v) = rx.poll_reply(&mut Context::from_waker(&w1)) {
                got = Some(v);
            } else if let Poll::Ready(v) = rx.poll_reply(&mut Context::from_waker(&w2)) {
                got = Some(v);
            }
            t.join().unwrap();
            let v = match got {
                Some(v) => v,
                None => {
                    assert!(f2.0.load(Ordering::Acquire), "lost wake-up");
                    match rx.poll_reply(&mut Context::from_waker(&w2)) {
                        Poll::Ready(v) => v,
                        Poll::Pending => panic!("woken but no reply"),
                    }
                }
            };
            assert_eq!(v, Ok("v".to_string()));
        });
    }

    /// A close racing a poll: the receiver learns the reason, never hangs.
    #[test]
    fn close_races_poll() {
        loom::model(|| {
            let (tx, mut rx) = pair::<u32>();
            let t = thread::spawn(move || tx.close(NoReply::Overflowed));
            let (f, w) = flag();
            let mut cx = Context::from_waker(&w);
            let r = match rx.poll_reply(&mut cx) {
                Poll::Ready(r) => r,
                Poll::Pending => {
                    t.join().unwrap();
                    assert!(f.0.load(Ordering::Acquire), "lost wake-up");
                    match rx.poll_reply(&mut cx) {
                        Poll::Ready(r) => {
                            assert_eq!(r, Err(NoReply::Overflowed));
                            return;
                        }
                        Poll::Pending => panic!("woken but not closed"),
                    }
                }
            };
            t.join().unwrap();
            assert_eq!(r, Err(NoReply::Overflowed));
        });
    }

    /// The receiver drops (after registering a waker) while the responder replies: the
    /// value is dropped exactly once and the cell is freed exactly once (loom checks
    /// the cell accesses; a double free or leak of the `Arc` payload would show).
    #[test]
    fn receiver_dropped_while_responding() {
        loom::model(|| {
            let (tx, mut rx) = pair::<StdArc<()>>();
            let payload = StdArc::new(());
            let p = payload.clone();
            let t = thread::spawn(move || tx.respond(p));
            let (_f, w) = flag();
            let _ = rx.poll_reply(&mut Context::from_waker(&w));
            drop(rx);
            t.join().unwrap();
            assert_eq!(StdArc::strong_count(&payload), 1, "value leaked or kept");
        });
    }
}
