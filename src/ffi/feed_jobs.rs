//! The feed's loads on the host's own threads, over the C ABI: job mode
//! (`loader_feed_new_jobs`: the feed's workers hand each load over) and hosted mode
//! (`loader_feed_new_hosted`: the host's threads are the workers), and the jobs both hand out
//! (`loader_feed_next_job`, `loader_feed_complete_job`, `loader_feed_complete_next_job`). The
//! feed keeps every rule of `loader_feed_new`'s; only its loads run on threads the host owns,
//! each a job taken and answered here.

#![allow(non_camel_case_types)]

use super::feed::{
    create, entry, loader_feed_config, loader_feed_handle, loader_load_result, timeout, CRead,
    CSource, Entry, Mode,
};
use super::handle::HandleTable;
use super::panic::boundary;
use super::pointer::{finish, Out};
use super::result::loader_result;
use super::types::{loader_direction, loader_kind, loader_read};
use crate::feed::{Feed, Hub, Job, NoJob, Outcome, Pending};
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

/// Called after a job is queued, on the feed thread that queued it (in hosted mode, when a
/// job may be there to take: `loader_feed_new_hosted_ready`; a job that a host's
/// `loader_feed_*` call queued, as that call ends, on its thread), with the config's
/// `userdata`: a host that waits on an event loop rather than in `loader_feed_next_job`
/// wakes it from here (then calls `loader_feed_next_job` with a timeout of 0). It must be
/// short, call no loader_feed_* function, and return normally.
pub type loader_feed_ready_fn = Option<unsafe extern "C-unwind" fn(userdata: *mut c_void)>;

/// Whose a job taken and not yet answered is.
enum Holder {
    /// Job mode: the feed's worker waiting for the answer, and the jobs it came from.
    Handed(Arc<Pending<CRead>>, Arc<Hub<CRead>>),
    /// Hosted mode: the read itself, answered on the completing thread.
    Hosted(Arc<Feed<CSource>>, CRead),
}

/// A job taken and not yet answered, and the key of the feed it came from (its jobs' address
/// in job mode, the feed's in hosted mode).
struct Taken {
    job: Holder,
    key: usize,
}

/// Every job taken and not yet answered, in every feed: a job outlives its feed's free until
/// it is answered.
static JOBS: HandleTable<Taken> = HandleTable::new();

thread_local! {
    /// The jobs this thread took and has not answered, by their feed's key: a free called
    /// from inside a job does not wait for it (its thread runs it).
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The key of the feed `e`'s jobs.
fn key_of(e: &Entry) -> usize {
    match e.jobs() {
        Some(hub) => Arc::as_ptr(hub) as usize,
        None => Arc::as_ptr(e.feed()) as usize,
    }
}

/// How many of the jobs of the feed `e` the calling thread holds.
pub(super) fn held_here(e: &Entry) -> usize {
    let key = key_of(e);
    HELD.with(|h| h.borrow().iter().filter(|&&k| k == key).count())
}

/// Gives a job a token and writes it to `out`; with no token to answer it by, its read fails.
fn hand_out(job: Holder, key: usize, out: Out<loader_feed_job>) -> loader_result {
    let read = match &job {
        Holder::Handed(pending, _) => pending.read().as_c(),
        // The read's cursor bytes are boxed: they stay where they are when it moves.
        Holder::Hosted(_, read) => read.as_c(),
    };
    let taken = Arc::new(Taken { job, key });
    let kept = Arc::clone(&taken);
    let token = JOBS.insert(taken).map_err(|err| {
        answer(&kept.job, Outcome::Failed);
        loader_result::from(err)
    });
    if token.is_ok() {
        HELD.with(|h| h.borrow_mut().push(key));
    }
    finish(token.map(|token| loader_feed_job { token, read }), out)
}

/// Answers a taken job; false if it was answered already.
fn answer(job: &Holder, outcome: Outcome) -> bool {
    match job {
        Holder::Handed(pending, _) => pending.complete(outcome).is_ok(),
        Holder::Hosted(feed, read) => {
            feed.give(read, outcome);
            true
        }
    }
}

/// Takes the job named by `token` out of the table (and this thread's holdings), with the
/// answer a host gave it: `status` and `*result` as `loader_feed_complete_job` takes them.
///
/// # Safety
/// As `loader_feed_complete_job`.
unsafe fn redeem(
    token: loader_feed_job_token,
    status: i32,
    result: *const loader_load_result,
) -> Result<(Arc<Taken>, Outcome), loader_result> {
    if status == 0 && result.is_null() {
        return Err(loader_result::NullPointer);
    }
    let taken = JOBS.remove(token).map_err(loader_result::from)?;
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if let Some(at) = h.iter().position(|&k| k == taken.key) {
            h.swap_remove(at);
        }
    });
    let outcome = if status == 0 {
        // SAFETY: not NULL (checked above) and valid by this function's contract.
        unsafe { super::feed::outcome_of(0, &*result) }
    } else {
        Outcome::Failed
    };
    Ok((taken, outcome))
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
        create(config, out, Mode::Jobs(ready))
    })
}

