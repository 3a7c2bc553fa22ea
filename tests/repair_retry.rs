//! The repair retry (`unifiedMinRepairRetry`): a repair's read that fails while nothing else is
//! owed is retried as that repair, resumed at the failed read with the pages its earlier reads
//! staged, not by a full read of the window; an invalidation since the failure, a window move
//! or the resumed read failing again retries through the debt lattice (a full read), as the
//! model says.

mod common;

use common::{config, FilteredHost};
use loader::ledger::{Debt, Failure};
use loader::Kind;

/// 2,000 rows, pages of 50, prefetch 50, the window [0, 200) loaded: the view holds [0, 250),
/// five pages. Then a change reported in rows 60..190: a ranged repair re-reads the three
/// pages that may hold it, from row 50 until row 200 (the first page kept after them).
fn repairing() -> FilteredHost {
    let mut h = FilteredHost::new(2_000, 0..0, config(50));
    h.set_window(0, 200);
    h.drain(20);
    h.check();
    assert_eq!(h.loader.covered(), (0, 250));
    h.issued.clear();
    h.invalidate_range(60, 190);
    assert_eq!(
        h.issued,
        [(Kind::Chain, 50)],
        "the ranged repair's first read"
    );
    h
}

/// Answers the ranged repair's first read (rows 50..100), then fails its second (100..150).
fn fail_the_second_read(h: &mut FilteredHost) {
    h.answer_one();
    assert_eq!(h.reads.len(), 1);
    assert_eq!(
        (h.reads[0].kind, common::at(&h.reads[0].cursor)),
        (Kind::Chain, 100)
    );
    h.fail_one();
    assert!(h.reads.is_empty(), "it waits for the retry");
}

fn retry(h: &mut FilteredHost) {
    assert!(h.loader.retry().unwrap());
    h.collect();
}

/// The view is the source's again, current, and holds what it held.
fn settled(h: &mut FilteredHost) {
    h.drain(20);
    h.check();
    assert!(!h.loader.revalidating());
    assert_eq!(h.loader.covered(), (0, 250));
    let l = h.loader.ledger();
    assert!(l.is_quiescent() && l.failure() == Failure::None);
}

/// The count the issue asks for: a ranged repair of three pages whose second read fails costs
/// that page again and the page after it (4 reads in all, 200 items), not a full read of the
/// window from the anchor after the two reads made (2 + 5 reads, 300 items, before this rule).
#[test]
fn a_failed_repair_read_is_read_again_not_the_whole_window() {
    let mut h = repairing();
    let items = h.loader.stats().items_read;
    fail_the_second_read(&mut h);
    let l = h.loader.ledger();
    assert_eq!((l.failure(), l.debt()), (Failure::Own, Debt::Bounded));
    assert!(l.repair_failed());
    let why = h.loader.explain();
    assert!(
        why.contains(
            "a repair failure awaits its retry, which resumes the repair at its failed read"
        ) && !why.contains("an invalidation is owed"),
        "{why}"
    );
    retry(&mut h);
    assert_eq!(
        h.issued.last(),
        Some(&(Kind::Chain, 100)),
        "the retry resumes the repair at its failed read"
    );
    settled(&mut h);
    let reads = h.issued.clone();
    let items = h.loader.stats().items_read - items;
    eprintln!("a ranged repair whose second read failed: {reads:?}, {items} items");
    assert_eq!(
        reads,
        [
            (Kind::Chain, 50),
            (Kind::Chain, 100),
            (Kind::Chain, 100),
            (Kind::Chain, 150)
        ]
    );
    assert_eq!(
        items, 150,
        "rows 50..200 once, the failed read read nothing"
    );
    let st = h.loader.stats();
    assert_eq!((st.resumed, st.ranged_repairs), (1, 1));
    assert_eq!(st.issued[2], 0, "no full read");
}

