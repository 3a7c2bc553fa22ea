//! One test per rule of the loader, by name, through the simulated host.

use super::*;
use crate::ledger::Failure;
use crate::sim::{encode_cursor, Host, Op, Source};

fn host(config: Config, items: usize) -> Host {
    Host::new(config, Source::with_items(items, 5))
}

fn small() -> Config {
    Config {
        page_size: 4,
        prefetch_distance: 0,
        ..Config::default()
    }
}

fn deliver(h: &mut Host, read_id: u64) {
    let index = h.index_of(read_id);
    h.apply(Op::Deliver { index, fresh: true }).unwrap();
}

fn only_read(h: &Host) -> Read {
    let reads = h.pending_reads();
    assert_eq!(reads.len(), 1, "{reads:?}");
    reads[0].clone()
}

/// Answers reads until none is pending.
fn drain(h: &mut Host) {
    while let Some(r) = h.pending_reads().first().cloned() {
        deliver(h, r.read_id);
    }
}

fn view(h: &Host) -> Vec<crate::sim::Item> {
    h.view_items().unwrap()
}

#[test]
fn finite_reads_append_one_page_at_a_time_from_the_memoised_end_cursor() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 10 }).unwrap();
    let first = only_read(&h);
    assert_eq!((first.kind, first.step, first.limit), (Kind::Finite, 0, 4));
    assert!(
        first.cursor.is_empty(),
        "the first read starts at the source's start"
    );
    deliver(&mut h, first.read_id);
    let second = only_read(&h);
    assert_eq!(second.cursor, encode_cursor(h.source.items()[3]));
    drain(&mut h);
    // 10 items wanted, pages of 4: three pages.
    assert_eq!(h.loader.pages().len(), 3);
    assert_eq!(view(&h), h.source.items()[..12]);
    assert_eq!(
        h.loader.pages().map(|p| p.start).collect::<Vec<_>>(),
        [0, 4, 8]
    );
}

#[test]
fn finite_reads_stop_at_the_end_of_the_source() {
    let mut h = host(small(), 6);
    h.apply(Op::Window { start: 0, len: 100 }).unwrap();
    drain(&mut h);
    assert!(h.loader.end_of_source());
    assert_eq!(view(&h), h.source.items());
    assert_eq!(h.pending(), 0);
}

#[test]
fn prefetch_distance_reads_past_the_window_end() {
    let mut h = host(
        Config {
            prefetch_distance: 5,
            ..small()
        },
        40,
    );
    h.apply(Op::Window { start: 0, len: 4 }).unwrap();
    drain(&mut h);
    assert_eq!(
        h.loader.covered(),
        (0, 12),
        "4 + 5 items wanted, in pages of 4"
    );
}

#[test]
fn chain_repair_rereads_from_the_first_held_page_and_commits_with_its_last_step() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    let old = view(&h);
    h.apply(Op::Delete { index: 0 }).unwrap();
    assert!(h.loader.revalidating());
    let step0 = only_read(&h);
    assert_eq!((step0.kind, step0.step), (Kind::Chain, 0));
    assert!(
        step0.cursor.is_empty(),
        "from the first held page's start cursor"
    );
    deliver(&mut h, step0.read_id);
    assert_eq!(view(&h), old, "the old view stays until the chain commits");
    assert!(h.loader.revalidating());
    let step1 = only_read(&h);
    assert_eq!(step1.step, 1);
    // Each step continues from the cursor the previous step returned, not the memo.
    assert_eq!(step1.cursor, encode_cursor(h.source.items()[3]));
    deliver(&mut h, step1.read_id);
    assert!(!h.loader.revalidating());
    assert_eq!(view(&h), h.source.items()[..8]);
}

#[test]
fn chain_refill_keeps_the_last_items_after_an_insert_near_the_top() {
    let mut h = host(small(), 30);
    h.apply(Op::Window { start: 0, len: 12 }).unwrap();
    drain(&mut h);
    let old_end = h.loader.covered().1;
    h.apply(Op::Insert { key: 0 }).unwrap();
    drain(&mut h);
    assert!(
        h.loader.covered().1 >= old_end,
        "the repair covers what the old view did"
    );
    assert_eq!(view(&h), h.source.items()[..h.loader.covered().1 as usize]);
}

