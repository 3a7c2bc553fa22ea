//! Empty pages read backward: a filtered stretch before the window, crossed by finite reads,
//! chain steps and full reads, each with an empty page that moves its cursor (progress) and one
//! that repeats it (a stall), and the backward answer shapes a correct host can produce.

mod common;

use common::{at, config, cur, FilteredHost};
use loader::ledger::Failure;
use loader::{Answer, Direction, Kind};

/// 1,000 rows with 300..600 filtered out (the visible index of row 700 is 400): a jump to row
/// 700 with no prefetch, loaded, then the window moved back over the stretch.
fn jumped_past_the_stretch() -> FilteredHost {
    let mut h = FilteredHost::new(1000, 300..600, config(0));
    h.jump(700, 400);
    h.set_window(400, 100);
    h.drain(50);
    h.check();
    assert_eq!(h.loader.covered(), (400, 500));
    h
}

/// 1,000 rows with 300..600 filtered out and a prefetch of 100, loaded from the start; then a
/// jump to row 600 (just after the stretch): its repair reads its prefetch backward across it.
fn repair_after_the_stretch() -> FilteredHost {
    let mut h = FilteredHost::new(1000, 300..600, config(100));
    h.set_window(0, 50);
    h.drain(100);
    h.check();
    h.log.clear();
    h.jump(600, 300);
    h.set_window(300, 100);
    h
}

/// Fails the repair's first read twice and retries: the first retry is the repair again
/// (nothing changed since its failure), which resumes at that read; failing again there, the
/// retry goes through the debt lattice, and the repair becomes a full read.
fn as_a_full_read(h: &mut FilteredHost) {
    for kind in [Kind::Chain, Kind::Full] {
        h.fail_one();
        if h.reads.is_empty() {
            assert!(h.loader.retry().expect("retry"));
            h.collect();
        }
        assert_eq!(h.reads[0].kind, kind);
    }
}

/// Answers truthfully up to the first backward read, and answers that one with an empty page
/// that repeats its cursor.
fn stall_the_first_backward_read(h: &mut FilteredHost) -> Answer {
    loop {
        assert!(!h.reads.is_empty(), "no backward read came");
        if h.reads[0].direction == Direction::Backward {
            return h.stall_one();
        }
        h.answer_one();
    }
}

/// Empty answers among `answers`.
fn empty(answers: &[(u64, u32)]) -> usize {
    answers.iter().filter(|a| a.1 == 0).count()
}

#[test]
fn backward_finite_reads_cross_a_filtered_stretch() {
    let mut h = jumped_past_the_stretch();
    h.log.clear();
    h.set_window(250, 250);
    h.drain(50);
    h.check();
    let back = h.answers_of(Kind::Finite, Direction::Backward);
    let cursors: Vec<u64> = back.iter().map(|a| a.0).collect();
    assert_eq!(
        cursors,
        vec![700, 650, 600, 550, 500, 450, 400, 350, 300],
        "each empty page's cursor is where the next read starts"
    );
    assert_eq!(empty(&back), 6);
    assert_eq!(h.released_empty, 6, "the empty pages are released at once");
    assert_eq!(
        h.loader.covered(),
        (250, 500),
        "empty pages cost no position"
    );
    // And on to the source's start.
    h.set_window(0, 500);
    h.drain(50);
    h.check();
    assert!(h.loader.start_of_source());
    assert_eq!(h.loader.covered(), (0, 500));
    assert_eq!(h.view(), h.visible_rows()[..500]);
}

#[test]
fn a_repeated_cursor_on_an_empty_backward_finite_page_is_a_stall() {
    let mut h = jumped_past_the_stretch();
    h.set_window(250, 250);
    assert_eq!(h.reads[0].kind, Kind::Finite);
    assert_eq!(h.reads[0].direction, Direction::Backward);
    assert_eq!(stall_the_first_backward_read(&mut h), Answer::CursorStalled);
    assert!(h.reads.is_empty(), "the stalled read was re-issued at once");
    assert_eq!(h.loader.ledger().failure(), Failure::Own);
    assert_eq!(h.loader.stats().cursor_stalls, 1);
    let deadline = h.loader.next_deadline().expect("backoff armed");
    h.check_no_empty_held();
    // The backoff retry reads again, truthfully this time.
    h.loader.tick(deadline).expect("tick");
    h.collect();
    h.drain_to(100, 250, 500);
}

