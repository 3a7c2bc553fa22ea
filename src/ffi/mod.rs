//! The C ABI: handles, callbacks, the panic boundary, and every exported `loader_*` function.
//!
//! This is the only module with `unsafe`. It knows nothing of the rules: each entry point
//! resolves its handle, runs one loader call under the handle's lock, and then runs the
//! callbacks the call produced, outside every lock, on the calling thread.
//!
//! Callbacks triggered by a call made from inside a callback (a synchronous host that settles
//! inside `issue`, say) are queued on the thread and run, in order, after the running callback
//! returns and before the outermost call returns. That keeps the stack flat however long a
//! chain of synchronous answers is, and never deadlocks: no lock is held while a callback runs.

mod handle;
mod panic;
mod types;

pub use types::*;

use crate::loader::{Config, Effect, Loader, LoaderError, MAX_CURSOR_LEN};
use handle::{HandleError, HandleTable};
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_char;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The longest cursor accepted, in bytes.
pub const LOADER_MAX_CURSOR_LEN: usize = 4096;
/// The largest `page_size` accepted.
pub const LOADER_MAX_PAGE_SIZE: u32 = 1048576;

/// An opaque handle to a loader. 0 is never a valid handle.
#[allow(non_camel_case_types)]
pub type loader_handle = u64;

/// The host's callbacks, shared by every thread that calls into one loader.
struct Host(loader_callbacks);

// SAFETY: the contract in `loader_callbacks` makes the host responsible for `userdata` being
// usable from every thread that calls into the loader; the function pointers are plain code.
unsafe impl Send for Host {}
// SAFETY: as above; the library never dereferences `userdata`, it only passes it back.
unsafe impl Sync for Host {}

struct Instance {
    loader: Mutex<Loader>,
    host: Host,
    poisoned: AtomicBool,
    freed: AtomicBool,
}

static REGISTRY: Lazy<HandleTable<Instance>> = Lazy::new(HandleTable::new);

thread_local! {
    /// Effects waiting to be delivered on this thread, and whether a delivery loop runs.
    static QUEUE: RefCell<VecDeque<(Arc<Instance>, Effect)>> = const { RefCell::new(VecDeque::new()) };
    static DELIVERING: Cell<bool> = const { Cell::new(false) };
    /// A call's effects on their way from the loader to the queue; kept for its capacity.
    static SPARE: RefCell<Vec<Effect>> = const { RefCell::new(Vec::new()) };
}

impl From<HandleError> for loader_result {
    fn from(e: HandleError) -> loader_result {
        match e {
            HandleError::Null | HandleError::Invalid => loader_result::InvalidHandle,
            HandleError::Stale => loader_result::StaleHandle,
            HandleError::Full => loader_result::TooManyHandles,
        }
    }
}

fn code(r: Result<(), loader_result>) -> loader_result {
    r.err().unwrap_or(loader_result::Ok)
}

impl Instance {
    /// Runs `f` on the loader under its lock, then delivers the effects it produced.
    fn call<T>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Loader) -> Result<T, LoaderError>,
    ) -> Result<T, loader_result> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(loader_result::Poisoned);
        }
        let mut effects = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let r = {
            let mut loader = self.loader.lock();
            match std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut loader))) {
                Ok(r) => {
                    loader.drain_effects_into(&mut effects);
                    r.map_err(loader_result::from)
                }
                Err(_) => {
                    self.poisoned.store(true, Ordering::Release);
                    return Err(loader_result::Panic);
                }
            }
        };
        deliver(self, &mut effects);
        SPARE.with(|s| *s.borrow_mut() = effects);
        r
    }

    /// Reads the loader under its lock; produces no effects.
    fn read<T>(&self, f: impl FnOnce(&Loader) -> T) -> Result<T, loader_result> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(loader_result::Poisoned);
        }
        Ok(f(&self.loader.lock()))
    }

    /// Runs the host's callback for one effect.
    fn run(&self, effect: Effect) {
        let cb = &self.host.0;
        let freed = self.freed.load(Ordering::Acquire);
        match effect {
            Effect::Issue(read) if !freed => {
                let r = loader_read {
                    read_id: read.read_id,
                    request_id: read.request_id,
                    kind: read.kind.into(),
                    epoch: read.epoch,
                    step: read.step,
                    cursor: if read.cursor.is_empty() {
                        std::ptr::null()
                    } else {
                        read.cursor.as_ptr()
                    },
                    cursor_len: read.cursor.len(),
                    limit: read.limit,
                };
                if let Some(issue) = cb.issue {
                    // SAFETY: `issue` is the host's function for this signature; `r` and the
                    // cursor bytes it points to live until the call returns.
                    unsafe { issue(cb.userdata, &r) };
                }
            }
            Effect::Release { acquisition } => {
                if let Some(release) = cb.release {
                    // SAFETY: the host's function; the token is the one it gave us, unchanged.
                    unsafe { release(cb.userdata, acquisition as usize) };
                }
            }
            Effect::Cancel { read_id } => {
                if let Some(cancel) = cb.cancel {
                    // SAFETY: the host's function for this signature.
                    unsafe { cancel(cb.userdata, read_id) };
                }
            }
            Effect::Changed if !freed => {
                if let Some(changed) = cb.changed {
                    // SAFETY: the host's function for this signature.
                    unsafe { changed(cb.userdata) };
                }
            }
            Effect::Issue(_) | Effect::Changed => {}
        }
    }
}

