//! Following a growing log: what an append costs. Counts first, then times.
//!
//! A log of 100,000 items is pinned (`Loader::follow`), window 50, page 50, prefetch 50; items
//! are appended at 100, 1,000 and 10,000 a second for `SECONDS` of simulated time, each
//! reported with `Loader::appended`; the host answers each read `LATENCY_US` after it was
//! issued, from the log as it is then (a local source: a read may return items appended
//! while it was out, and an append may be reported while a read is in flight). Then the user
//! scrolls back 100 windows, one every 10 ms, the appends going on, and returns with
//! `follow(true)`. The same run is repeated reporting each append the way the docs led to
//! before `appended` existed, `invalidate_range(old end cursor, None)` (the baseline).
//!
//! Per rate: items read per item appended (target: at most 1.05 plus page rounding, one page
//! over the items appended), reads per append, the simulated time from an append to the
//! first view whose window shows it (median, 99th percentile), reads and items per scroll
//! move, and the return's reads and items. Then the wall time of one append on this machine
//! (report, answer, new view: median, 99th percentile), with a host that answers at once.
//!
//! `cargo bench --bench follow` (`make bench-follow`); `LOADER_BENCH_QUICK=1` for a short run.
//! Exits non-zero when the cost target is missed.

#[path = "../tests/common/log.rs"]
mod log;

use loader::Config;
use std::process::ExitCode;
use std::time::Instant;

const LEN: u64 = 50;
const PAGE: u32 = 50;
const INITIAL: u64 = 100_000;
const LATENCY_US: u64 = 300;
const RATES: [u64; 3] = [100, 1_000, 10_000];
const MOVES: u64 = 100;

fn config() -> Config {
    Config {
        page_size: PAGE,
        prefetch_distance: 50,
        ..Config::default()
    }
}

fn pct(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() -> ExitCode {
    let quick = std::env::var_os("LOADER_BENCH_QUICK").is_some();
    let seconds = if quick { 1 } else { 10 };
    let mut ok = true;
    println!(
        "follow: {INITIAL} items, window {LEN}, page {PAGE}, prefetch 50, reads answered \
         {LATENCY_US} µs after issue, {seconds} s per rate"
    );
    println!(
        "{:>8} {:>9} {:>10} {:>11} {:>10} {:>9} {:>9} {:>10} {:>10} {:>11} {:>11}",
        "rate/s",
        "appended",
        "items/app",
        "naive i/app",
        "reads/app",
        "fresh p50",
        "fresh p99",
        "reads/move",
        "items/move",
        "return rds",
        "return itms"
    );
    let mut json = Vec::new();
    for rate in RATES {
        let mut r = log::follow_run(
            false,
            config(),
            LEN,
            INITIAL,
            rate,
            seconds,
            LATENCY_US,
            MOVES,
        );
        let naive = log::follow_run(
            true,
            config(),
            LEN,
            INITIAL,
            rate,
            seconds,
            LATENCY_US,
            MOVES,
        );
        let per = r.items_read as f64 / r.appended as f64;
        let naive_per = naive.items_read as f64 / naive.appended as f64;
        let bound = 1.05 + f64::from(PAGE) / r.appended as f64;
        let (p50, p99) = (pct(&mut r.delays, 0.5), pct(&mut r.delays, 0.99));
        println!(
            "{:>8} {:>9} {:>10.3} {:>11.3} {:>10.3} {:>7} µs {:>6} µs {:>10.2} {:>10.1} {:>11} {:>11}",
            rate,
            r.appended,
            per,
            naive_per,
            r.reads as f64 / r.appended as f64,
            p50,
            p99,
            r.move_reads as f64 / r.moves as f64,
            r.move_items as f64 / r.moves as f64,
            r.return_reads,
            r.return_items
        );
        if per > bound || !r.returned {
            println!(
                "  MISSED: {per:.3} items read per item appended (bound {bound:.3}), returned {}",
                r.returned
            );
            ok = false;
        }
        json.push(format!(
            "{{\"rate\":{rate},\"appended\":{},\"items_per_append\":{per:.4},\"naive_items_per_append\":{naive_per:.4},\"reads_per_append\":{:.4},\"fresh_p50_us\":{p50},\"fresh_p99_us\":{p99},\"reads_per_move\":{:.3},\"return_reads\":{},\"return_items\":{}}}",
            r.appended,
            r.reads as f64 / r.appended as f64,
            r.move_reads as f64 / r.moves as f64,
            r.return_reads,
            r.return_items
        ));
    }
    // Wall time of one append, report to fresh view, with a host that answers at once.
    let mut h = log::LogHost::new(config(), INITIAL);
    h.set_window(0, LEN);
    h.follow(true);
    h.run();
    let n = if quick { 2_000 } else { 50_000 };
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        h.append(1);
        h.run();
        let last = h.loader.pages().last().map(|p| p.acquisition);
        std::hint::black_box(last);
        times.push(t.elapsed().as_nanos() as u64);
    }
    assert_eq!(h.window_items().last(), Some(&(h.end - 1)));
    let (w50, w99) = (pct(&mut times, 0.5), pct(&mut times, 0.99));
    println!("one append, reported to fresh view, host answering at once: median {w50} ns, p99 {w99} ns ({n} appends)");
    println!(
        "{{\"follow\":[{}],\"append_wall_ns\":{{\"p50\":{w50},\"p99\":{w99}}}}}",
        json.join(",")
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
