//! The receiving side of the credit protocol (`credit.rs`): an exported actor
//! with a window is served by [`Credited`], which queues each request in the
//! actor's mailbox or, while the mailbox is full, in its held queue, and
//! returns each statement's credit once it is in the mailbox.
//!
//! The held queue moves into the mailbox from its own waker: when the queue is
//! not empty, its front request waits for room in the bounded mailbox exactly
//! as a local `send` does (a ticket with a waker), and the actor's next pop
//! wakes it — no task, no polling. Lock order: the held queue, then the
//! mailbox (every path takes them in that order; the mailbox wakes its
//! waiters after letting its lock go).

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::task::{Wake, Waker};

use super::node::Inner;
use crate::actor::{Actor, Addr, AskError, Overflow};
use crate::call::serve::Target;
use crate::call::Refusal;
use crate::loom::{lock, Mutex};
use crate::msg::codec::{Format, Frame, FrameKind};
use crate::msg::{Dispatch, Envelope, MsgId, RemoteReply};
use crate::world::LocationId;

/// An exported actor with a window: see the module documentation.
pub(super) struct Credited<A: Actor> {
    dispatch: Dispatch<A>,
    held: Arc<Held<A>>,
}

/// A request waiting for room: the envelope, and for a statement its sender
/// (owed a credit) and message id (for a dead letter).
struct Item<A: Actor> {
    envelope: Envelope<A>,
    statement: Option<(LocationId, MsgId)>,
}

struct Held<A: Actor> {
    addr: Addr<A>,
    actor: u64,
    window: u32,
    /// `Fail`: a question that finds no room is refused instead of held.
    refuse_questions: bool,
    node: Weak<Inner>,
    queue: Mutex<Queue<A>>,
}

struct Queue<A: Actor> {
    items: VecDeque<Item<A>>,
    /// The front item's place among the mailbox's waiting senders.
    ticket: Option<u64>,
}

impl<A: Actor> Credited<A> {
    pub(super) fn new(
        dispatch: Dispatch<A>,
        addr: Addr<A>,
        window: u32,
        node: Weak<Inner>,
    ) -> Credited<A> {
        let refuse_questions = matches!(addr.cell().bounds(), Some((_, Overflow::Fail)));
        Credited {
            dispatch,
            held: Arc::new(Held {
                actor: addr.id().as_u64(),
                addr,
                window,
                refuse_questions,
                node,
                queue: Mutex::new(Queue {
                    items: VecDeque::new(),
                    ticket: None,
                }),
            }),
        }
    }
}

impl<A: Actor> Target for Credited<A> {
    fn take(&self, frame: &Frame<'_>, format: Format) -> Result<Option<RemoteReply>, Refusal> {
        let h = frame.header();
        // The conversation checked that `src` is the location it came from.
        let statement = (h.kind == FrameKind::Tell).then(|| (LocationId::new(h.src), h.msg));
        let incoming = match self.dispatch.incoming_in(frame, format) {
            Ok(i) => i,
            Err(e) => {
                // Rejected as bad bytes: no `DeadLetter` carries this credit back.
                if let Some((from, _)) = statement {
                    self.held.owe(from);
                }
                return Err(Refusal::Failed(e.to_string()));
            }
        };
        self.held.offer(incoming.envelope, statement)?;
        Ok(incoming.reply)
    }

    fn dropped_means_stopped(&self) -> bool {
        true
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<A>()
    }
}

impl<A: Actor> Held<A> {
    /// Queues `envelope` in the mailbox, or holds it behind what is held. A
    /// refusal (the actor stopped; a question to a full `Fail` mailbox) is
    /// answered by the serving core: a statement's `DeadLetter` returns its
    /// credit.
    fn offer(
        self: &Arc<Self>,
        envelope: Envelope<A>,
        statement: Option<(LocationId, MsgId)>,
    ) -> Result<(), Refusal> {
        let mut q = lock(&self.queue);
        if q.items.is_empty() {
            match self.addr.enqueue(envelope) {
                Ok(()) => {
                    drop(q);
                    if let Some((from, _)) = statement {
                        self.owe(from);
                    }
                    return Ok(());
                }
                Err((_, AskError::Stopped)) => return Err(Refusal::NoTarget),
                Err((_, _)) if statement.is_none() && self.refuse_questions => {
                    return Err(Refusal::Full)
                }
                Err((envelope, _)) => {
                    q.items.push_back(Item {
                        envelope,
                        statement,
                    });
                    let owed = self.drain(&mut q);
                    drop(q);
                    self.settle(owed);
                    return Ok(());
                }
            }
        }
        if statement.is_none() && self.refuse_questions {
            return Err(Refusal::Full);
        }
        q.items.push_back(Item {
            envelope,
            statement,
        });
        Ok(())
    }

    /// Moves held requests into the mailbox while it has room; the front one
    /// left waits for room with this queue's waker. Returns what was moved or
    /// dropped, for [`settle`](Held::settle) after the lock is let go.
    fn drain(self: &Arc<Self>, q: &mut Queue<A>) -> Vec<Settled> {
        let waker = Waker::from(Arc::clone(self));
        let mut done = Vec::new();
        while let Some(item) = q.items.pop_front() {
            match self
                .addr
                .enqueue_waiting(item.envelope, &waker, &mut q.ticket)
            {
                Ok(()) => {
                    if let Some((from, _)) = item.statement {
                        done.push(Settled::Queued(from));
                    }
                }
                Err((envelope, false)) => {
                    q.items.push_front(Item {
                        envelope,
                        statement: item.statement,
                    });
                    break;
                }
                // Stopped: dropping a question's envelope tells its asker.
                Err((envelope, true)) => {
                    drop(envelope);
                    if let Some((from, msg)) = item.statement {
                        done.push(Settled::Dead(from, msg));
                    }
                }
            }
        }
        done
    }

    /// Returns the credits of what [`drain`](Held::drain) moved, and reports
    /// what it dropped as dead letters (their notices carry the credits).
    fn settle(&self, done: Vec<Settled>) {
        for s in done {
            match s {
                Settled::Queued(from) => self.owe(from),
                Settled::Dead(from, msg) => {
                    if let Some(node) = self.node.upgrade() {
                        node.serving.dead_letter();
                        let why = format!("actor {} at {} stopped", self.actor, node.id);
                        node.dead_letter_notice(from, self.actor, msg, why);
                    }
                }
            }
        }
    }

    /// One credit more is owed to `from`.
    fn owe(&self, from: LocationId) {
        if let Some(node) = self.node.upgrade() {
            node.owe_credit(from, self.actor, self.window);
        }
    }
}

enum Settled {
    Queued(LocationId),
    Dead(LocationId, MsgId),
}

/// The mailbox has room (or the actor stopped): move what is held.
impl<A: Actor> Wake for Held<A> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut q = lock(&self.queue);
        let done = self.drain(&mut q);
        drop(q);
        self.settle(done);
    }
}
