//! Empty pages and the other answer shapes a correct host can produce, on every read path
//! (finite, chain, full): an empty page whose cursor advances is progress; one whose cursor
//! does not move, without `end_of_source`, is a stall handled like a stalled page with items.
//!
//! The host scans a numbered source with a filter, as a `WHERE` clause over keyset pagination
//! does: a read looks at up to `limit` rows after its cursor and returns the ones the filter
//! keeps, so a filtered stretch answers empty pages whose cursor still moves.

use loader::loader::{Answer, Config, Effect, Loader};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// A source of `len` rows numbered from 0, with `hidden` filtered out. A cursor is the index
/// of the next row to scan, as 8 big-endian bytes; empty is the source's start.
struct Host {
    loader: Loader,
    len: u64,
    hidden: Range<u64>,
    /// Outstanding reads, oldest first: (read id, cursor, limit, kind).
    reads: Vec<(u64, Vec<u8>, u32, loader::loader::Kind)>,
    /// Acquisitions the loader owns, with the rows each holds.
    held: HashMap<u64, Vec<u64>>,
    next_acq: u64,
    /// Every read issued: (kind, cursor).
    issued: Vec<(loader::loader::Kind, u64)>,
    released: u64,
    /// Reads the loader hinted it no longer needs.
    cancels: Vec<u64>,
}

fn at(cursor: &[u8]) -> u64 {
    if cursor.is_empty() {
        0
    } else {
        u64::from_be_bytes(cursor.try_into().expect("8-byte cursor"))
    }
}

impl Host {
    fn new(len: u64, hidden: Range<u64>, window: (u64, u64)) -> Host {
        let config = Config {
            page_size: 50,
            prefetch_distance: 0,
            ..Config::default()
        };
        let mut h = Host {
            loader: Loader::new(config).expect("valid config"),
            len,
            hidden,
            reads: Vec::new(),
            held: HashMap::new(),
            next_acq: 1,
            issued: Vec::new(),
            released: 0,
            cancels: Vec::new(),
        };
        h.loader.set_window(window.0, window.1).expect("window");
        h.collect();
        h
    }

    fn collect(&mut self) {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(r) => {
                    self.issued.push((r.kind, at(&r.cursor)));
                    self.reads
                        .push((r.read_id, r.cursor.to_vec(), r.limit, r.kind));
                }
                Effect::Release { acquisition } => {
                    assert!(
                        self.held.remove(&acquisition).is_some(),
                        "acquisition {acquisition} released twice or never accepted"
                    );
                    self.released += 1;
                }
                Effect::Cancel { read_id } => self.cancels.push(read_id),
                Effect::Changed => {}
            }
        }
    }

    /// The filtered query: scan up to `limit` rows after `cursor`.
    fn scan(&self, cursor: &[u8], limit: u32) -> (Vec<u64>, u64, bool) {
        let from = at(cursor);
        let to = (from + u64::from(limit)).min(self.len);
        let rows = (from..to).filter(|r| !self.hidden.contains(r)).collect();
        (rows, to, to == self.len)
    }

    /// Answers the oldest outstanding read truthfully.
    fn answer(&mut self) -> Answer {
        let (read_id, cursor, limit, _) = self.reads.remove(0);
        let (rows, next, end) = self.scan(&cursor, limit);
        self.settle_with(read_id, rows, &next.to_be_bytes(), end)
    }

    /// Answers the oldest outstanding read with an empty page that repeats its cursor.
    fn answer_stalled_empty(&mut self) -> Answer {
        let (read_id, cursor, _, _) = self.reads.remove(0);
        self.settle_with(read_id, Vec::new(), &cursor, false)
    }

    fn settle_with(&mut self, read_id: u64, rows: Vec<u64>, next: &[u8], end: bool) -> Answer {
        let acq = self.next_acq;
        self.next_acq += 1;
        let n = rows.len() as u32;
        self.held.insert(acq, rows);
        let answer = self
            .loader
            .settle(read_id, acq, n, next, end)
            .expect("accepted");
        self.collect();
        answer
    }

    /// Answers every read truthfully; returns how many were answered. Panics past `cap`.
    fn answer_all(&mut self, cap: usize) -> usize {
        let mut n = 0;
        while !self.reads.is_empty() {
            self.answer();
            n += 1;
            assert!(n <= cap, "more than {cap} reads: {:?}", self.issued);
        }
        n
    }

    fn view(&self) -> Vec<u64> {
        self.loader
            .pages()
            .flat_map(|p| self.held[&p.acquisition].iter().copied())
            .collect()
    }

    fn visible(&self, n: usize) -> Vec<u64> {
        (0..self.len)
            .filter(|r| !self.hidden.contains(r))
            .take(n)
            .collect()
    }

    /// The view is the source's visible rows from the start, at least `rows` of them (or all
    /// there are), and every held acquisition is in the view.
    fn check_quiet(&self, rows: usize) {
        self.check_view(rows);
        let shown: HashSet<u64> = self.loader.pages().map(|p| p.acquisition).collect();
        let held: HashSet<u64> = self.held.keys().copied().collect();
        assert_eq!(shown, held, "acquisitions held that no page shows");
    }

    /// [`Host::check_quiet`] after an own failure: the ledger keeps the failed-over finite
    /// requests of the same epoch settled until a later epoch retires them, so only empty
    /// pages are checked for (none may be held).
    fn check_quiet_after_failure(&self, rows: usize) {
        self.check_view(rows);
        assert!(
            self.held.values().all(|rows| !rows.is_empty()),
            "an empty page's acquisition is held"
        );
    }

    fn check_view(&self, rows: usize) {
        assert!(self.loader.ledger().is_quiescent(), "not quiescent");
        assert!(!self.loader.revalidating());
        let view = self.view();
        assert_eq!(view, self.visible(view.len()));
        assert!(view.len() >= rows.min(self.visible(usize::MAX).len()));
        let (start, end) = self.loader.covered();
        assert_eq!((end - start) as usize, view.len());
    }
}

