//! The plain C types of the ABI: result codes, the spec's enums, and the structs passed
//! across. Enums only ever flow out of the library; every value C passes in is an integer or
//! a struct of integers, so no C value can be an invalid Rust enum.

#![allow(non_camel_case_types)]

use crate::ledger::{self, Coverage, Debt, Failure, Phase};
use crate::loader::{self, Answer, ConfigError, LoaderError};
use std::ffi::{c_char, c_void};

/// A result code. 0 is success; every other value is an error whose message
/// `loader_result_str` gives. Values are stable across releases.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_result {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullPointer = 1,
    /// The handle is 0, or was never issued (forged or corrupted).
    InvalidHandle = 2,
    /// The handle was freed (a call after `loader_free`, or a double free).
    StaleHandle = 3,
    /// The read id was never issued by this loader.
    UnknownRead = 4,
    /// The read was already answered (a second answer, settle after fail, fail after settle).
    AlreadyAnswered = 5,
    /// `count` exceeds the read's `limit`.
    CountOverLimit = 6,
    /// A cursor pointer was NULL while its length was not 0.
    NullCursor = 7,
    /// A cursor is longer than `LOADER_MAX_CURSOR_LEN`.
    CursorTooLong = 8,
    /// `start + len` of a window overflows 64 bits.
    WindowOverflow = 9,
    /// The output array is too small; `*out_len` holds the length needed.
    BufferTooSmall = 10,
    /// A panic inside the library was caught; the handle is now poisoned.
    Panic = 11,
    /// An earlier panic poisoned this handle; only `loader_free` works on it.
    Poisoned = 12,
    /// The epoch counter is exhausted.
    EpochOverflow = 13,
    /// The request or read id space is exhausted.
    IdOverflow = 14,
    /// `page_size` is 0 or larger than `LOADER_MAX_PAGE_SIZE`.
    InvalidPageSize = 15,
    /// `backoff_initial_ms` is 0.
    InvalidBackoffInitial = 16,
    /// `backoff_max_ms` is below `backoff_initial_ms`.
    InvalidBackoffMax = 17,
    /// `backoff_multiplier` is not a finite number in 1.0..=16.0.
    InvalidBackoffMultiplier = 18,
    /// The `issue` or `release` callback is NULL.
    MissingCallback = 19,
    /// No more loaders can be created in this process.
    TooManyHandles = 20,
}

impl loader_result {
    pub(crate) const ALL: [loader_result; 21] = [
        loader_result::Ok,
        loader_result::NullPointer,
        loader_result::InvalidHandle,
        loader_result::StaleHandle,
        loader_result::UnknownRead,
        loader_result::AlreadyAnswered,
        loader_result::CountOverLimit,
        loader_result::NullCursor,
        loader_result::CursorTooLong,
        loader_result::WindowOverflow,
        loader_result::BufferTooSmall,
        loader_result::Panic,
        loader_result::Poisoned,
        loader_result::EpochOverflow,
        loader_result::IdOverflow,
        loader_result::InvalidPageSize,
        loader_result::InvalidBackoffInitial,
        loader_result::InvalidBackoffMax,
        loader_result::InvalidBackoffMultiplier,
        loader_result::MissingCallback,
        loader_result::TooManyHandles,
    ];

    /// The static, NUL-terminated message for this code.
    pub(crate) fn message(self) -> &'static [u8] {
        match self {
            loader_result::Ok => b"ok\0",
            loader_result::NullPointer => b"a required pointer argument is NULL\0",
            loader_result::InvalidHandle => b"the handle is NULL or was never issued\0",
            loader_result::StaleHandle => b"the handle was freed\0",
            loader_result::UnknownRead => b"the read id was never issued by this loader\0",
            loader_result::AlreadyAnswered => b"the read was already answered\0",
            loader_result::CountOverLimit => b"count exceeds the read's limit\0",
            loader_result::NullCursor => b"the cursor is NULL but its length is not 0\0",
            loader_result::CursorTooLong => b"the cursor is longer than LOADER_MAX_CURSOR_LEN\0",
            loader_result::WindowOverflow => b"window start plus length overflows\0",
            loader_result::BufferTooSmall => {
                b"the output array is too small; *out_len holds the length needed\0"
            }
            loader_result::Panic => {
                b"a panic inside libloader was caught; the handle is poisoned\0"
            }
            loader_result::Poisoned => {
                b"the handle is poisoned by an earlier panic; only loader_free works\0"
            }
            loader_result::EpochOverflow => b"the epoch counter is exhausted\0",
            loader_result::IdOverflow => b"the id space is exhausted\0",
            loader_result::InvalidPageSize => {
                b"page_size must be between 1 and LOADER_MAX_PAGE_SIZE\0"
            }
            loader_result::InvalidBackoffInitial => b"backoff_initial_ms must be at least 1\0",
            loader_result::InvalidBackoffMax => {
                b"backoff_max_ms must be at least backoff_initial_ms\0"
            }
            loader_result::InvalidBackoffMultiplier => {
                b"backoff_multiplier must be a finite number between 1.0 and 16.0\0"
            }
            loader_result::MissingCallback => b"the issue and release callbacks are required\0",
            loader_result::TooManyHandles => b"no more loaders can be created in this process\0",
        }
    }
}

