//! The feed's C ABI (`loader_feed_*`): a host gives a synchronous `load` and the library runs
//! the reads on threads of its own ([`crate::feed`]). Here: the C types, the loader the feed
//! drives (a loader handle whose callbacks lead into the feed), the host's functions, and the
//! POSIX threads the feed runs on.

#![allow(non_camel_case_types)]

use super::events::{
    loader_fail, loader_invalidate, loader_invalidate_range, loader_jump, loader_retry,
    loader_set_window, loader_settle, loader_tick,
};
use super::instance::{loader_handle, lookup};
use super::introspection::snapshot;
use super::lifecycle::{loader_config_default, loader_free, loader_new};
use super::panic::boundary;
use super::pointer::{finish, token, widen, Out};
use super::result::loader_result;
use super::sized::{read_in, Growable, GrowableIn};
use super::types::{
    loader_acquisition, loader_answer, loader_callbacks, loader_changed_fn, loader_compare_fn,
    loader_config, loader_direction, loader_failure, loader_kind, loader_locate_fn, loader_read,
    loader_release_fn,
};
use crate::feed::Instant;
use crate::feed::{
    Feed, Hub, Job, Ledger, Loaded, Outcome, Problem, Source, Spawn, Status, Tally, Thread, Took,
};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// The most worker threads a feed runs.
pub const LOADER_FEED_MAX_WORKERS: u32 = 256;

/// An opaque handle to a feed: the handle of the loader the feed drives (`loader_feed_loader`
/// returns it unchanged). 0 is never a valid handle; a freed or forged one is an error code,
/// as for a loader handle, and a plain loader's handle is `LOADER_RESULT_INVALID_HANDLE` to
/// the loader_feed_* functions. The loader_* functions that read take it (`loader_state`,
/// `loader_stats`, `loader_explain`, `loader_view_acquire`); `loader_free` refuses it
/// (`LOADER_RESULT_FEED_OWNED`): free a feed with `loader_feed_free`.
#[allow(non_camel_case_types)]
pub type loader_feed_handle = u64;

/// What a `load` returns for one read, when it returns 0: `count` items (at most the read's
/// `limit`) in a buffer of the host's that `acquisition` names, and where the next read that
/// way starts. The feed zeroes it before each call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_load_result {
    /// The host's token for the items; the feed hands it to `release` exactly once.
    pub acquisition: loader_acquisition,
    /// How many items: at most the read's `limit`.
    pub count: u32,
    /// As `loader_settle`'s: forward, the cursor after the last item; backward, the cursor
    /// before the first. It is copied when `load` returns: it need only be valid until then,
    /// or point into the page's own buffer.
    pub next_cursor: *const u8,
    /// Its length in bytes (0: the source's start); at most `LOADER_MAX_CURSOR_LEN`.
    pub next_cursor_len: usize,
    /// Forward: no item follows. Backward: no item precedes (then `next_cursor` is empty).
    pub end_of_source: bool,
}

/// The host's load: reads `read` (as `issue` would hand it to a host; valid only during the
/// call) synchronously, fills `*out` and returns 0, or returns any other value for a failure
/// (the loader's backoff retries it). It runs on one of the feed's worker threads, several at
/// once on different threads.
///
/// From inside `load` the host may call any loader_feed_* function on this feed:
/// `loader_feed_free` does not wait for the load it is called from, and
/// `loader_feed_wait_quiescent` waits for that very load too (it returns at its timeout). It
/// must not throw (a C++ host catches and returns non-zero). It may end its thread
/// (`pthread_exit`): the read fails and the feed starts another worker in its place. A load
/// that runs longer than the loader's `read_timeout_ms` is let go of: its read fails (when it
/// is still needed), another worker takes the stuck one's place, and its late page goes to
/// `release`. The same holds for a load whose read a cancel hint let go of while it ran (a
/// jump, a far move): its worker is replaced once the load outlives `read_timeout_ms`, so
/// hung loads never hold every worker.
pub type loader_load_fn = Option<
    unsafe extern "C-unwind" fn(
        userdata: *mut c_void,
        read: *const loader_read,
        out: *mut loader_load_result,
    ) -> i32,
>;

/// A feed's settings and the host's functions. Set `struct_size` to `sizeof` it (STRUCTS THAT
/// GROW at the top of this header: it may gain fields, appended).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_feed_config {
    /// `sizeof` this struct as the host's `loader.h` declares it.
    pub struct_size: u32,
    /// How many worker threads run loads: 1 to `LOADER_FEED_MAX_WORKERS`.
    pub workers: u32,
    /// Passed to every function below, on whichever thread runs it. Keep it valid until
    /// `loader_feed_free` returns, every load it left running has returned (see
    /// `loader_feed_free`), and every pinned view of the feed's loader is released.
    pub userdata: *mut c_void,
    /// Required: the load.
    pub load: loader_load_fn,
    /// Required: called exactly once for every page a `load` returned, when the feed or its
    /// loader is done with it (a page the loader never took is released at once, on the
    /// worker). It runs on a feed worker, the feed's clock thread, or the thread of a
    /// loader_feed_* call or `loader_view_release`; it must return normally.
    pub release: loader_release_fn,
    /// May be NULL: called after the view or the state changed, on whichever thread changed
    /// it (a worker, the clock thread, a caller); keep it short and let it return normally.
    pub changed: loader_changed_fn,
    /// May be NULL: orders cursors, for `loader_feed_invalidate_range` (see
    /// `loader_compare_fn`).
    pub compare: loader_compare_fn,
    /// The loader's settings; NULL for the defaults (`loader_config_default`).
    pub loader: *const loader_config,
    /// May be NULL: finds the cursor for a position, for a far `loader_feed_set_window`
    /// (`loader_locate_fn`: it runs on the thread of that call, inside it).
    pub locate: loader_locate_fn,
}