#[test]
fn chain_step_after_the_epoch_moved_settles_stale_and_a_replacement_starts() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    h.apply(Op::Insert { key: 1 }).unwrap();
    let step0 = only_read(&h);
    h.apply(Op::Insert { key: 2 }).unwrap();
    assert_eq!(h.pending(), 1, "the chain waits for its step boundary");
    let stale = h.loader.stats().answered_stale;
    deliver(&mut h, step0.read_id);
    assert_eq!(h.loader.stats().answered_stale, stale + 1);
    let replacement = only_read(&h);
    assert_eq!(replacement.kind, Kind::Chain);
    assert_ne!(replacement.request_id, step0.request_id);
    assert_eq!(replacement.step, 0);
    assert!(replacement.cursor.is_empty());
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..8]);
}

#[test]
fn full_read_goes_from_the_start_up_to_the_window_end_plus_prefetch() {
    let mut h = host(
        Config {
            prefetch_distance: 2,
            ..small()
        },
        30,
    );
    h.apply(Op::Window { start: 0, len: 9 }).unwrap();
    assert_eq!(only_read(&h).kind, Kind::Finite);
    // Nothing has settled, so an invalidation leaves full debt: a full read supersedes it.
    h.apply(Op::Invalidate).unwrap();
    let r = h
        .pending_reads()
        .into_iter()
        .find(|r| r.kind == Kind::Full)
        .unwrap();
    assert_eq!(r.step, 0);
    assert!(r.cursor.is_empty());
    drain(&mut h);
    assert_eq!(h.loader.covered(), (0, 12));
    assert_eq!(h.loader.stats().issued[Kind::Full as usize], 3);
    assert_eq!(view(&h), h.source.items()[..12]);
}

#[test]
fn an_invalidation_during_a_full_read_is_repaired_not_lost() {
    let mut h = host(small(), 12);
    h.apply(Op::Invalidate).unwrap();
    h.apply(Op::Window { start: 0, len: 4 }).unwrap();
    let full = only_read(&h);
    h.apply(Op::Delete { index: 1 }).unwrap();
    // The full read's answer was computed before the delete.
    let index = h.index_of(full.read_id);
    h.apply(Op::Deliver {
        index,
        fresh: false,
    })
    .unwrap();
    assert!(h.loader.revalidating(), "the recheck repair runs");
    assert_eq!(only_read(&h).kind, Kind::Chain);
    drain(&mut h);
    assert_eq!(view(&h), h.source.items()[..4]);
    assert_eq!(h.loader.ledger().cover_epoch(), h.loader.ledger().epoch());
}

