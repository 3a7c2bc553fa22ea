//! Anchored recovery at depth: what a repair, a retry, a jump and a scroll back read, over a
//! numbered source far too long to read from the top.

use super::*;
use std::collections::HashMap;

/// A numbered source of `len` items (item i is i); a cursor is the 8-byte index of the next
/// item. Answers reads in both directions and keeps what the loader holds.
struct Numbered {
    loader: Loader,
    len: u64,
    reads: Vec<Read>,
    held: HashMap<u64, (u64, u32)>,
    next_acq: u64,
    max_held: usize,
}

fn at(c: &[u8]) -> u64 {
    if c.is_empty() {
        0
    } else {
        u64::from_be_bytes(c.try_into().unwrap())
    }
}

fn cursor(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

impl Numbered {
    fn new(config: Config, len: u64) -> Numbered {
        Numbered {
            loader: Loader::new(config).unwrap(),
            len,
            reads: Vec::new(),
            held: HashMap::new(),
            next_acq: 1,
            max_held: 0,
        }
    }

    fn collect(&mut self) {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(r) => self.reads.push(r),
                Effect::Release { acquisition } => {
                    assert!(self.held.remove(&acquisition).is_some(), "released twice");
                }
                Effect::Cancel { .. } | Effect::Changed => {}
            }
        }
        self.max_held = self.max_held.max(self.held.len());
    }

    fn answer(&mut self, r: &Read) -> (u64, u32, u64, bool) {
        let c = at(&r.cursor);
        match r.direction {
            Direction::Forward => {
                let end = (c + u64::from(r.limit)).min(self.len);
                (c, (end - c) as u32, end, end == self.len)
            }
            Direction::Backward => {
                let from = c.saturating_sub(u64::from(r.limit));
                (from, (c - from) as u32, from, from == 0)
            }
        }
    }

    /// Answers every read, oldest first, until none is outstanding.
    fn drain(&mut self) {
        self.drain_counting(false);
    }

    /// The same; with `counted`, each answer says how many items come before its first.
    fn drain_counting(&mut self, counted: bool) {
        self.collect();
        while !self.reads.is_empty() {
            let r = self.reads.remove(0);
            let (first, n, next, end) = self.answer(&r);
            let acq = self.next_acq;
            self.next_acq += 1;
            let next = if next == 0 {
                Vec::new()
            } else {
                cursor(next).to_vec()
            };
            let before = counted.then_some(first);
            self.loader
                .settle_counted(r.read_id, acq, n, &next, end, before)
                .unwrap();
            if n > 0 {
                self.held.insert(acq, (first, n));
            }
            self.collect();
        }
    }

    /// The view's items, checked against the source: consecutive, and at their positions
    /// (this source never changes, so positions are the source's own).
    fn check_view(&self) {
        let mut expect = None;
        for p in self.loader.pages() {
            let (first, n) = self.held[&p.acquisition];
            assert_eq!(n, p.count);
            assert_eq!(first, p.start, "page position is the item's index");
            if let Some(e) = expect {
                assert_eq!(first, e, "no gap, no duplicate");
            }
            expect = Some(first + u64::from(n));
        }
    }

    fn items_read(&self) -> u64 {
        self.loader.stats().items_read
    }
}

fn deep() -> Config {
    Config {
        page_size: 50,
        prefetch_distance: 50,
        ..Config::default()
    }
}

/// A loader positioned at `depth` by a jump, with the window there loaded.
fn at_depth(config: Config, depth: u64) -> Numbered {
    let mut h = Numbered::new(config, 2_000_000);
    h.loader.jump(&cursor(depth), depth).unwrap();
    h.loader.set_window(depth, 100).unwrap();
    h.drain();
    h.check_view();
    h
}

/// The most any recovery may read: window + 2·prefetch + 2·page_size.
const BOUND: u64 = 100 + 2 * 50 + 2 * 50;

