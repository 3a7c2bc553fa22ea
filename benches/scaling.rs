//! Workload 2: workload 1's stream with the view holding 10, 1,000, 100,000 and
//! 1,000,000 pages, and with 0 and 10,000 stale reads in flight. Reports ns per event.
//!
//! The view is built in setup by finite settles (one request per page, as scrolling builds
//! it), then the stream runs two repairs before anything is timed, so what is measured is the
//! steady state: a view held by the last chain or full read, repaired by a chain of N reads
//! after each burst of invalidations. Each read a repair issues is one event.
//!
//! # "10,000 stale reads in flight"
//!
//! The ledger lets at most one finite request and one chain or full read be in flight
//! (`Ledger::issue_finite` needs `inflight_finite.is_none()`; `schedule` needs
//! `inflight_chain == 0` / `inflight_full == 0`), so at most two reads are ever outstanding
//! and 10,000 stale reads cannot be literally in flight. What the API does allow is 10,000
//! stale requests the ledger still holds: each invalidation that overtakes a chain leaves
//! the replaced chain settled, stale and holding its acquisitions until the repair commits
//! and `Normalize` retires it. So a "10,000 stale" run starts each timed round right after a
//! commit with, untimed, a burst of 10,000 invalidations, each overtaking the newest chain's
//! first step and answered at once (`Stream::stale_burst`).
//! The timed round is then the stream's own next round: its burst, the chain of N reads, the
//! window moves, the superseded read, and the commit, which also retires the 10,000. The
//! "0 stale" run times the same stream's rounds without the extra bursts.
//! A repair needs N reads, so the 10,000 are held for the whole round only at N >= 100,000;
//! at 1,000 pages the round is shorter than the burst, which is why it is not run there.
//!
//! `cargo bench --bench scaling`; `LOADER_BENCH_QUICK=1` for CI's short run.

mod common;

use common::{harness, stream};
use criterion::{Criterion, Throughput};
use std::hint::black_box;
use std::time::{Duration, Instant};

const BATCH: u64 = 1_000;
const STALE: usize = 10_000;

/// `LOADER_BENCH_PAGES=100000,1000000` runs only those sizes (setup is not skipped by a
/// criterion filter, and at a million pages it takes seconds).
fn only(all: Vec<u64>) -> Vec<u64> {
    match std::env::var("LOADER_BENCH_PAGES") {
        Ok(list) => {
            let want: Vec<u64> = list
                .split(',')
                .filter_map(|p| p.trim().parse().ok())
                .collect();
            all.into_iter().filter(|p| want.contains(p)).collect()
        }
        Err(_) => all,
    }
}

fn sizes() -> Vec<u64> {
    only(vec![10, 1_000, 100_000, 1_000_000])
}

fn stale_sizes() -> Vec<u64> {
    only(if harness::quick() {
        vec![100_000]
    } else {
        vec![100_000, 1_000_000]
    })
}

fn continuous(c: &mut Criterion) {
    let mut g = c.benchmark_group("scaling");
    g.throughput(Throughput::Elements(BATCH));
    for pages in sizes() {
        let name = format!("view {pages:>9} pages, 0 stale");
        // Built before criterion sees the bench: setup inside the timed closure confuses
        // its sampling at a million pages (seconds of setup, microseconds of samples).
        let t = Instant::now();
        let mut s = stream::Stream::new(pages);
        let setup = t.elapsed().as_secs_f64();
        g.bench_function(format!("pages/{pages}"), |b| {
            b.iter_custom(|iters| harness::batches(&name, iters, BATCH, |n| s.run(n)))
        });
        black_box(s.released_xor);
        harness::note(
            &name,
            format!(
                "mix: {}; {} repairs timed; setup {setup:.1}s",
                s.mix_line(),
                s.commits.saturating_sub(2)
            ),
        );
    }
    g.finish();
}

/// Whole rounds (from one commit to the next), with and without 10,000 stale requests held.
/// The stream runs on from round to round; before each "10,000 stale" round, outside the
/// timing, a burst of 10,000 overtaking invalidations is answered (module comment). Nothing
/// is cloned: a clone would shrink the loader's buffers and bill the next push for a copy.
fn rounds(c: &mut Criterion) {
    let mut g = c.benchmark_group("stale");
    g.sample_size(10);
    if !harness::quick() {
        g.measurement_time(Duration::from_secs(10));
    }
    for pages in stale_sizes() {
        for stale in [0, STALE] {
            let name = round_name(pages, stale);
            let mut s = stream::Stream::new(pages);
            s.reset_counts();
            let mut held = 0;
            g.bench_function(format!("pages/{pages}/stale/{stale}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        if stale > 0 {
                            s.stale_burst(stale);
                        }
                        held = held.max(s.live_requests());
                        let t = Instant::now();
                        let n = s.run_round();
                        let e = t.elapsed();
                        harness::record(&name, n, e);
                        total += e;
                    }
                    total
                })
            });
            black_box(s.released_xor);
            harness::note(
                &name,
                format!(
                    "{} rounds of {:.0} events on average; up to {held} live requests at a round's start; mix: {}",
                    s.commits - 2,
                    s.events as f64 / (s.commits - 2).max(1) as f64,
                    s.mix_line()
                ),
            );
        }
    }
    g.finish();
}

fn round_name(pages: u64, stale: usize) -> String {
    format!("view {pages:>9} pages, {stale} stale (round)")
}

fn main() {
    if !harness::run_criterion("workload 2", "workload 2, scaling", |c| {
        continuous(c);
        rounds(c);
    }) {
        return;
    }
    let at = |p: u64| harness::ns_per_event(&format!("view {p:>9} pages, 0 stale"));
    if let (Some(small), Some(big)) = (at(10), at(1_000_000)) {
        println!(
            "target: 10 -> 1,000,000 pages <= 1.5x growth: {} ({:.2}x)",
            harness::verdict(big / small <= 1.5),
            big / small
        );
    }
    for pages in stale_sizes() {
        let none = harness::ns_per_event(&round_name(pages, 0));
        let some = harness::ns_per_event(&round_name(pages, STALE));
        if let (Some(none), Some(some)) = (none, some) {
            println!(
                "target: 10,000 stale <= 1.3x versus none, view {pages} pages: {} ({:.2}x)",
                harness::verdict(some / none <= 1.3),
                some / none
            );
        }
    }
}
