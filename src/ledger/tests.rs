//! The ledger's rules on hand-written event sequences: the module's scenarios, refusals, counter
//! exhaustion and the release of every settled request.

use super::*;

fn starts(out: &[Effect]) -> Vec<(u64, Kind)> {
    out.iter()
        .filter_map(|e| match *e {
            Effect::Start { id, kind, .. } => Some((id, kind)),
            _ => None,
        })
        .collect()
}

fn releases(out: &[Effect]) -> Vec<u64> {
    out.iter()
        .filter_map(|e| match *e {
            Effect::Release { id } => Some(id),
            _ => None,
        })
        .collect()
}

/// A ledger with one settled page at epoch 0.
fn one_page() -> (Ledger, Vec<Effect>) {
    let mut l = Ledger::default();
    let mut out = Vec::new();
    let id = l.issue_finite(&mut out).unwrap().unwrap();
    assert_eq!(l.settle(id, &mut out).unwrap(), Settled::FiniteCurrent);
    (l, out)
}

#[test]
fn seed_scenario_superseded_failure_after_its_repair_blocks_nothing() {
    // The module's trace for `current`: IssueFinite, SettleFinite, IssueFinite, Invalidate,
    // StartRepair, SettleChain, Invalidate, Fail of the superseded finite read.
    let (mut l, mut out) = one_page();
    let late = l.issue_finite(&mut out).unwrap().unwrap();
    out.clear();
    l.invalidate(&mut out).unwrap();
    assert_eq!(l.phase(), Phase::Repair);
    assert!(out.contains(&Effect::Superseded { id: late }));
    let (chain, kind) = starts(&out)[0];
    assert_eq!(kind, Kind::Chain);
    assert_eq!(l.settle(chain, &mut out).unwrap(), Settled::ChainCommitted);
    l.invalidate(&mut out).unwrap();
    let (chain2, _) = *starts(&out).last().unwrap();
    assert_eq!(l.fail(late, &mut out).unwrap(), Failed::Superseded);
    assert_eq!(
        l.failure(),
        Failure::None,
        "a superseded failure records nothing"
    );
    // It raised the debt, so the repair becomes a full read, and ordinary loading recovers.
    out.clear();
    assert!(matches!(
        l.settle(chain2, &mut out).unwrap(),
        Settled::ChainAbandoned { .. }
    ));
    let (full, kind) = starts(&out)[0];
    assert_eq!(kind, Kind::Full);
    assert_eq!(
        l.settle(full, &mut out).unwrap(),
        Settled::FullCommitted { recheck: false }
    );
    assert!(l.is_quiescent());
    assert!(
        l.issue_finite(&mut out).unwrap().is_some(),
        "refills continue"
    );
}

#[test]
fn lost_invalidation_is_repaired_with_the_fix_and_lost_without() {
    for recheck_full in [true, false] {
        let mut l = Ledger::new(Config {
            recheck_full,
            commit_overtaken: true,
        });
        let mut out = Vec::new();
        l.invalidate(&mut out).unwrap();
        let (full, kind) = starts(&out)[0];
        assert_eq!(kind, Kind::Full);
        l.invalidate(&mut out).unwrap();
        out.clear();
        let settled = l.settle(full, &mut out).unwrap();
        assert_eq!(
            settled,
            Settled::FullCommitted {
                recheck: recheck_full
            }
        );
        if recheck_full {
            assert_eq!(starts(&out), vec![(full + 1, Kind::Chain)]);
            assert_eq!(
                l.settle(full + 1, &mut out).unwrap(),
                Settled::ChainCommitted
            );
            assert_eq!(l.cover_epoch(), l.epoch());
            assert_eq!(releases(&out), vec![full]);
        } else {
            assert!(l.is_quiescent());
            assert!(
                l.cover_epoch() < l.epoch(),
                "the module's unifiedMin loses it"
            );
        }
    }
}

#[test]
fn own_failure_waits_for_retry_which_releases_the_failed_request() {
    let mut l = Ledger::default();
    let mut out = Vec::new();
    l.invalidate(&mut out).unwrap();
    let (full, _) = starts(&out)[0];
    assert_eq!(l.fail(full, &mut out).unwrap(), Failed::Own);
    out.clear();
    l.invalidate(&mut out).unwrap();
    assert!(out.is_empty(), "an own failure blocks scheduling");
    assert_eq!(l.issue_finite(&mut out).unwrap(), None);
    let retried = l.explicit_retry(&mut out).unwrap().unwrap();
    assert_eq!(releases(&out), vec![full]);
    assert_eq!(l.failure(), Failure::None);
    assert_eq!(
        l.explicit_retry(&mut out).unwrap(),
        None,
        "nothing left to retry"
    );
    l.settle(retried, &mut out).unwrap();
    assert!(l.is_quiescent());
}

