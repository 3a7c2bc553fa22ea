//! Workload 8: states per second of the model checker at MaxEpoch 3, 5 ids, the
//! model bounds dropped, rules `unifiedMin`: what `loader-check --no-model-bounds
//! --max-epoch 3 --ids 5` explores. Runs the exploration three times (once in quick mode)
//! and prints the median.
//!
//! `cargo bench --bench checker`; `LOADER_BENCH_QUICK=1` for CI's short run.

mod common;

use common::harness;
use loader::model::explore::{explore, Options};
use loader::model::{Bounds, Rules};

fn main() {
    if !harness::benching("workload 8") {
        return;
    }
    let runs = if harness::quick() { 1 } else { 3 };
    let bounds = Bounds {
        max_epoch: 3,
        ids: 5,
        rules: Rules::UnifiedMin,
        model_bounds: false,
    };
    println!("== workload 8: loader-check, unifiedMin, MaxEpoch 3, 5 ids, model bounds dropped ==");
    let mut reports = Vec::new();
    for run in 1..=runs {
        let r = explore(bounds, Options::default()).expect("bounds pack into a word");
        assert!(r.complete, "the exploration ran to the end");
        println!(
            "run {run}: {} distinct states, {} transitions, depth {}, {:.2} s, {:.2} M states/s, {:.1} bytes/state",
            r.distinct_states,
            r.transitions,
            r.depth,
            r.elapsed.as_secs_f64(),
            r.states_per_second() / 1e6,
            r.bytes_per_state
        );
        reports.push(r);
    }
    reports.sort_by_key(|r| r.elapsed);
    let median = &reports[reports.len() / 2];
    let secs = median.elapsed.as_secs_f64();
    println!(
        "median of {runs}: {:.2} s, {:.2} M states/s",
        secs,
        median.states_per_second() / 1e6
    );
    println!(
        "target: the whole run in under 5 s: {} ({secs:.2} s)",
        harness::verdict(secs < 5.0)
    );
}
