//! A growing log for the follow-mode tests and the follow bench: items are numbered by when
//! they were appended (ids), the oldest may be removed (rotation), and a cursor is the id of
//! the next item, 8 bytes big-endian (empty: the source's start). The host answers reads
//! from the log as it is when it answers, and counts the items it returns.

#![allow(dead_code)]

use loader::{Config, Direction, Effect, Loader, Read};
use std::collections::{HashMap, VecDeque};

pub fn cur(id: u64) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

pub fn at(cursor: &[u8]) -> u64 {
    match cursor.len() {
        0 => 0,
        _ => u64::from_be_bytes(cursor.try_into().expect("an 8-byte cursor")),
    }
}

pub struct LogHost {
    pub loader: Loader,
    /// The oldest item still in the log, and the id the next append gets.
    pub first: u64,
    pub end: u64,
    /// Reads issued and not yet answered, oldest first.
    pub pending: VecDeque<Read>,
    held: HashMap<u64, Vec<u64>>,
    next_acq: u64,
    /// Items returned by every read answered, and reads answered.
    pub items_read: u64,
    pub reads: u64,
    /// The host's clock (µs), and when each pending read was issued by it.
    pub now: u64,
    pub issued_at: HashMap<u64, u64>,
    /// Report appends as `invalidate_range(the old end's cursor, None)` instead, the way the
    /// docs led to before `appended` (a baseline).
    pub naive: bool,
}

impl LogHost {
    pub fn new(config: Config, items: u64) -> LogHost {
        LogHost {
            loader: Loader::new(config).expect("a valid config"),
            first: 0,
            end: items,
            pending: VecDeque::new(),
            held: HashMap::new(),
            next_acq: 1,
            items_read: 0,
            reads: 0,
            now: 0,
            issued_at: HashMap::new(),
            naive: false,
        }
    }

    pub fn collect(&mut self) {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(r) => {
                    self.issued_at.insert(r.read_id, self.now);
                    self.pending.push_back(r)
                }
                Effect::Release { acquisition } => {
                    self.held.remove(&acquisition).expect("released once");
                }
                // A hint: the read is still answered, and its answer is stale.
                Effect::Cancel { .. } | Effect::Changed => {}
            }
        }
    }

    /// What `read` returns from the log as it is now: the ids, the next cursor, the end flag.
    pub fn scan(&self, read: &Read) -> (Vec<u64>, Vec<u8>, bool) {
        let c = at(&read.cursor).max(self.first);
        let limit = u64::from(read.limit);
        match read.direction {
            Direction::Forward => {
                let bound = read.until.as_deref().map_or(self.end, at).min(self.end);
                let to = (c + limit).min(bound.max(c));
                ((c..to).collect(), cur(to), to == self.end)
            }
            Direction::Backward => {
                let c = c.min(self.end);
                let from = c.saturating_sub(limit).max(self.first);
                let next = if from == self.first {
                    Vec::new()
                } else {
                    cur(from)
                };
                ((from..c).collect(), next, from == self.first)
            }
        }
    }

    /// Answers `read` with `(ids, next, end)`.
    pub fn settle(&mut self, read: &Read, ids: Vec<u64>, next: &[u8], end: bool) {
        let acq = self.next_acq;
        self.next_acq += 1;
        self.items_read += ids.len() as u64;
        self.reads += 1;
        let n = ids.len() as u32;
        self.held.insert(acq, ids);
        self.loader
            .settle(read.read_id, acq, n, next, end)
            .expect("an accepted answer");
        self.collect();
    }

    /// Answers the oldest pending read from the log as it is now.
    pub fn answer_one(&mut self) -> bool {
        let Some(read) = self.pending.pop_front() else {
            return false;
        };
        let (ids, next, end) = self.scan(&read);
        self.settle(&read, ids, &next, end);
        true
    }

    /// Answers reads until none is pending.
    pub fn run(&mut self) {
        while self.answer_one() {}
    }

    /// `n` items are written at the log's end, and reported the cheap way.
    pub fn append(&mut self, n: u64) {
        let old = self.end;
        self.end += n;
        if self.naive {
            let mut cmp = |a: &[u8], b: &[u8]| at(a).cmp(&at(b));
            self.loader
                .invalidate_range(&cur(old), None, &mut cmp)
                .expect("a ranged invalidation");
        } else {
            self.loader.appended().expect("appended");
        }
        self.collect();
    }

    /// The oldest `n` items are removed (rotation), and reported as a ranged change from the
    /// source's start to the last removed item.
    pub fn remove_head(&mut self, n: u64) {
        let last = self.first + n; // the cursor just after the last removed item
        self.first += n;
        let mut cmp = |a: &[u8], b: &[u8]| at(a).cmp(&at(b));
        self.loader
            .invalidate_range(b"", Some(&cur(last)), &mut cmp)
            .expect("a ranged invalidation");
        self.collect();
    }

    pub fn set_window(&mut self, start: u64, len: u64) {
        self.loader.set_window(start, len).expect("a window");
        self.collect();
    }

    pub fn follow(&mut self, on: bool) {
        self.loader.follow(on).expect("follow");
        self.collect();
    }

    /// The ids the view shows, page after page.
    pub fn view(&self) -> Vec<u64> {
        self.loader
            .pages()
            .flat_map(|p| self.held[&p.acquisition].iter().copied())
            .collect()
    }

    /// The ids in the window.
    pub fn window_items(&self) -> Vec<u64> {
        let (start, len) = self.loader.window();
        let (from, _) = self.loader.covered();
        let view = self.view();
        let skip = start.saturating_sub(from) as usize;
        view.into_iter().skip(skip).take(len as usize).collect()
    }
}

