//! What the host tells a loader: the source changed, a read's answer, a retry, a window move,
//! the time. Each runs its loader call inside the panic boundary and then delivers the
//! callbacks it produced, outside it, on the calling thread (see `delivery.rs`); so each is
//! `extern "C-unwind"`, and a callback that ends its thread or throws unwinds out of it (a read
//! whose `issue` unwound is let go of on the way: see `delivery.rs`).

use super::delivery::{event, event_hosted};
use super::instance::{loader_handle, lookup};
use super::panic::boundary;
use super::pointer::{cursor, finish, widen, Out};
use super::result::{code, loader_result};
use super::types::{loader_acquisition, loader_answer};
use super::{LOADER_LOCATE_FOUND, LOADER_MAX_CURSOR_LEN};

/// The source changed. Starts a repair or full read as the rules say (through `issue`).
#[no_mangle]
pub extern "C-unwind" fn loader_invalidate(handle: loader_handle) -> loader_result {
    code(event(handle, |l| l.invalidate()))
}

/// The source changed, but only between two positions: every item inserted, deleted or
/// updated lies at or after `from` and at or before `to`. Needs the `compare` callback.
///
/// Positions are cursors, as the host returns them in `next_cursor`: each names the gap just
/// after some item, and an item "lies at" the cursor just after it (its key, with keyset
/// cursors). Name the source's start with an empty `from` (`from_len` 0; `from` may be NULL)
/// and the source's end with `to` NULL (`to_len` 0). Only NULL names the end: a non-NULL `to`
/// with `to_len` 0 is the empty cursor, the source's START, like an empty `from`. A host that
/// inserted, deleted or updated
/// one row names that row's cursor (its key) as both `from` and `to`; `from` empty and `to`
/// NULL is the whole source, and costs what `loader_invalidate` costs.
///
/// The next repair re-reads only the held pages that may hold a changed item (a page holds
/// the items after its start cursor and at or before its end cursor): from the first such
/// page's start cursor, with bounded reads (`loader_read.until` = the last such page's end
/// cursor), and rejoins the view there. The pages before and after are kept (not re-read, not
/// released, not reordered); the pages it replaces are released when it commits, atomically
/// as for any repair; positions after the re-read run move by the net change (the window too
/// when it starts after the run: read `window_start` back after `changed`). Such pages that
/// lie wholly outside the window plus prefetch (kept by `max_pages`) are not re-read: they
/// are released when the repair starts, with the pages between them and the view's edge, so
/// the repair stages no more than the window needs; and a repair that would read on past the
/// window plus prefetch (items were inserted, or the window shrank while it ran) stops
/// there, and the view then ends where its last page ends; one whose pages fall before a
/// window that moved on lets them go as it reads, and the view then starts where its first
/// page kept starts. A change that no
/// held page and no read still needed can contain (a finite read forward reads what follows
/// its cursor, backward what precedes it; a running repair always counts) supersedes nothing
/// and re-reads nothing: no repair starts, the reads in flight stay current, and reads to
/// come see the change (a claim of the source's end past the last page is dropped). So a
/// writer appending at a log's end costs a scroll back through its history nothing. When the
/// only read that may contain the change is a forward read whose cursor lies before `from`,
/// its answer decides: `loader_settle` calls `compare` once, and an answer whose
/// `next_cursor` comes before `from` and that does not set `end_of_source` did not reach the
/// change and is taken as any answer; otherwise the change supersedes it then (the answer is
/// `LOADER_ANSWER_STALE`, and the page is read again). So a writer far ahead of a view
/// scrolling forward costs the scroll nothing either.
/// The promise, in numbers: a change reported on a view that is fresh (nothing in flight,
/// owed or failed) issues at most the held pages it touches within the window plus prefetch,
/// plus one read, before the view is fresh again; made while reads are out (and no failure
/// is recorded: after one, the retry is a full read, see `LOADER_FAILURE_OWN`), one that a
/// held page or a read still needed may contain adds those pages plus one, each read then in
/// flight, and a running repair's pages (at most
/// ceil((window + 2·prefetch) / `page_size`) + 2) to what they cost. A filtered stretch
/// costs its reads on top (one per `limit` rows scanned). With `recheck_full` zero, a view
/// an invalidation was lost on (one that overtook a full read) is not fresh, though nothing
/// is in flight: it is stale until a change covers what the lost one changed, and a change
/// made then reads that too.
/// Several ranged invalidations before a commit merge;
/// `loader_invalidate` subsumes them.
///
/// A range that is too narrow (a change outside it) is a host bug. The library stays memory
/// safe and releases every acquisition exactly once, but the view may be wrong (stale, with
/// duplicated or missing items) outside what the repair re-read, until a later invalidation
/// covers that part.
///
/// `compare` runs during this call, on this thread, inside the state change (see
/// `loader_compare_fn`). The cursors are copied; they need only be valid during the call.
/// Errors change nothing: `LOADER_RESULT_NULL_CURSOR` (NULL with a non-zero length),
/// `LOADER_RESULT_CURSOR_TOO_LONG`, both checked before the handle; then the handle's codes,
/// `LOADER_RESULT_NO_COMPARE` (the loader has no `compare` callback),
/// `LOADER_RESULT_RANGE_REVERSED` (`to` comes before `from`), `LOADER_RESULT_EPOCH_OVERFLOW` /
/// `LOADER_RESULT_ID_OVERFLOW`.
///
/// With keyset cursors over `ORDER BY k, id` (the cursor holds the key `(k, id)` of the item
/// just before it), the bounded read of the repair is:
///
/// ```sql
/// -- From cursor (:k0, :id0) (an empty cursor drops that condition) until (:k1, :id1).
/// SELECT k, id, ... FROM items WHERE (k, id) > (:k0, :id0) AND (k, id) <= (:k1, :id1)
///     ORDER BY k, id LIMIT :limit;
/// -- count = the rows returned; next_cursor = the last row's key, or (:k1, :id1) when
/// -- fewer than :limit rows came back; end_of_source = true only when no row at all lies
/// -- after the last row looked at: fewer than :limit rows came back AND the table has no
/// -- row after (:k1, :id1) either. A read that stopped at (:k1, :id1) with rows after it
/// -- sets false: a short page already says `until` was reached, and `end_of_source` would
/// -- end the view there. False when unsure: it costs at most one more read.
/// ```
///
/// # Safety
/// `from` is NULL or valid for `from_len` bytes; `to` is NULL or valid for `to_len` bytes.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_invalidate_range(
    handle: loader_handle,
    from: *const u8,
    from_len: usize,
    to: *const u8,
    to_len: usize,
) -> loader_result {
    // SAFETY: by this function's contract. Checked before the call, so a bad cursor changes
    // nothing. `to` NULL with length 0 is the source's end, not the empty cursor.
    let range = boundary(Err(loader_result::Panic), || unsafe {
        let from = cursor(from, from_len)?;
        let to = if to.is_null() && to_len == 0 {
            None
        } else {
            Some(cursor(to, to_len)?)
        };
        Ok((from, to))
    });
    let compare = range.and_then(|range| {
        let inst = boundary(Err(loader_result::Panic), || lookup(handle))?;
        // The handle's own codes (a poisoned loader) come before the missing callback's.
        inst.read(|_| ())?;
        let cb = inst.callbacks();
        let compare = cb.compare.ok_or(loader_result::NoCompare)?;
        Ok((range, cb.userdata, compare))
    });
    code(compare.and_then(|((from, to), userdata, compare)| {
        event(handle, |l| {
            l.invalidate_range(from, to, &mut |a: &[u8], b: &[u8]| {
                // SAFETY: `compare` is the host's function for this signature; `a` and `b`
                // are live slices for the call. It is `extern "C"`: it cannot unwind into
                // the loader's state change.
                let c = unsafe { compare(userdata, a.as_ptr(), a.len(), b.as_ptr(), b.len()) };
                c.cmp(&0)
            })
        })
    }))
}

