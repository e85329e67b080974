//! The type-erased envelope: one message for an object of type `O`, with its reply slot.
//!
//! # Layout
//!
//! An envelope is one heap allocation, `#[repr(C)]`, starting with a [`Header`]:
//!
//! ```text
//! TellNode<O, M>:  [ Link | vtable ] [ message M ]
//! AskNode<O, M>:   [ Link | vtable ] [ ReplyCell<M::Reply> ] [ message M ]
//! ```
//!
//! * `Link` is an intrusive queue link for whoever queues the envelope (a mailbox), so
//!   queueing a message allocates nothing more.
//! * `vtable` is a `'static` table of functions monomorphised for `(O, M, kind)`: start
//!   the handler, discard unhandled, move the message out for typed access.
//! * For a question, the reply slot (see `reply.rs`) shares the allocation: an `ask` is
//!   one allocation in total.
//! * Small envelopes come from the sending thread's chunk (`arena.rs`), not from the
//!   global allocator. The asker's [`Reply`] holds a reference to the slot, so an
//!   `AskNode` is freed by whichever of the asker and the handler finishes last; a
//!   `TellNode` is freed as soon as its message has been moved out.
//!
//! # Handling
//!
//! [`Envelope::start`] moves the message out, calls `O::handle(msg, ctx)` and places the
//! resulting future — wrapped so that its output goes to the reply slot — in a reusable
//! block ([`Running`]), where the caller polls it in place. That is how an actor handles
//! a message without allocating for the handler and without knowing its type.

use std::any::TypeId;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::task::{Context, Poll};

use super::arena;
use super::reply::{NoReply, Reply, ReplyCell, Responder};
use super::running::{Handle, Running};
use super::Batch;
use super::{Handler, Message, Object};

use crate::loom::AtomicPtr;

/// An atomic pointer to a [`Link`] (loom's under `--cfg loom`).
pub(crate) type AtomicLinkPtr = AtomicPtr<Link>;

/// The intrusive link at the start of every envelope: the next envelope in whatever
/// queue holds this one. Owned by that queue; null outside queues.
#[repr(C)]
pub(crate) struct Link {
    pub(crate) next: AtomicPtr<Link>,
}

impl Link {
    pub(crate) fn new() -> Link {
        Link {
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

/// The common start of every envelope allocation.
#[repr(C)]
pub(crate) struct Header<O: Object> {
    link: Link,
    vtable: &'static VTable<O>,
}

/// Moves the message out and places its handler's future (in the batch's spare block if
/// it fits, counting the envelope's free in the batch).
type StartFn<O> =
    unsafe fn(NonNull<Header<O>>, *mut O, *mut <O as Object>::Context, &mut Batch) -> Running;

/// Moves the message out and runs its handler's future in the batch's spare block until
/// it first returns `Pending` (then it is returned, placed) or completes (`None`).
type RunFn<O> = unsafe fn(
    NonNull<Header<O>>,
    *mut O,
    *mut <O as Object>::Context,
    &mut Batch,
    &mut Context<'_>,
) -> Option<Running>;

/// What the erased code can do with an envelope; one `'static` table per `(O, M, kind)`.
struct VTable<O: Object> {
    /// Moves the message out and places its handler's future.
    start: StartFn<O>,
    /// Moves the message out and polls its handler's future once, in place.
    run: RunFn<O>,
    /// Drops the message unhandled; an asker learns why.
    discard: unsafe fn(NonNull<Header<O>>, NoReply),
    /// Moves `(M, Option<Responder<M::Reply>>)` into `*out` and frees what is left.
    take: unsafe fn(NonNull<Header<O>>, out: *mut ()),
    type_id: fn() -> TypeId,
    type_name: fn() -> &'static str,
    asks: bool,
}

#[repr(C)]
struct TellNode<O: Object, M> {
    header: Header<O>,
    msg: ManuallyDrop<M>,
}

#[repr(C)]
struct AskNode<O: Object, M: Message> {
    header: Header<O>,
    reply: ReplyCell<M::Reply>,
    msg: ManuallyDrop<M>,
}

/// A handler's future that replies with its output: routed to the reply slot
/// (if any).
struct Replying<F, R> {
    fut: F,
    responder: Option<Responder<R>>,
}

impl<F: Future<Output = R>, R> Future for Replying<F, R> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `fut` is structurally pinned (never moved out of `self`); `responder`
        // is not pinned and only taken.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        match unsafe { Pin::new_unchecked(&mut this.fut) }.poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(r) => {
                if let Some(tx) = this.responder.take() {
                    tx.respond(r);
                }
                Poll::Ready(())
            }
        }
    }
}

