//! [`launch`]: starting the processes of a named system on this host, as
//! `tutti launch -n P -- <command>` does, and removing the segments they
//! leave behind — when they end, when the launcher is told to stop
//! (`SIGINT`, `SIGTERM`, `SIGHUP`), and, for a launcher that was killed
//! outright, at the next launch on the host.

use std::io::{Error, ErrorKind};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use super::system;

/// How long the members have to end after the launcher passed a stop signal
/// on to them, before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The prefix of the system names [`launch`] makes: `launch-<launcher's
/// pid>-<nanoseconds>`.
const NAME_PREFIX: &str = "launch-";

/// Starts `processes` copies of `command` as one named system on this host
/// (what `tutti launch -n P -- <command>` does): each gets `TUTTI_SYSTEM` (a
/// fresh name), `TUTTI_RANKS`, `TUTTI_RANK` and `TUTTI_TRANSPORT=shm`, so a
/// [`World`](crate::world::World) it builds from the environment is rank
/// `TUTTI_RANK` of a shared-memory world. Waits for all and returns their exit
/// statuses in rank order; segments a crashed run left behind are removed.
///
/// While it waits, `SIGINT`, `SIGTERM` and `SIGHUP` sent to the calling
/// process are passed on to every member still running (a member that has
/// not ended five seconds later is killed), and `launch` returns their
/// statuses as usual after removing the system's segments. Each member gets
/// `SIGTERM` if the launcher dies first (Linux's parent-death signal, which
/// follows the thread that called `launch`); the segments of a launcher killed
/// outright (`SIGKILL`) are removed by the next `launch` on the host.
///
/// ```no_run
/// let status = tutti::world::launch(2, std::process::Command::new("my-spmd-program")).unwrap();
/// assert!(status.iter().all(|s| s.success()));
/// ```
pub fn launch(processes: usize, mut command: Command) -> std::io::Result<Vec<ExitStatus>> {
    if processes == 0 || processes > system::MAX_MEMBERS {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "a system has 1 to {} processes, not {processes}",
                system::MAX_MEMBERS
            ),
        ));
    }
    remove_orphans();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("{NAME_PREFIX}{}-{nanos:x}", std::process::id());
    command
        .env("TUTTI_SYSTEM", &name)
        .env("TUTTI_RANKS", processes.to_string())
        .env("TUTTI_TRANSPORT", "shm");
    die_with_launcher(&mut command);
    // Caught before the first member starts, so that no stop signal and no
    // member's end is missed; the caller's handlers are back when `watch`
    // drops. `None`: another thread's `launch` is watching them.
    let watch = stop::Watch::install()?;
    let mut children = Vec::with_capacity(processes);
    for rank in 0..processes {
        command.env("TUTTI_RANK", rank.to_string());
        match command.spawn() {
            Ok(c) => children.push(c),
            Err(e) => {
                for mut c in children {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                system::remove_all(&name);
                return Err(e);
            }
        }
    }
    let statuses = match &watch {
        Some(w) => wait_all(&mut children, w),
        None => children.iter_mut().map(Child::wait).collect(),
    };
    drop(watch);
    system::remove_all(&name);
    statuses
}

