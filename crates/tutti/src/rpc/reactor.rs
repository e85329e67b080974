//! The endpoint's reactor: one thread that waits in `epoll` (through mio) for
//! its listening socket and its connections, accepts clients, reads bytes,
//! cuts them into frames and hands each to the endpoint (`endpoint.rs`, which
//! serves through the core's serving side). Handlers never run here: a call is
//! handed to its object's vendor, whose tasks run on the runtime's workers,
//! and an answer completes the asking task's question (waking it). This is the
//! one extra thread the runtime allows a transport (besides its workers, a
//! transport may own one thread that drives it): tutti's scheduler has no I/O
//! driver of its own, so something must block in `epoll_wait`, and a thread
//! that only waits, reads and files answers gives the shortest path from the
//! socket to the woken task.
//!
//! Sockets stay in blocking mode for writers (callers write whole frames under
//! a connection's lock, `link.rs`); the reactor reads with `MSG_DONTWAIT`, so
//! it never blocks on a read. Readiness is edge-triggered: a connection is read
//! until the kernel has nothing more.
//!
//! **Bounded allocation.** A connection's buffer starts at 64 KiB and grows
//! only to hold a frame whose header has been checked (magic, version, kind,
//! and a length within the endpoint's `max_frame`); a frame claiming more is
//! answered with the cause and the connection is closed (a stream that lost
//! its place cannot be resynchronized).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io::{self, ErrorKind};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::endpoint::Inner;
use super::link::{Conn, ConnId, Side};
use crate::msg::codec::{self, Limits};

pub(crate) const WAKE: Token = Token(0);
const LISTENER: Token = Token(1);
const FIRST_BUF: usize = 64 << 10;

pub(crate) fn token(id: ConnId) -> Token {
    Token(id.0 as usize + 1)
}

fn conn_id(t: Token) -> ConnId {
    ConnId(t.0 as u64 - 1)
}

/// What the reactor keeps per connection.
struct Reader {
    conn: Arc<Conn>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Whether the handshake is done (always for connections this end opened).
    open: bool,
}

/// What handling a frame asks of the reactor.
pub(crate) enum After {
    Go,
    /// End the connection, saying why.
    End(String),
}

/// Reads what `stream` has now, without blocking.
fn recv_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is an initialized, exclusively borrowed slice, valid for
    // writes of `buf.len()` bytes for the call; the descriptor belongs to
    // `stream`, which is borrowed (so open) for the call.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// The reactor's loop; returns when the endpoint closes.
pub(crate) fn run(inner: Arc<Inner>, mut poll: Poll, listener: Option<TcpListener>) {
    let mut events = Events::with_capacity(256);
    let mut readers: HashMap<ConnId, Reader> = HashMap::new();
    let limits = Limits {
        max_payload: inner.config.max_frame,
        ..Limits::DEFAULT
    };
    if let Some(l) = &listener {
        if let Err(e) =
            poll.registry()
                .register(&mut SourceFd(&l.as_raw_fd()), LISTENER, Interest::READABLE)
        {
            inner.note_error(format!("the listening socket cannot be watched: {e}"));
        }
    }
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            inner.note_error(format!("the reactor stopped: {e}"));
            break;
        }
        if inner.is_closed() {
            break;
        }
        for ev in events.iter() {
            match ev.token() {
                WAKE => {}
                LISTENER => {
                    if let Some(l) = &listener {
                        accept(&inner, l);
                    }
                }
                t => {
                    let id = conn_id(t);
                    let r = match readers.entry(id) {
                        Entry::Occupied(o) => o.into_mut(),
                        Entry::Vacant(v) => {
                            let Some(conn) = inner.conns.get(id) else {
                                continue;
                            };
                            let open = conn.side == Side::Outgoing;
                            v.insert(Reader {
                                conn,
                                buf: vec![0; FIRST_BUF],
                                start: 0,
                                end: 0,
                                open,
                            })
                        }
                    };
                    if let After::End(why) = read(&inner, r, &limits) {
                        inner.end(&r.conn, &why);
                        readers.remove(&id);
                    }
                }
            }
        }
        // Connections ended elsewhere (a failed write, a refused handshake).
        readers.retain(|_, r| !r.conn.ended.load(crate::loom::Ordering::Relaxed));
    }
    inner.shut_down();
}

/// Accepts every waiting client.
fn accept(inner: &Arc<Inner>, listener: &TcpListener) {
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                // Accepted sockets do not inherit the listener's O_NONBLOCK.
                let _ = stream.set_nodelay(true);
                let _ = stream.set_write_timeout(Some(inner.config.write_timeout));
                let conn = Arc::new(Conn::new(
                    inner.conns.next_id(),
                    stream,
                    peer,
                    Side::Incoming,
                ));
                inner.watch(conn);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                inner.note_error(format!("accept failed: {e}"));
                return;
            }
        }
    }
}

/// Reads until the socket has nothing more, handling each complete frame.
fn read(inner: &Arc<Inner>, r: &mut Reader, limits: &Limits) -> After {
    loop {
        if r.end == r.buf.len() {
            if r.start > 0 {
                r.buf.copy_within(r.start..r.end, 0);
                r.end -= r.start;
                r.start = 0;
            } else {
                // Cannot happen: `frames` sizes the buffer for the partial frame
                // at its start, so a full buffer holds a complete frame.
                return After::End("a frame that does not fit its buffer".into());
            }
        }
        match recv_now(&r.conn.stream, &mut r.buf[r.end..]) {
            Ok(0) => return After::End("closed by the other end".into()),
            Ok(n) => {
                r.end += n;
                if let After::End(why) = frames(inner, r, limits) {
                    return After::End(why);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return After::Go,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return After::End(e.to_string()),
        }
    }
}

/// Handles the complete frames in the buffer; makes room for a partial one.
fn frames(inner: &Arc<Inner>, r: &mut Reader, limits: &Limits) -> After {
    loop {
        let avail = &r.buf[r.start..r.end];
        match codec::frame_len(avail, limits) {
            Ok(None) => break,
            Ok(Some(total)) if total > avail.len() => {
                // The header was checked (length within max_frame): room for
                // exactly this frame.
                if r.buf.len() - r.start < total {
                    r.buf.copy_within(r.start..r.end, 0);
                    r.end -= r.start;
                    r.start = 0;
                    if r.buf.len() < total {
                        r.buf.resize(total, 0);
                    }
                }
                break;
            }
            Ok(Some(total)) => {
                let bytes = &r.buf[r.start..r.start + total];
                r.start += total;
                let after = if r.open {
                    inner.on_frame(&r.conn, bytes)
                } else {
                    let after = inner.on_hello(&r.conn, bytes);
                    r.open = matches!(after, After::Go);
                    after
                };
                if let After::End(why) = after {
                    return After::End(why);
                }
            }
            Err(e) => {
                let why = format!("a frame that cannot be read: {e}");
                inner.reject_stream(&r.conn, &why);
                return After::End(why);
            }
        }
    }
    if r.start == r.end {
        r.start = 0;
        r.end = 0;
        if r.buf.len() > 4 * FIRST_BUF {
            r.buf = vec![0; FIRST_BUF];
        }
    }
    After::Go
}
