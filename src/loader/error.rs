//! Why the loader refuses a call: [`LoaderError`].

use super::config::{ConfigError, MAX_CURSOR_LEN};
use crate::ledger::LedgerError;
use thiserror::Error;

/// Why the loader refused a call. A refused call changes nothing and accepts nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum LoaderError {
    /// An answer named a read the loader never issued.
    #[error("read {0} was never issued")]
    UnknownRead(u64),
    /// An answer named a read that was already answered (or cancelled by a close).
    #[error("read {0} was already answered")]
    AlreadyAnswered(u64),
    /// An answer had more items than the read asked for.
    #[error("count {count} exceeds the read's limit {limit}")]
    CountOverLimit {
        /// The items the answer claimed.
        count: u32,
        /// The read's limit.
        limit: u32,
    },
    /// An answer's cursor was longer than [`MAX_CURSOR_LEN`].
    #[error("cursor of {0} bytes exceeds the maximum of {MAX_CURSOR_LEN}")]
    CursorTooLong(usize),
    /// A window whose end does not fit in a `u64`.
    #[error("window start plus length overflows")]
    WindowOverflow,
    /// A ranged invalidation whose end comes before its start.
    #[error("the range's end comes before its start")]
    RangeReversed,
    /// The loader was closed.
    #[error("the loader is closed")]
    Closed,
    /// The ledger refused the call; from the loader, only when its epoch or request ids are
    /// exhausted.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A recording was asked for after the loader's first call, or twice.
    #[error("a recording must be asked for before the loader's first call, once")]
    RecordTooLate,
    /// The config given to the constructor is invalid.
    #[error("invalid config: {0}")]
    Config(#[from] ConfigError),
}
