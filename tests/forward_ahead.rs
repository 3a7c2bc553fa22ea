//! Forward moves under ranged changes far ahead of them (issue 35): a change reported while a
//! forward read is out, after its cursor and touching no held page, is decided by the read's
//! answer, so a writer far ahead of a scrolling view costs it nothing, and a change the answer
//! did reach is still repaired. The simulated host checks every property after every event.
#![cfg(feature = "testing")]

use loader::sim::{Host, Op, Source};
use loader::Config;

/// Items in the source: the changes are made around item 60,000, far past the view.
const N: usize = 100_000;
/// Where the window scrolls to, from 0, 200 items at a time.
const TO: u16 = 2_000;

fn host() -> Host {
    let config = Config {
        page_size: 50,
        prefetch_distance: 50,
        max_pages: 0,
        ..Config::default()
    };
    Host::new(config, Source::numbered(N))
}

fn reads(h: &Host) -> u64 {
    h.loader.stats().issued.iter().sum()
}

/// Scrolls from 0 to `TO` and answers every read, in the order issued; after the answers
/// that leave a read out which `change` picks (by their count so far), deletes an item far past the view and reports
/// exactly its range. Returns the reads issued.
fn scroll(change: impl Fn(u64) -> bool) -> (Host, u64) {
    let mut h = host();
    let mut answers = 0u64;
    let mut far = 60_000u16;
    for start in (0..=TO).step_by(200) {
        h.apply(Op::Window { start, len: 50 }).unwrap();
        let mut rounds = 0;
        while h.pending() > 0 {
            rounds += 1;
            assert!(rounds < 1_000, "the move at {start} does not end");
            h.apply(Op::Deliver {
                index: 0,
                fresh: true,
            })
            .unwrap();
            // Only a change made while a read is out can supersede it.
            if h.pending() == 0 {
                continue;
            }
            answers += 1;
            if change(answers) {
                far -= 1;
                h.apply(Op::DeleteRanged { index: far.into() }).unwrap();
            }
        }
    }
    h.settle_down().unwrap();
    let (shown, truth) = h.window_against_source().expect("a view");
    assert_eq!(shown, truth);
    assert_eq!(h.loader.window().0, u64::from(TO));
    let n = reads(&h);
    (h, n)
}

#[test]
fn a_change_far_ahead_after_every_answer_costs_a_forward_move_nothing() {
    let (_, quiet) = scroll(|_| false);
    let (h, busy) = scroll(|_| true);
    let changes = h.loader.stats().ranged_invalidations;
    assert!(changes >= 30, "{changes} changes");
    // Before the rule, each change superseded the read out and the move never ended.
    assert!(
        busy <= quiet + 2,
        "{busy} reads against {quiet} without changes"
    );
}

#[test]
fn ten_changes_far_ahead_cost_at_most_two_reads() {
    let (_, quiet) = scroll(|_| false);
    let (h, ten) = scroll(|n| n <= 10);
    assert_eq!(h.loader.stats().ranged_invalidations, 10);
    // Before the rule, each cost one read.
    assert!(
        ten <= quiet + 2,
        "{ten} reads against {quiet} without changes"
    );
}

/// A change the answer reaches is not lost: the read out from the view's end is answered
/// (read now, with the change in it) after a delete just past its cursor; the answer reached
/// the change, so it is stale and read again, and the view equals the source.
#[test]
fn a_change_the_answer_reached_is_read_again() {
    let mut h = host();
    h.apply(Op::Window { start: 0, len: 50 }).unwrap();
    h.settle_down().unwrap();
    let stale = h.loader.stats().answered_stale;
    h.apply(Op::Window {
        start: 100,
        len: 50,
    })
    .unwrap();
    assert!(h.pending() > 0);
    // The read out starts at the view's end (item 100); delete item 120, inside its reach.
    h.apply(Op::DeleteRanged { index: 120 }).unwrap();
    h.apply(Op::Deliver {
        index: 0,
        fresh: false,
    })
    .unwrap();
    assert!(
        h.loader.stats().answered_stale > stale,
        "the answer held the delete"
    );
    h.settle_down().unwrap();
    let (shown, truth) = h.window_against_source().expect("a view");
    assert_eq!(shown, truth);
}