/// Resets the delivering flag even if a delivery unwinds.
struct Delivering;

impl Drop for Delivering {
    fn drop(&mut self) {
        DELIVERING.with(|d| d.set(false));
    }
}

/// Queues `effects` and, unless a delivery loop already runs on this thread, delivers every
/// queued effect in order.
fn deliver(inst: &Arc<Instance>, effects: &mut Vec<Effect>) {
    if effects.is_empty() && QUEUE.with(|q| q.borrow().is_empty()) {
        return;
    }
    QUEUE.with(|q| {
        q.borrow_mut()
            .extend(effects.drain(..).map(|e| (Arc::clone(inst), e)))
    });
    if DELIVERING.with(|d| d.replace(true)) {
        return;
    }
    let _reset = Delivering;
    while let Some((inst, effect)) = QUEUE.with(|q| q.borrow_mut().pop_front()) {
        inst.run(effect);
    }
}

fn lookup(handle: loader_handle) -> Result<Arc<Instance>, loader_result> {
    REGISTRY.get(handle).map_err(loader_result::from)
}

/// Runs a loader call for `handle` inside the panic boundary.
fn with_loader(
    handle: loader_handle,
    f: impl FnOnce(&mut Loader) -> Result<(), LoaderError>,
) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        code(lookup(handle).and_then(|i| i.call(f)))
    })
}

/// `bytes, len` as a slice: NULL is allowed only with length 0; longer than the maximum is
/// refused before the pointer is touched.
///
/// # Safety
/// When `p` is not NULL and `len <= LOADER_MAX_CURSOR_LEN`, `p` must point to `len` readable
/// bytes that stay unchanged for the returned lifetime.
unsafe fn cursor<'a>(p: *const u8, len: usize) -> Result<&'a [u8], loader_result> {
    if len > MAX_CURSOR_LEN {
        return Err(loader_result::CursorTooLong);
    }
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(loader_result::NullCursor);
    }
    // SAFETY: non-NULL and, by this function's contract, valid for `len` bytes.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Writes `value` through `out` if it is not NULL.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
unsafe fn write_opt<T>(out: *mut T, value: T) {
    // SAFETY: by the contract, a non-NULL `out` is valid for writes.
    if let Some(out) = unsafe { out.as_mut() } {
        *out = value;
    }
}

/// Checks a config and callbacks and creates a loader from them.
///
/// # Safety
/// Each pointer is NULL or valid for reads (writes, for `out_handle`) of its type.
unsafe fn create(
    config: *const loader_config,
    callbacks: *const loader_callbacks,
    out_handle: *mut loader_handle,
    make: impl FnOnce(Config) -> Result<Loader, LoaderError>,
) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let (config, callbacks) = match unsafe { (config.as_ref(), callbacks.as_ref()) } {
            (Some(c), Some(cb)) if !out_handle.is_null() => (c, *cb),
            _ => return loader_result::NullPointer,
        };
        if callbacks.issue.is_none() || callbacks.release.is_none() {
            return loader_result::MissingCallback;
        }
        let loader = match make(config.into()) {
            Ok(l) => l,
            Err(e) => return e.into(),
        };
        let inst = Arc::new(Instance {
            loader: Mutex::new(loader),
            host: Host(callbacks),
            poisoned: AtomicBool::new(false),
            freed: AtomicBool::new(false),
        });
        match REGISTRY.insert(inst) {
            Ok(h) => {
                // SAFETY: checked non-NULL above; valid for writes by the contract.
                unsafe { *out_handle = h };
                loader_result::Ok
            }
            Err(e) => e.into(),
        }
    })
}

