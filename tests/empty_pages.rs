//! Empty pages and the other answer shapes a correct host can produce, on every read path
//! (finite, chain, full): an empty page whose cursor advances is progress; one whose cursor
//! does not move, without `end_of_source`, is a stall handled like a stalled page with items.
//!
//! The host scans a numbered source with a filter, as a `WHERE` clause over keyset pagination
//! does: a read looks at up to `limit` rows after its cursor and returns the ones the filter
//! keeps, so a filtered stretch answers empty pages whose cursor still moves.

mod common;

use common::{at, config, FilteredHost as Host};
use loader::{Answer, Kind};
use std::collections::HashSet;
use std::ops::Range;

/// A source of `len` rows numbered from 0, with `hidden` filtered out, read forward with
/// pages of 50 and no prefetch, the window set.
fn host(len: u64, hidden: Range<u64>, window: (u64, u64)) -> Host {
    let mut h = Host::new(len, hidden, config(0));
    h.set_window(window.0, window.1);
    h
}

/// The view is the source's visible rows from the start, at least `rows` of them (or all
/// there are), and every held acquisition is in the view.
fn check_quiet(h: &Host, rows: usize) {
    check_view(h, rows);
    let shown: HashSet<u64> = h.loader.pages().map(|p| p.acquisition).collect();
    let held: HashSet<u64> = h.held.keys().copied().collect();
    assert_eq!(shown, held, "acquisitions held that no page shows");
}

/// [`check_quiet`] after an own failure: the ledger keeps the failed-over finite
/// requests of the same epoch settled until a later epoch retires them, so only empty
/// pages are checked for (none may be held).
fn check_quiet_after_failure(h: &Host, rows: usize) {
    check_view(h, rows);
    h.check_no_empty_held();
}

fn check_view(h: &Host, rows: usize) {
    assert!(h.loader.ledger().is_quiescent(), "not quiescent");
    assert!(!h.loader.revalidating());
    let view = h.view();
    let visible = h.visible_rows();
    assert_eq!(view, visible[..view.len().min(visible.len())]);
    assert!(view.len() >= rows.min(visible.len()));
    let (start, end) = h.loader.covered();
    assert_eq!((end - start) as usize, view.len());
}

/// The reads issued since `from`, as cursors.
fn cursors(h: &Host, from: usize) -> Vec<u64> {
    h.issued[from..].iter().map(|&(_, c)| c).collect()
}

#[test]
fn finite_reads_cross_a_filtered_stretch() {
    // 300 rows, rows 100..200 filtered, window [0, 150): 0, 50, then two empty pages that
    // move the cursor, then 200..250.
    let mut h = host(300, 100..200, (0, 150));
    let n = h.drain(20);
    assert_eq!(n, 5);
    assert_eq!(cursors(&h, 0), vec![0, 50, 100, 150, 200]);
    check_quiet(&h, 150);
    assert_eq!(h.loader.covered(), (0, 150), "empty pages cost no position");
    assert_eq!(h.released, 2, "the two empty pages are released at once");
    assert_eq!(
        h.loader.page_count(),
        3,
        "an empty page does not enter the view"
    );
}

#[test]
fn a_finite_read_continues_after_an_empty_page_when_the_window_grows() {
    // The load ends on an empty page: the next finite read continues past it.
    let mut h = host(300, 100..200, (0, 100));
    h.drain(10);
    check_quiet(&h, 100);
    let before = h.issued.len();
    h.set_window(0, 150);
    h.drain(10);
    assert_eq!(cursors(&h, before), vec![100, 150, 200]);
    check_quiet(&h, 150);
    // Grow again: it continues from the last page's end, not from the filtered stretch.
    let before = h.issued.len();
    h.set_window(0, 200);
    h.drain(10);
    assert_eq!(cursors(&h, before), vec![250]);
    check_quiet(&h, 200);
}

#[test]
fn a_repair_chain_crosses_a_filtered_stretch() {
    let mut h = host(300, 100..200, (0, 150));
    h.drain(20);
    let before = h.issued.len();
    h.loader.invalidate().expect("invalidate");
    h.collect();
    assert_eq!(h.reads[0].kind, Kind::Chain);
    h.drain(20);
    assert_eq!(cursors(&h, before), vec![0, 50, 100, 150, 200]);
    check_quiet(&h, 150);
    assert_eq!(h.held.len(), 3);
}

