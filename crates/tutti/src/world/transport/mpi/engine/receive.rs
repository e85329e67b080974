//! The engine's receiving side: the receives kept posted on the data
//! communicator, handled strictly in posting order; announced bodies received
//! chunk by chunk (matched probes on the bulk communicator, within
//! `BODY_WINDOW`) into buffers from the rank's pool; and each source's frames
//! delivered to the world in the order they were sent. See the module
//! documentation's "Receiving".

use std::sync::Arc;

use mpi::traits::AsRaw;

use super::{raw, Engine, Status, BODY_WINDOW, EAGER, TAG_BULK, TAG_FRAME, TAG_FRAME_BODY};

/// One posted receive of the data communicator.
pub(super) struct Posted {
    buf: Box<[u8]>,
}

impl Posted {
    /// A receive buffer of [`EAGER`] bytes.
    pub(super) fn new() -> Posted {
        Posted {
            buf: vec![0u8; EAGER].into_boxed_slice(),
        }
    }
}

/// An announced chunk of a body whose message has not been received yet.
#[derive(Clone, Copy)]
pub(super) struct Unposted {
    source: usize,
    frame: u64,
    /// Where the chunk goes in the body.
    offset: usize,
    len: usize,
}

/// One chunk receive of a body.
pub(super) struct Chunk {
    source: usize,
    frame: u64,
    len: usize,
}

/// A frame from one source, complete or waiting for its body's chunks.
pub(super) struct Inbound {
    id: u64,
    head: Arc<[u8]>,
    /// The body: `None` until its first chunk is received, then capacity
    /// `body_len` and length 0 until every chunk has arrived.
    body: Option<Vec<u8>>,
    body_len: usize,
    chunks_left: usize,
}

impl Engine {
    pub(super) fn post(&mut self, i: usize) {
        let p = &mut self.posted[i];
        // SAFETY: the boxed buffer stays allocated and untouched until the
        // request completes: it is only read after `test` reported completion,
        // and freed only after the request is completed or cancelled and
        // completed (`shutdown`).
        self.posted_reqs[i] = unsafe {
            raw::irecv(
                p.buf.as_mut_ptr(),
                p.buf.len(),
                raw::any_source(),
                raw::any_tag(),
                self.data.as_raw(),
            )
        };
        self.order.push_back(i);
    }

    pub(super) fn complete_receives(&mut self) -> bool {
        // The receives match messages in posting order, so only the oldest one
        // can hold the next message to handle: test it, and on completion the
        // next one.
        let mut moved = false;
        while let Some(&i) = self.order.front() {
            let Some(st) = raw::test(&mut self.posted_reqs[i]) else {
                break;
            };
            self.order.pop_front();
            self.handle(i, st);
            self.repost.push(i);
            moved = true;
        }
        moved
    }