// ---- lifecycle ----

/// Fills `*out` with the default settings. Returns `LOADER_RESULT_NULL_POINTER` if `out` is
/// NULL. The caller owns `*out`.
///
/// # Safety
/// `out` is NULL or valid for a write of a `loader_config`.
#[no_mangle]
pub unsafe extern "C" fn loader_config_default(out: *mut loader_config) -> loader_result {
    if out.is_null() {
        return loader_result::NullPointer;
    }
    // SAFETY: non-NULL, and valid for writes by the contract.
    unsafe { *out = Config::default().into() };
    loader_result::Ok
}

/// Creates a loader and writes its handle to `*out_handle`.
///
/// `config` and `callbacks` are copied; the caller keeps ownership of both structs.
/// `callbacks->issue` and `callbacks->release` must not be NULL (else
/// `LOADER_RESULT_MISSING_CALLBACK`); `changed` and `cancel` may be. `callbacks->userdata`
/// must stay valid until `loader_free` returns. NULL `config`, `callbacks` or `out_handle`
/// returns `LOADER_RESULT_NULL_POINTER`; a bad setting returns the code naming it. The
/// caller owns the handle and must pass it to `loader_free`.
///
/// # Safety
/// Each pointer is NULL or valid for its type; the callbacks follow their documented contract.
#[no_mangle]
pub unsafe extern "C" fn loader_new(
    config: *const loader_config,
    callbacks: *const loader_callbacks,
    out_handle: *mut loader_handle,
) -> loader_result {
    // SAFETY: forwarded contract.
    unsafe { create(config, callbacks, out_handle, Loader::new) }
}

/// As `loader_new`, with the epoch and the first request id starting at the given values.
/// For testing counter exhaustion near `UINT64_MAX`; hosts use `loader_new`.
///
/// # Safety
/// As `loader_new`.
#[no_mangle]
pub unsafe extern "C" fn loader_new_with_counters(
    config: *const loader_config,
    callbacks: *const loader_callbacks,
    epoch: u64,
    next_request_id: u64,
    out_handle: *mut loader_handle,
) -> loader_result {
    // SAFETY: forwarded contract.
    unsafe {
        create(config, callbacks, out_handle, |c| {
            Loader::with_counters(c, epoch, next_request_id)
        })
    }
}

/// Frees a loader. Before it returns, `release` has been called exactly once for every
/// acquisition the loader still held, and `cancel` (if set) for every read still outstanding
/// that the host was told about (a free from inside a callback drops the `issue` callbacks
/// still queued, and sends no cancel for those reads);
/// no `issue` or `changed` callback runs for this loader afterwards. Answers to its reads then
/// return `LOADER_RESULT_STALE_HANDLE`.
///
/// It may be called from inside any of this loader's callbacks. A handle that is 0 or forged
/// returns `LOADER_RESULT_INVALID_HANDLE`; a second free returns `LOADER_RESULT_STALE_HANDLE`.
/// A poisoned loader is freed too, releasing what it can.
#[no_mangle]
pub extern "C" fn loader_free(handle: loader_handle) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        let inst = match REGISTRY.remove(handle) {
            Ok(i) => i,
            Err(e) => return e.into(),
        };
        inst.freed.store(true, Ordering::Release);
        let closing = {
            let mut loader = inst.loader.lock();
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                loader.close();
                loader.take_effects()
            }))
            .unwrap_or_default()
        };
        // This loader's effects still queued on this thread (free called from a callback)
        // go first, then the close's; all of them now, so userdata may go once this returns.
        let mut mine: Vec<Effect> = QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            let (mine, others): (VecDeque<_>, VecDeque<_>) =
                q.drain(..).partition(|(i, _)| Arc::ptr_eq(i, &inst));
            *q = others;
            mine.into_iter().map(|(_, e)| e).collect()
        });
        // A read whose `issue` was still queued never reached the host: no cancel for it.
        let unissued: Vec<u64> = mine
            .iter()
            .filter_map(|e| match e {
                Effect::Issue(r) => Some(r.read_id),
                _ => None,
            })
            .collect();
        mine.extend(
            closing
                .into_iter()
                .filter(|e| !matches!(e, Effect::Cancel { read_id } if unissued.contains(read_id))),
        );
        for e in mine {
            inst.run(e);
        }
        loader_result::Ok
    })
}

