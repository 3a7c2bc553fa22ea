//! The production ledger refines the model: for both settings of the lost-invalidation fix,
//! every host-event sequence within the bounds is a path of model transitions that keeps every
//! invariant and can always reach quiescence.

// Uses the test instruments (`sim`, `refinement`, `loader-check`).
#![cfg(feature = "testing")]

use loader::refinement::{check, RefineBounds};

fn refines(max_epoch: u8, ids: usize, recheck_full: bool) {
    let report = check(RefineBounds {
        max_epoch,
        ids,
        recheck_full,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // The exploration really branched: every answer, refusal and bound was exercised.
    assert!(report.states > 100, "{report:?}");
    assert!(report.refused > report.states, "{report:?}");
    assert!(report.pruned > 0, "the id bound was reached: {report:?}");
}

#[test]
fn ledger_with_the_fix_refines_unified_min_recheck() {
    refines(2, 4, true);
    refines(3, 5, true);
}

#[test]
fn ledger_without_the_fix_refines_unified_min() {
    refines(2, 4, false);
    refines(3, 5, false);
}