impl From<LoaderError> for loader_result {
    fn from(e: LoaderError) -> loader_result {
        match e {
            LoaderError::UnknownRead(_) => loader_result::UnknownRead,
            LoaderError::AlreadyAnswered(_) => loader_result::AlreadyAnswered,
            LoaderError::CountOverLimit { .. } => loader_result::CountOverLimit,
            LoaderError::CursorTooLong(_) => loader_result::CursorTooLong,
            LoaderError::WindowOverflow => loader_result::WindowOverflow,
            // A closed loader's handle is already gone from the table.
            LoaderError::Closed => loader_result::StaleHandle,
            LoaderError::Ledger(ledger::LedgerError::EpochOverflow) => loader_result::EpochOverflow,
            LoaderError::Ledger(ledger::LedgerError::IdOverflow) => loader_result::IdOverflow,
            // The loader answers these through its own read ids before the ledger sees them.
            LoaderError::Ledger(ledger::LedgerError::NotIssued(_)) => loader_result::UnknownRead,
            LoaderError::Ledger(_) => loader_result::AlreadyAnswered,
            LoaderError::Config(c) => c.into(),
        }
    }
}

impl From<ConfigError> for loader_result {
    fn from(e: ConfigError) -> loader_result {
        match e {
            ConfigError::PageSize => loader_result::InvalidPageSize,
            ConfigError::BackoffInitial => loader_result::InvalidBackoffInitial,
            ConfigError::BackoffMax => loader_result::InvalidBackoffMax,
            ConfigError::BackoffMultiplier => loader_result::InvalidBackoffMultiplier,
        }
    }
}

/// The kind of a request, and of the reads it issues.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_kind {
    /// One page appended after the covered prefix.
    Finite = 0,
    /// A bounded repair: the covered range re-read step by step.
    Chain = 1,
    /// A full-source read from the start.
    Full = 2,
}

impl From<ledger::Kind> for loader_kind {
    fn from(k: ledger::Kind) -> loader_kind {
        match k {
            ledger::Kind::Finite => loader_kind::Finite,
            ledger::Kind::Chain => loader_kind::Chain,
            ledger::Kind::Full => loader_kind::Full,
        }
    }
}

/// The spec's `debt`: none < bounded < full.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_debt {
    None = 0,
    Bounded = 1,
    Full = 2,
}

/// The spec's `phase`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_phase {
    Idle = 0,
    Repair = 1,
    Fullheld = 2,
}

/// The spec's `failure`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_failure {
    None = 0,
    Own = 1,
    Superseded = 2,
}

/// The spec's `coverage`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_coverage {
    Nothing = 0,
    Pages = 1,
    Chain = 2,
    Full = 3,
}

/// A live request's `st`. Released requests are forgotten and not listed.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_request_state {
    Inflight = 0,
    Settled = 1,
    Failed = 2,
}

/// How an accepted answer was classified.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_answer {
    /// Authoritative: in the view, or will be when its request commits. For a failure: the
    /// loader's own failure, which waits for a retry (explicit, window move, or backoff).
    Current = 0,
    /// Superseded or overtaken: not part of the view. For a failure: it only raised debt.
    Stale = 1,
    /// Items with a cursor that did not advance: a host bug the loader survived.
    CursorStalled = 2,
}

impl From<Answer> for loader_answer {
    fn from(a: Answer) -> loader_answer {
        match a {
            Answer::Current => loader_answer::Current,
            Answer::Stale => loader_answer::Stale,
            Answer::CursorStalled => loader_answer::CursorStalled,
        }
    }
}

