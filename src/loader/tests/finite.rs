//! Finite reads: pages appended one at a time, up to the window plus the prefetch distance.

use super::*;

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
