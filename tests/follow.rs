//! Follow mode and appends: the window pinned to a growing source's end reads only what was
//! appended; moving away unpins it and moving back pins it again; a read in flight across an
//! append does not hide the new items; history scrolls back while the end grows; the oldest
//! items go (rotation); a chat opened at its end.

#[path = "common/log.rs"]
mod log;

use loader::Config;
use log::{cur, LogHost};

const LEN: u64 = 50;
const PAGE: u32 = 20;

fn config() -> Config {
    Config {
        page_size: PAGE,
        prefetch_distance: 10,
        ..Config::default()
    }
}

/// A log of `items`, the window at its start, then pinned and read to the end.
fn pinned(items: u64) -> LogHost {
    let mut h = LogHost::new(config(), items);
    h.set_window(0, LEN);
    h.run();
    h.follow(true);
    h.run();
    assert!(h.loader.following());
    assert!(h.loader.end_of_source());
    h
}

fn assert_at_end(h: &LogHost) {
    let want: Vec<u64> = (h.end.saturating_sub(LEN)..h.end).collect();
    assert_eq!(
        h.window_items(),
        want,
        "the window shows the last {LEN} items"
    );
    assert!(h.loader.following());
}

#[test]
fn pinned_window_shows_each_append_and_reads_only_it() {
    let mut h = pinned(1_000);
    assert_at_end(&h);
    let (read0, reads0) = (h.items_read, h.reads);
    let mut appended = 0;
    for n in [1, 3, 7, 1, 25, 2, 40, 1] {
        h.append(n);
        appended += n;
        h.run();
        assert_at_end(&h);
        assert!(h.loader.end_of_source());
    }
    // Each append reads exactly what was appended, in one read (none is over a page... the
    // 25 and 40 are two and three).
    assert_eq!(h.items_read - read0, appended);
    assert!(h.reads - reads0 <= 8 + 1 + 2);
}

#[test]
fn an_append_while_the_view_is_at_the_end_but_not_following_reads_on_demand() {
    // Not following: the view reaches the end, the window does not move; the appended items
    // are read only when the window wants them (here the prefetch does).
    let mut h = LogHost::new(config(), 45);
    h.set_window(0, LEN);
    h.run();
    assert!(h.loader.end_of_source());
    h.append(3);
    h.run();
    assert_eq!(h.view(), (0..48).collect::<Vec<_>>());
    assert_eq!(h.loader.window(), (0, LEN));
    assert!(!h.loader.following());
}

#[test]
fn a_move_away_unpins_and_a_move_back_to_the_end_pins_again() {
    let mut h = pinned(1_000);
    h.set_window(500, LEN);
    h.run();
    assert!(!h.loader.following());
    let before = h.items_read;
    h.append(30);
    h.run();
    // Away from the end, an append reads nothing and the window stays.
    assert_eq!(h.items_read, before);
    assert_eq!(h.loader.window(), (500, LEN));
    // Back to the end as the host knows it (the last item it saw): pinned again, and the
    // appended items are read and shown.
    h.set_window(1_000 - LEN, LEN);
    h.run();
    assert!(h.loader.following());
    assert_at_end(&h);
    // follow(false): a move to the end no longer pins.
    h.follow(false);
    assert!(!h.loader.following());
    h.append(5);
    h.run();
    assert_eq!(h.loader.window(), (1_030 - LEN, LEN));
}

#[test]
fn follow_from_far_back_returns_to_the_end_last_seen() {
    let mut h = pinned(1_000);
    h.set_window(100, LEN);
    h.run();
    assert!(!h.loader.following());
    h.append(10);
    h.run();
    let before = h.items_read;
    h.follow(true);
    h.run();
    assert_at_end(&h);
    // A far move to the end last seen (not a walk over 900 items), then the appended ones.
    assert!(
        h.items_read - before < 200,
        "read {} items to get back",
        h.items_read - before
    );
}

#[test]
fn a_read_in_flight_across_an_append_does_not_hide_the_new_items() {
    let mut h = pinned(1_000);
    h.append(5);
    // The read for the first append is out; the host computes its answer (the log as it
    // was), then more items are written and reported before the answer arrives.
    let read = h.pending.pop_front().expect("a read for the append");
    let (ids, next, end) = h.scan(&read);
    assert!(end);
    h.append(4);
    h.settle(&read, ids, &next, end);
    h.run();
    assert_at_end(&h);
    assert_eq!(h.view().last(), Some(&1_008));
    assert!(h.loader.end_of_source());
}

#[test]
fn an_empty_answer_from_before_an_append_is_no_stall() {
    let mut h = pinned(1_000);
    h.append(0); // reported, though nothing new was written yet: one empty read
    let read = h.pending.pop_front().expect("a read for the append");
    let (ids, next, end) = h.scan(&read);
    assert!(ids.is_empty() && end);
    h.append(2);
    h.settle(&read, ids, &next, end);
    h.run();
    assert_at_end(&h);
    assert_eq!(h.view().last(), Some(&1_001));
}

