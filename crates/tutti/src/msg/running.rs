//! A handler's future, placed in a reusable block instead of a fresh box.
//!
//! Every message is handled by a future (`Handler::handle` is an `async fn`), whose type
//! is only known inside the envelope's monomorphised code. The actor loop must be able
//! to keep it across polls when it awaits, so it has to live somewhere with a stable
//! address — but boxing it would cost an allocation per message, and most handlers
//! finish on their first poll.
//!
//! So each thread keeps a small cache of heap **blocks**. [`Running::place`] takes a
//! block that fits (allocating only when the cache has none), writes a header with the
//! future's poll and drop functions, moves the future in behind it, and returns a
//! one-pointer handle. The future is polled in place; when it completes (or is
//! cancelled) it is dropped in place and the block goes back to the cache of whichever
//! thread finished it. A handler that awaits simply keeps its block until it completes.
//! In steady state a message costs no allocation for its handler.
//!
//! A caller that handles many messages in a row (the actor loop's turn) keeps the block
//! of a handler that completed as a [`Spare`] and places the next handler's future in it,
//! so a batch touches the thread's cache once, not twice per message. It also uses
//! [`Running::run_with`], which moves the future into the spare block and polls it there
//! directly: a future that completes on that first poll — most handlers — never gets a
//! header, and its block stays the spare.
//!
//! A future's output is handed back by the poll that completes it
//! ([`Running<O>`](Running)); [`Running::start`] is the safe form for a future that
//! borrows nothing (`'static`), which is how RMI runs its methods and gets back
//! what each returns.
//!
//! Blocks are at least [`MIN_BLOCK`] bytes, aligned to [`BLOCK_ALIGN`]; a future that
//! needs a stricter alignment gets a dedicated block that is freed, not cached. Each
//! thread caches at most [`CACHED_BLOCKS`] blocks (two, so that a handler that handles a
//! nested message with [`Envelope::handle`](super::Envelope::handle) also reuses one).

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::task::{Context, Poll};

/// Smallest block size, header included.
pub(crate) const MIN_BLOCK: usize = 256;
/// Alignment of every cached block.
pub(crate) const BLOCK_ALIGN: usize = 16;
/// Blocks each thread keeps for reuse.
const CACHED_BLOCKS: usize = 2;

/// The start of every block; `O` is the future's output.
#[repr(C)]
struct BlockHeader<O> {
    /// The block's allocation layout.
    size: usize,
    align: usize,
    /// Offset of the future from the block start.
    offset: usize,
    /// Set once the future has completed and been dropped in place.
    done: bool,
    poll: unsafe fn(*mut u8, &mut Context<'_>) -> Poll<O>,
    drop: unsafe fn(*mut u8),
}

unsafe fn poll_in_place<F: Future>(p: *mut u8, cx: &mut Context<'_>) -> Poll<F::Output> {
    // SAFETY: `p` points at a live `F` that never moves (it stays in its block until it
    // is dropped in place).
    unsafe { Pin::new_unchecked(&mut *p.cast::<F>()) }.poll(cx)
}

unsafe fn drop_in_place<F>(p: *mut u8) {
    // SAFETY: `p` points at a live `F`, dropped exactly once.
    unsafe { ptr::drop_in_place(p.cast::<F>()) }
}

/// This thread's cached blocks (size of each; null = empty).
struct BlockCache {
    blocks: [Cell<(*mut u8, usize)>; CACHED_BLOCKS],
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        for b in &self.blocks {
            let (p, size) = b.replace((ptr::null_mut(), 0));
            if !p.is_null() {
                // SAFETY: cached blocks were allocated with this layout and are owned by
                // the cache.
                unsafe { alloc::dealloc(p, Layout::from_size_align_unchecked(size, BLOCK_ALIGN)) };
            }
        }
    }
}

std::thread_local! {
    static CACHE: BlockCache = const {
        BlockCache { blocks: [const { Cell::new((ptr::null_mut(), 0)) }; CACHED_BLOCKS] }
    };
}

/// A block of at least `size` bytes aligned to `BLOCK_ALIGN`: a cached one, or new.
fn take_block(size: usize) -> (*mut u8, usize) {
    let cached = CACHE
        .try_with(|c| {
            for b in &c.blocks {
                let (p, s) = b.get();
                if !p.is_null() && s >= size {
                    b.set((ptr::null_mut(), 0));
                    return Some((p, s));
                }
            }
            None
        })
        .ok()
        .flatten();
    cached.unwrap_or_else(|| new_block(size))
}

