//! A source that grows at its end: reporting an append (`loader_appended`) and following the
//! end (`loader_follow`, `loader_following`).

use super::delivery::event;
use super::instance::{loader_handle, lookup};
use super::panic::boundary;
use super::pointer::{finish, Out};
use super::result::{code, loader_result};

/// Items were added after the source's last item, and nothing else changed: a log line
/// written, a chat message sent, a row inserted with a key greater than every other. This is
/// how to report an append; it is the cheap way. No held page can hold a new item, so nothing
/// is re-read, no repair starts and the reads in flight stay current: the view only stops
/// claiming the source's end (`loader_snapshot.end_of_source` goes false), and when the
/// window wants the end (or follow mode is on) one read forward from the last held cursor
/// returns just the new items. A read in flight across the append keeps its items; if its
/// answer says `end_of_source`, the loader does not believe it (the host may have looked
/// before the new items were written) and reads forward once more, which costs an empty
/// read at most. So an append of n items after a view that holds the source's end, with
/// nothing else in flight or owed, reads only the new items: n items, in ceil(n / `page_size`)
/// reads and the one that finds the end. Call it after the new items are visible to new
/// reads; calling it more often than items arrive is harmless (an empty read).
///
/// Anything else (an item updated, inserted before the end, or removed, the oldest included)
/// is `loader_invalidate_range` (or `loader_invalidate`). Do NOT report an append as
/// `loader_invalidate_range(last cursor, NULL)`: a range starts AT an item, so that re-reads
/// the last page every time.
///
/// Errors change nothing: the handle's codes.
#[no_mangle]
pub extern "C-unwind" fn loader_appended(handle: loader_handle) -> loader_result {
    code(event(handle, |l| l.appended()))
}

/// Follow mode, as `tail -f` and `less +F`: with `on`, pins the window to the source's end,
/// its length kept. While pinned, the loader moves the window itself so that it stays on the
/// last `window_len` items as the source grows (read `window_start` back after `changed`, as
/// for a renumbering); when the view does not reach the end yet it reads forward until it
/// does (jump to the end's cursor first, with `loader_jump`, when the host knows it: a log's
/// size, a table's greatest key). A `loader_set_window` away from the end unpins it; one
/// whose window reaches the end of the items held (while the view reaches the source's end)
/// pins it again, until `loader_follow(handle, false)`. `loader_jump` unpins. Turned on while
/// the window is far back in the history, the window first moves to the end last seen (a far
/// move), then follows. Follow mode is the loader's policy over its usual reads: it changes
/// no rule of the ledger.
///
/// Errors change nothing: the handle's codes.
#[no_mangle]
pub extern "C-unwind" fn loader_follow(handle: loader_handle, on: bool) -> loader_result {
    code(event(handle, |l| l.follow(on)))
}

/// Writes whether the window is pinned to the source's end (`loader_follow` on, and the
/// window not moved away) to `*out_following`, which is required.
///
/// # Safety
/// `out_following` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_following(
    handle: loader_handle,
    out_following: *mut bool,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        match unsafe { Out::required(out_following) } {
            Ok(out) => finish(lookup(handle).and_then(|i| i.read(|l| l.following())), out),
            Err(e) => e,
        }
    })
}
