//! libloader: a verified ordered-source loader with a C ABI.
//!
//! Layers, each depending only on those below it:
//! - [`model`]: the TLA+ module `LoaderLedger`, executable, with an exhaustive explorer;
//! - [`ledger`]: the production request ledger (the module's `unifiedMin` rules, generalised);
//! - [`refinement`]: the check that the ledger only takes steps the model allows.

pub mod ledger;
pub mod model;
pub mod refinement;