#[cold]
fn new_block(size: usize) -> (*mut u8, usize) {
    let size = size.max(MIN_BLOCK).next_power_of_two();
    let layout =
        Layout::from_size_align(size, BLOCK_ALIGN).expect("tutti: handler future too large");
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { alloc::alloc(layout) };
    if p.is_null() {
        alloc::handle_alloc_error(layout);
    }
    (p, size)
}

/// Gives a block back to this thread's cache, or frees it.
///
/// # Safety
/// `p` is a block of `size` bytes aligned to `align`, owned by the caller, not used after.
unsafe fn put_block(p: *mut u8, size: usize, align: usize) {
    if align == BLOCK_ALIGN {
        let kept = CACHE.try_with(|c| {
            // Keep the larger blocks: an empty slot, else replace a smaller block.
            let mut smallest = 0;
            for (i, b) in c.blocks.iter().enumerate() {
                let (q, s) = b.get();
                if q.is_null() {
                    b.set((p, size));
                    return None;
                }
                if s < c.blocks[smallest].get().1 {
                    smallest = i;
                }
            }
            let (q, s) = c.blocks[smallest].get();
            if s < size {
                c.blocks[smallest].set((p, size));
                Some((q, s))
            } else {
                Some((p, size))
            }
        });
        match kept {
            Ok(None) => {}
            Ok(Some((q, s))) => {
                // SAFETY: `q` is a block of `s` bytes we own and no longer cache.
                unsafe { alloc::dealloc(q, Layout::from_size_align_unchecked(s, BLOCK_ALIGN)) }
            }
            // SAFETY: as above (thread teardown: no cache any more).
            Err(_) => unsafe { alloc::dealloc(p, Layout::from_size_align_unchecked(size, align)) },
        }
    } else {
        // SAFETY: the caller owns the block, allocated with this layout.
        unsafe { alloc::dealloc(p, Layout::from_size_align_unchecked(size, align)) }
    }
}

/// A block kept for the next future by a caller that places many in a row; given back
/// to the thread's cache when dropped.
#[derive(Default)]
pub(crate) struct Spare(Option<(NonNull<u8>, usize)>);

impl Spare {
    /// A cached-alignment block of at least `size` bytes: this one if it fits.
    fn take(&mut self, size: usize) -> (*mut u8, usize) {
        match self.0.take() {
            Some((p, s)) if s >= size => (p.as_ptr(), s),
            Some((p, s)) => {
                // SAFETY: a block of `s` bytes we own (see `Running::recycle`).
                unsafe { put_block(p.as_ptr(), s, BLOCK_ALIGN) };
                take_block(size)
            }
            None => take_block(size),
        }
    }
}

impl Spare {
    /// Keeps a cached-alignment block of `size` bytes (giving back the one it had).
    fn keep(&mut self, p: *mut u8, size: usize) {
        if let Some((q, s)) = self.0.take() {
            // SAFETY: a block of `s` bytes we own, not used after.
            unsafe { put_block(q.as_ptr(), s, BLOCK_ALIGN) };
        }
        self.0 = NonNull::new(p).map(|p| (p, size));
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        if let Some((p, s)) = self.0.take() {
            // SAFETY: a block of `s` bytes we own, not used after.
            unsafe { put_block(p.as_ptr(), s, BLOCK_ALIGN) };
        }
    }
}

/// A type-erased future with output `O`, placed in a block, polled in place.
///
/// `Running` is one pointer. It owns the block and the future in it.
pub(crate) struct Running<O = ()> {
    block: NonNull<BlockHeader<O>>,
}

// SAFETY: `place_with` only accepts `Send` futures, and the block is owned exclusively;
// the output is only ever handed out by value, by the poll that completes the future.
unsafe impl<O> Send for Running<O> {}

/// What [`Running::run_with`] and [`Running::start`] did with a future: it completed on
/// its first poll (its output), or it is pending, placed for further polls.
pub(crate) enum Started<O> {
    /// It completed: its output.
    Done(O),
    /// It is pending: poll it on.
    Running(Running<O>),
}

impl<O> Started<O> {
    /// The placed future if it is still running (its output, if it completed, is
    /// dropped).
    #[inline]
    pub(crate) fn pending(self) -> Option<Running<O>> {
        match self {
            Started::Done(_) => None,
            Started::Running(r) => Some(r),
        }
    }
}

