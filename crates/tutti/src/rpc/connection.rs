//! The endpoint's tasks on the runtime: one accepts clients, one per
//! connection reads it. Both wait on `tutti::net` sockets, so they are woken
//! by the runtime's I/O driver on the idle worker that polled it — no reactor
//! thread, and a loopback round trip costs two thread wake-ups (the server's
//! worker, woken by the request, and the client's, woken by the answer; the
//! handler and the caller run on the worker that woke).
//!
//! **Reading.** A connection's reader cuts what arrives into frames and hands
//! each to the endpoint (`endpoint.rs`, which serves through the core's
//! serving side). Handlers never run here: a call is handed to its object's
//! vendor, and an answer completes the asking task's question (waking it).
//!
//! **Bounded allocation.** A connection's buffer starts at 64 KiB and grows
//! only to hold a frame whose header has been checked (magic, version, kind,
//! and a length within the endpoint's `max_frame`); a frame claiming more is
//! answered with the cause and the connection is closed (a stream that lost
//! its place cannot be resynchronized).
//!
//! **Fairness.** A reader gives its worker back after every `FAIR_SHARE`
//! bytes, so that a client flooding large requests takes turns with the
//! others instead of holding a worker; and it reads nothing while its
//! connection's unsent answers are over their bound (`link.rs`), so a client
//! that does not read its answers stops only itself.
//!
//! **Half-close.** A client that shuts down its sending side after its
//! calls still gets their answers: at the end of its requests the reader
//! waits until every answer owed on the connection is written and sent
//! (`Conn::settled`, at most the endpoint's call deadline), then ends it.
//!
//! **Admission.** A client must complete its handshake within the endpoint's
//! `handshake_timeout` (a client that connects and says nothing, or half a
//! hello, is dropped with the reason recorded); beyond `max_connections` open
//! incoming connections a new client is refused with a `Refused` frame naming
//! the limit, and the connections already open are untouched.

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use super::endpoint::Inner;
use super::link::{after, Conn, Side};
use super::protocol::{self, REFUSED};
use crate::msg::codec::{self, Limits};
use crate::net::{TcpListener, TcpStream};
use crate::runtime::{timeout, timeout_at, yield_now};

const FIRST_BUF: usize = 64 << 10;
/// Bytes a reader takes before giving its worker back to the others.
const FAIR_SHARE: usize = 256 << 10;
/// How long a refused client is given to read why before its socket closes
/// (closing on its unread hello would reset the connection and lose the reason).
const REFUSAL_LINGER: Duration = Duration::from_millis(500);

/// What the reader keeps of a connection.
struct Reader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Whether the handshake is done (always for connections this end opened).
    open: bool,
}

/// What handling a frame asks of the reader.
pub(crate) enum After {
    Go,
    /// End the connection, saying why.
    End(String),
}

