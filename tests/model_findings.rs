//! The model's findings, derived from the explorer: the seed's bug under `current`, the
//! refactor that removes it, the controls each breaking what they were built to break, the
//! lost invalidation that every seed variant has and `unifiedMinRecheck` does not, the
//! invariants of the commit that every real variant keeps but two controls, and the progress
//! under churn that only `unifiedMinChurn` has.

#![cfg(feature = "testing")]

use loader::model::explore::{explore, Options, Report};
use loader::model::progress::{check_progress, ProgressOptions, ProgressReport, DEFAULT_BOUND};
use loader::model::{Action, Bounds, Invariant, Rules};

const MODULE_INVARIANTS: [Invariant; 4] = [
    Invariant::TypeOK,
    Invariant::ChainHeld,
    Invariant::NoLeak,
    Invariant::NoStrandedStaleFailure,
];

fn run(rules: Rules, model_bounds: bool) -> Report {
    explore(
        Bounds {
            max_epoch: 2,
            ids: 4,
            rules,
            model_bounds,
        },
        Options::default(),
    )
    .unwrap()
}

fn trace_names(r: &Report, inv: Invariant) -> Vec<&'static str> {
    r.verdict(inv)
        .trace
        .as_ref()
        .expect("violated")
        .iter()
        .filter_map(|s| s.action.map(|a| a.name()))
        .collect()
}

#[test]
fn current_strands_a_superseded_failure_after_its_repair() {
    let r = run(Rules::Current, true);
    assert!(r.complete);
    assert!(!r.holds(Invariant::NoStrandedStaleFailure));
    let names = trace_names(&r, Invariant::NoStrandedStaleFailure);
    // The finding as the module states it: a repair finishes, then the superseded read fails.
    let chain_done = names.iter().position(|&n| n == "SettleChain").unwrap();
    assert_eq!(names.last(), Some(&"Fail"));
    assert!(chain_done < names.len() - 1);
    let last = r
        .verdict(Invariant::NoStrandedStaleFailure)
        .trace
        .as_ref()
        .unwrap();
    let end = &last.last().unwrap().state;
    assert!(end
        .req
        .iter()
        .any(|q| q.sup && q.st == loader::model::St::Failed));
}

#[test]
fn the_refactored_rules_keep_the_module_invariants() {
    for rules in [Rules::Unified, Rules::UnifiedMin] {
        for model_bounds in [true, false] {
            let r = run(rules, model_bounds);
            for inv in MODULE_INVARIANTS {
                assert!(
                    r.holds(inv),
                    "{rules} breaks {inv} (model bounds {model_bounds})"
                );
            }
        }
    }
}

#[test]
fn each_control_breaks_what_it_was_made_to_break() {
    let cases = [
        (Rules::OldRetire, Invariant::ChainHeld),
        (Rules::OldRetire, Invariant::CoverageHeld),
        (Rules::OldLeak, Invariant::NoLeak),
        (Rules::OldRecover, Invariant::NoStrandedStaleFailure),
        (Rules::UnifiedMinNoNorm, Invariant::NoLeak),
        (Rules::UnifiedMinNoNorm, Invariant::CommitReleases),
    ];
    for (rules, inv) in cases {
        let r = run(rules, true);
        assert!(!r.holds(inv), "{rules} should break {inv}");
        assert!(r.holds(Invariant::TypeOK));
    }
}

#[test]
fn every_seed_variant_loses_an_invalidation_during_a_full_read() {
    for rules in Rules::ALL.into_iter().filter(|r| r.is_seed()) {
        let r = run(rules, true);
        assert!(!r.holds(Invariant::NoLostInvalidation), "{rules}");
        assert_eq!(
            trace_names(&r, Invariant::NoLostInvalidation),
            ["Invalidate", "StartFull", "Invalidate", "SettleFull"],
            "{rules}: the shortest loss is the one docs/DESIGN.md describes"
        );
    }
}

