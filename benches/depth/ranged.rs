//! The ranged rows of the depth bench: what one repair reads after one row changes in a held
//! view of 10^4 pages, with a ranged invalidation and with a whole one.
//!
//! The source here has stable cursors, as a keyset host's are: its items are keys (even
//! keys 0, 2, 4, … to start with), an item's cursor is its key as 8 big-endian bytes (empty:
//! the source's start), and the host orders cursors by comparing the keys as numbers. A read
//! continues after its cursor's key, so an insert or a delete never shifts the cursors the
//! loader holds, which is what lets it keep the pages around a change. The host answers
//! forward, backward and bounded reads (`Read::until`: keys after the cursor and at or before
//! `until`, at most `limit`).
//!
//! The view: page 50, prefetch 50, `max_pages` 0, the window over the first 10^4 pages less
//! the prefetch, so exactly 10^4 pages (500,000 items) are held. Then, each case repeated at
//! [`TRIALS`] random positions (a fixed seed, so every run measures the same changes):
//!
//! - `insert/ranged`: one odd key inserted between two held items, reported with
//!   `invalidate_range(at, Some(at), cmp)`, `at` the new item's cursor;
//! - `delete/ranged`: one held item deleted, reported the same way (after the inserts, so the
//!   view never falls short of the window plus prefetch and no refill read follows);
//! - `outside/ranged`: one key inserted after the last held page: nothing to re-read;
//! - `invalidate`: a whole invalidation of the same view, for comparison.
//!
//! For each it counts the items read until the loader is quiet again (the loader's
//! `Stats.items_read` delta and the host's tally, which must agree), and checks that every
//! ranged case was one ranged repair and that the view is then the source's first items,
//! page after page, with true positions and no other acquisition held. Target: a ranged
//! repair reads at most 2 pages (100 items); a change outside the held pages reads none.

use crate::common::host::{self, Source};
use loader::{Direction, Read};
use std::cmp::Ordering;

use crate::common::geometry::{config, PAGE, PREFETCH};

/// The held view, in pages.
pub const PAGES: u64 = 10_000;
/// Items held: the view covers exactly these.
const HELD: u64 = PAGES * PAGE as u64;
/// Items after the view, where the `outside` changes land.
const TAIL: u64 = 10_000;
/// Changes per case.
pub const TRIALS: usize = 16;
/// The bound on the items one ranged repair reads: two pages.
pub const TARGET: u64 = 2 * PAGE as u64;

fn cursor_of(key: u64) -> Vec<u8> {
    key.to_be_bytes().to_vec()
}

fn key_of(cursor: &[u8]) -> u64 {
    u64::from_be_bytes(cursor.try_into().expect("an 8-byte cursor"))
}

/// The host's order of two non-empty cursors: their keys, as numbers.
fn compare(a: &[u8], b: &[u8]) -> Ordering {
    key_of(a).cmp(&key_of(b))
}

/// A fixed-seed xorshift: the same random positions every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The source: a sorted key list. An acquisition holds its keys.
struct Keys {
    keys: Vec<u64>,
    /// Items handed over since the last [`Keyed::begin`].
    served: u64,
}

impl Keys {
    /// The index of the first item after `cursor` (empty: the source's start).
    fn after(&self, cursor: &[u8]) -> usize {
        match cursor.len() {
            0 => 0,
            _ => {
                let k = key_of(cursor);
                self.keys.partition_point(|&x| x <= k)
            }
        }
    }

    /// Inserts an odd key right after a key drawn from `from..from + span` that has room after
    /// it, and returns the new key.
    fn insert_after(&mut self, from: usize, span: u64, rng: &mut Rng) -> u64 {
        loop {
            let i = from + rng.below(span) as usize;
            if self.keys[i] + 1 < self.keys[i + 1] {
                self.keys.insert(i + 1, self.keys[i] + 1);
                return self.keys[i + 1];
            }
        }
    }
}

impl Source for Keys {
    type Held = Vec<u64>;

    /// The items `read` asks for, the cursor the next read continues from, and whether the
    /// source's end (forward) or start (backward) was reached.
    fn answer(&mut self, read: &Read) -> (Vec<u64>, u32, Vec<u8>, bool) {
        let at = self.after(&read.cursor);
        let limit = read.limit as usize;
        let (items, next, end) = match read.direction {
            Direction::Forward => {
                let stop = read
                    .until
                    .as_ref()
                    .map_or(self.keys.len(), |u| self.after(u).max(at));
                let end = (at + limit).min(stop);
                let next = match end > at {
                    true => cursor_of(self.keys[end - 1]),
                    false => read.cursor.to_vec(),
                };
                (self.keys[at..end].to_vec(), next, end == self.keys.len())
            }
            Direction::Backward => {
                let from = at.saturating_sub(limit);
                let next = match from {
                    0 => Vec::new(),
                    f => cursor_of(self.keys[f - 1]),
                };
                (self.keys[from..at].to_vec(), next, from == 0)
            }
        };
        self.served += items.len() as u64;
        let count = items.len() as u32;
        (items, count, next, end)
    }
}

/// The host over the keyed source.
type Keyed = host::Host<Keys>;

