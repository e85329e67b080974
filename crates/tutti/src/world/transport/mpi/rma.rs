//! MPI one-sided communication (RMA), wrapped: a window of bytes on every
//! rank, `MPI_Put` into another rank's window, flush, and free. rsmpi has no
//! RMA, so this uses its raw FFI (`mpi::ffi`).
//!
//! A [`Window`] is opened with one passive-target epoch for its whole life
//! (`MPI_Win_lock_all` at creation, `MPI_Win_unlock_all` before
//! `MPI_Win_free`), so a put needs no synchronization with the target beyond
//! [`Window::flush`], which returns once the bytes are in the target's memory.
//! The target learns of them through a message sent after the flush (the
//! graph's signal), and reads them with plain loads ([`Window::read`]) after
//! [`Window::sync`] (a no-op in the unified memory model, `MPI_Win_sync`
//! otherwise).
//!
//! Every method that calls MPI takes the engine's communicator, so it can only
//! run where the engine runs (funneled: the progress thread, or the holder of
//! the engine's lock in polling mode): see [`crate::world::World`]'s
//! `mpi_call`.

use crate::loom::{AtomicBool, Ordering};
use std::os::raw::{c_int, c_void};

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Equivalence;

/// A window of `len` bytes of this rank's memory that other ranks put into.
pub(crate) struct Window {
    win: ffi::MPI_Win,
    base: *mut u8,
    len: usize,
    /// The unified memory model: public and private copies are one, so a
    /// flushed put is visible to loads without `MPI_Win_sync`.
    unified: bool,
    freed: AtomicBool,
}

// SAFETY: `win` is a plain MPI handle and `base` the window's memory, owned by
// MPI until `MPI_Win_free`. MPI calls on them are made only with the engine's
// communicator in hand (funneled/serialized, see the module docs); the
// memory is read only under the graph's slot protocol (a slot is read after
// its signal arrived and before its credit is returned, and written by a put
// only after the credit came back), so no byte is read while being written.
unsafe impl Send for Window {}
// SAFETY: as for `Send`; shared references only read `base` under that protocol.
unsafe impl Sync for Window {}

fn byte_type() -> ffi::MPI_Datatype {
    u8::equivalent_datatype().as_raw()
}

fn count_of(len: usize) -> c_int {
    c_int::try_from(len)
        .unwrap_or_else(|_| panic!("tutti: an MPI put of {len} bytes (at most 2^31 - 1)"))
}

impl Window {
    /// Allocates a window of `len` bytes on every rank of `comm` and opens its
    /// passive-target epoch. Collective: every rank of `comm` calls it, in the
    /// same order relative to other collectives on `comm`.
    pub(crate) fn allocate(comm: &SimpleCommunicator, len: usize) -> Window {
        let size = ffi::MPI_Aint::try_from(len)
            .unwrap_or_else(|_| panic!("tutti: an MPI window of {len} bytes"));
        let mut base: *mut u8 = std::ptr::null_mut();
        // SAFETY: reads a constant that rsmpi's C shim initialises statically;
        // a zeroed handle is overwritten by MPI_Win_allocate below.
        let (info, mut win) = unsafe { (ffi::RSMPI_INFO_NULL, std::mem::zeroed::<ffi::MPI_Win>()) };
        // SAFETY: `base` and `win` are valid out-pointers (MPI_Win_allocate
        // takes the address of the pointer it sets, as `void *`); the
        // communicator is live for the call.
        unsafe {
            ffi::MPI_Win_allocate(
                size,
                1,
                info,
                comm.as_raw(),
                (&mut base as *mut *mut u8).cast::<c_void>(),
                &mut win,
            );
        }
        let mut model: *mut c_int = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: `win` is the window just created; for MPI_WIN_MODEL the
        // attribute value is a pointer to an int, written into `model`.
        unsafe {
            ffi::MPI_Win_get_attr(
                win,
                ffi::MPI_WIN_MODEL as c_int,
                (&mut model as *mut *mut c_int).cast::<c_void>(),
                &mut flag,
            );
        }
        // SAFETY: when `flag` is set, MPI made `model` point at the window's
        // model value, which lives as long as the window.
        let unified =
            flag != 0 && !model.is_null() && unsafe { *model } == ffi::MPI_WIN_UNIFIED as c_int;
        // SAFETY: a valid window; assert 0 (no promises about other epochs).
        unsafe {
            ffi::MPI_Win_lock_all(0, win);
        }
        Window {
            win,
            base,
            len,
            unified,
            freed: AtomicBool::new(false),
        }
    }

