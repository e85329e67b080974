//! One recorded event: fixed size (48 bytes), no allocation, names as
//! `'static` strings or functions returning them (type names), formatted only
//! when written out.

/// What an [`Event`] records, with its names.
#[derive(Clone, Copy, Debug)]
pub(crate) enum What {
    /// One poll of a spawned task: the future's type.
    Task(&'static str),
    /// One poll of a `block_on` future on its thread: the future's type.
    BlockOn(&'static str),
    /// One actor turn on one message: the actor's type and the message's
    /// (functions returning them, so both fit in one record); the event's `id`
    /// is the envelope's flow, ended here.
    Turn {
        actor: fn() -> &'static str,
        message: fn() -> &'static str,
    },
    /// One run of RMI requests on a location: the message (method) type; the
    /// event's `id` is how many requests the run held.
    Method(&'static str),
    /// One graph `act()` call: the actor's name.
    Act(&'static str),
    /// A message sent from inside the current slice: a flow starts (`id`).
    FlowOut,
    /// A world message sent from location `dur >> 32` to `dur & 0xffff_ffff`,
    /// the `id`-th on that pair: a flow starts.
    WorldOut,
    /// A world message received: the flow of [`What::WorldOut`] with the same
    /// ids ends inside the current slice.
    WorldIn,
}

impl What {
    /// Identifies the slice's name for a cache of formatted names: the kind
    /// and the addresses of the strings (or functions) it names.
    pub(super) fn key(&self) -> (u8, usize, usize) {
        match *self {
            What::Task(s) => (0, s.as_ptr() as usize, s.len()),
            What::BlockOn(s) => (1, s.as_ptr() as usize, s.len()),
            What::Turn { actor, message } => (2, actor as usize, message as usize),
            What::Method(s) => (3, s.as_ptr() as usize, s.len()),
            What::Act(s) => (4, s.as_ptr() as usize, s.len()),
            What::FlowOut => (5, 0, 0),
            What::WorldOut => (6, 0, 0),
            What::WorldIn => (7, 0, 0),
        }
    }
}

/// A recorded event. Slices are recorded when they end, with their start and
/// duration; flow starts and ends as instants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    /// Start, on the trace clock ([`now`](super::now): TSC ticks or nanoseconds).
    pub(crate) ts: u64,
    /// Duration on the trace clock (slices); the location pair of a world flow.
    pub(crate) dur: u64,
    /// The flow id (0: none) or, for [`What::Method`], the run's length.
    pub(crate) id: u64,
    pub(crate) what: What,
}

#[cfg(test)]
const _: () = assert!(std::mem::size_of::<Event>() == 48);
