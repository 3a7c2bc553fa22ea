//! The seeded cost runs' setting, shared by tests/cost.rs and tests/cost_mutants.rs: a source
//! of 10^5 items, runs of `OPS` ops, and the loader's config (with or without a bound).

use loader::Config;

/// Items in the source.
pub const LEN: u32 = 100_000;
/// Ops per run.
pub const OPS: usize = 1_500;

/// Pages of 20, prefetch 10, `max_pages` 0 or 6 by seed, short backoffs.
pub fn config(seed: u64) -> Config {
    Config {
        page_size: 20,
        prefetch_distance: 10,
        max_pages: [0, 6][seed as usize % 2],
        backoff_initial_ms: 50,
        backoff_max_ms: 800,
        ..Config::default()
    }
}
