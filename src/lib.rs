//! libloader: a verified ordered-source loader with a C ABI.
//!
//! Layers, each depending only on those below it:
//! - [`ffi`]: the C ABI (`loader_*`), the only module with `unsafe`;
//! - [`loader`]: the OrderedSourceLoader: window, pages, cursors, chain and full reads,
//!   backoff, the view;
//! - [`ledger`]: the production request ledger (the module's `unifiedMin` rules, generalised);
//! - [`model`]: the TLA+ module `LoaderLedger`, executable, with an exhaustive explorer.
//!
//! Beside them, [`refinement`] checks the ledger against the model, and [`sim`] is a
//! deterministic simulated host that checks the loader's properties. Under `ledger` and `model`,
//! [`vocab`] holds the variables' values and the invariants' names both use, so neither imports
//! the other.

pub mod ffi;
pub mod ledger;
pub mod loader;
pub mod model;
pub mod refinement;
pub mod sim;
pub mod vocab;