// SAFETY: `#[repr(C)]`, `struct_size` first; FIRST_SIZE ends at its last field.
unsafe impl Growable for loader_feed_config {
    const FIRST_SIZE: usize = offset_of!(loader_feed_config, loader) + size_of::<usize>();
}
// SAFETY: integers, raw pointers and `Option`s of function pointers: every bit pattern is
// valid (NULL is `None`).
unsafe impl GrowableIn for loader_feed_config {}

/// The host's functions and `userdata`, shared by the feed's threads.
#[derive(Clone, Copy)]
struct HostFns(loader_feed_config);

// SAFETY: the contract of `loader_feed_config` makes the host responsible for `userdata`
// being usable from every thread the feed runs its functions on; the rest is plain code.
unsafe impl Send for HostFns {}
// SAFETY: as above; the library never dereferences `userdata`.
unsafe impl Sync for HostFns {}

impl HostFns {
    fn userdata(&self) -> *mut c_void {
        self.0.userdata
    }
}

/// A read as a worker loads it: the loader's read, its cursors copied.
#[derive(Clone)]
pub(super) struct CRead {
    read_id: u64,
    request_id: u64,
    kind: loader_kind,
    epoch: u64,
    step: u32,
    cursor: Box<[u8]>,
    limit: u32,
    direction: loader_direction,
    until: Option<Box<[u8]>>,
}

impl Job for CRead {
    fn read_id(&self) -> u64 {
        self.read_id
    }
    fn limit(&self) -> u32 {
        self.limit
    }
}

impl CRead {
    /// The read as the host's load takes it: valid while `self` is, unmoved.
    pub(super) fn as_c(&self) -> loader_read {
        loader_read {
            read_id: self.read_id,
            request_id: self.request_id,
            kind: self.kind,
            epoch: self.epoch,
            step: self.step,
            cursor: if self.cursor.is_empty() {
                std::ptr::null()
            } else {
                self.cursor.as_ptr()
            },
            cursor_len: self.cursor.len(),
            limit: self.limit,
            direction: self.direction,
            until: self.until.as_ref().map_or(std::ptr::null(), |u| u.as_ptr()),
            until_len: self.until.as_ref().map_or(0, |u| u.len()),
        }
    }
}

/// The host's side of the feed: its load and release.
pub(super) struct CSource {
    host: HostFns,
    /// The last load that failed: its read id and the value it returned (for
    /// `loader_explain`).
    last_failure: Mutex<Option<(u64, i32)>>,
    /// Job mode: the loads run on the host's threads, through these jobs
    /// (`loader_feed_new_jobs`); `host.0.load` is not called.
    jobs: Option<Arc<Hub<CRead>>>,
}

impl Source for CSource {
    type Read = CRead;

    fn load(&self, read: &CRead) -> Outcome {
        if let Some(jobs) = &self.jobs {
            return jobs.load(read.clone());
        }
        let Some(load) = self.host.0.load else {
            return Outcome::Failed;
        };
        let r = read.as_c();
        let mut out = loader_load_result {
            acquisition: 0,
            count: 0,
            next_cursor: std::ptr::null(),
            next_cursor_len: 0,
            end_of_source: false,
        };
        // SAFETY: the host's function for this signature; `r`, the bytes it points to and
        // `out` live until it returns. No catch_unwind is on this stack: a load that ends
        // its thread unwinds through the feed's frames (see `feed::work`).
        let rc = unsafe { load(self.host.0.userdata, &r, &mut out) };
        if rc != 0 {
            *self.last_failure.lock() = Some((read.read_id, rc));
        }
        // SAFETY: the host's `load` returned; `loader_load_result` makes `next_cursor` valid
        // for `next_cursor_len` bytes until then or in the page's own buffer.
        unsafe { outcome_of(rc, &out) }
    }

    fn release(&self, acquisition: u64) {
        if let Some(release) = self.host.0.release {
            // SAFETY: the host's function; the token is the one its load gave, unchanged.
            unsafe { release(self.host.0.userdata, token(acquisition)) };
        }
    }
}

