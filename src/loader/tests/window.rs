//! The window: dropping pages far behind it and over `max_pages`, moving back over dropped
//! pages (read backward), refused moves.

use super::*;

#[test]
fn pages_far_behind_the_window_are_dropped_and_a_repair_starts_at_the_anchor() {
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
    // The repair starts at the anchor: the page holding the window's start, item 16.
    let step0 = only_read(&h);
    assert_eq!(step0.cursor, encode_cursor(h.source.items()[15]));
    assert_eq!(step0.direction, Direction::Forward);
    drain(&mut h);
    assert_eq!(h.loader.covered(), (16, 24));
    let from = h.source.position(h.loader.base_cursor());
    let (s, e) = h.loader.covered();
    assert_eq!(view(&h), h.source.items()[from..from + (e - s) as usize]);
    // Moving back over released pages reads backward from the first held page, a page at
    // a time: the distance scrolled, not a re-read from the source's start.
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    let back = only_read(&h);
    assert_eq!(back.direction, Direction::Backward);
    assert_eq!(back.cursor, encode_cursor(h.source.items()[15]));
    let before = h.loader.stats().items_read;
    drain(&mut h);
    assert_eq!(h.loader.stats().items_read - before, 16);
    assert_eq!(h.loader.covered().0, 0);
    assert!(h.loader.start_of_source());
    assert_eq!(view(&h), h.source.items()[..h.loader.covered().1 as usize]);
}

#[test]
fn max_pages_releases_the_pages_farthest_from_the_window_on_both_sides() {
    let cfg = Config {
        max_pages: 3,
        ..small()
    };
    let mut h = host(cfg, 80);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    h.apply(Op::Window { start: 40, len: 8 }).unwrap();
    drain(&mut h);
    // The window needs two pages; the third kept is the one nearest it.
    assert_eq!(h.loader.page_count(), 3);
    assert_eq!(h.loader.covered(), (36, 48));
    assert_eq!(h.held(), 3);
    h.apply(Op::Window { start: 20, len: 8 }).unwrap();
    drain(&mut h);
    assert_eq!(h.loader.page_count(), 3);
    assert_eq!(h.loader.covered(), (20, 32));
    assert_eq!(h.held(), 3);
    let from = h.source.position(h.loader.base_cursor());
    assert_eq!(from, 20);
    assert_eq!(view(&h), h.source.items()[20..32]);
}

#[test]
fn window_overflow_is_refused() {
    let mut l = Loader::new(small()).unwrap();
    assert_eq!(l.set_window(u64::MAX, 1), Err(LoaderError::WindowOverflow));
    assert_eq!(l.window(), (0, 0));
    assert!(l.take_effects().is_empty());
}