impl Keyed {
    /// Starts a measurement: returns the loader's `items_read` and `ranged_repairs` now.
    fn begin(&mut self) -> (u64, u64) {
        self.source.served = 0;
        let s = self.loader.stats();
        (s.items_read, s.ranged_repairs)
    }

    /// A quiet view must hold the source's first items, page after page, with true positions,
    /// and the loader exactly the acquisitions it shows.
    fn check_view(&self, case: &str) -> Result<(), String> {
        self.check_quiet(case)?;
        let l = &self.loader;
        let mut at = 0usize;
        for p in l.pages() {
            let items = &self.held[&p.acquisition];
            if p.start != at as u64 || p.count as usize != items.len() {
                return Err(format!(
                    "{case}: page at position {} ({} items) where item {at} was due",
                    p.start, p.count
                ));
            }
            if self.source.keys.get(at..at + items.len()) != Some(&items[..]) {
                return Err(format!("{case}: the page at {at} is not the source's"));
            }
            at += items.len();
        }
        let (from, to) = l.covered();
        if (from, to) != (0, at as u64) || to < HELD {
            return Err(format!(
                "{case}: the view covers {from}..{to}, its pages {at} items"
            ));
        }
        Ok(())
    }
}

/// One measured case: `trials` changes, each followed by the repair it caused.
pub struct Row {
    /// The case's name.
    pub case: &'static str,
    /// Repairs measured.
    pub repairs: usize,
    /// Items read by all of them (`Stats.items_read` delta), and the host's own tally.
    pub items: u64,
    /// The host's own tally of the items it handed over.
    pub served: u64,
    /// The most items one repair read.
    pub max: u64,
    /// The target, in words.
    pub target: String,
    /// Whether it was met.
    pub met: bool,
}

/// Applies `change` `trials` times (it is given the source and the items the view covers, and
/// returns the changed item's key), each time reporting it (`ranged`: with `invalidate_range`
/// naming that key; else `invalidate`) and answering every read until the loader is quiet.
fn measure(
    h: &mut Keyed,
    case: &'static str,
    trials: usize,
    ranged: bool,
    repairs_each: u64,
    mut change: impl FnMut(&mut Keys, u64) -> u64,
) -> Result<Row, String> {
    let (mut items, mut served, mut max) = (0, 0, 0);
    for _ in 0..trials {
        let (read_before, repairs_before) = h.begin();
        let key = change(&mut h.source, h.loader.covered().1);
        if ranged {
            let at = cursor_of(key);
            h.loader
                .invalidate_range(&at, Some(&at), &mut compare)
                .map_err(|e| format!("{case}: {e:?}"))?;
        } else {
            h.loader
                .invalidate()
                .map_err(|e| format!("{case}: {e:?}"))?;
        }
        h.run();
        h.check_view(case)?;
        let s = h.loader.stats();
        if ranged && s.ranged_repairs != repairs_before + repairs_each {
            return Err(format!(
                "{case}: {} ranged repairs, not {repairs_each}",
                s.ranged_repairs - repairs_before
            ));
        }
        let read = s.items_read - read_before;
        items += read;
        served += h.source.served;
        max = max.max(read);
    }
    Ok(Row {
        case,
        repairs: trials,
        items,
        served,
        max,
        target: String::new(),
        met: items == served,
    })
}

/// `row` judged against `bound`, the most items one repair may read.
fn bounded(mut row: Row, bound: u64) -> Row {
    row.target = match bound {
        0 => "0 items".into(),
        b => format!("<= {b} items per repair"),
    };
    row.met &= row.max <= bound;
    row
}

/// Fills the view, then measures the ranged rows and the whole invalidation, in that order.
pub fn rows() -> Result<Vec<Row>, String> {
    let mut h = Keyed::new(
        config(0),
        Keys {
            keys: (0..HELD + TAIL).map(|i| 2 * i).collect(),
            served: 0,
        },
    );
    h.loader
        .set_window(0, HELD - PREFETCH)
        .map_err(|e| format!("fill: {e:?}"))?;
    h.run();
    h.check_view("fill")?;
    if h.loader.page_count() as u64 != PAGES {
        return Err(format!("fill: {} pages held", h.loader.page_count()));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut rows = Vec::new();

    // An odd key between two held items: it lands inside one held page.
    let insert = measure(&mut h, "insert/ranged", TRIALS, true, 1, |keys, held| {
        keys.insert_after(0, held - 1, &mut rng)
    })?;
    rows.push(bounded(insert, TARGET));

    let delete = measure(&mut h, "delete/ranged", TRIALS, true, 1, |keys, held| {
        keys.keys.remove(rng.below(held) as usize)
    })?;
    rows.push(bounded(delete, TARGET));

    // An odd key after the last held item: no held page may hold it, and no read is in
    // flight, so no repair starts at all.
    let outside = measure(&mut h, "outside/ranged", TRIALS, true, 0, |keys, held| {
        let span = keys.keys.len() as u64 - held - 1;
        keys.insert_after(held as usize, span, &mut rng)
    })?;
    rows.push(bounded(outside, 0));

    // The same view, invalidated whole: every page is read again.
    let mut whole = measure(&mut h, "invalidate (whole)", 1, false, 0, |_, _| 0)?;
    whole.target = "(the whole window, for comparison)".into();
    rows.push(whole);
    Ok(rows)
}
