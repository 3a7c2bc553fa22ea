//! Far moves in the simulation: back and forth with and without the memo and `locate`, with
//! `locate` answering wrong or unknown, and with the source changing between the memo's
//! recording and its use. The simulated host checks every property (the whole memory bound
//! among them) after every event; these tests add what a far move must cost, and that the
//! window then shows the source's items at their own positions.
#![cfg(feature = "testing")]

use loader::sim::{Host, Op, Source};
use loader::Config;

const N: usize = 400;

fn host(max_pages: u32) -> Host {
    let config = Config {
        page_size: 5,
        prefetch_distance: 5,
        max_pages,
        backoff_initial_ms: 1,
        backoff_max_ms: 4,
        ..Config::default()
    };
    let mut h = Host::new(config, Source::numbered(N));
    step(&mut h, Op::Window { start: 0, len: 10 });
    h
}

fn step(h: &mut Host, op: Op) {
    h.apply(op).unwrap_or_else(|e| panic!("{op:?}: {e}"));
    h.settle_down()
        .unwrap_or_else(|e| panic!("after {op:?}: {e}"));
}

/// Moves the window to `start` (with `locate` answering as `answer` says, if given) and
/// answers everything; returns the items read.
fn go(h: &mut Host, start: u16, answer: Option<u8>) -> u64 {
    let before = h.loader.stats().items_read;
    let op = match answer {
        None => Op::Window { start, len: 10 },
        Some(answer) => Op::WindowLocated {
            start: start.into(),
            len: 10,
            answer,
        },
    };
    step(h, op);
    h.loader.stats().items_read - before
}

/// The window shows the source's items at their own positions (the numbering is the
/// source's: these runs start at its start and never jump).
fn window_is_the_sources(h: &Host) {
    let (shown, truth) = h.window_against_source().expect("a view");
    assert_eq!(shown, truth, "window at {}", h.loader.window().0);
}

/// What a move that starts at a cursor may read: window + 2·prefetch + 2·page.
const TARGET: u64 = 10 + 2 * 5 + 2 * 5;

#[test]
fn far_moves_both_ways_with_and_without_the_memo() {
    let mut h = host(4);
    for at in (0..=300).step_by(10) {
        go(&mut h, at, None);
    }
    let far = h.loader.stats().far_jumps;
    // Back to a position visited before: the memo.
    assert!(go(&mut h, 120, None) <= TARGET);
    window_is_the_sources(&h);
    // Back to the top: the origin.
    assert!(go(&mut h, 0, None) <= TARGET);
    window_is_the_sources(&h);
    // Forward again, to a position visited before, and past it to one never read: the
    // memo's cursor nearest to it, then the walk from there.
    assert!(go(&mut h, 250, None) <= TARGET);
    window_is_the_sources(&h);
    let read = go(&mut h, 380, None);
    assert!(read >= 380 - 300 - 15, "{read}");
    window_is_the_sources(&h);
    assert!(h.loader.stats().far_jumps >= far + 4);
    h.close().unwrap();
}

#[test]
fn locate_right_unknown_and_wrong() {
    let mut h = host(4);
    // Right: a far move to a position never read reads the window.
    assert!(go(&mut h, 300, Some(0)) <= TARGET);
    window_is_the_sources(&h);
    assert_eq!(h.loader.stats().located, 1);
    // Unknown, to a position never read: the memo's nearest cursor (position 300's page), or
    // the walk; the window is right either way.
    go(&mut h, 150, Some(1));
    window_is_the_sources(&h);
    assert_eq!(h.loader.stats().locate_unknown, 1);
    // Wrong: the view is the source from the cursor it gave, contiguous, every property
    // holding (the host checks them), three items off.
    go(&mut h, 30, Some(2));
    let (ws, _) = h.loader.window();
    let (from, _) = h.loader.covered();
    let view = h.view_items().unwrap();
    let truth: Vec<_> = h
        .source
        .visible_from(0)
        .skip(ws as usize + 3)
        .take(5)
        .collect();
    assert_eq!(&view[(ws - from) as usize..][..5], &truth[..]);
    h.close().unwrap();
}

#[test]
fn a_change_between_the_memo_and_its_use_is_not_shown_stale() {
    for ranged in [false, true] {
        for delete in [false, true] {
            let mut h = host(4);
            for at in (0..=300).step_by(10) {
                go(&mut h, at, None);
            }
            // Rows change near the top, before every position the memo holds.
            for _ in 0..3 {
                let op = match (ranged, delete) {
                    (false, false) => Op::Insert { key: 1 },
                    (true, false) => Op::InsertRanged { key: 1 },
                    (false, true) => Op::Delete { index: 2 },
                    (true, true) => Op::DeleteRanged { index: 2 },
                };
                step(&mut h, op);
            }
            // The view's numbering is anchored now (the rows changed before it): back to the
            // top, where the numbering is the source's own again, then to positions the memo
            // recorded before the change, which moved by three: a memo kept across the
            // change would show the window three items off.
            go(&mut h, 0, None);
            window_is_the_sources(&h);
            go(&mut h, 200, None);
            window_is_the_sources(&h);
            go(&mut h, 150, Some(0));
            window_is_the_sources(&h);
            h.close().unwrap();
        }
    }
}

/// On a source of 10^5 items, the size the cost properties are meant to be checked at, far
/// moves with `locate` answering right each read at most the move's budget and show the
/// source's items. The simulated host's lookup of the cursor `locate` gives is one pass over
/// the items: it filtered them with a scan of the source per item (O(n²)), and this test took
/// 71 s in a debug build (0.1 s now); it allows 30.
#[test]
fn far_moves_with_locate_over_a_hundred_thousand_items() {
    let config = Config {
        page_size: 5,
        prefetch_distance: 5,
        max_pages: 4,
        backoff_initial_ms: 1,
        backoff_max_ms: 4,
        ..Config::default()
    };
    // Two keys filtered out (items 8 to 11 and 20 to 23): positions count visible items.
    let source = Source::numbered(100_000).with_hidden_keys(0b10_0100);
    let t0 = std::time::Instant::now();
    let mut h = Host::new(config, source);
    step(&mut h, Op::Window { start: 0, len: 10 });
    for start in [60_000, 30_000, 65_000, 5] {
        let read = go(&mut h, start, Some(0));
        assert!(read <= TARGET, "{read} items read to reach {start}");
        window_is_the_sources(&h);
    }
    assert!(h.loader.stats().located >= 3);
    h.close().unwrap();
    let took = t0.elapsed();
    assert!(took.as_secs() < 30, "{took:?}");
}
