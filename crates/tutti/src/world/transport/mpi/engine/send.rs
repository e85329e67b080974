//! The engine's sending side: frames handed over by the locations wait in a
//! queue until the engine starts them (at most `MAX_IN_FLIGHT` requests in
//! flight), a frame's head and body go out as `Isend`s (a lent body straight
//! from its sender's memory), and completion passes test the oldest requests
//! first; see the module documentation's "Sending".

use std::sync::Arc;

use mpi::traits::AsRaw;

use super::{
    raw, AtomicUsize, Engine, Frame, Ordering, COMPLETE_AT, EAGER, FULL_TEST_EVERY, MAX_IN_FLIGHT,
    TAG_BULK, TAG_FRAME, TAG_FRAME_BODY, TEST_WINDOW,
};

/// A buffer an in-flight send reads from.
pub(super) enum Keep {
    Head(#[allow(dead_code)] Vec<u8>),
    Body(#[allow(dead_code)] Arc<Vec<u8>>),
    /// A chunk of a lent body: counted down when its send completed.
    Lent(Arc<AtomicUsize>),
}

/// A body lent by a sender that waits until the engine is done with it
/// ([`Transport::send_borrowed`](crate::world::transport::Transport::send_borrowed)).
pub(crate) struct Lent {
    ptr: *const u8,
    len: usize,
    /// `usize::MAX` until the engine started the body's sends, then the
    /// number of them not yet completed: the bytes are free again at 0.
    left: Arc<AtomicUsize>,
}

// SAFETY: a `Lent` is the address of bytes that its sender keeps borrowed,
// unmodified, until `left` reaches 0; the engine only reads them (MPI sends
// from them), from whichever thread drives it.
unsafe impl Send for Lent {}

impl Lent {
    /// # Safety
    /// `body` must stay allocated and unmodified until `left` reads 0 (the
    /// sender waits for that).
    pub(crate) unsafe fn new(body: &[u8], left: Arc<AtomicUsize>) -> Lent {
        Lent {
            ptr: body.as_ptr(),
            len: body.len(),
            left,
        }
    }
}

impl Engine {
    /// Starts sending the queued frames (up to the in-flight bound); returns
    /// whether there were any.
    pub(crate) fn start_queued(&mut self) -> bool {
        let mut moved = false;
        while self.send_reqs.len() < MAX_IN_FLIGHT {
            match self.outgoing.pop() {
                Some(out) => {
                    self.start(out);
                    moved = true;
                }
                None => break,
            }
        }
        moved
    }

    /// Starts sending `frame` to rank `to` at once if nothing handed over
    /// earlier still waits in the queue (which keeps each rank's frames in
    /// order); otherwise gives it back.
    pub(crate) fn send_now(&mut self, to: usize, frame: Frame) -> Result<(), Frame> {
        self.start_queued();
        if self.send_reqs.len() >= MAX_IN_FLIGHT || !self.outgoing.is_empty() {
            return Err(frame);
        }
        self.start_send(to, frame);
        Ok(())
    }

    /// Starts the queued frames, completing finished sends when many are in
    /// flight (a sender that never idles keeps its request array short).
    pub(crate) fn start_sends(&mut self) {
        self.start_queued();
        if self.send_reqs.len() >= COMPLETE_AT {
            self.complete_sends();
            self.start_queued();
        }
    }

    pub(super) fn start_send(&mut self, to: usize, frame: Frame) {
        if to >= self.ranks || to == self.rank {
            self.abort(&format!("a frame for rank {to} (broken invariant)"));
        }
        self.frames_to[to] += 1;
        self.stats.frames_sent += 1;
        let Frame { head, body } = frame;
        match body {
            None => self.start_head(to, head, None),
            Some(body) => {
                self.start_head(to, head, Some(body.len()));
                let body = Arc::new(body);
                let mut off = 0;
                while off < body.len() {
                    let end = (off + self.chunk).min(body.len());
                    // SAFETY: every chunk request keeps a clone of the Arc holding
                    // the body, so the buffer lives until the last one completes;
                    // nobody writes to it.
                    let req =
                        unsafe { raw::isend(&body[off..end], to, TAG_BULK, self.bulk.as_raw()) };
                    self.send_reqs.push(req);
                    self.sending.push(Keep::Body(Arc::clone(&body)));
                    off = end;
                }
            }
        }
    }

    /// Starts the eager part of a frame: its head alone (`TAG_FRAME`), or, for a frame
    /// with a body of `body_len` bytes, the announcement (`TAG_FRAME_BODY`): the body's
    /// length, then the head. The body's chunks follow.
    fn start_head(&mut self, to: usize, head: Vec<u8>, body_len: Option<usize>) {
        let head_len = head.len();
        let (buf, tag) = match body_len {
            None => (head, TAG_FRAME),
            Some(len) => {
                let mut ann = Vec::with_capacity(8 + head_len);
                ann.extend_from_slice(&(len as u64).to_le_bytes());
                ann.extend_from_slice(&head);
                (ann, TAG_FRAME_BODY)
            }
        };
        if buf.len() > EAGER {
            self.abort(&format!(
                "a frame head of {head_len} bytes exceeds {EAGER} (broken invariant)"
            ));
        }
        // SAFETY: `buf` moves into `sending` beside its request (the heap buffer does
        // not move) and is dropped only once the request completed (`complete_sends`,
        // `shutdown`).
        let req = unsafe { raw::isend(&buf, to, tag, self.data.as_raw()) };
        self.send_reqs.push(req);
        self.sending.push(Keep::Head(buf));
    }

    /// Starts a frame whose body is lent ([`Lent`]): the announcement, then
    /// the body's chunks straight from the sender's memory.
    pub(super) fn start_lent(&mut self, to: usize, head: Vec<u8>, body: Lent) {
        if to >= self.ranks || to == self.rank || body.len == 0 {
            self.abort(&format!("a lent body for rank {to} (broken invariant)"));
        }
        self.frames_to[to] += 1;
        self.stats.frames_sent += 1;
        self.start_head(to, head, Some(body.len));
        body.left
            .store(body.len.div_ceil(self.chunk), Ordering::Relaxed);
        let mut off = 0;
        while off < body.len {
            let end = (off + self.chunk).min(body.len);
            // SAFETY: the sender keeps `body.len` bytes at `body.ptr` allocated
            // and unmodified until `left` reaches 0 (`Lent::new`); it is counted
            // down only when this chunk's request completed (`complete_sends`).
            let req = unsafe {
                let chunk = std::slice::from_raw_parts(body.ptr.add(off), end - off);
                raw::isend(chunk, to, TAG_BULK, self.bulk.as_raw())
            };
            self.send_reqs.push(req);
            self.sending.push(Keep::Lent(Arc::clone(&body.left)));
            off = end;
        }
    }

    pub(super) fn complete_sends(&mut self) -> bool {
        // Sends complete roughly in the order they started, so testing the
        // oldest few finds the completed ones at a cost independent of how many
        // are in flight; now and then every request is tested, in case an old
        // one to a slow rank hides newer completed ones.
        let n = self.send_reqs.len();
        self.sweeps = self.sweeps.wrapping_add(1);
        let k = if self.sweeps % FULL_TEST_EVERY == 0 {
            n
        } else {
            n.min(TEST_WINDOW)
        };
        self.done.clear();
        self.tester
            .test_some(&mut self.send_reqs[..k], &mut self.done);
        if self.done.is_empty() {
            return false;
        }
        // Drop the completed requests and their buffers, keeping the order.
        self.gone.clear();
        self.gone.resize(k, false);
        for &(i, _) in &self.done {
            self.gone[i] = true;
        }
        let mut w = 0;
        for r in 0..n {
            if r < k && self.gone[r] {
                continue;
            }
            self.send_reqs.swap(w, r);
            self.sending.swap(w, r);
            w += 1;
        }
        self.send_reqs.truncate(w);
        for kept in self.sending.drain(w..) {
            match kept {
                // The last chunk's completion frees the body for reuse.
                Keep::Body(b) => {
                    if let Ok(b) = Arc::try_unwrap(b) {
                        self.sink.recycle(b);
                    }
                }
                // Release: the sender reuses the bytes after reading 0.
                Keep::Lent(left) => {
                    left.fetch_sub(1, Ordering::Release);
                }
                Keep::Head(_) => {}
            }
        }
        true
    }
}
