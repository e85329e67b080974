//! Loom models of the task state machine (`state.rs`, `raw.rs`, `join.rs`).
//!
//! Tasks here are made without a runtime (id 0): a wake-up queues their job in
//! `loom_queue`, from which the model runs it. Each model checks that the future is
//! polled and dropped as often as it should be, that the output reaches the handle (or is
//! dropped) exactly once, that the allocation is freed exactly once, and that nobody
//! sleeps through the end of a task.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use super::join::{JoinHandle, JoinWord, Outcome};
use super::raw::{allocate, RawTask};
use super::state::State;
use super::{loom_queue, JoinError};
use crate::loom::{thread, Arc, AtomicBool, AtomicUsize, Mutex, Ordering};

/// Counts drops of itself.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A future that parks once, leaving its waker in `slot`, then returns `Tracked`.
struct ParkOnce {
    slot: Arc<Mutex<Option<Waker>>>,
    parked: bool,
    /// Dropped with the future.
    _life: Tracked,
    output: Option<Tracked>,
}

impl Future for ParkOnce {
    type Output = Tracked;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Tracked> {
        if !self.parked {
            self.parked = true;
            *self.slot.lock().unwrap() = Some(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(self.output.take().expect("polled after completion"))
    }
}

struct Counts {
    futures: Arc<AtomicUsize>,
    outputs: Arc<AtomicUsize>,
}

fn park_once(slot: &Arc<Mutex<Option<Waker>>>) -> (ParkOnce, Counts) {
    let counts = Counts {
        futures: Arc::new(AtomicUsize::new(0)),
        outputs: Arc::new(AtomicUsize::new(0)),
    };
    let f = ParkOnce {
        slot: slot.clone(),
        parked: false,
        _life: Tracked(counts.futures.clone()),
        output: Some(Tracked(counts.outputs.clone())),
    };
    (f, counts)
}

/// A new task without a runtime; it starts with its first job, run by the model.
fn task_of<F: Future + Send + 'static>(f: F) -> (RawTask, JoinHandle<F::Output>) {
    let task = allocate(
        f,
        (),
        State::new(0, 0, false, crate::runtime::Priority::Normal),
    );
    (task, JoinHandle::new(task))
}

/// Runs queued jobs until none is left.
fn run_queued() {
    loop {
        let jobs = loom_queue::take();
        if jobs.is_empty() {
            return;
        }
        for job in jobs {
            // SAFETY: each queued job is taken once.
            unsafe { job.run() };
        }
    }
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: StdArc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

fn flag_waker() -> (StdArc<Flag>, Waker) {
    let flag = StdArc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    (flag, waker)
}

/// A wake-up racing the first poll: the task is polled exactly twice, the handle gets
/// the output, and everything is freed once.
#[test]
fn wake_racing_the_poll_runs_the_task_again() {
    loom::model(|| {
        let slot = Arc::new(Mutex::new(None::<Waker>));
        let (f, counts) = park_once(&slot);
        let (task, mut handle) = task_of(f);
        let waker_thread = {
            let slot = slot.clone();
            thread::spawn(move || {
                if let Some(w) = slot.lock().unwrap().take() {
                    w.wake();
                }
            })
        };
        // SAFETY: the first job is the model's.
        unsafe { task.run() };
        waker_thread.join().unwrap();
        if let Some(w) = slot.lock().unwrap().take() {
            w.wake(); // the other thread looked before the waker was stored
        }
        run_queued();
        let (_, waker) = flag_waker();
        match handle.poll_result(&mut Context::from_waker(&waker)) {
            Poll::Ready(Ok(out)) => drop(out),
            other => panic!("expected the output, got {:?}", other.map(|r| r.is_ok())),
        }
        assert_eq!(counts.futures.load(Ordering::Relaxed), 1);
        assert_eq!(counts.outputs.load(Ordering::Relaxed), 1);
        drop(handle);
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
    });
}

/// The handle is dropped while the task completes: the output is dropped exactly once,
/// by whichever side claims it.
#[test]
fn detach_racing_completion_drops_the_output_once() {
    loom::model(|| {
        let outputs = Arc::new(AtomicUsize::new(0));
        let out = Tracked(outputs.clone());
        let (task, handle) = task_of(async move { out });
        let detacher = thread::spawn(move || drop(handle));
        // SAFETY: the first job is the model's.
        unsafe { task.run() };
        detacher.join().unwrap();
        assert_eq!(outputs.load(Ordering::Relaxed), 1);
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
    });
}

/// An abort races a wake-up of a parked task: the future is dropped exactly once, never
/// completed, and the task is freed once the waker is gone.
#[test]
fn abort_racing_a_wake_drops_the_future_once() {
    loom::model(|| {
        let slot = Arc::new(Mutex::new(None::<Waker>));
        let (f, counts) = park_once(&slot);
        let (task, handle) = task_of(f);
        // SAFETY: the first job is the model's.
        unsafe { task.run() };
        let waker = slot.lock().unwrap().take().expect("parked");
        let aborter = thread::spawn(move || handle.abort());
        waker.wake();
        aborter.join().unwrap();
        run_queued();
        assert_eq!(counts.futures.load(Ordering::Relaxed), 1);
        // The output was never produced: only the unused copy inside the future went.
        assert_eq!(counts.outputs.load(Ordering::Relaxed), 1);
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
    });
}

/// An abort races the poll that would complete the task: either the poll completes it
/// (and the output, unclaimed, is dropped) or the abort closes it and the job drops the
/// future; the future is dropped once either way.
#[test]
fn abort_racing_a_run_settles_once() {
    loom::model(|| {
        let slot = Arc::new(Mutex::new(None::<Waker>));
        let (f, counts) = park_once(&slot);
        let (task, handle) = task_of(f);
        // SAFETY: the first job is the model's.
        unsafe { task.run() };
        slot.lock().unwrap().take().expect("parked").wake();
        let runner = thread::spawn(run_queued);
        handle.abort();
        runner.join().unwrap();
        run_queued();
        assert_eq!(counts.futures.load(Ordering::Relaxed), 1);
        assert_eq!(counts.outputs.load(Ordering::Relaxed), 1);
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
    });
}

/// The last waker of a detached parked task goes away on another thread while the model
/// would run jobs: nobody can wake the task any more, so its future is dropped (by a
/// closing job) and the task freed.
#[test]
fn last_waker_of_a_detached_task_closes_it() {
    loom::model(|| {
        let slot = Arc::new(Mutex::new(None::<Waker>));
        let (f, counts) = park_once(&slot);
        let (task, handle) = task_of(f);
        // SAFETY: the first job is the model's.
        unsafe { task.run() };
        let waker = slot.lock().unwrap().take().expect("parked");
        let dropper = thread::spawn(move || drop(waker));
        drop(handle);
        dropper.join().unwrap();
        run_queued();
        assert_eq!(counts.futures.load(Ordering::Relaxed), 1);
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
    });
}

/// A handle awaited from another task (stored as a tagged task pointer in the join word)
/// while the awaited task completes: the awaiting task is woken and gets the value.
#[test]
fn a_task_awaiting_a_handle_is_woken_by_its_completion() {
    loom::model(|| {
        let slot = Arc::new(Mutex::new(None::<Waker>));
        let (f, counts) = park_once(&slot);
        let (inner, inner_handle) = task_of(f);
        // SAFETY: the first job is the model's.
        unsafe { inner.run() };
        let got = Arc::new(AtomicBool::new(false));
        let (outer, outer_handle) = {
            let got = got.clone();
            task_of(async move {
                drop(inner_handle.await);
                got.store(true, Ordering::Relaxed);
            })
        };
        let waker = slot.lock().unwrap().take().expect("parked");
        let completer = thread::spawn(move || {
            waker.wake();
            run_queued();
        });
        // SAFETY: the outer task's first job is the model's.
        unsafe { outer.run() };
        completer.join().unwrap();
        run_queued();
        assert!(
            got.load(Ordering::Relaxed),
            "the awaiting task slept through the end"
        );
        assert_eq!(counts.outputs.load(Ordering::Relaxed), 1);
        drop(outer_handle);
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
    });
}

/// A plain waker polling a handle while the task is cancelled: it is woken, and the
/// handle then reports `Cancelled`.
#[test]
fn a_handle_polled_during_cancellation_is_woken() {
    loom::model(|| {
        let slot = Arc::new(Mutex::new(None::<Waker>));
        let (f, _counts) = park_once(&slot);
        let (task, mut handle) = task_of(f);
        // SAFETY: the first job is the model's.
        unsafe { task.run() };
        // Cancel by discarding a job, as a shutdown does: make one with a wake-up first.
        let waker = slot.lock().unwrap().take().expect("parked");
        waker.wake();
        let job = loom_queue::take().pop().expect("woken");
        // SAFETY: the job is ours.
        let canceller = thread::spawn(move || unsafe { job.discard() });
        let (flag, w) = flag_waker();
        let first = handle.poll_result(&mut Context::from_waker(&w));
        canceller.join().unwrap();
        let done = match first {
            Poll::Ready(r) => r,
            Poll::Pending => {
                assert!(flag.0.load(Ordering::Acquire), "lost wake-up");
                match handle.poll_result(&mut Context::from_waker(&w)) {
                    Poll::Ready(r) => r,
                    Poll::Pending => panic!("pending after the end"),
                }
            }
        };
        assert!(matches!(done, Err(JoinError::Cancelled)));
        drop(handle);
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
    });
}

/// A future that, on its first poll, clones its waker `clones` times into a shared list
/// and parks (or, with `ready`, returns at once, leaving the clones behind).
struct CloneWakers {
    wakers: Arc<Mutex<Vec<Waker>>>,
    clones: usize,
    ready: bool,
    polls: usize,
}

impl Future for CloneWakers {
    type Output = usize;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        self.polls += 1;
        if self.polls > 1 || self.ready {
            let mut wakers = self.wakers.lock().unwrap();
            for _ in 0..self.clones {
                wakers.push(cx.waker().clone());
            }
            return Poll::Ready(self.polls);
        }
        let mut wakers = self.wakers.lock().unwrap();
        for _ in 0..self.clones {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

fn clone_wakers(clones: usize, ready: bool) -> (CloneWakers, Arc<Mutex<Vec<Waker>>>) {
    let wakers = Arc::new(Mutex::new(Vec::new()));
    let f = CloneWakers {
        wakers: wakers.clone(),
        clones,
        ready,
        polls: 0,
    };
    (f, wakers)
}

/// The poll's spare reference (T6): a poll that clones its waker once and parks leaves
/// exactly that waker's reference (the spare became it); two clones leave two (the
/// second one counted); none leaves none. The wakers then wake the task from another
/// thread while the model drops the handle: it runs again, and everything is freed once.
#[test]
fn a_parked_poll_leaves_one_reference_per_waker() {
    for clones in 0..3 {
        loom::model(move || {
            let (f, wakers) = clone_wakers(clones, false);
            let (task, handle) = task_of(f);
            // SAFETY: the first job is the model's.
            unsafe { task.run() };
            assert_eq!(task.state().refs(), clones as u64, "{:?}", task.state());
            let taken: Vec<Waker> = std::mem::take(&mut *wakers.lock().unwrap());
            let waker_thread = thread::spawn(move || {
                for w in taken {
                    w.wake();
                }
            });
            drop(handle);
            waker_thread.join().unwrap();
            run_queued();
            // The second poll's clones keep the completed task allocated.
            drop(std::mem::take(&mut *wakers.lock().unwrap()));
            assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
        });
    }
}

/// A poll that takes the spare and completes at once: the waker it left behind holds the
/// spare, and dropping it on another thread while the handle takes the output frees the
/// task once. A poll that takes no waker and parks with its handle dropped meanwhile is
/// unreachable: its future is dropped by a closing job, never polled again.
#[test]
fn the_spare_outlives_a_completed_poll_and_is_given_back_by_a_parked_one() {
    loom::model(|| {
        let (f, wakers) = clone_wakers(1, true);
        let (task, mut handle) = task_of(f);
        // SAFETY: the first job is the model's.
        unsafe { task.run() };
        let taken: Vec<Waker> = std::mem::take(&mut *wakers.lock().unwrap());
        assert_eq!(taken.len(), 1);
        let dropper = thread::spawn(move || drop(taken));
        let (_, w) = flag_waker();
        match handle.poll_result(&mut Context::from_waker(&w)) {
            Poll::Ready(Ok(polls)) => assert_eq!(polls, 1),
            _ => panic!("the task completed in its first poll"),
        }
        drop(handle);
        dropper.join().unwrap();
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");

        let drops = Arc::new(AtomicUsize::new(0));
        let life = Tracked(drops.clone());
        let (task, handle) = task_of(async move {
            let _life = life;
            std::future::poll_fn(|_| Poll::<()>::Pending).await;
        });
        let detacher = thread::spawn(move || drop(handle));
        // SAFETY: the first job is the model's.
        unsafe { task.run() };
        detacher.join().unwrap();
        run_queued();
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        assert_eq!(loom_queue::tasks_allocated(), 0, "a task was not freed");
    });
}

/// A callback registered concurrently with the end runs exactly once.
#[test]
fn callback_runs_exactly_once() {
    loom::model(|| {
        let word = Arc::new(JoinWord::new());
        let ran = Arc::new(AtomicUsize::new(0));
        let t = {
            let word = word.clone();
            thread::spawn(move || word.finish(Outcome::Completed))
        };
        let r = ran.clone();
        word.on_finish(Box::new(move |o| {
            assert_eq!(o, Outcome::Completed);
            r.fetch_add(1, Ordering::Relaxed);
        }));
        t.join().unwrap();
        assert_eq!(ran.load(Ordering::Relaxed), 1);
    });
}