/// What a load's return code and result come to: a failure (not 0), a page, or a page the
/// loader would refuse (its cursor NULL or too long: a bug in the load).
///
/// # Safety
/// When `rc` is 0, `out.next_cursor` is NULL or valid for `out.next_cursor_len` bytes.
pub(super) unsafe fn outcome_of(rc: i32, out: &loader_load_result) -> Outcome {
    if rc != 0 {
        return Outcome::Failed;
    }
    let acquisition = widen(out.acquisition);
    let next_cursor = if out.next_cursor_len == 0 {
        Vec::new()
    } else if out.next_cursor.is_null() || out.next_cursor_len > super::LOADER_MAX_CURSOR_LEN {
        // A cursor the loader would refuse: a bug in the load.
        let code = if out.next_cursor.is_null() {
            loader_result::NullCursor
        } else {
            loader_result::CursorTooLong
        };
        return Outcome::Refused {
            acquisition,
            code: code.code(),
        };
    } else {
        // SAFETY: by this function's contract, `next_cursor` is valid for
        // `next_cursor_len` bytes, checked not NULL above.
        unsafe { std::slice::from_raw_parts(out.next_cursor, out.next_cursor_len) }.to_vec()
    };
    Outcome::Page(Loaded {
        acquisition,
        count: out.count,
        next_cursor,
        end_of_source: out.end_of_source,
    })
}

/// The host's `ready` as the feed calls it: after each job is queued (job mode), or when a
/// read may be there to take (hosted mode).
fn ready_call(
    host: HostFns,
    ready: super::feed_jobs::loader_feed_ready_fn,
) -> Option<Box<dyn Fn() + Send + Sync>> {
    let ready = ready?;
    Some(Box::new(move || {
        // SAFETY: the host's function, with its own userdata (`loader_feed_ready_fn`).
        unsafe { ready(host.userdata()) }
    }))
}

/// The loader's callbacks' `userdata`: the host's functions and the feed, kept alive by the
/// loader itself (`Instance::keep_alive`) as long as any of its callbacks can run.
struct Route {
    host: HostFns,
    feed: OnceLock<Weak<Feed<CSource>>>,
    /// The feed's counters, which count the loader's releases too, after the feed's free.
    tally: Arc<Tally>,
}

impl Route {
    fn feed(&self) -> Option<Arc<Feed<CSource>>> {
        self.feed.get().and_then(Weak::upgrade)
    }
}

/// # Safety (for the four below)
/// `userdata` is the `Route` the feed's loader was made with, alive while the loader is.
unsafe extern "C-unwind" fn route_issue(userdata: *mut c_void, read: *const loader_read) {
    // SAFETY: see above; the loader passes a valid read for the call's length.
    let (route, r) = unsafe { (&*(userdata as *const Route), &*read) };
    let Some(feed) = route.feed() else { return };
    let copy = |p: *const u8, n: usize| -> Box<[u8]> {
        if n == 0 {
            Box::default()
        } else {
            // SAFETY: the loader's cursor bytes, valid during `issue`.
            unsafe { std::slice::from_raw_parts(p, n) }.into()
        }
    };
    feed.on_issue(CRead {
        read_id: r.read_id,
        request_id: r.request_id,
        kind: r.kind,
        epoch: r.epoch,
        step: r.step,
        cursor: copy(r.cursor, r.cursor_len),
        limit: r.limit,
        direction: r.direction,
        until: (!r.until.is_null()).then(|| copy(r.until, r.until_len)),
    });
}

unsafe extern "C-unwind" fn route_cancel(userdata: *mut c_void, read_id: u64) {
    // SAFETY: see `route_issue`.
    let route = unsafe { &*(userdata as *const Route) };
    if let Some(feed) = route.feed() {
        feed.on_cancel(read_id);
    }
}

unsafe extern "C-unwind" fn route_release(userdata: *mut c_void, acquisition: loader_acquisition) {
    // SAFETY: see `route_issue`.
    let route = unsafe { &*(userdata as *const Route) };
    if let Some(release) = route.host.0.release {
        // SAFETY: the host's function, with its own userdata and token.
        unsafe { release(route.host.0.userdata, acquisition) };
    }
    route.tally.released_by_loader();
}

unsafe extern "C-unwind" fn route_changed(userdata: *mut c_void) {
    // SAFETY: see `route_issue`.
    let route = unsafe { &*(userdata as *const Route) };
    if let Some(feed) = route.feed() {
        feed.on_changed();
    }
    if let Some(changed) = route.host.0.changed {
        // SAFETY: the host's function, with its own userdata.
        unsafe { changed(route.host.0.userdata) };
    }
}

unsafe extern "C" fn route_compare(
    userdata: *mut c_void,
    a: *const u8,
    a_len: usize,
    b: *const u8,
    b_len: usize,
) -> i32 {
    // SAFETY: see `route_issue`; `route_compare` is set only when the host gave `compare`.
    let route = unsafe { &*(userdata as *const Route) };
    match route.host.0.compare {
        // SAFETY: the host's function; the loader's cursors, valid during the call.
        Some(compare) => unsafe { compare(route.host.0.userdata, a, a_len, b, b_len) },
        None => 0,
    }
}

