//! Ranged invalidation: only the pages a change may touch are re-read, with bounded reads, and
//! the repair rejoins the pages kept around them.

use super::*;
use crate::sim::Source as Src;

/// A 200-item source with few ties, pages of 4, the window over the first 80 items: 20 pages.
fn loaded() -> Host {
    let mut h = Host::new(small(), Source::with_items(200, 50));
    h.apply(Op::Window { start: 0, len: 80 }).unwrap();
    drain(&mut h);
    assert_eq!(h.loader.page_count(), 20);
    h
}

fn acquisitions(h: &Host) -> Vec<u64> {
    h.loader.pages().map(|p| p.acquisition).collect()
}

#[test]
fn one_insert_rereads_the_page_it_lands_in_and_keeps_the_rest() {
    let mut h = loaded();
    let before = acquisitions(&h);
    let read_before = h.loader.stats().items_read;
    h.apply(Op::InsertRanged { key: 21 }).unwrap();
    let first = only_read(&h);
    assert_eq!(first.kind, Kind::Chain);
    assert!(first.until.is_some(), "a bounded read");
    drain(&mut h);
    let read = h.loader.stats().items_read - read_before;
    assert!(read <= 2 * 4 + 1, "{read} items re-read");
    let after = acquisitions(&h);
    let kept = after.iter().filter(|a| before.contains(a)).count();
    assert!(
        kept >= 18,
        "only the changed pages were replaced: {kept} of 20 kept"
    );
    assert_eq!(view(&h), h.source.items()[..h.loader.covered().1 as usize]);
    assert_eq!(
        h.loader.covered(),
        (0, 81),
        "the pages after it moved by one"
    );
    assert_eq!(h.loader.stats().ranged_repairs, 1);
    assert!(!h.loader.revalidating());
}

#[test]
fn a_delete_rereads_its_page_and_the_pages_after_move_back() {
    let mut h = loaded();
    let read_before = h.loader.stats().items_read;
    h.apply(Op::DeleteRanged { index: 30 }).unwrap();
    drain(&mut h);
    // One bounded read re-reads the page (3 items left), then one finite read refills the
    // window's last item.
    let read = h.loader.stats().items_read - read_before;
    assert_eq!(h.loader.stats().issued[Kind::Chain as usize], 1);
    assert!(read <= 3 + 4, "{read} items re-read");
    assert_eq!(h.loader.covered(), (0, 83));
    assert_eq!(view(&h), h.source.items()[..83]);
}

#[test]
fn a_change_after_the_held_pages_rereads_nothing() {
    let mut h = loaded();
    let before = acquisitions(&h);
    let read_before = h.loader.stats().items_read;
    let last = *h.source.items().last().unwrap();
    let at = encode_cursor(last);
    h.loader
        .invalidate_range(&at, None, &mut Src::compare)
        .unwrap();
    assert!(h.pending_reads().is_empty(), "nothing to read");
    assert!(!h.loader.revalidating(), "current again at once");
    assert_eq!(h.loader.stats().items_read, read_before);
    assert_eq!(acquisitions(&h), before);
    assert_eq!(h.loader.ledger().cover_epoch(), h.loader.ledger().epoch());
}

#[test]
fn ranged_invalidations_before_the_commit_merge_and_a_whole_one_subsumes_them() {
    let mut h = loaded();
    h.apply(Op::InsertRanged { key: 3 }).unwrap();
    h.apply(Op::InsertRanged { key: 40 }).unwrap();
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..h.loader.covered().1 as usize]);
    assert!(!h.loader.revalidating());
    // A whole invalidation after ranged ones: the next repair is anchored and replaces all.
    h.apply(Op::InsertRanged { key: 10 }).unwrap();
    h.apply(Op::Invalidate).unwrap();
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..h.loader.covered().1 as usize]);
    assert_eq!(h.loader.pages().filter(|p| p.dirty).count(), 0);
}

#[test]
fn a_reversed_range_is_refused_and_changes_nothing() {
    let mut h = loaded();
    let snap = h.loader.ledger().snapshot();
    let a = encode_cursor(h.source.items()[10]);
    let b = encode_cursor(h.source.items()[5]);
    assert_eq!(
        h.loader.invalidate_range(&a, Some(&b), &mut Src::compare),
        Err(LoaderError::RangeReversed)
    );
    assert_eq!(
        h.loader.invalidate_range(&a, Some(&[]), &mut Src::compare),
        Err(LoaderError::RangeReversed)
    );
    assert_eq!(h.loader.ledger().snapshot(), snap);
    assert!(h.pending_reads().is_empty());
}
