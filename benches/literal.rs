//! Workload 5: a literal baseline. `ledgers::Literal` follows the TLA+ text as
//! `src/model` transcribes it, scanning every request wherever the text quantifies over
//! them (`Normalize`, `Inflight`, `Supersede`). Both ledgers run the same ledger-level
//! streams; a cross-check first asserts that they emit the same effects for every call.
//!
//! The streams, and why they are shaped so:
//! - workload 1 as the ledger sees it, at its own live count (a few dozen requests);
//! - workload 1 at 10,000 live requests: a view of 10,000 pages read by 10,000 finite
//!   requests (built in setup). Workload 1 repairs every few dozen events and every repair
//!   retires all of them, so the population cannot be held across a steady run; each timed
//!   segment runs workload 1's events from such a view up to, not including, the commit
//!   that retires it, over 32 snapshots with differently seeded arrivals. The commit itself
//!   is timed on its own, per retired request;
//! - workload 2 at 10,000 live requests: the repair of a 10,000-page view as the ledger
//!   sees it. Its chain's 10,000 reads never reach the ledger; what does is the burst of
//!   invalidations queued meanwhile (as many as the loader-level stream of `stream.rs`
//!   queues over one round at this size), each overtaking the newest chain, the window
//!   moves, and the superseded read's failure.
//!
//! `cargo bench --bench literal`; `LOADER_BENCH_QUICK=1` for CI's short run.

mod common;

use common::{harness, ledgers, stream};
use criterion::{measurement::WallTime, BenchmarkGroup, Criterion, Throughput};
use ledgers::{LStream, LedgerLike, Literal, Production};
use std::hint::black_box;
use std::time::{Duration, Instant};

const LIVE: usize = 10_000;
const SNAPSHOTS: u64 = 32;
const BATCH: u64 = 1_000;

fn natural<L: LedgerLike>(g: &mut BenchmarkGroup<'_, WallTime>, who: &str, ledger: L) {
    let name = format!("w1 natural, {who}");
    let mut s = LStream::new(ledger);
    s.run(10_000);
    s.reset_counts();
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function(format!("w1/{who}"), |b| {
        b.iter_custom(|iters| harness::batches(&name, iters, BATCH, |n| s.run(n)))
    });
    harness::note(
        &name,
        format!("mix: {}; {} live at the end", s.mix_line(), s.ledger.live()),
    );
}

/// Times `run` on `count` fresh streams from `fresh`, each made outside the timing.
///
/// A fresh stream must be in the state a running one would be in, spare capacity included:
/// a derived `Clone` of the production `Ledger` shrinks its settled-request buffers, and
/// the first settle would pay for copying them. So the production ledger's streams are
/// rebuilt from scratch (deterministically), and the literal's are cloned with `Literal`'s
/// capacity-keeping clone (rebuilding it costs O(n^2) scans).
fn segments<L: LedgerLike>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    name: &str,
    count: u64,
    fresh: impl Fn(u64) -> LStream<L>,
    run: impl Fn(&mut LStream<L>) -> u64,
) {
    g.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for k in 0..count {
                    let mut s = fresh(k);
                    let t = Instant::now();
                    let n = run(&mut s);
                    let e = t.elapsed();
                    harness::record(name, n, e);
                    total += e;
                    black_box(s.releases);
                }
            }
            total
        })
    });
}

/// A stream with a 10,000-page view, fresh: rebuilt for the production ledger, cloned from
/// `cache` for the literal one.
fn view<L: LedgerLike>(ledger: &L, seed: u64, rebuild: bool, cache: &[LStream<L>]) -> LStream<L> {
    if rebuild {
        ledgers::prepared(ledger.clone(), LIVE, seed)
    } else {
        cache[seed as usize].clone()
    }
}

/// Workload 1 from a 10,000-page view, and the commit that ends each segment.
fn w1_at_live<L: LedgerLike>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    who: &str,
    ledger: L,
    rebuild: bool,
) {
    let views: Vec<_> = (0..SNAPSHOTS)
        .map(|seed| ledgers::prepared(ledger.clone(), LIVE, seed))
        .collect();
    let mut events = 0;
    let mut live = 0;
    let commits: Vec<_> = views
        .iter()
        .map(|v| {
            let mut s = v.clone();
            events += s.run_until_commit();
            live += s.ledger.live();
            s
        })
        .collect();
    let name = format!("w1 at {LIVE} live, {who}");
    harness::note(
        &name,
        format!(
            "{events} events over {SNAPSHOTS} segments; {:.0} live on average before each commit",
            live as f64 / SNAPSHOTS as f64
        ),
    );
    segments(
        g,
        &format!("w1-live/{who}"),
        &name,
        SNAPSHOTS,
        |k| view(&ledger, k, rebuild, &views),
        |s| s.run_until_commit(),
    );
    let retire = format!("w1 at {LIVE} live, {who}: commit, per retired request");
    segments(
        g,
        &format!("w1-live-commit/{who}"),
        &retire,
        SNAPSHOTS,
        |k| {
            if rebuild {
                let mut s = view(&ledger, k, true, &views);
                s.run_until_commit();
                s
            } else {
                commits[k as usize].clone()
            }
        },
        |s| s.commit() as u64,
    );
}