unsafe extern "C" fn route_locate(
    userdata: *mut c_void,
    position: u64,
    cursor: *mut u8,
    capacity: usize,
    cursor_len: *mut usize,
) -> i32 {
    // SAFETY: see `route_issue`; `route_locate` is set only when the host gave `locate`.
    let route = unsafe { &*(userdata as *const Route) };
    match route.host.0.locate {
        // SAFETY: the host's function; the loader's buffer and length, valid during the call.
        Some(locate) => unsafe {
            locate(
                route.host.0.userdata,
                position,
                cursor,
                capacity,
                cursor_len,
            )
        },
        None => 0,
    }
}

/// The loader the feed drives: a loader handle, through the ABI every host uses.
// The feed's codes for a read answered elsewhere are the library's own.
const _: () = assert!(
    loader_result::AlreadyAnswered as i32 == crate::feed::ALREADY_ANSWERED
        && loader_result::UnknownRead as i32 == crate::feed::UNKNOWN_READ
);

struct HandleLedger(loader_handle);

impl Ledger for HandleLedger {
    fn settle(
        &self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
    ) -> Result<Took, i32> {
        let mut answer = loader_answer::Current;
        // SAFETY: the cursor slice and `answer` are valid for the call.
        let rc = unsafe {
            loader_settle(
                self.0,
                read_id,
                token(acquisition),
                count,
                next_cursor.as_ptr(),
                next_cursor.len(),
                end_of_source,
                &mut answer,
            )
        };
        if rc != loader_result::Ok {
            return Err(rc.code());
        }
        Ok(match answer {
            loader_answer::Current => Took::Current,
            loader_answer::Stale => Took::Stale,
            loader_answer::CursorStalled => Took::CursorStalled,
        })
    }

    fn fail(&self, read_id: u64) {
        // SAFETY: a NULL out-pointer is allowed.
        let _ = unsafe { loader_fail(self.0, read_id, 1, std::ptr::null_mut()) };
    }

    fn abandon(&self, read_id: u64) {
        // SAFETY: a NULL out-pointer is allowed.
        let _ = unsafe { super::events::loader_abandon(self.0, read_id, std::ptr::null_mut()) };
    }

    fn tick(&self, now_ms: u64) {
        let _ = loader_tick(self.0, now_ms);
    }

    fn next_deadline(&self) -> Option<u64> {
        lookup(self.0)
            .and_then(|i| i.read(|l| l.next_deadline()))
            .ok()
            .flatten()
    }

    fn status(&self) -> Status {
        // One look under the loader's lock: the state and the deadline agree.
        match lookup(self.0).and_then(|i| i.read(|l| (snapshot(l), l.next_deadline()))) {
            Ok((s, deadline)) => Status {
                quiescent: s.quiescent,
                revalidating: s.revalidating,
                own_failure: s.failure == loader_failure::Own,
                outstanding: s.outstanding_reads,
                armed: deadline.is_some(),
                gone: false,
            },
            Err(_) => Status {
                gone: true,
                ..Status::default()
            },
        }
    }
}

/// A POSIX thread the feed started.
struct PThread(Option<libc::pthread_t>);

impl Thread for PThread {
    fn join(mut self: Box<Self>) {
        if let Some(t) = self.0.take() {
            // SAFETY: a thread this process started, neither joined nor detached yet.
            unsafe { libc::pthread_join(t, std::ptr::null_mut()) };
        }
    }
    fn detach(mut self: Box<Self>) {
        if let Some(t) = self.0.take() {
            // SAFETY: as above.
            unsafe { libc::pthread_detach(t) };
        }
    }
}

impl Drop for PThread {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            // SAFETY: as above: a thread dropped unjoined is let go.
            unsafe { libc::pthread_detach(t) };
        }
    }
}

type Body = Box<dyn FnOnce() + Send>;

/// A thread's start: runs its body. No `catch_unwind` here: a load that ends the thread
/// unwinds through and ends it as the host asked.
extern "C-unwind" fn thread_start(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is the `Box<Body>` `PosixSpawn::spawn` leaked for this thread, once.
    let body = unsafe { Box::from_raw(arg.cast::<Body>()) };
    body();
    std::ptr::null_mut()
}

/// Starts the feed's threads with `pthread_create`.
struct PosixSpawn;

impl Spawn for PosixSpawn {
    fn spawn(&self, run: Box<dyn FnOnce() + Send>) -> Option<Box<dyn Thread>> {
        let arg = Box::into_raw(Box::new(run));
        let mut t = std::mem::MaybeUninit::<libc::pthread_t>::uninit();
        // SAFETY: `t` is written on success; `arg` is handed to the new thread, which owns
        // it from then on (or back to us on failure).
        let rc = unsafe {
            // The start routine may unwind (a load's `pthread_exit`): it is `C-unwind`,
            // which has the calling convention of the `C` type libc declares.
            let start: extern "C" fn(*mut c_void) -> *mut c_void = std::mem::transmute(
                thread_start as extern "C-unwind" fn(*mut c_void) -> *mut c_void,
            );
            libc::pthread_create(t.as_mut_ptr(), std::ptr::null(), start, arg.cast())
        };
        if rc != 0 {
            // SAFETY: no thread took `arg`.
            drop(unsafe { Box::from_raw(arg) });
            return None;
        }
        // SAFETY: written by a successful pthread_create.
        Some(Box::new(PThread(Some(unsafe { t.assume_init() }))))
    }
}

