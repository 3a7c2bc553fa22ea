//! Replaying a recorded run (`Loader::record_to`, `loader_record`, `LOADER_RECORD`) against
//! the production loader and the model: `loader-check --replay LOG`.
//!
//! The log's calls run again against a new [`Loader`](crate::Loader) with the log's settings;
//! each result and each batch of callbacks must be the log's. After each entry the checks
//! that apply to a single run hold: the ledger's invariants, the refinement relation (each
//! call's ledger change is a path of the model's actions, with the model's invariants and
//! step invariants), and the loader's properties that need no source (accounting, every held
//! acquisition accounted for, the memory bound, the retry count, a contiguous view, `changed`
//! once and last). The first divergence is reported with the entries that led to it; the run
//! exports as an ITF trace.
//!
//! The parts: `log` (reading the format), `refine` (the refinement relation along one run),
//! `run` (the replay and its checks), `itf` (the trace export), `memory` (a log kept in
//! memory).

mod itf;
mod log;
mod memory;
mod refine;
mod run;

pub use itf::itf;
pub use log::{parse, Call, Entry, Log};
pub use memory::Memory;
pub use refine::{rules_for, MAX_PATH};
pub use run::{replay, Divergence, Options, Report, Snap};
