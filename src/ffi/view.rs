//! Pinned views: a snapshot of the view, the state and the live requests, taken in one
//! critical section, whose acquisitions stay valid until the snapshot is released.
//!
//! `loader_view` copies the pages into the host's array, but the acquisitions it lists may be
//! released by the next call on any thread, so a host that reads the items behind them races
//! with `release`. A pinned view closes that race: the acquisitions it lists are pinned
//! (`pins.rs`) before the loader's lock is let go, so their `release` waits for the view. One
//! call, one allocation, no grow-and-retry loop.

#![allow(non_camel_case_types)]

use super::delivery::deliver;
use super::instance::{loader_handle, lookup, Instance};
use super::introspection::{pages, requests, snapshot};
use super::panic::boundary;
use super::pointer::{finish, try_ref, widen, Out};
use super::result::loader_result;
use super::sized::SizedOut;
use super::types::{loader_page, loader_request_info, loader_snapshot};
use std::sync::Arc;

/// A pinned view: the view's pages, whether it is revalidating, a copy of the loader's state
/// and its live requests, all from one moment. Opaque; made by `loader_view_acquire`, read
/// with `loader_view_pages`, `loader_view_requests` and `loader_view_state`, freed by
/// `loader_view_release`. The acquisitions it lists are not released while it is held.
///
/// Immutable once made: any number of threads may read one view at the same time; releasing
/// it must not overlap a read of it.
pub struct loader_view_snapshot {
    /// Keeps the loader's pins and callbacks alive, even past `loader_free`.
    inst: Arc<Instance>,
    pages: Vec<loader_page>,
    requests: Vec<loader_request_info>,
    state: loader_snapshot,
    /// The tokens pinned, once per page: what `loader_view_release` unpins.
    tokens: Vec<u64>,
}

/// `items` as a C array: its first element, or NULL when it is empty.
fn array<T>(items: &[T]) -> *const T {
    if items.is_empty() {
        std::ptr::null()
    } else {
        items.as_ptr()
    }
}

/// Pins the view: allocates a snapshot of the view's pages, whether it is revalidating, the
/// loader's state (as `loader_state` gives it) and its live requests (as `loader_requests`
/// lists them), all taken under one lock, and writes it to `*out_view`. No callback runs.
///
/// While the snapshot is held, no acquisition it lists is released: a call (on any thread)
/// that lets go of one defers its `release` callback, and `loader_view_release` of the last
/// snapshot listing it delivers it. So the items behind every listed acquisition may be read
/// until the snapshot is released, from any thread. Release every snapshot: a snapshot held
/// forever holds its acquisitions forever. Taking one costs a few allocations and a copy of
/// the pages and requests; the loader's lock is held only while they are copied.
///
/// `out_view` is required. `LOADER_RESULT_POISONED` on a poisoned loader.
///
/// # Safety
/// `out_view` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_view_acquire(
    handle: loader_handle,
    out_view: *mut *mut loader_view_snapshot,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let out = match unsafe { Out::required(out_view) } {
            Ok(out) => out,
            Err(e) => return e,
        };
        let view = lookup(handle).and_then(|inst| {
            let ((pages, requests, state), tokens) = inst.pin(|l| {
                let pages = pages(l);
                let tokens = pages.iter().map(|p| widen(p.acquisition)).collect();
                ((pages, requests(l), snapshot(l)), tokens)
            })?;
            let view = loader_view_snapshot {
                inst,
                pages,
                requests,
                state,
                tokens,
            };
            Ok(Box::into_raw(Box::new(view)))
        });
        finish(view, out)
    })
}