impl<O: Handler<M>, M: Message> TellNode<O, M> {
    const VTABLE: VTable<O> = VTable {
        start: Self::start,
        run: Self::run,
        discard: Self::discard,
        take: Self::take,
        type_id: TypeId::of::<M>,
        type_name: std::any::type_name::<M>,
        asks: false,
    };

    /// Moves the message out and frees the node.
    unsafe fn unpack(h: NonNull<Header<O>>) -> M {
        // SAFETY: forwarded; the batch settles when dropped.
        unsafe { Self::unpack_into(h, &mut arena::FreeBatch::default()) }
    }

    /// Moves the message out and frees the node, counting the free in `frees`.
    unsafe fn unpack_into(h: NonNull<Header<O>>, frees: &mut arena::FreeBatch) -> M {
        let node = h.cast::<Self>().as_ptr();
        // SAFETY: `h` is a live TellNode owned by the caller; the message is moved out
        // once and the node freed without dropping it again (nothing else in it needs
        // dropping).
        unsafe {
            let msg = ManuallyDrop::take(&mut (*node).msg);
            frees.free_for(NonNull::new_unchecked(node));
            msg
        }
    }

    unsafe fn start(
        h: NonNull<Header<O>>,
        obj: *mut O,
        ctx: *mut O::Context,
        batch: &mut Batch,
    ) -> Running {
        // SAFETY: the caller owns the envelope; see `Envelope::start` for `obj`/`ctx`.
        unsafe {
            let msg = Self::unpack_into(h, &mut batch.frees);
            let fut = (*obj).handle(msg, &mut *ctx);
            Running::place_with(
                Replying {
                    fut,
                    responder: None,
                },
                &mut batch.spare,
            )
        }
    }

    unsafe fn run(
        h: NonNull<Header<O>>,
        obj: *mut O,
        ctx: *mut O::Context,
        batch: &mut Batch,
        cx: &mut Context<'_>,
    ) -> Option<Running> {
        // SAFETY: as in `start`.
        unsafe {
            let msg = Self::unpack_into(h, &mut batch.frees);
            let fut = (*obj).handle(msg, &mut *ctx);
            Running::run_with(
                Replying {
                    fut,
                    responder: None,
                },
                &mut batch.spare,
                cx,
            )
            .pending()
        }
    }

    unsafe fn discard(h: NonNull<Header<O>>, _why: NoReply) {
        // SAFETY: the caller owns the envelope.
        drop(unsafe { Self::unpack(h) });
    }

    unsafe fn take(h: NonNull<Header<O>>, out: *mut ()) {
        // SAFETY: the caller owns the envelope and `out` points at an uninitialised
        // `(M, Option<Responder<M::Reply>>)` (checked by type id in `downcast`).
        unsafe {
            let msg = Self::unpack(h);
            out.cast::<(M, Option<Responder<M::Reply>>)>()
                .write((msg, None));
        }
    }
}

impl<O: Handler<M>, M: Message> AskNode<O, M> {
    const VTABLE: VTable<O> = VTable {
        start: Self::start,
        run: Self::run,
        discard: Self::discard,
        take: Self::take,
        type_id: TypeId::of::<M>,
        type_name: std::any::type_name::<M>,
        asks: true,
    };

    /// Frees the node once its reply cell is empty (called by the cell's last release).
    unsafe fn dealloc(cell: NonNull<ReplyCell<M::Reply>>) {
        let offset = std::mem::offset_of!(Self, reply);
        // SAFETY: the cell is embedded in an AskNode at `offset`; the message has been
        // moved out or dropped before the mailbox side released the cell, and the
        // header and the (emptied) cell need no drop, so freeing the memory is all that
        // is left. The pointer keeps the provenance of the whole node.
        unsafe {
            let node = cell.as_ptr().byte_sub(offset).cast::<Self>();
            arena::free_for(NonNull::new_unchecked(node));
        }
    }

    /// Moves the message out and turns the mailbox side's reference into a responder.
    unsafe fn unpack(h: NonNull<Header<O>>) -> (M, Responder<M::Reply>) {
        let node = h.cast::<Self>().as_ptr();
        // SAFETY: `h` is a live AskNode owned by the caller; the message is moved out
        // once; the mailbox side's reply reference moves into the responder.
        unsafe {
            let msg = ManuallyDrop::take(&mut (*node).msg);
            let cell = NonNull::new_unchecked(ptr::addr_of_mut!((*node).reply));
            (msg, Responder::from_cell(cell))
        }
    }