/// The repair retry (`unifiedMinRepairRetry`): the running repair's own failure with nothing
/// else owed keeps the debt bounded and its retry is a chain again; an invalidation since, a
/// retry by a window move, a stalled repair or the rules off go through the lattice.
#[test]
fn a_repair_failure_is_retried_by_the_repair_unless_something_changed() {
    // A repair failure, retried: a chain at the same epoch, the failed one released.
    let (mut l, mut out) = one_page();
    l.invalidate(&mut out).unwrap();
    let (chain, kind) = *starts(&out).last().unwrap();
    assert_eq!(kind, Kind::Chain);
    assert_eq!(l.fail(chain, &mut out).unwrap(), Failed::Own);
    assert!(l.repair_failed());
    assert_eq!((l.failure(), l.debt()), (Failure::Own, Debt::Bounded));
    assert_eq!(l.phase(), Phase::Idle);
    assert_eq!(l.issue_finite(&mut out).unwrap(), None, "it waits");
    out.clear();
    let again = l.explicit_retry(&mut out).unwrap().unwrap();
    assert_eq!(releases(&out), vec![chain]);
    assert_eq!(starts(&out), vec![(again, Kind::Chain)]);
    assert_eq!(l.phase(), Phase::Repair);
    assert_eq!(l.settle(again, &mut out).unwrap(), Settled::ChainCommitted);
    assert!(l.is_quiescent());

    // An invalidation since: the debt rises to full, and the retry is a full read.
    let (mut l, mut out) = one_page();
    l.invalidate(&mut out).unwrap();
    let (chain, _) = *starts(&out).last().unwrap();
    l.fail(chain, &mut out).unwrap();
    out.clear();
    l.invalidate(&mut out).unwrap();
    assert!(out.is_empty(), "a failure blocks scheduling");
    assert!(!l.repair_failed());
    assert_eq!((l.failure(), l.debt()), (Failure::Own, Debt::Full));
    l.explicit_retry(&mut out).unwrap().unwrap();
    assert_eq!(starts(&out)[0].1, Kind::Full);

    // A retry by a window move, and a stalled repair: full reads.
    for stalled in [false, true] {
        let (mut l, mut out) = one_page();
        l.invalidate(&mut out).unwrap();
        let (chain, _) = *starts(&out).last().unwrap();
        if stalled {
            l.fail_stalled(chain, &mut out).unwrap();
            assert_eq!(l.debt(), Debt::Full);
            out.clear();
            l.explicit_retry(&mut out).unwrap().unwrap();
        } else {
            l.fail(chain, &mut out).unwrap();
            out.clear();
            l.explicit_retry_moved(&mut out).unwrap().unwrap();
        }
        assert_eq!(starts(&out)[0].1, Kind::Full, "stalled {stalled}");
        assert_eq!(l.debt(), Debt::Full);
    }

    // With commit_overtaken off (unifiedMinRecheck) there is no repair failure.
    let mut l = Ledger::new(Config {
        recheck_full: true,
        commit_overtaken: false,
    });
    let mut out = Vec::new();
    let id = l.issue_finite(&mut out).unwrap().unwrap();
    l.settle(id, &mut out).unwrap();
    l.invalidate(&mut out).unwrap();
    let (chain, _) = *starts(&out).last().unwrap();
    l.fail(chain, &mut out).unwrap();
    assert_eq!((l.failure(), l.debt()), (Failure::Own, Debt::Full));
}

#[test]
fn refused_answers_change_nothing() {
    let (mut l, _) = one_page();
    let mut out = Vec::new();
    let before = (l.snapshot(), l.requests());
    assert_eq!(l.settle(0, &mut out), Err(LedgerError::NotIssued(0)));
    assert_eq!(l.fail(99, &mut out), Err(LedgerError::NotIssued(99)));
    assert_eq!(l.settle(1, &mut out), Err(LedgerError::AlreadyAnswered(1)));
    assert_eq!(l.fail(1, &mut out), Err(LedgerError::AlreadyAnswered(1)));
    assert_eq!((l.snapshot(), l.requests()), before);
    // Invalidate, repair: request 1 is released; answering it again is `Retired`.
    l.invalidate(&mut out).unwrap();
    let (chain, _) = starts(&out)[0];
    l.settle(chain, &mut out).unwrap();
    assert_eq!(releases(&out), vec![1]);
    out.clear();
    let before = (l.snapshot(), l.requests());
    assert_eq!(l.settle(1, &mut out), Err(LedgerError::Retired(1)));
    assert_eq!(l.fail(1, &mut out), Err(LedgerError::Retired(1)));
    assert!(out.is_empty());
    assert_eq!((l.snapshot(), l.requests()), before);
}

