//! What a host may ask a loader without changing it: the spec's abstract state, the counters,
//! the live requests and the view. No callback runs.

use super::instance::{loader_handle, lookup};
use super::panic::boundary;
use super::pointer::{finish, token, widen, Out, OutArray};
use super::result::{code, loader_result};
use super::sized::{Growable, SizedOut};
use super::types::{loader_counts, loader_page, loader_request_info, loader_snapshot};
use crate::loader::Loader;

/// The spec's abstract state and the loader's counts, as `loader_state` reports them.
pub(super) fn snapshot(l: &Loader) -> loader_snapshot {
    let s = l.ledger().snapshot();
    let st = l.stats();
    let (covered_start, covered_end) = l.covered();
    let (window_start, window_len) = l.window();
    loader_snapshot {
        struct_size: loader_snapshot::own_size(),
        epoch: s.epoch,
        debt: s.debt.into(),
        phase: s.phase.into(),
        chain_epoch: s.chain_epoch,
        failure: s.failure.into(),
        coverage: s.coverage.into(),
        settled_once: s.settled_once,
        cover_epoch: s.cover_epoch,
        inflight: widen(s.inflight),
        settled: widen(s.settled),
        failed: widen(s.failed),
        next_request_id: s.next_id,
        pages: widen(l.pages().len()),
        outstanding_reads: widen(l.outstanding_reads()),
        revalidating: l.revalidating(),
        end_of_source: l.end_of_source(),
        covered_start,
        covered_end,
        window_start,
        window_len,
        accepted: st.accepted,
        released: st.released,
        quiescent: l.is_quiescent(),
        start_of_source: l.start_of_source(),
    }
}

/// The live requests in id order, as `loader_requests` lists them.
pub(super) fn requests(l: &Loader) -> Vec<loader_request_info> {
    l.ledger()
        .requests()
        .into_iter()
        .map(|(id, r)| loader_request_info {
            id,
            kind: r.kind.into(),
            epoch: r.ep,
            state: r.st.into(),
            superseded: r.sup,
        })
        .collect()
}

/// The view's pages in source order, as `loader_view` lists them.
pub(super) fn pages(l: &Loader) -> Vec<loader_page> {
    l.pages()
        .map(|p| loader_page {
            acquisition: token(p.acquisition),
            count: p.count,
            epoch: p.epoch,
            start: p.start,
        })
        .collect()
}

/// Fills `*out` with what the loader is doing: whether anything is left to do, the window,
/// what the view covers, and the ledger's state. Set `out->struct_size` first; on success it
/// holds the bytes filled. `out` is required.
///
/// # Safety
/// `out` is NULL or valid for reads and writes of its `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn loader_state(
    handle: loader_handle,
    out: *mut loader_snapshot,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        match unsafe { SizedOut::required(out) } {
            Ok(out) => finish(lookup(handle).and_then(|i| i.read(snapshot)), out),
            Err(e) => e,
        }
    })
}

/// Fills `*out` with the loader's counters: reads by kind, answers by class, failures,
/// retries, acquisitions and cancellation hints. Set `out->struct_size` first; on success it
/// holds the bytes filled. `out` is required; the caller owns `*out`.
///
/// # Safety
/// `out` is NULL or valid for reads and writes of its `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn loader_stats(
    handle: loader_handle,
    out: *mut loader_counts,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        match unsafe { SizedOut::required(out) } {
            Ok(out) => {
                let r = lookup(handle).and_then(|i| i.read(|l| loader_counts::from(l.stats())));
                finish(r, out)
            }
            Err(e) => e,
        }
    })
}

/// Lists every live request (in flight, settled, or failed and not yet released) in id order
/// into `out_array`, which holds `capacity` entries (it may be NULL when `capacity` is 0).
/// `*out_len` gets the count. If `capacity` is too small, nothing is copied, `*out_len` gets
/// the length needed, and the result is `LOADER_RESULT_BUFFER_TOO_SMALL`. `out_len` is
/// required. The caller owns the array. The list can grow between a call that reports the
/// length and the next; `loader_view_acquire` and `loader_view_requests` give it in one call.
///
/// # Safety
/// `out_array` is NULL or valid for `capacity` writes; `out_len` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_requests(
    handle: loader_handle,
    out_array: *mut loader_request_info,
    capacity: usize,
    out_len: *mut usize,
) -> loader_result {
    boundary(loader_result::Panic, || {
        let requests = lookup(handle).and_then(|i| i.read(requests));
        // SAFETY: by this function's contract.
        let out = unsafe { OutArray::new(out_array, capacity, out_len) };
        code(requests.and_then(|items| out.fill(&items)))
    })
}

/// Lists the view's pages in source order into `out_array` (as `loader_requests` does with
/// `capacity` and `out_len`), and writes `*out_revalidating` (if not NULL): true while a
/// repair or full read is pending and the pages shown are the old view. The acquisitions
/// listed are still owned by the loader, and only until the next call that can release them
/// (any event, on any thread): reading the items behind them races with `release` unless no
/// other thread calls meanwhile. `loader_view_acquire` pins them instead, without a
/// grow-and-retry loop.
///
/// # Safety
/// As `loader_requests`; `out_revalidating` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_view(
    handle: loader_handle,
    out_array: *mut loader_page,
    capacity: usize,
    out_len: *mut usize,
    out_revalidating: *mut bool,
) -> loader_result {
    boundary(loader_result::Panic, || {
        let view = lookup(handle).and_then(|i| i.read(|l| (pages(l), l.revalidating())));
        // SAFETY: by this function's contract.
        let (out, revalidating) = unsafe {
            (
                OutArray::new(out_array, capacity, out_len),
                Out::optional(out_revalidating),
            )
        };
        let r = view.and_then(|(pages, rev)| out.fill(&pages).map(|()| rev));
        finish(r, revalidating)
    })
}