/// Takes the next job of a feed made by `loader_feed_new_jobs` or `loader_feed_new_hosted`,
/// waiting up to `timeout_ms` for one (0: only one already queued; negative: as long as it takes). Any number of threads
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
        let job = match e.jobs() {
            Some(jobs) => jobs
                .next(timeout(timeout_ms))
                .map(|job| Holder::Handed(job, Arc::clone(jobs))),
            None if e.feed().is_hosted() => e
                .feed()
                .take(timeout(timeout_ms))
                .map(|read| Holder::Hosted(Arc::clone(e.feed()), read)),
            None => return loader_result::InvalidHandle,
        };
        match job {
            Ok(job) => hand_out(job, key_of(&e), out),
            Err(NoJob::TimedOut) => loader_result::TimedOut,
            Err(NoJob::Closed) => loader_result::StaleHandle,
        }
    })
}

/// Answers a job: `status` 0 with `*result` the page (as a `loader_load_fn` fills it), or any
/// other `status` for a failed load (the loader's backoff retries it; `result` is then not
/// read and may be NULL). In job mode the feed takes it on its own thread; in hosted mode on
/// the calling thread, before this returns (`release` and `changed` may run there). A page
/// the loader cannot use (its read was let go of, by a cancel hint or a read timeout, or the
/// feed was freed) goes to `release` there, exactly once. Works after `loader_feed_free` too, for jobs it left
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
        // SAFETY: by this function's contract.
        match unsafe { redeem(token, status, result) } {
            Ok((taken, outcome)) => {
                if answer(&taken.job, outcome) {
                    loader_result::Ok
                } else {
                    loader_result::StaleHandle
                }
            }
            Err(e) => e,
        }
    })
}

/// Creates a feed in hosted mode: as `loader_feed_new_jobs`, but the host's threads are the
/// feed's workers. The feed starts no worker (only its clock thread, for retries and read
/// timeouts); a host thread that takes a job (`loader_feed_next_job`) is the worker loading
/// it, and answers it on its own thread (`loader_feed_complete_job`): the loader takes the
/// page there, and the host's `release` and `changed` run there. The read that answer issues
/// goes to the same thread with `loader_feed_complete_next_job`, which answers a job and hands
/// out the next in one call: a steady stream of reads costs one call per load and no thread
/// switch.
///
/// `config->load` is not called (it may be NULL). `config->workers` (1 to
/// `LOADER_FEED_MAX_WORKERS`) is how many jobs may be held at once: run that many host
/// threads, or fewer. A job held past the loader's `read_timeout_ms` is let go of, as a stuck
/// load is: its read fails (when still needed), it no longer counts as held, and the read
/// issued in its place goes to another host thread; when it is answered at last, its page
/// goes to `release`. A job whose read a cancel hint let go of no longer counts as held
/// either. There is no `ready` callback: the host's threads wait in `loader_feed_next_job`
/// (`loader_feed_new_hosted_ready` has one, for a host that waits on an event loop).
/// A host thread that ends while holding a job (`pthread_exit`) leaves that job to the read
/// timeout.
///
/// Errors: those of `loader_feed_new`, except that only `release` is a required callback.
///
/// # Safety
/// As `loader_feed_new`.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_new_hosted(
    config: *const loader_feed_config,
    out: *mut loader_feed_handle,
) -> loader_result {
    // SAFETY: forwarded contract.
    boundary(loader_result::Panic, || unsafe {
        create(config, out, Mode::Hosted(None))
    })
}

