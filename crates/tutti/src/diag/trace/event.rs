//! One recorded event: six machine words (48 bytes), no allocation, names as
//! `'static` strings or functions returning them (type names), formatted only
//! when written out.
//!
//! The recording path passes an event as six scalars (in registers, stored
//! word by word into its slot): building it as one aggregate made the
//! compiler copy it through the stack, and reading back 16 bytes written as
//! two 8-byte halves stalls the processor (a failed store-to-load forward).

/// What an [`Event`] records, with its names.
#[derive(Clone, Copy, Debug)]
pub(crate) enum What {
    /// One poll of a spawned task: the future's type.
    Task(&'static str),
    /// One poll of a task given a name at spawn: that name (written as it is).
    NamedTask(&'static str),
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
    /// A message handled inside the current slice: the flow `id` ends (a turn
    /// that shares its slice with the turns before it, `chain.rs`).
    FlowIn,
    /// A world message sent from location `dur >> 32` to `dur & 0xffff_ffff`,
    /// the `id`-th on that pair: a flow starts.
    WorldOut,
    /// A world message received: the flow of [`What::WorldOut`] with the same
    /// ids ends inside the current slice.
    WorldIn,
}

// The kinds, as stored in `Event::kind`.
const TASK: u64 = 0;
const BLOCK_ON: u64 = 1;
const TURN: u64 = 2;
const METHOD: u64 = 3;
const ACT: u64 = 4;
const FLOW_OUT: u64 = 5;
const WORLD_OUT: u64 = 6;
const WORLD_IN: u64 = 7;
const NAMED_TASK: u64 = 8;
const FLOW_IN: u64 = 9;

/// The bits of `Event::kind` that hold the kind; above them, a slice of
/// turns keeps how many turns it holds (`Event::turns`).
const KIND: u64 = 0xff;
const TURNS_SHIFT: u32 = 32;

impl What {
    /// The kind and two words naming it: a string's address and length, or
    /// the two functions' addresses.
    #[inline(always)]
    pub(crate) fn pack(self) -> (u64, usize, usize) {
        match self {
            What::Task(s) => (TASK, s.as_ptr() as usize, s.len()),
            What::NamedTask(s) => (NAMED_TASK, s.as_ptr() as usize, s.len()),
            What::BlockOn(s) => (BLOCK_ON, s.as_ptr() as usize, s.len()),
            What::Turn { actor, message } => (TURN, actor as usize, message as usize),
            What::Method(s) => (METHOD, s.as_ptr() as usize, s.len()),
            What::Act(s) => (ACT, s.as_ptr() as usize, s.len()),
            What::FlowOut => (FLOW_OUT, 0, 0),
            What::FlowIn => (FLOW_IN, 0, 0),
            What::WorldOut => (WORLD_OUT, 0, 0),
            What::WorldIn => (WORLD_IN, 0, 0),
        }
    }
}

/// A recorded event. Slices are recorded when they end, with their start and
/// duration; flow starts and ends as instants. Built only by [`Event::new`]
/// from a [`What`], so its words always hold what `pack` made of one.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    /// Start, on the trace clock ([`now`](super::now): TSC ticks or nanoseconds).
    pub(crate) ts: u64,
    /// Duration on the trace clock (slices); the location pair of a world flow.
    pub(crate) dur: u64,
    /// The flow id (0: none) or, for [`What::Method`], the run's length.
    pub(crate) id: u64,
    kind: u64,
    a: usize,
    b: usize,
}

impl Event {
    /// An event from its fields, `kind`, `a` and `b` being a [`What::pack`].
    #[inline(always)]
    pub(crate) fn new(ts: u64, dur: u64, id: u64, (kind, a, b): (u64, usize, usize)) -> Event {
        Event {
            ts,
            dur,
            id,
            kind,
            a,
            b,
        }
    }

    /// A [`What::Turn`] slice's packing for `turns` back-to-back turns of the
    /// same actor and message type that share it (1: a single turn).
    #[inline(always)]
    pub(crate) fn turns_pack((kind, a, b): (u64, usize, usize), turns: u32) -> (u64, usize, usize) {
        (kind | (u64::from(turns) << TURNS_SHIFT), a, b)
    }

    /// How many turns a turn slice holds (1 for every other event).
    pub(crate) fn turns(&self) -> u32 {
        ((self.kind >> TURNS_SHIFT) as u32).max(1)
    }

    /// What the event records (unpacked).
    pub(crate) fn what(&self) -> What {
        let text = || {
            // SAFETY: `a` and `b` are the address and length of a `&'static str`
            // (`What::pack`), so they describe valid UTF-8 that lives for ever.
            unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                    self.a as *const u8,
                    self.b,
                ))
            }
        };
        match self.kind & KIND {
            TASK => What::Task(text()),
            NAMED_TASK => What::NamedTask(text()),
            BLOCK_ON => What::BlockOn(text()),
            TURN => {
                // SAFETY: `a` and `b` are the addresses of two
                // `fn() -> &'static str` (`What::pack`).
                let (actor, message) = unsafe {
                    (
                        std::mem::transmute::<usize, fn() -> &'static str>(self.a),
                        std::mem::transmute::<usize, fn() -> &'static str>(self.b),
                    )
                };
                What::Turn { actor, message }
            }
            METHOD => What::Method(text()),
            ACT => What::Act(text()),
            FLOW_OUT => What::FlowOut,
            FLOW_IN => What::FlowIn,
            WORLD_OUT => What::WorldOut,
            _ => What::WorldIn,
        }
    }

    /// Identifies the slice's name for a cache of formatted names.
    pub(crate) fn name_key(&self) -> (u64, usize, usize) {
        (self.kind & KIND, self.a, self.b)
    }
}

const _: () = assert!(std::mem::size_of::<Event>() == 48);

#[cfg(test)]
mod tests {
    use super::{Event, What};

    #[test]
    fn an_event_gives_back_what_it_was_made_of() {
        fn actor() -> &'static str {
            "app::Counter"
        }
        fn message() -> &'static str {
            "app::Hit"
        }
        let cases = [
            What::Task("app::Job"),
            What::NamedTask("acceptor"),
            What::BlockOn("app::Main"),
            What::Turn { actor, message },
            What::Method("app::Add"),
            What::Act("left"),
            What::FlowOut,
            What::FlowIn,
            What::WorldOut,
            What::WorldIn,
        ];
        for w in cases {
            let e = Event::new(1, 2, 3, w.pack());
            let back = e.what();
            assert_eq!(back.pack(), w.pack());
            assert_eq!(format!("{back:?}"), format!("{w:?}"));
            if let What::Turn { actor, message } = back {
                assert_eq!((actor(), message()), ("app::Counter", "app::Hit"));
            }
            assert_eq!(e.turns(), 1);
        }
        let turn = What::Turn { actor, message };
        let e = Event::new(1, 2, 3, Event::turns_pack(turn.pack(), 40));
        assert_eq!(e.turns(), 40);
        assert_eq!(e.name_key(), Event::new(1, 2, 3, turn.pack()).name_key());
        assert!(matches!(e.what(), What::Turn { .. }));
    }
}
