//! Failures: stalled cursors, own failures and their backoff, superseded failures.

use super::*;

#[test]
fn a_stalled_chain_cursor_escalates_to_a_full_read() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    h.apply(Op::Insert { key: 3 }).unwrap();
    let step0 = only_read(&h);
    assert_eq!(step0.kind, Kind::Chain);
    let index = h.index_of(step0.read_id);
    h.apply(Op::Stall { index }).unwrap();
    let next = only_read(&h);
    assert_eq!(next.kind, Kind::Full, "escalated at once, no backoff");
    assert_eq!(h.loader.ledger().failure(), Failure::None);
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..8]);
}

#[test]
fn a_stalled_finite_cursor_is_an_own_failure_that_waits_for_a_retry() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    let r = only_read(&h);
    let index = h.index_of(r.read_id);
    h.apply(Op::Stall { index }).unwrap();
    // Not a page failure: read again, the page would stall again.
    assert_eq!(h.loader.ledger().failure(), Failure::Own);
    assert_eq!(h.pending(), 0, "nothing loops");
    assert_eq!(h.held(), 0, "the stalled page was released");
    assert!(h.loader.next_deadline().is_some());
    assert!(h.loader.retry().unwrap());
    h.apply(Op::Tick { ms: 0 }).unwrap();
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..8]);
}

#[test]
fn own_failures_back_off_then_wait_for_an_explicit_retry() {
    let cfg = Config {
        backoff_initial_ms: 100,
        backoff_max_ms: 1000,
        max_auto_retries: 2,
        ..small()
    };
    let mut h = host(cfg, 20);
    h.apply(Op::Window { start: 0, len: 4 }).unwrap();
    let mut deadlines = Vec::new();
    for round in 0..3 {
        let r = only_read(&h);
        let index = h.index_of(r.read_id);
        h.apply(Op::Fail { index }).unwrap();
        // The window's first page failed with nothing else owed: a page failure. Its page
        // read again failed again: an own failure of the lattice, retried by a full read.
        let want = if round == 0 {
            Failure::Page
        } else {
            Failure::Own
        };
        assert_eq!(h.loader.ledger().failure(), want, "round {round}");
        match h.loader.next_deadline() {
            Some(d) => {
                deadlines.push(d - h.now);
                let early = (d - h.now - 1) as u16;
                h.apply(Op::Tick { ms: early }).unwrap();
                assert_eq!(h.pending(), 0, "not before the deadline");
                h.apply(Op::Tick { ms: 1 }).unwrap();
                let again = only_read(&h);
                if round == 0 {
                    assert_eq!(again.kind, Kind::Finite, "the timer read the page again");
                    assert_eq!((&again.cursor, again.direction), (&r.cursor, r.direction));
                } else {
                    assert_eq!(again.kind, Kind::Full, "the timer read the source afresh");
                }
            }
            None => break,
        }
    }
    assert_eq!(deadlines.len(), 2, "max_auto_retries = 2");
    assert!((50..=100).contains(&deadlines[0]) && (100..=200).contains(&deadlines[1]));
    assert_eq!(
        h.loader.next_deadline(),
        None,
        "spent: waits for an explicit retry"
    );
    assert_eq!(h.pending(), 0);
    // A window move while a failure is recorded retries (P3): the window moved, so the
    // page that failed may not be the one it needs, and the retry reads the full source.
    h.apply(Op::Window { start: 0, len: 5 }).unwrap();
    assert_eq!(only_read(&h).kind, Kind::Full);
    drain(&mut h);
    assert_eq!(h.loader.ledger().failure(), Failure::None);
    // Success reset the count: the next failure arms the timer again.
    h.apply(Op::Window { start: 0, len: 12 }).unwrap();
    let r = only_read(&h);
    let index = h.index_of(r.read_id);
    h.apply(Op::Fail { index }).unwrap();
    assert!(h.loader.next_deadline().is_some());
}

#[test]
fn seed_scenario_a_superseded_read_fails_after_its_repair_and_refills_continue() {
    let mut h = host(small(), 30);
    h.apply(Op::Window { start: 0, len: 4 }).unwrap();
    drain(&mut h);
    // A second finite read is in flight when the source changes.
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    let late = only_read(&h);
    assert_eq!(late.kind, Kind::Finite);
    h.apply(Op::Insert { key: 0 }).unwrap();
    let cancels = h.loader.stats().cancels;
    assert_eq!(cancels, 1, "the superseded read got a cancel hint");
    while let Some(chain) = h
        .pending_reads()
        .into_iter()
        .find(|r| r.kind == Kind::Chain)
    {
        deliver(&mut h, chain.read_id);
    }
    assert!(!h.loader.revalidating(), "the repair finished");
    assert_eq!(h.pending_reads(), vec![late.clone()]);
    // Now the superseded read fails.
    let index = h.index_of(late.read_id);
    h.apply(Op::Fail { index }).unwrap();
    assert_eq!(
        h.loader.ledger().failure(),
        Failure::None,
        "nothing is stranded"
    );
    drain(&mut h);
    h.apply(Op::Window { start: 0, len: 16 }).unwrap();
    drain(&mut h);
    assert!(h.loader.covered().1 >= 16, "refills continued");
    assert_eq!(view(&h), h.source.items()[..h.loader.covered().1 as usize]);
}