    pub(super) fn handle(&mut self, i: usize, st: Status) {
        let src = st.source;
        if src >= self.ranks {
            self.abort(&format!("a message from unknown rank {src}"));
        }
        let n = st.count.min(EAGER);
        self.frames_from[src] += 1;
        self.stats.frames_received += 1;
        let id = self.next_id;
        self.next_id += 1;
        let bytes = &self.posted[i].buf[..n];
        let inbound = match st.tag {
            // Nothing earlier from `src` waits for its body: the frame goes to
            // the sink straight from the receive buffer, in order.
            TAG_FRAME if self.inbound[src].is_empty() => {
                if let Err(why) = self.sink.deliver_head(src, bytes) {
                    self.abort(&why);
                }
                return;
            }
            TAG_FRAME => Inbound {
                id,
                head: Arc::from(bytes),
                body: None,
                body_len: 0,
                chunks_left: 0,
            },
            TAG_FRAME_BODY => {
                let Some(len) = bytes.get(..8).map(|b| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    u64::from_le_bytes(a)
                }) else {
                    self.abort(&format!(
                        "a body announcement of {n} bytes from rank {src} (at least 8 expected)"
                    ))
                };
                let head: Arc<[u8]> = Arc::from(&bytes[8..]);
                let len = match usize::try_from(len) {
                    Ok(l) if l <= isize::MAX as usize => l,
                    _ => self.abort(&format!("rank {src} announces a body of {len} bytes")),
                };
                let mut offset = 0;
                while offset < len {
                    let end = (offset + self.chunk).min(len);
                    self.unposted.push_back(Unposted {
                        source: src,
                        frame: id,
                        offset,
                        len: end - offset,
                    });
                    offset = end;
                }
                Inbound {
                    id,
                    head,
                    body: (len == 0).then(Vec::new),
                    body_len: len,
                    chunks_left: len.div_ceil(self.chunk),
                }
            }
            t => self.abort(&format!("a message with unknown tag {t} from rank {src}")),
        };
        self.inbound[src].push_back(inbound);
        self.touched.push(src);
        self.post_bodies();
    }

    /// Re-posts the receives that completed in earlier rounds.
    pub(super) fn repost_receives(&mut self) {
        while let Some(i) = self.repost.pop() {
            self.post(i);
        }
    }

    /// Receives the announced body chunks whose messages have arrived, in
    /// order of announcement, while the chunks being received stay within
    /// [`BODY_WINDOW`] (one at least); returns whether any was started.
    ///
    /// Each chunk is found with a matched probe (`MPI_Improbe` on the bulk
    /// communicator, from its source: bulk messages from one source arrive in
    /// the order they were announced), checked against its announced size,
    /// and received (`MPI_Imrecv`) into the body's buffer, which is taken
    /// from the pool when the first chunk is there. So a buffer is never tied
    /// to a body still in transit, a source whose body has not arrived holds
    /// up no other source's, and a body of the wrong size is refused (naming
    /// its rank) before a byte of it is written.
    pub(super) fn post_bodies(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        while let Some(&u) = self.unposted.get(i) {
            if self.stalled.contains(&u.source) {
                i += 1;
                continue;
            }
            if self.body_bytes > 0 && self.body_bytes + u.len > BODY_WINDOW {
                break;
            }
            let Some((mut message, st)) =
                raw::improbe(u.source as i32, TAG_BULK, self.bulk.as_raw())
            else {
                // Later chunks of this source come after this one.
                self.stalled.push(u.source);
                i += 1;
                continue;
            };
            if st.count != u.len {
                self.abort(&format!(
                    "a body chunk of {} bytes from rank {} where {} were announced",
                    st.count, u.source, u.len
                ));
            }
            self.unposted.remove(i);
            let Some(f) = self.inbound[u.source].iter_mut().find(|f| f.id == u.frame) else {
                self.abort("an announced body of an unknown frame (broken invariant)");
            };
            if f.body.is_none() {
                let len = f.body_len;
                let mut body: Vec<u8> = match self.sink.body_buffer(len) {
                    Some(mut b) => {
                        b.clear();
                        b
                    }
                    None => Vec::new(),
                };
                if body.try_reserve_exact(len).is_err() {
                    let src = u.source;
                    self.abort(&format!(
                        "cannot allocate {len} bytes for a message from rank {src}"
                    ));
                }
                f.body = Some(body);
            }
            let Some(base) = f.body.as_mut().map(Vec::as_mut_ptr) else {
                self.abort("a body without its buffer (broken invariant)");
            };
            // SAFETY: the body has capacity `body_len`, and the announced chunks
            // tile `0..body_len` without overlap, so `base + offset` is valid
            // for `len` bytes (the probed size, checked above). The Vec stays in
            // its `Inbound` (its heap buffer does not move) and is neither read
            // nor freed before every chunk request completed
            // (`complete_chunks`, `shutdown`).
            let req = unsafe { raw::imrecv(base.add(u.offset), u.len, &mut message) };
            self.chunk_reqs.push(req);
            self.chunks.push(Chunk {
                source: u.source,
                frame: u.frame,
                len: u.len,
            });
            self.body_bytes += u.len;
            moved = true;
        }
        self.stalled.clear();
        moved
    }

    pub(super) fn complete_chunks(&mut self) -> bool {
        self.done.clear();
        self.tester.test_some(&mut self.chunk_reqs, &mut self.done);
        if self.done.is_empty() {
            return false;
        }
        self.done.sort_unstable_by_key(|d| std::cmp::Reverse(d.0));
        for k in 0..self.done.len() {
            let (i, st) = self.done[k];
            let c = self.chunks.swap_remove(i);
            self.chunk_reqs.swap_remove(i);
            if st.count != c.len {
                self.abort(&format!(
                    "a body chunk of {} bytes from rank {} where {} were announced",
                    st.count, c.source, c.len
                ));
            }
            let Some(f) = self.inbound[c.source].iter_mut().find(|f| f.id == c.frame) else {
                self.abort("a body chunk for an unknown frame (broken invariant)");
            };
            f.chunks_left -= 1;
            self.body_bytes -= c.len;
            if f.chunks_left == 0 {
                if let Some(b) = f.body.as_mut() {
                    // SAFETY: every chunk request completed having written exactly
                    // its length (checked above), and the chunks tile
                    // `0..body_len`, which is within the capacity reserved.
                    unsafe { b.set_len(f.body_len) };
                }
            }
            self.touched.push(c.source);
        }
        self.post_bodies();
        true
    }

    pub(super) fn deliver_ready(&mut self) {
        while let Some(src) = self.touched.pop() {
            while self.inbound[src]
                .front()
                .is_some_and(|f| f.chunks_left == 0)
            {
                let Some(f) = self.inbound[src].pop_front() else {
                    break;
                };
                if let Err(why) = self.sink.deliver(src, f.head, f.body) {
                    self.abort(&why);
                }
            }
        }
    }
}
