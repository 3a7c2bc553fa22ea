//! What the host tells a loader: the source changed, a read's answer, a retry, a window move,
//! the time. Each runs its loader call inside the panic boundary and then delivers the
//! callbacks it produced, outside it, on the calling thread (see `delivery.rs`); so each is
//! `extern "C-unwind"`, and a callback that ends its thread or throws unwinds out of it.

use super::delivery::event;
use super::instance::{loader_handle, lookup};
use super::panic::boundary;
use super::pointer::{cursor, finish, widen, Out};
use super::result::{code, loader_result};
use super::types::{loader_acquisition, loader_answer};

/// The source changed. Starts a repair or full read as the rules say (through `issue`).
#[no_mangle]
pub extern "C-unwind" fn loader_invalidate(handle: loader_handle) -> loader_result {
    code(event(handle, |l| l.invalidate()))
}

/// Answers read `read_id` with `count` items held by `acquisition`, and the cursor after them.
///
/// On `LOADER_RESULT_OK` the loader owns `acquisition` and will pass it to `release` exactly
/// once; `*out_answer` (if not NULL) says how the answer was classified. On any error the
/// host still owns `acquisition` and nothing changed. `next_cursor` is copied; it may be NULL
/// only when `next_cursor_len` is 0. A late answer to a superseded read is not an error.
///
/// `next_cursor` is where the next read continues: the position after the last row the host
/// *looked at*, which for a filtered query may lie past the last row it returned. Set
/// `end_of_source` when the read reached the source's end; a page shorter than `limit`
/// without it is fine, and the loader reads on from `next_cursor`.
///
/// Empty pages (`count` 0): an empty page never enters the view and costs no position, and
/// its acquisition is released at once: `release` runs for it before the outermost libloader
/// call on this thread returns. If `next_cursor` moved past the read's own cursor, the empty
/// page is progress: the next read starts there. If it did not move and `end_of_source` is
/// false, the answer is `LOADER_ANSWER_CURSOR_STALLED`, as for a page with items. So a long
/// filtered-out stretch costs one read per `limit` rows scanned: the loader keeps reading
/// until the window plus prefetch is covered or the source ends, and every read counts;
/// none is repeated.
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
    // SAFETY: by this function's contract. Checked before the call, so a bad cursor changes
    // nothing.
    let next = boundary(Err(loader_result::Panic), || unsafe {
        cursor(next_cursor, next_cursor_len)
    });
    let r = next.and_then(|next| {
        event(handle, |l| {
            l.settle(read_id, widen(acquisition), count, next, end_of_source)
        })
    });
    // SAFETY: by this function's contract.
    finish(r.map(loader_answer::from), unsafe {
        Out::optional(out_answer)
    })
}

/// Answers read `read_id` with a failure; `code` is the host's own, kept for its records.
/// `*out_answer` (if not NULL) is `LOADER_ANSWER_CURRENT` for an own failure (it waits for a
/// retry) or `LOADER_ANSWER_STALE` for a superseded read's (it blocks nothing).
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

/// Retries a recorded own failure now, with a full-source read. `*out_started` (if not NULL)
/// says whether a read started; with nothing to retry the call succeeds and starts nothing.
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
/// recorded it retries. `LOADER_RESULT_WINDOW_OVERFLOW` if `start + len` overflows.
#[no_mangle]
pub extern "C-unwind" fn loader_set_window(
    handle: loader_handle,
    start: u64,
    len: u64,
) -> loader_result {
    code(event(handle, |l| l.set_window(start, len)))
}

/// Tells the loader the host's time, in ms on any monotonic clock; fires a due backoff retry.
#[no_mangle]
pub extern "C-unwind" fn loader_tick(handle: loader_handle, now_ms: u64) -> loader_result {
    code(event(handle, |l| l.tick(now_ms)))
}

/// When to call `loader_tick` next: `*out_armed` is true and `*out_deadline_ms` the time if a
/// backoff retry is armed; false (and the deadline 0) otherwise. Both pointers are required.
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