/// A whole repair (an invalidation of everything) whose third read fails resumes there too,
/// now as the repair again (a chain), not as a full read.
#[test]
fn a_failed_whole_repair_resumes_as_the_repair() {
    let mut h = FilteredHost::new(2_000, 0..0, config(50));
    h.set_window(0, 200);
    h.drain(20);
    h.issued.clear();
    h.loader.invalidate().unwrap();
    h.collect();
    h.answer_one();
    h.answer_one();
    h.fail_one();
    assert!(h.loader.ledger().repair_failed());
    retry(&mut h);
    settled(&mut h);
    let kinds: Vec<Kind> = h.issued.iter().map(|r| r.0).collect();
    let at: Vec<u64> = h.issued.iter().map(|r| r.1).collect();
    assert_eq!(kinds, [Kind::Chain; 6]);
    assert_eq!(at, [0, 50, 100, 100, 150, 200]);
    assert_eq!(h.loader.stats().resumed, 1);
}

/// Anything that may have changed what the repair read, or what the window needs, since its
/// failure retries with a full read from the anchor, the ranged repair's pages let go: an
/// invalidation, a window move, and the resumed read failing again (its cursor may be gone
/// for good; the full read reads fresh cursors).
#[test]
fn a_repair_failure_falls_back_to_a_full_read_when_anything_changed() {
    for case in ["invalidation", "window move", "failed again"] {
        let mut h = repairing();
        fail_the_second_read(&mut h);
        match case {
            "invalidation" => {
                h.invalidate_range(10, 20);
                assert_eq!(h.loader.ledger().debt(), Debt::Full, "{case}");
                assert!(!h.loader.ledger().repair_failed(), "{case}");
                retry(&mut h);
            }
            "window move" => {
                h.set_window(10, 200);
                h.set_window(0, 200);
            }
            _ => {
                retry(&mut h);
                assert_eq!(h.issued.last(), Some(&(Kind::Chain, 100)));
                h.fail_one();
                assert!(!h.loader.ledger().repair_failed(), "{case}");
                retry(&mut h);
            }
        }
        let full = h
            .issued
            .iter()
            .position(|r| r.0 == Kind::Full)
            .unwrap_or_else(|| panic!("{case}: no full read in {:?}", h.issued));
        assert_eq!(h.issued[full].1, 0, "{case}: from the anchor");
        settled(&mut h);
        assert_eq!(h.loader.stats().resumed, u64::from(case == "failed again"));
    }
}

/// A resumed repair whose resumed read succeeded is past the cursor that failed: a later read
/// of it failing is a repair failure again, resumed where that read failed, not a full read.
/// The loader tells the ledger that the resumed read was answered (`resume_answered`, the
/// model's `ResumeAnswered`); without it the ledger, which escalates the failure of the read
/// a retry started again (`unifiedMinEscalate`), would retry with a full read.
#[test]
fn a_resumed_repair_past_its_resumed_read_resumes_again() {
    let mut h = repairing();
    fail_the_second_read(&mut h);
    retry(&mut h);
    let resumed = h.loader.ledger().resumed();
    assert!(
        resumed.is_some(),
        "the ledger remembers the chain it started again"
    );
    // The resumed read (rows 100..150) is answered; the next (150..200) fails.
    h.answer_one();
    assert_eq!(
        h.loader.ledger().resumed(),
        None,
        "its resumed read was answered"
    );
    assert_eq!(
        (h.reads[0].kind, common::at(&h.reads[0].cursor)),
        (Kind::Chain, 150)
    );
    h.fail_one();
    let l = h.loader.ledger();
    assert!(l.repair_failed(), "a repair failure again");
    assert_eq!((l.failure(), l.debt()), (Failure::Own, Debt::Bounded));
    retry(&mut h);
    assert_eq!(
        h.issued.last(),
        Some(&(Kind::Chain, 150)),
        "resumed at the read that failed"
    );
    settled(&mut h);
    let st = h.loader.stats();
    assert_eq!(st.resumed, 2);
    assert_eq!(st.issued[2], 0, "no full read");
}