/// The reads issued since `from`, as cursors.
fn cursors(h: &Host, from: usize) -> Vec<u64> {
    h.issued[from..].iter().map(|&(_, c)| c).collect()
}

#[test]
fn finite_reads_cross_a_filtered_stretch() {
    // 300 rows, rows 100..200 filtered, window [0, 150): 0, 50, then two empty pages that
    // move the cursor, then 200..250.
    let mut h = Host::new(300, 100..200, (0, 150));
    let n = h.answer_all(20);
    assert_eq!(n, 5);
    assert_eq!(cursors(&h, 0), vec![0, 50, 100, 150, 200]);
    h.check_quiet(150);
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
    let mut h = Host::new(300, 100..200, (0, 100));
    h.answer_all(10);
    h.check_quiet(100);
    let before = h.issued.len();
    h.loader.set_window(0, 150).expect("window");
    h.collect();
    h.answer_all(10);
    assert_eq!(cursors(&h, before), vec![100, 150, 200]);
    h.check_quiet(150);
    // Grow again: it continues from the last page's end, not from the filtered stretch.
    let before = h.issued.len();
    h.loader.set_window(0, 200).expect("window");
    h.collect();
    h.answer_all(10);
    assert_eq!(cursors(&h, before), vec![250]);
    h.check_quiet(200);
}

#[test]
fn a_repair_chain_crosses_a_filtered_stretch() {
    let mut h = Host::new(300, 100..200, (0, 150));
    h.answer_all(20);
    let before = h.issued.len();
    h.loader.invalidate().expect("invalidate");
    h.collect();
    assert_eq!(h.reads[0].3, loader::loader::Kind::Chain);
    h.answer_all(20);
    assert_eq!(cursors(&h, before), vec![0, 50, 100, 150, 200]);
    h.check_quiet(150);
    assert_eq!(h.held.len(), 3);
}

#[test]
fn a_full_read_crosses_a_filtered_stretch() {
    let mut h = Host::new(300, 100..200, (0, 150));
    // The first read fails: an own failure, retried as a full read.
    let (read_id, ..) = h.reads.remove(0);
    assert_eq!(
        h.loader.fail(read_id, 1).expect("accepted"),
        Answer::Current
    );
    h.collect();
    assert!(h.loader.retry().expect("retry"));
    h.collect();
    assert_eq!(h.reads[0].3, loader::loader::Kind::Full);
    let before = h.issued.len() - 1;
    h.answer_all(20);
    assert_eq!(cursors(&h, before), vec![0, 50, 100, 150, 200]);
    h.check_quiet_after_failure(150);
}