/// What a feed handle names.
pub(super) struct Entry {
    feed: Arc<Feed<CSource>>,
    loader: loader_handle,
}

/// The live feeds, by handle: each feed's handle is its loader's. (A B-tree: its nodes are
/// reached from their starts, so a leak checker sees the table as reachable at exit.)
static FEEDS: RwLock<BTreeMap<loader_feed_handle, Arc<Entry>>> = RwLock::new(BTreeMap::new());

/// Feeds being freed: out of [`FEEDS`], their loader not yet freed. A call that names one
/// is told the handle was freed, not that it is a plain loader's.
static FREEING: RwLock<BTreeSet<loader_feed_handle>> = RwLock::new(BTreeSet::new());

/// Why `handle` names no live feed: stale or forged as a loader handle, or a plain loader's.
fn not_a_feed(handle: loader_feed_handle) -> loader_result {
    if FREEING.read().contains(&handle) {
        return loader_result::StaleHandle;
    }
    match lookup(handle) {
        Ok(_) => loader_result::InvalidHandle,
        Err(e) => e,
    }
}

pub(super) fn entry(feed: loader_feed_handle) -> Result<Arc<Entry>, loader_result> {
    let found = FEEDS.read().get(&feed).cloned();
    found.ok_or_else(|| not_a_feed(feed))
}

/// Whether `handle` is a live feed's (so its loader is the feed's, not the host's to free).
pub(super) fn is_feed(handle: loader_handle) -> bool {
    FEEDS.read().contains_key(&handle)
}

/// The counters of the feed `feed`.
pub(super) fn tally(feed: loader_feed_handle) -> Result<Arc<Tally>, loader_result> {
    entry(feed).map(|e| e.feed.tally())
}

/// What the feed adds to `loader_explain` on its handle: the last load that failed and the
/// value it returned; `None` for a handle that is no feed's.
/// The feed's clock now, which its loader explains at ([`Feed::clock_now`]); `None` for a
/// plain loader, whose host ticks it.
pub(super) fn clock_now(handle: loader_handle) -> Option<u64> {
    entry(handle).ok().map(|e| e.feed.clock_now())
}

pub(super) fn explain_lines(handle: loader_handle) -> Option<String> {
    let e = entry(handle).ok()?;
    let c = e.feed.tally().read();
    let mut text = format!(
        "feed: {} loads running; {} pages handed out, {} accepted by the loader, {} given back ({} late)",
        c.running, c.handed_out, c.accepted, c.given_back, c.late
    );
    if let Some((read, rc)) = *e.feed.source().last_failure.lock() {
        text.push_str(&format!(
            "\nfeed: the last load that failed (read {read}) returned {rc}; {} loads failed",
            c.failed
        ));
    }
    if c.last_refused_code != 0 {
        text.push_str(&format!(
            "\nfeed: the last page refused was refused with result code {}",
            c.last_refused_code
        ));
    }
    Some(text)
}

impl Entry {
    /// The feed's jobs, in job mode.
    pub(super) fn jobs(&self) -> Option<&Arc<Hub<CRead>>> {
        self.feed.source().jobs.as_ref()
    }

    /// The feed.
    pub(super) fn feed(&self) -> &Arc<Feed<CSource>> {
        &self.feed
    }
}

/// Who runs a feed's loads.
#[derive(Clone, Copy)]
pub(super) enum Mode {
    /// The feed's own workers, through `config->load` (`loader_feed_new`).
    Own,
    /// Job mode: the feed's workers hand each load to a host thread, calling this `ready`
    /// after each job is queued (`loader_feed_new_jobs`).
    Jobs(super::feed_jobs::loader_feed_ready_fn),
    /// Hosted mode: the host's threads are the workers (`loader_feed_new_hosted`), told by
    /// this `ready` that a read is there to take (`loader_feed_new_hosted_ready`; NULL: none).
    Hosted(super::feed_jobs::loader_feed_ready_fn),
}

fn problem_code(p: Problem) -> loader_result {
    match p {
        Problem::CountOverLimit => loader_result::CountOverLimit,
        Problem::Refused(code) => loader_result::ALL
            .into_iter()
            .find(|r| r.code() == code)
            .unwrap_or(loader_result::Panic),
        Problem::CursorStalled => loader_result::CursorStalled,
        Problem::RetriesSpent => loader_result::RetriesSpent,
        Problem::TimedOut => loader_result::TimedOut,
        Problem::Closed => loader_result::StaleHandle,
    }
}

