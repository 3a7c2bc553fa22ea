//! Host bugs cost a bounded number of reads: a source that repeats the cursor it was asked
//! with (with items) stalls a bounded number of times and then waits; a cursor whose item is
//! gone for good (a page-token API's 404) is retried as that page once, then through a full
//! read, which reads fresh cursors and recovers.

use loader::{Config, Direction, Effect, Loader, Read};
use std::collections::{BTreeSet, HashSet, VecDeque};

fn cur(id: u64) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

fn at(cursor: &[u8]) -> u64 {
    match cursor.len() {
        0 => 0,
        _ => u64::from_be_bytes(cursor.try_into().expect("an 8-byte cursor")),
    }
}

/// Items are ids; a cursor is the id of the next item (empty: the start). The host may be
/// told to misbehave at one cursor.
struct Host {
    loader: Loader,
    items: BTreeSet<u64>,
    pending: VecDeque<Read>,
    held: HashSet<u64>,
    next_acq: u64,
    reads: u64,
    now: u64,
    /// A forward read at this cursor answers its items with the cursor it was given.
    repeat_at: Option<u64>,
    /// A read at this cursor fails (its item is gone, and the API says 404).
    gone: Option<u64>,
}

impl Host {
    fn new(items: u64) -> Host {
        let config = Config {
            page_size: 50,
            prefetch_distance: 0,
            ..Config::default()
        };
        Host {
            loader: Loader::new(config).unwrap(),
            items: (0..items).collect(),
            pending: VecDeque::new(),
            held: HashSet::new(),
            next_acq: 1,
            reads: 0,
            now: 0,
            repeat_at: None,
            gone: None,
        }
    }

    fn collect(&mut self) {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(r) => self.pending.push_back(r),
                Effect::Release { acquisition } => assert!(self.held.remove(&acquisition)),
                Effect::Cancel { .. } | Effect::Changed => {}
            }
        }
    }

    fn answer(&mut self, read: Read) {
        self.reads += 1;
        let c = at(&read.cursor);
        if self.gone == Some(c) && !read.cursor.is_empty() {
            self.loader.fail(read.read_id, 404).unwrap();
            return self.collect();
        }
        let limit = read.limit as usize;
        let (ids, next, end): (Vec<u64>, Vec<u8>, bool) = match read.direction {
            Direction::Forward => {
                let ids: Vec<u64> = self.items.range(c..).take(limit).copied().collect();
                let after = ids.last().map_or(c, |l| l + 1);
                let next = self.items.range(after..).next().copied();
                let end = next.is_none();
                let next = if self.repeat_at == Some(c) {
                    read.cursor.to_vec()
                } else {
                    cur(next.unwrap_or(after))
                };
                (ids, next, end)
            }
            Direction::Backward => {
                let mut ids: Vec<u64> = self.items.range(..c).rev().take(limit).copied().collect();
                ids.reverse();
                let first = ids.first().copied();
                let end = first.is_none_or(|f| self.items.range(..f).next().is_none());
                (ids, if end { Vec::new() } else { cur(first.unwrap()) }, end)
            }
        };
        let acq = self.next_acq;
        self.next_acq += 1;
        self.held.insert(acq);
        self.loader
            .settle(read.read_id, acq, ids.len() as u32, &next, end)
            .unwrap();
        self.collect();
    }

    /// Answers every read, and lets time run to each deadline, until the loader waits for
    /// nothing, or `max_reads` reads were made.
    fn run(&mut self, max_reads: u64) {
        while self.reads < max_reads {
            if let Some(read) = self.pending.pop_front() {
                self.answer(read);
                continue;
            }
            match self.loader.next_deadline() {
                Some(d) => {
                    self.now = self.now.max(d);
                    self.loader.tick(self.now).unwrap();
                    self.collect();
                }
                None => return,
            }
        }
    }
}

#[test]
fn a_source_that_repeats_its_cursor_costs_a_bounded_number_of_reads_then_waits() {
    let mut h = Host::new(1_000);
    h.repeat_at = Some(50);
    h.loader.set_window(0, 200).unwrap();
    h.collect();
    h.run(10_000);
    let retries = u64::from(Config::default().max_auto_retries);
    let stalls = h.loader.stats().cursor_stalls;
    // The first stall and one per automatic retry; each retry reads from the start to the
    // stall (two pages): then it waits, with nothing armed.
    assert_eq!(stalls, 1 + retries, "{} reads", h.reads);
    assert!(h.reads <= 2 + 2 * retries, "{} reads", h.reads);
    assert!(h.pending.is_empty());
    assert_eq!(h.loader.next_deadline(), None);
    // The host fixes its source and retries: the view reads on.
    h.repeat_at = None;
    assert!(h.loader.retry().unwrap());
    h.collect();
    h.run(10_000);
    assert_eq!(h.loader.covered(), (0, 200));
}

#[test]
fn a_cursor_gone_for_good_is_retried_as_its_page_once_then_by_a_full_read() {
    let mut h = Host::new(1_000);
    h.loader.set_window(0, 200).unwrap();
    h.collect();
    h.run(10_000);
    // Reading on from 200: the page after it is read with the cursor 200, whose item is then
    // deleted without the host being told; the API answers 404 for it for good.
    h.loader.set_window(150, 200).unwrap();
    h.collect();
    h.items.remove(&200);
    h.gone = Some(200);
    let before = h.reads;
    h.run(10_000);
    // The page again, once; then a full read from the start: its pages end on ids that
    // exist, so it never asks for 200 again.
    let (start, end) = h.loader.covered();
    assert!(start <= 150 && end >= 350, "covered {start}..{end}");
    assert_eq!(h.loader.stats().retries_page, 1);
    assert!(h.reads - before <= 2 + 8, "{} reads", h.reads - before);
    assert!(h.pending.is_empty());
}