/// What a timed follow run measured (see [`follow_run`]).
#[derive(Debug, Default)]
pub struct FollowRun {
    /// While pinned: items appended, items read, reads answered.
    pub appended: u64,
    pub items_read: u64,
    pub reads: u64,
    /// From an append to the first view whose window shows it, in simulated µs.
    pub delays: Vec<u64>,
    /// Scrolling back a window at a time while the appends go on: moves, reads, items.
    pub moves: u64,
    pub move_reads: u64,
    pub move_items: u64,
    /// Back to the end (`follow(true)`): reads and items, and whether it shows the end.
    pub return_reads: u64,
    pub return_items: u64,
    pub returned: bool,
    /// Items appended while scrolled back.
    pub appended_away: u64,
}

/// A log of `initial` items, pinned, appended at `rate` items a second (evenly spaced) for
/// `seconds` of simulated time, each append reported with `appended`; the host answers each
/// read `latency` µs after it was issued, from the log as it is then (so a read may return
/// items appended while it was out, and may have been made before an append reported while
/// it was in flight). Then the user scrolls back `moves` windows, one every 10 ms, the
/// appends going on, and returns to the end with `follow(true)`.
#[allow(clippy::too_many_arguments)]
pub fn follow_run(
    naive: bool,
    config: Config,
    len: u64,
    initial: u64,
    rate: u64,
    seconds: u64,
    latency: u64,
    moves: u64,
) -> FollowRun {
    let mut h = LogHost::new(config, initial);
    h.naive = naive;
    h.set_window(0, len);
    h.follow(true);
    h.run();
    assert!(h.loader.following() && h.loader.end_of_source());
    let mut out = FollowRun::default();
    let mut appended_at: VecDeque<(u64, u64)> = VecDeque::new();
    let gap = 1_000_000 / rate;
    let mut next_append = gap;
    let (read0, reads0) = (h.items_read, h.reads);
    let end_of_follow = seconds * 1_000_000;
    // Phase 1, pinned: appends and answers in time order.
    loop {
        let due = h.pending.front().map(|r| h.issued_at[&r.read_id] + latency);
        match due {
            Some(d) if d <= next_append => {
                h.now = d;
                h.answer_one();
                // The window's last item: every append up to it is shown.
                if let Some(&last) = h.window_items().last() {
                    while appended_at.front().is_some_and(|&(id, _)| id <= last) {
                        let (_, t) = appended_at.pop_front().unwrap();
                        out.delays.push(h.now - t);
                    }
                }
            }
            _ if next_append > end_of_follow => break,
            _ => {
                h.now = next_append;
                appended_at.push_back((h.end, h.now));
                h.append(1);
                out.appended += 1;
                next_append += gap;
            }
        }
    }
    h.run();
    assert!(h.loader.following());
    out.items_read = h.items_read - read0;
    out.reads = h.reads - reads0;
    // Phase 2: scroll back a window every 10 ms while the appends go on.
    let (read1, reads1) = (h.items_read, h.reads);
    let (mut start, _) = h.loader.window();
    for _ in 0..moves {
        for _ in 0..(rate / 100).max(1) {
            h.append(1);
            out.appended_away += 1;
        }
        start = start.saturating_sub(len);
        h.set_window(start, len);
        h.run();
        out.moves += 1;
    }
    out.move_reads = h.reads - reads1;
    out.move_items = h.items_read - read1;
    assert!(moves == 0 || !h.loader.following());
    let (read2, reads2) = (h.items_read, h.reads);
    h.follow(true);
    h.run();
    out.return_reads = h.reads - reads2;
    out.return_items = h.items_read - read2;
    let want: Vec<u64> = (h.end.saturating_sub(len)..h.end).collect();
    out.returned = h.loader.following() && h.window_items() == want;
    out
}