#[test]
fn an_invalidation_at_any_depth_reads_only_around_the_window() {
    for depth in [1_000, 100_000, 1_000_000] {
        let mut h = at_depth(deep(), depth);
        let before = h.items_read();
        h.loader.invalidate().unwrap();
        h.drain();
        let read = h.items_read() - before;
        assert!(read <= BOUND, "depth {depth}: {read} items read");
        h.check_view();
        let (s, e) = h.loader.covered();
        assert!(s <= depth - 50 && e >= depth + 150, "covered {s}..{e}");
        assert_eq!(h.loader.window(), (depth, 100));
    }
}

#[test]
fn a_failed_repair_retries_from_the_anchor() {
    for depth in [1_000, 1_000_000] {
        let mut h = at_depth(deep(), depth);
        let before = h.items_read();
        h.loader.invalidate().unwrap();
        h.collect();
        let r = h.reads.remove(0);
        h.loader.fail(r.read_id, 1).unwrap();
        assert!(h.loader.retry().unwrap());
        h.collect();
        // Nothing changed since: the retry is the repair again (a chain), from its failed read.
        assert_eq!(h.reads[0].kind, Kind::Chain);
        assert_eq!(
            at(&h.reads[0].cursor),
            depth,
            "the retry starts at the anchor"
        );
        h.drain();
        let read = h.items_read() - before;
        assert!(read <= BOUND, "depth {depth}: {read} items read");
        h.check_view();
    }
}

#[test]
fn a_jump_reads_the_window_and_prefetch_whatever_the_distance() {
    let mut h = at_depth(deep(), 1_000_000);
    let before = h.items_read();
    h.loader.jump(&cursor(10), 10).unwrap();
    assert_eq!(h.loader.window(), (10, 100));
    h.drain();
    assert!(h.items_read() - before <= BOUND);
    h.check_view();
    assert_eq!(h.loader.covered(), (0, 160));
    assert!(h.loader.start_of_source());
}

#[test]
fn scrolling_back_under_max_pages_reads_each_page_once_and_holds_the_bound() {
    let config = Config {
        max_pages: 8,
        ..deep()
    };
    let mut h = at_depth(config, 100_000);
    let before = h.items_read();
    let mut start = 100_000;
    while start > 0 {
        start -= 100;
        h.loader.set_window(start, 100).unwrap();
        h.drain();
        h.check_view();
        assert!(h.loader.page_count() <= 8);
    }
    let read = h.items_read() - before;
    // Each item scrolled over is read once (the window plus prefetch it starts with are
    // already held).
    assert!(read <= 100_000, "{read} items read scrolling back 100,000");
    assert!(h.max_held <= 9, "at most {} acquisitions held", h.max_held);
    assert!(h.loader.start_of_source());
}

impl Numbered {
    /// The source item at position `pos` of the view.
    fn item_at(&self, pos: u64) -> u64 {
        let p = self
            .loader
            .pages()
            .find(|p| p.start <= pos && pos < p.start + u64::from(p.count))
            .expect("a held page holds the position");
        self.held[&p.acquisition].0 + (pos - p.start)
    }
}

#[test]
fn a_view_numbered_too_low_is_renumbered_with_the_window() {
    // The host numbered item 1,000 as 10 (it did not know the count above). The prefetch
    // before the window reads 50 items back, which do not fit below 10: the view and the
    // window move up together, so the window still starts at item 1,000.
    let mut h = Numbered::new(deep(), 5_000);
    h.loader.jump(&cursor(1_000), 10).unwrap();
    h.loader.set_window(10, 100).unwrap();
    h.drain();
    assert_eq!(h.loader.stats().renumbered, 1);
    let (ws, _) = h.loader.window();
    assert_eq!(ws, 50);
    assert_eq!(h.item_at(ws), 1_000, "the window stays on the same item");
    assert!(h.items_read() <= BOUND);
    // Scrolling up to the top reads back to the source's start, where the numbers become
    // the source's own; the window again stays on its item.
    while h.loader.window().0 > 0 && !h.loader.start_of_source() {
        let ws = h.loader.window().0.saturating_sub(100);
        h.loader.set_window(ws, 100).unwrap();
        h.drain();
        // The window's first item is held, whatever the numbering did.
        h.item_at(h.loader.window().0);
    }
    h.loader.set_window(0, 100).unwrap();
    h.drain();
    assert!(h.loader.start_of_source());
    h.check_view();
    assert_eq!(h.item_at(0), 0);
}

