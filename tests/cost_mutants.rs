//! Each cost property of the seeded simulation can fail: with a fix undone or a cost broken
//! (`loader::mutant`), seeded runs on a source of 10^5 items break the property named, and the
//! loader as it is passes the same runs. One test, since the active mutant is the whole
//! process's.
#![cfg(feature = "testing")]

use loader::loader::mutant::{self, Mutant};
use loader::sim::{cost_ops, run, Op, Source, APPEND_COST, PAGE_FAILURE_COST};

#[path = "common/cost_runs.rs"]
mod cost_runs;

use cost_runs::{config, LEN, OPS};

/// Seed `seed`'s ops, without the moves with `locate` when `jumps_only`: the far-start
/// property (`far_start_reads_at_its_cursor`, a safety check) sees a far move with `locate`
/// that keeps its old repair at once, so the cost is shown on jumps, which start over the
/// same way and which that check does not cover.
fn ops(seed: u64, jumps_only: bool) -> Vec<Op> {
    cost_ops(seed, OPS, LEN)
        .into_iter()
        .filter(|op| !(jumps_only && matches!(op, Op::WindowLocated { .. })))
        .collect()
}

/// The first seed (of `seeds`) whose run breaks a property, and the violation.
fn first_violation(seeds: u64, jumps_only: bool) -> Option<(u64, u32, String)> {
    let source = Source::numbered(LEN as usize);
    (0..seeds).find_map(|seed| {
        run(config(seed), source.clone(), &ops(seed, jumps_only))
            .err()
            .map(|v| (seed, config(seed).max_pages, v))
    })
}

#[test]
fn each_cost_property_fails_with_the_fix_it_keeps_undone() {
    let cases = [
        // The far-move defect (issue 35): a far start keeps the repair in flight, which walks.
        (Mutant::FarStartKeepsRepair, "far_move_cost", true),
        (Mutant::RangedAsWhole, "ranged_cost", false),
        (Mutant::AppendedInvalidates, APPEND_COST, false),
        (Mutant::PageRetryFull, PAGE_FAILURE_COST, false),
    ];
    let mut found = Vec::new();
    for (m, property, jumps_only) in cases {
        mutant::set(Some(m));
        let v = first_violation(40, jumps_only);
        mutant::set(None);
        let (seed, max_pages, v) = v.unwrap_or_else(|| panic!("{}: no violation", m.name()));
        eprintln!("{}: seed {seed}, max_pages {max_pages}: {v}", m.name());
        // The property named is the one broken (not one that only added to its budget).
        assert!(v.contains(&format!(": {property}: ")), "{}: {v}", m.name());
        found.push((m, seed, jumps_only));
    }
    // And the loader as it is passes the same seeds.
    for (m, seed, jumps_only) in found {
        run(
            config(seed),
            Source::numbered(LEN as usize),
            &ops(seed, jumps_only),
        )
        .unwrap_or_else(|v| panic!("{} seed {seed} without the mutant: {v}", m.name()));
    }
}
