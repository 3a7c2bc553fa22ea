//! Recovery under continuing failures, and progress under a steady
//! stream of invalidations. Counts, not timings.
//!
//! A host drives `Loader` directly (sans-IO: `take_effects`, `settle`, `fail`) over a
//! synthetic numbered source whose cursor is the index of the next item as 8 big-endian bytes
//! (empty: the source's start), answering forward and backward reads, as `benches/depth.rs`
//! does. Page 50, prefetch 50, a window of 100 items. Failures are injected from a seeded
//! generator, so every run of the same code prints the same figures.
//!
//! - **Recovery** (table a): a loader is brought to a window at depth 10^2 to 10^5
//!   (`Loader::jump` on a fresh loader, then `set_window`, failure-free), then the source is
//!   invalidated, and the host answers every read, failing each with probability 0, 1, 5, 10
//!   or 20%, failures continuing through the retries, until the loader is quiescent. When
//!   nothing is outstanding the host ticks its clock to `next_deadline()` (the backoff), or,
//!   when the automatic retries are spent, calls `retry`. It counts the reads issued (each
//!   answered or failed), averaged over `TRIALS` seeded trials, and the worst trial. Target:
//!   at 10%, at most 3x the reads of the failure-free run, at every depth.
//! - **Churn** (table b): `max_pages` 16, a window at item 1,000, 20,000 answers, an
//!   invalidation after every 1, 2, 5 or 10 answers; whenever nothing is outstanding the
//!   user scrolls on by a page, so the stream of answers never stops. A commit is the view changing to a newer epoch's pages: the
//!   ledger's `cover_epoch` rising. It counts commits per 1,000 answers and the most
//!   acquisitions held at any moment. Targets: under an invalidation every 2 answers the view
//!   still commits, and the acquisitions held stay under the bound of docs/DESIGN.md:
//!   max(max_pages, pages overlapping the window ± prefetch) + a repair's staged pages + 1
//!   finite page + the pages of one overtaken repair (the rule that lets an overtaken repair
//!   commit keeps at most one running).
//!
//! - **Scroll** (table c): `max_pages` 8, a window at item 0 scrolled forward 400 pages, one
//!   page at a time, then back to the start the same way; after each move the host answers
//!   every read in order, failing each with probability 0, 1, 5, 10 or 20%, ticking to the
//!   backoff deadline and calling `retry` when the automatic retries are spent, until the
//!   loader is quiescent. It counts reads, items read and reads of the full source, over
//!   `SCROLL_TRIALS` seeded trials, against the failure-free scroll. Each rate runs twice:
//!   with the default config, where a failed page read is retried by reading that page again,
//!   and, as the baseline measured in the same run, with `commit_overtaken` off, whose rules
//!   retry it with a full read (the scroll has no invalidation, so that is all the setting
//!   changes here). Target: at 10%, at most 1.15x the failure-free reads and items, forward
//!   and back.
//!
//! - **Writer near the window** (table d, `liveness/writer.rs`): a writer making 200 ranged
//!   changes a second near the window while reads take 20 ms, 0 or 5% of them failing, the
//!   host retrying after the writer's next changes or at once; then the same writer over
//!   reads of 1 ms, where a failed repair read is retried before the next change (the repair
//!   retry resumes it); the reads and items against the failure-free run at the same read
//!   time, and the retries that resumed a failed repair. Target: at 5%, at most 1.5x the
//!   failure-free reads.
//!
//! It prints the tables and one JSON line, and exits non-zero when a judged target is
//! missed: `make bench-liveness`. Table (b) runs each stream twice: with `commit_overtaken` (the default) and, as the
//! baseline measured in the same run, without it (the seed's rules).

mod common;
#[path = "liveness/writer.rs"]
mod writer;

use common::geometry::{config, PAGE, PREFETCH, WINDOW};
use common::numbered::{cursor_at, Numbered};
use common::rng::Rng;
use common::{harness, host};
use loader::Config;
use std::collections::HashMap;
use std::process::ExitCode;

