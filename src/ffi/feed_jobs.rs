//! The feed in job mode, over the C ABI: `loader_feed_new_jobs`, `loader_feed_next_job`,
//! `loader_feed_complete_job`. The feed keeps every rule of `loader_feed_new`'s; only its
//! loads run on threads the host owns, each a job taken and answered here.

#![allow(non_camel_case_types)]

use super::feed::{
    create, entry, loader_feed_config, loader_feed_handle, loader_load_result, timeout, CRead,
};
use super::handle::HandleTable;
use super::panic::boundary;
use super::pointer::{finish, Out};
use super::result::loader_result;
use super::types::loader_read;
use crate::feed::{Hub, Outcome, Pending};
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Arc;

/// Names one job, from `loader_feed_next_job` to its `loader_feed_complete_job`. 0 is never
/// one; a token answered already is `LOADER_RESULT_STALE_HANDLE`, as a freed handle is.
pub type loader_feed_job_token = u64;

/// A job: one read for the host's thread to load, as a `loader_load_fn` would get it.
#[repr(C)]
#[derive(Debug)]
pub struct loader_feed_job {
    /// Pass it to `loader_feed_complete_job`, exactly once, whatever the load came to.
    pub token: loader_feed_job_token,
    /// The read. Its cursor bytes (`cursor`, `until`) are the library's and stay valid until
    /// `loader_feed_complete_job` is called with `token`.
    pub read: loader_read,
}

/// Called after a job is queued, on the feed thread that queued it, with the config's
/// `userdata`: a host that waits on an event loop rather than in `loader_feed_next_job`
/// wakes it from here (then calls `loader_feed_next_job` with a timeout of 0). It must be
/// short, call no loader_feed_* function, and return normally.
pub type loader_feed_ready_fn = Option<unsafe extern "C-unwind" fn(userdata: *mut c_void)>;

/// A job taken and not yet answered, and the feed's jobs it came from (their address).
struct Taken {
    job: Arc<Pending<CRead>>,
    hub: usize,
}

/// Every job taken and not yet answered, in every feed: a job outlives its feed's free until
/// it is answered.
static JOBS: HandleTable<Taken> = HandleTable::new();

thread_local! {
    /// The jobs this thread took and has not answered, by their feed's jobs' address: a free
    /// called from inside a job does not wait for it (its thread runs it).
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

fn hub_key(hub: &Arc<Hub<CRead>>) -> usize {
    Arc::as_ptr(hub) as usize
}

/// How many of the jobs of `hub` the calling thread holds.
pub(super) fn held_here(hub: &Arc<Hub<CRead>>) -> usize {
    let key = hub_key(hub);
    HELD.with(|h| h.borrow().iter().filter(|&&k| k == key).count())
}

/// Creates a feed in job mode: as `loader_feed_new`, but the feed runs no load itself. Each
/// read it would load is queued as a job; the host's own threads take jobs
/// (`loader_feed_next_job`), run the load, and answer them (`loader_feed_complete_job`).
/// Everything else is the feed's, as with `loader_feed_new`: retries and their timer, read
/// timeouts, cancel hints, the problems `loader_feed_wait_quiescent` reports, `release` of
/// every page exactly once, and `loader_feed_free`.
///
/// `config->load` is not called (it may be NULL). `config->workers` is how many jobs may be
/// taken at once (1 to `LOADER_FEED_MAX_WORKERS`): run that many host threads, or fewer. A
/// job taken and not answered past the loader's `read_timeout_ms` is let go of, as a stuck
/// load is: its read fails (when still needed), and the feed queues the next jobs in its
/// place; when it is answered at last, its page goes to `release`. `ready` (may be NULL) is
/// called after each job is queued (`loader_feed_ready_fn`).
///
/// Errors: those of `loader_feed_new`, except that only `release` is a required callback.
///
/// # Safety
/// As `loader_feed_new`; `ready` follows its contract.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_new_jobs(
    config: *const loader_feed_config,
    ready: loader_feed_ready_fn,
    out: *mut loader_feed_handle,
) -> loader_result {
    // SAFETY: forwarded contract.
    boundary(loader_result::Panic, || unsafe {
        create(config, out, Some(ready))
    })
}