#[test]
fn a_repeated_cursor_on_an_empty_finite_page_is_a_stall() {
    let mut h = Host::new(300, 100..200, (0, 150));
    h.answer();
    h.answer();
    assert_eq!(h.reads[0].1, 100u64.to_be_bytes());
    assert_eq!(h.answer_stalled_empty(), Answer::CursorStalled);
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
    h.answer_all(20);
    h.check_quiet_after_failure(150);
}

#[test]
fn a_repeated_cursor_on_an_empty_chain_page_escalates_to_a_full_read() {
    let mut h = Host::new(300, 100..200, (0, 150));
    h.answer_all(20);
    h.loader.invalidate().expect("invalidate");
    h.collect();
    h.answer();
    h.answer();
    assert_eq!(h.reads[0].3, loader::loader::Kind::Chain);
    assert_eq!(h.answer_stalled_empty(), Answer::CursorStalled);
    assert_eq!(h.reads.len(), 1);
    assert_eq!(h.reads[0].3, loader::loader::Kind::Full, "escalated");
    h.answer_all(20);
    h.check_quiet(150);
    assert_eq!(h.loader.stats().cursor_stalls, 1);
}

#[test]
fn a_repeated_cursor_on_an_empty_full_page_is_an_own_failure() {
    let mut h = Host::new(300, 100..200, (0, 150));
    let (read_id, ..) = h.reads.remove(0);
    h.loader.fail(read_id, 1).expect("accepted");
    h.collect();
    h.loader.retry().expect("retry");
    h.collect();
    h.answer();
    assert_eq!(h.reads[0].3, loader::loader::Kind::Full);
    assert_eq!(h.answer_stalled_empty(), Answer::CursorStalled);
    assert!(h.reads.is_empty());
    assert_eq!(h.loader.ledger().failure(), loader::ledger::Failure::Own);
    assert!(h.loader.next_deadline().is_some());
    assert!(h.held.values().all(|rows| !rows.is_empty()));
    assert!(h.loader.retry().expect("retry"));
    h.collect();
    h.answer_all(20);
    h.check_quiet_after_failure(150);
}

#[test]
fn an_empty_answer_to_a_cancelled_read_is_stale_whatever_its_cursor() {
    // A host that aborts a read it was told to let go answers it with an empty page that
    // does not move: that is letting go, not a stall, and costs no failure and no re-read.
    let mut h = Host::new(300, 0..0, (0, 100));
    h.answer();
    let finite = h.reads[0].0;
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
        .position(|r| r.0 == finite)
        .expect("still outstanding");
    let (read_id, cursor, _, _) = h.reads.remove(at);
    let answer = h.settle_with(read_id, Vec::new(), &cursor, false);
    assert_eq!(answer, Answer::Stale);
    assert_eq!(h.loader.ledger().failure(), loader::ledger::Failure::None);
    assert_eq!(h.loader.ledger().debt(), loader::ledger::Debt::Bounded);
    assert_eq!(h.loader.stats().cursor_stalls, 0);
    h.answer_all(20);
    h.check_quiet(100);
}

#[test]
fn without_heard_hints_an_unmoved_empty_answer_is_a_stall_even_when_superseded() {
    // A host that does not hear cancel hints (a C host without a `cancel` callback) was never
    // told to let the read go: the same answer as above is a stall, recorded as the
    // superseded request's failure.
    let mut h = Host::new(300, 0..0, (0, 100));
    h.loader.set_cancel_hints_heard(false);
    h.answer();
    let finite = h.reads[0].0;
    h.loader.invalidate().expect("invalidate");
    h.collect();
    let at = h
        .reads
        .iter()
        .position(|r| r.0 == finite)
        .expect("still outstanding");
    let (read_id, cursor, _, _) = h.reads.remove(at);
    let answer = h.settle_with(read_id, Vec::new(), &cursor, false);
    assert_eq!(answer, Answer::CursorStalled);
    assert_eq!(h.loader.stats().cursor_stalls, 1);
    assert_eq!(h.loader.stats().failed_stale, 1);
    h.answer_all(40);
}

