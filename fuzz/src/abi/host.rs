//! The fuzz host behind one loader: its books (reads, acquisitions, cancels, callbacks) and
//! the four `extern "C"` callbacks that keep them.
//!
//! Callbacks never panic (an unwind out of an `extern "C"` function aborts): they record
//! violations, which the driver raises after the call that ran them returns. A callback may
//! also run one step of the host's *script*: bytes from the input that make it answer, fail,
//! invalidate, move the window, read the state, or free its own loader from inside the
//! callback, the hostile things a real host may do.

use super::calls::{self, Cursor};
use loader::ffi::*;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::c_void;

/// A read the host was asked for and has not answered.
#[derive(Clone, Debug)]
pub struct Read {
    pub id: u64,
    pub cursor: Vec<u8>,
    pub limit: u32,
}

#[derive(Default)]
pub struct Books {
    pub pending: Vec<Read>,
    /// The highest read id issued (they are consecutive from 1).
    pub max_read: u64,
    pub answered: Vec<u64>,
    /// Reads answered from inside a callback. A cancel queued before such an answer is
    /// delivered after it (callbacks run in order), so a late cancel for one is expected.
    pub answered_in_callback: HashSet<u64>,
    /// Callbacks running now, nested.
    pub depth: u32,
    pub cancels: HashMap<u64, u32>,
    /// Acquisitions offered by a `loader_settle` still running (one may be nested in a
    /// callback); the loader may release one before the call returns.
    pub offering: HashSet<usize>,
    pub accepted: HashSet<usize>,
    pub refused: HashSet<usize>,
    pub released: HashMap<usize, u32>,
    /// Every callback run, to check that a refused call ran none.
    pub callbacks: u64,
    /// `changed` callbacks run.
    pub changes: u64,
    pub script: VecDeque<u8>,
    pub violations: Vec<String>,
    /// `loader_free` was called for this loader; it returned `OK` when `freed` is set.
    pub free_started: bool,
    pub freed: bool,
}

pub struct Host {
    pub handle: Cell<loader_handle>,
    pub books: RefCell<Books>,
    /// The host's source: items `0..source_len`; a cursor's first 8 bytes are the big-endian
    /// position of the next item.
    pub source_len: u64,
    pub page_size: u32,
    /// Acquisition tokens are `tag | n`: unique across the hosts of one run.
    pub tag: usize,
    pub next_acq: Cell<usize>,
    /// Counters started near `u64::MAX`: overflow refusals are expected.
    pub counters_high: bool,
    pub poisoned: Cell<bool>,
    /// Which optional callbacks the loader was given.
    pub has_changed: bool,
    pub has_cancel: bool,
    /// The window of the last accepted `loader_set_window`.
    pub window: Cell<(u64, u64)>,
}

/// Which callback a script step runs in.
#[derive(Clone, Copy, Debug)]
enum Ctx {
    Issue(u64),
    Release,
    Changed,
    Cancel(u64),
}