const DEPTHS: [u64; 4] = [100, 1_000, 10_000, 100_000];
/// Failure rates, in percent of reads.
const RATES: [u64; 5] = [0, 1, 5, 10, 20];
/// Seeded trials per (depth, rate) cell.
const TRIALS: u64 = 200;
/// The target: at 10% failures, at most this many times the failure-free reads.
const RECOVERY_FACTOR: f64 = 3.0;

const SCROLL_MAX_PAGES: u32 = 8;
const SCROLL_PAGES: u64 = 400;
const SCROLL_TRIALS: u64 = 20;
/// The target: at 10% failures, at most this many times the failure-free reads and items.
const SCROLL_FACTOR: f64 = 1.15;

const CHURN_MAX_PAGES: u32 = 16;
const CHURN_ANSWERS: u64 = 20_000;
const CHURN_EVERY: [u64; 4] = [1, 2, 5, 10];
const CHURN_DEPTH: u64 = 1_000;

type Host = host::Host<Numbered>;

impl Host {
    /// Answers reads in order, failing each with probability `percent`, until the loader is
    /// quiescent. Returns the reads it answered or failed.
    fn run_failing(&mut self, rng: &mut Rng, percent: u64) -> u64 {
        let mut reads = 0;
        self.effects();
        loop {
            match self.reads.pop_front() {
                Some(read) => {
                    reads += 1;
                    if rng.percent(percent) {
                        self.fail(read);
                    } else {
                        self.settle(read);
                    }
                }
                None if self.idle() => {}
                None => return reads,
            }
        }
    }
}

/// What one scroll cost: reads, items read, and reads of the full source.
#[derive(Clone, Copy, Default)]
struct Cost {
    reads: u64,
    items: u64,
    full: u64,
}

impl Host {
    /// As `run_failing`, counting items and full reads too.
    fn run_counting(&mut self, rng: &mut Rng, percent: u64, cost: &mut Cost) {
        self.effects();
        loop {
            match self.reads.pop_front() {
                Some(read) => {
                    cost.reads += 1;
                    if read.kind == loader::Kind::Full {
                        cost.full += 1;
                    }
                    if rng.percent(percent) {
                        self.fail(read);
                    } else {
                        cost.items += u64::from(self.settle(read));
                    }
                }
                None if self.idle() => {}
                None => return,
            }
        }
    }
}

/// One cell of table (c): a scroll direction, a failure rate, page retry on or off.
struct Scroll {
    backward: bool,
    percent: u64,
    page_retry: bool,
    cost: Cost,
}

/// Scrolls [`SCROLL_PAGES`] pages forward, one page at a time, then back, failing `percent`
/// of reads, over [`SCROLL_TRIALS`] seeds; returns the mean cost of each direction. Every
/// move must end quiescent with the window covered.
fn scroll(percent: u64, page_retry: bool) -> Result<[Cost; 2], String> {
    let mut sums = [Cost::default(); 2];
    for trial in 0..SCROLL_TRIALS {
        let config = Config {
            commit_overtaken: page_retry,
            ..config(SCROLL_MAX_PAGES)
        };
        let len = (SCROLL_PAGES + 10) * u64::from(PAGE);
        let mut h = Host::new(config, Numbered { len });
        let mut rng = Rng(0x5c_0011 ^ (percent << 32) ^ (trial << 48));
        h.loader.set_window(0, WINDOW).expect("set_window");
        h.run_counting(&mut rng, 0, &mut Cost::default());
        let forward = (1..=SCROLL_PAGES).map(|p| p * u64::from(PAGE));
        let back = (0..SCROLL_PAGES).rev().map(|p| p * u64::from(PAGE));
        for (dir, starts) in [forward.collect::<Vec<_>>(), back.collect()]
            .into_iter()
            .enumerate()
        {
            for start in starts {
                h.loader.set_window(start, WINDOW).expect("set_window");
                h.run_counting(&mut rng, percent, &mut sums[dir]);
                let l = &h.loader;
                if l.revalidating() || l.outstanding_reads() > 0 || !l.ledger().is_quiescent() {
                    return Err(format!("scroll {percent}%: not quiescent at {start}"));
                }
                let (from, to) = l.covered();
                if from > start.saturating_sub(PREFETCH) || to < start + WINDOW + PREFETCH {
                    return Err(format!(
                        "scroll {percent}%, trial {trial}: window at {start}, covered {from}..{to}"
                    ));
                }
            }
        }
    }
    Ok(sums)
}