    unsafe fn start(
        h: NonNull<Header<O>>,
        obj: *mut O,
        ctx: *mut O::Context,
        batch: &mut Batch,
    ) -> Running {
        // SAFETY: as in `TellNode::start`.
        unsafe {
            let (msg, responder) = Self::unpack(h);
            let fut = (*obj).handle(msg, &mut *ctx);
            Running::place_with(
                Replying {
                    fut,
                    responder: Some(responder),
                },
                &mut batch.spare,
            )
        }
    }

    unsafe fn run(
        h: NonNull<Header<O>>,
        obj: *mut O,
        ctx: *mut O::Context,
        batch: &mut Batch,
        cx: &mut Context<'_>,
    ) -> Option<Running> {
        // SAFETY: as in `TellNode::start`.
        unsafe {
            let (msg, responder) = Self::unpack(h);
            let fut = (*obj).handle(msg, &mut *ctx);
            Running::run_with(
                Replying {
                    fut,
                    responder: Some(responder),
                },
                &mut batch.spare,
                cx,
            )
            .pending()
        }
    }

    unsafe fn discard(h: NonNull<Header<O>>, why: NoReply) {
        // SAFETY: the caller owns the envelope.
        let (msg, responder) = unsafe { Self::unpack(h) };
        drop(msg);
        responder.close(why);
    }

    unsafe fn take(h: NonNull<Header<O>>, out: *mut ()) {
        // SAFETY: as in `TellNode::take`.
        unsafe {
            let (msg, responder) = Self::unpack(h);
            out.cast::<(M, Option<Responder<M::Reply>>)>()
                .write((msg, Some(responder)));
        }
    }
}

/// A message taken out of its [`Envelope`] by [`Envelope::downcast`]: the message, and
/// for a question the [`Responder`] that answers it.
///
/// ```
/// # use tutti::msg::{Envelope, Handler, Message, Object, Parts};
/// # struct Ping; impl Message for Ping { type Reply = u8; }
/// # struct O; impl Object for O { type Context = (); }
/// # impl Handler<Ping> for O { async fn handle(&mut self, _: Ping, _: &mut ()) -> u8 { 0 } }
/// let (e, reply) = Envelope::<O>::with_reply(Ping);
/// let parts: Parts<Ping> = e.downcast().ok().unwrap();
/// parts.1.unwrap().respond(7);
/// assert_eq!(tutti::block_on(reply), Ok(7));
/// ```
pub type Parts<M> = (M, Option<Responder<<M as Message>::Reply>>);

/// One message for an object of type `O`, its type erased, with the reply slot of a
/// question.
///
/// Envelopes are what mailboxes queue. An envelope can be applied to any `O` with
/// [`handle`](Envelope::handle), or taken apart with [`downcast`](Envelope::downcast).
/// Dropping an unhandled envelope tells an asker [`NoReply::Dropped`].
///
/// ```
/// use tutti::msg::{Envelope, Handler, Message, Object};
///
/// struct Add(u64);
/// impl Message for Add { type Reply = u64; }
/// struct Reset;
/// impl Message for Reset { type Reply = (); }
///
/// #[derive(Default)]
/// struct Counter { total: u64 }
/// impl Object for Counter { type Context = (); }
/// impl Handler<Add> for Counter {
///     async fn handle(&mut self, m: Add, _: &mut ()) -> u64 { self.total += m.0; self.total }
/// }
/// impl Handler<Reset> for Counter {
///     async fn handle(&mut self, _: Reset, _: &mut ()) { self.total = 0; }
/// }
///
/// // Different message types, one queue.
/// let (ask, total) = Envelope::<Counter>::with_reply(Add(5));
/// let queue = vec![Envelope::new(Add(2)), Envelope::new(Reset), ask];
/// let mut counter = Counter::default();
/// tutti::block_on(async {
///     for e in queue {
///         e.handle(&mut counter, &mut ()).await;
///     }
/// });
/// assert_eq!(tutti::block_on(total), Ok(5));
/// ```
pub struct Envelope<O: Object> {
    header: NonNull<Header<O>>,
    _owns: PhantomData<O>,
}

