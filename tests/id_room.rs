//! The id and epoch counters near their end: a call that cannot finish refuses before it
//! changes anything, so no request starts whose read the host never hears of.
#![cfg(feature = "testing")]

use loader::{Config, Effect, Loader, LoaderError};

/// A forward read out from the source's start, then a change reported ahead of it (decided by
/// the read's answer), with `ids_left` request ids left after the read's.
fn loader_with_a_change_ahead(ids_left: u64) -> Loader {
    let config = Config {
        page_size: 4,
        prefetch_distance: 0,
        max_pages: 0,
        recheck_full: false,
        ..Config::default()
    };
    let mut l = Loader::with_counters(config, u64::MAX - 2, u64::MAX - 1 - ids_left).unwrap();
    l.set_window(0, 135).unwrap();
    let issued = l.take_effects();
    assert!(
        matches!(issued.first(), Some(Effect::Issue(_))),
        "{issued:?}"
    );
    let mut cmp = |a: &[u8], b: &[u8]| a.cmp(b);
    l.invalidate_range(&[0u8; 8], None, &mut cmp).unwrap();
    // Nothing held is touched: the answer decides.
    assert_eq!(l.ledger().epoch(), u64::MAX - 2);
    l.take_effects();
    l
}

/// The answer reaches the change (it claims the source's end), so the change is taken: an
/// invalidation, whose full read takes the last id, then the answer, which may start another.
#[test]
fn an_answer_deciding_a_change_ahead_with_one_id_left_refuses_before_it_changes_anything() {
    let mut l = loader_with_a_change_ahead(1);
    let before = l.ledger().snapshot();
    let r = l.settle(1, 7, 4, &8u64.to_be_bytes(), true);
    assert!(
        matches!(
            r,
            Err(LoaderError::Ledger(loader::ledger::LedgerError::IdOverflow))
        ),
        "{r:?}"
    );
    // Before the fix the invalidation was kept and its full read started, with no effect
    // telling the host: the epoch moved and a request was in flight that no read stood for.
    assert_eq!(l.ledger().snapshot(), before);
    assert!(l.take_effects().is_empty());
    assert_eq!(l.outstanding_reads(), 1);
}

/// With two ids left the same answer is taken, and the full read it starts is issued.
#[test]
fn an_answer_deciding_a_change_ahead_with_two_ids_left_is_taken() {
    let mut l = loader_with_a_change_ahead(2);
    let r = l.settle(1, 7, 4, &8u64.to_be_bytes(), true);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(l.ledger().epoch(), u64::MAX - 1);
    let effects = l.take_effects();
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Issue(_))),
        "{effects:?}"
    );
}
