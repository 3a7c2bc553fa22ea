//! The cost properties in the seeded simulation (`sim::cost`), on a source of 10^5 items:
//! far moves with a known cursor, jumps, ranged changes, failures and appends interleaved with
//! answers in any order, every budget checked after every event, with and without a bound on
//! the pages held.
#![cfg(feature = "testing")]

use loader::sim::{cost_ops, run, Source, APPEND_COST, PAGE_FAILURE_COST};
use std::collections::BTreeMap;

#[path = "common/cost_runs.rs"]
mod cost_runs;

use cost_runs::{config, LEN, OPS};

/// Seeds run: 12, or `LOADER_COST_SEEDS` (`LOADER_COST_SEEDS=2000 cargo test --release
/// --features testing --test cost` for a long run).
fn seeds() -> u64 {
    std::env::var("LOADER_COST_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

#[test]
fn every_cost_budget_holds_over_seeded_runs_on_a_long_source() {
    let source = Source::numbered(LEN as usize);
    let mut met: BTreeMap<&str, u64> = BTreeMap::new();
    let mut added: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut overlapped, mut page_retries, mut far_jumps) = (0, 0, 0);
    let mut page_retries_judged = 0;
    for seed in 0..seeds() {
        let ops = cost_ops(seed, OPS, LEN);
        let ended =
            run(config(seed), source.clone(), &ops).unwrap_or_else(|v| panic!("seed {seed}: {v}"));
        let costs = ended.costs().expect("sim::run checks the costs");
        for (name, n) in &costs.met {
            *met.entry(name).or_default() += n;
        }
        for (name, n) in &costs.added {
            *added.entry(name).or_default() += n;
        }
        overlapped += costs.overlapped;
        page_retries_judged += costs.page_retries_judged;
        page_retries += ended.loader.stats().retries_page;
        far_jumps += ended.far_jumps;
    }
    eprintln!(
        "budgets met: {met:?}; added to: {added:?}; opened or added to with reads in flight: \
         {overlapped}; far starts {far_jumps}; failed pages read again {page_retries}, their \
         retries judged {page_retries_judged}"
    );
    // Each property spoke: its budgets closed judged, many of them overlapping others (ranged
    // changes added to open budgets); retries of failed pages were judged.
    for name in ["far_move_cost", "ranged_cost", APPEND_COST] {
        assert!(met.get(name).copied().unwrap_or(0) > 0, "{name}: {met:?}");
    }
    assert!(
        added.get("ranged_cost").copied().unwrap_or(0) > 0,
        "{added:?}"
    );
    assert!(page_retries_judged > 0, "no {PAGE_FAILURE_COST} judged");
    assert!(overlapped > 0 && page_retries > 0 && far_jumps > 0);
}