// SAFETY: an envelope owns a `Message` (Send) and the responder side of a reply slot
// (Send when the reply is Send, which `Message` requires).
unsafe impl<O: Object> Send for Envelope<O> {}

impl<O: Object> Envelope<O> {
    /// A statement: `msg` for an `O`, no reply expected.
    pub fn new<M: Message>(msg: M) -> Self
    where
        O: Handler<M>,
    {
        let node = arena::alloc_for::<TellNode<O, M>>();
        // SAFETY: fresh memory for one node.
        unsafe {
            node.as_ptr().write(TellNode {
                header: Header {
                    link: Link::new(),
                    vtable: &TellNode::<O, M>::VTABLE,
                },
                msg: ManuallyDrop::new(msg),
            })
        };
        Envelope {
            header: node.cast(),
            _owns: PhantomData,
        }
    }

    /// A question: `msg` for an `O`, and the future of its reply.
    pub fn with_reply<M: Message>(msg: M) -> (Self, Reply<M::Reply>)
    where
        O: Handler<M>,
    {
        let node = arena::alloc_for::<AskNode<O, M>>().as_ptr();
        // SAFETY: fresh memory for one node; the reply cell starts with a reference
        // for the receiver (given to `Reply`) and one for the mailbox side (kept by the
        // envelope until the message is handled or discarded).
        unsafe {
            node.write(AskNode {
                header: Header {
                    link: Link::new(),
                    vtable: &AskNode::<O, M>::VTABLE,
                },
                reply: ReplyCell::new(AskNode::<O, M>::dealloc),
                msg: ManuallyDrop::new(msg),
            });
            let cell = NonNull::new_unchecked(ptr::addr_of_mut!((*node).reply));
            let env = Envelope {
                header: NonNull::new_unchecked(node).cast(),
                _owns: PhantomData,
            };
            (env, Reply::from_cell(cell))
        }
    }

