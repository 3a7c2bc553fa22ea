//! Repairs: chains re-reading the held pages, full reads from the start, and their commits.

use super::*;

#[test]
fn chain_repair_rereads_from_the_first_held_page_and_commits_with_its_last_step() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    let old = view(&h);
    h.apply(Op::Delete { index: 0 }).unwrap();
    assert!(h.loader.revalidating());
    let step0 = only_read(&h);
    assert_eq!((step0.kind, step0.step), (Kind::Chain, 0));
    assert!(
        step0.cursor.is_empty(),
        "from the first held page's start cursor"
    );
    deliver(&mut h, step0.read_id);
    assert_eq!(view(&h), old, "the old view stays until the chain commits");
    assert!(h.loader.revalidating());
    let step1 = only_read(&h);
    assert_eq!(step1.step, 1);
    // Each step continues from the cursor the previous step returned, not the memo.
    assert_eq!(step1.cursor, encode_cursor(h.source.items()[3]));
    deliver(&mut h, step1.read_id);
    assert!(!h.loader.revalidating());
    assert_eq!(view(&h), h.source.items()[..8]);
}

#[test]
fn chain_refill_keeps_the_last_items_after_an_insert_near_the_top() {
    let mut h = host(small(), 30);
    h.apply(Op::Window { start: 0, len: 12 }).unwrap();
    drain(&mut h);
    let old_end = h.loader.covered().1;
    h.apply(Op::Insert { key: 0 }).unwrap();
    drain(&mut h);
    assert!(
        h.loader.covered().1 >= old_end,
        "the repair covers what the old view did"
    );
    assert_eq!(view(&h), h.source.items()[..h.loader.covered().1 as usize]);
}

#[test]
fn chain_step_after_the_epoch_moved_settles_stale_and_a_replacement_starts() {
    // The module's P5: the churn rule off.
    let config = Config {
        commit_overtaken: false,
        ..small()
    };
    let mut h = host(config, 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    h.apply(Op::Insert { key: 1 }).unwrap();
    let step0 = only_read(&h);
    h.apply(Op::Insert { key: 2 }).unwrap();
    assert_eq!(h.pending(), 1, "the chain waits for its step boundary");
    let stale = h.loader.stats().answered_stale;
    deliver(&mut h, step0.read_id);
    assert_eq!(h.loader.stats().answered_stale, stale + 1);
    let replacement = only_read(&h);
    assert_eq!(replacement.kind, Kind::Chain);
    assert_ne!(replacement.request_id, step0.request_id);
    assert_eq!(replacement.step, 0);
    assert!(replacement.cursor.is_empty());
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..8]);
}

#[test]
fn overtaken_chain_reads_to_its_end_commits_and_a_new_chain_starts() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    h.apply(Op::Insert { key: 1 }).unwrap();
    let step0 = only_read(&h);
    h.apply(Op::Insert { key: 2 }).unwrap();
    let stale = h.loader.stats().answered_stale;
    deliver(&mut h, step0.read_id);
    // Overtaken, but its data is newer than the view's: it reads on.
    let step1 = only_read(&h);
    assert_eq!((step1.request_id, step1.step), (step0.request_id, 1));
    let cover_before = h.loader.ledger().cover_epoch();
    deliver(&mut h, step1.read_id);
    assert_eq!(h.loader.stats().answered_stale, stale);
    assert!(
        h.loader.ledger().cover_epoch() > cover_before,
        "it committed"
    );
    let next = only_read(&h);
    assert_eq!((next.kind, next.step), (Kind::Chain, 0));
    assert_ne!(next.request_id, step0.request_id);
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..8]);
}

#[test]
fn full_read_goes_from_the_start_up_to_the_window_end_plus_prefetch() {
    let mut h = host(
        Config {
            prefetch_distance: 2,
            ..small()
        },
        30,
    );
    h.apply(Op::Window { start: 0, len: 9 }).unwrap();
    assert_eq!(only_read(&h).kind, Kind::Finite);
    // Nothing has settled, so an invalidation leaves full debt: a full read supersedes it.
    h.apply(Op::Invalidate).unwrap();
    let r = h
        .pending_reads()
        .into_iter()
        .find(|r| r.kind == Kind::Full)
        .unwrap();
    assert_eq!(r.step, 0);
    assert!(r.cursor.is_empty());
    drain(&mut h);
    assert_eq!(h.loader.covered(), (0, 12));
    assert_eq!(h.loader.stats().issued[Kind::Full as usize], 3);
    assert_eq!(view(&h), h.source.items()[..12]);
}

#[test]
fn an_invalidation_during_a_full_read_is_repaired_not_lost() {
    let mut h = host(small(), 12);
    h.apply(Op::Invalidate).unwrap();
    h.apply(Op::Window { start: 0, len: 4 }).unwrap();
    let full = only_read(&h);
    h.apply(Op::Delete { index: 1 }).unwrap();
    // The full read's answer was computed before the delete.
    let index = h.index_of(full.read_id);
    h.apply(Op::Deliver {
        index,
        fresh: false,
    })
    .unwrap();
    assert!(h.loader.revalidating(), "the recheck repair runs");
    assert_eq!(only_read(&h).kind, Kind::Chain);
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..4]);
    assert_eq!(h.loader.ledger().cover_epoch(), h.loader.ledger().epoch());
}