/// Makes every process `command` starts get `SIGTERM` when the calling
/// thread ends, and end at once if that happened before it could ask.
fn die_with_launcher(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let launcher = rustix::process::getpid();
    // SAFETY: the closure runs in the child between `fork` and `exec` and
    // makes only async-signal-safe system calls (`prctl`, `getppid`, through
    // rustix's raw system calls), allocating nothing.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::TERM))?;
            if rustix::process::getppid() != Some(launcher) {
                // The launcher died between `fork` and `prctl`: the child
                // ends before `exec` (ESRCH: no such process).
                return Err(Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Waits for every member to end, passing on the stop signals the launcher
/// gets; returns their exit statuses in rank order.
fn wait_all(children: &mut [Child], watch: &stop::Watch) -> std::io::Result<Vec<ExitStatus>> {
    let mut statuses: Vec<Option<ExitStatus>> = vec![None; children.len()];
    let mut stop_deadline: Option<Instant> = None;
    loop {
        for (c, s) in children.iter_mut().zip(statuses.iter_mut()) {
            if s.is_none() {
                *s = c.try_wait()?;
            }
        }
        if statuses.iter().all(Option::is_some) {
            return Ok(statuses.into_iter().flatten().collect());
        }
        if stop_deadline.is_some_and(|d| Instant::now() >= d) {
            for (c, s) in children.iter_mut().zip(&statuses) {
                if s.is_none() {
                    let _ = c.kill();
                }
            }
        }
        // A member's end (SIGCHLD) or a stop signal wakes the wait; after a
        // stop, it also ends at the grace period's end.
        let timeout = stop_deadline.map(|d| d.saturating_duration_since(Instant::now()));
        for sig in watch.wait(timeout)? {
            forward(sig, children, &statuses);
            stop_deadline.get_or_insert_with(|| Instant::now() + STOP_GRACE);
        }
    }
}

/// Sends `sig` to every member not yet reaped (a reaped member's pid may
/// belong to another process by now).
fn forward(sig: Signal, children: &[Child], statuses: &[Option<ExitStatus>]) {
    for (c, s) in children.iter().zip(statuses) {
        if s.is_none() {
            if let Some(pid) = i32::try_from(c.id()).ok().and_then(Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, sig);
            }
        }
    }
}

/// Removes the segments of systems whose launcher no longer runs (it was
/// killed outright, so its members got their parent-death signal and nobody
/// removed what they left).
fn remove_orphans() {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    let mut gone = Vec::new();
    for entry in dir.flatten() {
        let file = entry.file_name();
        let Some(name) = file
            .to_str()
            .and_then(|f| f.strip_prefix("tutti-"))
            .and_then(|f| f.split('+').next())
        else {
            continue;
        };
        let Some(pid) = name
            .strip_prefix(NAME_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
            .and_then(Pid::from_raw)
        else {
            continue;
        };
        if !gone.iter().any(|g: &String| g == name) && launcher_gone(pid) {
            gone.push(name.to_owned());
        }
    }
    for name in gone {
        system::remove_all(&name);
    }
}

/// Whether no process `pid` exists (one that exists but is not ours counts
/// as alive: its segments are left alone).
fn launcher_gone(pid: Pid) -> bool {
    matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// The launcher's stop signals (`SIGINT`, `SIGTERM`, `SIGHUP`) and the end
/// of its members (`SIGCHLD`), caught for the time of one [`launch`].
///
/// Each handler writes its signal's number to a pipe (one byte, with a raw
/// `write`: async-signal-safe and leaving `errno` alone) and does nothing
/// else; [`Watch::wait`] polls the pipe. The handlers the process had before
/// are put back when the `Watch` drops, so a program that launches systems
/// keeps its own handling of these signals around each launch.
mod stop {
    use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd};
    use std::sync::OnceLock;
    use std::time::Duration;

    use rustix::event::{PollFd, PollFlags, Timespec};
    use rustix::process::Signal;

    use crate::loom::unmodelled::{AtomicBool, AtomicI32};
    use crate::loom::Ordering;

    /// The signals caught, the first three passed on to the members.
    const CAUGHT: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD];

    /// The pipe's write end, for the handler (-1: not made yet). The pipe is
    /// made once and stays open, so a handler still running on another
    /// thread while a `Watch` drops writes into it, never into a closed or
    /// reused descriptor; the next `Watch` drains what it wrote.
    static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

    extern "C" fn on_signal(sig: libc::c_int) {
        let fd = PIPE_WRITE.load(Ordering::Acquire);
        if fd >= 0 {
            // SAFETY: `fd` is the pipe's write end, which is never closed.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            // A full pipe drops the byte: the reader is awake already.
            let _ = rustix::io::write(fd, &[sig as u8]);
        }
    }

    /// The pipe's read end (made once, with [`PIPE_WRITE`]).
    fn pipe() -> std::io::Result<BorrowedFd<'static>> {
        use rustix::pipe::{pipe_with, PipeFlags};
        static READ: OnceLock<OwnedFd> = OnceLock::new();
        if let Some(read) = READ.get() {
            return Ok(read.as_fd());
        }
        let (read, write) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        let mut fresh = false;
        let read = READ.get_or_init(|| {
            fresh = true;
            read
        });
        if fresh {
            // Open for the rest of the process (see `PIPE_WRITE`).
            PIPE_WRITE.store(write.into_raw_fd(), Ordering::Release);
        }
        Ok(read.as_fd())
    }

    /// Whether a [`Watch`] lives (one per process at a time).
    static WATCHING: AtomicBool = AtomicBool::new(false);

    /// The signals being watched; see the [module](self).
    pub(super) struct Watch {
        read: BorrowedFd<'static>,
        /// The actions the process had before, in [`CAUGHT`]'s order.
        saved: Vec<libc::sigaction>,
    }

    impl Watch {
        /// Starts catching the signals; `None` if another `launch` of this
        /// process is catching them already.
        pub(super) fn install() -> std::io::Result<Option<Watch>> {
            let read = pipe()?;
            if WATCHING
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return Ok(None);
            }
            let mut watch = Watch {
                read,
                saved: Vec::with_capacity(CAUGHT.len()),
            };
            // What a handler wrote after the last `Watch` dropped.
            watch.drain()?;
            for sig in CAUGHT {
                // SAFETY: a zeroed `sigaction` is a valid start; the handler is
                // an `extern "C" fn(c_int)` that is async-signal-safe (above);
                // `old` is valid for the kernel to fill.
                let (rc, old) = unsafe {
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                    sa.sa_flags = libc::SA_RESTART | libc::SA_NOCLDSTOP;
                    libc::sigemptyset(&mut sa.sa_mask);
                    let mut old: libc::sigaction = std::mem::zeroed();
                    (libc::sigaction(sig, &sa, &mut old), old)
                };
                if rc != 0 {
                    // `watch` drops: what was installed is put back.
                    return Err(std::io::Error::last_os_error());
                }
                watch.saved.push(old);
            }
            Ok(Some(watch))
        }

        /// Waits until a signal arrives (or `timeout` passes) and returns the
        /// stop signals among those that arrived (`SIGCHLD` only wakes).
        pub(super) fn wait(&self, timeout: Option<Duration>) -> std::io::Result<Vec<Signal>> {
            let timeout = timeout.map(|t| Timespec {
                tv_sec: t.as_secs().try_into().unwrap_or(i64::MAX),
                tv_nsec: t.subsec_nanos().into(),
            });
            let mut fds = [PollFd::new(&self.read, PollFlags::IN)];
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
            self.drain()
        }

        /// Empties the pipe; returns the stop signals read.
        fn drain(&self) -> std::io::Result<Vec<Signal>> {
            let mut stops = Vec::new();
            let mut buf = [0u8; 64];
            loop {
                match rustix::io::read(self.read, &mut buf) {
                    Ok(0) | Err(rustix::io::Errno::AGAIN) => return Ok(stops),
                    Ok(n) => stops.extend(
                        buf[..n]
                            .iter()
                            .filter(|&&b| libc::c_int::from(b) != libc::SIGCHLD)
                            .filter_map(|&b| Signal::from_named_raw(b.into())),
                    ),
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }

    impl Drop for Watch {
        fn drop(&mut self) {
            for (&sig, old) in CAUGHT.iter().zip(&self.saved) {
                // SAFETY: `old` is the action `sigaction` returned for `sig`.
                unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
            }
            WATCHING.store(false, Ordering::Release);
        }
    }
}
