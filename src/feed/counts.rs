//! The feed's counters: every page a load returned and where it went, loads running, and the
//! failures by cause, so "every page handed out is released exactly once" can be checked from
//! them alone.
//!
//! A page a load returns is either accepted by the loader (which releases it through its own
//! `release` callback when it is done with it) or handed back by the feed at once (a page the
//! loader refused, one over its limit, or a late one whose read was let go of). So at every
//! instant `handed_out == accepted + given_back`, and once the loader is freed and no pinned
//! view is left, `accepted == released_by_loader`. The counters live in one shared block that
//! outlives the feed: the loader's last releases (a pinned view released after the feed's
//! free) still count.

use std::sync::atomic::{AtomicU64, Ordering};

/// The feed's counters, as one look reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pages the loads returned (every load that returned a page, good or bad).
    pub handed_out: u64,
    /// Of those, pages the loader accepted (current, stale or with a stalled cursor): the
    /// loader releases each once it is done with it.
    pub accepted: u64,
    /// Of those, pages the feed handed back to the host itself, at once: refused, over their
    /// limit, or late.
    pub given_back: u64,
    /// Of those given back, pages of loads whose read the feed had let go of before the load
    /// returned (a cancel hint, the read timeout, the close), or that the loader had answered
    /// already.
    pub late: u64,
    /// Pages the loader released (accepted ones it was done with, or freed).
    pub released_by_loader: u64,
    /// Loads running now, their pages' answers included (left running, after a free: each
    /// hands out at most one page).
    pub running: u64,
    /// Loads that failed: returned a failure, or ended their thread.
    pub failed: u64,
    /// Pages over their read's limit (a bug in the load).
    pub count_over_limit: u64,
    /// Pages the loader took with the cursor the read was given (a stalled cursor).
    pub cursor_stalled: u64,
    /// Pages refused for a NULL `next_cursor` with a length.
    pub refused_null_cursor: u64,
    /// Pages refused for a `next_cursor` over the maximum length.
    pub refused_cursor_too_long: u64,
    /// Pages the loader refused with any other code (not one saying the read was answered
    /// already: those are `late`).
    pub refused_other: u64,
    /// Loads that outlived the read timeout: their reads were let go of.
    pub timed_out: u64,
    /// The result code of the last page refused (0: none yet).
    pub last_refused_code: i32,
}

/// Why a page went back to the host without the loader: counted once each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Back {
    /// Its read was let go of (or answered) before the load returned.
    Late,
    /// More items than the read's limit.
    OverLimit,
    /// Refused with this result code.
    Refused(i32),
}

/// The shared block the feed and the loader's `release` count into.
#[derive(Debug, Default)]
pub struct Tally {
    handed_out: AtomicU64,
    accepted: AtomicU64,
    given_back: AtomicU64,
    late: AtomicU64,
    released_by_loader: AtomicU64,
    running: AtomicU64,
    failed: AtomicU64,
    count_over_limit: AtomicU64,
    cursor_stalled: AtomicU64,
    refused_null_cursor: AtomicU64,
    refused_cursor_too_long: AtomicU64,
    refused_other: AtomicU64,
    timed_out: AtomicU64,
    last_refused_code: AtomicU64,
}

/// The library's codes for a cursor refused before the loader saw it.
const NULL_CURSOR: i32 = 7;
const CURSOR_TOO_LONG: i32 = 8;

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::SeqCst);
}

impl Tally {
    /// The counters now. Each is read on its own, but in an order that keeps, at every
    /// instant, `released_by_loader <= accepted`, `late + count_over_limit + refused_* <=
    /// given_back` and `accepted + given_back <= handed_out` (each is counted after the one it
    /// is a part of is read). While loads run a page may be handed out and not yet answered
    /// (it is then in `running`); once the feed is freed and its loads returned, the sums are
    /// exact.
    pub fn read(&self) -> Counts {
        let get = |c: &AtomicU64| c.load(Ordering::SeqCst);
        let released_by_loader = get(&self.released_by_loader);
        let accepted = get(&self.accepted);
        let cursor_stalled = get(&self.cursor_stalled);
        let late = get(&self.late);
        let count_over_limit = get(&self.count_over_limit);
        let refused_null_cursor = get(&self.refused_null_cursor);
        let refused_cursor_too_long = get(&self.refused_cursor_too_long);
        let refused_other = get(&self.refused_other);
        let given_back = get(&self.given_back);
        let handed_out = get(&self.handed_out);
        Counts {
            handed_out,
            accepted,
            given_back,
            late,
            released_by_loader,
            running: get(&self.running),
            failed: get(&self.failed),
            count_over_limit,
            cursor_stalled,
            refused_null_cursor,
            refused_cursor_too_long,
            refused_other,
            timed_out: get(&self.timed_out),
            last_refused_code: i32::try_from(get(&self.last_refused_code)).unwrap_or(0),
        }
    }

    /// The loader released a page it had accepted.
    pub fn released_by_loader(&self) {
        bump(&self.released_by_loader);
    }

    pub(super) fn load_started(&self) {
        bump(&self.running);
    }

    pub(super) fn load_ended(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }

    pub(super) fn handed_out(&self) {
        bump(&self.handed_out);
    }

    pub(super) fn accepted(&self, stalled: bool) {
        if stalled {
            bump(&self.cursor_stalled);
        }
        bump(&self.accepted);
    }

    pub(super) fn failed(&self) {
        bump(&self.failed);
    }

    pub(super) fn timed_out(&self, n: usize) {
        self.timed_out
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// A page the feed handed back to the host, and why.
    pub(super) fn given_back(&self, why: Back) {
        match why {
            Back::Late => bump(&self.late),
            Back::OverLimit => bump(&self.count_over_limit),
            Back::Refused(code) => {
                self.last_refused_code
                    .store(u64::try_from(code).unwrap_or(0), Ordering::SeqCst);
                match code {
                    NULL_CURSOR => bump(&self.refused_null_cursor),
                    CURSOR_TOO_LONG => bump(&self.refused_cursor_too_long),
                    _ => bump(&self.refused_other),
                }
            }
        }
        bump(&self.given_back);
    }
}
