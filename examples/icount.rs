//! The workloads whose instruction counts `make icount-check` gates (scripts/icount.py): each
//! sets up outside `icount_region` and runs its measured part inside it, so
//! `valgrind --tool=callgrind --toggle-collect='*icount_region*'` counts that part alone.
//!
//! ```text
//! cargo build --release --example icount
//! target/release/examples/icount WORKLOAD N
//! ```
//!
//! Workloads (N is the unit each is divided by):
//! - `stream N`: workload 1's stream, N events, under its live host (view of 100 pages);
//! - `replay N`: the same stream recorded, then N of its calls replayed by a host that only
//!   makes the calls (the library's share);
//! - `ledger N`: workload 1's ledger calls against the bare `Ledger`, N events;
//! - `far N`: N far moves between two depths of a 10^6-item source, each answered until quiet
//!   (the memo knows both cursors: the move starts there);
//! - `ranged N`: N ranged changes of one item inside the window, each repaired until quiet.
//!
//! Prints the units run, so the script can divide; the counts are the figures, not a time.

#[path = "../benches/common/mod.rs"]
#[allow(dead_code)]
mod common;

use common::geometry::{config, WINDOW};
use common::host::Host;
use common::numbered::{cursor_at, index_of, Numbered};
use common::{ledgers, stream};
use std::cmp::Ordering;
use std::hint::black_box;

/// The measured part: the only code callgrind counts.
#[inline(never)]
fn icount_region<T>(f: impl FnOnce() -> T) -> T {
    f()
}

fn compare(a: &[u8], b: &[u8]) -> Ordering {
    index_of(a).cmp(&index_of(b))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().expect("usage: icount WORKLOAD N");
    let n: u64 = args.next().map_or(10_000, |a| a.parse().expect("N"));
    match workload.as_str() {
        "stream" => {
            let mut s = stream::Stream::new(100);
            s.run_until_commits(2);
            icount_region(|| s.run(n));
            black_box(s.released_xor);
        }
        "replay" => {
            let calls = stream::recorded(100, n);
            let mut r = stream::Replay::from_start(100);
            icount_region(|| r.run(&calls));
            black_box(r.released_xor);
        }
        "ledger" => {
            let mut l = ledgers::LStream::new(ledgers::Production::default());
            l.run(10_000);
            icount_region(|| l.run(n));
            black_box(l.mix_line());
        }
        "far" => {
            let mut h = Host::new(config(8), Numbered { len: 1_000_000 });
            let depths = [0, 600_000];
            for &d in &depths {
                h.loader.set_window(d, WINDOW).expect("window");
                h.run();
            }
            icount_region(|| {
                for i in 0..n {
                    let d = depths[(i % 2) as usize];
                    h.loader.set_window(d, WINDOW).expect("window");
                    h.run();
                }
            });
            assert!(h.check_quiet("far").is_ok());
        }
        "ranged" => {
            let mut h = Host::new(config(8), Numbered { len: 1_000_000 });
            h.loader.set_window(500_000, WINDOW).expect("window");
            h.run();
            icount_region(|| {
                for i in 0..n {
                    let at = cursor_at(500_010 + (i % 80));
                    h.loader
                        .invalidate_range(&at, Some(&at), &mut compare)
                        .expect("invalidate_range");
                    h.run();
                }
            });
            assert!(h.check_quiet("ranged").is_ok());
        }
        other => panic!("unknown workload {other}"),
    }
    println!("{workload} {n}");
}
