//! Reads the host lets go of: abandoned, failed after a cancel hint, or timed out; and their
//! late answers.

use super::*;

/// A loader over `small()` pages with the first window loaded by hand, and a finite read
/// in flight that an invalidation then superseded. Returns the loader, that read and the
/// repair's first read.
fn superseded_finite() -> (Loader, Read, Vec<Read>) {
    let mut l = Loader::new(small()).unwrap();
    l.set_window(0, 4).unwrap();
    let r = issued(&mut l).remove(0);
    l.settle(r.read_id, 1, 4, &[4], false).unwrap();
    l.take_effects();
    l.set_window(0, 8).unwrap();
    let finite = issued(&mut l).remove(0);
    assert_eq!(finite.kind, Kind::Finite);
    l.invalidate().unwrap();
    let effects = l.take_effects();
    assert!(effects.contains(&Effect::Cancel {
        read_id: finite.read_id
    }));
    let repair = effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::Issue(r) => Some(r),
            _ => None,
        })
        .collect();
    (l, finite, repair)
}

fn issued(l: &mut Loader) -> Vec<Read> {
    l.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Issue(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn abandoning_a_superseded_read_costs_nothing_and_its_late_answer_is_released_at_once() {
    let (mut l, finite, _) = superseded_finite();
    let debt = l.ledger().debt();
    assert_eq!(l.abandon(finite.read_id), Ok(Answer::Stale));
    assert_eq!(l.ledger().debt(), debt, "no debt raised");
    assert_eq!(l.ledger().failure(), Failure::None);
    assert_eq!(l.stats().abandoned, 1);
    assert!(
        issued(&mut l).iter().all(|r| r.kind != Kind::Full),
        "no full re-read"
    );
    // The answer arrives anyway: stale, and its acquisition goes straight back.
    assert_eq!(
        l.settle(finite.read_id, 77, 4, &[8], false),
        Ok(Answer::Stale)
    );
    assert_eq!(l.take_effects(), vec![Effect::Release { acquisition: 77 }]);
    assert_eq!(l.stats().late_answers, 1);
    // Only once: a second answer is refused.
    assert_eq!(
        l.settle(finite.read_id, 78, 4, &[8], false),
        Err(LoaderError::AlreadyAnswered(finite.read_id))
    );
}

#[test]
fn failing_a_read_after_its_cancel_hint_is_letting_it_go() {
    let (mut l, finite, _) = superseded_finite();
    let debt = l.ledger().debt();
    assert_eq!(l.fail(finite.read_id, 5), Ok(Answer::Stale));
    assert_eq!(l.ledger().debt(), debt);
    assert_eq!(l.stats().failed_stale, 0);
    assert_eq!(l.stats().abandoned, 1);
}

#[test]
fn abandoning_a_read_still_needed_is_a_failure() {
    let mut l = Loader::new(small()).unwrap();
    l.set_window(0, 4).unwrap();
    let r = issued(&mut l).remove(0);
    assert_eq!(l.abandon(r.read_id), Ok(Answer::Current));
    // The window's page, nothing else owed: a page failure, whose retry reads it again.
    assert_eq!(l.ledger().failure(), Failure::Page);
    assert!(l.next_deadline().is_some(), "the backoff retry is armed");
    // A late answer is still stale and released.
    assert_eq!(l.settle(r.read_id, 9, 4, &[4], false), Ok(Answer::Stale));
    assert!(l
        .take_effects()
        .contains(&Effect::Release { acquisition: 9 }));
}

#[test]
fn a_superseded_read_never_answered_times_out_and_unblocks_new_reads() {
    let (mut l, finite, repair) = superseded_finite();
    // The repair commits; the window then grows, but the superseded finite read still
    // blocks new finite reads (one at a time).
    let mut pending = repair;
    while let Some(r) = pending.pop() {
        let at = r.cursor.first().copied().unwrap_or(0);
        l.settle(r.read_id, 10 + u64::from(at), 4, &[at + 4], false)
            .unwrap();
        pending.extend(issued(&mut l));
    }
    l.set_window(0, 16).unwrap();
    assert!(
        issued(&mut l).is_empty(),
        "blocked by the unanswered read {}",
        finite.read_id
    );
    let deadline = l.next_deadline().expect("the timeout is a deadline");
    assert_eq!(deadline, small().read_timeout_ms);
    l.tick(deadline - 1).unwrap();
    assert!(issued(&mut l).is_empty());
    l.tick(deadline).unwrap();
    assert_eq!(l.stats().timed_out, 1);
    assert!(
        issued(&mut l).iter().any(|r| r.kind == Kind::Finite),
        "new reads start"
    );
}

#[test]
fn each_read_is_hinted_at_most_once_even_at_close() {
    let (mut l, finite, _) = superseded_finite();
    l.close();
    let hints: Vec<_> = l
        .take_effects()
        .into_iter()
        .filter(|e| matches!(e, Effect::Cancel { read_id } if *read_id == finite.read_id))
        .collect();
    assert!(
        hints.is_empty(),
        "hinted when superseded, not again at close"
    );
}

#[test]
fn a_late_answer_is_checked_like_any_answer() {
    let (mut l, finite, _) = superseded_finite();
    assert_eq!(l.abandon(finite.read_id), Ok(Answer::Stale));
    assert_eq!(
        l.settle(finite.read_id, 5, finite.limit + 1, &[8], false),
        Err(LoaderError::CountOverLimit {
            count: finite.limit + 1,
            limit: finite.limit
        })
    );
    assert_eq!(
        l.settle(finite.read_id, 5, 1, &[0; MAX_CURSOR_LEN + 1], false),
        Err(LoaderError::CursorTooLong(MAX_CURSOR_LEN + 1))
    );
    // Refused, it is still let go of: a good late answer is accepted, stale.
    assert_eq!(
        l.settle(finite.read_id, 5, 1, &[8], false),
        Ok(Answer::Stale)
    );
}

#[test]
fn a_failure_after_the_loader_decided_the_hint_lets_the_read_go_even_before_the_host_hears_it() {
    // The host fails the read while the loader's `Cancel` for it is still undelivered (as from
    // inside a callback that runs before the queued hint): the failure lets the read go, so a
    // second answer to it is late (stale), never a second failure of a read still needed.
    let mut l = Loader::new(small()).unwrap();
    l.set_window(0, 1 << 25).unwrap();
    let first = issued(&mut l).remove(0);
    l.invalidate().unwrap();
    // The effects (the hint among them) are not taken: the host has not heard the hint yet.
    assert_eq!(l.fail(first.read_id, 9), Ok(Answer::Stale));
    assert!(l.take_effects().contains(&Effect::Cancel {
        read_id: first.read_id
    }));
    let late = l.stats().late_answers;
    assert_eq!(l.fail(first.read_id, 9), Ok(Answer::Stale));
    assert_eq!(l.stats().late_answers, late + 1);
    assert_eq!(l.stats().abandoned, 1);
}
