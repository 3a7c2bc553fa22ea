//! The mutants of `unifiedMinChurn` fail the checks that show each part of its overtaken-chain
//! rule needed, and `unifiedMinChurn` passes them: each wrong overtaken commit breaks exactly the
//! invariants its mutant names, and without the abandonment for a full read progress under
//! churn fails, but only once the start states are judged with spare request slots. The
//! mutants of `unifiedMinPageRetry` break its page failure, and only `PageFailureQuiet` sees it.

// The mutants are test instruments.
#![cfg(feature = "testing")]

use loader::model::explore::{explore, Options, Report};
use loader::model::progress::{check_progress, ProgressOptions, ProgressReport};
use loader::model::{
    Action, Bounds, Debt, Invariant, Model, Mutant, MutantCheck, Packer, Rules, State,
};
use std::collections::HashSet;

fn bounds(rules: Rules, max_epoch: u8, ids: usize) -> Bounds {
    Bounds {
        max_epoch,
        ids,
        rules,
        model_bounds: false,
    }
}

fn run(rules: Rules) -> Report {
    explore(bounds(rules, 2, 4), Options::default()).unwrap()
}

fn violated(r: &Report) -> Vec<Invariant> {
    Invariant::ALL
        .into_iter()
        .filter(|&inv| !r.holds(inv))
        .collect()
}

fn progress(rules: Rules, max_epoch: u8, spare_ids: usize) -> ProgressReport {
    let options = ProgressOptions {
        spare_ids,
        ..ProgressOptions::default()
    };
    check_progress(bounds(rules, max_epoch, 4), options).unwrap()
}

#[test]
fn each_mutant_fails_exactly_the_checks_it_names() {
    for m in Mutant::ALL {
        let expected: Vec<Invariant> = m
            .fails()
            .iter()
            .filter_map(|c| match c {
                MutantCheck::Invariant(inv) => Some(*inv),
                MutantCheck::Progress | MutantCheck::GoneCursor => None,
            })
            .collect();
        let r = run(m.rules());
        assert!(r.complete);
        assert_eq!(violated(&r), expected, "{m}");
        let p = progress(m.rules(), 3, 4);
        assert_eq!(
            p.holds(),
            !m.fails().contains(&MutantCheck::Progress),
            "{m}: {p:?}"
        );
        let g = gone_cursor(m.rules(), 4);
        assert_eq!(
            g.holds(),
            !m.fails().contains(&MutantCheck::GoneCursor),
            "{m}: {g:?}"
        );
    }
}

fn gone_cursor(rules: Rules, spare_ids: usize) -> ProgressReport {
    let options = ProgressOptions {
        spare_ids,
        gone_cursor: true,
        bound: loader::model::progress::GONE_CURSOR_BOUND,
        ..ProgressOptions::default()
    };
    check_progress(bounds(rules, 2, 4), options).unwrap()
}

/// The escalation is what the gone-cursor check needs: `unifiedMinEscalate` passes it within
/// its bound, with no path cut; without the escalation the same read is retried for ever (a
/// cycle, with the slots to spare or without), and every other check still passes.
#[test]
fn the_escalate_variant_passes_every_check_its_mutant_fails() {
    let r = run(Rules::UnifiedMinEscalate);
    assert!(violated(&r).is_empty());
    let p = progress(Rules::UnifiedMinEscalate, 3, 4);
    assert!(p.holds(), "{p:?}");
    let g = gone_cursor(Rules::UnifiedMinEscalate, 4);
    assert!(g.holds(), "{g:?}");
    assert_eq!(g.worst, Some(loader::model::progress::GONE_CURSOR_BOUND));
    assert_eq!(g.cut, 0, "no path runs out of slots");
    let mutant = Mutant::EscalateNever.rules();
    for spare in [0, 4] {
        let g = gone_cursor(mutant, spare);
        assert_eq!(g.worst, None, "spare {spare}: {g:?}");
    }
    // The counterexample retries the same read again and again.
    let g = gone_cursor(mutant, 4);
    let (_, path) = g.counterexample.as_ref().expect("a counterexample");
    let retries = path
        .iter()
        .filter(|s| matches!(s.action, Some(Action::ExplicitRetry { .. })) && s.state.resumed != 0)
        .count();
    assert!(retries >= 2, "{path:?}");
}

#[test]
fn the_churn_variant_passes_every_check_a_mutant_fails() {
    assert!(violated(&run(Rules::UnifiedMinChurn)).is_empty());
    let p = progress(Rules::UnifiedMinChurn, 3, 4);
    assert!(p.holds(), "{p:?}");
    assert_eq!(p.cut, 0, "no path runs out of slots");
}

#[test]
fn the_page_retry_variant_passes_every_check_a_mutant_fails() {
    let r = run(Rules::UnifiedMinPageRetry);
    assert!(violated(&r).is_empty());
    let p = progress(Rules::UnifiedMinPageRetry, 3, 4);
    assert!(p.holds(), "{p:?}");
    assert_eq!(p.cut, 0, "no path runs out of slots");
}

#[test]
fn the_repair_retry_variant_passes_every_check_a_mutant_fails() {
    let r = run(Rules::UnifiedMinRepairRetry);
    assert!(violated(&r).is_empty());
    let p = progress(Rules::UnifiedMinRepairRetry, 3, 4);
    assert!(p.holds(), "{p:?}");
    assert_eq!(p.cut, 0, "no path runs out of slots");
}