/// Takes the next job of a feed made by `loader_feed_new_jobs`, waiting up to `timeout_ms`
/// for one (0: only one already queued; negative: as long as it takes). Any number of threads
/// may wait at once; each job goes to one. Run its load, then answer it with
/// `loader_feed_complete_job`.
///
/// Returns `LOADER_RESULT_OK` with `*out` written, `LOADER_RESULT_TIMED_OUT` (no job came),
/// `LOADER_RESULT_STALE_HANDLE` (the feed was freed, also while waiting: the host's thread
/// is done), `LOADER_RESULT_INVALID_HANDLE` (not a feed, or a feed made by
/// `loader_feed_new`), `LOADER_RESULT_NULL_POINTER` (`out` NULL).
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_next_job(
    feed: loader_feed_handle,
    timeout_ms: i64,
    out: *mut loader_feed_job,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let out = match unsafe { Out::required(out) } {
            Ok(o) => o,
            Err(e) => return e,
        };
        let e = match entry(feed) {
            Ok(e) => e,
            Err(e) => return e,
        };
        let Some(jobs) = e.jobs() else {
            return loader_result::InvalidHandle;
        };
        let hub = hub_key(jobs);
        let job = match jobs.next(timeout(timeout_ms)) {
            Ok(job) => job,
            Err(crate::feed::NoJob::TimedOut) => return loader_result::TimedOut,
            Err(crate::feed::NoJob::Closed) => return loader_result::StaleHandle,
        };
        let read = job.read().as_c();
        let kept = Arc::clone(&job);
        let taken = JOBS.insert(Arc::new(Taken { job, hub })).map_err(|err| {
            // No token to answer it by: the read fails.
            let _ = kept.complete(Outcome::Failed);
            loader_result::from(err)
        });
        if taken.is_ok() {
            HELD.with(|h| h.borrow_mut().push(hub));
        }
        finish(taken.map(|token| loader_feed_job { token, read }), out)
    })
}

/// Answers a job: `status` 0 with `*result` the page (as a `loader_load_fn` fills it), or any
/// other `status` for a failed load (the loader's backoff retries it; `result` is then not
/// read and may be NULL). The feed takes it on its own thread: a page the loader cannot use
/// (its read was let go of, by a cancel hint or a read timeout, or the feed was freed) goes to
/// `release` there, exactly once. Works after `loader_feed_free` too, for jobs it left
/// running; until every such job is answered, `userdata` and `release` must stay valid.
///
/// Returns `LOADER_RESULT_OK`; `LOADER_RESULT_STALE_HANDLE` (answered already),
/// `LOADER_RESULT_INVALID_HANDLE` (never a job's token); `LOADER_RESULT_NULL_POINTER`
/// (`status` 0 and `result` NULL: the job is still to answer). On an error nothing is
/// answered and the page is still the host's.
///
/// # Safety
/// `result` is NULL or valid for a read, its `next_cursor` valid for `next_cursor_len`
/// bytes during the call.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_complete_job(
    token: loader_feed_job_token,
    status: i32,
    result: *const loader_load_result,
) -> loader_result {
    boundary(loader_result::Panic, || {
        if status == 0 && result.is_null() {
            return loader_result::NullPointer;
        }
        let taken = match JOBS.remove(token) {
            Ok(taken) => taken,
            Err(e) => return loader_result::from(e),
        };
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(at) = h.iter().position(|&k| k == taken.hub) {
                h.swap_remove(at);
            }
        });
        let outcome = if status == 0 {
            // SAFETY: not NULL (checked above) and valid by this function's contract.
            unsafe { super::feed::outcome_of(0, &*result) }
        } else {
            Outcome::Failed
        };
        match taken.job.complete(outcome) {
            Ok(()) => loader_result::Ok,
            Err(_) => loader_result::StaleHandle,
        }
    })
}