/// Answers read `read_id` with `count` items held by `acquisition`, and the cursor after them.
///
/// On `LOADER_RESULT_OK` the loader owns `acquisition` and will pass it to `release` exactly
/// once; `*out_answer` (if not NULL) says how the answer was classified. On any error the
/// host still owns `acquisition` and nothing changed. That `release` can come before this
/// call returns: on this thread (an empty page, or a late answer to a read whose request was
/// superseded by work that has already committed) or on another (a concurrent call retired or
/// dropped the page). So mark the acquisition as the loader's before the call, and take it
/// back only on an error. `next_cursor` is copied; it may be NULL only when `next_cursor_len`
/// is 0. A late answer to a superseded read is not an error.
///
/// `next_cursor` is where the next read continues: the position after the last row the host
/// *looked at*, which for a filtered query may lie past the last row it returned. Set
/// `end_of_source` when the read reached the source's end (the host found nothing after the
/// last row it looked at); a page shorter than `limit` without it is fine, and the loader
/// reads on from `next_cursor` (except a bounded read's page with items, which says `until`
/// was reached: see `loader_read.until`). A host that cannot tell answers full pages without
/// the flag, and the read after the last row finds nothing: answer it with `count` 0, the
/// read's own cursor as `next_cursor`, and `end_of_source` set. That answer is
/// `LOADER_ANSWER_CURRENT` and the view then reaches the source's end
/// (`loader_snapshot.end_of_source`).
///
/// Empty pages (`count` 0): an empty page never enters the view and costs no position, and
/// its acquisition is released at once: `release` runs for it before the outermost libloader
/// call on this thread returns. If `next_cursor` moved past the read's own cursor, the empty
/// page is progress: the next read starts there (a bounded read's too, short of `until`). If
/// it did not move and `end_of_source` is false, the answer is `LOADER_ANSWER_CURSOR_STALLED`,
/// as for a page with items, except for a read the loader sent a `cancel` hint for: an empty
/// page is how a host lets such a read go, and it is classified stale whatever its cursor. So
/// a long filtered-out stretch costs one read per `limit` rows scanned: the loader keeps
/// reading until the window plus prefetch is covered or the source ends, and every read
/// counts; none is repeated.
///
/// The answer to a forward read that a ranged change was reported ahead of while it was out
/// (see `loader_invalidate_range`) calls `compare` once, on this thread, inside the state
/// change (see `loader_compare_fn`), to tell whether `next_cursor` reached the change.
///
/// # Safety
/// `next_cursor` is NULL or valid for `next_cursor_len` bytes; `out_answer` is NULL or valid
/// for a write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn loader_settle(
    handle: loader_handle,
    read_id: u64,
    acquisition: loader_acquisition,
    count: u32,
    next_cursor: *const u8,
    next_cursor_len: usize,
    end_of_source: bool,
    out_answer: *mut loader_answer,
) -> loader_result {
    // SAFETY: forwarded contract.
    unsafe {
        answer(
            handle,
            read_id,
            acquisition,
            count,
            (next_cursor, next_cursor_len),
            end_of_source,
            None,
            out_answer,
        )
    }
}