/// Accepts clients until the endpoint closes (the task is aborted then).
pub(crate) async fn accept(inner: Arc<Inner>, listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                if inner.is_closed() {
                    return;
                }
                let _ = stream.set_nodelay(true);
                match inner.admit() {
                    Ok(()) => {
                        let conn = inner.new_conn(stream, peer, Side::Incoming);
                        inner.watch(conn);
                    }
                    Err(why) => refuse(&inner, stream, why),
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                // Out of descriptors, most likely: note it, and give the
                // connections that hold them time to end.
                inner.note_error(format!("accept failed: {e}"));
                crate::runtime::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Turns a client away with the reason, without touching the open
/// connections: the `Refused` frame is written (one non-blocking write), and
/// the socket lingers briefly, reading what the client sends, so that the
/// client reads the reason before the socket closes (closing on its unread
/// hello would reset the connection and lose it). At most `MAX_LINGERING`
/// refused sockets linger at once; beyond, they close at once.
fn refuse(inner: &Arc<Inner>, stream: TcpStream, why: String) {
    inner
        .counters
        .refused_connections
        .fetch_add(1, crate::loom::Ordering::Relaxed);
    inner.note_error(format!("refused tcp://{}: {why}", peer_of(&stream)));
    if let Ok(f) = protocol::frame(REFUSED, &why) {
        let _ = stream.write_now(&f);
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    if !inner.linger() {
        return;
    }
    let inner = Arc::clone(inner);
    drop(crate::runtime::spawn(async move {
        let mut sink = [0u8; 1024];
        let _ = timeout(REFUSAL_LINGER, async {
            while let Ok(n) = stream.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
        drop(stream);
        inner.lingered();
    }));
}

fn peer_of(s: &TcpStream) -> String {
    s.peer_addr()
        .map_or_else(|_| "(gone)".into(), |a| a.to_string())
}

/// Reads `conn` until it ends, then ends it (once, with the first reason;
/// a failure of its output queue is noted as the endpoint's last error).
pub(crate) async fn read(inner: Arc<Inner>, conn: Arc<Conn>) {
    let why = read_frames(&inner, &conn).await;
    if conn.ended.load(crate::loom::Ordering::Acquire) {
        return;
    }
    let why = match conn.failure() {
        Some(failed) => {
            inner.note_error(format!("{}: {failed}", conn.peer_url()));
            failed
        }
        None => why,
    };
    inner.end(&conn, &why);
}

async fn read_frames(inner: &Arc<Inner>, conn: &Arc<Conn>) -> String {
    let limits = Limits {
        max_payload: inner.config.max_frame,
        ..Limits::DEFAULT
    };
    let mut r = Reader {
        buf: vec![0; FIRST_BUF],
        start: 0,
        end: 0,
        open: conn.side == Side::Outgoing,
    };
    let hello_by = after(inner.config.handshake_timeout);
    let mut share = 0;
    loop {
        // A server stops reading requests while their answers pile up; a
        // client always reads (answers only complete its pending calls).
        if conn.side == Side::Incoming {
            conn.room().await;
        }
        if conn.ended.load(crate::loom::Ordering::Acquire) || conn.failure().is_some() {
            return "the connection was ended".into();
        }
        if r.end == r.buf.len() {
            if r.start == 0 {
                // Cannot happen: `frames` sizes the buffer for the partial
                // frame at its start, so a full buffer holds a complete frame.
                return "a frame that does not fit its buffer".into();
            }
            r.buf.copy_within(r.start..r.end, 0);
            r.end -= r.start;
            r.start = 0;
        }
        let got = if r.open {
            conn.stream.read(&mut r.buf[r.end..]).await
        } else {
            match timeout_at(hello_by, conn.stream.read(&mut r.buf[r.end..])).await {
                Ok(got) => got,
                Err(_) => {
                    let why = format!(
                        "dropped {}: no handshake within {:?} ({} bytes of it arrived)",
                        conn.peer_url(),
                        inner.config.handshake_timeout,
                        r.end - r.start
                    );
                    inner
                        .counters
                        .refused_connections
                        .fetch_add(1, crate::loom::Ordering::Relaxed);
                    inner.note_error(why.clone());
                    return why;
                }
            }
        };
        match got {
            Ok(0) => {
                if conn.side == Side::Incoming && r.open {
                    // A client may half-close once it has sent its calls:
                    // the answers still owed go out before the connection
                    // ends (a call's deadline bounds the wait).
                    let _ = timeout(inner.config.deadline, conn.settled()).await;
                }
                return "closed by the other end".into();
            }
            Ok(n) => {
                r.end += n;
                if let After::End(why) = frames(inner, conn, &mut r, &limits) {
                    return why;
                }
                share += n;
                if share >= FAIR_SHARE {
                    share = 0;
                    yield_now().await;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return e.to_string(),
        }
    }
}

/// Handles the complete frames in the buffer; makes room for a partial one.
fn frames(inner: &Arc<Inner>, conn: &Arc<Conn>, r: &mut Reader, limits: &Limits) -> After {
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
                    inner.on_frame(conn, bytes)
                } else {
                    let after = inner.on_hello(conn, bytes);
                    r.open = matches!(after, After::Go);
                    after
                };
                if let After::End(why) = after {
                    return After::End(why);
                }
            }
            Err(e) => {
                let why = format!("a frame that cannot be read: {e}");
                inner.reject_stream(conn, &why);
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
