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
        }
    }

    pub fn collect(&mut self) {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(r) => self.pending.push_back(r),
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
        self.end += n;
        self.loader.appended().expect("appended");
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