impl<O> Running<O> {
    /// [`run_with`](Running::run_with) for a future that borrows nothing (`'static`):
    /// nothing it uses can go away before it does, so no promise is needed.
    #[inline]
    pub(crate) fn start<F>(future: F, spare: &mut Spare, cx: &mut Context<'_>) -> Started<O>
    where
        F: Future<Output = O> + Send + 'static,
    {
        // SAFETY: the future is `'static`: it borrows nothing that could end before it.
        unsafe { Running::run_with(future, spare, cx) }
    }

    /// [`place_with`](Running::place_with) without a spare block (tests).
    ///
    /// # Safety
    /// As for `place_with`.
    #[cfg(test)]
    pub(crate) unsafe fn place<F: Future<Output = O> + Send>(future: F) -> Running<O> {
        // SAFETY: forwarded.
        unsafe { Running::place_with(future, &mut Spare::default()) }
    }

    /// Moves `future` into a block: `spare`'s if it has one that fits, else one from
    /// this thread's cache.
    ///
    /// # Safety
    /// Whatever `future` borrows must stay valid, and not be used by anyone else, until
    /// the returned `Running` has completed or been dropped (the lifetime is erased).
    pub(crate) unsafe fn place_with<F: Future<Output = O> + Send>(
        future: F,
        spare: &mut Spare,
    ) -> Running<O> {
        let header = Layout::new::<BlockHeader<O>>();
        let (with_fut, offset) = header
            .extend(Layout::new::<F>())
            .expect("tutti: handler future too large");
        let (p, size, align) = if Layout::new::<F>().align() <= BLOCK_ALIGN {
            let (p, size) = spare.take(with_fut.size());
            (p, size, BLOCK_ALIGN)
        } else {
            let layout = with_fut.pad_to_align();
            // SAFETY: the layout has a non-zero size (it contains the header).
            let p = unsafe { alloc::alloc(layout) };
            if p.is_null() {
                alloc::handle_alloc_error(layout);
            }
            (p, layout.size(), layout.align())
        };
        let block = p.cast::<BlockHeader<O>>();
        // SAFETY: the block is fresh, large enough for the header and for `F` at
        // `offset`, and aligned for both.
        unsafe {
            block.write(BlockHeader {
                size,
                align,
                offset,
                done: false,
                poll: poll_in_place::<F>,
                drop: drop_in_place::<F>,
            });
            p.add(offset).cast::<F>().write(future);
            Running {
                block: NonNull::new_unchecked(block),
            }
        }
    }

    /// Moves `future` into `spare`'s block (or a fresh one) and polls it there once. If
    /// it completes — the common case — it is dropped in place, the block stays in
    /// `spare` for the next future and its output is returned: no header is written and
    /// the poll is a direct call. If it is pending, the block gets its header and becomes
    /// the returned `Running`. A panic while polling drops the future in place, keeps
    /// the block, and propagates.
    ///
    /// # Safety
    /// As for [`place_with`](Running::place_with).
    pub(crate) unsafe fn run_with<F: Future<Output = O> + Send>(
        future: F,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Started<O> {
        let header = Layout::new::<BlockHeader<O>>();
        let (with_fut, offset) = header
            .extend(Layout::new::<F>())
            .expect("tutti: handler future too large");
        if Layout::new::<F>().align() > BLOCK_ALIGN {
            // Rare: a dedicated block, polled through the general path.
            // SAFETY: forwarded.
            let mut r = unsafe { Running::place_with(future, spare) };
            return match r.poll(cx) {
                Poll::Ready(out) => Started::Done(out),
                Poll::Pending => Started::Running(r),
            };
        }
        let (p, size) = spare.take(with_fut.size());
        // SAFETY: the block is large enough for `F` at `offset` and aligned for it.
        let fut = unsafe { p.add(offset).cast::<F>() };
        // SAFETY: as above; the block is ours.
        unsafe { fut.write(future) };

        /// If the poll panics: drop the future in place, keep the block.
        struct Unwind<'s, F> {
            fut: *mut F,
            block: (*mut u8, usize),
            spare: &'s mut Spare,
        }
        impl<F> Drop for Unwind<'_, F> {
            fn drop(&mut self) {
                // The block first, so that it is not lost if the drop panics too.
                self.spare.keep(self.block.0, self.block.1);
                // SAFETY: the future is live in the block and dropped once.
                unsafe { ptr::drop_in_place(self.fut) };
            }
        }
        let unwind = Unwind {
            fut,
            block: (p, size),
            spare,
        };
        // SAFETY: the future stays in place until it is dropped (it is pinned there).
        let polled = unsafe { Pin::new_unchecked(&mut *fut) }.poll(cx);
        match polled {
            // The guard keeps the block and drops the finished future.
            Poll::Ready(out) => Started::Done(out),
            Poll::Pending => {
                std::mem::forget(unwind);
                let block = p.cast::<BlockHeader<O>>();
                // SAFETY: the block's start is free for the header and aligned for it.
                unsafe {
                    block.write(BlockHeader {
                        size,
                        align: BLOCK_ALIGN,
                        offset,
                        done: false,
                        poll: poll_in_place::<F>,
                        drop: drop_in_place::<F>,
                    });
                    Started::Running(Running {
                        block: NonNull::new_unchecked(block),
                    })
                }
            }
        }
    }