#[test]
fn a_full_read_crosses_a_filtered_stretch() {
    let mut h = host(300, 100..200, (0, 150));
    // The first read fails, and the source changes before the retry: an own failure,
    // retried as a full read (with nothing changed the retry would read the page again).
    let read = h.reads.remove(0);
    assert_eq!(
        h.loader.fail(read.read_id, 1).expect("accepted"),
        Answer::Current
    );
    h.loader.invalidate().expect("invalidate");
    h.collect();
    assert!(h.loader.retry().expect("retry"));
    h.collect();
    assert_eq!(h.reads[0].kind, Kind::Full);
    let before = h.issued.len() - 1;
    h.drain(20);
    assert_eq!(cursors(&h, before), vec![0, 50, 100, 150, 200]);
    check_quiet_after_failure(&h, 150);
}

#[test]
fn a_repeated_cursor_on_an_empty_finite_page_is_a_stall() {
    let mut h = host(300, 100..200, (0, 150));
    h.answer_one();
    h.answer_one();
    assert_eq!(at(&h.reads[0].cursor), 100);
    assert_eq!(h.stall_one(), Answer::CursorStalled);
    // An own failure, waiting for backoff: no read is outstanding, a deadline is armed.
    assert!(h.reads.is_empty(), "the stalled read was re-issued at once");
    assert_eq!(
        h.loader.ledger().failure(),
        loader::ledger::Failure::Own,
        "an own failure is recorded"
    );
    let deadline = h.loader.next_deadline().expect("backoff armed");
    assert_eq!(h.loader.stats().cursor_stalls, 1);
    // The stalled page's acquisition is not kept.
    let shown: HashSet<u64> = h.loader.pages().map(|p| p.acquisition).collect();
    assert_eq!(h.held.keys().copied().collect::<HashSet<_>>(), shown);
    // The backoff retry reads everything again, this time truthfully.
    h.loader.tick(deadline).expect("tick");
    h.collect();
    h.drain(20);
    check_quiet_after_failure(&h, 150);
}

#[test]
fn a_repeated_cursor_on_an_empty_chain_page_escalates_to_a_full_read() {
    let mut h = host(300, 100..200, (0, 150));
    h.drain(20);
    h.loader.invalidate().expect("invalidate");
    h.collect();
    h.answer_one();
    h.answer_one();
    assert_eq!(h.reads[0].kind, Kind::Chain);
    assert_eq!(h.stall_one(), Answer::CursorStalled);
    assert_eq!(h.reads.len(), 1);
    assert_eq!(h.reads[0].kind, Kind::Full, "escalated");
    h.drain(20);
    check_quiet(&h, 150);
    assert_eq!(h.loader.stats().cursor_stalls, 1);
}

#[test]
fn a_repeated_cursor_on_an_empty_full_page_is_an_own_failure() {
    let mut h = host(300, 100..200, (0, 150));
    h.fail_one();
    // A change since the failure: the retry is a full read.
    h.loader.invalidate().expect("invalidate");
    h.collect();
    h.loader.retry().expect("retry");
    h.collect();
    h.answer_one();
    assert_eq!(h.reads[0].kind, Kind::Full);
    assert_eq!(h.stall_one(), Answer::CursorStalled);
    assert!(h.reads.is_empty());
    assert_eq!(h.loader.ledger().failure(), loader::ledger::Failure::Own);
    assert!(h.loader.next_deadline().is_some());
    assert!(h.held.values().all(|rows| !rows.is_empty()));
    assert!(h.loader.retry().expect("retry"));
    h.collect();
    h.drain(20);
    check_quiet_after_failure(&h, 150);
}