/// A timeout in ms as C passes it: negative waits as long as it takes.
pub(super) fn timeout(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// Creates a feed: a loader (`config->loader`, or the defaults) whose reads `config->workers`
/// threads of the feed's own run through `config->load`. Nothing is read until the window is
/// set (`loader_feed_set_window`), unless the loader config has a starting point.
///
/// Errors, with nothing created: `LOADER_RESULT_NULL_POINTER` (`config` or `out` NULL),
/// `LOADER_RESULT_INVALID_STRUCT_SIZE` / `LOADER_RESULT_UNKNOWN_FIELD` (STRUCTS THAT GROW),
/// `LOADER_RESULT_MISSING_CALLBACK` (`load` or `release` NULL),
/// `LOADER_RESULT_INVALID_WORKERS` (`workers` 0 or above `LOADER_FEED_MAX_WORKERS`), any code
/// of `loader_new` for the loader config, `LOADER_RESULT_THREAD_START` (a thread could not be
/// started). The caller owns the handle and must pass it to `loader_feed_free` (or
/// `loader_feed_free_counted`). It is also the handle of the feed's loader: `loader_free`
/// refuses it with `LOADER_RESULT_FEED_OWNED`.
///
/// # Safety
/// `config` is NULL or valid for its `struct_size` bytes, `config->loader` NULL or a valid
/// `loader_config`; `out` NULL or valid for a write; the functions follow their contracts.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_new(
    config: *const loader_feed_config,
    out: *mut loader_feed_handle,
) -> loader_result {
    // No callback runs while a feed is made: all of it inside the panic boundary.
    // SAFETY: forwarded contract.
    boundary(loader_result::Panic, || unsafe {
        create(config, out, Mode::Own)
    })
}

/// `loader_feed_new`'s work, `loader_feed_new_jobs`'s and `loader_feed_new_hosted`'s, by
/// `mode`.
///
/// # Safety
/// As `loader_feed_new`.
pub(super) unsafe fn create(
    config: *const loader_feed_config,
    out: *mut loader_feed_handle,
    mode: Mode,
) -> loader_result {
    // SAFETY: by this function's contract.
    let (cfg, out) = match unsafe { (read_in(config), Out::required(out)) } {
        (Ok(c), Ok(o)) => (c, o),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    if (cfg.load.is_none() && matches!(mode, Mode::Own)) || cfg.release.is_none() {
        return loader_result::MissingCallback;
    }
    let host = HostFns(cfg);
    let jobs = match mode {
        Mode::Jobs(ready) => Some(Arc::new(Hub::new(ready_call(host, ready)))),
        Mode::Own | Mode::Hosted(_) => None,
    };
    // SAFETY: the host's config, valid by contract when not NULL.
    let timeout_ms = match unsafe { read_in(cfg.loader) } {
        Ok(c) => c.read_timeout_ms,
        Err(loader_result::NullPointer) => crate::loader::Config::default().read_timeout_ms,
        Err(e) => return e,
    };
    let load_timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
    let make = if matches!(mode, Mode::Hosted(_)) {
        Feed::new_hosted
    } else {
        Feed::new
    };
    let feed = match make(
        CSource {
            host,
            last_failure: Mutex::new(None),
            jobs,
        },
        Box::new(PosixSpawn),
        cfg.workers,
        load_timeout,
    ) {
        Ok(f) => f,
        Err(_) => return loader_result::InvalidWorkers,
    };
    // Before the loader exists: a read its config issues at once is told too.
    if let Mode::Hosted(ready) = mode {
        if let Some(ready) = ready_call(host, ready) {
            feed.set_ready(ready);
        }
    }
    let route = Arc::new(Route {
        host,
        feed: OnceLock::new(),
        tally: feed.tally(),
    });
    let _ = route.feed.set(Arc::downgrade(&feed));
    let mut defaults = std::mem::MaybeUninit::<loader_config>::zeroed();
    let loader_cfg = if cfg.loader.is_null() {
        // SAFETY: `struct_size` is the first field; loader_config_default fills the rest.
        unsafe {
            defaults
                .as_mut_ptr()
                .cast::<u32>()
                .write(size_of::<loader_config>() as u32);
            let rc = loader_config_default(defaults.as_mut_ptr());
            if rc != loader_result::Ok {
                return rc;
            }
        }
        defaults.as_ptr()
    } else {
        cfg.loader
    };
    let callbacks = loader_callbacks {
        struct_size: size_of::<loader_callbacks>() as u32,
        userdata: Arc::as_ptr(&route) as *mut c_void,
        issue: Some(route_issue),
        release: Some(route_release),
        changed: Some(route_changed),
        cancel: Some(route_cancel),
        compare: if cfg.compare.is_some() {
            Some(route_compare)
        } else {
            None
        },
        locate: if cfg.locate.is_some() {
            Some(route_locate)
        } else {
            None
        },
    };
    let mut handle: loader_handle = 0;
    // SAFETY: `loader_cfg` is the host's (valid by contract) or our filled default;
    // `callbacks` and `handle` are locals.
    let rc = unsafe { loader_new(loader_cfg, &callbacks, &mut handle) };
    if rc != loader_result::Ok {
        return rc;
    }
    match lookup(handle) {
        Ok(inst) => inst.keep_alive(route),
        Err(e) => return e,
    }
    feed.attach(Box::new(HandleLedger(handle)));
    if feed.start().is_err() {
        let _ = loader_free(handle);
        return loader_result::ThreadStart;
    }
    FEEDS.write().insert(
        handle,
        Arc::new(Entry {
            feed: Arc::clone(&feed),
            loader: handle,
        }),
    );
    finish(Ok(handle), out)
}

/// The loader the feed drives, for reading: `loader_state`, `loader_stats`,
/// `loader_requests`, and the view (`loader_view_acquire`: pin it to read the items behind
/// its acquisitions while the workers run). It is the feed's own handle, unchanged: a feed's
/// handle is its loader's. Answering its reads is the feed's: a host must not; freeing it is
/// `loader_feed_free`'s (`loader_free` refuses it with `LOADER_RESULT_FEED_OWNED`). The
/// handle turns stale when the feed is freed.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_feed_loader(
    feed: loader_feed_handle,
    out: *mut loader_handle,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        match unsafe { Out::required(out) } {
            Ok(out) => finish(entry(feed).map(|e| e.loader), out),
            Err(e) => e,
        }
    })
}