    fn vtable(&self) -> &'static VTable<O> {
        // SAFETY: we own a live envelope whose header is initialised.
        unsafe { self.header.as_ref() }.vtable
    }

    /// The message's type name, for diagnostics.
    ///
    /// ```
    /// # use tutti::msg::{Envelope, Handler, Message, Object};
    /// # struct Ping; impl Message for Ping { type Reply = (); }
    /// # struct O; impl Object for O { type Context = (); }
    /// # impl Handler<Ping> for O { async fn handle(&mut self, _: Ping, _: &mut ()) {} }
    /// assert!(Envelope::<O>::new(Ping).message_type().ends_with("Ping"));
    /// ```
    pub fn message_type(&self) -> &'static str {
        (self.vtable().type_name)()
    }

    /// True if the message is an `M`.
    ///
    /// ```
    /// # use tutti::msg::{Envelope, Handler, Message, Object};
    /// # struct Ping; impl Message for Ping { type Reply = (); }
    /// # struct Pong; impl Message for Pong { type Reply = (); }
    /// # struct O; impl Object for O { type Context = (); }
    /// # impl Handler<Ping> for O { async fn handle(&mut self, _: Ping, _: &mut ()) {} }
    /// let e = Envelope::<O>::new(Ping);
    /// assert!(e.is::<Ping>() && !e.is::<Pong>());
    /// ```
    pub fn is<M: Message>(&self) -> bool {
        (self.vtable().type_id)() == TypeId::of::<M>()
    }

    /// True if the sender waits for a reply (the envelope came from
    /// [`with_reply`](Envelope::with_reply)).
    ///
    /// ```
    /// # use tutti::msg::{Envelope, Handler, Message, Object};
    /// # struct Ping; impl Message for Ping { type Reply = (); }
    /// # struct O; impl Object for O { type Context = (); }
    /// # impl Handler<Ping> for O { async fn handle(&mut self, _: Ping, _: &mut ()) {} }
    /// assert!(!Envelope::<O>::new(Ping).expects_reply());
    /// assert!(Envelope::<O>::with_reply(Ping).0.expects_reply());
    /// ```
    pub fn expects_reply(&self) -> bool {
        self.vtable().asks
    }

    /// Takes the envelope apart if its message is an `M`: the message, and for a
    /// question the [`Responder`] to answer it with. Otherwise gives the envelope back.
    ///
    /// ```
    /// # use tutti::msg::{Envelope, Handler, Message, Object};
    /// # struct Ping(u8); impl Message for Ping { type Reply = (); }
    /// # struct Pong; impl Message for Pong { type Reply = (); }
    /// # struct O; impl Object for O { type Context = (); }
    /// # impl Handler<Ping> for O { async fn handle(&mut self, _: Ping, _: &mut ()) {} }
    /// let e = Envelope::<O>::new(Ping(7));
    /// let e = e.downcast::<Pong>().err().unwrap();
    /// let (Ping(n), responder) = e.downcast::<Ping>().ok().unwrap();
    /// assert_eq!((n, responder.is_none()), (7, true));
    /// ```
    pub fn downcast<M: Message>(self) -> Result<Parts<M>, Self> {
        if !self.is::<M>() {
            return Err(self);
        }
        let this = ManuallyDrop::new(self);
        let mut out = std::mem::MaybeUninit::<Parts<M>>::uninit();
        // SAFETY: the type id matched, so `take` writes exactly this tuple type; we
        // own the envelope and give it up (ManuallyDrop: not discarded again).
        unsafe {
            (this.vtable().take)(this.header, out.as_mut_ptr().cast());
            Ok(out.assume_init())
        }
    }

    /// Applies the message to `obj`: a future that runs `obj`'s handler with `ctx` and
    /// delivers its reply to the asker, if any.
    ///
    /// The handler's future is placed in a reusable block (no allocation in steady
    /// state), so this is cheap enough to call for every message, e.g. inside a
    /// handler that drains its mailbox with
    /// [`Context::try_next`](crate::actor::Context::try_next).
    ///
    /// ```
    /// # use tutti::msg::{Envelope, Handler, Message, Object};
    /// struct Hello;
    /// impl Message for Hello { type Reply = String; }
    /// struct Greeter(&'static str);
    /// impl Object for Greeter { type Context = u32; }
    /// impl Handler<Hello> for Greeter {
    ///     async fn handle(&mut self, _: Hello, calls: &mut u32) -> String {
    ///         *calls += 1;
    ///         format!("hello from {}", self.0)
    ///     }
    /// }
    /// let mut calls = 0;
    /// let (e, reply) = Envelope::<Greeter>::with_reply(Hello);
    /// tutti::block_on(e.handle(&mut Greeter("tutti"), &mut calls));
    /// assert_eq!(tutti::block_on(reply).unwrap(), "hello from tutti");
    /// assert_eq!(calls, 1);
    /// ```
    pub fn handle<'a>(self, obj: &'a mut O, ctx: &'a mut O::Context) -> Handle<'a> {
        // SAFETY: the borrows live for 'a, which the returned future carries.
        unsafe { Handle::new(self.start(obj, ctx, &mut Batch::default())) }
    }

    /// Moves the message out, calls the handler and places its future for polling.
    ///
    /// # Safety
    /// `obj` and `ctx` are valid, and used by nobody else, until the returned
    /// [`Running`] has completed or been dropped. The future goes into the batch's
    /// spare block if it fits; the envelope's free is counted in the batch.
    pub(crate) unsafe fn start(
        self,
        obj: *mut O,
        ctx: *mut O::Context,
        batch: &mut Batch,
    ) -> Running {
        let this = ManuallyDrop::new(self);
        // SAFETY: we own the envelope and give it up; the caller vouches for obj/ctx.
        unsafe { (this.vtable().start)(this.header, obj, ctx, batch) }
    }

    /// Moves the message out and runs its handler until it first returns `Pending`
    /// (then its placed future is returned, for the caller to poll on) or completes
    /// (`None`). The future runs in the batch's spare block; the envelope's free is
    /// counted in the batch.
    ///
    /// # Safety
    /// As for [`start`](Envelope::start).
    pub(crate) unsafe fn run(
        self,
        obj: *mut O,
        ctx: *mut O::Context,
        batch: &mut Batch,
        cx: &mut Context<'_>,
    ) -> Option<Running> {
        let this = ManuallyDrop::new(self);
        // SAFETY: we own the envelope and give it up; the caller vouches for obj/ctx.
        unsafe { (this.vtable().run)(this.header, obj, ctx, batch, cx) }
    }

    /// Drops the message unhandled; an asker learns `why`.
    pub(crate) fn discard(self, why: NoReply) {
        let this = ManuallyDrop::new(self);
        // SAFETY: we own the envelope and give it up.
        unsafe { (this.vtable().discard)(this.header, why) }
    }

    /// The envelope's address: names its flow in a trace (unique while it is queued).
    pub(crate) fn trace_id(&self) -> usize {
        self.header.as_ptr() as usize
    }

    /// What [`message_type`](Self::message_type) calls: a trace keeps the
    /// function and names the message when it is written out.
    pub(crate) fn message_type_fn(&self) -> fn() -> &'static str {
        self.vtable().type_name
    }

    /// Gives up ownership, for an intrusive queue: the link at the returned address.
    pub(crate) fn into_link(self) -> NonNull<Link> {
        ManuallyDrop::new(self).header.cast()
    }

    /// Takes back ownership of an envelope that [`into_link`](Self::into_link) gave up.
    ///
    /// # Safety
    /// `link` came from `into_link` on an `Envelope<O>` and is taken back once.
    pub(crate) unsafe fn from_link(link: NonNull<Link>) -> Self {
        Envelope {
            header: link.cast(),
            _owns: PhantomData,
        }
    }
}