/// The library's version, e.g. "0.1.0": a static NUL-terminated string the caller must not
/// free.
#[no_mangle]
pub extern "C" fn loader_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The static NUL-terminated message for a result code; "unknown result code" for a value
/// that is not one. The caller must not free it.
#[no_mangle]
pub extern "C" fn loader_result_str(code: i32) -> *const c_char {
    types::result_str(code)
}

// ---- host events ----

/// The source changed. Starts a repair or full read as the rules say (through `issue`).
#[no_mangle]
pub extern "C" fn loader_invalidate(handle: loader_handle) -> loader_result {
    with_loader(handle, |l| l.invalidate())
}

/// Answers read `read_id` with `count` items held by `acquisition`, and the cursor after them.
///
/// On `LOADER_RESULT_OK` the loader owns `acquisition` and will pass it to `release` exactly
/// once; `*out_answer` (if not NULL) says how the answer was classified. On any error the
/// host still owns `acquisition` and nothing changed. `next_cursor` is copied; it may be NULL
/// only when `next_cursor_len` is 0. A late answer to a superseded read is not an error.
///
/// # Safety
/// `next_cursor` is NULL or valid for `next_cursor_len` bytes; `out_answer` is NULL or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_settle(
    handle: loader_handle,
    read_id: u64,
    acquisition: usize,
    count: u32,
    next_cursor: *const u8,
    next_cursor_len: usize,
    end_of_source: bool,
    out_answer: *mut loader_answer,
) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let next = match unsafe { cursor(next_cursor, next_cursor_len) } {
            Ok(c) => c,
            Err(e) => return e,
        };
        let r = lookup(handle).and_then(|i| {
            i.call(|l| l.settle(read_id, acquisition as u64, count, next, end_of_source))
        });
        match r {
            Ok(a) => {
                // SAFETY: by this function's contract.
                unsafe { write_opt(out_answer, a.into()) };
                loader_result::Ok
            }
            Err(e) => e,
        }
    })
}

/// Answers read `read_id` with a failure; `code` is the host's own, kept for its records.
/// `*out_answer` (if not NULL) is `LOADER_ANSWER_CURRENT` for an own failure (it waits for a
/// retry) or `LOADER_ANSWER_STALE` for a superseded read's (it blocks nothing).
///
/// # Safety
/// `out_answer` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_fail(
    handle: loader_handle,
    read_id: u64,
    code: i32,
    out_answer: *mut loader_answer,
) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        match lookup(handle).and_then(|i| i.call(|l| l.fail(read_id, code))) {
            Ok(a) => {
                // SAFETY: by this function's contract.
                unsafe { write_opt(out_answer, a.into()) };
                loader_result::Ok
            }
            Err(e) => e,
        }
    })
}

/// Retries a recorded own failure now, with a full-source read. `*out_started` (if not NULL)
/// says whether a read started; with nothing to retry the call succeeds and starts nothing.
///
/// # Safety
/// `out_started` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_retry(
    handle: loader_handle,
    out_started: *mut bool,
) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        match lookup(handle).and_then(|i| i.call(|l| l.retry())) {
            Ok(started) => {
                // SAFETY: by this function's contract.
                unsafe { write_opt(out_started, started) };
                loader_result::Ok
            }
            Err(e) => e,
        }
    })
}

/// Moves the window to items `[start, start + len)`. Growing it issues reads; with a failure
/// recorded it retries. `LOADER_RESULT_WINDOW_OVERFLOW` if `start + len` overflows.
#[no_mangle]
pub extern "C" fn loader_set_window(handle: loader_handle, start: u64, len: u64) -> loader_result {
    with_loader(handle, |l| l.set_window(start, len))
}