impl Host {
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
            window: Cell::new((0, 0)),
        }
    }

    /// The callbacks that keep these books; `changed` and `cancel` only if the host has them.
    pub fn callbacks(&self) -> loader_callbacks {
        loader_callbacks {
            userdata: self as *const Host as *mut c_void,
            issue: Some(on_issue),
            release: Some(on_release),
            changed: if self.has_changed {
                Some(on_changed)
            } else {
                None
            },
            cancel: if self.has_cancel {
                Some(on_cancel)
            } else {
                None
            },
        }
    }

    pub fn violation(&self, what: String) {
        self.books.borrow_mut().violations.push(what);
    }

    pub fn fresh_acquisition(&self) -> usize {
        let n = self.next_acq.get();
        self.next_acq.set(n + 1);
        self.tag | n
    }

    /// The good answer to `read`: how many items, the next position, end of source.
    pub fn good_answer(&self, read: &Read) -> (u32, u64, bool) {
        let at = position(&read.cursor);
        let left = self.source_len.saturating_sub(at);
        let count = left.min(u64::from(read.limit)) as u32;
        let next = at.saturating_add(u64::from(count));
        (count, next, next >= self.source_len)
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
            b.answered.push(read_id);
            if b.depth > 0 {
                b.answered_in_callback.insert(read_id);
            }
        } else {
            if b.released.contains_key(&acq) {
                b.violations.push(format!(
                    "acquisition {acq:#x} was refused ({r:?}) but released"
                ));
            }
            b.refused.insert(acq);
            if let Some(read) = read {
                b.pending.push(read);
            }
        }
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
            b.answered.push(read_id);
            if b.depth > 0 {
                b.answered_in_callback.insert(read_id);
            }
        } else if let Some(read) = read {
            b.pending.push(read);
        }
        r
    }

    /// `loader_free` of this host's own loader, checking what free promises before it returns:
    /// every accepted acquisition released exactly once, and a cancel for every read still
    /// outstanding.
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
        super::tally(
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
            // One more at free; two if its supersede cancel was still queued when a callback
            // freed the loader (free delivers the queue first).
            let now = b.cancels.get(&id).copied().unwrap_or(0);
            if now <= n || now > 2 {
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

    /// What a reentrant call may return: `OK`, or the refusal the loader's state explains.
    /// `freeing` is whether free had started before the call: a call's own callbacks may free
    /// the loader after its state change, and it still returns `OK`.
    fn reentrant_ok(&self, r: loader_result, what: &str, freeing: bool) {
        super::tally("(from inside a callback)", r);
        let poisoned = self.poisoned.get();
        let fine = match r {
            loader_result::Ok => !freeing && !poisoned,
            loader_result::StaleHandle => freeing,
            loader_result::Poisoned => poisoned && !freeing,
            loader_result::EpochOverflow | loader_result::IdOverflow => {
                self.counters_high && !freeing
            }
            _ => false,
        };
        if !fine {
            self.violation(format!("reentrant {what} returned {r:?}"));
        }
    }

    /// One script step, run from inside callback `ctx`.
    fn script(&self, ctx: Ctx) {
        let Some(b) = self.books.borrow_mut().script.pop_front() else {
            return;
        };
        if super::tracing() && (4..=9).contains(&(b % 16)) {
            eprintln!("    script step {} in {ctx:?}", b % 16);
        }
        let h = self.handle.get();
        let freeing = self.books.borrow().free_started;
        let read_of_ctx = match ctx {
            Ctx::Issue(id) | Ctx::Cancel(id) => Some(id),
            Ctx::Release | Ctx::Changed => None,
        };
        let target = read_of_ctx.or_else(|| self.books.borrow().pending.first().map(|r| r.id));
        match b % 16 {
            4 => {
                if let Some(read) = target.and_then(|id| self.take_pending(id)) {
                    let (count, next, eos) = self.good_answer(&read);
                    let cursor = next.to_be_bytes();
                    let cancelled = self.was_cancelled(read.id);
                    let mut a = loader_answer::Current;
                    let id = read.id;
                    let r = self.settle(
                        h,
                        id,
                        Some(read),
                        count,
                        Cursor::Bytes(&cursor),
                        eos,
                        Some(&mut a),
                    );
                    self.reentrant_ok(r, &format!("settle of read {id} in {ctx:?}"), freeing);
                    if r == loader_result::Ok && cancelled && a == loader_answer::Current {
                        self.violation(format!("cancelled read {id} answered as current"));
                    }
                }
            }
            5 => {
                if let Some(read) = target.and_then(|id| self.take_pending(id)) {
                    let id = read.id;
                    let cancelled = self.was_cancelled(id);
                    let mut a = loader_answer::Current;
                    let r = self.fail(h, id, Some(read), 9, Some(&mut a));
                    self.reentrant_ok(r, &format!("fail of read {id} in {ctx:?}"), freeing);
                    if r == loader_result::Ok && cancelled && a != loader_answer::Stale {
                        self.violation(format!("cancelled read {id} failed as {a:?}"));
                    }
                }
            }
            6 => {
                let mut s = super::blank_snapshot();
                self.reentrant_ok(calls::state(h, Some(&mut s)), "loader_state", freeing);
                let mut n = 0;
                let r = calls::requests(h, None, 0, Some(&mut n));
                let r = if r == loader_result::BufferTooSmall {
                    loader_result::Ok
                } else {
                    r
                };
                self.reentrant_ok(r, "loader_requests", freeing);
            }
            7 => self.reentrant_ok(loader_invalidate(h), "loader_invalidate", freeing),
            8 => {
                let len = u64::from(self.books.borrow_mut().script.pop_front().unwrap_or(0));
                // Booked before the call: its own callbacks may move the window again.
                let old = self.window.replace((0, len));
                let r = loader_set_window(h, 0, len);
                if r != loader_result::Ok {
                    self.window.set(old);
                }
                self.reentrant_ok(r, "loader_set_window", freeing);
            }
            9 => {
                self.free();
            }
            _ => {}
        }
    }

    /// A callback returns: its script step, then the depth count.
    fn leave(&self, ctx: Ctx) {
        self.script(ctx);
        self.books.borrow_mut().depth -= 1;
    }

    fn was_cancelled(&self, read_id: u64) -> bool {
        self.books.borrow().cancels.contains_key(&read_id)
    }

    /// Counts a callback and flags it if the loader was already freed.
    fn enter(&self, name: &str) {
        if super::tracing() {
            eprintln!("    callback {name} of {:#x}", self.handle.get());
        }
        let mut b = self.books.borrow_mut();
        b.callbacks += 1;
        // A call made from a callback has its callbacks queued until the running one returns;
        // only `loader_free` runs its releases and cancels at once (they must precede its return).
        if b.depth > 0 && !b.free_started {
            b.violations.push(format!(
                "{name} callback ran nested inside another callback"
            ));
        }
        b.depth += 1;
        if b.freed {
            b.violations
                .push(format!("{name} callback after loader_free returned"));
        }
    }
}

/// The position a cursor names: its first 8 bytes, big endian; the start for a shorter one.
pub fn position(cursor: &[u8]) -> u64 {
    cursor
        .get(..8)
        .map_or(0, |b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
}

unsafe extern "C" fn on_issue(userdata: *mut c_void, read: *const loader_read) {
    // SAFETY: userdata is the `Host` registered with this loader; it lives until the run ends,
    // after the loader was freed.
    let host: &Host = unsafe { calls::host_of(userdata) };
    // SAFETY: `read` is the pointer passed to this running `issue` callback.
    let (r, cursor) = unsafe { calls::read_in_callback(read) };
    host.enter(&format!("issue(read {})", r.read_id));
    let Some(cursor) = cursor else {
        host.violation(format!(
            "read {} has a NULL cursor of length {}",
            r.read_id, r.cursor_len
        ));
        host.books.borrow_mut().depth -= 1;
        return;
    };
    {
        let b = &mut *host.books.borrow_mut();
        if b.free_started {
            b.violations
                .push(format!("issue of read {} during or after free", r.read_id));
        }
        if r.read_id != b.max_read + 1 {
            b.violations.push(format!(
                "read {} issued after read {}: ids must be consecutive",
                r.read_id, b.max_read
            ));
        }
        if r.limit != host.page_size || cursor.len() > LOADER_MAX_CURSOR_LEN {
            b.violations.push(format!(
                "read {}: limit {} (page size {}), cursor of {} bytes",
                r.read_id,
                r.limit,
                host.page_size,
                cursor.len()
            ));
        }
        b.max_read = b.max_read.max(r.read_id);
        b.pending.push(Read {
            id: r.read_id,
            cursor: cursor.to_vec(),
            limit: r.limit,
        });
    }
    host.leave(Ctx::Issue(r.read_id));
}

unsafe extern "C" fn on_release(userdata: *mut c_void, acquisition: usize) {
    // SAFETY: as in `on_issue`.
    let host: &Host = unsafe { calls::host_of(userdata) };
    host.enter(&format!("release({acquisition:#x})"));
    {
        let b = &mut *host.books.borrow_mut();
        let known = b.accepted.contains(&acquisition) || b.offering.contains(&acquisition);
        if b.refused.contains(&acquisition) || !known {
            b.violations.push(format!(
                "release of acquisition {acquisition:#x}, which the loader never accepted"
            ));
        }
        let n = b.released.entry(acquisition).or_insert(0);
        *n += 1;
        let n = *n;
        if n > 1 {
            b.violations
                .push(format!("acquisition {acquisition:#x} released {n} times"));
        }
    }
    host.leave(Ctx::Release);
}

unsafe extern "C" fn on_changed(userdata: *mut c_void) {
    // SAFETY: as in `on_issue`.
    let host: &Host = unsafe { calls::host_of(userdata) };
    host.enter("changed");
    host.books.borrow_mut().changes += 1;
    if host.books.borrow().free_started {
        host.violation("changed callback during or after free".into());
    }
    host.leave(Ctx::Changed);
}

unsafe extern "C" fn on_cancel(userdata: *mut c_void, read_id: u64) {
    // SAFETY: as in `on_issue`.
    let host: &Host = unsafe { calls::host_of(userdata) };
    host.enter(&format!("cancel({read_id})"));
    {
        let b = &mut *host.books.borrow_mut();
        // Finding 2 (fixed in bfe75f1): a read whose `issue` never ran is not cancelled.
        if read_id == 0
            || read_id > b.max_read
            || (b.answered.contains(&read_id) && !b.answered_in_callback.contains(&read_id))
        {
            b.violations.push(format!(
                "cancel of read {read_id}, which is not outstanding (max issued {})",
                b.max_read
            ));
        }
        // Documented: once when superseded, and once more if still outstanding at free
        // (`Host::free` checks that one).
        let freeing = b.free_started;
        let n = b.cancels.entry(read_id).or_insert(0);
        *n += 1;
        let n = *n;
        if n > 1 && !freeing {
            b.violations
                .push(format!("read {read_id} cancelled {n} times before free"));
        }
    }
    host.leave(Ctx::Cancel(read_id));
}