#[test]
fn a_host_that_counts_makes_the_positions_true_without_reading_to_the_start() {
    // Numbered 10 by a jump, item 1,000 is renumbered to 1,000 by the first counted answer
    // (finite reads), and a repair keeps the count (chain steps).
    let mut h = Numbered::new(deep(), 5_000);
    h.loader.jump(&cursor(1_000), 10).unwrap();
    h.loader.set_window(10, 100).unwrap();
    h.drain_counting(true);
    assert_eq!(h.loader.window().0, 1_000);
    h.check_view();
    assert!(!h.loader.start_of_source());
    assert!(h.items_read() <= BOUND);
    h.loader.jump(&cursor(3_000), 7).unwrap();
    h.drain_counting(true);
    assert_eq!(h.loader.window().0, 3_000);
    h.check_view();
}

#[test]
fn a_retry_resumes_at_the_failed_step_keeping_the_steps_that_succeeded() {
    let mut h = at_depth(deep(), 100_000);
    let before = h.items_read();
    h.loader.invalidate().unwrap();
    h.collect();
    // Two steps succeed, the third fails.
    for _ in 0..2 {
        let r = h.reads.remove(0);
        let (first, n, next, end) = h.answer(&r);
        let acq = h.next_acq;
        h.next_acq += 1;
        h.loader
            .settle(r.read_id, acq, n, &cursor(next), end)
            .unwrap();
        h.held.insert(acq, (first, n));
        h.collect();
    }
    let failed = h.reads.remove(0);
    h.loader.fail(failed.read_id, 1).unwrap();
    h.collect();
    assert!(h.loader.retry().unwrap());
    h.collect();
    assert_eq!(
        h.reads[0].cursor, failed.cursor,
        "it resumes at the failed read"
    );
    // Nothing changed since: the repair again (a chain), not a full read.
    assert_eq!(h.reads[0].kind, Kind::Chain);
    h.drain();
    assert_eq!(h.loader.stats().resumed, 1);
    // Nothing read twice: the same items as a repair without the failure.
    let read = h.items_read() - before;
    assert!(read <= BOUND, "{read} items read");
    h.check_view();
    assert!(!h.loader.revalidating());
    h.loader.close();
    h.collect();
    assert!(h.held.is_empty(), "every acquisition released once");
}

#[test]
fn a_retry_after_an_invalidation_resumes_and_a_repair_follows() {
    let mut h = at_depth(deep(), 100_000);
    h.loader.invalidate().unwrap();
    h.collect();
    let r = h.reads.remove(0);
    let (first, n, next, end) = h.answer(&r);
    h.loader
        .settle(r.read_id, 900, n, &cursor(next), end)
        .unwrap();
    h.held.insert(900, (first, n));
    h.collect();
    let failed = h.reads.remove(0);
    h.loader.fail(failed.read_id, 1).unwrap();
    h.loader.invalidate().unwrap();
    h.collect();
    assert!(h.loader.retry().unwrap());
    h.collect();
    assert_eq!(
        h.reads[0].cursor, failed.cursor,
        "it resumes at the failed read"
    );
    let chains = h.loader.stats().issued[Kind::Chain as usize];
    h.drain();
    assert_eq!(h.loader.stats().resumed, 1);
    // Its first page was read before the second invalidation: a repair followed the commit.
    assert!(h.loader.stats().issued[Kind::Chain as usize] > chains);
    assert!(
        !h.held.contains_key(&900),
        "the old page was replaced and released"
    );
    assert!(!h.loader.revalidating());
    h.check_view();
}

