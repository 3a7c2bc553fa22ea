//! What a recovery costs at depth. Counts, not timings.
//!
//! A host drives `Loader` directly (sans-IO: `take_effects`, `settle`) over a synthetic
//! numbered source whose cursor is the index of the next item as 8 big-endian bytes (empty:
//! the source's start), answering forward and backward reads. Page 50, prefetch 50, a
//! window of 100 items, at window depths 10^3 to 10^6. For each depth it counts the items
//! read (the loader's `Stats.items_read` delta and the host's own tally, which must agree),
//! the items read twice within one case, and the most acquisitions the loader held at any
//! moment, for:
//!
//! - `top-anchored`: a loader started at the source's start with its window at the depth.
//!   It reads from item 0 to the window's end plus prefetch, which is what any recovery
//!   anchored at the source's start must read, for comparison;
//! - `invalidate`: a whole invalidation of a loaded view at the depth;
//! - `fail+retry`: an invalidation whose repair fails at its first read, then `retry`;
//! - `jump`: `Loader::jump` from the depth to half of it;
//! - `scroll-down`: from the top to the depth in window-sized steps, `max_pages` 8;
//! - `scroll-up`: back to the top from the depth in window-sized steps, `max_pages` 8, the
//!   depth reached by a jump (`scroll-up/jumped`) or by `scroll-down` (`scroll-up/scrolled`).
//!
//! Targets: each recovery (`invalidate`, `fail+retry`, `jump`) reads at
//! most window + 2·prefetch + 2·page_size items, at every depth; a scroll reads no item twice
//! and at most one item per item scrolled, holding at most max(max_pages, the pages the
//! window plus prefetch overlaps) + 1 acquisitions (the page just accepted, before the
//! loader trims). After every case the view must be the source's slice around the window,
//! with true positions, and the loader must hold exactly the acquisitions it shows. It
//! prints a table and one JSON line, and exits non-zero when a target is missed or a view is
//! wrong, so it is a check: `make bench-depth`.
//!
//! The far rows (a move far from the held pages: back to the top, back to a position visited
//! before, with the host's `locate`, and the walk without any of them, with and without a
//! repair landing on the way) are in `depth/far.rs`.
//!
//! The ranged rows (what one repair reads after one row changes in a held view of 10^4
//! pages, ranged against whole) are measured over a keyed source in `depth/ranged.rs`, and
//! printed in a second table; the JSON line carries them under `ranged`.

mod common;
#[path = "depth/far.rs"]
mod far;
#[path = "depth/ranged.rs"]
mod ranged;

use common::geometry::{config, PAGE, PREFETCH, WINDOW};
use common::harness;
use common::host::{self, Source};
use common::numbered::{cursor_at, Numbered};
use loader::{Config, Read};
use std::process::ExitCode;

