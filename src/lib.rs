//! libloader: a verified ordered-source loader with a C ABI.
//!
//! Layers, each depending only on those below it:
//! - [`ffi`]: the C ABI (`loader_*`), the only module with `unsafe`;
//! - [`feed`]: a load-function host over a loader: worker threads, a clock, retries (the
//!   layers below own neither);
//! - [`loader`]: the OrderedSourceLoader: window, pages, cursors, chain and full reads,
//!   backoff, the view;
//! - [`ledger`]: the production request ledger (the module's `unifiedMin` rules, generalised).
//!
//! Under `ledger`, the private module `vocab` holds the TLA+ module's variable values and
//! invariant names, which `ledger` re-exports.
//!
//! Beside them, `model` is the TLA+ module `LoaderLedger`, executable, with an exhaustive
//! explorer; `refinement` checks the ledger against it; and `sim` is a deterministic simulated
//! host that checks the loader's properties. All three are test instruments, compiled only
//! with the `testing` cargo feature (and in unit tests), so the default library carries none of
//! them; the feature also adds the C test ABI (`ffi::testing`).
//! `docs/DESIGN.md` in the repository describes the layers, the host contract and how each is
//! verified.
//!
//! The types a Rust host needs are re-exported here, so it writes `loader::Loader`:
//!
//! ```
//! use loader::{Config, Effect, Loader};
//!
//! // A host whose source holds 30 items; a cursor is the next item's index, as one byte.
//! let mut l = Loader::new(Config { page_size: 10, prefetch_distance: 0, ..Config::default() })?;
//! l.set_window(0, 20)?;
//! let mut next_acquisition = 1;
//! let mut released = 0;
//! loop {
//!     let mut reads = Vec::new();
//!     for effect in l.take_effects() {
//!         match effect {
//!             Effect::Issue(read) => reads.push(read),
//!             Effect::Release { .. } => released += 1,
//!             Effect::Cancel { .. } | Effect::Changed => {}
//!         }
//!     }
//!     if reads.is_empty() {
//!         break;
//!     }
//!     for read in reads {
//!         let at = read.cursor.first().copied().unwrap_or(0);
//!         let end = (at + read.limit as u8).min(30);
//!         l.settle(read.read_id, next_acquisition, u32::from(end - at), &[end], end == 30)?;
//!         next_acquisition += 1;
//!     }
//! }
//! assert_eq!(l.page_count(), 2);
//! assert_eq!(l.covered(), (0, 20));
//! l.close();
//! let closing = l.take_effects();
//! let handed_back = closing.iter().filter(|e| matches!(e, Effect::Release { .. })).count();
//! assert_eq!(released + handed_back, 2); // every accepted acquisition, exactly once
//! # Ok::<(), loader::LoaderError>(())
//! ```

#[cfg(any(test, feature = "testing"))]
pub mod check;
pub mod feed;
pub mod ffi;
pub mod ledger;
pub mod loader;
#[cfg(any(test, feature = "testing"))]
pub mod model;
#[cfg(feature = "testing")]
pub mod refinement;
#[cfg(feature = "testing")]
pub mod replay;
#[cfg(any(test, feature = "testing"))]
pub mod sim;
mod vocab;

pub use ledger::Ledger;
pub use loader::{
    Answer, Config, ConfigError, Cursor, Direction, Effect, Kind, Loader, LoaderError, Page, Read,
    Stats,
};