/// `loader_settle` from a host that knows how many items come before the page's first item
/// (a count query, an offset its API returns): `items_before`. When the page enters the view
/// (now, or when its repair commits), the view is renumbered so that the page starts at that
/// position, and the window moves with it (read `window_start` back after `changed`): the
/// positions become the source's own without reading back to its start. A count that
/// contradicts the view (fewer items before the page than the view holds before it), one
/// over `LOADER_MAX_POSITION`, and any count while the view (or the repair the page commits
/// with) reaches the source's start, whose positions are the source's own already, is
/// ignored. A count is taken as the host gives it, even one that counts a change the host
/// has not announced yet (its `loader_invalidate` comes after the answer) or one the view
/// does not show yet: the positions follow the count, and the repair that follows the
/// announcement keeps them, as it keeps any anchor's number. Everything else is as
/// `loader_settle`.
///
/// # Safety
/// As `loader_settle`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn loader_settle_counted(
    handle: loader_handle,
    read_id: u64,
    acquisition: loader_acquisition,
    count: u32,
    next_cursor: *const u8,
    next_cursor_len: usize,
    end_of_source: bool,
    items_before: u64,
    out_answer: *mut loader_answer,
) -> loader_result {
    // SAFETY: forwarded contract.
    unsafe {
        answer(
            handle,
            read_id,
            acquisition,
            count,
            (next_cursor, next_cursor_len),
            end_of_source,
            Some(items_before),
            out_answer,
        )
    }
}

