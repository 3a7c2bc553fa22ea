//! Long moves where real hosts live: failures spread over a long traversal, and a source
//! that keeps changing far from what is read. Each run drives the sim host the way the
//! header's deadline loop does (answer what is in flight, tick to the next deadline, never
//! call `retry`), checks every property after every event (`Host::apply`), and compares its
//! reads with the same move done without failures or changes, in the same test.

// Uses the test instruments (`sim`).
#![cfg(feature = "testing")]

#[path = "../benches/common/rng.rs"]
mod rng;

use loader::sim::{encode_cursor, Host, Op, Source};
use loader::Config;
use rng::Rng;

/// What happens between answers.
#[derive(Clone, Copy)]
struct Weather {
    /// Percent of reads that fail.
    fail_percent: u64,
    /// After every answer, append an item at the source's end and report exactly it.
    append: bool,
}

const CALM: Weather = Weather {
    fail_percent: 0,
    append: false,
};

/// Answers oldest first (failing some), ticks to each deadline, never retries explicitly;
/// returns the reads issued. Panics if the loader stops short of quiescence.
fn drive(h: &mut Host, rng: &mut Rng, w: Weather) -> u64 {
    let issued = |h: &Host| h.loader.stats().issued.iter().sum::<u64>();
    let before = issued(h);
    for _ in 0..1_000_000 {
        if h.pending() > 0 {
            if rng.percent(w.fail_percent) {
                h.apply(Op::Fail { index: 0 }).unwrap();
            } else {
                h.apply(Op::Deliver {
                    index: 0,
                    fresh: true,
                })
                .unwrap();
                if w.append {
                    let key = h.source.items().last().map_or(0, |i| i.0) + 1;
                    let at = encode_cursor(h.source.insert(key));
                    h.loader
                        .invalidate_range(&at, Some(&at), &mut Source::compare)
                        .unwrap();
                    h.collect().unwrap();
                    h.check().unwrap();
                }
            }
        } else if let Some(d) = h.loader.next_deadline() {
            let ms = d.saturating_sub(h.now).clamp(1, u64::from(u16::MAX));
            h.apply(Op::Tick { ms: ms as u16 }).unwrap();
        } else {
            break;
        }
    }
    let l = h.loader.ledger();
    assert!(
        l.is_quiescent()
            && !h.loader.revalidating()
            && l.failure() == loader::ledger::Failure::None,
        "stopped short of quiescence: {:?}, {} automatic retries spent",
        l.snapshot(),
        h.loader.auto_retries_spent()
    );
    h.check_settled().unwrap();
    issued(h) - before
}

fn host(items: usize, config: Config) -> Host {
    Host::new(config, Source::numbered(items))
}

/// A 0 → 50,000 move with 5% of reads failing completes on the automatic retries alone
/// (defaults: 5 in a row), within 1.25× the reads of the same move without failures.
#[test]
fn a_long_move_at_5_percent_failures_needs_no_explicit_retry() {
    let config = Config::default();
    let mut calm = host(50_200, config);
    calm.apply(Op::Window { start: 0, len: 100 }).unwrap();
    drive(&mut calm, &mut Rng(1), CALM);
    calm.loader.set_window(50_000, 100).unwrap();
    calm.collect().unwrap();
    let base = drive(&mut calm, &mut Rng(1), CALM);
    for seed in 1..=4 {
        let mut h = host(50_200, config);
        let mut rng = Rng(seed);
        let w = Weather {
            fail_percent: 5,
            append: false,
        };
        h.apply(Op::Window { start: 0, len: 100 }).unwrap();
        drive(&mut h, &mut rng, w);
        h.loader.set_window(50_000, 100).unwrap();
        h.collect().unwrap();
        let reads = drive(&mut h, &mut rng, w);
        let s = h.loader.stats();
        assert_eq!(s.retries_explicit, 0);
        assert!(
            s.failed_own > 20,
            "seed {seed}: only {} failures",
            s.failed_own
        );
        println!(
            "seed {seed}: {reads} reads against {base} without failures ({:.3}x), {} failures, {} automatic retries",
            reads as f64 / base as f64,
            s.failed_own,
            s.retries_auto
        );
        assert!(
            reads * 100 <= base * 125,
            "seed {seed}: {reads} reads against {base}"
        );
    }
}

/// Failures interleaved with successes never spend the retry budget: with a failure every
/// 10th load, a 0 → 50,000 move ends quiescent on the default 5 automatic retries.
#[test]
fn a_failure_every_tenth_load_never_spends_the_budget() {
    let mut h = host(50_200, Config::default());
    h.apply(Op::Window { start: 0, len: 100 }).unwrap();
    drive(&mut h, &mut Rng(3), CALM);
    h.loader.set_window(50_000, 100).unwrap();
    h.collect().unwrap();
    let mut n = 0u64;
    while h.pending() > 0 || h.loader.next_deadline().is_some() {
        if h.pending() > 0 {
            n += 1;
            let op = if n.is_multiple_of(10) {
                Op::Fail { index: 0 }
            } else {
                Op::Deliver {
                    index: 0,
                    fresh: true,
                }
            };
            h.apply(op).unwrap();
        } else {
            let d = h.loader.next_deadline().unwrap();
            let ms = d.saturating_sub(h.now).clamp(1, u64::from(u16::MAX));
            h.apply(Op::Tick { ms: ms as u16 }).unwrap();
        }
    }
    let s = h.loader.stats();
    assert!(
        h.loader.ledger().is_quiescent() && !h.loader.revalidating(),
        "stopped after {} failures: {:?}",
        s.failed_own,
        h.loader.ledger().snapshot()
    );
    assert_eq!(s.retries_explicit, 0);
    assert!(s.failed_own >= 100, "{} failures", s.failed_own);
    h.check_settled().unwrap();
}

/// A writer appends at the source's end after every answer while the window moves back
/// through history, from near its end to its start: the appends cost no read, since nothing
/// held or in flight can contain them (the held pages near the end were dropped, and every
/// read goes backward).
#[test]
fn appends_while_scrolling_back_cost_no_reads() {
    let config = Config {
        max_pages: 8,
        ..Config::default()
    };
    let run = |w: Weather| {
        let mut h = host(20_000, config);
        let start = h.source.cursor_before(19_900);
        h.loader.jump(&start, 19_900).unwrap();
        h.loader.set_window(19_900, 100).unwrap();
        h.collect().unwrap();
        drive(&mut h, &mut Rng(5), CALM);
        let mut reads = 0;
        // From the end back to the start, 500 items at a time; the first move leaves the
        // end (where appends would be in the window's prefetch, and read).
        for start in (0..19_400).rev().step_by(500) {
            h.loader.set_window(start, 100).unwrap();
            h.collect().unwrap();
            reads += drive(&mut h, &mut Rng(5), w);
        }
        (reads, h.loader.stats().ranged_invalidations)
    };
    let (base, _) = run(CALM);
    let (reads, changes) = run(Weather {
        fail_percent: 0,
        append: true,
    });
    println!("{reads} reads with {changes} appends, {base} without");
    assert!(changes > 300, "{changes} appends");
    assert!(
        reads <= base + 2,
        "{reads} reads with appends, {base} without"
    );
}
