//! The host's script: hostile calls a callback makes on its own loader, and their codes.
//!
//! Bytes from the input make a callback answer, fail, invalidate, move the window, read the
//! state, or free its own loader from inside the callback, the things a real host may do.

use super::callbacks::Ctx;
use super::calls::{self, Cursor};
use super::host::Host;
use super::observe::blank_snapshot;
use super::report::{tally, tracing};
use loader::ffi::*;

impl Host {
    /// What a reentrant call may return: `OK`, or the refusal the loader's state explains.
    /// `freeing` is whether free had started before the call: a call's own callbacks may free
    /// the loader after its state change, and it still returns `OK`.
    fn reentrant_ok(&self, r: loader_result, what: &str, freeing: bool) {
        tally("(from inside a callback)", r);
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
    pub(super) fn script(&self, ctx: Ctx) {
        let Some(b) = self.books.borrow_mut().script.pop_front() else {
            return;
        };
        if tracing() && (4..=9).contains(&(b % 16)) {
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
                let mut s = blank_snapshot();
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
                self.window_read_at.set(self.books.borrow().changes);
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

    fn was_cancelled(&self, read_id: u64) -> bool {
        self.books.borrow().cancels.contains_key(&read_id)
    }
}