/// The body of `loader_settle` and `loader_settle_counted` (`items_before` `None` and `Some`):
/// the cursor is checked before the call, so a bad one changes nothing; then the answer, and
/// its class written to `out_answer`.
///
/// # Safety
/// As `loader_settle`: `next_cursor.0` is NULL or valid for `next_cursor.1` bytes;
/// `out_answer` is NULL or valid for a write.
#[allow(clippy::too_many_arguments)]
unsafe fn answer(
    handle: loader_handle,
    read_id: u64,
    acquisition: loader_acquisition,
    count: u32,
    next_cursor: (*const u8, usize),
    end_of_source: bool,
    items_before: Option<u64>,
    out_answer: *mut loader_answer,
) -> loader_result {
    // SAFETY: by this function's contract.
    let next = boundary(Err(loader_result::Panic), || unsafe {
        cursor(next_cursor.0, next_cursor.1)
    });
    let r = next.and_then(|next| {
        event_hosted(handle, |l, _, cb| {
            let (compare, userdata) = (cb.compare, cb.userdata);
            let mut order = |a: &[u8], b: &[u8]| {
                let compare = compare.expect("asked only when the host gave compare");
                // SAFETY: `compare` is the host's function for this signature; `a` and `b`
                // are live slices for the call. It is `extern "C"`: it cannot unwind into
                // the loader's state change.
                let c = unsafe { compare(userdata, a.as_ptr(), a.len(), b.as_ptr(), b.len()) };
                c.cmp(&0)
            };
            l.settle_ordered(
                read_id,
                widen(acquisition),
                count,
                next,
                end_of_source,
                items_before,
                compare.is_some().then_some(&mut order),
            )
        })
    });
    // SAFETY: by this function's contract.
    finish(r.map(loader_answer::from), unsafe {
        Out::optional(out_answer)
    })
}

/// Answers read `read_id` with a failure; `code` is the host's own, kept for its records.
/// `*out_answer` (if not NULL) is `LOADER_ANSWER_CURRENT` for an own failure (it waits for a
/// retry) or `LOADER_ANSWER_STALE` for a superseded read's (it blocks nothing). Failing a
/// read after its `cancel` hint is how a host lets it go: as `loader_abandon`, it costs no
/// debt and no re-read, and a later answer to it is `LOADER_ANSWER_STALE` (not
/// `LOADER_RESULT_ALREADY_ANSWERED`) while the loader remembers it. "After its hint" counts
/// from the call that superseded the read, not from the `cancel` callback: a failure made
/// from inside a callback, while that read's `cancel` is still queued behind it, lets the
/// read go the same way, and its `cancel` still arrives afterwards.
///
/// # Safety
/// `out_answer` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_fail(
    handle: loader_handle,
    read_id: u64,
    code: i32,
    out_answer: *mut loader_answer,
) -> loader_result {
    let r = event(handle, |l| l.fail(read_id, code));
    // SAFETY: by this function's contract.
    finish(r.map(loader_answer::from), unsafe {
        Out::optional(out_answer)
    })
}

