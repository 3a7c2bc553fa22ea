//! What the benches share, one module a concept: each bench mounts `common` and uses the
//! modules it needs. `counting_alloc.rs` stands apart: only the allocation bench (and a test)
//! mount that allocator's shell, by path.

pub mod arrivals;
pub mod geometry;
pub mod harness;
pub mod host;
pub mod ledgers;
pub mod numbered;
pub mod rng;
pub mod stream;
