//! Execution: running admitted methods in place, answering questions, and the
//! loops that receive and execute — one delivery at a time (every request it
//! carries runs before it counts as handled), the location's own queue, the
//! deferred requests, and serving while waiting for something else.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::Poll;

use super::admission::{Admitted, Entry};
use super::request::{Call, MethodReply, Rep, Request, Response, Returned};
use super::scope::NOTICE_TAG;
use super::wire::Open;
use super::Rmi;
use crate::loom::Ordering;
use crate::msg::codec;
use crate::msg::{Spare, Started};
use crate::world::{Content, Delivery, LocationId};

/// RMI's own traffic among a location's messages (a claim, `world/location/recv.rs`):
/// a scope's notice (its tag), a typed request or answer from this rank, or
/// the request/reply core's frames from another rank (they start with the
/// codec's frame magic). RMI serves only these; any other message — one the
/// program sent with the world's own `send`, `send_bytes` or `send_tagged` —
/// stays for the program's receives. Limit: untagged plain bytes that start
/// with the frame magic (`TUTI`) are taken for RMI's.
pub(super) fn claims(tag: Option<u64>, c: &Content) -> bool {
    let framed = |b: &[u8]| b.starts_with(&codec::MAGIC);
    match (tag, c) {
        (Some(t), _) => t == NOTICE_TAG,
        (None, Content::Value(v, _)) => (**v).is::<Request>() || (**v).is::<Response>(),
        (None, Content::Bytes(b)) => framed(b),
        (None, Content::Shared(f, r)) => f.get(r.clone()).is_some_and(framed),
        (None, Content::Taken) => false,
    }
}

impl Rmi {
    /// Handles one delivery: executes the requests it carries, files the
    /// answers. The delivery is dropped (counted as handled) only after its
    /// methods have run and their replies have been sent, as quiescence
    /// detection requires.
    pub(super) async fn handle(&self, mut d: Delivery<'_>) {
        if d.tag() == Some(NOTICE_TAG) {
            // A scope cancelled (or forgotten) by its owner on another rank.
            self.notice(d);
            return;
        }
        let from = d.from();
        if let Some(req) = d.take::<Request>() {
            // The common case within a rank: one typed request (or run).
            self.execute(from, req).await;
            drop(d);
            return;
        }
        let mut reqs = Vec::new();
        self.arrivals(&mut d, &mut reqs);
        for req in reqs {
            self.execute(from, req).await;
        }
        drop(d);
    }

    /// Executes `req` (or defers it, if its object is busy or an earlier
    /// request from the same sender waits), then whatever deferred requests
    /// became ready.
    pub(super) async fn execute(&self, from: LocationId, req: Request) {
        let admitted = self.with_state(|st| self.admit(st, from, req));
        if let Some(a) = admitted {
            if self.execute_on(from, a).await {
                self.drain_deferred().await;
            }
        }
    }

    /// Executes deferred requests whose object is free, in order per sender.
    pub(super) async fn drain_deferred(&self) {
        while let Some((from, a)) = self.next_deferred() {
            if !self.execute_on(from, a).await {
                return;
            }
        }
    }

    /// Runs the admitted method, puts the representative back and answers a
    /// `sync_rmi`. Returns whether requests are deferred.
    pub(super) async fn execute_on(&self, from: LocationId, a: Admitted) -> bool {
        if let Some(tag) = a.call.scope() {
            if self.scope_cancelled(tag) {
                return self.skip_cancelled(from, a);
            }
        }
        let Admitted {
            object,
            corr,
            call,
            rep,
        } = a;
        let count = call.count();
        let (reply, deferred) = self.run_entered(object, call, rep).await;
        let executed = self.inner.executed.load(Ordering::Relaxed);
        self.inner
            .executed
            .store(executed + count, Ordering::Relaxed);
        if corr != 0 {
            self.answer(from, corr, reply);
        }
        deferred
    }

