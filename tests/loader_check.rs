//! The loader checker's regressions: the shortest traces it found for each defect of the
//! loader layer (each fails on the loader before its fix), a host fault for each property
//! no defect exercised (each property can fail), and a slice of the grid.

#![cfg(feature = "testing")]

use loader::check::{self, fault_grid, grid, Event, HostFault, Property, Settings};
use loader::Config;

fn settings(source: usize, page: u32, window: u64, prefetch: u64) -> Settings {
    Settings {
        config: Config {
            page_size: page,
            prefetch_distance: prefetch,
            backoff_initial_ms: 1,
            backoff_max_ms: 4,
            ..Config::default()
        },
        source,
        window,
        initial: None,
        changes: 1,
        moves: 1,
        faults: 1,
        depth: 8,
        fault: None,
        locate: false,
        settled: false,
        wide: false,
    }
}

/// `replay`, and with `LOADER_RECORD_DIR` set (`scripts/record_corpus.sh`), the run recorded
/// there as `<test>-<n>.log` for the corpus `loader-check --replay` checks (`tests/replay.rs`).
fn replay(s: &Settings, trace: &[Event]) -> Result<(), (Property, String)> {
    let Some(dir) = std::env::var_os("LOADER_RECORD_DIR") else {
        return check::replay(s, trace);
    };
    thread_local!(static RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
    let n = RUNS.with(|r| {
        r.set(r.get() + 1);
        r.get()
    });
    let test = std::thread::current()
        .name()
        .unwrap_or("run")
        .replace("::", "-");
    let log = loader::replay::Memory::new();
    let r = check::replay_recorded(s, trace, log.sink());
    let path = std::path::Path::new(&dir).join(format!("regression-{test}-{n}.log"));
    std::fs::write(path, log.text()).expect("write the log");
    r
}

fn holds(s: &Settings, trace: &[Event]) {
    if let Err((p, m)) = replay(s, trace) {
        panic!("{} violated: {m}", p.name());
    }
}

fn fails(s: &Settings, trace: &[Event], property: Property) {
    match replay(s, trace) {
        Ok(()) => panic!("{} held", property.name()),
        Err((p, m)) => assert_eq!(p, property, "{m}"),
    }
}

/// A finite read in flight, an invalidation, the superseded read is answered with a repeated
/// cursor (full debt), and the repair's next answer settles it stale, abandoned for a full
/// read: its pages went back only at a later commit (`held_accounted`).
#[test]
fn an_abandoned_repair_releases_its_pages_at_once() {
    let s = settings(5, 1, 2, 0);
    use Event::*;
    holds(
        &s,
        &[
            Answer { read: 1 },
            Insert {
                key: 0,
                ranged: false,
            },
            Answer { read: 3 },
            Repeat { read: 2 },
            Answer { read: 4 },
        ],
    );
}

/// A stale finite answer's page, and a stalled full read's, go back at once.
#[test]
fn stale_and_stalled_pages_go_back_at_once() {
    let s = settings(0, 1, 1, 0);
    use Event::*;
    holds(
        &s,
        &[
            Insert {
                key: 0,
                ranged: false,
            },
            Answer { read: 1 },
        ],
    );
    holds(
        &s,
        &[
            Insert {
                key: 0,
                ranged: false,
            },
            Repeat { read: 2 },
        ],
    );
}

/// `jump("", p)` with `p > 0`: the source's first item was shown at `p` with
/// `start_of_source` set (`own_positions`). The empty cursor wins: positions are the
/// source's own.
#[test]
fn a_jump_to_the_start_numbers_from_zero() {
    let s = settings(3, 1, 1, 0);
    holds(
        &s,
        &[Event::Answer { read: 1 }, Event::JumpStart { position: 4 }],
    );
    // The same as a starting point (`initial_cursor` empty, `initial_position` > 0).
    let mut s = settings(3, 1, 2, 1);
    s.initial = Some((0, 2));
    holds(&s, &[Event::Tick, Event::Answer { read: 1 }]);
}

/// A starting point's effects wait for the first call, which added its own `changed`:
/// `[changed, issue, changed]` (`changed_once_last`).
#[test]
fn changed_once_per_call_after_a_starting_point() {
    let mut s = settings(3, 1, 2, 1);
    s.initial = Some((1, 1));
    holds(
        &s,
        &[Event::Insert {
            key: 0,
            ranged: false,
        }],
    );
}

/// A retry (a full read) after the window moved past the held pages read and held every
/// page in between (`bound`).
#[test]
fn a_retry_during_a_far_move_holds_only_the_window() {
    let s = settings(5, 1, 1, 0);
    use Event::*;
    holds(
        &s,
        &[
            Fail { read: 1 },
            Window { start: 7, len: 1 },
            Answer { read: 2 },
            Answer { read: 3 },
            Answer { read: 4 },
            Answer { read: 5 },
            Answer { read: 6 },
        ],
    );
}

/// A change before the held pages (a jump left the source's start unread) while a forward
/// read is in flight superseded that read and started a repair (`ranged_untouched`).
#[test]
fn a_change_nothing_reads_supersedes_nothing() {
    let mut s = settings(5, 1, 1, 1);
    s.moves = 2;
    use Event::*;
    holds(
        &s,
        &[
            Answer { read: 1 },
            Answer { read: 2 },
            Jump { index: 2 },
            Answer { read: 3 },
            Answer { read: 4 },
            Answer { read: 5 },
            Window { start: 7, len: 1 },
            Delete {
                index: 0,
                ranged: true,
            },
        ],
    );
}

/// With `recheck_full` off, an invalidation that overtook a full read is lost (as the header
/// says): the full read's answer left the view quiet but stale (empty, claiming the source's
/// end, over a source of one item). A ranged change then reads the item the lost change
/// added as well as its own, one read over "the pages it touches plus one"; the budget opens
/// only on a view that is what the source is, so `ranged_cost` does not judge it. Found by
/// `loader-check --loader --deep --budget 2 --depth 6` (configuration 1).
#[test]
fn a_change_after_a_lost_invalidation_opens_no_ranged_budget() {
    let mut s = settings(0, 1, 1, 0);
    s.config.recheck_full = false;
    s.config.commit_overtaken = false;
    (s.changes, s.moves, s.faults, s.depth) = (2, 2, 2, 6);
    use Event::*;
    let trace = [
        Fail { read: 1 },
        Window { start: 1, len: 1 },
        Insert {
            key: 0,
            ranged: false,
        },
        Repeat { read: 2 },
        Insert {
            key: 0,
            ranged: true,
        },
    ];
    holds(&s, &trace);
    // With the fix on, nothing is lost and the same events stay within the budget.
    s.config.recheck_full = true;
    s.config.commit_overtaken = true;
    holds(&s, &trace);
}

/// A step of a retry's full read succeeded, and the automatic retry count stayed
/// (`retry_reset`).
#[test]
fn a_successful_step_starts_the_retry_count_again() {
    let s = settings(3, 1, 1, 0);
    use Event::*;
    holds(
        &s,
        &[
            Window { start: 1, len: 1 },
            Fail { read: 1 },
            Tick,
            Answer { read: 2 },
        ],
    );
}

/// Changes that are never reported leave a quiet view that is not the source's.
#[test]
fn quiet_view_catches_an_unreported_change() {
    let mut s = settings(1, 1, 2, 0);
    s.fault = Some(HostFault::Unreported);
    fails(
        &s,
        &[
            Event::Answer { read: 1 },
            Event::Insert {
                key: 0,
                ranged: false,
            },
        ],
        Property::QuietView,
    );
}

/// A host that answers backward reads with the items after the cursor shows items twice.
#[test]
fn unique_catches_a_backward_read_answered_forward() {
    let mut s = settings(5, 1, 1, 0);
    s.initial = Some((2, 2));
    s.fault = Some(HostFault::BackwardAfter);
    use Event::*;
    fails(
        &s,
        &[
            Tick,
            Answer { read: 1 },
            Window { start: 1, len: 1 },
            Answer { read: 2 },
        ],
        Property::Unique,
    );
}

/// A host whose every answer repeats its cursor never lets the loader settle.
#[test]
fn progress_catches_a_stalling_source() {
    let mut s = settings(3, 1, 1, 0);
    s.fault = Some(HostFault::Stalling);
    fails(&s, &[], Property::Progress);
}

/// The hosts of issue 35's regressions (a forward read at one cursor answered with its items
/// and its own cursor; reads at one cursor failing for good, its item gone): from every state
/// near the start, the loader waits for the host or settles within `fault_bound` answers.
/// With either fix undone (tests/retry_mutants.rs) the same walks run out of answers.
#[test]
fn progress_with_a_repeated_or_lost_cursor_is_bounded() {
    for mut s in fault_grid(false) {
        s.depth = 3;
        let r = check::check(&[s], false, 1, &|_, _| {});
        assert!(r.violations.is_empty(), "{:?}: {:?}", s.fault, r.violations);
        assert!(r.worst_progress <= s.fault_bound());
        assert!(s.fault_bound() >= s.progress_bound());
    }
}

/// A trace with an event that is not enabled is refused, not run.
#[test]
fn a_trace_must_be_enabled() {
    let s = settings(3, 1, 1, 0);
    fails(&s, &[Event::Answer { read: 9 }], Property::Refused);
}

/// A slice of the quick grid, one configuration per source size, explored whole: every
/// property holds, and the search reaches its depth.
#[test]
fn a_slice_of_the_grid_holds() {
    let g = grid(false);
    let slice: Vec<Settings> = [0, g.len() / 2, g.len() - 1]
        .iter()
        .map(|&i| {
            let mut s = g[i];
            s.depth = 5;
            s
        })
        .collect();
    let r = check::check(&slice, false, 2, &|_, _| {});
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.configurations, slice.len());
    assert!(r.states > 100, "{} states", r.states);
}