const MAX_PAGES: u32 = 8;
const DEPTHS: [u64; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// The bound on the items one recovery reads.
const TARGET: u64 = WINDOW + 2 * PREFETCH + 2 * PAGE as u64;

/// The numbered source, with this case's tallies of what it handed over.
struct Tallied {
    numbered: Numbered,
    served: u64,
    read_twice: u64,
    /// Items served in this case, one bit each, to find an item read twice.
    seen: Vec<u64>,
}

impl Source for Tallied {
    type Held = (u64, u32);

    fn answer(&mut self, read: &Read) -> ((u64, u32), u32, Vec<u8>, bool) {
        let answer @ ((first, _), count, _, _) = self.numbered.answer(read);
        self.served += u64::from(count);
        for i in first..first + u64::from(count) {
            let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
            self.read_twice += u64::from(self.seen[word] & bit != 0);
            self.seen[word] |= bit;
        }
        answer
    }
}

type Host = host::Host<Tallied>;

fn new_host(config: Config, len: u64) -> Host {
    Host::new(
        config,
        Tallied {
            numbered: Numbered { len },
            served: 0,
            read_twice: 0,
            seen: vec![0; len.div_ceil(64) as usize],
        },
    )
}

impl Host {
    /// Starts a case: the tallies restart from what is held now.
    fn begin(&mut self) -> u64 {
        self.source.served = 0;
        self.source.read_twice = 0;
        self.max_held = self.held.len();
        self.source.seen.fill(0);
        self.loader.stats().items_read
    }

    fn set_window(&mut self, start: u64) {
        self.loader.set_window(start, WINDOW).expect("set_window");
        self.run();
    }

    /// A quiescent view must be the source's slice around the window, with true positions.
    fn check_view(&self, case: &str) -> Result<(), String> {
        self.check_quiet(case)?;
        let l = &self.loader;
        let (ws, wl) = l.window();
        let mut at = None;
        for p in l.pages() {
            let (first, count) = self.held[&p.acquisition];
            if p.start != first || p.count != count {
                return Err(format!(
                    "{case}: page at position {} holds items {first}.. ({count})",
                    p.start
                ));
            }
            if at.is_some_and(|a| a != first) {
                return Err(format!("{case}: a gap or an overlap before item {first}"));
            }
            at = Some(first + u64::from(count));
        }
        let (from, to) = l.covered();
        let want = (
            ws.saturating_sub(PREFETCH),
            (ws + wl + PREFETCH).min(self.source.numbered.len),
        );
        if from > want.0 || to < want.1 {
            return Err(format!(
                "{case}: the view covers {from}..{to}, the window plus prefetch is {}..{}",
                want.0, want.1
            ));
        }
        Ok(())
    }
}

/// One measured case at one depth.
struct Row {
    depth: u64,
    case: &'static str,
    /// `Stats.items_read` delta, and the host's own tally.
    items: u64,
    served: u64,
    read_twice: u64,
    max_held: usize,
    /// Items scrolled (scrolls only).
    scrolled: u64,
    target: String,
    met: bool,
}

/// A loader showing the window at `depth`, reached by a jump (nothing read before it).
fn at_depth(depth: u64, len: u64, max_pages: u32) -> Host {
    let mut h = new_host(config(max_pages), len);
    h.loader.jump(&cursor_at(depth), depth).expect("jump");
    h.set_window(depth);
    h
}

/// The row of `case` at `depth`: the items read since `items_before`, and the host's tallies.
fn row(depth: u64, case: &'static str, h: &Host, items_before: u64, scrolled: u64) -> Row {
    Row {
        depth,
        case,
        items: h.loader.stats().items_read - items_before,
        served: h.source.served,
        read_twice: h.source.read_twice,
        max_held: h.max_held,
        scrolled,
        target: String::new(),
        met: false,
    }
}

fn recovery(depth: u64, case: &'static str, h: &Host, items_before: u64) -> Row {
    let r = row(depth, case, h, items_before, 0);
    Row {
        target: format!("<= {TARGET} items"),
        met: r.items <= TARGET && r.items == r.served,
        ..r
    }
}

fn scroll(depth: u64, case: &'static str, h: &Host, items_before: u64, scrolled: u64) -> Row {
    let r = row(depth, case, h, items_before, scrolled);
    // The pages the window plus prefetch overlaps: at most this many (page-aligned here).
    let overlap = (WINDOW + 2 * PREFETCH).div_ceil(PAGE as u64) as usize + 1;
    let bound = (MAX_PAGES as usize).max(overlap) + 1;
    Row {
        target: format!("no item twice, <= 1 per item scrolled, <= {bound} held"),
        met: r.read_twice == 0 && r.items <= scrolled && r.items == r.served && r.max_held <= bound,
        ..r
    }
}

fn measure(depth: u64) -> Result<Vec<Row>, String> {
    let len = 2 * depth + 1_000;
    let mut rows = Vec::new();

    // What a recovery anchored at the source's start reads: from item 0 to the window's
    // end plus prefetch.
    let mut h = new_host(config(0), len);
    let before = h.begin();
    h.set_window(depth);
    h.check_view("top-anchored")?;
    let row = recovery(depth, "top-anchored", &h, before);
    rows.push(Row {
        target: "(the old cost model)".into(),
        met: row.items == row.served,
        ..row
    });

    let mut h = at_depth(depth, len, 0);
    h.check_view("setup")?;
    let before = h.begin();
    h.loader.invalidate().expect("invalidate");
    h.run();
    h.check_view("invalidate")?;
    rows.push(recovery(depth, "invalidate", &h, before));

    let before = h.begin();
    h.loader.invalidate().expect("invalidate");
    h.effects();
    let first = h.reads.pop_front().ok_or("fail+retry: no repair read")?;
    h.loader.fail(first.read_id, -1).expect("fail");
    h.effects();
    if !h.reads.is_empty() {
        return Err("fail+retry: a read started before the retry".into());
    }
    if !h.loader.retry().expect("retry") {
        return Err("fail+retry: nothing to retry".into());
    }
    h.run();
    h.check_view("fail+retry")?;
    rows.push(recovery(depth, "fail+retry", &h, before));

    let before = h.begin();
    h.loader
        .jump(&cursor_at(depth / 2), depth / 2)
        .expect("jump");
    h.run();
    h.check_view("jump")?;
    if h.loader.window().0 != depth / 2 {
        return Err("jump: the window did not move".into());
    }
    rows.push(recovery(depth, "jump", &h, before));

    // Scrolling, in window-sized steps, with max_pages.
    let mut h = new_host(config(MAX_PAGES), len);
    h.set_window(0);
    let before = h.begin();
    let mut at = 0;
    while at < depth {
        at = (at + WINDOW).min(depth);
        h.set_window(at);
    }
    h.check_view("scroll-down")?;
    rows.push(scroll(depth, "scroll-down", &h, before, depth));
    let before = h.begin();
    scroll_up(&mut h, depth);
    h.check_view("scroll-up/scrolled")?;
    rows.push(scroll(depth, "scroll-up/scrolled", &h, before, depth));

    let mut h = at_depth(depth, len, MAX_PAGES);
    let before = h.begin();
    scroll_up(&mut h, depth);
    h.check_view("scroll-up/jumped")?;
    rows.push(scroll(depth, "scroll-up/jumped", &h, before, depth));
    rows.extend(far::rows(depth, len)?);
    Ok(rows)
}

fn scroll_up(h: &mut Host, from: u64) {
    let mut at = from;
    while at > 0 {
        at = at.saturating_sub(WINDOW);
        h.set_window(at);
    }
}

fn main() -> ExitCode {
    if !harness::benching("depth") {
        return ExitCode::SUCCESS;
    }
    println!(
        "== depth: items read and acquisitions held at depth (page {PAGE}, prefetch {PREFETCH}, \
         window {WINDOW}; scrolls with max_pages {MAX_PAGES}) =="
    );
    println!(
        "{:>9}  {:<19} {:>9} {:>9} {:>10} {:>6} {:>9}  {:<52} verdict",
        "depth", "case", "items", "host", "per item", "twice", "max held", "target"
    );
    let mut rows = Vec::new();
    for depth in DEPTHS {
        match measure(depth) {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("depth {depth}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    for r in &rows {
        let per = match r.scrolled {
            0 => "-".to_string(),
            s => format!("{:.3}", r.items as f64 / s as f64),
        };
        println!(
            "{:>9}  {:<19} {:>9} {:>9} {:>10} {:>6} {:>9}  {:<52} {}",
            r.depth,
            r.case,
            r.items,
            r.served,
            per,
            r.read_twice,
            r.max_held,
            r.target,
            harness::verdict(r.met)
        );
    }
    println!(
        "\n== ranged: items read per repair after one change in a held view of {} pages \
         (page {PAGE}, prefetch {PREFETCH}, max_pages 0; {} changes per case) ==",
        ranged::PAGES,
        ranged::TRIALS
    );
    let ranged_rows = match ranged::rows() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ranged: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{:<19} {:>7} {:>9} {:>9} {:>11}  {:<36} verdict",
        "case", "repairs", "items", "host", "max/repair", "target"
    );
    for r in &ranged_rows {
        println!(
            "{:<19} {:>7} {:>9} {:>9} {:>11}  {:<36} {}",
            r.case,
            r.repairs,
            r.items,
            r.served,
            r.max,
            r.target,
            harness::verdict(r.met)
        );
    }
    let all = rows.iter().all(|r| r.met) && ranged_rows.iter().all(|r| r.met);
    let json = serde_json::json!({
        "bench": "depth",
        "page_size": PAGE,
        "prefetch": PREFETCH,
        "window": WINDOW,
        "max_pages_scroll": MAX_PAGES,
        "target_items_per_recovery": TARGET,
        "rows": rows.iter().map(|r| serde_json::json!({
            "depth": r.depth,
            "case": r.case,
            "items_read": r.items,
            "host_items": r.served,
            "read_twice": r.read_twice,
            "max_held": r.max_held,
            "scrolled": r.scrolled,
            "met": r.met,
        })).collect::<Vec<_>>(),
        "ranged": {
            "pages_held": ranged::PAGES,
            "changes_per_case": ranged::TRIALS,
            "target_items_per_ranged_repair": ranged::TARGET,
            "rows": ranged_rows.iter().map(|r| serde_json::json!({
                "case": r.case,
                "repairs": r.repairs,
                "items_read": r.items,
                "host_items": r.served,
                "max_items_per_repair": r.max,
                "met": r.met,
            })).collect::<Vec<_>>(),
        },
        "all_met": all,
    });
    println!("{json}");
    if all {
        ExitCode::SUCCESS
    } else {
        eprintln!("depth: a target was missed");
        ExitCode::FAILURE
    }
}
