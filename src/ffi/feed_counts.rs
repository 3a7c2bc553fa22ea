//! The feed's counters in C: `loader_feed_counts`, `loader_feed_stats` that fills it, and
//! `loader_feed_free_counted`, a free that hands back the final counts.

use super::feed::{loader_feed_free, loader_feed_handle, tally};
use super::panic::boundary;
use super::pointer::finish;
use super::result::loader_result;
use super::sized::{Growable, SizedOut};
use crate::feed::Counts;
use std::mem::{offset_of, size_of};

/// A feed's counters since it was made: every page its loads returned and where it went, the
/// loads running, and the failures by cause. At every instant `accepted + given_back <=
/// handed_out` (a page is counted handed out first, and counted in `running` until it is
/// accepted or given back) and `released_by_loader <= accepted` (the loader holds the rest).
/// Once the feed is freed with no load left running and no pinned view left,
/// `handed_out == accepted + given_back` and `accepted == released_by_loader`: every page a
/// load returned reached `release` exactly once, `handed_out` times in all.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_feed_counts {
    /// `sizeof` this struct as the host's `loader.h` declares it; set it before the call
    /// that fills it, which sets it to the bytes it filled (STRUCTS THAT GROW at the top of
    /// this header).
    pub struct_size: u32,
    /// The result code of the last page refused (0: none yet); next to `struct_size`, so
    /// that the struct has no padding at its end.
    pub last_refused_code: i32,
    /// Pages the loads returned: every `load` that returned 0.
    pub handed_out: u64,
    /// Of those, the pages the loader accepted (current, stale, or with a stalled cursor): the
    /// loader releases each when it is done with it (`released_by_loader`).
    pub accepted: u64,
    /// Of those, the pages the feed passed to `release` itself, as soon as their load
    /// returned: refused, over their limit, or late.
    pub given_back: u64,
    /// Of those given back, the pages of loads whose read was let go of before the load
    /// returned (a cancel hint from a jump or a far move, `read_timeout_ms`, the free), or
    /// answered already.
    pub late: u64,
    /// Pages the loader passed to `release`: accepted pages it was done with, or held at its
    /// free (a pinned view's follow when the view is released).
    pub released_by_loader: u64,
    /// Loads running now; after a free, the loads it left running (each returns at most one
    /// page, which goes to `release` and is counted in `handed_out`, `given_back` and `late`).
    pub running: u64,
    /// Loads that failed: returned non-zero, or ended their thread.
    pub failed: u64,
    /// Pages with more items than their read's `limit` (`LOADER_RESULT_COUNT_OVER_LIMIT`).
    pub count_over_limit: u64,
    /// Pages the loader took whose `next_cursor` was the read's own
    /// (`LOADER_RESULT_CURSOR_STALLED`).
    pub cursor_stalled: u64,
    /// Pages refused for a NULL `next_cursor` with a length (`LOADER_RESULT_NULL_CURSOR`).
    pub refused_null_cursor: u64,
    /// Pages refused for a `next_cursor` over `LOADER_MAX_CURSOR_LEN`
    /// (`LOADER_RESULT_CURSOR_TOO_LONG`).
    pub refused_cursor_too_long: u64,
    /// Pages the loader refused with any other code (its code is `last_refused_code`).
    pub refused_other: u64,
    /// Loads that outlived `read_timeout_ms`: their reads were let go of.
    pub timed_out: u64,
}

// SAFETY: `#[repr(C)]`, `struct_size` first; FIRST_SIZE ends at its last field.
unsafe impl Growable for loader_feed_counts {
    const FIRST_SIZE: usize = offset_of!(loader_feed_counts, timed_out) + size_of::<u64>();
}

impl From<Counts> for loader_feed_counts {
    fn from(c: Counts) -> Self {
        loader_feed_counts {
            struct_size: loader_feed_counts::own_size(),
            last_refused_code: c.last_refused_code,
            handed_out: c.handed_out,
            accepted: c.accepted,
            given_back: c.given_back,
            late: c.late,
            released_by_loader: c.released_by_loader,
            running: c.running,
            failed: c.failed,
            count_over_limit: c.count_over_limit,
            cursor_stalled: c.cursor_stalled,
            refused_null_cursor: c.refused_null_cursor,
            refused_cursor_too_long: c.refused_cursor_too_long,
            refused_other: c.refused_other,
            timed_out: c.timed_out,
        }
    }
}

/// Fills `*out` with the feed's counters (`loader_feed_counts`). Set `out->struct_size` first;
/// on success it holds the bytes filled. Each counter is read on its own: while loads run, two
/// may be a page apart. `out` is required; the caller owns `*out`. No callback runs.
///
/// # Safety
/// `out` is NULL or valid for reads and writes of its `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_stats(
    feed: loader_feed_handle,
    out: *mut loader_feed_counts,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        match unsafe { SizedOut::required(out) } {
            Ok(out) => finish(tally(feed).map(|t| t.read().into()), out),
            Err(e) => e,
        }
    })
}

/// `loader_feed_free`, then fills `*out_counts` (required; set its `struct_size` first) with
/// the feed's counters as the free left them: the loader freed, so every page it held went to
/// `release` (but those a pinned view still lists), and every load the free waited for
/// counted. They are final when `*out_left_running` is 0 and no pinned view of the loader is
/// left. A bad `out_counts` is refused before anything is freed.
///
/// # Safety
/// As `loader_feed_free`; `out_counts` is NULL or valid for reads and writes of its
/// `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_feed_free_counted(
    feed: loader_feed_handle,
    timeout_ms: i64,
    out_left_running: *mut u32,
    out_counts: *mut loader_feed_counts,
) -> loader_result {
    let first = boundary(Err(loader_result::Panic), || {
        // SAFETY: by this function's contract.
        let out = unsafe { SizedOut::required(out_counts) }?;
        Ok((out, tally(feed)?))
    });
    let (out, tally) = match first {
        Ok(v) => v,
        Err(e) => return e,
    };
    // SAFETY: forwarded contract.
    let rc = unsafe { loader_feed_free(feed, timeout_ms, out_left_running) };
    if rc == loader_result::Ok {
        boundary(loader_result::Panic, || {
            finish(Ok(tally.read().into()), out)
        })
    } else {
        rc
    }
}