impl Scroll {
    fn mean(v: u64) -> f64 {
        v as f64 / SCROLL_TRIALS as f64
    }
}

/// Table (c): every direction, rate and setting; then the ratios to the failure-free scroll of
/// the same direction and setting, and whether the target is met.
fn scroll_table() -> Result<(Vec<Scroll>, bool), String> {
    let mut cells = Vec::new();
    for page_retry in [true, false] {
        for percent in RATES {
            let [fwd, back] = scroll(percent, page_retry)?;
            for (backward, cost) in [(false, fwd), (true, back)] {
                cells.push(Scroll {
                    backward,
                    percent,
                    page_retry,
                    cost,
                });
            }
        }
    }
    let base = |c: &Scroll| {
        cells
            .iter()
            .find(|b| b.percent == 0 && b.backward == c.backward && b.page_retry == c.page_retry)
            .map(|b| b.cost)
            .unwrap_or_default()
    };
    println!(
        "\n== liveness (c): a scroll of {SCROLL_PAGES} pages, one page at a time, forward then back \
         (page {PAGE}, prefetch {PREFETCH}, window {WINDOW}, max_pages {SCROLL_MAX_PAGES}; \
         mean of {SCROLL_TRIALS} seeded trials) =="
    );
    println!(
        "{:>8}  {:>5}  {:>11}  {:>8} {:>6}  {:>9} {:>6}  {:>10}  {:<24} verdict",
        "scroll", "fail%", "page retry", "reads", "x 0%", "items", "x 0%", "full reads", "target"
    );
    let mut met = true;
    for c in &cells {
        let b = base(c);
        let reads_x = c.cost.reads as f64 / b.reads as f64;
        let items_x = c.cost.items as f64 / b.items as f64;
        let judged = c.percent == 10 && c.page_retry;
        let ok = reads_x <= SCROLL_FACTOR && items_x <= SCROLL_FACTOR;
        if judged {
            met &= ok;
        }
        println!(
            "{:>8}  {:>5}  {:>11}  {:>8.1} {:>6.3}  {:>9.1} {:>6.3}  {:>10.1}  {:<24} {}",
            if c.backward { "back" } else { "forward" },
            c.percent,
            if c.page_retry { "on" } else { "off" },
            Scroll::mean(c.cost.reads),
            reads_x,
            Scroll::mean(c.cost.items),
            items_x,
            Scroll::mean(c.cost.full),
            if judged {
                format!("<= {SCROLL_FACTOR}x reads and items")
            } else {
                String::new()
            },
            if judged { harness::verdict(ok) } else { "" }
        );
    }
    println!("(off: commit_overtaken false, whose rules retry a failed page with a full read, in the same run)");
    Ok((cells, met))
}

/// The config of the churn stream. `Config.commit_overtaken` is on by default once it exists;
/// to measure the loader without it, set it here.
fn churn_config() -> Config {
    config(CHURN_MAX_PAGES)
}

/// A quiescent loader showing the window at `depth`, reached by a jump.
fn at_depth(config: Config, depth: u64, len: u64) -> Host {
    let mut h = Host::new(config, Numbered { len });
    h.loader.jump(&cursor_at(depth), depth).expect("jump");
    h.loader.set_window(depth, WINDOW).expect("set_window");
    h.run_failing(&mut Rng(0), 0);
    h
}

/// One cell of table (a).
struct Recovery {
    depth: u64,
    percent: u64,
    mean: f64,
    worst: u64,
    resumed: u64,
    ok: bool,
}

