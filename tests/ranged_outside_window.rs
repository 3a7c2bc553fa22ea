//! A ranged change to held pages the window no longer needs: the repair lets them go instead
//! of re-reading them, so it stages only what the window needs (the header's bound on a
//! repair's staged pages), and the view is still the source around the window.

#![cfg(feature = "testing")]

mod common;

use common::{config, FilteredHost};
use loader::Config;

/// 40 pages of 50 held (no `max_pages` bound), then the window shrinks to the first page.
fn held_far_beyond_the_window() -> FilteredHost {
    let cfg = Config {
        max_pages: 0,
        ..config(10)
    };
    let mut h = FilteredHost::new(10_000, 0..0, cfg);
    h.set_window(0, 2_000);
    h.drain(100);
    h.check();
    // The window and its prefetch: 2,010 items, in 41 pages.
    assert_eq!(h.loader.page_count(), 41);
    h.set_window(0, 50);
    h.drain(10);
    assert_eq!(h.loader.page_count(), 41, "max_pages 0 keeps every page");
    h.log.clear();
    h
}

/// A window of 2,000 items held (no `max_pages` bound), then a change across 30 held pages,
/// all within the window: the ranged repair re-reads them, and 5 of its reads are answered.
fn repairing_five_of_thirty() -> FilteredHost {
    let cfg = Config {
        max_pages: 0,
        ..config(10)
    };
    let mut h = FilteredHost::new(10_000, 0..0, cfg);
    h.set_window(0, 2_000);
    h.drain(100);
    h.log.clear();
    h.invalidate_range(20, 1_500);
    for _ in 0..5 {
        h.answer_one();
    }
    h
}

#[test]
fn a_change_wholly_after_the_window_is_let_go_not_read() {
    let mut h = held_far_beyond_the_window();
    h.invalidate_range(500, 1_500);
    h.drain(10);
    h.check();
    assert!(h.log.is_empty(), "nothing re-read: {:?}", h.log);
    // The pages from the change on went (from the one ending at it, which may hold an
    // item inserted there); those before it stay.
    let pages = h.loader.page_count() as u64;
    assert!((9..=10).contains(&pages), "{pages} pages held");
    assert_eq!(h.view(), (0..pages * 50).collect::<Vec<_>>());
}

#[test]
fn a_change_across_the_window_reads_only_what_the_window_needs() {
    let mut h = held_far_beyond_the_window();
    h.invalidate_range(20, 1_500);
    h.drain(10);
    h.check();
    // The window (0..50) plus its prefetch (10) lie in the first two pages: those are read
    // again, bounded; the changed pages past them go.
    assert_eq!(h.log.len(), 2, "{:?}", h.log);
    assert!(h.log.iter().all(|a| a.until.is_some() && a.cursor < 100));
    assert_eq!(h.view(), (0..100).collect::<Vec<_>>());
    assert_eq!(h.loader.stats().ranged_repairs, 1);
}

#[test]
fn a_window_that_shrinks_during_a_ranged_repair_cuts_it_short() {
    let mut h = repairing_five_of_thirty();
    assert_eq!(h.loader.staged_spans().len(), 5);
    // The window shrinks to its first page: what the repair read past it goes now.
    h.set_window(0, 50);
    let staged = h.loader.staged_spans().len();
    assert!(
        staged <= 2,
        "{staged} pages staged for a window of one page"
    );
    h.drain(10);
    h.check();
    assert!(h.log.len() <= 6, "the repair read on: {:?}", h.log);
    assert_eq!(h.loader.stats().ranged_repairs, 1);
    let pages = h.loader.page_count() as u64;
    assert!(pages <= 2, "{pages} pages held");
    assert_eq!(h.view(), (0..pages * 50).collect::<Vec<_>>());
}

#[test]
fn a_window_that_moves_on_during_a_ranged_repair_lets_go_of_what_lies_before_it() {
    let mut h = repairing_five_of_thirty();
    // The window moves on to 1,000..1,050: the repair's pages before 990 go as it reads,
    // and it stops past 1,060.
    h.set_window(1_000, 50);
    let mut most = h.loader.staged_spans().len();
    while !h.reads.is_empty() {
        h.answer_one();
        most = most.max(h.loader.staged_spans().len());
        assert!(h.log.len() < 100, "the repair read on: {:?}", h.log);
    }
    // ceil((50 + 2 * 10) / 50) + 2 pages at most, at every step.
    assert!(most <= 4, "{most} pages staged for a window of 50 items");
    h.check();
    assert_eq!(h.loader.stats().ranged_repairs, 1);
    let (start, _) = h.loader.covered();
    let view = h.view();
    assert!(
        start <= 990 && start + view.len() as u64 >= 1_060,
        "{start}+{}",
        view.len()
    );
    assert_eq!(view, (start..start + view.len() as u64).collect::<Vec<_>>());
}
