//! A dump on a signal (`SIGUSR1` by default, or the one named by `TUTTI_DUMP_SIGNAL`:
//! a number or a name such as `USR2`; `off` installs nothing).
//!
//! The handler only writes one byte to a pipe (async-signal-safe: `write` is on POSIX's
//! list, and it touches nothing else); a small thread, started with the handler, reads
//! the pipe and prints the dump on stderr. Nothing stops: the dump reads the same state
//! words the detector reads.

use crate::loom::unmodelled::AtomicI32;
use crate::loom::Ordering;
use std::sync::OnceLock;

/// The pipe's write end, for the handler (-1: none).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(_: libc::c_int) {
    let fd = PIPE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: `write` is async-signal-safe; the buffer is one valid byte on the
        // stack; a full pipe or error only loses this request (errno is saved and
        // restored around it so the interrupted code does not see it change).
        unsafe {
            let saved = *libc::__errno_location();
            let _ = libc::write(fd, (&byte as *const u8).cast(), 1);
            *libc::__errno_location() = saved;
        }
    }
}

/// The signal chosen by `TUTTI_DUMP_SIGNAL` (default `SIGUSR1`), `None` for `off`.
pub(crate) fn chosen() -> Result<Option<libc::c_int>, String> {
    let Ok(v) = std::env::var("TUTTI_DUMP_SIGNAL") else {
        return Ok(Some(libc::SIGUSR1));
    };
    let v = v.trim();
    let name = v.to_ascii_uppercase();
    let name = name.strip_prefix("SIG").unwrap_or(&name);
    Ok(Some(match name {
        "OFF" | "NONE" | "0" => return Ok(None),
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "HUP" => libc::SIGHUP,
        "QUIT" => libc::SIGQUIT,
        "WINCH" => libc::SIGWINCH,
        _ => match v.parse::<libc::c_int>() {
            Ok(n) if (1..=64).contains(&n) && n != libc::SIGKILL && n != libc::SIGSTOP => n,
            _ => {
                return Err(format!(
                    "tutti::diag: TUTTI_DUMP_SIGNAL={v:?} is not a signal (USR1, USR2, HUP, \
                     QUIT, WINCH, a number, or off)"
                ))
            }
        },
    }))
}

/// Installs the dump signal handler once (see the module docs). Returns the signal, or
/// `None` if `TUTTI_DUMP_SIGNAL=off`; an error names a bad `TUTTI_DUMP_SIGNAL` or a
/// failed system call.
pub(crate) fn install() -> Result<Option<i32>, String> {
    static DONE: OnceLock<Result<Option<i32>, String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let Some(sig) = chosen()? else {
            return Ok(None);
        };
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid array of two ints for `pipe2` to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(format!(
                "tutti::diag: cannot make the dump signal's pipe: {}",
                std::io::Error::last_os_error()
            ));
        }
        let (read, write) = (fds[0], fds[1]);
        // The reader blocks: clear O_NONBLOCK on the read end only.
        // SAFETY: `read` is the pipe's open read end.
        unsafe {
            let flags = libc::fcntl(read, libc::F_GETFL);
            libc::fcntl(read, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
        PIPE_WRITE.store(write, Ordering::Relaxed);
        std::thread::Builder::new()
            .name("tutti-dump".into())
            .spawn(move || loop {
                let mut buf = [0u8; 64];
                // SAFETY: `buf` is valid for 64 bytes; `read` stays open for the process.
                let n = unsafe { libc::read(read, buf.as_mut_ptr().cast(), buf.len()) };
                if n > 0 {
                    eprint!("{}", super::dump::text());
                } else if n < 0
                    && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                {
                    return;
                }
            })
            .map_err(|e| format!("tutti::diag: cannot start the dump thread: {e}"))?;
        // SAFETY: a zeroed `sigaction` is a valid start; we set the handler and flags,
        // and the handler is an `extern "C" fn(c_int)` that is async-signal-safe.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(format!(
                "tutti::diag: cannot install the dump handler for signal {sig}: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Some(sig))
    })
    .clone()
}
