//! Result codes: the one numeric error enum of the ABI, each code's static message, and the
//! conversions from every error the layers below can report.

#![allow(non_camel_case_types)]

use super::handle::HandleError;
use crate::ledger;
use crate::loader::{ConfigError, LoaderError};
use std::ffi::c_char;

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
    /// A window's end overflows: `start + len` past 64 bits (`loader_set_window`), or a jump's
    /// `position` over `LOADER_MAX_POSITION` or `position` plus the window's length past 64
    /// bits (`loader_jump`, a config's `initial_position`).
    WindowOverflow = 9,
    /// The output array is too small; `*out_len` holds the length needed.
    BufferTooSmall = 10,
    /// A panic inside the library was caught; the handle is now poisoned.
    Panic = 11,
    /// An earlier panic poisoned this handle; only `loader_free` works on it.
    Poisoned = 12,
    /// The epoch counter is exhausted.
    EpochOverflow = 13,
    /// The request or read id space is exhausted. It is for good: every later event that could
    /// start a request, or commit one (which may start the next), returns it, so a request may
    /// stay in flight with no read outstanding (a repair that needed no read, whose commit the
    /// exhausted space refuses). With one id left, an answer that decides a ranged change
    /// ahead of its read (`loader_invalidate_range`) returns it too, changing nothing: taking
    /// the change may start one request and the answer another. Free the loader. Only
    /// `loader_new_with_counters` reaches it in practice (2^64 requests otherwise).
    IdOverflow = 14,
    /// `page_size` is 0 or larger than `LOADER_MAX_PAGE_SIZE`.
    InvalidPageSize = 15,
    /// `backoff_initial_ms` is 0.
    InvalidBackoffInitial = 16,
    /// `backoff_max_ms` is below `backoff_initial_ms`.
    InvalidBackoffMax = 17,
    /// `backoff_multiplier` is not a finite number in 1.0..=16.0.
    InvalidBackoffMultiplier = 18,
    /// A required callback is NULL: `issue` or `release` (`loader_new`), `load` or `release`
    /// (`loader_feed_new`).
    MissingCallback = 19,
    /// No more loaders can be created in this process.
    TooManyHandles = 20,
    /// A ranged invalidation needs the `compare` callback, which the loader was not given.
    NoCompare = 21,
    /// A ranged invalidation's end comes before its start.
    RangeReversed = 22,
    /// A struct's `struct_size` is not one this library accepts: smaller than the struct's
    /// first release (0: never set) or larger than 4096 bytes.
    InvalidStructSize = 23,
    /// A struct sets a field this library does not know (a non-zero byte past the struct as
    /// the library declares it): the host was built against a newer `loader.h`.
    UnknownField = 24,
    /// `loader_record` could not start a recording: the file cannot be created, or the loader
    /// was already called (a recording starts right after `loader_new`), or it already records.
    RecordFailed = 25,
    /// A feed's `workers` is 0 or above `LOADER_FEED_MAX_WORKERS`.
    InvalidWorkers = 26,
    /// The wait's timeout passed first.
    TimedOut = 27,
    /// A load answered with the cursor it was given (a cursor that does not advance): the
    /// feed retries after the backoff, but the load must be fixed.
    CursorStalled = 28,
    /// Loads kept failing and the automatic retries (`max_auto_retries`) are spent: nothing
    /// loads until the host retries, moves the window or invalidates.
    RetriesSpent = 29,
    /// A thread could not be started.
    ThreadStart = 30,
    /// `loader_free` on a feed's handle (which is also its loader's): the loader is the
    /// feed's. Free it with `loader_feed_free`; nothing was freed.
    FeedOwned = 31,
}

impl loader_result {
    /// Every code, in value order.
    pub(crate) const ALL: [loader_result; 32] = [
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
        loader_result::NoCompare,
        loader_result::RangeReversed,
        loader_result::InvalidStructSize,
        loader_result::UnknownField,
        loader_result::RecordFailed,
        loader_result::InvalidWorkers,
        loader_result::TimedOut,
        loader_result::CursorStalled,
        loader_result::RetriesSpent,
        loader_result::ThreadStart,
        loader_result::FeedOwned,
    ];