#[test]
fn stalls_never_loop() {
    // A host that always repeats the cursor with an empty page: every path ends in a
    // recorded failure, and the number of reads is bounded by the retries, not unbounded.
    let mut h = Host::new(300, 0..0, (0, 150));
    let mut answered = 0;
    for _ in 0..50 {
        while !h.reads.is_empty() {
            assert_eq!(h.answer_stalled_empty(), Answer::CursorStalled);
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
    let mut h = Host::new(0, 0..0, (0, 150));
    assert_eq!(h.answer_all(5), 1);
    h.check_quiet(0);
    assert!(h.loader.end_of_source());
    assert!(h.held.is_empty());
}

#[test]
fn an_empty_first_page_that_moves_the_cursor_is_progress() {
    let mut h = Host::new(300, 0..120, (0, 100));
    h.answer_all(10);
    assert_eq!(cursors(&h, 0), vec![0, 50, 100, 150, 200]);
    // 30 + 50 + 50 rows: the first page with rows is at 120, the window's 100 are covered.
    h.check_quiet(100);
    assert_eq!(h.loader.covered(), (0, 130));
    assert_eq!(h.released, 2);
}

#[test]
fn an_empty_last_page_with_the_end_flag() {
    // 100 rows: the second read does not notice the end; the third finds nothing and says
    // the source ended.
    let mut h = Host::new(100, 0..0, (0, 150));
    h.answer();
    let (read_id, cursor, limit, _) = h.reads.remove(0);
    let (rows, next, _) = h.scan(&cursor, limit);
    h.settle_with(read_id, rows, &next.to_be_bytes(), false);
    let (read_id, cursor, ..) = h.reads.remove(0);
    assert_eq!(at(&cursor), 100);
    let answer = h.settle_with(read_id, Vec::new(), &cursor, true);
    assert_eq!(answer, Answer::Current);
    assert!(h.reads.is_empty());
    assert!(h.loader.end_of_source());
    h.check_quiet(100);
}

#[test]
fn a_short_page_without_the_end_flag_is_read_on() {
    // A host that returns fewer rows than asked (a size cap of its own) and no end flag.
    let mut h = Host::new(300, 0..0, (0, 150));
    let mut n = 0;
    while let Some((read_id, cursor, _, _)) = (!h.reads.is_empty()).then(|| h.reads.remove(0)) {
        let (rows, _, _) = h.scan(&cursor, 20);
        let next = at(&cursor) + rows.len() as u64;
        h.settle_with(read_id, rows, &next.to_be_bytes(), false);
        n += 1;
        assert!(n < 50);
    }
    assert_eq!(n, 8, "20 rows at a time up to 150");
    h.check_quiet(160);
}

#[test]
fn the_end_flag_early_stops_the_reads_and_keeps_every_item() {
    // The host says the source ended on the second page of a window that wanted three.
    let mut h = Host::new(300, 0..0, (0, 150));
    h.answer();
    let (read_id, cursor, limit, _) = h.reads.remove(0);
    let (rows, next, _) = h.scan(&cursor, limit);
    h.settle_with(read_id, rows, &next.to_be_bytes(), true);
    assert!(h.reads.is_empty(), "no read after the end");
    assert!(h.loader.end_of_source());
    h.check_quiet(100);
    // A repair chain that meets the early end also stops there, and commits what it read.
    h.loader.invalidate().expect("invalidate");
    h.collect();
    let (read_id, cursor, limit, _) = h.reads.remove(0);
    let (rows, next, _) = h.scan(&cursor, limit);
    h.settle_with(read_id, rows, &next.to_be_bytes(), true);
    assert!(h.reads.is_empty());
    h.check_quiet(50);
    assert!(h.loader.end_of_source());
}

#[cfg(feature = "testing")]
mod simulated {
    //! The simulated host with filtered stretches and a host that repeats cursors on empty
    //! pages, in property runs (`LOADER_EMPTY_CASES`, default 1,000 per property).

    use loader::loader::Config;
    use loader::sim::{run, Op, Source};
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