/// Runs `f` on the feed's loader, then tells the feed the host acted (what stopped it may be
/// over, and the deadline may have moved).
fn acting(
    feed: loader_feed_handle,
    f: impl FnOnce(loader_handle) -> loader_result,
) -> loader_result {
    match entry(feed) {
        Ok(e) => {
            let mut f = Some(f);
            let loader = e.loader;
            act_on(&e.feed, &mut || {
                f.take().map_or(loader_result::Ok, |f| f(loader))
            })
        }
        Err(e) => e,
    }
}

/// The host's action `run` on `feed`, between [`Feed::will_act`] and [`Feed::acted`], which
/// runs however `run` ends: a host callback that unwinds through it (a C++ exception) still
/// has the reads the action issued announced. One function for every `loader_feed_*` action,
/// out of line.
#[inline(never)]
fn act_on(feed: &Feed<CSource>, run: &mut dyn FnMut() -> loader_result) -> loader_result {
    struct Acted<'a>(&'a Feed<CSource>);
    impl Drop for Acted<'_> {
        fn drop(&mut self) {
            self.0.acted();
        }
    }
    feed.will_act();
    let _acted = Acted(feed);
    run()
}

/// `loader_set_window` on the feed's loader: shows items `[start, start + len)`, loads what
/// is missing and retries a recorded failure. Its codes; `release` and `changed` may run on
/// this thread before it returns.
#[no_mangle]
pub extern "C-unwind" fn loader_feed_set_window(
    feed: loader_feed_handle,
    start: u64,
    len: u64,
) -> loader_result {
    acting(feed, |l| loader_set_window(l, start, len))
}

/// `loader_jump` on the feed's loader: rebuilds the view around `cursor`, numbered
/// `position`. Its codes.
///
/// # Safety
/// `cursor` is NULL or valid for `cursor_len` bytes.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_feed_jump(
    feed: loader_feed_handle,
    cursor: *const u8,
    cursor_len: usize,
    position: u64,
) -> loader_result {
    // SAFETY: forwarded contract.
    acting(feed, |l| unsafe {
        loader_jump(l, cursor, cursor_len, position)
    })
}

/// `loader_invalidate` on the feed's loader: the source changed; call it once the change is
/// visible to new loads (after the commit).
#[no_mangle]
pub extern "C-unwind" fn loader_feed_invalidate(feed: loader_feed_handle) -> loader_result {
    acting(feed, |l| loader_invalidate(l))
}

/// `loader_invalidate_range` on the feed's loader: the source changed only between `from`
/// and `to` (NULL `to`: the source's end). Needs `compare` in the feed's config
/// (`LOADER_RESULT_NO_COMPARE`) and a `load` that honours `loader_read.until`.
///
/// # Safety
/// As `loader_invalidate_range`.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_feed_invalidate_range(
    feed: loader_feed_handle,
    from: *const u8,
    from_len: usize,
    to: *const u8,
    to_len: usize,
) -> loader_result {
    // SAFETY: forwarded contract.
    acting(feed, |l| unsafe {
        loader_invalidate_range(l, from, from_len, to, to_len)
    })
}

/// `loader_appended` on the feed's loader: items were added after the source's last item
/// (call it once they are visible to new loads); the feed loads only them when the window
/// wants the end.
#[no_mangle]
pub extern "C-unwind" fn loader_feed_appended(feed: loader_feed_handle) -> loader_result {
    acting(feed, |l| super::follow::loader_appended(l))
}

/// `loader_follow` on the feed's loader: pins the window to the source's end (`on`), or
/// stops following.
#[no_mangle]
pub extern "C-unwind" fn loader_feed_follow(feed: loader_feed_handle, on: bool) -> loader_result {
    acting(feed, |l| super::follow::loader_follow(l, on))
}