/// A clock that steps back (`tick` with an earlier time) never fires a deadline early and
/// re-arms nothing: the loader keeps the latest time it was told.
#[test]
fn a_clock_that_steps_back_fires_nothing_early() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    h.loader.tick(1_000).unwrap();
    h.apply(Op::Fail { index: 0 }).unwrap();
    let due = h.loader.next_deadline().expect("a backoff deadline");
    assert!(due > 1_000);
    let issued = h.loader.stats().issued;
    h.loader.tick(0).unwrap();
    h.loader.tick(due - 1).unwrap();
    assert_eq!(
        h.loader.stats().issued,
        issued,
        "nothing fired before the deadline"
    );
    assert_eq!(
        h.loader.next_deadline(),
        Some(due),
        "the deadline is unchanged"
    );
    h.loader.tick(due).unwrap();
    assert_eq!(
        h.loader.stats().retries_auto,
        1,
        "the deadline fires at its time"
    );
}

/// A page retry reads the failed read again (its cursor, direction and `until`), and only
/// such a retry counts in `retries_page`; a retry whose read would be another (the window
/// moved or a jump came between the failed read's issue and the retry) is a full read from
/// the anchor. `how` retries: 0 `retry`, 1 the backoff timer, 2 `set_window` unchanged.
fn retried(h: &mut Host, how: u8) -> Read {
    let before = h.loader.stats();
    match how {
        0 => h.apply(Op::Retry).unwrap(),
        1 => {
            let d = h.loader.next_deadline().expect("the timer is armed");
            let ms = d.saturating_sub(h.now) as u16;
            h.apply(Op::Tick { ms }).unwrap();
        }
        _ => {
            let (start, len) = h.loader.window();
            h.apply(Op::Window {
                start: start as u16,
                len: len as u16,
            })
            .unwrap();
        }
    }
    let after = h.loader.stats();
    let r = only_read(h);
    let page = after.retries_page - before.retries_page;
    assert_eq!(page, u64::from(r.kind == Kind::Finite), "{r:?}");
    r
}

#[test]
fn a_window_move_while_a_page_read_is_out_makes_its_failure_retry_from_the_anchor() {
    for how in 0..3 {
        let cfg = Config {
            page_size: 2,
            prefetch_distance: 5,
            ..Config::default()
        };
        let mut h = Host::new(cfg, Source::numbered(20));
        // A jump on a loader holding nothing, to a number of the host's own.
        let at = h.source.cursor_before(10);
        h.loader.jump(&at, 1000).unwrap();
        h.collect().unwrap();
        let failed = only_read(&h);
        assert_eq!(failed.kind, Kind::Finite);
        h.apply(Op::Window { start: 43, len: 20 }).unwrap();
        let index = h.index_of(failed.read_id);
        h.apply(Op::Fail { index }).unwrap();
        let r = retried(&mut h, how);
        assert!(
            r.kind == Kind::Full
                || (&r.cursor, r.direction, &r.until)
                    == (&failed.cursor, failed.direction, &failed.until),
            "how {how}: a page retry read {r:?}, the failed read was {failed:?}"
        );
        assert_eq!(r.kind, Kind::Full, "how {how}");
        settle_all(&mut h);
    }
}

#[test]
fn a_jump_after_a_page_failure_makes_it_retry_from_the_anchor() {
    for how in 0..3 {
        let mut h = Host::new(small(), Source::numbered(20));
        h.apply(Op::Window { start: 0, len: 2 }).unwrap();
        let failed = only_read(&h);
        let index = h.index_of(failed.read_id);
        h.apply(Op::Fail { index }).unwrap();
        assert_eq!(h.loader.ledger().failure(), Failure::Page);
        let at = h.source.cursor_before(10);
        h.loader.jump(&at, 0).unwrap();
        h.collect().unwrap();
        let r = retried(&mut h, how);
        assert_eq!(r.kind, Kind::Full, "how {how}: {r:?}");
        assert_eq!(r.cursor.to_vec(), at, "from the anchor: the jump's cursor");
        settle_all(&mut h);
    }
}

#[test]
fn a_page_failure_with_nothing_between_is_retried_as_that_page() {
    for how in 0..3 {
        let mut h = host(small(), 20);
        h.apply(Op::Window { start: 0, len: 8 }).unwrap();
        drain(&mut h);
        h.apply(Op::Window { start: 4, len: 8 }).unwrap();
        let failed = only_read(&h);
        let index = h.index_of(failed.read_id);
        h.apply(Op::Fail { index }).unwrap();
        assert_eq!(h.loader.ledger().failure(), Failure::Page);
        let r = retried(&mut h, how);
        assert_eq!(r.kind, Kind::Finite, "how {how}");
        assert_eq!(
            (&r.cursor, r.direction, &r.until),
            (&failed.cursor, failed.direction, &failed.until)
        );
        settle_all(&mut h);
    }
}

fn settle_all(h: &mut Host) {
    h.settle_down().unwrap_or_else(|e| panic!("{e}"));
}
