//! The host contract: refused answers and configs change nothing; close releases everything once.

use super::*;

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
fn bad_configs_are_refused() {
    let r = Loader::new(Config {
        page_size: 0,
        ..Config::default()
    });
    assert_eq!(r.err(), Some(LoaderError::Config(ConfigError::PageSize)));
}
