//! A filtering host for the empty-page tests: a numbered source with a filtered stretch, read
//! forward, backward and within a bound, that records every answer and every acquisition.
//!
//! A cursor is the index of a position between rows, as 8 big-endian bytes; empty is the
//! source's start. A forward read scans the rows after its cursor, a backward read the rows
//! before it, and each returns the rows the filter keeps, as a `WHERE` clause over keyset
//! pagination does: a filtered stretch answers empty pages whose cursor still moves.

// Each test file uses its own part of the host.
#![allow(dead_code)]

use loader::{Answer, Config, Direction, Effect, Kind, Loader, Read};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// The position a cursor names.
pub fn at(cursor: &[u8]) -> u64 {
    if cursor.is_empty() {
        0
    } else {
        u64::from_be_bytes(cursor.try_into().expect("8-byte cursor"))
    }
}

/// The cursor naming position `i` (empty for the source's start).
pub fn cur(i: u64) -> Vec<u8> {
    if i == 0 {
        Vec::new()
    } else {
        i.to_be_bytes().to_vec()
    }
}

/// How the host answers a bounded read (one with `until`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bounded {
    /// As the header asks: it scans past filtered rows until it has `limit` rows or reaches
    /// `until`, so only the bound or the source's end makes a page short.
    Contract,
    /// Like its unbounded reads: it scans `limit` rows (stopping at `until`) and returns the
    /// ones the filter keeps, so a filtered stretch answers empty pages before the bound.
    Naive,
}

/// One answer the host gave.
#[derive(Clone, Debug)]
pub struct Answered {
    pub kind: Kind,
    pub direction: Direction,
    /// The read's cursor, as a position.
    pub cursor: u64,
    /// A bounded read's `until`, as a position.
    pub until: Option<u64>,
    pub count: u32,
    /// The answer's next cursor, as a position.
    pub next: u64,
    pub answer: Answer,
}

/// A source of `len` rows numbered from 0, with the rows in `hidden` filtered out.
pub struct FilteredHost {
    pub loader: Loader,
    pub len: u64,
    pub hidden: Range<u64>,
    /// Outstanding reads, oldest first.
    pub reads: Vec<Read>,
    /// Acquisitions the loader owns, with the rows each holds.
    pub held: HashMap<u64, Vec<u64>>,
    next_acq: u64,
    /// Every answer, in order.
    pub log: Vec<Answered>,
    /// Empty pages whose acquisition came back.
    pub released_empty: u64,
    /// Every acquisition that came back.
    pub released: u64,
    /// Every read issued: (kind, cursor as a position).
    pub issued: Vec<(Kind, u64)>,
    /// Reads the loader hinted it no longer needs.
    pub cancels: Vec<u64>,
    pub bounded: Bounded,
}

/// Pages of 50 and the given prefetch distance.
pub fn config(prefetch: u64) -> Config {
    Config {
        page_size: 50,
        prefetch_distance: prefetch,
        ..Config::default()
    }
}

impl FilteredHost {
    pub fn new(len: u64, hidden: Range<u64>, config: Config) -> FilteredHost {
        FilteredHost {
            loader: Loader::new(config).expect("valid config"),
            len,
            hidden,
            reads: Vec::new(),
            held: HashMap::new(),
            next_acq: 1,
            log: Vec::new(),
            released_empty: 0,
            released: 0,
            issued: Vec::new(),
            cancels: Vec::new(),
            bounded: Bounded::Contract,
        }
    }

