//! The fuzz host behind one loader: its books, and settle, fail and free with the books kept.
//!
//! The books hold reads, acquisitions, cancels and callbacks run. The callbacks that keep them
//! are in `callbacks.rs`; what a callback may do to its own loader from inside, in `script.rs`.

use super::calls::{self, Cursor};
use loader::ffi::*;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};

/// A read the host was asked for and has not answered.
#[derive(Clone, Debug)]
pub struct Read {
    /// The read id `issue` named.
    pub id: u64,
    /// The cursor to read from.
    pub cursor: Vec<u8>,
    /// The most items the answer may hold.
    pub limit: u32,
    /// Which way the read goes from its cursor.
    pub direction: loader_direction,
    /// A bounded read's `until` (a ranged repair's): only the items before that position.
    pub until: Option<Vec<u8>>,
    /// The loader's clock (the latest `loader_tick`) when the read was issued: the loader
    /// supersedes it no earlier, so it cannot time out before `issued_at + read_timeout_ms`.
    pub issued_at: u64,
    /// A repair's or full read's read (not a finite one): a far move or `loader_jump` may let
    /// it go at once (with its `cancel` hint), after which its answer is a late one.
    pub repair: bool,
}

/// What the host has seen of its loader, kept by the callbacks and the booked calls.
#[derive(Default)]
pub struct Books {
    /// Reads issued and not answered.
    pub pending: Vec<Read>,
    /// The highest read id issued (they are consecutive from 1).
    pub max_read: u64,
    /// Reads answered with `OK`, in order.
    pub answered: Vec<u64>,
    /// Reads answered from inside a callback. A cancel queued before such an answer is
    /// delivered after it (callbacks run in order), so a late cancel for one is expected.
    pub answered_in_callback: HashSet<u64>,
    /// Callbacks running now, nested.
    pub depth: u32,
    /// How many times each read was cancelled.
    pub cancels: HashMap<u64, u32>,
    /// Acquisitions offered by a `loader_settle` still running (one may be nested in a
    /// callback); the loader may release one before the call returns.
    pub offering: HashSet<usize>,
    /// Acquisitions of settles that returned `OK`: the loader owns them.
    pub accepted: HashSet<usize>,
    /// Acquisitions of settles that were refused: the host keeps them.
    pub refused: HashSet<usize>,
    /// How many times each acquisition was released.
    pub released: HashMap<usize, u32>,
    /// Every callback run, to check that a refused call ran none.
    pub callbacks: u64,
    /// `changed` callbacks run.
    pub changes: u64,
    /// Script bytes not yet run (see `script.rs`).
    pub script: VecDeque<u8>,
    /// What the callbacks found wrong, for the driver to raise after the call.
    pub violations: Vec<String>,
    /// Reads the host failed after their cancel hint: that lets them go, as `loader_abandon`
    /// does, and a later answer to one is accepted as a late one (stale) while the loader
    /// remembers it.
    pub let_go: HashSet<u64>,
    /// Reads failed with `OK` before their `cancel` hint reached the host. The loader decides
    /// a hint in the call that supersedes the read, and that hint may still be queued behind
    /// a running callback when the host fails the read from inside it: the failure then lets
    /// the read go all the same (a hint that arrives for one of these says so).
    pub failed_unhinted: HashSet<u64>,
    /// The loader's clock as the host set it: the latest `loader_tick` time.
    pub now: u64,
    /// `loader_free` was called for this loader.
    pub free_started: bool,
    /// `loader_free` returned `OK`.
    pub freed: bool,
}

impl Books {
    /// An answer to `read_id` that returned `r`: answered on `OK` (from inside a callback if
    /// one is running), else `read`, if it was outstanding, is outstanding again.
    fn book_answer(&mut self, r: loader_result, read_id: u64, read: Option<Read>) {
        if r == loader_result::Ok {
            self.answered.push(read_id);
            if self.depth > 0 {
                self.answered_in_callback.insert(read_id);
            }
        } else if let Some(read) = read {
            self.pending.push(read);
        }
    }
}

