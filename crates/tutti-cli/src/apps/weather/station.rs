//! What every version of the weather service shares (threads, processes):
//! the station's main loop over a [`Post`] that reaches its subscribers, what
//! a station and a client report ([`StationSummary`], [`ClientTally`]) and how
//! a client's readings are checked, when clients join, the mock temperature,
//! and the injected crash.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tutti::actor::{Actor, Context, StopReason};
use tutti::msg::{Handler, Message};

/// The mock temperature of a station's reading `seq`.
pub(super) fn temperature(station: u32, seq: u64) -> f32 {
    15.0 + (station % 10) as f32 + ((seq * 7 + u64::from(station)) % 13) as f32 * 0.5
}

/// Starts a station's main loop (told by the station to itself).
pub(super) struct Run;
impl Message for Run {
    type Reply = ();
}

/// Ends a station's main loop; the answer says what it did.
pub(super) struct Finish<P>(std::marker::PhantomData<fn() -> P>);
impl<P: Post> Message for Finish<P> {
    type Reply = StationSummary<P::Key, P::Dropped>;
}

impl<P> Finish<P> {
    pub(super) fn new() -> Self {
        Finish(std::marker::PhantomData)
    }
}

/// What a station did.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct StationSummary<K, D> {
    /// Readings broadcast (sequence numbers `0..broadcasts`).
    pub(super) broadcasts: u64,
    /// Subscribers at the end.
    pub(super) subscribers: Vec<K>,
    /// Subscribers dropped after their down notice (and what the notice said).
    pub(super) dropped: Vec<D>,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct ClientTally {
    /// Sequence number of the first reading due to it (the subscription's answer).
    pub(super) first: Option<u64>,
    /// Readings received.
    pub(super) received: u64,
    /// Sequence number of the last one.
    pub(super) last: Option<u64>,
    /// Readings that were not the expected next one (lost or out of order).
    pub(super) gaps: u64,
    /// Readings with a wrong station or temperature.
    pub(super) corrupt: u64,
}

impl ClientTally {
    /// What is wrong with a live client's readings, given that its station
    /// broadcast `0..broadcasts`: every reading from its subscription on,
    /// in order, intact.
    pub(super) fn check(&self, c: usize, broadcasts: u64) -> Vec<String> {
        let Some(first) = self.first else {
            return vec![format!("client {c} never subscribed")];
        };
        let mut problems = Vec::new();
        let due = broadcasts.saturating_sub(first);
        if self.gaps > 0 || self.corrupt > 0 || self.received != due {
            problems.push(format!(
                "client {c}: {} of {due} readings, {} gaps, {} corrupt",
                self.received, self.gaps, self.corrupt
            ));
        }
        if due > 0 && self.last != Some(broadcasts - 1) {
            problems.push(format!("client {c} missed the last reading"));
        }
        problems
    }

    /// Counts reading `seq` of `station` with temperature `celsius`.
    pub(super) fn count(&mut self, station: u32, seq: u64, celsius: f32, mine: u32) {
        if station != mine || celsius != temperature(station, seq) {
            self.corrupt += 1;
        }
        if self.last.map_or(self.first, |l| Some(l + 1)) != Some(seq) {
            self.gaps += 1;
        }
        self.received += 1;
        self.last = Some(seq);
    }
}

/// When client `c` of `clients` joins: half of them at once, the others over
/// the first half of the run.
pub(super) fn join_at(c: usize, clients: usize, seconds: Duration) -> Duration {
    let early = clients.div_ceil(2);
    if c < early {
        Duration::ZERO
    } else {
        seconds.mul_f64(0.5 * (c - early) as f64 / (clients - early) as f64)
    }
}

/// How one version of the station (threads, processes) reaches its subscribers.
pub(super) trait Post: Send + 'static {
    /// Names a subscriber in the summary.
    type Key: Clone + Send + 'static;
    /// What the station holds of a subscriber to send to it.
    type Sub: Send + 'static;
    /// What the summary keeps of a dropped subscriber.
    type Dropped: Clone + Send + 'static;
    /// Sends reading `seq` of station `index` to every one of `subs` (one that
    /// is gone refuses; its down notice removes it).
    fn post(&mut self, index: u32, seq: u64, subs: &[(Self::Key, Self::Sub)]);
}

/// A weather station: broadcasts a reading every `interval` to its
/// subscribers until `Finish`.
pub(super) struct Station<P: Post> {
    pub(super) index: u32,
    pub(super) interval: Duration,
    pub(super) seq: u64,
    pub(super) subscribers: Vec<(P::Key, P::Sub)>,
    pub(super) dropped: Vec<P::Dropped>,
    pub(super) finishing: bool,
    pub(super) stops: Arc<AtomicUsize>,
    pub(super) post: P,
}

impl<P: Post> Station<P> {
    pub(super) fn new(index: u32, interval: Duration, stops: Arc<AtomicUsize>, post: P) -> Self {
        Station {
            index,
            interval,
            seq: 0,
            subscribers: Vec::new(),
            dropped: Vec::new(),
            finishing: false,
            stops,
            post,
        }
    }
}

impl<P: Post> Actor for Station<P> {
    fn started(&mut self, ctx: &mut Context<Self>) {
        // The main loop is one long handler; start it.
        let _ = ctx.addr().tell(Run);
    }
    fn stopped(&mut self, _: &StopReason) {
        self.stops.fetch_add(1, Ordering::SeqCst);
    }
}

impl<P: Post> Handler<Run> for Station<P> {
    /// Serve whatever waits (`has_messages`/`try_next`), then broadcast
    /// the next reading and sleep the interval, until `Finish`.
    async fn handle(&mut self, _: Run, ctx: &mut Context<Self>) {
        loop {
            while ctx.has_messages() {
                let Some(m) = ctx.try_next() else { break };
                m.handle(self, ctx).await;
            }
            if self.finishing {
                return;
            }
            self.post.post(self.index, self.seq, &self.subscribers);
            self.seq += 1;
            tutti::sleep(self.interval).await;
        }
    }
}

impl<P: Post> Handler<Finish<P>> for Station<P> {
    async fn handle(
        &mut self,
        _: Finish<P>,
        _: &mut Context<Self>,
    ) -> StationSummary<P::Key, P::Dropped> {
        self.finishing = true;
        StationSummary {
            broadcasts: self.seq,
            subscribers: self.subscribers.iter().map(|(k, _)| k.clone()).collect(),
            dropped: self.dropped.clone(),
        }
    }
}

/// The name station `i` registers.
pub(super) fn station_name(i: u32) -> String {
    format!("weather/station-{i}")
}

/// The injected panic's message.
pub(super) const CRASH: &str = "injected crash of a weather client";

/// Reports the injected panic in one line instead of the default panic
/// message (other panics are reported as usual) until the guard is dropped.
pub(super) fn quiet_crash() -> impl Drop {
    struct Restore<F: FnMut()>(F);
    impl<F: FnMut()> Drop for Restore<F> {
        fn drop(&mut self) {
            (self.0)();
        }
    }
    fn shared<T: ?Sized>(b: Box<T>) -> Arc<T> {
        Arc::from(b)
    }
    let default = shared(std::panic::take_hook());
    let d = default.clone();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() == Some(&CRASH) {
            eprintln!("tutti weather: a client crashed as planned ({CRASH})");
        } else {
            d(info);
        }
    }));
    Restore(move || {
        let d = default.clone();
        std::panic::set_hook(Box::new(move |info| d(info)));
    })
}