    /// Polls the future; once it is ready it is dropped in place (releasing its
    /// borrows) and its output returned.
    ///
    /// # Panics
    /// If polled again after that.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<O> {
        let h = self.block.as_ptr();
        // SAFETY: we own the block; its header is initialised.
        unsafe {
            assert!(
                !(*h).done,
                "tutti: a placed future was polled after it completed"
            );
            let fut = h.cast::<u8>().add((*h).offset);
            match ((*h).poll)(fut, cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(out) => {
                    // Mark first: if the drop panics, the future must not be dropped
                    // again by `Drop`.
                    (*h).done = true;
                    ((*h).drop)(fut);
                    Poll::Ready(out)
                }
            }
        }
    }
}

impl<O> Running<O> {
    /// Keeps the block of a completed future as `spare` (if it has none and the block
    /// is a cacheable one); otherwise drops as usual.
    pub(crate) fn recycle(self, spare: &mut Spare) {
        let h = self.block.as_ptr();
        // SAFETY: we own the block; its header is initialised.
        let (done, size, align) = unsafe { ((*h).done, (*h).size, (*h).align) };
        if done && align == BLOCK_ALIGN && spare.0.is_none() {
            std::mem::forget(self);
            // SAFETY: the future was dropped in place; the block is ours, untouched by
            // anyone else from now on.
            spare.0 = Some((unsafe { NonNull::new_unchecked(h.cast::<u8>()) }, size));
        }
    }
}

impl<O> Drop for Running<O> {
    fn drop(&mut self) {
        let h = self.block.as_ptr();
        /// Frees the block even if the future's destructor panics.
        struct Free<O>(*mut BlockHeader<O>);
        impl<O> Drop for Free<O> {
            fn drop(&mut self) {
                // SAFETY: the header is initialised; the block is ours and unused after.
                unsafe {
                    let (size, align) = ((*self.0).size, (*self.0).align);
                    put_block(self.0.cast(), size, align);
                }
            }
        }
        let _free = Free(h);
        // SAFETY: we own the block; the future is live unless `done`.
        unsafe {
            if !(*h).done {
                (*h).done = true;
                ((*h).drop)(h.cast::<u8>().add((*h).offset));
            }
        }
    }
}

/// The future returned by [`Envelope::handle`](super::Envelope::handle): the handler of
/// one message, applied to a borrowed object and context, run in place.
#[must_use = "a handler does nothing unless awaited"]
pub struct Handle<'a> {
    /// `None` once the handler has completed.
    running: Option<Running>,
    _borrows: PhantomData<&'a mut ()>,
}

impl<'a> Handle<'a> {
    /// # Safety
    /// `running` borrows nothing that outlives `'a`.
    pub(crate) unsafe fn new(running: Running) -> Self {
        Handle {
            running: Some(running),
            _borrows: PhantomData,
        }
    }
}

impl Future for Handle<'_> {
    type Output = ();

    /// Later polls after completion return `Ready` at once.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(running) = self.running.as_mut() else {
            return Poll::Ready(());
        };
        let done = running.poll(cx);
        if done.is_ready() {
            self.running = None;
        }
        done
    }
}

