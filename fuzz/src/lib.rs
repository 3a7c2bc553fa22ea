//! The fuzz targets' logic, as a library so that each target's file is one line and the
//! decoders and oracles can be unit tested (`cargo test` in this directory).
//!
//! - [`abi`]: calls to the exported C functions, with the spec's invariants checked through
//!   `loader_state` and `loader_requests` after every call;
//! - [`differential`]: the production ledger against the executable model, in lockstep;
//! - [`simulation`]: the loader's simulated host, driven by the input.

pub mod abi;
pub mod differential;
pub mod input;
pub mod simulation;
