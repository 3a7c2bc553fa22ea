//! `explain`: a sentence for every state the loader can wait in, and `quiescent` exactly when
//! it waits for nothing.

use super::*;

fn say(h: &Host) -> String {
    h.loader.explain()
}

fn has(h: &Host, want: &str) {
    let text = say(h);
    assert!(text.contains(want), "{want:?} not in:\n{text}");
    assert!(!text.starts_with("quiescent"), "{text}");
}

fn apply_at(h: &mut Host, read_id: u64, op: fn(u16) -> Op) {
    let index = h.index_of(read_id);
    h.apply(op(index)).unwrap();
}

fn fail(h: &mut Host, read_id: u64) {
    apply_at(h, read_id, |index| Op::Fail { index });
}

#[test]
fn a_new_loader_and_a_drained_one_are_quiescent() {
    let mut h = host(small(), 20);
    assert_eq!(say(&h), "quiescent");
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    assert_eq!(say(&h), "quiescent");
}

#[test]
fn a_read_waited_for_names_its_id_direction_cursor_and_age() {
    let mut h = host(small(), 20);
    h.apply(Op::Tick { ms: 100 }).unwrap();
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    let r = only_read(&h);
    h.apply(Op::Tick { ms: 12_000 }).unwrap();
    has(
        &h,
        &format!(
            "waiting for read {} (a page, forward from the source's start, at most 4 items, issued 12 s ago)",
            r.read_id
        ),
    );
    has(&h, "the view is empty; the window is [0, 8)");
    deliver(&mut h, r.read_id);
    let next = only_read(&h);
    has(
        &h,
        &format!(
            "waiting for read {} (a page, forward from cursor 0x{}, at most 4 items, issued 0 ms ago)",
            next.read_id,
            next.cursor.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
    );
}

#[test]
fn a_backward_read_says_backward() {
    let mut h = host(small(), 20);
    h.apply(Op::Jump { index: 12 }).unwrap();
    h.apply(Op::Window { start: 10, len: 4 }).unwrap();
    drain(&mut h);
    h.apply(Op::Window { start: 6, len: 6 }).unwrap();
    let back = h
        .pending_reads()
        .into_iter()
        .find(|r| r.direction == Direction::Backward)
        .expect("a backward read");
    has(&h, &format!("waiting for read {} (", back.read_id));
    has(&h, "backward from cursor 0x");
}

#[test]
fn a_repair_counts_its_pages() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    h.apply(Op::Insert { key: 3 }).unwrap();
    let step0 = only_read(&h);
    has(&h, "a repair is running (0 of 2 pages read)");
    has(
        &h,
        &format!("waiting for read {} (a repair's page", step0.read_id),
    );
    deliver(&mut h, step0.read_id);
    has(&h, "a repair is running (1 of 2 pages read)");
    drain(&mut h);
    assert_eq!(say(&h), "quiescent");
}

#[test]
fn a_ranged_repair_says_ranged_and_its_bound() {
    let mut h = Host::new(small(), Source::with_items(200, 50));
    h.apply(Op::Window { start: 0, len: 80 }).unwrap();
    drain(&mut h);
    h.apply(Op::InsertRanged { key: 21 }).unwrap();
    has(&h, "a ranged repair is running");
    has(&h, " up to cursor 0x");
}

#[test]
fn a_page_failure_names_the_read_and_the_backoff_deadline() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    let r = only_read(&h);
    fail(&mut h, r.read_id);
    assert_eq!(h.loader.ledger().failure(), Failure::Page);
    let d = h.loader.next_deadline().unwrap();
    has(&h, &format!("read {} failed", r.read_id));
    has(
        &h,
        &format!("a page failure awaits its retry, which reads that page again: backoff waits until {d} ms ({} ms from now), then automatic retry 1 of 5", d - h.now),
    );
}