    /// The code's stable value, as C sees it.
    pub(crate) fn code(self) -> i32 {
        self as i32
    }

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
            loader_result::WindowOverflow => {
                b"the window's end overflows, or a jump position is over LOADER_MAX_POSITION\0"
            }
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
            loader_result::MissingCallback => {
                b"a required callback is NULL (issue and release; a feed's load and release)\0"
            }
            loader_result::TooManyHandles => b"no more loaders can be created in this process\0",
            loader_result::NoCompare => {
                b"a ranged invalidation needs the compare callback, which the loader lacks\0"
            }
            loader_result::RangeReversed => b"the range's end comes before its start\0",
            loader_result::InvalidStructSize => {
                b"struct_size is not set to the struct's sizeof, or is not one this library knows\0"
            }
            loader_result::UnknownField => {
                b"a field this library does not know is set: loader.h is newer than the library\0"
            }
            loader_result::RecordFailed => {
                b"the recording could not start: the file cannot be created, or the loader was already called\0"
            }
            loader_result::InvalidWorkers => {
                b"a feed's workers must be between 1 and LOADER_FEED_MAX_WORKERS\0"
            }
            loader_result::TimedOut => b"the timeout passed first\0",
            loader_result::CursorStalled => {
                b"a load answered with the cursor it was given: the cursor must advance\0"
            }
            loader_result::RetriesSpent => {
                b"loads kept failing and the automatic retries are spent\0"
            }
            loader_result::ThreadStart => b"a thread could not be started\0",
            loader_result::FeedOwned => {
                b"the loader is a feed's: free it with loader_feed_free, not loader_free\0"
            }
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
            LoaderError::RangeReversed => loader_result::RangeReversed,
            // A closed loader's handle is already gone from the table.
            LoaderError::Closed => loader_result::StaleHandle,
            LoaderError::Ledger(ledger::LedgerError::EpochOverflow) => loader_result::EpochOverflow,
            LoaderError::Ledger(ledger::LedgerError::IdOverflow) => loader_result::IdOverflow,
            // The loader answers these through its own read ids before the ledger sees them.
            LoaderError::Ledger(ledger::LedgerError::NotIssued(_)) => loader_result::UnknownRead,
            LoaderError::Ledger(_) => loader_result::AlreadyAnswered,
            LoaderError::Config(c) => c.into(),
            LoaderError::RecordTooLate => loader_result::RecordFailed,
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

impl From<HandleError> for loader_result {
    fn from(e: HandleError) -> loader_result {
        match e {
            HandleError::Null | HandleError::Invalid => loader_result::InvalidHandle,
            HandleError::Stale => loader_result::StaleHandle,
            HandleError::Full => loader_result::TooManyHandles,
        }
    }
}

/// The static, NUL-terminated message for `code`, or for "unknown result code".
pub(crate) fn result_str(code: i32) -> *const c_char {
    let r = loader_result::ALL
        .iter()
        .find(|r| r.code() == code)
        .map_or(&b"unknown result code\0"[..], |r| r.message());
    r.as_ptr().cast()
}

/// `Ok(())` as `LOADER_RESULT_OK`, an error as its own code.
pub(crate) fn code(r: Result<(), loader_result>) -> loader_result {
    r.err().unwrap_or(loader_result::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_own_message() {
        let mut seen = std::collections::HashSet::new();
        for r in loader_result::ALL {
            assert!(seen.insert(r.message()), "{r:?}");
            assert_eq!(r.message().last(), Some(&0));
        }
    }

    #[test]
    fn codes_are_their_positions_in_all() {
        for (i, r) in loader_result::ALL.iter().enumerate() {
            assert_eq!(usize::try_from(r.code()), Ok(i), "{r:?}");
        }
    }
}