/// The repair retry is reached: some state records a repair failure (the own failure over
/// bounded debt), which no other variant reaches.
#[test]
fn only_the_repair_retry_reaches_a_repair_failure() {
    let repair_failed =
        |s: &State| s.failure == loader::model::Failure::Own && s.debt == Debt::Bounded;
    for rules in [
        Rules::UnifiedMinRepairRetry,
        Rules::UnifiedMinPageRetry,
        Rules::UnifiedMinChurn,
    ] {
        let b = bounds(rules, 2, 4);
        let p = Packer::new(&b).unwrap();
        let reached = reachable(b)
            .into_iter()
            .any(|w| p.unpack(w).is_some_and(|s| repair_failed(&s)));
        assert_eq!(reached, rules == Rules::UnifiedMinRepairRetry, "{rules}");
    }
}

#[test]
fn mutant_names_say_mutant_and_are_no_real_variant() {
    for m in Mutant::ALL {
        let prefix = match m.base() {
            Rules::UnifiedMinPageRetry => "mutantPage",
            Rules::UnifiedMinRepairRetry => "mutantRepair",
            Rules::UnifiedMinEscalate => "mutantEscalate",
            _ => "mutantChurn",
        };
        assert!(m.name().starts_with(prefix), "{m}");
        assert_eq!(Rules::parse(m.name()), Some(m.rules()));
        assert!(!Rules::ALL.contains(&m.rules()), "{m}");
        assert!(!m.rules().is_seed(), "{m}");
        assert!(
            !m.fails().is_empty(),
            "{m}: a mutant no check fails shows nothing"
        );
    }
}

#[test]
fn without_the_abandonment_the_ids_bound_hides_the_progress_failure() {
    let mutant = Mutant::NoAbandon.rules();
    // With no spare slots, the paths that would show it are cut, and the mutant looks right.
    let hidden = progress(mutant, 3, 0);
    assert!(hidden.holds(), "{hidden:?}");
    assert_eq!(hidden.worst, Some(3));
    assert!(hidden.cut > 0);
    // With four spare slots no path is cut, and its worst case grows with the churn, where
    // unifiedMinChurn's stays at 3.
    for (max_epoch, worst) in [(3, 4), (4, 5)] {
        let shown = progress(mutant, max_epoch, 4);
        assert!(!shown.holds(), "MaxEpoch {max_epoch}");
        assert_eq!(shown.worst, Some(worst), "MaxEpoch {max_epoch}");
        assert_eq!(shown.cut, 0, "MaxEpoch {max_epoch}");
        let churn = progress(Rules::UnifiedMinChurn, max_epoch, 4);
        assert_eq!(churn.worst, Some(3), "MaxEpoch {max_epoch}");
        assert_eq!(churn.cut, 0, "MaxEpoch {max_epoch}");
    }
    // The counterexample: a chain overtaken with full debt is replaced, not abandoned.
    let shown = progress(mutant, 3, 4);
    let (prefix, path) = shown.counterexample.as_ref().expect("a counterexample");
    let mut before = prefix.last().expect("Init").state;
    let mut replaced_owing_full = 0;
    for step in path {
        if let Some(Action::SettleChain { k: Some(k), .. }) = step.action {
            let chain = step.state.req[k as usize].kind == loader::model::Kind::Chain;
            if chain && before.debt == Debt::Full {
                replaced_owing_full += 1;
            }
        }
        before = step.state;
    }
    assert!(replaced_owing_full >= 1, "{path:?}");
}

#[test]
fn a_step_invariant_s_trace_ends_with_the_step_that_breaks_it() {
    let r = run(Mutant::StampEpoch.rules());
    let trace = r.verdict(Invariant::CommitStamped).trace.as_ref().unwrap();
    let [.., before, last] = trace.as_slice() else {
        panic!("a step needs two states: {trace:?}")
    };
    assert!(matches!(
        last.action,
        Some(Action::SettleChain { k: Some(_), .. })
    ));
    let m = Model::new(r.bounds);
    assert!(!Invariant::CommitStamped.holds_step(&m, &before.state, &last.state));
    // The overtaken chain was stamped chainEpoch, the mutant stamps epoch.
    assert_eq!(last.state.cover_epoch, before.state.epoch);
    assert_ne!(last.state.cover_epoch, before.state.chain_epoch);
}

/// Every state reachable under `b`, packed.
fn reachable(b: Bounds) -> HashSet<u64> {
    let m = Model::new(b);
    let p = Packer::new(&b).unwrap();
    let mut seen = HashSet::from([p.pack(&m.init())]);
    let mut todo: Vec<State> = vec![m.init()];
    while let Some(s) = todo.pop() {
        m.next(&s, |_, t| {
            if seen.insert(p.pack(&t)) {
                todo.push(t);
            }
        });
    }
    seen
}

#[test]
fn no_state_invariant_can_see_a_commit_over_full_debt() {
    // Every state the mutant reaches, unifiedMinChurn reaches too: its full debt comes from a
    // superseded read's failure, which may as well come just after a right commit. So the
    // invariant that catches it judges steps.
    for max_epoch in [2, 3] {
        let churn = reachable(bounds(Rules::UnifiedMinChurn, max_epoch, 4));
        let mutant = reachable(bounds(Mutant::CommitFullDebt.rules(), max_epoch, 4));
        assert!(mutant.is_subset(&churn), "MaxEpoch {max_epoch}");
    }
    assert!(Invariant::ChainCommitBoundedDebt.is_step());
}