    /// Runs an entered method in place (in a reusable block, not a fresh box;
    /// most methods complete on their first poll), then leaves its level: pops
    /// its frame and puts the representative back. Returns the reply and
    /// whether requests are deferred.
    pub(super) async fn run_entered(
        &self,
        object: u32,
        call: Box<dyn Call>,
        rep: Rep,
    ) -> (MethodReply, bool) {
        let (method, count) = (call.message(), call.count() as u64);
        // This method's level: its frame is the top of the stack (the depth
        // counts the frames).
        let level = self.inner.depth.load(Ordering::Relaxed);
        let mut start = Some((call, rep));
        // Each synchronous piece (the start, then every later poll) is a slice
        // of the trace, so slices never span a suspension.
        let method_kind = crate::diag::trace::What::Method(method);
        let started = poll_fn(|cx| {
            let (call, rep) = start.take().expect("a method starts once");
            let mut spare = Spare::default();
            let traced = crate::diag::trace::begin();
            let r = call.start(rep, self, &mut spare, cx);
            crate::diag::trace::end(traced, method_kind, count);
            Poll::Ready(r)
        })
        .await;
        let Returned { rep, reply } = match started {
            Started::Done(returned) => returned,
            Started::Running(mut running) => {
                poll_fn(|cx| {
                    let traced = crate::diag::trace::begin();
                    let r = running.poll(cx);
                    crate::diag::trace::end(traced, method_kind, count);
                    r
                })
                .await
            }
        };
        let (deferred, unwound) = self.with_state(|st| {
            // Frames above this method's: a method nested in it panicked,
            // and scoped work caught the panic (see `unwound_cold`).
            let unwound = (st.stack.len() > level).then(|| {
                let f = &st.stack[level];
                (f.object, st.objects[f.object as usize].type_name)
            });
            st.stack.truncate(level);
            st.stack.pop();
            st.objects[object as usize].entry = Entry::Here(rep);
            (!st.deferred.is_empty(), unwound)
        });
        self.inner.depth.store(level - 1, Ordering::Relaxed);
        if let Some((object, name)) = unwound {
            self.unwound_cold(object, name);
        }
        (reply, deferred)
    }

    /// A method nested in scoped work (a request this location executed
    /// while the work waited in an RMI call) panicked, and the work's catch
    /// (`scope/work.rs`) caught its panic. It is not the work's panic: the
    /// nested method's representative went down with it and its asker, if
    /// any, gets no answer, so the location panics as for any method outside
    /// scoped work.
    #[cold]
    fn unwound_cold(&self, object: u32, type_name: &str) -> ! {
        panic!(
            "tutti::rmi: location {}: a method of object #{object} (`{type_name}`) panicked \
             while scoped work waited on this location (its panic message is above)",
            self.id()
        )
    }

    /// Executes the requests this location sent itself; returns how many.
    pub(super) async fn run_own(&self) -> usize {
        let me = self.world().id();
        let mut n = 0;
        loop {
            // One use of the state to take the request, its representative
            // and its frame: `None` when there is none left.
            let next = self.with_state(|st| {
                let req = match st.own.pop_front() {
                    Some(req) => req,
                    // The run of statements to itself being built joins the
                    // queue: all of them run before anything is received.
                    None => match st.out.get_mut(me.index()).and_then(Option::take) {
                        Some(Open::Typed { object, run, seal }) => Request {
                            object,
                            corr: 0,
                            call: seal(run),
                            chain: None,
                        },
                        _ => return None,
                    },
                };
                Some(self.admit(st, me, req))
            });
            let Some(admitted) = next else {
                return n;
            };
            if let Some(a) = admitted {
                if self.execute_on(me, a).await {
                    self.drain_deferred().await;
                }
            }
            n += 1;
        }
    }

    /// Waits for `fut` while executing incoming requests.
    pub(super) async fn serve_until<F: Future>(&self, fut: F) -> F::Output {
        let mut fut = pin!(fut);
        loop {
            self.run_own().await;
            self.flush_out();
            let next = poll_fn(|cx| {
                if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                    return Poll::Ready(Ok(v));
                }
                match Pin::new(&mut self.world().recv_claimed(claims)).poll(cx) {
                    Poll::Ready(d) => Poll::Ready(Err(d)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            match next {
                Ok(v) => {
                    self.resume();
                    return v;
                }
                Err(d) => self.handle(d).await,
            }
        }
    }
}
