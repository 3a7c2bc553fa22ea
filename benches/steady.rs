//! Workload 1: a steady mixed stream against one `Loader`; the same stream recorded
//! and replayed by a host that only makes the calls (the library's share); and the stream's
//! ledger calls against the bare `Ledger`. Reports ns per event.
//!
//! `cargo bench --bench steady`; `LOADER_BENCH_QUICK=1` for CI's short run.

mod common;

use common::{harness, ledgers, stream};
use criterion::{Criterion, Throughput};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The view of workload 1: 100 pages of 50 items. Large enough that repairs, superseded
/// reads and bursts all occur at the mix the loader allows; small enough to stay in cache.
const STEADY_PAGES: u64 = 100;
/// Events per criterion iteration: long enough to cover several repairs.
const BATCH: u64 = 1_000;
/// Events in the recording the replay row repeats.
const REPLAY: u64 = 100_000;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("steady");
    g.throughput(Throughput::Elements(BATCH));

    let mut s = stream::Stream::new(STEADY_PAGES);
    let name = format!("loader, view {STEADY_PAGES} pages");
    g.bench_function("loader", |b| {
        b.iter_custom(|iters| harness::batches(&name, iters, BATCH, |n| s.run(n)))
    });
    black_box(s.released_xor);
    harness::note(
        &name,
        format!(
            "mix: {}; view {} pages, {} repairs",
            s.mix_line(),
            s.view_pages(),
            s.commits
        ),
    );

    // The same stream recorded, then replayed by a host that only makes the calls: the
    // library's share of the row above. Each iteration replays the whole recording on a
    // fresh loader in the state the recording started from (built outside the timing).
    let calls = stream::recorded(STEADY_PAGES, REPLAY);
    let replayed = format!("loader, view {STEADY_PAGES} pages, replayed calls");
    g.throughput(Throughput::Elements(REPLAY));
    g.bench_function("replay", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut r = stream::Replay::from_start(STEADY_PAGES);
                let t = Instant::now();
                r.run(&calls);
                total += t.elapsed();
                black_box(r.released_xor);
            }
            harness::record(&replayed, iters * REPLAY, total);
            total
        })
    });
    harness::note(
        &replayed,
        format!("{REPLAY} recorded calls of the row above, checked to release the same"),
    );
    g.throughput(Throughput::Elements(BATCH));

    let mut l = ledgers::LStream::new(ledgers::Production::default());
    l.run(10_000);
    l.reset_counts();
    g.bench_function("ledger", |b| {
        b.iter_custom(|iters| {
            harness::batches(
                "ledger alone (workload 1's ledger calls)",
                iters,
                BATCH,
                |n| l.run(n),
            )
        })
    });
    harness::note(
        "ledger alone (workload 1's ledger calls)",
        format!("mix: {}", l.mix_line()),
    );
    g.finish();
}

fn main() {
    if !harness::run_criterion("workload 1", "workload 1, steady", bench) {
        return;
    }
    if let Some(ns) = harness::ns_per_event(&format!("loader, view {STEADY_PAGES} pages")) {
        println!(
            "target: pure Rust steady <= 25 ns/event: {} ({ns:.1} ns/event)",
            harness::verdict(ns <= 25.0)
        );
    }
    let replayed = format!("loader, view {STEADY_PAGES} pages, replayed calls");
    if let Some(ns) = harness::ns_per_event(&replayed) {
        println!(
            "the library alone (replayed calls): {} ({ns:.1} ns/event against 25)",
            harness::verdict(ns <= 25.0)
        );
    }
}