/// The reads an invalidation's recovery needs at `depth`, with `percent` of reads failing,
/// over [`TRIALS`] seeds. Every trial must end quiescent with the window covered.
fn recovery(depth: u64, percent: u64) -> Result<Recovery, String> {
    let mut total = 0;
    let mut worst = 0;
    let mut resumed = 0;
    for trial in 0..TRIALS {
        let mut h = at_depth(config(0), depth, depth + 1_000);
        let mut rng = Rng(depth ^ (percent << 32) ^ (trial << 48));
        let before = h.loader.stats().resumed;
        h.loader.invalidate().expect("invalidate");
        let reads = h.run_failing(&mut rng, percent);
        let l = &h.loader;
        if l.revalidating() || l.outstanding_reads() > 0 || !l.ledger().is_quiescent() {
            return Err(format!("depth {depth}, {percent}%: not quiescent"));
        }
        let (from, to) = l.covered();
        if from > depth - PREFETCH.min(depth) || to < depth + WINDOW + PREFETCH {
            return Err(format!(
                "depth {depth}, {percent}%, trial {trial}: covered {from}..{to}"
            ));
        }
        total += reads;
        worst = worst.max(reads);
        resumed += l.stats().resumed - before;
    }
    Ok(Recovery {
        depth,
        percent,
        mean: total as f64 / TRIALS as f64,
        worst,
        resumed,
        ok: true,
    })
}

/// One row of table (b).
struct Churn {
    every: u64,
    invalidations: u64,
    commits: u64,
    max_held: usize,
    bound: usize,
}

impl Churn {
    fn per_thousand(&self) -> f64 {
        self.commits as f64 * 1_000.0 / CHURN_ANSWERS as f64
    }

    fn met(&self) -> bool {
        let commits = self.every != 2 || self.commits > 0;
        commits && self.max_held <= self.bound
    }
}

/// The bound on acquisitions held (docs/DESIGN.md), for the churn config.
fn churn_bound() -> usize {
    let page = u64::from(PAGE);
    let overlap = (WINDOW + 2 * PREFETCH).div_ceil(page) as usize + 1;
    let view = (CHURN_MAX_PAGES as usize).max(overlap);
    let staged = ((WINDOW + PREFETCH).div_ceil(page) + 1 + PREFETCH.div_ceil(page)) as usize;
    view + staged + 1 + staged
}

/// A steady stream of `CHURN_ANSWERS` answers with an invalidation after every `every`, with
/// `commit_overtaken` on or off.
fn churn(every: u64, commit_overtaken: bool) -> Churn {
    // Long enough for every answer to be a page scrolled.
    let len = CHURN_DEPTH + 2 * u64::from(PAGE) * CHURN_ANSWERS;
    let config = Config {
        commit_overtaken,
        ..churn_config()
    };
    let mut h = at_depth(config, CHURN_DEPTH, len);
    h.max_held = h.held.len();
    let (mut answers, mut invalidations, mut commits) = (0, 0, 0);
    let mut cover = h.loader.ledger().cover_epoch();
    while answers < CHURN_ANSWERS {
        match h.reads.pop_front() {
            Some(read) => {
                h.settle(read);
                answers += 1;
                if answers % every == 0 {
                    h.loader.invalidate().expect("invalidate");
                    invalidations += 1;
                    h.effects();
                }
            }
            None if h.idle() => {}
            None => {
                // Quiet: the user scrolls on by a page, so the stream of answers goes on.
                let (start, _) = h.loader.window();
                h.loader
                    .set_window(start + u64::from(PAGE), WINDOW)
                    .expect("set_window");
                h.effects();
            }
        }
        let now = h.loader.ledger().cover_epoch();
        commits += u64::from(now > cover);
        cover = now;
    }
    Churn {
        every,
        invalidations,
        commits,
        max_held: h.max_held,
        bound: churn_bound(),
    }
}