impl<O: Object> Drop for Envelope<O> {
    fn drop(&mut self) {
        // SAFETY: we own the envelope; it is discarded once.
        unsafe { (self.vtable().discard)(self.header, NoReply::Dropped) }
    }
}

impl<O: Object> fmt::Debug for Envelope<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope")
            .field("message", &self.message_type())
            .field("expects_reply", &self.expects_reply())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::loom::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Tracked(Arc<AtomicUsize>);
    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    impl Message for Tracked {
        type Reply = Tracked;
    }

    struct Echo;
    impl Object for Echo {
        type Context = ();
    }
    impl Handler<Tracked> for Echo {
        async fn handle(&mut self, m: Tracked, _: &mut ()) -> Tracked {
            m
        }
    }

    #[test]
    fn every_path_drops_the_message_exactly_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = || Tracked(drops.clone());
        // tell handled, tell dropped, tell discarded
        crate::runtime::block_on(Envelope::<Echo>::new(t()).handle(&mut Echo, &mut ()));
        drop(Envelope::<Echo>::new(t()));
        Envelope::<Echo>::new(t()).discard(NoReply::Overflowed);
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        // ask answered then reply taken; ask answered, reply dropped untaken
        let (e, r) = Envelope::<Echo>::with_reply(t());
        crate::runtime::block_on(e.handle(&mut Echo, &mut ()));
        drop(crate::runtime::block_on(r).unwrap());
        let (e, r) = Envelope::<Echo>::with_reply(t());
        crate::runtime::block_on(e.handle(&mut Echo, &mut ()));
        drop(r);
        assert_eq!(drops.load(Ordering::SeqCst), 5);
        // ask discarded: the message dropped, the asker told why
        let (e, r) = Envelope::<Echo>::with_reply(t());
        e.discard(NoReply::Overflowed);
        assert_eq!(crate::runtime::block_on(r).err(), Some(NoReply::Overflowed));
        // downcast: message moved out, responder used later
        let (e, r) = Envelope::<Echo>::with_reply(t());
        let (m, tx) = e.downcast::<Tracked>().ok().unwrap();
        tx.unwrap().respond(m);
        drop(crate::runtime::block_on(r).unwrap());
        assert_eq!(drops.load(Ordering::SeqCst), 7);
        // queued through the link and back
        let link = Envelope::<Echo>::new(t()).into_link();
        // SAFETY: from `into_link` just above, taken back once.
        drop(unsafe { Envelope::<Echo>::from_link(link) });
        assert_eq!(drops.load(Ordering::SeqCst), 8);
    }

    #[test]
    fn handler_that_awaits_keeps_its_borrows() {
        struct Slow {
            seen: Vec<u32>,
        }
        struct Push(u32);
        impl Message for Push {
            type Reply = usize;
        }
        impl Object for Slow {
            type Context = u32;
        }
        impl Handler<Push> for Slow {
            async fn handle(&mut self, m: Push, ctx: &mut u32) -> usize {
                crate::runtime::yield_now().await;
                *ctx += 1;
                self.seen.push(m.0);
                self.seen.len()
            }
        }
        let mut s = Slow { seen: vec![] };
        let mut calls = 0;
        let (e, r) = Envelope::<Slow>::with_reply(Push(9));
        crate::runtime::block_on(async {
            e.handle(&mut s, &mut calls).await;
            Envelope::<Slow>::new(Push(10))
                .handle(&mut s, &mut calls)
                .await;
        });
        assert_eq!(crate::runtime::block_on(r), Ok(1));
        assert_eq!((s.seen, calls), (vec![9, 10], 2));
    }
}