impl std::fmt::Debug for Handle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::loom::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct CountDrop(Arc<AtomicUsize>);
    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn ready_future_is_dropped_in_place_and_block_reused() {
        let drops = Arc::new(AtomicUsize::new(0));
        let d = CountDrop(drops.clone());
        // SAFETY: the future borrows nothing.
        let mut r = unsafe {
            Running::place(async move {
                let _d = d;
            })
        };
        let first = r.block.as_ptr() as usize;
        assert_eq!(
            crate::runtime::block_on(std::future::poll_fn(|cx| r.poll(cx))),
            ()
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped on completion");
        drop(r);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "not dropped twice");
        // SAFETY: as above.
        let r2 = unsafe { Running::place(async {}) };
        assert_eq!(
            r2.block.as_ptr() as usize,
            first,
            "block came from the cache"
        );
    }

    #[test]
    fn a_spare_block_is_reused_for_the_next_future_and_cached_when_dropped() {
        let mut spare = Spare::default();
        // SAFETY: the futures borrow nothing.
        let mut r = unsafe { Running::place_with(async {}, &mut spare) };
        let block = r.block.as_ptr() as usize;
        crate::runtime::block_on(std::future::poll_fn(|cx| r.poll(cx)));
        r.recycle(&mut spare);
        // SAFETY: as above.
        let mut again = unsafe { Running::place_with(async {}, &mut spare) };
        assert_eq!(again.block.as_ptr() as usize, block, "the spare was used");
        // An unfinished future is not recycled; dropping it frees its block.
        // SAFETY: as above.
        let pending = unsafe { Running::place_with(std::future::pending::<()>(), &mut spare) };
        pending.recycle(&mut spare);
        assert!(spare.0.is_none());
        crate::runtime::block_on(std::future::poll_fn(|cx| again.poll(cx)));
        again.recycle(&mut spare);
        drop(spare);
        // The cache holds it (beside the pending future's block).
        // SAFETY: as above.
        let (a, b) = unsafe { (Running::place(async {}), Running::place(async {})) };
        assert!(
            [a.block.as_ptr() as usize, b.block.as_ptr() as usize].contains(&block),
            "the spare went to the cache"
        );
    }

    #[test]
    fn run_with_polls_in_the_spare_block_and_keeps_it_unless_pending() {
        let mut spare = Spare::default();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let drops = Arc::new(AtomicUsize::new(0));
        let d = CountDrop(drops.clone());
        // SAFETY: the futures borrow nothing.
        let done = unsafe { Running::run_with(async move { drop(d) }, &mut spare, &mut cx) };
        assert!(matches!(done, Started::Done(())));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let block = spare.0.expect("the block stays as the spare").0.as_ptr() as usize;
        // A pending future keeps the block (and the spare is empty meanwhile).
        let d = CountDrop(drops.clone());
        // SAFETY: as above.
        let pending = unsafe {
            Running::run_with(
                async move {
                    let _d = d;
                    std::future::pending::<()>().await
                },
                &mut spare,
                &mut cx,
            )
        }
        .pending()
        .expect("pending");
        assert_eq!(pending.block.as_ptr() as usize, block);
        assert!(spare.0.is_none());
        drop(pending);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        // A panicking future is dropped in place and its block kept.
        let d = CountDrop(drops.clone());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: as above.
            unsafe {
                Running::run_with(
                    async move {
                        let _d = d;
                        panic!("handler panic");
                    },
                    &mut spare,
                    &mut cx,
                )
            }
        }));
        assert!(r.is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        assert!(spare.0.is_some());
    }

    #[test]
    fn start_hands_back_the_output_at_once_or_when_the_placed_future_completes() {
        let mut spare = Spare::default();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let owned = String::from("moved in");
        match Running::start(async move { owned.len() }, &mut spare, &mut cx) {
            Started::Done(n) => assert_eq!(n, 8),
            Started::Running(_) => panic!("completes on its first poll"),
        }
        // A future that waits once: its output comes from the poll that completes it.
        let mut waited = false;
        let once = std::future::poll_fn(move |cx| {
            if std::mem::replace(&mut waited, true) {
                Poll::Ready(vec![1u8, 2, 3])
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        });
        let Started::Running(mut r) = Running::start(once, &mut spare, &mut cx) else {
            panic!("pending on its first poll")
        };
        assert_eq!(r.poll(&mut cx), Poll::Ready(vec![1, 2, 3]));
        let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.poll(&mut cx)));
        assert!(again.is_err(), "polled after it completed");
    }

    #[test]
    fn pending_future_dropped_unfinished_and_big_or_aligned_futures() {
        let drops = Arc::new(AtomicUsize::new(0));
        let d = CountDrop(drops.clone());
        // SAFETY: the future borrows nothing.
        let r = unsafe {
            Running::place(async move {
                let _d = d;
                std::future::pending::<()>().await;
            })
        };
        drop(r);
        assert_eq!(drops.load(Ordering::SeqCst), 1);

        let big = [7u8; 4000];
        // SAFETY: as above.
        let mut r = unsafe {
            Running::place(async move {
                assert_eq!(big.iter().map(|&b| b as usize).sum::<usize>(), 28000);
            })
        };
        crate::runtime::block_on(std::future::poll_fn(|cx| r.poll(cx)));

        #[repr(align(64))]
        struct Wide(u8);
        let w = Wide(3);
        // SAFETY: as above.
        let mut r = unsafe {
            Running::place(async move {
                let w = w;
                assert_eq!(&w as *const Wide as usize % 64, 0);
                assert_eq!(w.0, 3);
            })
        };
        crate::runtime::block_on(std::future::poll_fn(|cx| r.poll(cx)));
    }
}