/// Retries a recorded own failure now. The retry is a full read (`LOADER_KIND_FULL`) from the
/// anchor, the held page that holds the window's start: forward from that page's start cursor
/// to the window's end plus `prefetch_distance`, then backward over the prefetch before the
/// window (from the source's start, or a `loader_jump` cursor, only when nothing is held).
/// When the failure was a repair's or a full read's (not a ranged repair's), the retry
/// resumes at the read that failed instead, keeping the pages its earlier reads got
/// (`loader_counts.resumed`), whether or not invalidations came since. If one did, those
/// pages may predate it: the retry still resumes (every read that succeeded counts), and
/// when it commits the loader invalidates once more, so a repair follows at once. With
/// `recheck_full` and `commit_overtaken` on (the defaults), a repair's read
/// (`LOADER_KIND_CHAIN`, a ranged repair's too) that failed while nothing else was owed (the
/// repair running was not overtaken by an invalidation since it started), with no
/// invalidation or window move since, is retried as that repair: a chain read
/// (`LOADER_KIND_CHAIN`) at the read that failed, keeping the pages its earlier reads got
/// (`loader_counts.resumed`), so that one failed read costs that read again, not the window.
/// An invalidation since the failure, a window move that retries, a repair read whose cursor
/// stalled, or that read again failing again, retries with a full read from the anchor
/// instead (a ranged repair's pages are then let go; a whole repair's are resumed as above,
/// except after that read failed again). With `recheck_full` and `commit_overtaken` on
/// (the defaults; with either off there is no page failure), a failed page read (`LOADER_KIND_FINITE`) that failed while nothing else was owed, with no
/// invalidation or window move since, is retried by reading that page again: one finite read
/// with the failed read's cursor, direction and `until`, and the same backoff and
/// `max_auto_retries` budget (`loader_counts.retries_page`; the backoff timer's retry reads
/// the same). A page read whose cursor stalled, or that an invalidation, a window move or a
/// `loader_jump` followed (any time after its issue, before or after its failure: the read
/// the window needs is then another), is retried from the anchor as above, counted as such
/// (not in `retries_page`); so is the page read again when it fails again (its cursor may
/// be gone for good, as a deleted row's key behind a page token: the read from the anchor
/// gets fresh cursors). A cursor that stalls costs a bounded number of reads: the steps
/// that succeed on the way back to it do not start the `max_auto_retries` count again (only
/// a commit or a current page does), so the automatic retries run out and the loader waits.
/// A source that repeats one cursor with items is read there once and once per automatic
/// retry, each time after the reads from the anchor back to it (a commit or a current page on
/// the way starts the count again), then the loader waits for `loader_retry` (nothing in
/// flight, no deadline).
/// A page read whose cursor is gone for good is read twice (the page, then it again), then the
/// full read from the anchor reads past it with fresh cursors and the loader settles; only
/// when the anchor's own cursor is the one gone does it fail 1 + `max_auto_retries` times and
/// wait. The loader checker's `progress` holds both to stated bounds on small sources:
/// (1 + `max_auto_retries`)·P reads before it waits, and 2·P + 3 + `max_auto_retries` before it
/// settles or waits, P the reads its honest host may answer before the loader settles.
///
/// `*out_started` (if not NULL) says whether a read started; with nothing to retry now (no own
/// failure recorded, or an earlier full read still in flight) the call succeeds and starts
/// nothing. Once the automatic retries are spent (`max_auto_retries`), this call and a window
/// move are the only retries: see the loop at `loader_next_deadline`.
///
/// # Safety
/// `out_started` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_retry(
    handle: loader_handle,
    out_started: *mut bool,
) -> loader_result {
    let r = event(handle, |l| l.retry());
    // SAFETY: by this function's contract.
    finish(r, unsafe { Out::optional(out_started) })
}

/// Moves the window to items `[start, start + len)`. Growing it issues reads; with a failure
/// recorded it retries: with a full read (`LOADER_KIND_FULL`) when the window moved, since the
/// page that failed may no longer be the one it needs; with the window unchanged, as
/// `loader_retry` does. `LOADER_RESULT_WINDOW_OVERFLOW` if `start + len` overflows.
///
/// What a move costs: to a window that overlaps, adjoins or lies near what the view holds
/// (within `loader_config.jump_threshold` items of it, by default the window plus twice the
/// prefetch), the pages missing from the window plus prefetch, one read each. A far move
/// starts at the nearest cursor the loader knows for the window (a page it read before, the
/// source's start, or the `locate` callback's answer: FAR MOVES at `jump_threshold`) and
/// costs about the window plus prefetch, as `loader_jump` does: the old view stays shown
/// (`revalidating`) until the new one commits. It costs that whatever is in flight or failed
/// when it is made: the reads of an earlier far move, a jump, a repair or a retry still out
/// are let go (`cancel` hints), a failed repair is not resumed, and a recorded failure is
/// retried from the new cursor, so two far moves in quick succession read around the second
/// target only. The promise, in numbers: a far move that starts at the window (at `locate`'s
/// cursor, or at one the loader read within a page of it), like a jump, reads at most
/// window + 2·prefetch + 2·`page_size` items before the view is fresh again (nothing in
/// flight, owed or failed), plus a page for each read already out when it was made, whatever
/// was in flight then. With none known nearer than the held pages,
/// the loader walks: it reads page by page from the nearest held page toward the window, so
/// the reads grow with the distance; the pages it passes are released as `max_pages` says,
/// and a repair or retry that lands meanwhile holds only the window's share (see
/// `loader_config.max_pages`). `locate`, when given, runs during this call on this thread.
#[no_mangle]
pub extern "C-unwind" fn loader_set_window(
    handle: loader_handle,
    start: u64,
    len: u64,
) -> loader_result {
    let located = boundary(Err(loader_result::Panic), || {
        let inst = lookup(handle)?;
        let cb = inst.callbacks();
        Ok(cb.locate.map(|locate| (cb.userdata, locate)))
    });
    let Ok(Some((userdata, locate))) = located else {
        return code(event(handle, |l| l.set_window(start, len)));
    };
    code(event(handle, |l| {
        l.set_window_located(start, len, &mut |position: u64, buf: &mut Vec<u8>| {
            buf.resize(LOADER_MAX_CURSOR_LEN, 0);
            let mut len = 0usize;
            // SAFETY: `locate` is the host's function for this signature; `buf` is a live
            // buffer of `LOADER_MAX_CURSOR_LEN` bytes and `len` a live local for the call. It
            // is `extern "C"`: it cannot unwind into the loader's state change.
            let r = unsafe {
                locate(
                    userdata,
                    position,
                    buf.as_mut_ptr(),
                    LOADER_MAX_CURSOR_LEN,
                    &mut len,
                )
            };
            let found = r == LOADER_LOCATE_FOUND && len <= LOADER_MAX_CURSOR_LEN;
            buf.truncate(if found { len } else { 0 });
            found
        })
    }))
}

