//! Far moves made while reads are in flight or a failure is recorded: a far move with a
//! known cursor (the memo, the source's start, `locate`) starts there, whatever the reads
//! before it left behind, and costs what it costs from a quiet loader.

use super::*;

/// Reads issued so far, of every kind.
fn issued(h: &Host) -> u64 {
    h.loader.stats().issued.iter().sum()
}

fn settle(h: &mut Host) {
    h.settle_down().unwrap_or_else(|e| panic!("{e}"));
}

/// The window shows the source's items at their own positions.
fn window_is_the_sources(h: &Host) {
    let (shown, truth) = h.window_against_source().expect("a view");
    assert_eq!(shown, truth, "window at {}", h.loader.window().0);
}

const PAGE: u32 = 50;
const PREFETCH: u64 = 50;
const LEN: u16 = 100;

/// 0 → 3,000 → 6,000 with an honest `locate`; with `answered`, the first move's reads are
/// all answered before the second move. Returns the reads issued and the items read from the
/// second move on (the read the first move left in flight included).
fn two_far_moves(answered: bool) -> (u64, u64) {
    let config = Config {
        page_size: PAGE,
        prefetch_distance: PREFETCH,
        ..Config::default()
    };
    let mut h = Host::new(config, Source::numbered(8_000));
    h.apply(Op::Window { start: 0, len: LEN }).unwrap();
    settle(&mut h);
    let located = |start| Op::WindowLocated {
        start,
        len: LEN,
        answer: 0,
    };
    h.apply(located(3_000)).unwrap();
    if answered {
        settle(&mut h);
    } else {
        assert!(h.pending() > 0, "the first move's read is in flight");
    }
    let (reads, items) = (issued(&h), h.loader.stats().items_read);
    h.apply(located(6_000)).unwrap();
    settle(&mut h);
    window_is_the_sources(&h);
    assert_eq!(h.loader.stats().located, 2);
    (issued(&h) - reads, h.loader.stats().items_read - items)
}

/// What a move that starts at a known cursor may read: window + 2·prefetch + 2·page.
const TARGET: u64 = LEN as u64 + 2 * PREFETCH + 2 * PAGE as u64;

#[test]
fn a_far_move_during_a_far_move_starts_at_the_new_target() {
    let (quiet_reads, quiet_items) = two_far_moves(true);
    let (busy_reads, busy_items) = two_far_moves(false);
    println!("answered: {quiet_reads} reads, {quiet_items} items; not: {busy_reads}, {busy_items}");
    assert!(quiet_items <= TARGET, "{quiet_items}");
    // The first move's read still in flight is answered (one page more), and nothing
    // between the two targets is read.
    assert!(
        busy_items <= TARGET + PAGE as u64,
        "{busy_reads} reads, {busy_items} items, against {quiet_reads} and {quiet_items}"
    );
    assert!(
        busy_reads <= quiet_reads + 1,
        "{busy_reads} against {quiet_reads}"
    );
}

/// 600 items, pages of 2, no prefetch, an honest `locate`: the view at `[0, 2)`, a far move
/// to 400 whose first read fails (`abandon`: is let go), then a far move to 100.
fn far_move_after_a_failed_far_move(abandon: bool) -> u64 {
    let config = Config {
        page_size: 2,
        prefetch_distance: 0,
        ..Config::default()
    };
    let mut h = Host::new(config, Source::numbered(600));
    h.apply(Op::Window { start: 0, len: 2 }).unwrap();
    settle(&mut h);
    h.apply(Op::WindowLocated {
        start: 400,
        len: 2,
        answer: 0,
    })
    .unwrap();
    let r = only_read(&h);
    assert_ne!(r.kind, Kind::Finite, "the far move's rebuild");
    let index = h.index_of(r.read_id);
    if abandon {
        h.apply(Op::Abandon { index }).unwrap();
    } else {
        h.apply(Op::Fail { index }).unwrap();
    }
    assert_eq!(h.loader.ledger().failure(), Failure::Own);
    let reads = issued(&h);
    h.apply(Op::WindowLocated {
        start: 100,
        len: 2,
        answer: 0,
    })
    .unwrap();
    assert_eq!(h.loader.stats().located, 2);
    // The read issued last (an abandoned read stays pending: the host may still answer it).
    let first = h.pending_reads().last().cloned().expect("a read");
    assert_ne!(first.read_id, r.read_id);
    assert_eq!(
        h.source.position(&first.cursor),
        100,
        "the retry reads from the new target, not the failed read's cursor"
    );
    settle(&mut h);
    window_is_the_sources(&h);
    issued(&h) - reads
}

#[test]
fn a_far_move_after_a_failed_repair_starts_at_its_target() {
    for abandon in [false, true] {
        let reads = far_move_after_a_failed_far_move(abandon);
        println!("abandon {abandon}: {reads} reads");
        assert!(reads <= 2, "abandon {abandon}: {reads} reads");
    }
}