/// `loader_retry` on the feed's loader: retries a recorded failure now, and clears what
/// stopped the feed (a load's bad page). `*out_started` (may be NULL) says whether a read
/// started.
///
/// # Safety
/// `out_started` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_feed_retry(
    feed: loader_feed_handle,
    out_started: *mut bool,
) -> loader_result {
    // SAFETY: forwarded contract.
    acting(feed, |l| unsafe { loader_retry(l, out_started) })
}

/// Waits until the feed's loader is quiescent and not revalidating (`LOADER_RESULT_OK`), or
/// `timeout_ms` passed (`LOADER_RESULT_TIMED_OUT`; a negative timeout waits as long as it
/// takes), or the feed cannot settle until the host acts: `LOADER_RESULT_COUNT_OVER_LIMIT` (a
/// load returned more items than its `limit`), `LOADER_RESULT_CURSOR_TOO_LONG` /
/// `LOADER_RESULT_NULL_CURSOR` (a load's `next_cursor`), `LOADER_RESULT_CURSOR_STALLED` (a
/// load answered with the cursor it was given), `LOADER_RESULT_RETRIES_SPENT` (the automatic
/// retries are spent). The first two kinds are bugs in the load: the feed does not retry
/// them until the host moves the window, jumps, invalidates or calls `loader_feed_retry`.
/// Any thread may wait, several at once; from inside `load` it waits for that load too.
/// `LOADER_RESULT_OK` comes after the answers that made the loader quiescent are given: the
/// loads `loader_feed_counts` then counts running are only ones whose reads were let go (a
/// jump, a far move, `read_timeout_ms`). From inside `release` or `changed` during an
/// answer, that answer is not waited for.
#[no_mangle]
pub extern "C" fn loader_feed_wait_quiescent(
    feed: loader_feed_handle,
    timeout_ms: i64,
) -> loader_result {
    boundary(loader_result::Panic, || match entry(feed) {
        Ok(e) => match e.feed.wait_quiescent(timeout(timeout_ms)) {
            Ok(()) => loader_result::Ok,
            Err(p) => problem_code(p),
        },
        Err(e) => e,
    })
}

/// Frees a feed. Reads not started are dropped; the loader is freed (every page it holds
/// goes to `release`, on this thread, but those a pinned view still lists: they follow when
/// the view is released); then it waits up to `timeout_ms` (negative: as long as it takes)
/// for the loads still running (and for pages a worker is handing to `release`), and joins
/// every feed thread but those still inside a load: when it returns, no other thread of the
/// feed is alive.
///
/// A load still running at the timeout (one stuck on I/O) is let go: its thread is detached,
/// and when the load returns its page goes to `release` on that thread, which then ends.
/// `*out_left_running` (may be NULL) is how many such loads there are: until each has
/// returned, `userdata` and the host's functions must stay valid. Called from inside one of
/// this feed's loads, it does not wait for that load (it is counted as left running); so for
/// a thread that holds jobs of a feed in job mode (taken, not yet answered): they are counted
/// as left running, and a job mode feed's jobs no thread took are withdrawn at once.
/// Called from inside `release` or `changed` on one of the feed's own threads (a worker
/// answering a read, the clock thread), it does not wait for or join that thread, which ends
/// when the callback returns, and honours its timeout. A second free returns
/// `LOADER_RESULT_STALE_HANDLE`.
///
/// # Safety
/// `out_left_running` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C-unwind" fn loader_feed_free(
    feed: loader_feed_handle,
    timeout_ms: i64,
    out_left_running: *mut u32,
) -> loader_result {
    // The steps in Rust run inside the panic boundary; loader_free, which delivers the host's
    // `release` callbacks, outside it (a callback may unwind through it).
    let end = timeout(timeout_ms).map(|t| Instant::now() + t);
    let e = match boundary(Err(loader_result::Panic), || {
        let removed = {
            let mut feeds = FEEDS.write();
            let removed = feeds.remove(&feed);
            if removed.is_some() {
                FREEING.write().insert(feed);
            }
            removed
        };
        let e = removed.ok_or_else(|| not_a_feed(feed))?;
        // Close first (no new load starts), then free the loader (its pages), then wait.
        e.feed.shut();
        Ok(e)
    }) {
        Ok(e) => e,
        Err(e) => return e,
    };
    if let Some(jobs) = &e.feed.source().jobs {
        // The jobs no host thread took are withdrawn; those taken are waited for below.
        boundary((), || {
            jobs.close();
        });
    }
    let _ = loader_free(e.loader);
    FREEING.write().remove(&feed);
    let held = super::feed_jobs::held_here(&e);
    let left = boundary(0, || e.feed.finish_holding(end, held));
    if !out_left_running.is_null() {
        // SAFETY: not NULL, valid for a write by this function's contract.
        unsafe { out_left_running.write(u32::try_from(left).unwrap_or(u32::MAX)) };
    }
    loader_result::Ok
}

#[cfg(test)]
mod tests {
    #[test]
    fn max_workers_matches_the_feed() {
        assert_eq!(super::LOADER_FEED_MAX_WORKERS, crate::feed::MAX_WORKERS);
    }
}
