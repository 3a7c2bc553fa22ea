//! Safe wrappers over the exported `loader_*` functions: the fuzz crate's only `unsafe`.
//!
//! Each wrapper takes Rust references or explicit "pass NULL" choices and hands the library
//! pointers that satisfy the header's contract, so a failure the fuzzer finds is the library's,
//! never this crate's undefined behaviour.

use loader::ffi::*;
use std::ffi::{c_char, c_void, CStr};

/// Where an out-parameter points: a real place, or NULL.
pub fn out_ptr<T>(place: Option<&mut T>) -> *mut T {
    place.map_or(std::ptr::null_mut(), |p| p as *mut T)
}

/// Where an array argument points: the array, or NULL; a claimed `capacity` beyond the array
/// is this crate's bug, so it panics before the library could write past the end.
fn array_ptr<T>(array: Option<&mut [T]>, capacity: usize) -> *mut T {
    match array {
        Some(a) => {
            assert!(capacity <= a.len(), "capacity beyond the array");
            a.as_mut_ptr()
        }
        None => std::ptr::null_mut(),
    }
}

/// A cursor argument of `loader_settle`.
#[derive(Clone, Copy, Debug)]
pub enum Cursor<'a> {
    /// These bytes (a non-NULL pointer, even when empty).
    Bytes(&'a [u8]),
    /// NULL with this length.
    Null(usize),
}

/// `loader_config_default` into `out` (NULL when `None`).
pub fn config_default(out: Option<&mut loader_config>) -> loader_result {
    // SAFETY: `out` is NULL or a live, writable `loader_config`.
    unsafe { loader_config_default(out_ptr(out)) }
}

/// `loader_new_with_counters` when `counters` is given, else `loader_new`.
pub fn new(
    config: Option<&loader_config>,
    callbacks: Option<&loader_callbacks>,
    counters: Option<(u64, u64)>,
    out: Option<&mut loader_handle>,
) -> loader_result {
    let c = config.map_or(std::ptr::null(), |c| c as *const loader_config);
    let cb = callbacks.map_or(std::ptr::null(), |c| c as *const loader_callbacks);
    let out = out_ptr(out);
    match counters {
        // SAFETY: each pointer is NULL or points to a live value of its type; the callbacks'
        // userdata is a `Host` that outlives the loader (see `host.rs`).
        Some((epoch, id)) => unsafe { loader_new_with_counters(c, cb, epoch, id, out) },
        // SAFETY: as above.
        None => unsafe { loader_new(c, cb, out) },
    }
}

/// `loader_settle`, with the cursor passed as `cursor` says.
#[allow(clippy::too_many_arguments)]
pub fn settle(
    handle: loader_handle,
    read_id: u64,
    acquisition: usize,
    count: u32,
    cursor: Cursor,
    end_of_source: bool,
    out: Option<&mut loader_answer>,
) -> loader_result {
    let (ptr, len) = match cursor {
        Cursor::Bytes(b) => (b.as_ptr(), b.len()),
        Cursor::Null(len) => (std::ptr::null(), len),
    };
    // SAFETY: `ptr` is NULL or valid for `len` bytes for the whole call; `out` is NULL or a
    // live, writable `loader_answer`.
    unsafe {
        loader_settle(
            handle,
            read_id,
            acquisition,
            count,
            ptr,
            len,
            end_of_source,
            out_ptr(out),
        )
    }
}

/// The pointer and length a [`Cursor`] passes.
fn raw(cursor: Cursor) -> (*const u8, usize) {
    match cursor {
        Cursor::Bytes(b) => (b.as_ptr(), b.len()),
        Cursor::Null(len) => (std::ptr::null(), len),
    }
}

/// `loader_invalidate_range`, with each cursor passed as it says (`Null(0)` for `to` is the
/// source's end).
pub fn invalidate_range(handle: loader_handle, from: Cursor, to: Cursor) -> loader_result {
    let ((f, f_len), (t, t_len)) = (raw(from), raw(to));
    // SAFETY: each pointer is NULL or valid for its length for the whole call.
    unsafe { loader_invalidate_range(handle, f, f_len, t, t_len) }
}

/// `loader_jump`, with the cursor passed as `cursor` says.
pub fn jump(handle: loader_handle, cursor: Cursor, position: u64) -> loader_result {
    let (p, len) = raw(cursor);
    // SAFETY: `p` is NULL or valid for `len` bytes for the whole call.
    unsafe { loader_jump(handle, p, len, position) }
}

/// `loader_fail`.
pub fn fail(
    handle: loader_handle,
    read_id: u64,
    code: i32,
    out: Option<&mut loader_answer>,
) -> loader_result {
    // SAFETY: `out` is NULL or a live, writable `loader_answer`.
    unsafe { loader_fail(handle, read_id, code, out_ptr(out)) }
}