#[test]
fn every_real_variant_keeps_the_commit_invariants_but_two_controls() {
    // They are guarded by no phase, so they judge the overtaken commit (in "repair") too. The
    // two controls break them where they were made to break: oldRetire releases the repair's
    // chain (ChainHeld), unifiedMinNoNorm drops Normalize (NoLeak).
    let commit = [
        Invariant::CoverageHeld,
        Invariant::CommitStamped,
        Invariant::CommitReleases,
        Invariant::ChainCommitBoundedDebt,
    ];
    for rules in Rules::ALL {
        for model_bounds in [true, false] {
            let r = run(rules, model_bounds);
            let broken: Vec<Invariant> = commit.into_iter().filter(|&i| !r.holds(i)).collect();
            let expected: &[Invariant] = match rules {
                Rules::OldRetire => &[Invariant::CoverageHeld],
                Rules::UnifiedMinNoNorm => &[Invariant::CommitReleases],
                _ => &[],
            };
            assert_eq!(broken, expected, "{rules} (model bounds {model_bounds})");
        }
    }
}

#[test]
fn the_recheck_variant_keeps_every_invariant() {
    for model_bounds in [true, false] {
        let r = run(Rules::UnifiedMinRecheck, model_bounds);
        assert!(r.complete);
        for inv in Invariant::ALL {
            assert!(r.holds(inv), "{inv} (model bounds {model_bounds})");
        }
    }
}

#[test]
fn the_churn_variant_keeps_every_invariant() {
    for model_bounds in [true, false] {
        let r = run(Rules::UnifiedMinChurn, model_bounds);
        assert!(r.complete);
        for inv in Invariant::ALL {
            assert!(r.holds(inv), "{inv} (model bounds {model_bounds})");
        }
    }
}

fn progress(rules: Rules, max_epoch: u8) -> ProgressReport {
    let bounds = Bounds {
        max_epoch,
        ids: 4,
        rules,
        model_bounds: false,
    };
    check_progress(bounds, ProgressOptions::default()).unwrap()
}

#[test]
fn under_churn_only_the_churn_variant_commits_within_the_bound() {
    // The churn variant's worst case does not grow with the number of invalidations.
    for max_epoch in [2, 3] {
        let r = progress(Rules::UnifiedMinChurn, max_epoch);
        assert!(r.holds(), "{r:?}");
        assert_eq!(r.worst, Some(DEFAULT_BOUND), "MaxEpoch {max_epoch}");
        assert!(r.starts > 1000 && r.cut > 0, "{r:?}");
    }
    for rules in [Rules::Current, Rules::UnifiedMin, Rules::UnifiedMinRecheck] {
        let r = progress(rules, 3);
        assert!(!r.holds(), "{rules}");
        let (_, path) = r.counterexample.as_ref().expect("a counterexample");
        // The trace: every answer of the repair is overtaken and replaced.
        let replaced = path
            .iter()
            .filter(|s| matches!(s.action, Some(Action::SettleChain { k: Some(_), .. })))
            .count();
        assert!(replaced >= 2, "{rules}: {path:?}");
        let system = path
            .iter()
            .filter(|s| s.action != Some(Action::Invalidate))
            .count();
        assert_eq!(system as u32, DEFAULT_BOUND + 1, "{rules}");
    }
    // Their worst case grows with the churn.
    for rules in [Rules::Current, Rules::UnifiedMin] {
        assert!(
            progress(rules, 3).worst > progress(rules, 2).worst,
            "{rules}"
        );
    }
}

#[test]
fn stop_at_first_stops_early_with_a_shortest_trace() {
    let full = run(Rules::Current, true);
    let first = explore(
        full.bounds,
        Options {
            stop_at_first: true,
            progress: false,
        },
    )
    .unwrap();
    assert!(!first.complete);
    assert!(first.distinct_states < full.distinct_states);
    let violated: Vec<_> = first.verdicts.iter().filter(|v| !v.holds()).collect();
    assert!(!violated.is_empty());
    // Breadth-first: no invariant has a shorter counterexample in the complete run.
    let shortest = full
        .verdicts
        .iter()
        .filter_map(|v| v.trace.as_ref().map(|t| t.len()))
        .min()
        .unwrap();
    assert_eq!(violated[0].trace.as_ref().unwrap().len(), shortest);
}

#[test]
fn dropping_the_model_bounds_only_adds_states() {
    for rules in [Rules::UnifiedMin, Rules::UnifiedMinRecheck] {
        let kept = run(rules, true);
        let dropped = run(rules, false);
        assert!(dropped.distinct_states > kept.distinct_states);
    }
}
