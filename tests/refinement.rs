//! The production ledger refines the model: for every setting of the lost-invalidation fix
//! and the churn rule,
//! every host-event sequence within the bounds is a path of model transitions that keeps every
//! invariant and can always reach quiescence.

// Uses the test instruments (`sim`, `refinement`, `loader-check`).
#![cfg(feature = "testing")]

use loader::refinement::{check, RefineBounds};

fn refines(max_epoch: u8, ids: usize, recheck_full: bool, commit_overtaken: bool) {
    let report = check(RefineBounds {
        max_epoch,
        ids,
        recheck_full,
        commit_overtaken,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // The exploration really branched: every answer, refusal and bound was exercised.
    assert!(report.states > 100, "{report:?}");
    assert!(report.refused > report.states, "{report:?}");
    assert!(report.pruned > 0, "the id bound was reached: {report:?}");
}

#[test]
fn ledger_with_both_fixes_refines_unified_min_repair_retry() {
    refines(2, 4, true, true);
    refines(3, 5, true, true);
}

#[test]
fn ledger_with_the_fix_refines_unified_min_recheck() {
    refines(2, 4, true, false);
    refines(3, 5, true, false);
}

#[test]
fn ledger_without_the_fix_refines_unified_min() {
    for commit_overtaken in [true, false] {
        refines(2, 4, false, commit_overtaken);
        refines(3, 5, false, commit_overtaken);
    }
}