#[test]
fn a_stalled_cursor_says_the_source_returned_no_progress() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    let r = only_read(&h);
    apply_at(&mut h, r.read_id, |index| Op::Stall { index });
    has(
        &h,
        &format!(
            "read {}'s answer repeated its cursor with 4 items: the source returned no progress",
            r.read_id
        ),
    );
    has(
        &h,
        "a failure awaits its retry, a full read of the source: backoff waits until",
    );
    // The empty page that did not move and claimed no end: the same, with no items.
    h.apply(Op::Retry).unwrap();
    let r = only_read(&h);
    apply_at(&mut h, r.read_id, |index| Op::StallEmpty { index });
    has(
        &h,
        &format!(
            "read {}'s answer repeated its cursor with no items and no end_of_source",
            r.read_id
        ),
    );
    // A success forgets the cause.
    h.apply(Op::Retry).unwrap();
    drain(&mut h);
    assert_eq!(say(&h), "quiescent");
}

#[test]
fn a_spent_retry_budget_says_what_to_call() {
    let cfg = Config {
        max_auto_retries: 2,
        ..small()
    };
    let mut h = host(cfg, 20);
    h.apply(Op::Window { start: 0, len: 4 }).unwrap();
    for _ in 0..3 {
        let r = only_read(&h);
        fail(&mut h, r.read_id);
        if let Some(d) = h.loader.next_deadline() {
            h.apply(Op::Tick {
                ms: (d - h.now) as u16,
            })
            .unwrap();
        }
    }
    assert_eq!(h.pending(), 0);
    has(
        &h,
        "retry budget spent after 3 failures: call loader_retry or move the window",
    );
    let off = Config {
        max_auto_retries: 0,
        ..small()
    };
    let mut h = host(off, 20);
    h.apply(Op::Window { start: 0, len: 4 }).unwrap();
    let r = only_read(&h);
    fail(&mut h, r.read_id);
    has(&h, "after 1 failures, and automatic retries are off (max_auto_retries 0): call loader_retry or move the window");
}

#[test]
fn a_superseded_read_and_a_read_let_go_are_named() {
    let cfg = Config {
        read_timeout_ms: 500,
        ..small()
    };
    let mut h = host(cfg, 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    let finite = only_read(&h);
    h.apply(Op::Insert { key: 3 }).unwrap();
    has(
        &h,
        &format!(
            "read {} is no longer needed (superseded 0 ms ago, and cancel said so): answer it, its answer is stale, or abandon it; it is let go at 500 ms (read_timeout_ms)",
            finite.read_id
        ),
    );
    h.apply(Op::Tick { ms: 500 }).unwrap();
    assert_eq!(h.loader.stats().timed_out, 1);
    // The host still holds the read; the loader let it go.
    let repair: Vec<u64> = h
        .pending_reads()
        .iter()
        .map(|r| r.read_id)
        .filter(|&id| id != finite.read_id)
        .collect();
    for id in repair {
        deliver(&mut h, id);
    }
    drain_except(&mut h, finite.read_id);
    let text = say(&h);
    assert!(text.starts_with("quiescent\n"), "{text}");
    assert!(
        text.contains(&format!(
            "reads let go of, whose late answers are stale and released at once: read {}",
            finite.read_id
        )),
        "{text}"
    );
}

/// Answers every pending read but `keep` until only it is left.
fn drain_except(h: &mut Host, keep: u64) {
    while let Some(r) = h.pending_reads().into_iter().find(|r| r.read_id != keep) {
        deliver(h, r.read_id);
    }
}

#[test]
fn an_invalidation_during_a_page_read_supersedes_it_and_a_repair_runs() {
    let mut h = host(small(), 20);
    h.apply(Op::Window { start: 0, len: 8 }).unwrap();
    drain(&mut h);
    h.apply(Op::Window { start: 0, len: 12 }).unwrap();
    let page = only_read(&h);
    h.apply(Op::Insert { key: 3 }).unwrap();
    has(&h, &format!("read {} is no longer needed", page.read_id));
    has(&h, "a repair is running (0 of 3 pages read)");
    has(&h, "the view covers items [0, 8) for the window [0, 12)");
}

#[test]
fn queued_effects_and_a_closed_loader_are_said() {
    let mut l = Loader::new(small()).unwrap();
    l.set_window(0, 8).unwrap();
    let text = l.explain();
    assert!(text.contains("waiting for read 1 ("), "{text}");
    assert!(
        text.contains("2 effects are queued for the host and not yet taken"),
        "{text}"
    );
    l.close();
    assert_eq!(l.explain(), "closed: the loader takes no more events");
}
