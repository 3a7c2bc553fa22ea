//! Recording's cost: workload 1's stream (benches/steady.rs) replayed by a host that only
//! makes the calls, on a loader that records its run to a file and on one that does not, in
//! the same run; rounds alternate the two. Reports events per second of each, their ratio,
//! and the log's bytes per event. The ratio is judged: recording must keep at least
//! `MIN_RATIO` of the unrecorded rate.
//!
//! `cargo bench --bench record` (`make bench-record`); `LOADER_BENCH_QUICK=1` for a short run.

mod common;

use common::{harness, stream};
use std::fs::File;
use std::time::Instant;

/// The view: workload 1's.
const PAGES: u64 = 100;
/// Recording may cost at most this share of the rate: events/s recording over not.
const MIN_RATIO: f64 = 0.5;

/// Times `calls` replayed on a fresh stream loader, recording to `path` if given; returns
/// ns per event, and the log's size (after the loader's close flushed it).
fn round(calls: &[stream::Call], path: Option<&std::path::Path>) -> (f64, u64) {
    let s = match path {
        Some(p) => {
            let file = File::create(p).expect("the log file");
            stream::Stream::recorded_to(PAGES, Box::new(file))
        }
        None => stream::Stream::new(PAGES),
    };
    let mut r = stream::Replay::new(s.loader);
    let t = Instant::now();
    r.run(calls);
    r.loader.flush_recording();
    let ns = t.elapsed().as_nanos() as f64 / calls.len() as f64;
    std::hint::black_box(r.released_xor);
    r.loader.close();
    r.loader.flush_recording();
    (
        ns,
        path.map_or(0, |p| std::fs::metadata(p).expect("the log").len()),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if !harness::benching("record") {
        return;
    }
    let quick = harness::quick();
    let (events, rounds) = if quick { (20_000, 3) } else { (200_000, 9) };
    let calls = stream::recorded(PAGES, events);
    let dir = std::env::temp_dir().join(format!("loader-record-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("stream.log");
    let (mut off, mut on) = (Vec::new(), Vec::new());
    let mut bytes = 0;
    for _ in 0..rounds {
        off.push(round(&calls, None).0);
        let (ns, b) = round(&calls, Some(&path));
        on.push(ns);
        bytes = b;
    }
    if std::env::var_os("LOADER_BENCH_KEEP").is_some() {
        let _ = std::fs::copy(&path, "/tmp/stream.log");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (off, on) = (median(off), median(on));
    let ratio = off / on;
    println!(
        "record: workload 1's stream, view {PAGES} pages, {events} events, median of {rounds} rounds each"
    );
    println!(
        "  not recording   {:>8.1} ns/event  {:>12.0} events/s",
        off,
        1e9 / off
    );
    println!(
        "  recording       {:>8.1} ns/event  {:>12.0} events/s   {:.1} log bytes/event",
        on,
        1e9 / on,
        bytes as f64 / events as f64
    );
    println!(
        "  ratio (events/s recording / not): {ratio:.2}; target at least {MIN_RATIO}: {}",
        if ratio >= MIN_RATIO { "met" } else { "missed" }
    );
}