fn w2_at_live<L: LedgerLike>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    who: &str,
    ledger: L,
    rebuild: bool,
    burst: usize,
) {
    let cache = [ledgers::prepared(ledger.clone(), LIVE, 0)];
    let name = format!("w2 at {LIVE} live, {who}");
    segments(
        g,
        &format!("w2-live/{who}"),
        &name,
        1,
        |_| view(&ledger, 0, rebuild, &cache),
        |s| s.repair_burst(burst),
    );
    let mut probe = cache[0].clone();
    let events = probe.repair_burst(burst);
    harness::note(
        &name,
        format!(
            "{events} ledger calls: {burst} overtaking invalidations; {} live at the end",
            probe.ledger.live()
        ),
    );
}

/// The invalidations the loader-level stream queues over one round at a view of `pages`.
fn loader_burst(pages: u64) -> usize {
    let mut s = stream::Stream::new(pages);
    s.reset_counts();
    s.run_round();
    (s.counts[stream::INVAL] as usize).saturating_sub(1)
}

fn short(g: &mut BenchmarkGroup<'_, WallTime>, quick: bool, literal: bool) {
    // The production ledger's segments are microseconds long while each costs a rebuild of a
    // 10,000-request view outside the timing, so criterion's minimum of 55 iterations of 32
    // segments already takes seconds: a short target keeps the wall time sane.
    let secs = match (quick, literal) {
        (true, false) => 0.005,
        (false, false) => 0.02,
        (true, true) => 0.3,
        (false, true) => 3.0,
    };
    g.measurement_time(Duration::from_secs_f64(secs));
    g.warm_up_time(Duration::from_secs_f64(secs / 4.0));
}

fn bench(c: &mut Criterion) {
    let t = Instant::now();
    ledgers::cross_check(0, 0, 200_000);
    ledgers::cross_check(LIVE, 0, 20_000);
    ledgers::cross_check(50, 5, 50_000);
    println!(
        "cross-check: both ledgers emit the same effects on every call ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    let quick = harness::quick();

    let mut g = c.benchmark_group("literal");
    natural(&mut g, "production", Production::default());
    natural(&mut g, "literal", Literal::default());
    g.finish();

    let mut g = c.benchmark_group("literal-live");
    g.sample_size(10);
    short(&mut g, quick, false);
    w1_at_live(&mut g, "production", Production::default(), true);
    short(&mut g, quick, true);
    w1_at_live(&mut g, "literal", Literal::default(), false);

    let burst = loader_burst(LIVE as u64);
    short(&mut g, quick, false);
    w2_at_live(&mut g, "production", Production::default(), true, burst);
    short(&mut g, quick, true);
    w2_at_live(&mut g, "literal", Literal::default(), false, burst);
    g.finish();
}

fn ratio(what: &str, target: Option<f64>) {
    let p = harness::ns_per_event(&format!("{what}, production"));
    let l = harness::ns_per_event(&format!("{what}, literal"));
    if let (Some(p), Some(l)) = (p, l) {
        match target {
            Some(t) => println!(
                "{what}: literal / production = {:.1}x; target >= {t}x: {}",
                l / p,
                harness::verdict(l / p >= t)
            ),
            None => println!("{what}: literal / production = {:.2}x", l / p),
        }
    }
}

fn main() {
    if !harness::run_criterion(
        "workload 5",
        "workload 5, literal baseline (per ledger call)",
        bench,
    ) {
        return;
    }
    println!();
    ratio("w1 natural", None);
    ratio(&format!("w1 at {LIVE} live"), Some(100.0));
    let p = harness::ns_per_event(&format!(
        "w1 at {LIVE} live, production: commit, per retired request"
    ));
    let l = harness::ns_per_event(&format!(
        "w1 at {LIVE} live, literal: commit, per retired request"
    ));
    if let (Some(p), Some(l)) = (p, l) {
        println!(
            "w1 at {LIVE} live, the commit: literal / production = {:.2}x per retired request",
            l / p
        );
    }
    ratio(&format!("w2 at {LIVE} live"), Some(100.0));
}
