//! Runs workload 1's stream outside criterion, for a profiler:
//!
//! ```text
//! cargo build --release --example profile_stream
//! valgrind --tool=callgrind --toggle-collect='*Stream*run*' \
//!     target/release/examples/profile_stream 100 200000
//! ```
//!
//! Arguments: view size in pages (default 100), events to run (default 200,000), and `replay`
//! to record the stream and time only its replay (`Replay::run`). Prints the
//! realized mix and the wall time per event, so a profile can be matched with the bench run it
//! explains (the figures to quote come from `cargo bench`).

#[path = "../benches/common/mod.rs"]
mod common;

use common::stream;

fn main() {
    let mut args = std::env::args().skip(1);
    let pages: u64 = args.next().map_or(100, |a| a.parse().expect("pages"));
    let events: u64 = args.next().map_or(200_000, |a| a.parse().expect("events"));
    if args.next().as_deref() == Some("replay") {
        // The library's share: the stream recorded, then replayed by a host that only makes
        // the calls (profile with --toggle-collect='*Replay*run*').
        let calls = stream::recorded(pages, events);
        let mut r = stream::Replay::from_start(pages);
        let t = std::time::Instant::now();
        r.run(&calls);
        let ns = t.elapsed().as_nanos() as f64 / events.max(1) as f64;
        println!(
            "{events} calls replayed in {ns:.1} ns/call (not a benchmark), view {pages} pages"
        );
        std::hint::black_box(r.released_xor);
        return;
    }
    let mut s = stream::Stream::new(pages);
    let t = std::time::Instant::now();
    s.run(events);
    let ns = t.elapsed().as_nanos() as f64 / events.max(1) as f64;
    println!(
        "{events} events in {ns:.1} ns/event (not a benchmark), view {} pages: {}; {} repairs",
        s.view_pages(),
        s.mix_line(),
        s.commits
    );
    std::hint::black_box(s.released_xor);
}