#[test]
fn an_empty_answer_to_a_cancelled_read_is_stale_whatever_its_cursor() {
    // A host that aborts a read it was told to let go answers it with an empty page that
    // does not move: that is letting go, not a stall, and costs no failure and no re-read.
    let mut h = host(300, 0..0, (0, 100));
    h.answer_one();
    let finite = h.reads[0].read_id;
    h.loader.invalidate().expect("invalidate");
    h.collect();
    assert_eq!(
        h.cancels,
        vec![finite],
        "the superseded finite read is hinted"
    );
    let at = h
        .reads
        .iter()
        .position(|r| r.read_id == finite)
        .expect("still outstanding");
    let read = h.reads.remove(at);
    let cursor = read.cursor.to_vec();
    let answer = h.settle(read, Vec::new(), &cursor, false);
    assert_eq!(answer, Answer::Stale);
    assert_eq!(h.loader.ledger().failure(), loader::ledger::Failure::None);
    assert_eq!(h.loader.ledger().debt(), loader::ledger::Debt::Bounded);
    assert_eq!(h.loader.stats().cursor_stalls, 0);
    h.drain(20);
    check_quiet(&h, 100);
}

#[test]
fn without_heard_hints_an_unmoved_empty_answer_is_a_stall_even_when_superseded() {
    // A host that does not hear cancel hints (a C host without a `cancel` callback) was never
    // told to let the read go: the same answer as above is a stall, recorded as the
    // superseded request's failure.
    let mut h = host(300, 0..0, (0, 100));
    h.loader.set_cancel_hints_heard(false);
    h.answer_one();
    let finite = h.reads[0].read_id;
    h.loader.invalidate().expect("invalidate");
    h.collect();
    let at = h
        .reads
        .iter()
        .position(|r| r.read_id == finite)
        .expect("still outstanding");
    let read = h.reads.remove(at);
    let cursor = read.cursor.to_vec();
    let answer = h.settle(read, Vec::new(), &cursor, false);
    assert_eq!(answer, Answer::CursorStalled);
    assert_eq!(h.loader.stats().cursor_stalls, 1);
    assert_eq!(h.loader.stats().failed_stale, 1);
    h.drain(40);
}

#[test]
fn stalls_never_loop() {
    // A host that always repeats the cursor with an empty page: every path ends in a
    // recorded failure, and the number of reads is bounded by the retries, not unbounded.
    let mut h = host(300, 0..0, (0, 150));
    let mut answered = 0;
    for _ in 0..50 {
        while !h.reads.is_empty() {
            assert_eq!(h.stall_one(), Answer::CursorStalled);
            answered += 1;
        }
        if let Some(d) = h.loader.next_deadline() {
            h.loader.tick(d).expect("tick");
            h.collect();
        }
    }
    // One read, then one per automatic retry (5 by default); then it waits for the host.
    assert_eq!(answered, 6);
    assert!(h.loader.next_deadline().is_none());
    assert!(h.held.is_empty(), "stalled empty pages are not held");
}

#[test]
fn an_empty_source_answers_one_empty_page() {
    let mut h = host(0, 0..0, (0, 150));
    assert_eq!(h.drain(5), 1);
    check_quiet(&h, 0);
    assert!(h.loader.end_of_source());
    assert!(h.held.is_empty());
}

#[test]
fn an_empty_first_page_that_moves_the_cursor_is_progress() {
    let mut h = host(300, 0..120, (0, 100));
    h.drain(10);
    assert_eq!(cursors(&h, 0), vec![0, 50, 100, 150, 200]);
    // 30 + 50 + 50 rows: the first page with rows is at 120, the window's 100 are covered.
    check_quiet(&h, 100);
    assert_eq!(h.loader.covered(), (0, 130));
    assert_eq!(h.released, 2);
}

#[test]
fn an_empty_last_page_with_the_end_flag() {
    // 100 rows: the second read does not notice the end; the third finds nothing and says
    // the source ended.
    let mut h = host(100, 0..0, (0, 150));
    h.answer_one();
    let read = h.reads.remove(0);
    let (rows, next, _) = h.scan(&read);
    h.settle(read, rows, &next, false);
    let read = h.reads.remove(0);
    let cursor = read.cursor.to_vec();
    assert_eq!(at(&cursor), 100);
    let answer = h.settle(read, Vec::new(), &cursor, true);
    assert_eq!(answer, Answer::Current);
    assert!(h.reads.is_empty());
    assert!(h.loader.end_of_source());
    check_quiet(&h, 100);
}

