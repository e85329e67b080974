//! The operating system's side of the shared-memory transport: named
//! segments (`shm_open`, mode 0600), mappings, futex waits on a shared word,
//! whether a process is still the one that joined, and reading another
//! process's memory (cross-memory attach). Every `unsafe` of the transport's
//! system calls is here.

use std::ffi::CString;
use std::io;
use std::time::Duration;

use crate::loom::AtomicU32;

/// A shared mapping of a whole segment; unmapped on drop.
pub(crate) struct Mapping {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    /// The segment's identity (device, inode): a segment removed and
    /// created anew under the same name is another one.
    id: (u64, u64),
}

// SAFETY: the mapping is plain memory shared by design; all access goes
// through atomics or the ring protocol.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// The mapping's first byte (page aligned).
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The segment's identity (device, inode).
    pub(crate) fn id(&self) -> (u64, u64) {
        self.id
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, and no
        // reference into the mapping outlives it (views borrow the Mapping).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))
}

/// How [`open`] found the segment.
pub(crate) enum Opened {
    /// Created now, exclusively, zero-filled, `len` bytes.
    Created(Mapping),
    /// It existed; mapped at its current size.
    Existing(Mapping),
}

/// Opens segment `name` (`/tutti-…`): creates it exclusively with mode 0600
/// and size `len` if `create`, else (or if it exists) maps the existing one.
pub(crate) fn open(name: &str, len: usize, create: bool) -> io::Result<Opened> {
    let c = c_name(name)?;
    if create {
        // SAFETY: `c` is a valid NUL-terminated string.
        let fd = unsafe {
            libc::shm_open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd >= 0 {
            // SAFETY: `fd` is the descriptor just opened.
            let r = unsafe { libc::ftruncate(fd, len as libc::off_t) };
            if r != 0 {
                let e = io::Error::last_os_error();
                close(fd);
                let _ = unlink(name);
                return Err(e);
            }
            let m = identify(fd).and_then(|id| map(fd, len, id));
            close(fd);
            return m.map(Opened::Created);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    // SAFETY: `c` is a valid NUL-terminated string.
    let fd = unsafe { libc::shm_open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        let e = io::Error::last_os_error();
        close(fd);
        return Err(e);
    }
    let size = st.st_size.max(0) as usize;
    let id = (st.st_dev as u64, st.st_ino as u64);
    if size == 0 {
        close(fd);
        return Ok(Opened::Existing(Mapping {
            ptr: std::ptr::NonNull::dangling(),
            len: 0,
            id,
        }));
    }
    let m = map(fd, size, id);
    close(fd);
    m.map(Opened::Existing)
}

/// The identity (device, inode) of the open segment `fd`.
fn identify(fd: libc::c_int) -> io::Result<(u64, u64)> {
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// An exclusive lock on a segment (`flock`), held until dropped: whoever
/// judges a segment stale and removes it does both under it, so two
/// processes never both remove (and one of them a fresh segment).
pub(crate) struct SegmentLock {
    fd: libc::c_int,
}

impl Drop for SegmentLock {
    fn drop(&mut self) {
        close(self.fd);
    }
}

/// Locks segment `name` if it still is the segment `id` (waiting for
/// another holder of the lock); `None` if the name is gone or names another
/// segment now (someone removed it, and maybe created it anew, meanwhile).
pub(crate) fn lock_segment(name: &str, id: (u64, u64)) -> io::Result<Option<SegmentLock>> {
    let c = c_name(name)?;
    // SAFETY: `c` is a valid NUL-terminated string.
    let fd = unsafe { libc::shm_open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(None),
            _ => Err(e),
        };
    }
    let lock = SegmentLock { fd };
    // SAFETY: `fd` is open; `flock` only takes the lock.
    while unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
    if identify(fd)? != id {
        return Ok(None);
    }
    // Removed (by the lock's previous holder) after this open: the name
    // names another segment now, or none.
    let path = std::path::Path::new("/dev/shm").join(name.trim_start_matches('/'));
    match std::fs::metadata(path) {
        Ok(m) => {
            use std::os::unix::fs::MetadataExt;
            Ok(((m.dev(), m.ino()) == id).then_some(lock))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn map(fd: libc::c_int, len: usize, id: (u64, u64)) -> io::Result<Mapping> {
    // SAFETY: a fresh shared mapping of `len` bytes of the open segment `fd`;
    // the kernel picks the address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Mapping {
        ptr: std::ptr::NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap gave null"))?,
        len,
        id,
    })
}

fn close(fd: libc::c_int) {
    // SAFETY: `fd` is a descriptor this module opened and closes once.
    unsafe {
        libc::close(fd);
    }
}

/// Removes segment `name` (mappings stay valid until unmapped).
pub(crate) fn unlink(name: &str) -> io::Result<()> {
    let c = c_name(name)?;
    // SAFETY: `c` is a valid NUL-terminated string.
    if unsafe { libc::shm_unlink(c.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether segment `name` exists.
#[cfg(test)]
pub(crate) fn exists(name: &str) -> bool {
    std::path::Path::new("/dev/shm")
        .join(name.trim_start_matches('/'))
        .exists()
}

/// Sleeps while `word == expected`, at most `timeout` (a shared futex: the
/// word may be in memory other processes map).
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call;
    // FUTEX_WAIT only reads it; `ts` outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes every process sleeping on `word`.
pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE does not touch it.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// This process's id.
pub(crate) fn pid() -> u32 {
    std::process::id()
}

/// When process `pid` started (clock ticks since boot, `/proc/<pid>/stat`
/// field 22), and whether it is a zombie; `None` if there is no such process.
pub(crate) fn start_time(pid: u32) -> Option<(u64, bool)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    // `rest` starts at field 3 (state); start time is field 22.
    let start = fields.nth(18)?.parse().ok()?;
    Some((start, state == "Z" || state == "X"))
}

/// Whether `pid` is still the process that started at `start` and has not
/// exited (a zombie has exited).
pub(crate) fn alive(pid: u32, start: u64) -> bool {
    matches!(start_time(pid), Some((s, false)) if s == start)
}

/// Copies `into.len()` bytes at address `addr` of process `pid` into `into`
/// with `process_vm_readv` (cross-memory attach: one copy, by the kernel,
/// straight from the other process's pages). Fails where the kernel does not
/// let this process read `pid`'s memory (ptrace access mode: Yama's
/// `ptrace_scope`, other users' processes), where `pid` is gone, and where
/// the range is not mapped there.
pub(crate) fn read_process(pid: u32, addr: u64, into: &mut [u8]) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    let mut done = 0usize;
    while done < into.len() {
        let rest = &mut into[done..];
        let local = libc::iovec {
            iov_base: rest.as_mut_ptr().cast(),
            iov_len: rest.len(),
        };
        let remote = libc::iovec {
            iov_base: addr.wrapping_add(done as u64) as usize as *mut libc::c_void,
            iov_len: rest.len(),
        };
        // SAFETY: `local` describes `rest`, memory this function borrows
        // mutably for the call; the kernel checks the remote range against
        // `pid`'s mappings and writes only into `local`.
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "process_vm_readv copied nothing",
            ));
        }
        done += n as usize;
    }
    Ok(())
}

/// Yama's `ptrace_scope` (`/proc/sys/kernel/yama/ptrace_scope`), if the
/// kernel has it: 1 and above keep processes from reading their siblings.
pub(crate) fn ptrace_scope() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A descriptor that becomes readable once process `pid` has exited
/// (`pidfd_open`, Linux 5.3); `None` where the kernel offers none or there
/// is no such process. It names that process, never a later one with the
/// same pid.
pub(crate) fn pidfd(pid: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; it touches no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    // SAFETY: `fd` was just returned by the kernel and is owned by no one else.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// A non-blocking eventfd: this process rings it ([`ring`]) to end a
/// [`wait_readable`] of another of its threads.
pub(crate) fn eventfd() -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: eventfd takes an initial value and flags and returns a new
    // descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by no one else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Rings eventfd `fd`: it stays readable until [`drain`]ed. Never blocks
/// (a counter already at its maximum is readable anyway).
pub(crate) fn ring(fd: std::os::fd::BorrowedFd<'_>) {
    use std::os::fd::AsRawFd;
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes from a live buffer to a descriptor we borrow.
    unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
}

/// Empties eventfd `fd` (it is no longer readable).
pub(crate) fn drain(fd: std::os::fd::BorrowedFd<'_>) {
    use std::os::fd::AsRawFd;
    let mut buf = [0u8; 8];
    // SAFETY: reads at most 8 bytes into a live buffer of 8 from a
    // descriptor we borrow (non-blocking: an empty one says EAGAIN).
    unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
}

/// Waits until one of `fds` is readable or `timeout` passes; `ready[i]`
/// tells whether `fds[i]` is (all false after a timeout or an interrupt).
pub(crate) fn wait_readable(
    fds: &[std::os::fd::BorrowedFd<'_>],
    timeout: Duration,
    ready: &mut Vec<bool>,
) {
    use std::os::fd::AsRawFd;
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = libc::c_int::try_from(timeout.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: `polls` is a live array of `polls.len()` pollfd structs the
    // kernel may write `revents` into during the call.
    let n = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
    ready.clear();
    ready.extend(polls.iter().map(|p| n > 0 && p.revents != 0));
}