#[test]
fn backward_chain_steps_cross_a_filtered_stretch() {
    let mut h = repair_after_the_stretch();
    h.drain(100);
    h.check();
    let back = h.answers_of(Kind::Chain, Direction::Backward);
    assert!(
        empty(&back) >= 6,
        "the prefetch before the anchor crossed the stretch on empty steps: {back:?}"
    );
    // 300 rows filtered in 50-row scans: the steps cross the stretch one scan at a time.
    let cursors: Vec<u64> = back.iter().map(|a| a.0).collect();
    assert!(cursors.windows(2).all(|w| w[1] + 50 == w[0]), "{cursors:?}");
    assert_eq!(h.loader.covered(), (200, 500));
    assert!(!h.loader.revalidating());
    assert!(h.loader.ledger().is_quiescent());
}

#[test]
fn a_repeated_cursor_on_an_empty_backward_chain_step_escalates_to_a_full_read() {
    let mut h = repair_after_the_stretch();
    assert_eq!(stall_the_first_backward_read(&mut h), Answer::CursorStalled);
    assert_eq!(h.reads.len(), 1);
    assert_eq!(h.reads[0].kind, Kind::Full, "escalated");
    assert_eq!(h.loader.stats().cursor_stalls, 1);
    h.drain(100);
    h.check();
    assert_eq!(h.loader.covered(), (200, 500));
    assert!(!h.loader.revalidating());
}

#[test]
fn a_backward_full_read_crosses_a_filtered_stretch() {
    let mut h = repair_after_the_stretch();
    as_a_full_read(&mut h);
    h.drain_to(100, 200, 500);
    let back = h.answers_of(Kind::Full, Direction::Backward);
    assert!(empty(&back) >= 6, "{back:?}");
    assert!(!h.loader.revalidating());
}

#[test]
fn a_repeated_cursor_on_an_empty_backward_full_page_is_an_own_failure() {
    let mut h = repair_after_the_stretch();
    as_a_full_read(&mut h);
    assert_eq!(stall_the_first_backward_read(&mut h), Answer::CursorStalled);
    assert!(h.reads.is_empty(), "the stalled read was re-issued at once");
    assert_eq!(h.loader.ledger().failure(), Failure::Own);
    assert!(h.loader.next_deadline().is_some());
    h.check_no_empty_held();
    assert!(h.loader.retry().expect("retry"));
    h.collect();
    h.drain_to(100, 200, 500);
}

#[test]
fn backward_reads_reach_the_start_on_an_empty_page_with_the_end_flag() {
    // 300 rows, the first 100 filtered: the backward reads from row 150 end on empty pages,
    // the last of them with the end flag; the host either moves that page's cursor to the
    // start or repeats the read's own (both say the start was reached).
    for repeat_cursor_at_the_start in [false, true] {
        let mut h = FilteredHost::new(300, 0..100, config(50));
        h.jump(150, 50);
        h.set_window(20, 50);
        let mut n = 0;
        while !h.reads.is_empty() {
            let read = h.reads.remove(0);
            let (rows, mut next, end) = h.scan(&read);
            let backward = read.direction == Direction::Backward;
            if repeat_cursor_at_the_start && backward && end && rows.is_empty() {
                next = read.cursor.to_vec();
            }
            let answer = h.settle(read, rows, &next, end);
            assert_ne!(answer, Answer::CursorStalled, "the end flag is no stall");
            n += 1;
            assert!(n < 30, "loops: {:?}", h.log);
        }
        h.check();
        assert!(h.loader.start_of_source());
        assert_eq!(h.loader.covered().0, 0);
        assert_eq!(h.view()[0], 100, "the first visible row is in the view");
        let back = h.answers_of(Kind::Chain, Direction::Backward);
        let finite_back = h.answers_of(Kind::Finite, Direction::Backward);
        assert!(
            empty(&back) + empty(&finite_back) >= 1,
            "an empty backward page was answered"
        );
    }
}

#[test]
fn an_early_start_flag_and_short_backward_pages_keep_every_item() {
    // A host whose backward pages hold 20 rows (fewer than asked, without the flag), and that
    // claims the source's start at row 200 (as a query with a lower bound would).
    let mut h = FilteredHost::new(400, 0..0, config(0));
    h.jump(300, 300);
    h.set_window(300, 50);
    h.drain(10);
    h.set_window(150, 200);
    let mut n = 0;
    let mut short = 0;
    while !h.reads.is_empty() {
        let read = h.reads.remove(0);
        if read.direction == Direction::Backward {
            let c = at(&read.cursor);
            let from = c.saturating_sub(20).max(200);
            short += 1;
            h.settle(read, (from..c).collect(), &cur(from), from == 200);
        } else {
            h.answer_read(read);
        }
        n += 1;
        assert!(n < 50, "loops: {:?}", h.log);
    }
    assert_eq!(short, 5, "20 rows at a time from 300 down to 200");
    assert!(h.loader.start_of_source());
    assert_eq!(h.view(), (200..400).collect::<Vec<_>>(), "no item lost");
    h.check_no_empty_held();
    assert!(h.reads.is_empty(), "no read before the claimed start");
}