    /// Whether the window uses MPI's unified memory model.
    pub(crate) fn unified(&self) -> bool {
        self.unified
    }

    /// Puts `bytes` at byte `offset` of rank `rank`'s window and waits until
    /// they are in its memory (`MPI_Put` + `MPI_Win_flush`).
    ///
    /// # Panics
    /// If the bytes do not fit the target's window as this rank computed it
    /// (`target_len`), a bug of the caller's layout.
    pub(crate) fn put(
        &self,
        _engine: &SimpleCommunicator,
        bytes: &[u8],
        rank: usize,
        offset: usize,
        target_len: usize,
    ) {
        assert!(
            !self.freed()
                && offset
                    .checked_add(bytes.len())
                    .is_some_and(|e| e <= target_len),
            "tutti: a put of {} bytes at {offset} outside a window of {target_len}",
            bytes.len()
        );
        let disp = ffi::MPI_Aint::try_from(offset).expect("offset checked against the window");
        let n = count_of(bytes.len());
        // SAFETY: `bytes` is valid for reads of its length and stays borrowed
        // until the flush below completes the put at origin and target; the
        // target range lies inside the target's window (checked above against
        // the layout every rank computes alike); `win` is open (lock_all).
        unsafe {
            ffi::MPI_Put(
                bytes.as_ptr().cast::<c_void>(),
                n,
                byte_type(),
                rank as c_int,
                disp,
                n,
                byte_type(),
                self.win,
            );
            ffi::MPI_Win_flush(rank as c_int, self.win);
        }
    }

    /// Makes puts that completed at this rank visible to [`read`](Self::read)
    /// (`MPI_Win_sync`; nothing to do in the unified model).
    pub(crate) fn sync(&self, _engine: &SimpleCommunicator) {
        if !self.unified && !self.freed() {
            // SAFETY: a valid, open window.
            unsafe {
                ffi::MPI_Win_sync(self.win);
            }
        }
    }

    /// Copies `len` bytes at `offset` of this rank's window into `out`.
    ///
    /// # Panics
    /// If the range is outside the window.
    pub(crate) fn read(&self, offset: usize, len: usize, out: &mut Vec<u8>) {
        assert!(
            !self.freed() && offset.checked_add(len).is_some_and(|e| e <= self.len),
            "tutti: a read of {len} bytes at {offset} outside a window of {}",
            self.len
        );
        out.clear();
        if len == 0 {
            return;
        }
        // SAFETY: the range is inside the window's live memory (checked);
        // under the slot protocol (see `Send`) no put writes it now.
        let src = unsafe { std::slice::from_raw_parts(self.base.add(offset), len) };
        out.extend_from_slice(src);
    }

    /// Closes the epoch and frees the window. Collective, like
    /// [`allocate`](Self::allocate). Idempotent.
    pub(crate) fn free(&self, _engine: &SimpleCommunicator) {
        if self.freed.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut win = self.win;
        // SAFETY: a valid window with the epoch opened at creation, freed
        // once (the swap above); afterwards neither `win` nor `base` is used
        // again (every accessor checks `freed`).
        unsafe {
            ffi::MPI_Win_unlock_all(win);
            ffi::MPI_Win_free(&mut win);
        }
    }

    fn freed(&self) -> bool {
        self.freed.load(Ordering::Acquire)
    }
}