#[test]
fn answers_that_break_the_contract_are_refused_and_change_nothing() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 4 }).unwrap();
    let r = only_read(&h);
    let before = (h.loader.ledger().snapshot(), h.loader.outstanding_reads());
    let l = &mut h.loader;
    assert_eq!(
        l.settle(9999, 1, 1, b"x", false),
        Err(LoaderError::UnknownRead(9999))
    );
    assert_eq!(l.fail(0, 1), Err(LoaderError::UnknownRead(0)));
    assert_eq!(
        l.settle(r.read_id, 1, 5, b"x", false),
        Err(LoaderError::CountOverLimit { count: 5, limit: 4 })
    );
    let long = vec![0u8; MAX_CURSOR_LEN + 1];
    assert_eq!(
        l.settle(r.read_id, 1, 1, &long, false),
        Err(LoaderError::CursorTooLong(MAX_CURSOR_LEN + 1))
    );
    assert_eq!(l.take_effects(), vec![]);
    assert_eq!((l.ledger().snapshot(), l.outstanding_reads()), before);
    // A cursor of exactly the maximum is accepted.
    assert!(l
        .settle(r.read_id, 7, 1, &vec![1u8; MAX_CURSOR_LEN], false)
        .is_ok());
    assert_eq!(
        l.settle(r.read_id, 8, 1, b"y", false),
        Err(LoaderError::AlreadyAnswered(r.read_id))
    );
    assert_eq!(
        l.fail(r.read_id, 1),
        Err(LoaderError::AlreadyAnswered(r.read_id))
    );
    assert_eq!(l.stats().accepted, 1);
    l.close();
    let released: Vec<_> = l
        .take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Release { acquisition } => Some(acquisition),
            _ => None,
        })
        .collect();
    assert_eq!(
        released,
        vec![7],
        "only the accepted acquisition is released"
    );
}

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
    for _ in 0..3 {
        let r = only_read(&h);
        let index = h.index_of(r.read_id);
        h.apply(Op::Fail { index }).unwrap();
        assert_eq!(h.loader.ledger().failure(), Failure::Own);
        match h.loader.next_deadline() {
            Some(d) => {
                deadlines.push(d - h.now);
                let early = (d - h.now - 1) as u16;
                h.apply(Op::Tick { ms: early }).unwrap();
                assert_eq!(h.pending(), 0, "not before the deadline");
                h.apply(Op::Tick { ms: 1 }).unwrap();
                assert_eq!(only_read(&h).kind, Kind::Full, "the timer retried");
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
    // A window move while a failure is recorded retries (P3).
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

#[test]
fn pages_far_behind_the_window_are_dropped_and_the_memo_keeps_the_chain_start() {
    let cfg = Config {
        drop_margin: 4,
        ..small()
    };
    let mut h = host(cfg, 40);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    h.apply(Op::Window { start: 16, len: 8 }).unwrap();
    drain(&mut h);
    // Pages ending at or before 16 - 4 = 12 are released.
    assert_eq!(h.loader.covered().0, 12);
    assert_eq!(h.loader.base_cursor(), encode_cursor(h.source.items()[11]));
    assert_eq!(h.held(), h.loader.pages().len());
    h.apply(Op::Delete { index: 30 }).unwrap();
    let step0 = only_read(&h);
    assert_eq!(step0.cursor, encode_cursor(h.source.items()[11]));
    drain(&mut h);
    let from = h.source.position(h.loader.base_cursor());
    let (s, e) = h.loader.covered();
    assert_eq!(view(&h), h.source.items()[from..from + (e - s) as usize]);
    // Moving back over dropped pages re-reads from the start.
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    assert_eq!(h.loader.covered().0, 0);
    assert_eq!(view(&h), h.source.items()[..h.loader.covered().1 as usize]);
}

#[test]
fn close_releases_everything_once_and_refuses_later_answers() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    let r = only_read(&h);
    deliver(&mut h, r.read_id);
    h.apply(Op::Insert { key: 0 }).unwrap();
    assert!(h.held() > 0 && h.pending() > 0);
    h.close().unwrap();
    assert_eq!(h.loader.invalidate(), Err(LoaderError::Closed));
    assert_eq!(h.loader.set_window(0, 1), Err(LoaderError::Closed));
    h.loader.close();
    assert!(
        h.loader.take_effects().is_empty(),
        "closing twice releases nothing"
    );
}

#[test]
fn window_overflow_is_refused() {
    let mut l = Loader::new(small()).unwrap();
    assert_eq!(l.set_window(u64::MAX, 1), Err(LoaderError::WindowOverflow));
    assert_eq!(l.window(), (0, 0));
    assert!(l.take_effects().is_empty());
}

#[test]
fn bad_configs_are_refused() {
    let r = Loader::new(Config {
        page_size: 0,
        ..Config::default()
    });
    assert_eq!(r.err(), Some(LoaderError::Config(ConfigError::PageSize)));
}

#[test]
fn a_window_move_refused_for_want_of_ids_changes_nothing() {
    let cfg = Config {
        drop_margin: 1,
        ..small()
    };
    let mut l = Loader::with_counters(cfg, 0, u64::MAX - 5).unwrap();
    let next_read = |l: &mut Loader| {
        l.take_effects()
            .into_iter()
            .find_map(|e| match e {
                Effect::Issue(r) => Some(r),
                _ => None,
            })
            .unwrap()
    };
    let mut acq = 0;
    let mut answer = |l: &mut Loader, r: Read| {
        let at = r.cursor.first().copied().unwrap_or(0);
        acq += 1;
        l.settle(r.read_id, acq, 4, &[at + 4], false).unwrap();
    };
    l.set_window(0, 4).unwrap();
    let r = next_read(&mut l);
    answer(&mut l, r);
    l.set_window(8, 4).unwrap();
    let r = next_read(&mut l);
    answer(&mut l, r);
    let r = next_read(&mut l);
    answer(&mut l, r);
    assert_eq!(l.covered(), (4, 12), "the first page was dropped");
    l.set_window(8, 8).unwrap();
    let r = next_read(&mut l);
    assert_eq!(r.request_id, u64::MAX - 2);
    l.fail(r.read_id, 1).unwrap();
    l.take_effects();
    // Moving back over the dropped page needs a retry and a rewind: two ids, one is left.
    let before = (l.ledger().snapshot(), l.window(), l.next_deadline());
    assert_eq!(
        l.set_window(0, 4),
        Err(LoaderError::Ledger(LedgerError::IdOverflow))
    );
    assert_eq!(
        (l.ledger().snapshot(), l.window(), l.next_deadline()),
        before
    );
    assert!(l.take_effects().is_empty());
    l.close();
}

/// A host whose loader shows 500 pages of 4 items, read by finite reads.
fn view_of_500_pages() -> Host {
    let mut h = host(small(), 2_000);
    h.apply(Op::Window {
        start: 0,
        len: 2_000,
    })
    .unwrap();
    drain(&mut h);
    h
}

#[test]
fn a_burst_of_overtaken_chains_sizes_no_record_for_the_whole_view() {
    // Each invalidation overtakes the newest chain at its first step.
    let mut h = view_of_500_pages();
    assert_eq!(h.loader.pages().len(), 500);
    h.apply(Op::Invalidate).unwrap();
    for _ in 0..50 {
        h.apply(Op::Invalidate).unwrap();
        let chain = only_read(&h);
        assert_eq!((chain.kind, chain.step), (Kind::Chain, 0));
        deliver(&mut h, chain.read_id);
    }
    // 51 chains were started; the live ones were each answered once, so none of them is
    // sized for 500 pages (which cost megabytes per event on a large view).
    let chains: Vec<&Work> = h
        .loader
        .work
        .values()
        .filter(|w| w.kind == Kind::Chain)
        .collect();
    assert!(chains.len() > 40, "{} chains live", chains.len());
    let roomy = chains.iter().filter(|w| w.room() >= 500).count();
    assert!(roomy <= 1, "{roomy} chains sized for the whole view");
    // The chain that survives is sized once its first step is answered, and the repair
    // commits the current view.
    drain(&mut h);
    assert!(!h.loader.revalidating());
    assert_eq!(view(&h), h.source.items()[..2_000]);
    h.close().unwrap();
}

#[test]
fn the_chain_that_survives_a_burst_reuses_the_last_repairs_vectors() {
    // A first repair leaves a record sized for the whole view in the pool.
    let mut h = view_of_500_pages();
    for _ in 0..2 {
        h.apply(Op::Invalidate).unwrap();
        drain(&mut h);
    }
    assert!(!h.loader.revalidating());
    let roomy = |l: &Loader| {
        l.spare_roomy
            .iter()
            .chain(&l.spare_steps)
            .filter(|w| w.room() >= 500)
            .map(|w| w.staged.as_ptr())
            .collect::<Vec<_>>()
    };
    let pooled = roomy(&h.loader);
    assert_eq!(pooled.len(), 1, "one record sized for the view is pooled");
    // A burst of more overtaken chains than the pool holds: each stays live until the
    // commit, and none may take the roomy record with it.
    h.apply(Op::Invalidate).unwrap();
    for _ in 0..40 {
        h.apply(Op::Invalidate).unwrap();
        let chain = only_read(&h);
        deliver(&mut h, chain.read_id);
    }
    assert_eq!(roomy(&h.loader), pooled, "still pooled after the burst");
    // The survivor's first step is answered: it takes the roomy vectors, with its page.
    let chain = only_read(&h);
    assert_eq!((chain.kind, chain.step), (Kind::Chain, 0));
    deliver(&mut h, chain.read_id);
    let w = &h.loader.work[&chain.request_id];
    assert_eq!(
        w.staged.as_ptr(),
        pooled[0],
        "the survivor reuses the pooled vectors"
    );
    assert_eq!((w.staged.len(), w.acqs.len()), (1, 1));
    assert!(roomy(&h.loader).is_empty());
    drain(&mut h);
    assert!(!h.loader.revalidating());
    assert_eq!(view(&h), h.source.items()[..2_000]);
    h.close().unwrap();
}