#[test]
fn counters_near_their_end_are_refused_not_wrapped() {
    let mut l = Ledger::with_counters(Config::default(), u64::MAX, 1);
    let mut out = Vec::new();
    let before = l.snapshot();
    assert_eq!(l.invalidate(&mut out), Err(LedgerError::EpochOverflow));
    assert_eq!(l.snapshot(), before);

    let mut l = Ledger::with_counters(Config::default(), 0, u64::MAX - 1);
    let last = l.issue_finite(&mut out).unwrap().unwrap();
    assert_eq!(last, u64::MAX - 1);
    let before = (l.snapshot(), l.requests());
    assert_eq!(l.invalidate(&mut out), Err(LedgerError::IdOverflow));
    assert_eq!(l.settle(last, &mut out), Err(LedgerError::IdOverflow));
    assert_eq!((l.snapshot(), l.requests()), before);
}

#[test]
fn every_settled_request_is_released_exactly_once() {
    let mut l = Ledger::default();
    let mut out = Vec::new();
    let mut started = Vec::new();
    for round in 0..50u64 {
        if let Some(id) = l.issue_finite(&mut out).unwrap() {
            l.settle(id, &mut out).unwrap();
        }
        if round % 3 == 0 {
            l.invalidate(&mut out).unwrap();
        }
        while let Some(&(id, _)) = l.requests().iter().find(|(_, r)| r.st == St::Inflight) {
            l.settle(id, &mut out).unwrap();
        }
    }
    started.extend(starts(&out).into_iter().map(|(id, _)| id));
    let mut released = releases(&out);
    released.sort_unstable();
    let before = released.len();
    released.dedup();
    assert_eq!(before, released.len(), "no request is released twice");
    let live: Vec<u64> = l.requests().into_iter().map(|(id, _)| id).collect();
    for id in started {
        assert!(
            released.binary_search(&id).is_ok() != live.contains(&id),
            "request {id} is either live or released, not both or neither"
        );
    }
}

/// The escalation (`unifiedMinEscalate`): the read a page or repair failure's retry started
/// again (`resumed`) fails through the lattice even when the caller says `fail`, so a cursor
/// gone for good is read again once; a resumed chain whose resumed read was answered
/// (`resume_answered`) is a repair failure again when it fails later.
#[test]
fn a_read_started_again_that_fails_again_goes_through_the_lattice() {
    // A page failure, read again, failing again: own failure, full debt, a full read.
    let (mut l, mut out) = one_page();
    let page = l.issue_finite(&mut out).unwrap().unwrap();
    l.fail(page, &mut out).unwrap();
    assert_eq!(l.failure(), Failure::Page);
    let again = l.explicit_retry(&mut out).unwrap().unwrap();
    assert_eq!(l.resumed(), Some(again));
    assert_eq!(l.fail(again, &mut out).unwrap(), Failed::Own);
    assert_eq!(l.resumed(), None);
    assert_eq!((l.failure(), l.debt()), (Failure::Own, Debt::Full));
    out.clear();
    let full = l.explicit_retry(&mut out).unwrap().unwrap();
    assert_eq!(starts(&out), vec![(full, Kind::Full)]);

    // A repair failure, resumed, failing again at the resumed read: through the lattice.
    let (mut l, mut out) = one_page();
    l.invalidate(&mut out).unwrap();
    let (chain, _) = *starts(&out).last().unwrap();
    l.fail(chain, &mut out).unwrap();
    assert!(l.repair_failed());
    let again = l.explicit_retry(&mut out).unwrap().unwrap();
    assert_eq!(l.resumed(), Some(again));
    l.fail(again, &mut out).unwrap();
    assert!(!l.repair_failed());
    assert_eq!((l.failure(), l.debt()), (Failure::Own, Debt::Full));

    // The resumed read answered, a later read of the repair failing: a repair failure again.
    let (mut l, mut out) = one_page();
    l.invalidate(&mut out).unwrap();
    let (chain, _) = *starts(&out).last().unwrap();
    l.fail(chain, &mut out).unwrap();
    let again = l.explicit_retry(&mut out).unwrap().unwrap();
    assert!(!l.resume_answered(chain), "not the resumed request");
    assert!(l.resume_answered(again));
    assert_eq!(l.resumed(), None);
    l.fail(again, &mut out).unwrap();
    assert!(l.repair_failed());

    // A success clears it.
    let (mut l, mut out) = one_page();
    let page = l.issue_finite(&mut out).unwrap().unwrap();
    l.fail(page, &mut out).unwrap();
    let again = l.explicit_retry(&mut out).unwrap().unwrap();
    l.settle(again, &mut out).unwrap();
    assert_eq!(l.resumed(), None);
    assert!(l.is_quiescent());
}