#[test]
fn a_short_page_without_the_end_flag_is_read_on() {
    // A host that returns fewer rows than asked (a size cap of its own) and no end flag.
    let mut h = host(300, 0..0, (0, 150));
    let mut n = 0;
    while let Some(mut read) = (!h.reads.is_empty()).then(|| h.reads.remove(0)) {
        read.limit = 20;
        let (rows, _, _) = h.scan(&read);
        let next = at(&read.cursor) + rows.len() as u64;
        h.settle(read, rows, &next.to_be_bytes(), false);
        n += 1;
        assert!(n < 50);
    }
    assert_eq!(n, 8, "20 rows at a time up to 150");
    check_quiet(&h, 160);
}

#[test]
fn the_end_flag_early_stops_the_reads_and_keeps_every_item() {
    // The host says the source ended on the second page of a window that wanted three.
    let mut h = host(300, 0..0, (0, 150));
    h.answer_one();
    let read = h.reads.remove(0);
    let (rows, next, _) = h.scan(&read);
    h.settle(read, rows, &next, true);
    assert!(h.reads.is_empty(), "no read after the end");
    assert!(h.loader.end_of_source());
    check_quiet(&h, 100);
    // A repair chain that meets the early end also stops there, and commits what it read.
    h.loader.invalidate().expect("invalidate");
    h.collect();
    let read = h.reads.remove(0);
    let (rows, next, _) = h.scan(&read);
    h.settle(read, rows, &next, true);
    assert!(h.reads.is_empty());
    check_quiet(&h, 50);
    assert!(h.loader.end_of_source());
}

#[cfg(feature = "testing")]
mod simulated {
    //! The simulated host with filtered stretches and a host that repeats cursors on empty
    //! pages, in property runs (`LOADER_EMPTY_CASES`, default 1,000 per property).

    use loader::sim::{run, Op, Source};
    use loader::Config;
    use proptest::prelude::*;

    fn cases() -> u32 {
        std::env::var("LOADER_EMPTY_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_000)
    }

    /// Host events, with empty pages that repeat the cursor when `stall_empty`.
    fn event(stall_empty: bool) -> impl Strategy<Value = Op> {
        let stall_weight = u32::from(stall_empty) * 2;
        prop_oneof![
            12 => (any::<u16>(), any::<bool>()).prop_map(|(index, fresh)| Op::Deliver { index, fresh }),
            2 => any::<u16>().prop_map(|index| Op::Fail { index }),
            stall_weight => any::<u16>().prop_map(|index| Op::StallEmpty { index }),
            2 => any::<u8>().prop_map(|key| Op::Insert { key }),
            2 => any::<u16>().prop_map(|index| Op::Delete { index }),
            2 => (0u16..80, 1u16..60).prop_map(|(start, len)| Op::Window { start, len }),
            1 => (0u16..3000).prop_map(|ms| Op::Tick { ms }),
            1 => Just(Op::Retry),
            1 => any::<u8>().prop_map(|mask| Op::Hide { mask }),
        ]
    }

    /// Sources whose keys are partly filtered out: long empty stretches, sometimes all of it.
    fn filtered_source() -> impl Strategy<Value = Source> {
        (0usize..80, 1u32..8, any::<u32>())
            .prop_map(|(n, keys, mask)| Source::with_items(n, keys).with_hidden_keys(mask))
    }

    fn config() -> impl Strategy<Value = Config> {
        (1u32..6, 0u64..4, 0u32..3).prop_map(|(page_size, prefetch_distance, retries)| Config {
            page_size,
            prefetch_distance,
            max_auto_retries: retries,
            backoff_initial_ms: 50,
            backoff_max_ms: 400,
            ..Config::default()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

        /// Filtered stretches: the quiet view is the filtered source, nothing empty is held,
        /// every acquisition comes back once, and settling down terminates with the window
        /// covered (`run` checks all of it after every event).
        #[test]
        fn filtered_sources_settle(
            cfg in config(),
            src in filtered_source(),
            ops in prop::collection::vec(event(false), 0..120),
        ) {
            run(cfg, src, &ops).map_err(TestCaseError::fail)?;
        }

        /// The same with a host that sometimes answers an empty page with its read's own
        /// cursor: each is a stall, never a loop.
        #[test]
        fn repeated_cursors_on_empty_pages_never_loop(
            cfg in config(),
            src in filtered_source(),
            ops in prop::collection::vec(event(true), 0..120),
        ) {
            run(cfg, src, &ops).map_err(TestCaseError::fail)?;
        }
    }
}
