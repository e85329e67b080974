//! Building an actor graph: actors, their named typed ports, and the channels
//! between them. Built the same way on every rank (SPMD), so every check here
//! gives the same answer everywhere.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

use super::channel::{Maker, TypedMaker};
use super::port::{ActorId, InPort, OutPort, Token};

/// When an actor's `act()` runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub enum Firing {
    /// Whenever one of its ports changed: a token arrived on an input, room
    /// freed up on an output, or a neighbour terminated (and once at the start).
    #[default]
    OnChange,
    /// Pond's rule: only when every connected input holds a token (or has
    /// ended) and every connected output has room (or its consumer ended).
    AllReady,
}

/// How a channel between two ranks moves its tokens (Miguel 2019, ch. 7). Within
/// a rank every channel hands typed values over, whatever its scheme.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub enum Scheme {
    /// Each token is a message (encoded by the `msg` codec); credits returned
    /// by the consumer hold a producer back when the channel is full.
    #[default]
    TwoSided,
    /// Each token is put (`MPI_Put` + flush) into a pre-allocated slot of
    /// `slot` bytes in a window on the consumer's rank, followed by a small
    /// signal message; credits as in the two-sided scheme, so a slot is reused
    /// only after the consumer took its token. A token whose encoding is
    /// larger than a slot travels two-sided. Needs the MPI transport when a
    /// channel crosses ranks ([`RunError::Scheme`](super::RunError::Scheme)
    /// otherwise).
    OneSided {
        /// Bytes per slot (the largest encoded token put one-sided).
        slot: usize,
    },
}

impl Scheme {
    /// [`Scheme::OneSided`] with 64 KiB slots.
    pub const ONE_SIDED: Scheme = Scheme::OneSided { slot: 64 << 10 };
}

/// A mistake in the graph's construction. Construction is deterministic, so
/// every rank that runs the same code reports the same error.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum BuildError {
    /// Two actors with one name.
    DuplicateActor(String),
    /// Two ports of one actor with one name.
    DuplicatePort {
        /// The actor.
        actor: String,
        /// The port.
        port: String,
    },
    /// No actor or port of that name (`actor.port` for ports).
    NoSuchPort(String),
    /// An output and an input of different types.
    TypeMismatch {
        /// `actor.port` of the output.
        from: String,
        /// Its token type.
        from_type: &'static str,
        /// `actor.port` of the input.
        to: String,
        /// Its token type.
        to_type: &'static str,
    },
    /// A port that already has a channel.
    AlreadyConnected(String),
    /// A named port is an input where an output is needed or the other way round.
    WrongDirection(String),
    /// A channel of capacity 0.
    ZeroCapacity(String),
    /// A one-sided scheme with slots of 0 bytes.
    ZeroSlot,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateActor(a) => write!(f, "two actors are named '{a}'"),
            BuildError::DuplicatePort { actor, port } => {
                write!(f, "actor '{actor}' has two ports named '{port}'")
            }
            BuildError::NoSuchPort(p) => write!(f, "there is no port '{p}'"),
            BuildError::TypeMismatch {
                from,
                from_type,
                to,
                to_type,
            } => write!(
                f,
                "cannot connect '{from}' (sends {from_type}) to '{to}' (takes {to_type}): the types differ"
            ),
            BuildError::AlreadyConnected(p) => write!(f, "port '{p}' is connected twice"),
            BuildError::WrongDirection(p) => {
                write!(f, "port '{p}' has the wrong direction for this connection")
            }
            BuildError::ZeroCapacity(p) => {
                write!(f, "the channel from '{p}' has capacity 0 (it must hold at least one token)")
            }
            BuildError::ZeroSlot => {
                f.write_str("a one-sided scheme with slots of 0 bytes (a slot must hold a token)")
            }
        }
    }
}

impl std::error::Error for BuildError {}

