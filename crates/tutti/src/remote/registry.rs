//! The world-wide registry: the entries a node is home for, the requests it
//! sends to the homes of names, and their answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::node::{lock, HomeEntry, Inner};
use super::protocol::{Control, RegistryReply, CONTROL};
use super::RemoteError;
use crate::actor::Name;
use crate::call::{self, Question};
use crate::msg::codec;
use crate::world::LocationId;

/// A registry request's reply, as a future: at once (this location is the
/// home) or from the home.
pub(super) enum RegistryQuestion {
    Ready(Option<RegistryReply>),
    Waiting {
        question: Question<LocationId>,
        /// The name's home, and what was asked of it (for the detector).
        home: LocationId,
        asked: &'static str,
    },
}

impl Future for RegistryQuestion {
    type Output = Result<RegistryReply, RemoteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            RegistryQuestion::Ready(a) => match a.take() {
                Some(a) => Poll::Ready(Ok(a)),
                None => Poll::Ready(Err(RemoteError::Fault("polled after completion".into()))),
            },
            RegistryQuestion::Waiting {
                question,
                home,
                asked,
            } => match Pin::new(question).poll(cx) {
                Poll::Ready(Ok(call::ReplyBody::Bytes(bytes))) => Poll::Ready(
                    codec::decode::<RegistryReply>(&bytes)
                        .map_err(|e| RemoteError::BadReply(e.to_string())),
                ),
                Poll::Ready(Ok(call::ReplyBody::Value(_))) => {
                    Poll::Ready(Err(RemoteError::BadReply("a typed registry reply".into())))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
                Poll::Pending => {
                    waiting(*home, asked, cx);
                    Poll::Pending
                }
            },
        }
    }
}

/// A registry request waits for the answer of `home`'s node: noted for the
/// deadlock detector as a wait on someone unknown (the home's node answers
/// from its own task, whatever its location waits for), which the world's
/// stall checks judge; if they found that it can never be answered (every
/// location of every rank waits), the location fails with the report.
#[cold]
fn waiting(home: LocationId, asked: &'static str, cx: &Context<'_>) {
    use crate::diag::node::{On, Wait, What};
    if let Some(d) = crate::diag::node::take_failure() {
        panic!("tutti::remote: a registry {asked} cannot be answered\n{d}");
    }
    crate::diag::node::note(
        || Wait {
            on: On::Unknown,
            what: What::Owned(format!(
                "waits for the answer to a registry {asked} from the name's home, \
                 the actor node at {home}"
            )),
        },
        Some(cx.waker()),
    );
}

impl Inner {
    /// A registry request to `home`: answered here if this is the home.
    pub(super) fn request(
        self: &Arc<Self>,
        home: LocationId,
        c: &Control,
    ) -> Result<RegistryQuestion, RemoteError> {
        if home == self.id {
            if lock(&self.state).left {
                return Err(RemoteError::NodeLeft(self.id));
            }
            return Ok(RegistryQuestion::Ready(Some(self.at_home(self.id, c))));
        }
        // Opened and sent under the state lock, as every question (see `ask`).
        let st = lock(&self.state);
        self.may_send(&st, home, false)?;
        let ends = self.conv.ends(home);
        let corr = self
            .conv
            .ask_with(home, |corr, buf| buf.control(ends, CONTROL, corr, c))?;
        drop(st);
        let asked = match c {
            Control::Register { .. } => "register",
            Control::Unregister { .. } => "unregister",
            _ => "lookup",
        };
        Ok(RegistryQuestion::Waiting {
            question: Question::new(Arc::clone(self.conv.pending()), corr),
            home,
            asked,
        })
    }

    /// The home's decision on a registry request from `from`.
    pub(super) fn at_home(&self, from: LocationId, c: &Control) -> RegistryReply {
        let mut home = lock(&self.home);
        match c {
            Control::Register {
                name,
                type_name,
                actor,
                window,
            } => match home.get(name.as_str()) {
                Some(e) => RegistryReply::Taken {
                    location: e.location,
                    actor: e.actor,
                },
                None => {
                    home.insert(
                        name.clone(),
                        HomeEntry {
                            type_name: type_name.clone(),
                            location: from.raw(),
                            actor: *actor,
                            window: *window,
                        },
                    );
                    RegistryReply::Registered
                }
            },
            Control::Unregister { name, actor } => {
                let mine = home
                    .get(name.as_str())
                    .is_some_and(|e| e.location == from.raw() && e.actor == *actor);
                if mine {
                    home.remove(name.as_str());
                }
                RegistryReply::Unregistered(mine)
            }
            Control::Lookup { name } => match home.get(name.as_str()) {
                Some(e) => RegistryReply::Found {
                    type_name: e.type_name.clone(),
                    location: e.location,
                    actor: e.actor,
                    window: e.window,
                },
                None => RegistryReply::NotFound,
            },
            _ => RegistryReply::NotFound,
        }
    }

    /// Forgets a name recorded for `actor` (its registration was refused).
    pub(super) fn forget_name(&self, actor: u64, name: &Name) {
        if let Some(e) = lock(&self.exports).get_mut(&actor) {
            e.names.retain(|n| n != name);
        }
    }

    /// An exported actor stopped (from its stop sequence): drop the export and
    /// remove its names at their homes; tell its monitors' nodes.
    pub(super) fn actor_stopped(&self, actor: u64, why: &str) {
        let export = lock(&self.exports).remove(&actor);
        super::wait::withdrawn(self.world.diag_id(), self.id, actor);
        if let Some(e) = export {
            self.unregister_names(actor, &e.names);
            self.tell_watchers(actor, &e.watchers, why);
            // The export's address is dropped here, outside the locks.
        }
    }

    /// Tells the homes of `names` that `actor` no longer holds them.
    pub(super) fn unregister_names(&self, actor: u64, names: &[Name]) {
        for n in names {
            let home = LocationId::new(super::home_index(n.as_str(), self.locations) as u32);
            let c = Control::Unregister {
                name: n.as_str().to_string(),
                actor,
            };
            if home == self.id {
                self.at_home(self.id, &c);
            } else {
                // No answer is wanted. A home that left has no entry left.
                let _ = self.control(home, &c, true);
            }
        }
        if !names.is_empty() {
            self.flush();
        }
    }
}
