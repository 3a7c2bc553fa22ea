//! A regression of the simulation's bound check: a failed repair read not yet retired, kept
//! for its retry, was counted against the bound as the resume's pages but measured as its
//! request's, so short pages overlapping the window were not allowed for it ("a failed read
//! kept for its retry holds 8 staged pages, over the bound 7"), where the same pages were
//! within the bound a step before, while the repair ran.

#![cfg(feature = "testing")]

use loader::sim::Op::*;
use loader::sim::{Host, Op, Source};
use loader::Config;

#[test]
fn a_failed_repair_kept_for_its_retry_is_bounded_as_it_was_running() {
    let cfg = Config {
        page_size: 5,
        prefetch_distance: 2,
        drop_margin: 0,
        max_pages: 0,
        max_auto_retries: 0,
        ..Config::default()
    };
    let src = Source::with_items(38, 5);
    let ops: Vec<Op> = vec![
        DeleteRanged { index: 0 },
        InsertRanged { key: 36 },
        WindowLocated {
            start: 84,
            len: 1,
            answer: 8,
        },
        Deliver {
            index: 1364,
            fresh: false,
        },
        Window { start: 35, len: 14 },
        Invalidate,
        WindowLocated {
            start: 0,
            len: 1,
            answer: 199,
        },
        Fail { index: 0 },
        Append { items: 3 },
        Deliver {
            index: 0,
            fresh: false,
        },
        Hide { mask: 74 },
        Deliver {
            index: 0,
            fresh: false,
        },
        Retry,
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Fail { index: 0 },
        Retry,
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Insert { key: 4 },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Abandon { index: 0 },
        Deliver {
            index: 0,
            fresh: false,
        },
        Window { start: 0, len: 25 },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        WindowLocated {
            start: 1,
            len: 19,
            answer: 0,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Deliver {
            index: 0,
            fresh: false,
        },
        Fail { index: 0 },
    ];
    let mut h = Host::new(cfg, src).with_costs();
    h.apply(Op::Window { start: 0, len: 20 }).unwrap();
    for (i, &op) in ops.iter().enumerate() {
        if let Err(v) = h.apply(op) {
            panic!("op {i} ({op:?}): {v:?}");
        }
    }
    // The last op failed the repair's read: its pages are kept for the retry to resume.
    assert!(h
        .loader
        .explain()
        .contains("resumes the repair at its failed read"));
    assert_eq!(h.loader.staged_spans().len(), 8);
}
