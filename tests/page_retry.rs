//! The page retry in long scrolls: a page read that fails while nothing else is owed is
//! retried by reading that page again (same cursor, direction, `until` and limit), not the
//! full source. Each run drives the sim host (every property checked after every event),
//! scrolling one page at a time forward and then back, failing reads from a seeded generator,
//! ticking to each backoff deadline and calling `retry` when the automatic retries are spent.
//! The same scroll without failures, in the same test, is the baseline: every failure costs
//! exactly one read more.

// Uses the test instruments (`sim`).
#![cfg(feature = "testing")]

#[path = "../benches/common/rng.rs"]
mod rng;

use loader::ledger::Failure;
use loader::sim::{Host, Op, Source};
use loader::{Config, Kind, Read};
use rng::Rng;

const PAGE: u32 = 50;
const PAGES: u64 = 120;

fn config() -> Config {
    Config {
        page_size: PAGE,
        prefetch_distance: 50,
        max_pages: 8,
        ..Config::default()
    }
}

/// What a read reads: the page retry must issue the failed read's.
fn what(r: &Read) -> (Kind, Vec<u8>, loader::Direction, Option<Vec<u8>>, u32) {
    (
        r.kind,
        r.cursor.to_vec(),
        r.direction,
        r.until.as_ref().map(|u| u.to_vec()),
        r.limit,
    )
}

/// What a run cost.
#[derive(Debug, Default, PartialEq, Eq)]
struct Cost {
    reads: u64,
    failures: u64,
    page_retries: u64,
    full_reads: u64,
}

/// Answers oldest first, failing `percent` of reads, until quiescent; after each page
/// failure checks that the retry, when it comes, reads the same page.
fn drive(h: &mut Host, rng: &mut Rng, percent: u64, cost: &mut Cost) {
    let mut failed_page: Option<(u64, _)> = None;
    for _ in 0..100_000 {
        if let Some((retries, want)) = &failed_page {
            let st = h.loader.stats();
            if st.retries_auto + st.retries_explicit > *retries {
                let reads = h.pending_reads();
                assert_eq!(reads.len(), 1, "the retry is one read");
                assert_eq!(&what(&reads[0]), want, "the retry reads the failed page");
                failed_page = None;
            }
        }
        if h.pending() > 0 {
            cost.reads += 1;
            if rng.percent(percent) {
                let read = h.pending_reads().remove(0);
                h.apply(Op::Fail { index: 0 }).unwrap();
                cost.failures += 1;
                if h.loader.ledger().failure() == Failure::Page {
                    assert_eq!(read.kind, Kind::Finite);
                    let st = h.loader.stats();
                    failed_page = Some((st.retries_auto + st.retries_explicit, what(&read)));
                }
            } else {
                h.apply(Op::Deliver {
                    index: 0,
                    fresh: true,
                })
                .unwrap();
            }
        } else if let Some(d) = h.loader.next_deadline() {
            let ms = d.saturating_sub(h.now).clamp(1, u64::from(u16::MAX));
            h.apply(Op::Tick { ms: ms as u16 }).unwrap();
        } else if h.loader.ledger().retry_enabled() {
            h.apply(Op::Retry).unwrap();
        } else {
            break;
        }
    }
    let l = h.loader.ledger();
    assert!(
        l.is_quiescent() && l.failure() == Failure::None,
        "stopped short of quiescence: {:?}",
        l.snapshot()
    );
    h.check_settled().unwrap();
}

/// Scrolls `PAGES` pages forward one page at a time, then back; returns each direction's cost.
fn scroll(seed: u64, percent: u64) -> (Cost, Cost, Host) {
    let items = (PAGES as usize + 10) * PAGE as usize;
    let mut h = Host::new(config(), Source::numbered(items));
    let mut rng = Rng(seed);
    h.apply(Op::Window { start: 0, len: 100 }).unwrap();
    drive(&mut h, &mut rng, 0, &mut Cost::default());
    let mut costs = [Cost::default(), Cost::default()];
    let forward: Vec<u64> = (1..=PAGES).map(|p| p * u64::from(PAGE)).collect();
    let back: Vec<u64> = (0..PAGES).rev().map(|p| p * u64::from(PAGE)).collect();
    for (dir, starts) in [forward, back].into_iter().enumerate() {
        for start in starts {
            let before = h.loader.stats();
            h.loader.set_window(start, 100).unwrap();
            h.collect().unwrap();
            drive(&mut h, &mut rng, percent, &mut costs[dir]);
            let after = h.loader.stats();
            costs[dir].page_retries += after.retries_page - before.retries_page;
            costs[dir].full_reads += after.issued[2] - before.issued[2];
            let (from, to) = h.loader.covered();
            assert!(from <= start.saturating_sub(50) && to >= start + 150);
        }
    }
    assert_eq!(
        h.view_items().unwrap(),
        h.source.items()[h.loader.covered().0 as usize..h.loader.covered().1 as usize]
    );
    let [f, b] = costs;
    (f, b, h)
}