#[test]
fn a_jump_past_the_largest_position_is_refused() {
    let mut l = Loader::new(deep()).unwrap();
    assert_eq!(
        l.jump(&cursor(5), MAX_POSITION + 1),
        Err(LoaderError::WindowOverflow)
    );
    assert_eq!(l.window(), (0, 0));
    assert!(l.take_effects().is_empty());
    assert_eq!(l.jump(&cursor(5), MAX_POSITION), Ok(()));
}

/// A source of sorted values a host may insert into; a cursor is the value of the last item
/// read (8 bytes), the empty cursor the source's start. Its answers are computed when given.
struct Values {
    loader: Loader,
    values: Vec<u64>,
    held: HashMap<u64, Vec<u64>>,
    reads: Vec<Read>,
    next_acq: u64,
}

impl Values {
    fn collect(&mut self) {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(r) => self.reads.push(r),
                Effect::Release { acquisition } => {
                    self.held.remove(&acquisition).expect("held");
                }
                Effect::Cancel { .. } | Effect::Changed => {}
            }
        }
    }

    /// Answers the oldest read (forward reads only), with the count of the items before its
    /// first one if `counted`.
    fn answer(&mut self, counted: bool) {
        let r = self.reads.remove(0);
        assert_eq!(r.direction, Direction::Forward);
        let from = match r.cursor.len() {
            0 => 0,
            _ => {
                let after = u64::from_be_bytes(r.cursor[..].try_into().unwrap());
                self.values.partition_point(|&v| v <= after)
            }
        };
        let to = (from + r.limit as usize).min(self.values.len());
        let items = self.values[from..to].to_vec();
        let next = match to {
            0 => Vec::new(),
            _ => self.values[to - 1].to_be_bytes().to_vec(),
        };
        let acq = self.next_acq;
        self.next_acq += 1;
        let before = counted.then_some(from as u64);
        let end = to == self.values.len();
        self.loader
            .settle_counted(r.read_id, acq, items.len() as u32, &next, end, before)
            .unwrap();
        self.held.insert(acq, items);
        self.collect();
    }

    /// The items the view shows, in order, with their positions.
    fn shown(&self) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        for p in self.loader.pages() {
            for (k, &x) in self.held[&p.acquisition].iter().enumerate() {
                v.push((p.start + k as u64, x));
            }
        }
        v
    }
}

#[test]
fn a_count_that_contradicts_a_view_holding_the_start_is_ignored() {
    let config = Config {
        page_size: 4,
        prefetch_distance: 0,
        ..Config::default()
    };
    let mut h = Values {
        loader: Loader::new(config).unwrap(),
        values: (0..10).map(|i| i * 10).collect(),
        held: HashMap::new(),
        reads: Vec::new(),
        next_acq: 1,
    };
    h.loader.set_window(0, 8).unwrap();
    h.loader.invalidate().unwrap();
    h.collect();
    // The window's first page read, superseded, then the full read.
    assert_eq!(h.reads.len(), 2, "{:?}", h.reads);
    assert_eq!(h.reads[1].kind, Kind::Full);
    h.answer(false);
    h.answer(false);
    // A row between items 0 and 1, announced while the full read's second read is out;
    // that read's answer comes with the true count before it (5).
    h.values.insert(1, 5);
    h.loader.invalidate().unwrap();
    h.collect();
    h.answer(true);
    while !h.reads.is_empty() {
        h.answer(false);
    }
    assert!(h.loader.ledger().is_quiescent());
    assert!(h.loader.start_of_source());
    let shown = h.shown();
    assert_eq!(shown[0], (0, 0), "the source's start is item 0: {shown:?}");
    let truth: Vec<(u64, u64)> = (0..).zip(h.values.iter().take(8).copied()).collect();
    assert_eq!(shown[..8], truth[..]);
}
