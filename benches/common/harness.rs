//! What every criterion bench here shares: the quick mode, and per-event accounting.
//!
//! Criterion reports time per iteration; an iteration here is a batch of events, so each
//! bench also keeps its own tally of timed events and timed nanoseconds and prints ns/event,
//! each workload's figure against its target, in one summary table at the end.
#![allow(dead_code)]

use criterion::Criterion;
use std::cell::RefCell;
use std::time::{Duration, Instant};

/// Whether `cargo bench` started this binary. `cargo test --all-targets` (`make test`) runs
/// bench targets too, unoptimised and without `--bench`; there the setup alone (million-page
/// views, full model explorations) would take minutes, so the benches only say they skipped.
pub fn benching(what: &str) -> bool {
    let yes = std::env::args().any(|a| a == "--bench");
    if !yes {
        println!("{what}: skipped outside `cargo bench` (no --bench argument)");
    }
    yes
}

/// `LOADER_BENCH_QUICK=1`: CI's mode, every bench once and briefly.
pub fn quick() -> bool {
    std::env::var_os("LOADER_BENCH_QUICK").is_some_and(|v| v != "0")
}

/// A criterion bench's `main`, up to its verdicts: when `cargo bench` started this binary
/// (else it says it skipped `what`), runs `bench`, then prints criterion's summary and the
/// ns/event table under `title`. Returns whether it ran.
pub fn run_criterion(what: &str, title: &str, bench: impl FnOnce(&mut Criterion)) -> bool {
    if !benching(what) {
        return false;
    }
    let mut c = criterion();
    bench(&mut c);
    c.final_summary();
    print_summary(title);
    true
}

pub fn criterion() -> Criterion {
    let c = Criterion::default();
    let c = if quick() {
        c.warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(600))
            .sample_size(10)
    } else {
        c.warm_up_time(Duration::from_secs(2))
            .measurement_time(Duration::from_secs(5))
            .sample_size(30)
    };
    c.configure_from_args()
}

/// Timed events and nanoseconds per figure, plus a note (the realized mix, sizes).
#[derive(Default)]
pub struct Tally {
    rows: Vec<(String, u64, u128, String)>,
}

thread_local! {
    static TALLY: RefCell<Tally> = RefCell::new(Tally::default());
}

/// Adds timed events to figure `name`.
pub fn record(name: &str, events: u64, elapsed: Duration) {
    TALLY.with(|t| {
        let mut t = t.borrow_mut();
        match t.rows.iter_mut().find(|r| r.0 == name) {
            Some(r) => {
                r.1 += events;
                r.2 += elapsed.as_nanos();
            }
            None => t
                .rows
                .push((name.to_string(), events, elapsed.as_nanos(), String::new())),
        }
    });
}

/// Runs `iters` batches of `batch` events through `run`, timed as one stretch, and adds them to
/// figure `name`: the body of a bench that times a stream batch after batch.
pub fn batches(name: &str, iters: u64, batch: u64, mut run: impl FnMut(u64)) -> Duration {
    let t = Instant::now();
    for _ in 0..iters {
        run(batch);
    }
    let e = t.elapsed();
    record(name, iters * batch, e);
    e
}

pub fn note(name: &str, text: String) {
    TALLY.with(|t| {
        let mut t = t.borrow_mut();
        match t.rows.iter_mut().find(|r| r.0 == name) {
            Some(r) => r.3 = text,
            None => t.rows.push((name.to_string(), 0, 0, text)),
        }
    });
}

/// ns/event of a figure, over every timed run (warm-up included).
pub fn ns_per_event(name: &str) -> Option<f64> {
    TALLY.with(|t| {
        t.borrow()
            .rows
            .iter()
            .find(|r| r.0 == name && r.1 > 0)
            .map(|r| r.2 as f64 / r.1 as f64)
    })
}

pub fn print_summary(title: &str) {
    println!("\n== {title}: ns per event (all timed runs) ==");
    TALLY.with(|t| {
        for (name, events, ns, text) in &t.borrow().rows {
            if *events > 0 {
                println!(
                    "{name:<44} {:>10.1} ns/event  ({events} events)  {text}",
                    *ns as f64 / *events as f64
                );
            } else {
                println!("{name:<44} {text}");
            }
        }
    });
}

/// Met or missed, for the summary.
pub fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}