/// Rebuilds the view around `cursor` (a position between items, as a `next_cursor`; empty:
/// the source's start): the item just after it gets position `position`, and the window
/// moves to start there, its length kept. At the source's start (an empty `cursor`) the
/// positions are the source's own, so its first item gets 0 whatever `position` says, and
/// the window starts at 0 (counted in `loader_counts.renumbered`). Use it to go to a search hit, a bookmark, or the
/// end of a log without reading what lies between.
///
/// On a loader that holds nothing, has nothing in flight and owes nothing, the view moves at
/// once, with no invalidation; a page failure recorded stays recorded, and its retry is a
/// full read from `cursor` (see `loader_retry`). Otherwise (a loader that still owes a full
/// read after an own failure included) this is an invalidation whose repair starts at
/// `cursor`: the old view stays shown (`revalidating`) until the new one commits. As for a
/// far move, whatever is in flight or failed: a repair or full read in flight is let go (its
/// `cancel` hint; `loader_counts.abandoned`), a failed one is not resumed, and a recorded
/// failure is retried from `cursor` at once (`loader_counts.retries_explicit`), so nothing
/// walks from an older anchor. Either way the loader reads
/// about the window plus prefetch on each side around `cursor` (forward first, then
/// backward), whatever the distance from the old view: at most window + 2·prefetch +
/// 2·`page_size` items before the view is fresh again, plus a page for each read already out
/// when it was made, as for a far move. Positions are the host's from then on
/// (anchored; see `loader_page.start`): read `window_start` back after `changed`, as a
/// backward read that reaches the source's start renumbers them to the source's own.
///
/// `cursor` is copied; it may be NULL only when `cursor_len` is 0. Errors change nothing:
/// `LOADER_RESULT_NULL_CURSOR` (NULL with a length), `LOADER_RESULT_CURSOR_TOO_LONG`,
/// `LOADER_RESULT_WINDOW_OVERFLOW` (`position` over `LOADER_MAX_POSITION`, or
/// `position + window_len` overflows),
/// `LOADER_RESULT_EPOCH_OVERFLOW` / `LOADER_RESULT_ID_OVERFLOW`, and the handle's codes.
///
/// # Safety
/// `cursor` is NULL or valid for `cursor_len` bytes.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_jump(
    handle: loader_handle,
    cursor: *const u8,
    cursor_len: usize,
    position: u64,
) -> loader_result {
    // SAFETY: by this function's contract. Checked before the call, so a bad cursor changes
    // nothing.
    let at = boundary(Err(loader_result::Panic), || unsafe {
        super::pointer::cursor(cursor, cursor_len)
    });
    code(at.and_then(|at| event(handle, |l| l.jump(at, position))))
}