/// Every property has a name `loader-check --loader` prints, and the names differ.
#[test]
fn property_names_are_distinct() {
    let mut names: Vec<&str> = Property::ALL.iter().map(|p| p.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Property::ALL.len());
}

/// A far move after a jump whose repair failed resumed the failed read (at the jump's
/// cursor) though `locate` gave the far target's cursor; a far move made while the jump's
/// read was in flight let that read run on, and issued nothing at its own cursor
/// (`far_start`).
#[test]
fn a_far_move_starts_at_its_cursor_whatever_came_before() {
    let mut s = settings(8, 1, 1, 0);
    s.moves = 2;
    s.locate = true;
    use Event::*;
    let far = WindowLocated {
        start: 7,
        len: 1,
        answer: 0,
    };
    let jump = Jump { index: 4 };
    holds(&s, &[Answer { read: 1 }, jump, Fail { read: 2 }, far]);
    holds(&s, &[Answer { read: 1 }, jump, far]);
}

/// A jump after a page failure left it a page failure: the retry read forward from the
/// jump's cursor and was counted in `retries_page`, though it was not the failed read
/// (`page_retry`).
#[test]
fn a_jump_after_a_page_failure_retries_with_a_full_read() {
    let s = settings(5, 1, 2, 0);
    use Event::*;
    holds(&s, &[Fail { read: 1 }, Jump { index: 2 }, Retry]);
}