    /// Carries out the loader's effects.
    pub fn collect(&mut self) {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(r) => {
                    self.issued.push((r.kind, at(&r.cursor)));
                    self.reads.push(r);
                }
                Effect::Release { acquisition } => {
                    let rows = self
                        .held
                        .remove(&acquisition)
                        .expect("an acquisition released twice or never accepted");
                    self.released += 1;
                    if rows.is_empty() {
                        self.released_empty += 1;
                    }
                }
                Effect::Cancel { read_id } => self.cancels.push(read_id),
                Effect::Changed => {}
            }
        }
    }

    pub fn set_window(&mut self, start: u64, len: u64) {
        self.loader.set_window(start, len).expect("window");
        self.collect();
    }

    /// A ranged invalidation of the rows from `from` to `until` (cursors compared as rows).
    pub fn invalidate_range(&mut self, from: u64, until: u64) {
        let mut cmp = |a: &[u8], b: &[u8]| at(a).cmp(&at(b));
        self.loader
            .invalidate_range(&cur(from), Some(&cur(until)), &mut cmp)
            .expect("invalidate_range");
        self.collect();
    }

    /// Answers every read (at most `cap`, past it a loop), then checks the view is the
    /// source's visible rows at positions `start..end` and nothing empty is held.
    pub fn drain_to(&mut self, cap: usize, start: u64, end: u64) {
        self.drain(cap);
        assert_eq!(self.loader.covered(), (start, end));
        assert_eq!(
            self.view(),
            self.visible_rows()[start as usize..end as usize]
        );
        self.check_no_empty_held();
    }

    pub fn jump(&mut self, to: u64, position: u64) {
        self.loader.jump(&cur(to), position).expect("jump");
        self.collect();
    }

    pub fn visible(&self, row: u64) -> bool {
        !self.hidden.contains(&row)
    }

    /// The source's visible rows.
    pub fn visible_rows(&self) -> Vec<u64> {
        (0..self.len).filter(|&r| self.visible(r)).collect()
    }

    /// The truthful answer to `read`: its rows, next cursor and end flag.
    pub fn scan(&self, read: &Read) -> (Vec<u64>, Vec<u8>, bool) {
        let c = at(&read.cursor);
        let limit = u64::from(read.limit);
        match (read.direction, &read.until) {
            (Direction::Backward, _) => {
                let from = c.min(self.len).saturating_sub(limit);
                let rows = (from..c.min(self.len))
                    .filter(|&r| self.visible(r))
                    .collect();
                (rows, cur(from), from == 0)
            }
            (Direction::Forward, Some(until)) if self.bounded == Bounded::Contract => {
                let stop = at(until).min(self.len);
                let mut rows = Vec::new();
                let mut s = c;
                while s < stop && (rows.len() as u64) < limit {
                    if self.visible(s) {
                        rows.push(s);
                    }
                    s += 1;
                }
                let next = if s == at(until) {
                    until.to_vec()
                } else {
                    cur(s)
                };
                (rows, next, s == self.len)
            }
            (Direction::Forward, Some(until)) => {
                let end = (c + limit).min(at(until)).min(self.len);
                let rows = (c..end).filter(|&r| self.visible(r)).collect();
                (rows, cur(end), end == self.len)
            }
            (Direction::Forward, None) => {
                let end = (c + limit).min(self.len);
                let rows = (c..end).filter(|&r| self.visible(r)).collect();
                (rows, cur(end), end == self.len)
            }
        }
    }

    /// Answers `read` with `rows`, held by a new acquisition.
    pub fn settle(&mut self, read: Read, rows: Vec<u64>, next: &[u8], end: bool) -> Answer {
        let acq = self.next_acq;
        self.next_acq += 1;
        let count = rows.len() as u32;
        self.held.insert(acq, rows);
        let answer = self
            .loader
            .settle(read.read_id, acq, count, next, end)
            .expect("accepted");
        self.log.push(Answered {
            kind: read.kind,
            direction: read.direction,
            cursor: at(&read.cursor),
            until: read.until.as_deref().map(at),
            count,
            next: at(next),
            answer,
        });
        self.collect();
        answer
    }

    /// Answers the oldest outstanding read truthfully.
    pub fn answer_one(&mut self) -> Answer {
        let read = self.reads.remove(0);
        self.answer_read(read)
    }

    /// Answers `read` (taken from `reads`) truthfully.
    pub fn answer_read(&mut self, read: Read) -> Answer {
        let (rows, next, end) = self.scan(&read);
        self.settle(read, rows, &next, end)
    }

    /// Answers the oldest outstanding read with an empty page that repeats its cursor.
    pub fn stall_one(&mut self) -> Answer {
        let read = self.reads.remove(0);
        let cursor = read.cursor.to_vec();
        self.settle(read, Vec::new(), &cursor, false)
    }

    /// Fails the oldest outstanding read.
    pub fn fail_one(&mut self) {
        let read = self.reads.remove(0);
        self.loader.fail(read.read_id, 1).expect("accepted");
        self.collect();
    }

    /// Answers every read truthfully; returns how many. Panics past `cap` (a loop).
    pub fn drain(&mut self, cap: usize) -> usize {
        let mut n = 0;
        while !self.reads.is_empty() {
            self.answer_one();
            n += 1;
            assert!(n <= cap, "more than {cap} reads: {:?}", self.log);
        }
        n
    }

    /// The rows the view shows, in order.
    pub fn view(&self) -> Vec<u64> {
        self.loader
            .pages()
            .flat_map(|p| self.held[&p.acquisition].iter().copied())
            .collect()
    }

    /// Nothing empty is held.
    pub fn check_no_empty_held(&self) {
        assert!(
            self.held.values().all(|rows| !rows.is_empty()),
            "an empty page's acquisition is held"
        );
    }

    /// The view is a contiguous run of the source's visible rows at the source's own
    /// positions, nothing empty is held, and every held acquisition is in the view.
    pub fn check(&self) {
        let view = self.view();
        let visible = self.visible_rows();
        if let Some(&first) = view.first() {
            let i = visible
                .iter()
                .position(|&r| r == first)
                .expect("a visible row");
            assert_eq!(
                view,
                visible[i..i + view.len()],
                "the view is not a run of the source"
            );
            let (start, end) = self.loader.covered();
            assert_eq!((end - start) as usize, view.len());
            assert_eq!(start as usize, i, "positions are the source's own");
        }
        self.check_no_empty_held();
        let shown: HashSet<u64> = self.loader.pages().map(|p| p.acquisition).collect();
        let held: HashSet<u64> = self.held.keys().copied().collect();
        assert_eq!(shown, held, "acquisitions held that no page shows");
    }

    /// The answers to reads of `kind` in `direction`: (cursor, count).
    pub fn answers_of(&self, kind: Kind, direction: Direction) -> Vec<(u64, u32)> {
        self.log
            .iter()
            .filter(|a| a.kind == kind && a.direction == direction)
            .map(|a| (a.cursor, a.count))
            .collect()
    }
}