/// One loader's host: its source, its books, and what the loader was given.
pub struct Host {
    /// The loader's handle; 0 until `loader_new` returned it.
    pub handle: Cell<loader_handle>,
    /// What the host has seen.
    pub books: RefCell<Books>,
    /// The host's source: items `0..source_len`; a cursor's first 8 bytes are the big-endian
    /// position between items it names (the number of items before it).
    pub source_len: u64,
    /// The config's page size: every read's limit.
    pub page_size: u32,
    /// Acquisition tokens are `tag | n`: unique across the hosts of one run.
    pub tag: usize,
    /// The next acquisition's `n`.
    pub next_acq: Cell<usize>,
    /// Counters started near `u64::MAX`: overflow refusals are expected.
    pub counters_high: bool,
    /// A deliberate panic poisoned the loader: every call returns `POISONED`.
    pub poisoned: Cell<bool>,
    /// Which optional callbacks the loader was given.
    pub has_changed: bool,
    /// Whether the loader was given `cancel` (see `has_changed`).
    pub has_cancel: bool,
    /// Whether the loader was given `compare`: without it `loader_invalidate_range` is
    /// refused with `NO_COMPARE`.
    pub has_compare: bool,
    /// Whether the loader was given `locate` (a far `loader_set_window` may then start at
    /// the cursor it answers).
    pub has_locate: bool,
    /// The config's `read_timeout_ms`: how long after its supersession the loader lets a
    /// read go (0: never).
    pub read_timeout_ms: u64,
    /// The window of the last accepted `loader_set_window`, or as last read back.
    pub window: Cell<(u64, u64)>,
    /// The `changed` count when `window` was booked or read back. A renumbering moves the
    /// window with the view and runs `changed`, after which a host reads the window back.
    pub window_read_at: Cell<u64>,
}

impl Host {
    /// A host with a source of `source_len` items and no loader yet; all callbacks given.
    pub fn new(source_len: u64, page_size: u32, tag: usize, counters_high: bool) -> Host {
        Host {
            handle: Cell::new(0),
            books: RefCell::new(Books::default()),
            source_len,
            page_size,
            tag,
            next_acq: Cell::new(1),
            counters_high,
            poisoned: Cell::new(false),
            has_changed: true,
            has_cancel: true,
            has_compare: true,
            has_locate: true,
            read_timeout_ms: loader::Config::default().read_timeout_ms,
            window: Cell::new((0, 0)),
            window_read_at: Cell::new(0),
        }
    }

    /// Records what a callback found wrong.
    pub fn violation(&self, what: String) {
        self.books.borrow_mut().violations.push(what);
    }

    /// A token never offered before in this run.
    pub fn fresh_acquisition(&self) -> usize {
        let n = self.next_acq.get();
        self.next_acq.set(n + 1);
        self.tag | n
    }

    /// The good answer to `read`: how many items, the next position, and whether the read
    /// reached the source's end (forward) or its start (backward). A backward read returns
    /// the items just before its cursor (a cursor past the source's end stands for the end),
    /// and its next position is just before the first of them. A bounded forward read stops
    /// at its `until` position: fewer than `limit` items then say it was reached.
    pub fn good_answer(&self, read: &Read) -> (u32, u64, bool) {
        let at = position(&read.cursor);
        match read.direction {
            loader_direction::Forward => {
                let end = read
                    .until
                    .as_deref()
                    .map_or(self.source_len, |u| position(u).min(self.source_len));
                let left = end.saturating_sub(at);
                let count = left.min(u64::from(read.limit)) as u32;
                let next = at.saturating_add(u64::from(count));
                (count, next, next >= self.source_len)
            }
            loader_direction::Backward => {
                let end = at.min(self.source_len);
                let count = end.min(u64::from(read.limit)) as u32;
                let next = end - u64::from(count);
                (count, next, next == 0)
            }
        }
    }

