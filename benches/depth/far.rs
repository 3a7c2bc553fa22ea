//! Far moves at depth: what a window moved far from the held pages reads, and the most
//! acquisitions held on the way. Counts, not timings.
//!
//! - `far/back-to-top`: scrolled to the depth in window steps (`max_pages` 8), then one move
//!   back to 0: the origin (the source's start at position 0) is known;
//! - `far/memo`: from there, one move back to half the depth, a position visited before:
//!   the memo has the cursor of the page that started there;
//! - `far/locate`: a loader at the top moved to the depth in one step, with the host's
//!   `locate` (here exact, as an indexed count or an `OFFSET` query would be);
//! - `far/walk`: the same move without `locate`, the walk: it reads the distance, and the
//!   most held stays within the bound;
//! - `far/walk+repair`: the walk again, with an invalidation when it is half way: the repair
//!   that lands during it holds only the window's share.
//!
//! The first three read at most window + 2·prefetch + 2·page items; the walks hold at most
//! the header's bound: max(max_pages, the pages the window plus prefetch overlaps) + 1 (a
//! finite read in flight) + ceil((window + 2·prefetch) / page) + 2 (one repair's staged
//! pages).

use super::common::geometry::{config, PAGE, PREFETCH, WINDOW};
use super::common::numbered::cursor_at;
use super::{new_host, recovery, row, Row, MAX_PAGES};

/// The header's bound on the acquisitions held, at this geometry and `MAX_PAGES`.
pub const BOUND: usize = {
    let overlap = (WINDOW + 2 * PREFETCH).div_ceil(PAGE as u64) as usize + 1;
    let view = if (MAX_PAGES as usize) > overlap {
        MAX_PAGES as usize
    } else {
        overlap
    };
    let staged = (WINDOW + 2 * PREFETCH).div_ceil(PAGE as u64) as usize + 2;
    view + 1 + staged
};

fn walk(r: Row, scrolled: u64) -> Row {
    Row {
        target: format!("<= {BOUND} held"),
        met: r.max_held <= BOUND && r.items == r.served,
        scrolled,
        ..r
    }
}

pub fn rows(depth: u64, len: u64) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut h = new_host(config(MAX_PAGES), len);
    h.set_window(0);
    let mut at = 0;
    while at < depth {
        at = (at + WINDOW).min(depth);
        h.set_window(at);
    }
    let before = h.begin();
    h.set_window(0);
    h.check_view("far/back-to-top")?;
    rows.push(recovery(depth, "far/back-to-top", &h, before));
    let before = h.begin();
    h.set_window(depth / 2);
    h.check_view("far/memo")?;
    rows.push(recovery(depth, "far/memo", &h, before));

    let mut h = new_host(config(MAX_PAGES), len);
    h.set_window(0);
    let before = h.begin();
    let mut locate = |position: u64, out: &mut Vec<u8>| {
        out.extend_from_slice(&cursor_at(position));
        true
    };
    h.loader
        .set_window_located(depth, WINDOW, &mut locate)
        .map_err(|e| format!("far/locate: {e}"))?;
    h.run();
    h.check_view("far/locate")?;
    rows.push(recovery(depth, "far/locate", &h, before));

    let mut h = new_host(config(MAX_PAGES), len);
    h.set_window(0);
    let before = h.begin();
    h.set_window(depth);
    h.check_view("far/walk")?;
    rows.push(walk(row(depth, "far/walk", &h, before, 0), depth));

    let mut h = new_host(config(MAX_PAGES), len);
    h.set_window(0);
    let before = h.begin();
    h.loader
        .set_window(depth, WINDOW)
        .map_err(|e| format!("far/walk+repair: {e}"))?;
    h.effects();
    let mut invalidated = false;
    while let Some(read) = h.reads.pop_front() {
        h.settle(read);
        if !invalidated && h.loader.covered().1 >= depth / 2 {
            h.loader.invalidate().map_err(|e| e.to_string())?;
            h.effects();
            invalidated = true;
        }
    }
    h.check_view("far/walk+repair")?;
    rows.push(walk(row(depth, "far/walk+repair", &h, before, 0), depth));
    Ok(rows)
}