/// The host gives up on read `read_id` and will not answer it (a worker was stopped, a
/// request was aborted). For a read the loader no longer needs (it sent a `cancel` hint for
/// it, or would have, to a host without a `cancel` callback) this costs nothing: no debt, no
/// re-read, and the reads it blocked may start; `*out_answer` is `LOADER_ANSWER_STALE`. For a
/// read still needed it is a failure, as `loader_fail` (`LOADER_ANSWER_CURRENT`: it waits
/// for a retry). Either way the read is no longer outstanding. If its answer arrives later
/// anyway, `loader_settle` accepts it as `LOADER_ANSWER_STALE` and `release` runs for its
/// acquisition before the outermost libloader call on this thread returns; a late
/// `loader_fail` is `LOADER_ANSWER_STALE`. (The loader remembers the last 4096 reads let go
/// of; an answer to an older one is `LOADER_RESULT_ALREADY_ANSWERED`.)
///
/// A read the loader superseded and the host never answers is let go of the same way after
/// `read_timeout_ms` of `loader_tick` time (`loader_next_deadline` includes that deadline).
///
/// # Safety
/// `out_answer` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_abandon(
    handle: loader_handle,
    read_id: u64,
    out_answer: *mut loader_answer,
) -> loader_result {
    let r = event(handle, |l| l.abandon(read_id));
    // SAFETY: by this function's contract.
    finish(r.map(loader_answer::from), unsafe {
        Out::optional(out_answer)
    })
}

/// Tells the loader the host's time, in ms on any monotonic clock; fires a due backoff retry
/// and lets go of superseded reads that timed out (`read_timeout_ms`). Time never goes back
/// for the loader: a `now_ms` below one given before is taken as that earlier time (nothing
/// fires early, nothing is re-armed), so a clock that steps back only delays deadlines.
#[no_mangle]
pub extern "C-unwind" fn loader_tick(handle: loader_handle, now_ms: u64) -> loader_result {
    code(event(handle, |l| l.tick(now_ms)))
}

/// When to call `loader_tick` next: `*out_armed` is true and `*out_deadline_ms` the time if a
/// backoff retry is armed or a superseded read will time out (`read_timeout_ms`); false (and
/// the deadline 0) otherwise. Both pointers are required.
///
/// The deadline is on the clock the host gives `loader_tick`, counted from the latest time a
/// tick gave (0 before the first): tick once with the current time when the loader is made,
/// or the first deadline lies in the clock's past. An own failure arms it (while automatic
/// retries remain: `max_auto_retries`); a retry, a window move or the tick that fires it
/// disarms it, so ask again after every call (or whenever `changed` runs). A tick before the
/// deadline fires nothing; a late one fires the retry then.
///
/// Once the automatic retries are spent (`max_auto_retries` in a row; 0 disables them), an
/// own failure arms nothing: this says no deadline, `loader_snapshot.quiescent` stays false,
/// and nothing happens until the host acts. So when no deadline is armed and
/// `loader_snapshot.failure` is `LOADER_FAILURE_OWN`, the host calls `loader_retry` (now, or
/// after a delay of its own) or gives up by its own rule (a retry budget, a user's "try
/// again"). One loop serves a host that answers reads on its own thread(s):
///
/// ```c
/// loader_tick(h, now_ms());                     // the loader's clock starts now
/// for (;;) {
///     bool armed;
///     uint64_t deadline;
///     if (loader_next_deadline(h, &armed, &deadline) != LOADER_RESULT_OK) break;
///     uint64_t now = now_ms();                  // the clock loader_tick gets
///     if (armed && deadline <= now) {
///         loader_tick(h, now);                  // the retry's read comes through issue
///         continue;
///     }
///     if (!armed) {
///         loader_snapshot s;
///         if (loader_state(h, &s) != LOADER_RESULT_OK) break;
///         if (s.failure == LOADER_FAILURE_OWN) {
///             // The automatic retries are spent: no deadline will fire for this failure.
///             if (give_up()) break;             // the host's own rule
///             bool started = false;
///             loader_retry(h, &started);        // its read comes through issue
///             if (started) continue;
///             // Not started: an earlier read is still in flight; its answer wakes us.
///         }
///     }
///     // Sleep until the deadline (forever if not armed); wake early when `changed` runs or
///     // an answer arrives, and answer it with loader_settle or loader_fail.
///     wait_for_work(armed ? deadline - now : WAIT_FOREVER);
///     if (done) break;
/// }
/// ```
///
/// # Safety
/// Both pointers are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn loader_next_deadline(
    handle: loader_handle,
    out_armed: *mut bool,
    out_deadline_ms: *mut u64,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let outs = unsafe { (Out::required(out_armed), Out::required(out_deadline_ms)) };
        let (Ok(armed), Ok(deadline)) = outs else {
            return loader_result::NullPointer;
        };
        let r = lookup(handle)
            .and_then(|i| i.read(|l| l.next_deadline()))
            .map(|d| (d.is_some(), d.unwrap_or(0)));
        finish(r, (armed, deadline))
    })
}