#[test]
fn scrolling_back_through_history_while_it_grows() {
    // A log appended at 1,000 items/s, one scroll step a millisecond: 1 append per step.
    let mut h = pinned(200_000);
    let top = 200_000 - LEN;
    let (read0, reads0) = (h.items_read, h.reads);
    let steps = 100_000 / 10;
    let mut appended = 0;
    for s in 1..=steps {
        h.set_window(top - 10 * s, LEN);
        h.append(1);
        appended += 1;
        h.run();
        assert!(!h.loader.following());
    }
    let scroll = h.items_read - read0;
    // The scroll's own reads: 100,000 items back (plus the prefetch), at most a page more.
    assert!(
        scroll <= 100_000 + 10 + u64::from(PAGE),
        "scrolling back read {scroll} items"
    );
    let scroll_reads = h.reads - reads0;
    assert!(scroll_reads <= 100_000 / u64::from(PAGE) + 2 + appended / 50);
    // Back at the end: pinned, showing every append.
    h.follow(true);
    h.run();
    assert_at_end(&h);
}

#[test]
fn head_removal_keeps_the_view_and_positions_honest() {
    let mut h = pinned(1_000);
    // Rotation removes the oldest 300 items: nothing shown changes, nothing is read, the
    // positions of the items held stay what they were.
    let before = (h.items_read, h.loader.window());
    h.remove_head(300);
    h.run();
    assert_eq!((h.items_read, h.loader.window()), before);
    assert_at_end(&h);
    // Appends go on as before.
    h.append(12);
    h.run();
    assert_at_end(&h);
    // Scrolling to the top reads back to the new first item, which gets position 0: the
    // view and the window are renumbered together, and the window shows the first items.
    h.set_window(0, LEN);
    h.run();
    let (start, _) = h.loader.window();
    let shown = h.window_items();
    assert_eq!(shown.first(), Some(&300));
    assert_eq!(
        start, 0,
        "the source's own positions once the start is reached"
    );
    assert!(h.loader.start_of_source());
    // Then pinned again at the end, showing the last items.
    h.follow(true);
    h.run();
    assert_at_end(&h);
}

#[test]
fn head_removal_while_the_view_holds_the_head() {
    // A capped table: 60 rows, the window over all of it; rows come at the end and the
    // oldest go.
    let mut h = LogHost::new(config(), 60);
    h.set_window(0, 100);
    h.run();
    h.follow(true);
    h.run();
    for _ in 0..20 {
        h.append(5);
        h.remove_head(5);
        h.run();
        assert_eq!(h.view(), (h.first..h.end).collect::<Vec<_>>());
        assert_eq!(h.loader.covered(), (0, 60));
    }
}

#[test]
fn a_chat_opened_at_its_end() {
    // Newest at the bottom, history above: jump to the end's cursor (the host knows it),
    // pin, and the window fills from the end backward; new messages show at the bottom.
    let mut h = LogHost::new(config(), 10_000);
    h.loader.set_window(0, LEN).expect("window");
    h.loader.jump(&cur(10_000), 10_000).expect("jump");
    h.collect();
    h.follow(true);
    h.run();
    assert_at_end(&h);
    assert!(h.items_read <= LEN + 10 + 2 * u64::from(PAGE));
    h.append(3);
    h.run();
    assert_at_end(&h);
    // Scrolling up through history: the same calls as any window.
    h.set_window(10_003 - LEN - 200, LEN);
    h.run();
    assert!(!h.loader.following());
    assert_eq!(h.window_items().first(), Some(&(10_003 - LEN - 200)));
}

#[test]
fn following_reads_about_one_item_per_item_appended_at_every_rate() {
    // Reads answered 300 µs after they are issued, from the log as it is then.
    for rate in [100, 1_000, 10_000] {
        let r = log::follow_run(false, config(), LEN, 10_000, rate, 1, 300, 50);
        let ratio = r.items_read as f64 / r.appended as f64;
        let rounding = f64::from(PAGE) / r.appended as f64;
        assert!(
            ratio <= 1.05 + rounding,
            "{rate}/s: {} items read for {} appended",
            r.items_read,
            r.appended
        );
        assert!(r.returned, "{rate}/s: back at the end, pinned");
        // Each scroll step reads the window it moved to, a page at a time.
        assert!(r.move_items <= r.moves * LEN + u64::from(PAGE), "{r:?}");
        // The return is a far move to the end last seen, then the items appended meanwhile:
        // not a walk back over the history scrolled.
        let window = LEN + 2 * 10 + 2 * u64::from(PAGE);
        assert!(
            r.return_items <= r.appended_away + window,
            "{rate}/s: {r:?}"
        );
    }
}
