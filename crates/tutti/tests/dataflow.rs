//! Dataflow variables on the scheduler, through the public API only: readers suspend
//! instead of blocking their worker, and blocking `get` on a worker keeps it working.

mod watchdog;
use std::sync::Arc;
use std::time::Duration;

use tutti::runtime::timeout;
use tutti::{DataflowVar, Runtime};

fn one_worker() -> Runtime {
    Runtime::builder().workers(1).build().unwrap()
}

#[test]
fn a_reading_task_gives_its_worker_back() {
    let rt = one_worker();
    let v = Arc::new(DataflowVar::new());
    let reader = {
        let v = v.clone();
        rt.spawn(async move {
            // With one worker, the setter can only run while this task is suspended.
            let setter = {
                let v = v.clone();
                tutti::spawn(async move { v.set(11).unwrap() })
            };
            let value = *timeout(Duration::from_secs(3600), v.read()).await.unwrap();
            setter.await;
            value
        })
    };
    assert_eq!(rt.block_on(reader), 11);
}

#[test]
fn blocking_get_on_a_worker_runs_the_setter() {
    let rt = one_worker();
    let v = DataflowVar::new();
    // The single worker runs the first closure, which blocks in `get`; it can only
    // finish because the worker keeps executing other jobs (the second closure).
    let (got, ()) = rt.join(|| *v.get(), || v.set(7).unwrap());
    assert_eq!(got, 7);
}

#[test]
fn a_pipeline_of_tasks() {
    const STAGES: usize = 50;
    let rt = Runtime::builder().workers(2).build().unwrap();
    let vars: Arc<Vec<DataflowVar<u64>>> =
        Arc::new((0..=STAGES).map(|_| DataflowVar::new()).collect());
    // Spawned last stage first, so most stages wait before their input exists.
    let handles: Vec<_> = (0..STAGES)
        .rev()
        .map(|i| {
            let vars = vars.clone();
            rt.spawn(async move {
                let x = *vars[i].read().await;
                vars[i + 1].set(x + 1).unwrap();
            })
        })
        .collect();
    vars[0].set(100).unwrap();
    assert_eq!(*vars[STAGES].get(), 100 + STAGES as u64);
    for h in handles {
        rt.block_on(h);
    }
}

#[test]
fn many_tasks_wait_on_one_variable() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let v = Arc::new(DataflowVar::<String>::new());
    let handles: Vec<_> = (0..100)
        .map(|_| {
            let v = v.clone();
            rt.spawn(async move { v.read().await.len() })
        })
        .collect();
    v.set(String::from("four")).unwrap();
    for h in handles {
        assert_eq!(rt.block_on(h), 4);
    }
}

#[test]
fn a_timed_out_read_in_a_task() {
    let rt = one_worker();
    let v: Arc<DataflowVar<u8>> = Arc::new(DataflowVar::new());
    let r = {
        let v = v.clone();
        rt.block_on(
            rt.spawn(async move { timeout(Duration::from_millis(5), v.read()).await.is_err() }),
        )
    };
    assert!(r);
    assert_eq!(v.get_timeout(Duration::from_millis(1)), None);
    v.set(1).unwrap();
    assert_eq!(v.get_timeout(Duration::from_millis(1)), Some(&1));
}
