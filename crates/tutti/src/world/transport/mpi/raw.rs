//! The few MPI calls the engine makes on raw requests, wrapped.
//!
//! rsmpi's safe requests borrow their buffers for a scope; the engine keeps
//! hundreds of requests in flight over owned buffers for the world's whole life,
//! so it uses the C API for `Isend`/`Irecv`/`Improbe`/`Imrecv`/`Testsome`/`Cancel`
//! here, and rsmpi's
//! safe API for everything else. Every other file of the MPI transport is free of
//! `unsafe` except where it hands buffers to these functions.
//!
//! MPI's default error handler (`MPI_ERRORS_ARE_FATAL`) is left in place: an MPI
//! error aborts the job with MPI's own message, so return codes are not checked.

use std::os::raw::{c_int, c_void};

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::traits::Equivalence;

pub(crate) use ffi::{MPI_Comm as Comm, MPI_Message as Message, MPI_Request as Request};

/// What a completed request reports.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Status {
    pub(crate) source: usize,
    pub(crate) tag: i32,
    /// Bytes received.
    pub(crate) count: usize,
    pub(crate) cancelled: bool,
}

fn byte_type() -> ffi::MPI_Datatype {
    u8::equivalent_datatype().as_raw()
}

/// The null request (a completed or never-started request).
pub(crate) fn null_request() -> Request {
    // SAFETY: reads a constant that rsmpi's C shim initialises statically.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// `MPI_ANY_SOURCE`.
pub(crate) fn any_source() -> i32 {
    // SAFETY: as in `null_request`.
    unsafe { ffi::RSMPI_ANY_SOURCE }
}

/// `MPI_ANY_TAG`.
pub(crate) fn any_tag() -> i32 {
    // SAFETY: as in `null_request`.
    unsafe { ffi::RSMPI_ANY_TAG }
}

fn count_of(len: usize) -> c_int {
    c_int::try_from(len).unwrap_or_else(|_| {
        panic!("tutti: an MPI message of {len} bytes (the engine splits at 2^30)")
    })
}

/// Starts sending `buf` to rank `to` with `tag`.
///
/// # Safety
/// `buf` must stay allocated and unmodified until the request completes
/// (`test_some` reports it, or `wait` returns).
pub(crate) unsafe fn isend(buf: &[u8], to: usize, tag: i32, comm: Comm) -> Request {
    let mut req = null_request();
    // SAFETY: the buffer is valid for `buf.len()` bytes and, by the caller's
    // contract, stays so until completion; `req` is a valid out-pointer.
    unsafe {
        ffi::MPI_Isend(
            buf.as_ptr().cast::<c_void>(),
            count_of(buf.len()),
            byte_type(),
            to as c_int,
            tag,
            comm,
            &mut req,
        );
    }
    req
}

/// Starts receiving at most `len` bytes into `buf` from `from` (or
/// [`any_source`]) with `tag` (or [`any_tag`]).
///
/// # Safety
/// `buf` must be valid for writes of `len` bytes, and neither read, written,
/// moved nor freed, until the request completes or is cancelled and completed.
pub(crate) unsafe fn irecv(buf: *mut u8, len: usize, from: i32, tag: i32, comm: Comm) -> Request {
    let mut req = null_request();
    // SAFETY: the caller guarantees `buf` for `len` bytes until completion.
    unsafe {
        ffi::MPI_Irecv(
            buf.cast::<c_void>(),
            count_of(len),
            byte_type(),
            from,
            tag,
            comm,
            &mut req,
        );
    }
    req
}

/// Looks for a message from `from` with `tag` that has arrived (`MPI_Improbe`)
/// and, if there is one, takes it out of matching: the returned message handle
/// must be received with [`imrecv`] (nothing else can match it any more).
pub(crate) fn improbe(from: i32, tag: i32, comm: Comm) -> Option<(Message, Status)> {
    let mut flag: c_int = 0;
    // SAFETY: reads a constant that rsmpi's C shim initialises statically.
    let mut message = unsafe { ffi::RSMPI_MESSAGE_NULL };
    // SAFETY: as in `test`, a zeroed status for MPI to overwrite.
    let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointers for the flag, the message and the status.
    unsafe {
        ffi::MPI_Improbe(from, tag, comm, &mut flag, &mut message, &mut status);
    }
    (flag != 0).then(|| (message, status_of(&status)))
}

/// Starts receiving the matched `message` ([`improbe`]) into `buf`, which
/// must have room for the whole message (`len` bytes, its probed size).
///
/// # Safety
/// As [`irecv`]: `buf` valid for writes of `len` bytes, untouched until the
/// request completes.
pub(crate) unsafe fn imrecv(buf: *mut u8, len: usize, message: &mut Message) -> Request {
    let mut req = null_request();
    // SAFETY: the caller guarantees `buf` for `len` bytes until completion;
    // `message` is a matched message that MPI consumes here.
    unsafe {
        ffi::MPI_Imrecv(
            buf.cast::<c_void>(),
            count_of(len),
            byte_type(),
            message,
            &mut req,
        );
    }
    req
}

fn status_of(s: &ffi::MPI_Status) -> Status {
    let mut count: c_int = 0;
    let mut cancelled: c_int = 0;
    // SAFETY: `s` is a status MPI filled in; the out-pointers are valid.
    unsafe {
        ffi::MPI_Get_count(s, byte_type(), &mut count);
        ffi::MPI_Test_cancelled(s, &mut cancelled);
    }
    Status {
        source: usize::try_from(s.MPI_SOURCE).unwrap_or(usize::MAX),
        tag: s.MPI_TAG,
        count: usize::try_from(count).unwrap_or(0),
        cancelled: cancelled != 0,
    }
}

/// Reusable arrays for [`Tester::test_some`], so testing allocates nothing.
pub(crate) struct Tester {
    indices: Vec<c_int>,
    statuses: Vec<ffi::MPI_Status>,
}

impl Tester {
    pub(crate) fn new() -> Tester {
        Tester {
            indices: Vec::new(),
            statuses: Vec::new(),
        }
    }

    /// Tests every request of `reqs` and appends `(index, status)` for each one
    /// that completed (those become null requests). Null requests are skipped.
    pub(crate) fn test_some(&mut self, reqs: &mut [Request], done: &mut Vec<(usize, Status)>) {
        let n = reqs.len();
        if n == 0 {
            return;
        }
        if self.indices.len() < n {
            self.indices.resize(n, 0);
            // SAFETY: a zeroed MPI_Status is a valid plain C struct for MPI to
            // overwrite.
            self.statuses.resize(n, unsafe { std::mem::zeroed() });
        }
        let mut outcount: c_int = 0;
        // SAFETY: the arrays hold at least `n` elements, as `incount` says.
        unsafe {
            ffi::MPI_Testsome(
                count_of(n),
                reqs.as_mut_ptr(),
                &mut outcount,
                self.indices.as_mut_ptr(),
                self.statuses.as_mut_ptr(),
            );
        }
        // MPI_UNDEFINED (negative) when every request was already null.
        let outcount = usize::try_from(outcount).unwrap_or(0).min(n);
        for k in 0..outcount {
            let i = usize::try_from(self.indices[k]).unwrap_or(usize::MAX);
            if i < n {
                done.push((i, status_of(&self.statuses[k])));
            }
        }
    }
}

/// Tests one request; `Some` if it completed (it is then null).
pub(crate) fn test(req: &mut Request) -> Option<Status> {
    let mut flag: c_int = 0;
    // SAFETY: as in `test_some`, for one request.
    let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to one request, flag and status.
    unsafe {
        ffi::MPI_Test(req, &mut flag, &mut status);
    }
    (flag != 0).then(|| status_of(&status))
}

/// Asks MPI to cancel a pending request; it must still be completed (tested)
/// afterwards, and may complete normally if it matched before the cancel.
pub(crate) fn cancel(req: &mut Request) {
    // SAFETY: a valid pointer to a request.
    unsafe {
        ffi::MPI_Cancel(req);
    }
}

/// Starts an all-to-all exchange of one `u64` per rank.
///
/// # Safety
/// `send` and `recv` must hold one element per rank and stay allocated (and
/// `recv` unread) until the request completes.
pub(crate) unsafe fn ialltoall_u64(send: &[u64], recv: &mut [u64], comm: Comm) -> Request {
    let mut req = null_request();
    let t = u64::equivalent_datatype().as_raw();
    // SAFETY: the caller guarantees the buffers; one element per rank each way.
    unsafe {
        ffi::MPI_Ialltoall(
            send.as_ptr().cast::<c_void>(),
            1,
            t,
            recv.as_mut_ptr().cast::<c_void>(),
            1,
            t,
            comm,
            &mut req,
        );
    }
    req
}