/// Failures on page reads in a long scroll, both ways: each failure costs the one read that
/// reads its page again, except when that read fails too (a cursor may be gone for good):
/// then the page goes through a full read of the window (at most its 4 pages), once.
#[test]
fn a_failed_page_in_a_long_scroll_costs_one_read_both_ways() {
    let (calm_f, calm_b, _) = scroll(1, 0);
    assert_eq!((calm_f.failures, calm_b.failures), (0, 0));
    let window_pages = (100 + 2 * 50) / u64::from(PAGE);
    for seed in 1..=3 {
        let (f, b, h) = scroll(seed, 10);
        for (name, c, calm) in [("forward", &f, &calm_f), ("back", &b, &calm_b)] {
            eprintln!("cost at 10% failures, seed {seed} {name}: {c:?} (without: {calm:?})");
            assert!(c.failures > 5, "seed {seed} {name}: {c:?}");
            // Failures not retried as their page: a page read again that failed again.
            let escalated = c.failures - c.page_retries;
            assert!(
                c.reads >= calm.reads + c.failures
                    && c.reads <= calm.reads + c.failures + escalated * (window_pages - 1),
                "seed {seed} {name}: each failure costs one read, an escalated one a window \
                 ({c:?} against {calm:?})"
            );
            assert!(
                c.full_reads <= escalated * window_pages,
                "seed {seed} {name}: a full read only for a page that failed twice ({c:?})"
            );
        }
        h.check_settled().unwrap();
    }
}

/// The first page of a window fails with nothing else owed: a page failure. Its retry with
/// the window where it was reads the same page; an invalidation since, or a window move,
/// makes it the lattice's own failure, retried with a full read; a stalled cursor too.
#[test]
fn a_page_failure_falls_back_to_a_full_read_when_anything_changed() {
    let cfg = config();
    // The retry with nothing changed: the same page.
    let mut h = Host::new(cfg, Source::numbered(2_000));
    h.apply(Op::Window { start: 0, len: 100 }).unwrap();
    let first = h.pending_reads().remove(0);
    h.apply(Op::Fail { index: 0 }).unwrap();
    assert_eq!(h.loader.ledger().failure(), Failure::Page);
    h.apply(Op::Retry).unwrap();
    assert_eq!(what(&h.pending_reads()[0]), what(&first));
    assert_eq!(h.loader.stats().retries_page, 1);
    h.settle_down().unwrap();

    // An invalidation since the failure: the lattice, and a full read.
    let mut h = Host::new(cfg, Source::numbered(2_000));
    h.apply(Op::Window { start: 0, len: 100 }).unwrap();
    h.settle_down().unwrap();
    h.apply(Op::Window { start: 0, len: 300 }).unwrap();
    h.apply(Op::Fail { index: 0 }).unwrap();
    assert_eq!(h.loader.ledger().failure(), Failure::Page);
    h.apply(Op::Invalidate).unwrap();
    assert_eq!(h.loader.ledger().failure(), Failure::Own);
    h.apply(Op::Retry).unwrap();
    assert_eq!(h.pending_reads()[0].kind, Kind::Full);
    assert_eq!(h.loader.stats().retries_page, 0);
    h.settle_down().unwrap();

    // A window move retries with a full read.
    let mut h = Host::new(cfg, Source::numbered(2_000));
    h.apply(Op::Window { start: 0, len: 100 }).unwrap();
    h.settle_down().unwrap();
    h.apply(Op::Window { start: 0, len: 300 }).unwrap();
    h.apply(Op::Fail { index: 0 }).unwrap();
    assert_eq!(h.loader.ledger().failure(), Failure::Page);
    h.apply(Op::Window {
        start: 50,
        len: 300,
    })
    .unwrap();
    assert_eq!(h.pending_reads()[0].kind, Kind::Full);
    assert_eq!(h.loader.stats().retries_page, 0);
    h.settle_down().unwrap();
}