/// `loader_retry`.
pub fn retry(handle: loader_handle, out: Option<&mut bool>) -> loader_result {
    // SAFETY: `out` is NULL or a live, writable `bool`.
    unsafe { loader_retry(handle, out_ptr(out)) }
}

/// `loader_next_deadline`.
pub fn next_deadline(
    handle: loader_handle,
    armed: Option<&mut bool>,
    deadline: Option<&mut u64>,
) -> loader_result {
    // SAFETY: each pointer is NULL or a live, writable value of its type.
    unsafe { loader_next_deadline(handle, out_ptr(armed), out_ptr(deadline)) }
}

/// `loader_state`.
pub fn state(handle: loader_handle, out: Option<&mut loader_snapshot>) -> loader_result {
    // SAFETY: `out` is NULL or a live, writable `loader_snapshot`.
    unsafe { loader_state(handle, out_ptr(out)) }
}

/// `loader_requests` into `array` (NULL when `None`) claiming `capacity` entries, which must
/// not exceed the array's length.
pub fn requests(
    handle: loader_handle,
    array: Option<&mut [loader_request_info]>,
    capacity: usize,
    out_len: Option<&mut usize>,
) -> loader_result {
    let ptr = array_ptr(array, capacity);
    // SAFETY: `ptr` is NULL or valid for `capacity` writes (checked by `array_ptr`); a NULL array with a
    // non-zero capacity is allowed by the contract and must be refused, not written.
    unsafe { loader_requests(handle, ptr, capacity, out_ptr(out_len)) }
}

/// `loader_view`, with the array rules of [`requests`].
pub fn view(
    handle: loader_handle,
    array: Option<&mut [loader_page]>,
    capacity: usize,
    out_len: Option<&mut usize>,
    revalidating: Option<&mut bool>,
) -> loader_result {
    let ptr = array_ptr(array, capacity);
    // SAFETY: as in `requests`; `revalidating` is NULL or a live, writable `bool`.
    unsafe {
        loader_view(
            handle,
            ptr,
            capacity,
            out_ptr(out_len),
            out_ptr(revalidating),
        )
    }
}

/// A copy of the static NUL-terminated string `function` returned.
fn copy_static(p: *const c_char, function: &str) -> String {
    assert!(!p.is_null(), "{function} returned NULL");
    // SAFETY: the library returns a static NUL-terminated string, and it is not NULL.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .unwrap_or_else(|_| panic!("{function} returned a string that is not UTF-8"))
        .to_owned()
}

/// The message for `code`, copied out of the library's static string.
pub fn result_str(code: i32) -> String {
    copy_static(loader_result_str(code), "loader_result_str")
}

/// `loader_version`, copied out of the library's static string.
pub fn version() -> String {
    copy_static(loader_version(), "loader_version")
}

/// The cursor bytes of a read passed to `issue`.
///
/// # Safety
/// `read` is the pointer the library passed to the `issue` callback that is running now.
pub unsafe fn read_in_callback<'a>(
    read: *const loader_read,
) -> (&'a loader_read, Option<&'a [u8]>) {
    // SAFETY: by this function's contract, valid for the duration of the callback.
    let r = unsafe { &*read };
    let cursor = if r.cursor.is_null() {
        (r.cursor_len == 0).then_some(&[][..])
    } else {
        // SAFETY: the header promises `cursor_len` readable bytes at `cursor` during the call.
        Some(unsafe { std::slice::from_raw_parts(r.cursor, r.cursor_len) })
    };
    (r, cursor)
}

/// The `until` bytes of a read passed to `issue`: `None` for an unbounded read.
///
/// # Safety
/// `r` is the read the library passed to the `issue` callback that is running now.
pub unsafe fn until_in_callback(r: &loader_read) -> Option<&[u8]> {
    if r.until.is_null() {
        return None;
    }
    // SAFETY: the header promises `until_len` readable bytes at a non-NULL `until` during the
    // call.
    Some(unsafe { std::slice::from_raw_parts(r.until, r.until_len) })
}

/// Two cursors a `compare` callback was given.
///
/// # Safety
/// Each pointer is valid for its length: the library passes them to the running `compare`.
pub unsafe fn compared<'a>(
    a: *const u8,
    a_len: usize,
    b: *const u8,
    b_len: usize,
) -> Option<(&'a [u8], &'a [u8])> {
    if a.is_null() || b.is_null() {
        return None;
    }
    // SAFETY: by this function's contract.
    Some(unsafe {
        (
            std::slice::from_raw_parts(a, a_len),
            std::slice::from_raw_parts(b, b_len),
        )
    })
}

/// The `Host` a callback's userdata names.
///
/// # Safety
/// `userdata` is a pointer this crate registered from a `&Host` that is still alive.
pub unsafe fn host_of<'a, H>(userdata: *mut c_void) -> &'a H {
    // SAFETY: by this function's contract.
    unsafe { &*(userdata as *const H) }
}
