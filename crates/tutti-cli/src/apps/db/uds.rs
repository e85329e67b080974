//! The same protocol over Unix domain sockets (the thesis's reference): a
//! server thread multiplexing every connection with `poll(2)`, a thread per
//! client, fixed-size binary requests and replies.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::store::{decode_reply, encode_reply, REPLY_BYTES, REQUEST_BYTES};
use super::{final_size, mean, script, Outcome, Request, Store};

/// Serves every connection until all have hung up; returns the store's size.
pub(super) fn serve(mut conns: Vec<UnixStream>) -> Result<usize, String> {
    let mut store = Store::default();
    let mut fds: Vec<libc::pollfd> = conns
        .iter()
        .map(|c| libc::pollfd {
            fd: c.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut open = conns.len();
    while open > 0 {
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("poll failed: {e}"));
        }
        for (pfd, conn) in fds.iter_mut().zip(conns.iter_mut()) {
            if pfd.fd < 0 || pfd.revents == 0 {
                continue;
            }
            let mut req = [0u8; REQUEST_BYTES];
            match conn.read_exact(&mut req) {
                Ok(()) => {
                    let reply = store.apply(Request::decode(&req)?);
                    conn.write_all(&encode_reply(reply))
                        .map_err(|e| format!("cannot reply: {e}"))?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    // The client hung up: stop polling it.
                    pfd.fd = -1;
                    open -= 1;
                }
                Err(e) => return Err(format!("cannot read a request: {e}")),
            }
        }
    }
    Ok(store.len())
}

/// One run: `n` client threads of `r` requests each.
pub fn run(n: usize, r: u64) -> Result<Outcome, String> {
    let mut server_ends = Vec::with_capacity(n);
    let mut client_ends = Vec::with_capacity(n);
    for _ in 0..n {
        let (s, c) = UnixStream::pair().map_err(|e| format!("cannot make a socket pair: {e}"))?;
        server_ends.push(s);
        client_ends.push(c);
    }
    let server = std::thread::Builder::new()
        .name("uds-server".into())
        .spawn(move || serve(server_ends))
        .map_err(|e| format!("cannot start the server thread: {e}"))?;
    let start_line = Arc::new(Barrier::new(n + 1));
    let clients: Vec<_> = client_ends
        .into_iter()
        .enumerate()
        .map(|(c, mut sock)| {
            let start_line = start_line.clone();
            std::thread::Builder::new()
                .name(format!("uds-client-{c}"))
                .spawn(move || {
                    start_line.wait();
                    let t0 = Instant::now();
                    let mut ok = true;
                    let mut reply = [0u8; REPLY_BYTES];
                    for i in 0..r {
                        let (req, expect) = script(c, i);
                        if sock.write_all(&req.encode()).is_err()
                            || sock.read_exact(&mut reply).is_err()
                        {
                            return (t0.elapsed(), false);
                        }
                        ok &= decode_reply(&reply) == Ok(expect);
                    }
                    (t0.elapsed(), ok)
                })
                .map_err(|e| format!("cannot start a client thread: {e}"))
        })
        .collect::<Result<_, _>>()?;
    start_line.wait();
    let start = Instant::now();
    let mut times: Vec<Duration> = Vec::with_capacity(n);
    let mut ok = true;
    for c in clients {
        let (t, good) = c.join().map_err(|_| "a client thread panicked")?;
        times.push(t);
        ok &= good;
    }
    let wall = start.elapsed();
    let size = server.join().map_err(|_| "the server thread panicked")??;
    Ok(Outcome {
        wall,
        per_client: mean(&times),
        ok: ok && size == final_size(n, r),
    })
}
