//! The window: dropping pages far behind it, moving back over dropped pages, refused moves.

use super::*;

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
fn window_overflow_is_refused() {
    let mut l = Loader::new(small()).unwrap();
    assert_eq!(l.set_window(u64::MAX, 1), Err(LoaderError::WindowOverflow));
    assert_eq!(l.window(), (0, 0));
    assert!(l.take_effects().is_empty());
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