fn main() -> ExitCode {
    if !harness::benching("liveness") {
        return ExitCode::SUCCESS;
    }
    println!(
        "== liveness (a): reads to quiescence after an invalidation, failures continuing \
         (page {PAGE}, prefetch {PREFETCH}, window {WINDOW}; mean and worst of {TRIALS} seeded trials) =="
    );
    println!(
        "{:>7}  {:>5}  {:>8} {:>6} {:>8} {:>9}  {:<22} verdict",
        "depth", "fail%", "reads", "worst", "resumed", "x 0%", "target"
    );
    let mut cells = Vec::new();
    for depth in DEPTHS {
        for percent in RATES {
            match recovery(depth, percent) {
                Ok(c) => cells.push(c),
                Err(e) => {
                    eprintln!("liveness: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let bases: HashMap<u64, f64> = cells
        .iter()
        .filter(|c| c.percent == 0)
        .map(|c| (c.depth, c.mean))
        .collect();
    let base = |depth: u64| bases.get(&depth).copied().unwrap_or(f64::NAN);
    for c in &mut cells {
        if c.percent == 10 {
            c.ok = c.mean <= RECOVERY_FACTOR * base(c.depth);
        }
    }
    for c in &cells {
        let (target, verdict) = match c.percent {
            10 => (
                format!("<= {RECOVERY_FACTOR}x the 0% reads"),
                harness::verdict(c.ok),
            ),
            _ => (String::new(), ""),
        };
        println!(
            "{:>7}  {:>5}  {:>8.2} {:>6} {:>8} {:>9.2}  {:<22} {}",
            c.depth,
            c.percent,
            c.mean,
            c.worst,
            c.resumed,
            c.mean / base(c.depth),
            target,
            verdict
        );
    }

    println!(
        "\n== liveness (b): commits and acquisitions held under a stream of invalidations \
         ({CHURN_ANSWERS} answers, page {PAGE}, window {WINDOW} at item {CHURN_DEPTH}, prefetch {PREFETCH}, \
         max_pages {CHURN_MAX_PAGES}) =="
    );
    println!(
        "{:>11}  {:>13} {:>8} {:>14} {:>9} {:>6}  {:>13} {:>13}  verdict",
        "invalidate",
        "invalidations",
        "commits",
        "per 1k answers",
        "max held",
        "bound",
        "commits (off)",
        "held (off)"
    );
    let rows: Vec<Churn> = CHURN_EVERY.iter().map(|&e| churn(e, true)).collect();
    let baseline: Vec<Churn> = CHURN_EVERY.iter().map(|&e| churn(e, false)).collect();
    for (r, b) in rows.iter().zip(&baseline) {
        println!(
            "{:>11}  {:>13} {:>8} {:>14.2} {:>9} {:>6}  {:>13} {:>13}  {}",
            format!("every {}", r.every),
            r.invalidations,
            r.commits,
            r.per_thousand(),
            r.max_held,
            r.bound,
            b.commits,
            b.max_held,
            harness::verdict(r.met())
        );
    }
    println!("(off: commit_overtaken false, the seed's rules, in the same run)");

    let (scrolls, scroll_met) = match scroll_table() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("liveness: {e}");
            return ExitCode::FAILURE;
        }
    };

    println!(
        "== liveness (d): a writer near the window, {} ranged changes at 200/s, reads of {} or {} ms (page 50, prefetch 50, window [0, 100); mean of {} seeded trials) ==",
        writer::CHANGES,
        writer::SLOW.read_ms,
        writer::FAST.read_ms,
        writer::TRIALS
    );
    let writers = match writer::table() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("liveness: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{:>4}  {:>5}  {:>6}  {:>8} {:>8} {:>8} {:>8}  {:>6}  {:>9}  {:>6}  {:>7}  target",
        "read",
        "fail%",
        "retry",
        "reads",
        "finite",
        "chain",
        "full",
        "x 0%",
        "items",
        "x 0%",
        "resumed"
    );
    // Each row against the failure-free row of its pace.
    let writer_base_of = |w: &writer::Writer| {
        writers
            .iter()
            .find(|b| b.pace.read_ms == w.pace.read_ms && b.percent == 0)
            .map_or((f64::NAN, f64::NAN), |b| (b.reads(), b.items))
    };
    for w in &writers {
        let (writer_base, writer_items) = writer_base_of(w);
        println!(
            "{:>2}ms  {:>5}  {:>6}  {:>8.1} {:>8.1} {:>8.1} {:>8.1}  {:>5.2}x  {:>9.1}  {:>5.2}x  {:>7.1}  {}",
            w.pace.read_ms,
            w.percent,
            if w.prompt { "prompt" } else { "later" },
            w.reads(),
            w.issued[0],
            w.issued[1],
            w.issued[2],
            w.reads() / writer_base,
            w.items,
            w.items / writer_items,
            w.resumed,
            if w.percent == 0 {
                String::new()
            } else {
                let ok = w.reads() / writer_base <= writer::FACTOR;
                format!("<= {}x reads {}", writer::FACTOR, harness::verdict(ok))
            }
        );
    }
    let writer_met = writers
        .iter()
        .all(|w| w.reads() / writer_base_of(w).0 <= writer::FACTOR);

    let recovery_met = cells.iter().all(|c| c.ok);
    let churn_met = rows.iter().all(Churn::met);
    let json = serde_json::json!({
        "bench": "liveness",
        "page_size": PAGE,
        "prefetch": PREFETCH,
        "window": WINDOW,
        "trials": TRIALS,
        "recovery": cells.iter().map(|c| serde_json::json!({
            "depth": c.depth,
            "fail_percent": c.percent,
            "mean_reads": c.mean,
            "worst_reads": c.worst,
            "resumed": c.resumed,
            "ratio_to_failure_free": c.mean / base(c.depth),
        })).collect::<Vec<_>>(),
        "recovery_met": recovery_met,
        "churn_answers": CHURN_ANSWERS,
        "churn_max_pages": CHURN_MAX_PAGES,
        "churn": rows.iter().map(|r| serde_json::json!({
            "invalidate_every": r.every,
            "invalidations": r.invalidations,
            "commits": r.commits,
            "commits_per_1000_answers": r.per_thousand(),
            "max_held": r.max_held,
            "bound": r.bound,
            "met": r.met(),
        })).collect::<Vec<_>>(),
        "churn_baseline_commit_overtaken_off": baseline.iter().map(|r| serde_json::json!({
            "invalidate_every": r.every,
            "commits": r.commits,
            "max_held": r.max_held,
        })).collect::<Vec<_>>(),
        "churn_met": churn_met,
        "scroll_pages": SCROLL_PAGES,
        "scroll_max_pages": SCROLL_MAX_PAGES,
        "scroll_trials": SCROLL_TRIALS,
        "scroll": scrolls.iter().map(|c| serde_json::json!({
            "direction": if c.backward { "back" } else { "forward" },
            "fail_percent": c.percent,
            "page_retry": c.page_retry,
            "mean_reads": Scroll::mean(c.cost.reads),
            "mean_items": Scroll::mean(c.cost.items),
            "mean_full_reads": Scroll::mean(c.cost.full),
        })).collect::<Vec<_>>(),
        "scroll_met": scroll_met,
        "writer_met": writer_met,
        "writer_changes": writer::CHANGES,
        "writer_trials": writer::TRIALS,
        "writer": writers.iter().map(|w| serde_json::json!({
            "read_ms": w.pace.read_ms,
            "fail_percent": w.percent,
            "prompt_retry": w.prompt,
            "mean_reads": w.reads(),
            "mean_finite": w.issued[0],
            "mean_chain": w.issued[1],
            "mean_full": w.issued[2],
            "mean_items": w.items,
            "mean_resumed": w.resumed,
            "ratio_to_failure_free": w.reads() / writer_base_of(w).0,
        })).collect::<Vec<_>>(),
    });
    println!("{json}");
    let missed = !recovery_met || !churn_met || !scroll_met || !writer_met;
    if missed {
        eprintln!("liveness: a target was missed");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