    /// Takes a pending read out of the books, so that a callback run by its own answer never
    /// sees it as outstanding.
    pub fn take_pending(&self, read_id: u64) -> Option<Read> {
        let mut b = self.books.borrow_mut();
        let i = b.pending.iter().position(|r| r.id == read_id)?;
        Some(b.pending.swap_remove(i))
    }

    /// `loader_settle` with the books kept: the acquisition is offered during the call and
    /// accepted or refused by its result; `read` (if it was pending) is answered on `OK` and
    /// pending again otherwise.
    #[allow(clippy::too_many_arguments)]
    pub fn settle(
        &self,
        handle: loader_handle,
        read_id: u64,
        read: Option<Read>,
        count: u32,
        cursor: Cursor,
        eos: bool,
        out: Option<&mut loader_answer>,
    ) -> loader_result {
        let acq = self.fresh_acquisition();
        self.books.borrow_mut().offering.insert(acq);
        let r = calls::settle(handle, read_id, acq, count, cursor, eos, out);
        let mut b = self.books.borrow_mut();
        b.offering.remove(&acq);
        if r == loader_result::Ok {
            b.accepted.insert(acq);
        } else {
            if b.released.contains_key(&acq) {
                b.violations.push(format!(
                    "acquisition {acq:#x} was refused ({r:?}) but released"
                ));
            }
            b.refused.insert(acq);
        }
        b.book_answer(r, read_id, read);
        r
    }

    /// `loader_fail` with the books kept.
    pub fn fail(
        &self,
        handle: loader_handle,
        read_id: u64,
        read: Option<Read>,
        code: i32,
        out: Option<&mut loader_answer>,
    ) -> loader_result {
        let r = calls::fail(handle, read_id, code, out);
        let mut b = self.books.borrow_mut();
        if r == loader_result::Ok {
            if b.cancels.contains_key(&read_id) {
                b.let_go.insert(read_id);
            } else {
                b.failed_unhinted.insert(read_id);
            }
        }
        b.book_answer(r, read_id, read);
        drop(b);
        r
    }

    /// `loader_free` of this host's own loader, checking what free promises before it returns:
    /// every accepted acquisition released exactly once, and every read still outstanding
    /// hinted exactly once in all.
    pub fn free(&self) -> loader_result {
        let (again, before): (bool, Vec<(u64, u32)>) = {
            let mut b = self.books.borrow_mut();
            let again = b.free_started;
            b.free_started = true;
            let before = b
                .pending
                .iter()
                .map(|r| (r.id, b.cancels.get(&r.id).copied().unwrap_or(0)))
                .collect();
            (again, before)
        };
        let r = loader_free(self.handle.get());
        super::report::tally(
            if again {
                "loader_free (inside free)"
            } else {
                "loader_free"
            },
            r,
        );
        let want = if again {
            loader_result::StaleHandle
        } else {
            loader_result::Ok
        };
        if r != want {
            self.violation(format!("loader_free returned {r:?}, wanted {want:?}"));
            return r;
        }
        if again {
            return r;
        }
        let mut b = self.books.borrow_mut();
        b.freed = true;
        for (id, n) in before.into_iter().filter(|_| self.has_cancel) {
            // Each read is hinted once: when superseded (possibly still queued when a callback
            // freed the loader: free delivers the queue first), or else at free.
            let now = b.cancels.get(&id).copied().unwrap_or(0);
            if now != 1 {
                b.violations.push(format!(
                    "read {id} was outstanding at free: {n} cancels before, {now} after"
                ));
            }
        }
        let unreleased: Vec<usize> = b
            .accepted
            .iter()
            .filter(|a| b.released.get(a) != Some(&1))
            .copied()
            .collect();
        if !unreleased.is_empty() {
            b.violations.push(format!(
                "after free, accepted acquisitions not released exactly once: {unreleased:x?}"
            ));
        }
        r
    }
}

/// The position a cursor names: its first 8 bytes, big endian; the start for a shorter one.
pub fn position(cursor: &[u8]) -> u64 {
    cursor
        .get(..8)
        .map_or(0, |b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
}