/// Creates a feed in hosted mode, as `loader_feed_new_hosted`, for a host whose loads start
/// on an event loop rather than on threads waiting in `loader_feed_next_job`: `ready` (may
/// be NULL) is called when a read may be there to take, after a read is queued for the
/// host's threads and after a place to take one frees up (a held job let go of by a cancel
/// hint or its read timeout). It runs on the thread that did it: the host's own, inside the
/// call that issued the read (`loader_feed_set_window`, `loader_feed_complete_job`, ...), or
/// the feed's clock thread (a backoff retry, a read timeout). Wake the loop there; the loop
/// then takes every job ready with `loader_feed_next_job` and a timeout of 0. A call may find
/// nothing left to take (another thread took it). `ready` follows `loader_feed_ready_fn`'s
/// contract. Errors: those of `loader_feed_new_hosted`.
///
/// # Safety
/// As `loader_feed_new`; `ready` follows its contract.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_new_hosted_ready(
    config: *const loader_feed_config,
    ready: loader_feed_ready_fn,
    out: *mut loader_feed_handle,
) -> loader_result {
    // SAFETY: forwarded contract.
    boundary(loader_result::Panic, || unsafe {
        create(config, out, Mode::Hosted(ready))
    })
}

/// Whether a job taken from a feed in hosted mode was let go of by a cancel hint: the loader
/// no longer needs its answer (the source changed under it, or the window moved away), so a
/// host that can stop its load (cancel a task) may do so. The job must still be answered,
/// exactly once (a page it makes goes to `release`). Writes false for a job still needed,
/// one let go of at the read timeout (its load may still return the only page), a job of a
/// freed feed, and a job in job mode (its feed's workers keep the hints).
///
/// Returns `LOADER_RESULT_OK` with `*out_hinted` written; `LOADER_RESULT_STALE_HANDLE`
/// (answered already), `LOADER_RESULT_INVALID_HANDLE` (never a job's token),
/// `LOADER_RESULT_NULL_POINTER` (`out_hinted` NULL).
///
/// # Safety
/// `out_hinted` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_job_hinted(
    token: loader_feed_job_token,
    out_hinted: *mut bool,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let out = match unsafe { Out::required(out_hinted) } {
            Ok(o) => o,
            Err(e) => return e,
        };
        let hinted = JOBS
            .get(token)
            .map_err(loader_result::from)
            .map(|taken| match &taken.job {
                Holder::Hosted(feed, read) => feed.hinted(read.read_id()),
                Holder::Handed(..) => false,
            });
        finish(hinted, out)
    })
}

/// Answers a job, as `loader_feed_complete_job`, then takes the next job as
/// `loader_feed_next_job` would on the job's feed, waiting up to `timeout_ms` for one. In
/// hosted mode the next job is, at once, the first read this answer issued (the loader issues
/// most reads one after another, each from the answer before it); else the next queued.
///
/// Returns, with the job answered: `LOADER_RESULT_OK` with `*out` the next job, or with
/// `out->token` 0 when the feed was freed (no job will come: the host's thread is done);
/// `LOADER_RESULT_TIMED_OUT` (no job came). With nothing answered (the page is still the
/// host's): `LOADER_RESULT_NULL_POINTER` (`out` NULL, or `status` 0 and `result` NULL),
/// `LOADER_RESULT_STALE_HANDLE` (answered already), `LOADER_RESULT_INVALID_HANDLE` (never a
/// job's token).
///
/// # Safety
/// As `loader_feed_complete_job`; `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_complete_next_job(
    token: loader_feed_job_token,
    status: i32,
    result: *const loader_load_result,
    timeout_ms: i64,
    out: *mut loader_feed_job,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let out = match unsafe { Out::required(out) } {
            Ok(o) => o,
            Err(e) => return e,
        };
        // SAFETY: by this function's contract.
        let (taken, outcome) = match unsafe { redeem(token, status, result) } {
            Ok(x) => x,
            Err(e) => return e,
        };
        let wait = timeout(timeout_ms);
        let next = match &taken.job {
            Holder::Hosted(feed, read) => feed
                .give_and_take(read, outcome, wait)
                .map(|next| Holder::Hosted(Arc::clone(feed), next)),
            Holder::Handed(pending, hub) => {
                if pending.complete(outcome).is_err() {
                    return loader_result::StaleHandle;
                }
                hub.next(wait)
                    .map(|job| Holder::Handed(job, Arc::clone(hub)))
            }
        };
        match next {
            Ok(job) => hand_out(job, taken.key, out),
            Err(NoJob::TimedOut) => loader_result::TimedOut,
            Err(NoJob::Closed) => finish(Ok(no_job()), out),
        }
    })
}

/// What `loader_feed_complete_next_job` writes when no job will come: token 0.
fn no_job() -> loader_feed_job {
    loader_feed_job {
        token: 0,
        read: loader_read {
            read_id: 0,
            request_id: 0,
            kind: loader_kind::Finite,
            epoch: 0,
            step: 0,
            cursor: std::ptr::null(),
            cursor_len: 0,
            limit: 0,
            direction: loader_direction::Forward,
            until: std::ptr::null(),
            until_len: 0,
        },
    }
}
