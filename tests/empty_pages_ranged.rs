//! Empty pages in a ranged repair: a bounded read's empty page whose cursor moved, short of
//! `until` and the source's end, is progress (the repair reads on from its cursor), while a
//! short page with items still ends the repair, as the bounded-read contract says.

mod common;

use common::{at, config, cur, Bounded, FilteredHost};
use loader::Kind;

/// A source of `len` rows with 100..200 filtered out, loaded over `window` visible rows, then
/// a ranged invalidation of rows 60..220, which marks the pages holding 50..100 and 200..250
/// and the filtered stretch between them; the repair is answered by a host of kind `bounded`.
fn repaired(len: u64, window: u64, bounded: Bounded) -> (FilteredHost, Vec<u64>) {
    let mut h = FilteredHost::new(len, 100..200, config(0));
    h.bounded = bounded;
    h.set_window(0, window);
    h.drain(20);
    h.check();
    let before = h.view();
    assert_eq!(before, h.visible_rows()[..window as usize]);
    h.log.clear();
    h.invalidate_range(60, 220);
    assert!(
        h.reads.iter().all(|r| r.until.is_some()),
        "a ranged repair reads within a bound"
    );
    h.drain(50);
    (h, before)
}

/// The repair is done, its reads bounded, and the view is what it was (nothing changed in the
/// source): no item lost, nothing empty held.
fn check_repaired(h: &FilteredHost, before: &[u64]) {
    h.check();
    assert_eq!(h.view(), before, "an item vanished from the view");
    assert!(h.loader.ledger().is_quiescent());
    assert!(!h.loader.revalidating());
    assert_eq!(
        h.loader.stats().ranged_repairs,
        1,
        "a ranged repair committed"
    );
    assert!(
        h.log
            .iter()
            .all(|a| a.kind == Kind::Chain && a.until.is_some()),
        "only bounded reads: {:?}",
        h.log
    );
}

/// The bounded reads that answered an empty page whose cursor moved, short of the bound.
fn empty_advancing(h: &FilteredHost) -> usize {
    h.log
        .iter()
        .filter(|a| a.count == 0 && a.next > a.cursor && Some(a.next) != a.until)
        .count()
}

#[test]
fn a_ranged_repair_reads_on_after_an_empty_bounded_page_whose_cursor_moved() {
    // The view ends with the run: pages 0..50, 50..100 and 200..250, the last two re-read.
    let (h, before) = repaired(300, 150, Bounded::Naive);
    assert_eq!(
        empty_advancing(&h),
        2,
        "the host answered the stretch with two empty pages: {:?}",
        h.log
    );
    let cursors: Vec<u64> = h.log.iter().map(|a| a.cursor).collect();
    assert_eq!(cursors, vec![50, 100, 150, 200], "read on from each cursor");
    check_repaired(&h, &before);
    assert_eq!(
        h.released_empty,
        2 + 2,
        "the load's and the repair's empty pages"
    );
}

#[test]
fn a_ranged_repair_over_a_filtered_stretch_rejoins_the_pages_kept_after_it() {
    // Pages 0..50, 50..100, 200..250 and 250..300: the last one is kept after the run.
    let (h, before) = repaired(400, 200, Bounded::Naive);
    assert_eq!(empty_advancing(&h), 2, "{:?}", h.log);
    check_repaired(&h, &before);
}

#[test]
fn a_host_that_fills_its_bounded_pages_crosses_the_stretch_in_one_read() {
    for (len, window) in [(300, 150), (400, 200)] {
        let (h, before) = repaired(len, window, Bounded::Contract);
        assert_eq!(empty_advancing(&h), 0);
        check_repaired(&h, &before);
    }
}

#[test]
fn a_short_bounded_page_with_items_ends_the_ranged_repair() {
    // A host that returns 10 rows of a bounded read and says nothing else: by the contract
    // it reached `until`, so no bounded read follows it.
    let mut h = FilteredHost::new(400, 0..0, config(0));
    h.set_window(0, 200);
    h.drain(20);
    h.log.clear();
    h.invalidate_range(60, 120);
    assert_eq!(h.reads.len(), 1);
    let read = h.reads.remove(0);
    assert!(read.until.is_some());
    let c = at(&read.cursor);
    h.settle(read, (c..c + 10).collect(), &cur(c + 10), false);
    assert!(
        h.reads.iter().all(|r| r.until.is_none()),
        "a bounded read followed a short page with items: {:?}",
        h.reads
    );
    assert_eq!(h.loader.stats().ranged_repairs, 1, "the repair committed");
    h.drain(20);
    h.check_no_empty_held();
}