fn check_scheme(s: Scheme) -> Result<(), BuildError> {
    match s {
        Scheme::OneSided { slot: 0 } => Err(BuildError::ZeroSlot),
        _ => Ok(()),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub(crate) enum Dir {
    In,
    Out,
}

pub(crate) struct PortDecl {
    pub(crate) name: String,
    pub(crate) dir: Dir,
    pub(crate) ty: TypeId,
    pub(crate) ty_name: &'static str,
    pub(crate) maker: Arc<dyn Maker>,
    pub(crate) channel: Option<u32>,
}

pub(crate) struct ActorDecl {
    pub(crate) name: String,
    pub(crate) firing: Firing,
    pub(crate) ports: Vec<PortDecl>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct ChannelDecl {
    pub(crate) from: (ActorId, u32),
    pub(crate) to: (ActorId, u32),
    pub(crate) capacity: usize,
    /// `None`: the graph's default (see [`GraphBuilder::scheme`]).
    pub(crate) scheme: Option<Scheme>,
}

/// Builds an [`ActorGraph`] (see the [module docs](super)).
///
/// ```
/// use tutti::graph::ActorGraph;
/// let mut b = ActorGraph::builder();
/// let p = b.actor("producer").unwrap();
/// let out = b.output::<u64>(p, "out").unwrap();
/// let c = b.actor("consumer").unwrap();
/// let inp = b.input::<u64>(c, "in").unwrap();
/// b.connect(out, inp, 4).unwrap();
/// // The same port twice is refused, naming it.
/// let err = b.connect(out, inp, 4).unwrap_err();
/// assert_eq!(err.to_string(), "port 'producer.out' is connected twice");
/// // So is a type mismatch, by name.
/// let d = b.actor("doubles").unwrap();
/// b.input::<f64>(d, "in").unwrap();
/// let q = b.actor("q").unwrap();
/// b.output::<u64>(q, "out").unwrap();
/// assert!(matches!(
///     b.connect_named("q.out", "doubles.in", 1),
///     Err(tutti::graph::BuildError::TypeMismatch { .. })
/// ));
/// let graph = b.build();
/// assert_eq!(graph.actors(), 4);
/// ```
#[derive(Default)]
pub struct GraphBuilder {
    actors: Vec<ActorDecl>,
    names: HashMap<String, ActorId>,
    channels: Vec<ChannelDecl>,
    scheme: Scheme,
}

impl fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("actors", &self.actors.len())
            .field("channels", &self.channels.len())
            .finish()
    }
}

impl GraphBuilder {
    /// Declares an actor (its `act()` runs on change, [`Firing::OnChange`]).
    pub fn actor(&mut self, name: &str) -> Result<ActorId, BuildError> {
        self.actor_firing(name, Firing::OnChange)
    }

    /// Declares an actor with a firing rule.
    ///
    /// ```
    /// use tutti::graph::{ActorGraph, Firing};
    /// let mut b = ActorGraph::builder();
    /// b.actor_firing("adder", Firing::AllReady).unwrap();
    /// assert!(b.actor("adder").is_err());
    /// ```
    pub fn actor_firing(&mut self, name: &str, firing: Firing) -> Result<ActorId, BuildError> {
        if self.names.contains_key(name) {
            return Err(BuildError::DuplicateActor(name.to_string()));
        }
        let id = ActorId(self.actors.len() as u32);
        self.names.insert(name.to_string(), id);
        self.actors.push(ActorDecl {
            name: name.to_string(),
            firing,
            ports: Vec::new(),
        });
        Ok(id)
    }

    fn port<T: Token>(&mut self, actor: ActorId, name: &str, dir: Dir) -> Result<u32, BuildError> {
        let a = &mut self.actors[actor.index()];
        if a.ports.iter().any(|p| p.name == name) {
            return Err(BuildError::DuplicatePort {
                actor: a.name.clone(),
                port: name.to_string(),
            });
        }
        a.ports.push(PortDecl {
            name: name.to_string(),
            dir,
            ty: TypeId::of::<T>(),
            ty_name: std::any::type_name::<T>(),
            maker: Arc::new(TypedMaker::<T>::new()),
            channel: None,
        });
        Ok(a.ports.len() as u32 - 1)
    }

    /// Declares input port `name` of `actor`, taking tokens of type `T`.
    pub fn input<T: Token>(&mut self, actor: ActorId, name: &str) -> Result<InPort<T>, BuildError> {
        Ok(InPort {
            actor,
            index: self.port::<T>(actor, name, Dir::In)?,
            _t: PhantomData,
        })
    }

    /// Declares output port `name` of `actor`, sending tokens of type `T`.
    pub fn output<T: Token>(
        &mut self,
        actor: ActorId,
        name: &str,
    ) -> Result<OutPort<T>, BuildError> {
        Ok(OutPort {
            actor,
            index: self.port::<T>(actor, name, Dir::Out)?,
            _t: PhantomData,
        })
    }

    fn port_name(&self, (a, i): (ActorId, u32)) -> String {
        let a = &self.actors[a.index()];
        format!("{}.{}", a.name, a.ports[i as usize].name)
    }

    /// Joins `from` to `to` by a FIFO channel holding at most `capacity` tokens.
    /// The types are equal by construction; a port connected twice is an error.
    pub fn connect<T: Token>(
        &mut self,
        from: OutPort<T>,
        to: InPort<T>,
        capacity: usize,
    ) -> Result<(), BuildError> {
        self.join(
            (from.actor, from.index),
            (to.actor, to.index),
            capacity,
            None,
        )
    }

    /// [`connect`](Self::connect) with this channel's own [`Scheme`] between
    /// ranks (else the graph's, see [`scheme`](Self::scheme)).
    ///
    /// ```
    /// use tutti::graph::{ActorGraph, Scheme};
    /// let mut b = ActorGraph::builder();
    /// let (p, c) = (b.actor("p").unwrap(), b.actor("c").unwrap());
    /// let (o, i) = (b.output::<u32>(p, "out").unwrap(), b.input::<u32>(c, "in").unwrap());
    /// b.connect_with(o, i, 4, Scheme::OneSided { slot: 64 }).unwrap();
    /// ```
    pub fn connect_with<T: Token>(
        &mut self,
        from: OutPort<T>,
        to: InPort<T>,
        capacity: usize,
        scheme: Scheme,
    ) -> Result<(), BuildError> {
        check_scheme(scheme)?;
        self.join(
            (from.actor, from.index),
            (to.actor, to.index),
            capacity,
            Some(scheme),
        )
    }

    /// The [`Scheme`] of every channel between ranks that was not given one
    /// with [`connect_with`](Self::connect_with) (default: two-sided).
    pub fn scheme(&mut self, scheme: Scheme) -> Result<&mut Self, BuildError> {
        check_scheme(scheme)?;
        self.scheme = scheme;
        Ok(self)
    }

    /// Joins ports given by name (`"actor.port"`), checking their types.
    pub fn connect_named(
        &mut self,
        from: &str,
        to: &str,
        capacity: usize,
    ) -> Result<(), BuildError> {
        let f = self.find(from, Dir::Out)?;
        let t = self.find(to, Dir::In)?;
        self.join(f, t, capacity, None)
    }

    fn find(&self, name: &str, dir: Dir) -> Result<(ActorId, u32), BuildError> {
        let (actor, port) = name
            .rsplit_once('.')
            .ok_or_else(|| BuildError::NoSuchPort(name.to_string()))?;
        let &id = self
            .names
            .get(actor)
            .ok_or_else(|| BuildError::NoSuchPort(name.to_string()))?;
        let i = self.actors[id.index()]
            .ports
            .iter()
            .position(|p| p.name == port)
            .ok_or_else(|| BuildError::NoSuchPort(name.to_string()))?;
        if self.actors[id.index()].ports[i].dir != dir {
            return Err(BuildError::WrongDirection(name.to_string()));
        }
        Ok((id, i as u32))
    }

    fn join(
        &mut self,
        from: (ActorId, u32),
        to: (ActorId, u32),
        capacity: usize,
        scheme: Option<Scheme>,
    ) -> Result<(), BuildError> {
        let (fp, tp) = (
            &self.actors[from.0.index()].ports[from.1 as usize],
            &self.actors[to.0.index()].ports[to.1 as usize],
        );
        if fp.ty != tp.ty {
            return Err(BuildError::TypeMismatch {
                from: self.port_name(from),
                from_type: fp.ty_name,
                to: self.port_name(to),
                to_type: tp.ty_name,
            });
        }
        if fp.channel.is_some() {
            return Err(BuildError::AlreadyConnected(self.port_name(from)));
        }
        if tp.channel.is_some() {
            return Err(BuildError::AlreadyConnected(self.port_name(to)));
        }
        if capacity == 0 {
            return Err(BuildError::ZeroCapacity(self.port_name(from)));
        }
        let id = self.channels.len() as u32;
        self.actors[from.0.index()].ports[from.1 as usize].channel = Some(id);
        self.actors[to.0.index()].ports[to.1 as usize].channel = Some(id);
        self.channels.push(ChannelDecl {
            from,
            to,
            capacity,
            scheme,
        });
        Ok(())
    }

    /// The finished graph. Unconnected ports are allowed (sending on one is an
    /// error value; the firing rule ignores them).
    pub fn build(self) -> ActorGraph {
        let default = self.scheme;
        ActorGraph {
            actors: self.actors,
            channels: self
                .channels
                .into_iter()
                .map(|c| ChannelDecl {
                    scheme: Some(c.scheme.unwrap_or(default)),
                    ..c
                })
                .collect(),
        }
    }
}

/// A graph of actors joined by bounded channels: built collectively with
/// [`ActorGraph::builder`], placed over the world's locations with
/// [`partition`](ActorGraph::partition), run with [`run`](ActorGraph::run).
pub struct ActorGraph {
    pub(crate) actors: Vec<ActorDecl>,
    pub(crate) channels: Vec<ChannelDecl>,
}

impl fmt::Debug for ActorGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActorGraph")
            .field("actors", &self.actors.len())
            .field("channels", &self.channels.len())
            .finish()
    }
}