impl From<Debt> for loader_debt {
    fn from(d: Debt) -> loader_debt {
        match d {
            Debt::None => loader_debt::None,
            Debt::Bounded => loader_debt::Bounded,
            Debt::Full => loader_debt::Full,
        }
    }
}

impl From<Phase> for loader_phase {
    fn from(p: Phase) -> loader_phase {
        match p {
            Phase::Idle => loader_phase::Idle,
            Phase::Repair => loader_phase::Repair,
            Phase::FullHeld => loader_phase::Fullheld,
        }
    }
}

impl From<Failure> for loader_failure {
    fn from(f: Failure) -> loader_failure {
        match f {
            Failure::None => loader_failure::None,
            Failure::Own => loader_failure::Own,
            Failure::Superseded => loader_failure::Superseded,
        }
    }
}

impl From<Coverage> for loader_coverage {
    fn from(c: Coverage) -> loader_coverage {
        match c {
            Coverage::Nothing => loader_coverage::Nothing,
            Coverage::Pages => loader_coverage::Pages,
            Coverage::Chain => loader_coverage::Chain,
            Coverage::Full => loader_coverage::Full,
        }
    }
}

/// Loader settings. Fill one with `loader_config_default`, then change fields.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_config {
    /// Items per read. Default 50; 1..=`LOADER_MAX_PAGE_SIZE`.
    pub page_size: u32,
    /// Items past the window's end to keep loaded. Default 50.
    pub prefetch_distance: u64,
    /// Pages wholly more than this many items before the window start are released; 0 (the
    /// default) never drops.
    pub drop_margin: u64,
    /// First backoff delay after an own failure, ms. Default 100; at least 1.
    pub backoff_initial_ms: u64,
    /// Cap on the backoff delay, ms. Default 30000; at least `backoff_initial_ms`.
    pub backoff_max_ms: u64,
    /// Factor between delays. Default 2.0; finite, 1.0..=16.0.
    pub backoff_multiplier: f64,
    /// Automatic retries before waiting for an explicit one. Default 5; 0 disables them.
    pub max_auto_retries: u32,
    /// Seeds the backoff jitter. Default 0.
    pub jitter_seed: u64,
    /// Non-zero (the default): repair an invalidation that overtook a full read. Zero restores
    /// the model's exact `unifiedMin`, which loses it.
    pub recheck_full: u8,
}

impl From<loader::Config> for loader_config {
    fn from(c: loader::Config) -> loader_config {
        loader_config {
            page_size: c.page_size,
            prefetch_distance: c.prefetch_distance,
            drop_margin: c.drop_margin,
            backoff_initial_ms: c.backoff_initial_ms,
            backoff_max_ms: c.backoff_max_ms,
            backoff_multiplier: c.backoff_multiplier,
            max_auto_retries: c.max_auto_retries,
            jitter_seed: c.jitter_seed,
            recheck_full: c.recheck_full as u8,
        }
    }
}

impl From<&loader_config> for loader::Config {
    fn from(c: &loader_config) -> loader::Config {
        loader::Config {
            page_size: c.page_size,
            prefetch_distance: c.prefetch_distance,
            drop_margin: c.drop_margin,
            backoff_initial_ms: c.backoff_initial_ms,
            backoff_max_ms: c.backoff_max_ms,
            backoff_multiplier: c.backoff_multiplier,
            max_auto_retries: c.max_auto_retries,
            jitter_seed: c.jitter_seed,
            recheck_full: c.recheck_full != 0,
        }
    }
}

/// A read the loader asks the host to perform. Valid only during the `issue` callback; copy
/// the cursor bytes if they are needed later.
#[repr(C)]
#[derive(Debug)]
pub struct loader_read {
    /// Names the read in `loader_settle` / `loader_fail`. Never reused.
    pub read_id: u64,
    /// The request the read belongs to.
    pub request_id: u64,
    pub kind: loader_kind,
    /// The epoch the request was stamped with.
    pub epoch: u64,
    /// 0 for a request's first read; chain and full reads count up.
    pub step: u32,
    /// Where to start: bytes the host returned earlier as a `next_cursor`. Owned by the
    /// loader; NULL when `cursor_len` is 0 (the source's start).
    pub cursor: *const u8,
    pub cursor_len: usize,
    /// At most this many items.
    pub limit: u32,
}

/// Called to start a read. The host answers it later, exactly once, from any thread.
pub type loader_issue_fn =
    Option<unsafe extern "C" fn(userdata: *mut c_void, read: *const loader_read)>;
