//! Workload 6: heap allocations per event in the steady state.
//!
//! A counting `#[global_allocator]` wraps the system allocator. Each stream is warmed up
//! first (the host's and the loader's buffers reach their steady capacity), then the
//! allocations of a long run are counted and divided by its events. With
//! `LOADER_BENCH_ALLOC_SITES=1` the allocator also captures a backtrace for a sample of the
//! measured allocations and reports, per call site inside the `loader` crate, how many of
//! the sample it made: that says where in `src/` the allocations come from.
//!
//! `cargo bench --bench allocs`; `LOADER_BENCH_QUICK=1` for CI's short run.

// Counting allocations needs a `GlobalAlloc`, whose methods are `unsafe` to implement.
#![allow(unsafe_code)]

#[macro_use]
#[path = "common/counting_alloc.rs"]
mod counting_alloc;

mod common;

use common::{harness, ledgers, stream};
use std::alloc::Layout;
use std::backtrace::Backtrace;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static SAMPLING: AtomicBool = AtomicBool::new(false);
/// Capture one backtrace per this many allocations while sampling.
const SAMPLE_EVERY: u64 = 97;

thread_local! {
    // Set while the allocator itself runs code that allocates (capturing a backtrace), so
    // that those allocations are neither counted nor sampled.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    static SAMPLES: RefCell<Vec<Backtrace>> = const { RefCell::new(Vec::new()) };
}

counting_global_alloc!(Counting);

impl Counting {
    #[inline]
    fn note(&self, layout: Layout) {
        if INSIDE.with(|i| i.get()) {
            return;
        }
        let n = ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        if SAMPLING.load(Relaxed) && n.is_multiple_of(SAMPLE_EVERY) {
            INSIDE.with(|i| i.set(true));
            let bt = Backtrace::force_capture();
            SAMPLES.with(|s| s.borrow_mut().push(bt));
            INSIDE.with(|i| i.set(false));
        }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn counted(run: impl FnOnce()) -> (u64, u64) {
    let (a, b) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
    run();
    (ALLOCS.load(Relaxed) - a, BYTES.load(Relaxed) - b)
}

/// The first frame inside the `loader` crate's `src/`, as `function (file:line)`.
fn site(bt: &Backtrace) -> String {
    let text = format!("{bt}");
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let l = l.trim();
        let Some(func) = l.split_once(": ").map(|(_, f)| f) else {
            continue;
        };
        if !func.starts_with("loader::") {
            continue;
        }
        let at = lines
            .get(i + 1)
            .map(|n| n.trim().trim_start_matches("at "))
            .unwrap_or("");
        let at = at.rsplit_once("/src/").map_or(at, |(_, p)| p);
        return format!("{func} (src/{at})");
    }
    "outside the loader crate (the host or the bench harness)".into()
}

fn report_sites() {
    let samples = SAMPLES.with(|s| std::mem::take(&mut *s.borrow_mut()));
    if samples.is_empty() {
        return;
    }
    let mut by_site: BTreeMap<String, usize> = BTreeMap::new();
    INSIDE.with(|i| i.set(true));
    for bt in &samples {
        *by_site.entry(site(bt)).or_default() += 1;
    }
    INSIDE.with(|i| i.set(false));
    let mut rows: Vec<_> = by_site.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    println!("  call sites ({} sampled allocations):", samples.len());
    for (site, n) in rows {
        println!(
            "    {:>5.1}%  {site}",
            100.0 * n as f64 / samples.len() as f64
        );
    }
}

fn measure(name: &str, events: u64, mut run: impl FnMut(u64), mix: impl Fn() -> String) {
    let sites = std::env::var_os("LOADER_BENCH_ALLOC_SITES").is_some();
    SAMPLING.store(sites, Relaxed);
    let (allocs, bytes) = counted(|| run(events));
    SAMPLING.store(false, Relaxed);
    println!(
        "{name:<46} {:>8.3} allocations/event  {:>8.1} bytes/event  ({events} events; {})",
        allocs as f64 / events as f64,
        bytes as f64 / events as f64,
        mix()
    );
    if sites {
        report_sites();
    }
}

fn main() {
    if !harness::benching("workload 6") {
        return;
    }
    let quick = harness::quick();
    let (warm, events) = if quick {
        (20_000, 200_000)
    } else {
        (200_000, 2_000_000)
    };
    println!(
        "== workload 6: heap allocations per event, steady state (after {warm} warm-up events) =="
    );
    for pages in [10u64, 100, 100_000] {
        let mut s = stream::Stream::new(pages);
        s.run(warm);
        s.reset_counts();
        let n = if pages >= 100_000 { events / 2 } else { events };
        let cell = RefCell::new(&mut s);
        measure(
            &format!("loader, view {pages} pages"),
            n,
            |n| cell.borrow_mut().run(n),
            || cell.borrow().mix_line(),
        );
    }
    let mut l = ledgers::LStream::new(ledgers::Production::default());
    l.run(warm);
    l.reset_counts();
    let cell = RefCell::new(&mut l);
    measure(
        "ledger alone (workload 1's ledger calls)",
        events,
        |n| cell.borrow_mut().run(n),
        || cell.borrow().mix_line(),
    );
    println!("target: 0 allocations/event (amortised) in the steady state");
}