/// Tells the loader the host's time, in ms on any monotonic clock; fires a due backoff retry.
#[no_mangle]
pub extern "C" fn loader_tick(handle: loader_handle, now_ms: u64) -> loader_result {
    with_loader(handle, |l| l.tick(now_ms))
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
    panic::boundary(loader_result::Panic, || {
        if out_armed.is_null() || out_deadline_ms.is_null() {
            return loader_result::NullPointer;
        }
        match lookup(handle).and_then(|i| i.read(|l| l.next_deadline())) {
            Ok(d) => {
                // SAFETY: both checked non-NULL; valid for writes by the contract.
                unsafe {
                    *out_armed = d.is_some();
                    *out_deadline_ms = d.unwrap_or(0);
                }
                loader_result::Ok
            }
            Err(e) => e,
        }
    })
}

// ---- introspection ----

/// Fills `*out` with the spec's abstract state and the loader's counts. `out` is required.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_state(
    handle: loader_handle,
    out: *mut loader_snapshot,
) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        if out.is_null() {
            return loader_result::NullPointer;
        }
        let r = lookup(handle).and_then(|i| {
            i.read(|l| {
                let s = l.ledger().snapshot();
                let st = l.stats();
                let (covered_start, covered_end) = l.covered();
                let (window_start, window_len) = l.window();
                loader_snapshot {
                    epoch: s.epoch,
                    debt: s.debt.into(),
                    phase: s.phase.into(),
                    chain_epoch: s.chain_epoch,
                    failure: s.failure.into(),
                    coverage: s.coverage.into(),
                    settled_once: s.settled_once,
                    cover_epoch: s.cover_epoch,
                    inflight: s.inflight as u64,
                    settled: s.settled as u64,
                    failed: s.failed as u64,
                    next_request_id: s.next_id,
                    pages: l.pages().len() as u64,
                    outstanding_reads: l.outstanding_reads() as u64,
                    revalidating: l.revalidating(),
                    end_of_source: l.end_of_source(),
                    covered_start,
                    covered_end,
                    window_start,
                    window_len,
                    accepted: st.accepted,
                    released: st.released,
                }
            })
        });
        match r {
            Ok(s) => {
                // SAFETY: checked non-NULL; valid for writes by the contract.
                unsafe { *out = s };
                loader_result::Ok
            }
            Err(e) => e,
        }
    })
}

/// Fills `*out` with the loader's counters: reads by kind, answers by class, failures,
/// retries, acquisitions and cancellation hints. `out` is required; the caller owns `*out`.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_stats(
    handle: loader_handle,
    out: *mut loader_counts,
) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        if out.is_null() {
            return loader_result::NullPointer;
        }
        match lookup(handle).and_then(|i| i.read(|l| loader_counts::from(l.stats()))) {
            Ok(c) => {
                // SAFETY: checked non-NULL; valid for writes by the contract.
                unsafe { *out = c };
                loader_result::Ok
            }
            Err(e) => e,
        }
    })
}

/// Copies `items` to `out_array` if it fits, else reports the length needed.
///
/// # Safety
/// `out_array` is NULL or valid for `capacity` writes; `out_len` is NULL or valid for a write.
unsafe fn copy_out<T: Copy>(
    items: &[T],
    out_array: *mut T,
    capacity: usize,
    out_len: *mut usize,
) -> loader_result {
    if out_len.is_null() {
        return loader_result::NullPointer;
    }
    if items.len() > capacity {
        // SAFETY: checked non-NULL above.
        unsafe { *out_len = items.len() };
        return loader_result::BufferTooSmall;
    }
    if !items.is_empty() {
        if out_array.is_null() {
            return loader_result::NullPointer;
        }
        // SAFETY: `out_array` holds `capacity >= items.len()` elements by the contract, and
        // cannot overlap `items`, which the library owns.
        unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), out_array, items.len()) };
    }
    // SAFETY: checked non-NULL above.
    unsafe { *out_len = items.len() };
    loader_result::Ok
}