/// The pinned view's pages in source order: `*out_pages` points to `*out_len` entries (NULL
/// when there are none), owned by the snapshot and valid until `loader_view_release`;
/// `*out_revalidating` (if not NULL) is true when a repair or full read was pending or running
/// and the pages are the old view. `view`, `out_pages` and `out_len` are required.
///
/// # Safety
/// `view` is NULL or a snapshot from `loader_view_acquire` not yet released; each out-pointer
/// is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_view_pages(
    view: *const loader_view_snapshot,
    out_pages: *mut *const loader_page,
    out_len: *mut usize,
    out_revalidating: *mut bool,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let args = unsafe {
            (
                try_ref(view),
                Out::required(out_pages),
                Out::required(out_len),
                Out::optional(out_revalidating),
            )
        };
        let (Ok(view), Ok(pages), Ok(len), revalidating) = args else {
            return loader_result::NullPointer;
        };
        let value = (
            (array(&view.pages), view.pages.len()),
            view.state.revalidating,
        );
        finish(Ok(value), ((pages, len), revalidating))
    })
}

/// The live requests when the view was pinned, in id order: `*out_requests` points to
/// `*out_len` entries (NULL when there are none), owned by the snapshot and valid until
/// `loader_view_release`. All three arguments are required. This is the way to list the
/// requests without a grow-and-retry loop; `loader_requests` copies into the caller's array.
///
/// # Safety
/// As `loader_view_pages`.
#[no_mangle]
pub unsafe extern "C" fn loader_view_requests(
    view: *const loader_view_snapshot,
    out_requests: *mut *const loader_request_info,
    out_len: *mut usize,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let args = unsafe {
            (
                try_ref(view),
                Out::required(out_requests),
                Out::required(out_len),
            )
        };
        let (Ok(view), Ok(requests), Ok(len)) = args else {
            return loader_result::NullPointer;
        };
        let value = (array(&view.requests), view.requests.len());
        finish(Ok(value), (requests, len))
    })
}

/// Copies the loader's state when the view was pinned (as `loader_state` gave it then) to
/// `*out`. Set `out->struct_size` first; on success it holds the bytes filled. Both arguments
/// are required.
///
/// # Safety
/// `view` as for `loader_view_pages`; `out` is NULL or valid for reads and writes of its
/// `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn loader_view_state(
    view: *const loader_view_snapshot,
    out: *mut loader_snapshot,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let (view, out) = unsafe { (try_ref(view), SizedOut::required(out)) };
        match (view, out) {
            (Ok(view), Ok(out)) => finish(Ok(view.state), out),
            (Err(e), _) | (_, Err(e)) => e,
        }
    })
}

/// Releases a pinned view and frees it; NULL is accepted and does nothing. Every `release`
/// callback it deferred whose acquisition no other pinned view lists runs now, on the calling
/// thread, before this returns (from inside a callback: after the callbacks already queued on
/// the thread, before the outermost call returns), like any call's callbacks.
///
/// It works after `loader_free` and on a poisoned loader: `loader_free` defers the release of
/// every acquisition a pinned view lists, and the last `loader_view_release` listing it makes
/// it. So `userdata` must stay valid until every view of the loader is released.
///
/// Releasing a view twice, or using it after it is released, is undefined behaviour, like
/// `free`. A `release` callback that ends its thread or throws unwinds out of this call; the
/// view is freed by then, and the releases after it are made by the next call into the
/// loader (none if it was freed).
///
/// # Safety
/// `view` is NULL or a snapshot from `loader_view_acquire` not yet released, that no other
/// thread is reading.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_view_release(
    view: *mut loader_view_snapshot,
) -> loader_result {
    let step = boundary(Err(loader_result::Panic), || {
        if view.is_null() {
            return Ok(None);
        }
        // SAFETY: by this function's contract, `view` came from `Box::into_raw` in
        // `loader_view_acquire` and is released once.
        let view = unsafe { Box::from_raw(view) };
        let due = view.inst.unpin(&view.tokens);
        Ok(Some((Arc::clone(&view.inst), due)))
    });
    match step {
        Ok(Some((inst, due))) => {
            let r = deliver(&inst, due);
            // The last reference to a freed loader may be this one: its destructor is Rust.
            boundary((), move || drop(inst));
            r.err().unwrap_or(loader_result::Ok)
        }
        Ok(None) => loader_result::Ok,
        Err(e) => e,
    }
}
