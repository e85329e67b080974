//! One recorded event: fixed size, no allocation, names as `'static` strings
//! (type names), formatted only when written out.

/// What an [`Event`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// One poll of a spawned task: `a` is the future's type.
    Task,
    /// One poll of a `block_on` future on its thread: `a` is the future's type.
    BlockOn,
    /// One actor turn on one message: `a` the actor, `b` the message type; `id`
    /// the envelope's flow, ended here.
    Turn,
    /// One run of RMI requests on a location: `a` the message (method) type,
    /// `id` how many requests the run held.
    Method,
    /// One graph `act()` call: `a` the actor's name.
    Act,
    /// A message sent from inside the current slice: a flow starts (`id`).
    FlowOut,
    /// A world message sent from location `id2 >> 32` to `id2 & 0xffff_ffff`,
    /// the `id`-th on that pair: a flow starts.
    WorldOut,
    /// A world message received: the flow of [`Kind::WorldOut`] with the same
    /// ids ends inside the current slice.
    WorldIn,
}

/// A recorded event (72 bytes). Slices are recorded when they end, with their
/// start and duration; flow ends and starts as instants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    /// Start, on the trace clock ([`now`](super::now): TSC ticks or nanoseconds).
    pub(crate) ts: u64,
    /// Duration on the trace clock (slices).
    pub(crate) dur: u64,
    /// The flow id (0: none) or, for [`Kind::Method`], the run's length.
    pub(crate) id: u64,
    /// The location pair of a world flow.
    pub(crate) id2: u64,
    pub(crate) kind: Kind,
    pub(crate) a: &'static str,
    pub(crate) b: &'static str,
}