impl ActorGraph {
    /// A builder for a new graph.
    pub fn builder() -> GraphBuilder {
        GraphBuilder::default()
    }

    /// How many actors the graph has.
    pub fn actors(&self) -> usize {
        self.actors.len()
    }

    /// How many channels the graph has.
    pub fn channels(&self) -> usize {
        self.channels.len()
    }

    /// The name of actor `id`.
    pub fn name(&self, id: ActorId) -> &str {
        &self.actors[id.index()].name
    }

    /// The channels as (producer, consumer) actor pairs, in connection order.
    pub fn edges(&self) -> impl Iterator<Item = (ActorId, ActorId)> + '_ {
        self.channels.iter().map(|c| (c.from.0, c.to.0))
    }

    /// A digest of the structure (names, port types, channels), equal on
    /// ranks that built the same graph.
    pub(crate) fn digest(&self, placement: &[u32]) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for a in &self.actors {
            a.name.hash(&mut h);
            a.firing.hash(&mut h);
            for p in &a.ports {
                p.name.hash(&mut h);
                p.dir.hash(&mut h);
                p.ty_name.hash(&mut h);
            }
        }
        for c in &self.channels {
            (
                c.from.0 .0,
                c.from.1,
                c.to.0 .0,
                c.to.1,
                c.capacity,
                c.scheme,
            )
                .hash(&mut h);
        }
        placement.hash(&mut h);
        h.finish()
    }
}
