//! fib with `tutti::join`: `cargo run --release --example fib -- 32 2`.
use std::time::Instant;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = tutti::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(32);
    let workers: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let rt = tutti::Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime");
    for _ in 0..5 {
        let t = Instant::now();
        let v = rt.install(|| fib(n));
        println!("fib({n}) = {v} on {workers} workers in {:?}", t.elapsed());
    }
}