/// Lists every live request (in flight, settled, or failed and not yet released) in id order
/// into `out_array`, which holds `capacity` entries (it may be NULL when `capacity` is 0).
/// `*out_len` gets the count. If `capacity` is too small, nothing is copied, `*out_len` gets
/// the length needed, and the result is `LOADER_RESULT_BUFFER_TOO_SMALL`. `out_len` is
/// required. The caller owns the array.
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
    panic::boundary(loader_result::Panic, || {
        let r = lookup(handle).and_then(|i| {
            i.read(|l| {
                l.ledger()
                    .requests()
                    .into_iter()
                    .map(|(id, r)| loader_request_info {
                        id,
                        kind: r.kind.into(),
                        epoch: r.ep,
                        state: match r.st {
                            crate::ledger::St::Inflight => loader_request_state::Inflight,
                            crate::ledger::St::Settled => loader_request_state::Settled,
                            crate::ledger::St::Failed => loader_request_state::Failed,
                        },
                        superseded: r.sup,
                    })
                    .collect::<Vec<_>>()
            })
        });
        match r {
            // SAFETY: forwarded contract.
            Ok(items) => unsafe { copy_out(&items, out_array, capacity, out_len) },
            Err(e) => e,
        }
    })
}

/// Lists the view's pages in source order into `out_array` (as `loader_requests` does with
/// `capacity` and `out_len`), and writes `*out_revalidating` (if not NULL): true while a
/// repair or full read is pending and the pages shown are the old view. The acquisitions
/// listed are still owned by the loader.
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
    panic::boundary(loader_result::Panic, || {
        let r = lookup(handle).and_then(|i| {
            i.read(|l| {
                let pages: Vec<loader_page> = l
                    .pages()
                    .map(|p| loader_page {
                        acquisition: p.acquisition as usize,
                        count: p.count,
                        epoch: p.epoch,
                        start: p.start,
                    })
                    .collect();
                (pages, l.revalidating())
            })
        });
        match r {
            Ok((pages, revalidating)) => {
                // SAFETY: forwarded contract.
                let r = unsafe { copy_out(&pages, out_array, capacity, out_len) };
                if r == loader_result::Ok {
                    // SAFETY: by this function's contract.
                    unsafe { write_opt(out_revalidating, revalidating) };
                }
                r
            }
            Err(e) => e,
        }
    })
}

// ---- measurement and testing ----

/// Does only what every event call does around the rules: the handle lookup, the lock, and
/// one callback (`changed`, if set). The benchmarks' floor for the ABI's per-event cost.
#[no_mangle]
pub extern "C" fn loader_floor(handle: loader_handle) -> loader_result {
    panic::boundary(loader_result::Panic, || {
        code(lookup(handle).and_then(|i| {
            i.call(|_| Ok(()))?;
            // Delivered as every call's callbacks are, so nesting behaves the same.
            let mut one = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
            one.push(Effect::Changed);
            deliver(&i, &mut one);
            SPARE.with(|s| *s.borrow_mut() = one);
            Ok(())
        }))
    })
}

/// Panics inside the library, under the handle's lock, to test the panic boundary: returns
/// `LOADER_RESULT_PANIC`, and the handle is poisoned from then on (every call but
/// `loader_free` returns `LOADER_RESULT_POISONED`).
#[no_mangle]
pub extern "C" fn loader_test_panic(handle: loader_handle) -> loader_result {
    with_loader(handle, |_| panic!("loader_test_panic: a deliberate panic"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_the_loader() {
        assert_eq!(LOADER_MAX_CURSOR_LEN, crate::loader::MAX_CURSOR_LEN);
        assert_eq!(LOADER_MAX_PAGE_SIZE, crate::loader::MAX_PAGE_SIZE);
    }

    #[test]
    fn every_code_has_its_own_message() {
        let mut seen = std::collections::HashSet::new();
        for r in loader_result::ALL {
            assert!(seen.insert(r.message()), "{r:?}");
            assert_eq!(r.message().last(), Some(&0));
        }
        // SAFETY: result_str returns a static NUL-terminated string.
        let unknown = unsafe { std::ffi::CStr::from_ptr(loader_result_str(999)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown result code");
    }

    #[test]
    fn version_is_the_crate_version() {
        // SAFETY: a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(loader_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