/// Called exactly once for every acquisition the loader accepted, when it is done with it.
pub type loader_release_fn =
    Option<unsafe extern "C" fn(userdata: *mut c_void, acquisition: usize)>;
/// Called after the view or the state changed.
pub type loader_changed_fn = Option<unsafe extern "C" fn(userdata: *mut c_void)>;
/// Called once for each read whose answer is no longer needed (it was superseded, or the
/// loader was freed). A hint: the host may abort the read, or answer it anyway.
pub type loader_cancel_fn = Option<unsafe extern "C" fn(userdata: *mut c_void, read_id: u64)>;

/// The host's callbacks. `issue` and `release` are required; `changed` and `cancel` may be
/// NULL. Each receives `userdata` first, unchanged.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_callbacks {
    /// Passed to every callback. The host keeps it valid until `loader_free` returns, and
    /// until every callback running on another thread has returned.
    pub userdata: *mut c_void,
    pub issue: loader_issue_fn,
    pub release: loader_release_fn,
    pub changed: loader_changed_fn,
    pub cancel: loader_cancel_fn,
}

/// The spec's abstract state, plus the loader's counts.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_snapshot {
    pub epoch: u64,
    pub debt: loader_debt,
    pub phase: loader_phase,
    pub chain_epoch: u64,
    pub failure: loader_failure,
    pub coverage: loader_coverage,
    pub settled_once: bool,
    pub cover_epoch: u64,
    /// Live requests in flight, settled, and failed (waiting for a retry to release them).
    pub inflight: u64,
    pub settled: u64,
    pub failed: u64,
    /// The id the next request will get.
    pub next_request_id: u64,
    /// Pages in the view.
    pub pages: u64,
    /// Reads issued and not yet answered.
    pub outstanding_reads: u64,
    /// A repair or full read is pending or running; the view shown is the old one.
    pub revalidating: bool,
    pub end_of_source: bool,
    /// The view covers items `[covered_start, covered_end)`.
    pub covered_start: u64,
    pub covered_end: u64,
    pub window_start: u64,
    pub window_len: u64,
    /// Acquisitions accepted and released so far.
    pub accepted: u64,
    pub released: u64,
}

/// Counters since the loader was created, for reports and monitoring.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_counts {
    /// Reads issued, by kind.
    pub issued_finite: u64,
    pub issued_chain: u64,
    pub issued_full: u64,
    /// Accepted answers classified current, stale, and with a stalled cursor.
    pub answered_current: u64,
    pub answered_stale: u64,
    pub cursor_stalls: u64,
    /// Failures that were the loader's own (they wait for a retry), and of superseded reads.
    pub failed_own: u64,
    pub failed_stale: u64,
    /// Retries started by the backoff timer, and by `loader_retry` or a window move.
    pub retries_auto: u64,
    pub retries_explicit: u64,
    /// Acquisitions accepted and released.
    pub accepted: u64,
    pub released: u64,
    /// Cancellation hints sent.
    pub cancels: u64,
}

impl From<crate::loader::Stats> for loader_counts {
    fn from(s: crate::loader::Stats) -> loader_counts {
        loader_counts {
            issued_finite: s.issued[0],
            issued_chain: s.issued[1],
            issued_full: s.issued[2],
            answered_current: s.answered_current,
            answered_stale: s.answered_stale,
            cursor_stalls: s.cursor_stalls,
            failed_own: s.failed_own,
            failed_stale: s.failed_stale,
            retries_auto: s.retries_auto,
            retries_explicit: s.retries_explicit,
            accepted: s.accepted,
            released: s.released,
            cancels: s.cancels,
        }
    }
}

/// One live request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_request_info {
    pub id: u64,
    pub kind: loader_kind,
    pub epoch: u64,
    pub state: loader_request_state,
    /// Authoritative work superseded it while in flight.
    pub superseded: bool,
}

/// One page of the view.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_page {
    /// The host's token for the page's items. Still owned by the loader.
    pub acquisition: usize,
    pub count: u32,
    pub epoch: u64,
    /// The offset of the page's first item in the source.
    pub start: u64,
}

pub(crate) fn result_str(code: i32) -> *const c_char {
    let r = loader_result::ALL
        .iter()
        .find(|r| **r as i32 == code)
        .map_or(&b"unknown result code\0"[..], |r| r.message());
    r.as_ptr().cast()
}
