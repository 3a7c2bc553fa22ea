//! The cursor memo: where pages the loader read started, by position, kept after the pages
//! go, so that a far move starts at the nearest cursor it knows instead of walking.
//!
//! An entry `(position, cursor)` says the item just after `cursor` is at `position`, in the
//! view's numbering. Entries are recorded only while the view is current (no invalidation
//! owed): a page read before a change may sit at another position now. They are cursors,
//! not items: nothing is held for them.
//!
//! Bounded: each entry is charged [`ENTRY_BYTES`] plus the length of a cursor too long to
//! be stored inline, against `cursor_memo_bytes`. When a new entry would pass the budget,
//! every other entry is forgotten (in position order), so what remains is an even grid over
//! the positions seen, twice as coarse; a far move then reads at most the grid's spacing
//! more.
//!
//! Invalidations move positions: a whole one (or a host jump) forgets every entry; a ranged
//! one keeps only the entries before the first changed cursor, or none when the change may
//! lie before the first held page (the view's numbering then differs from the source's before
//! it); a renumbering forgets every entry, and so does a far move that starts at the host's
//! `locate` answer while the numbering is not the source's (the entries are in the view's). The numbering origin (the empty cursor at position 0) is known while positions
//! are the source's own.

use crate::loader::cursor::{cursor_le, INLINE_CURSOR_LEN};
use crate::loader::Cursor;
use std::collections::BTreeMap;

/// What one entry is charged, in bytes: the position, the inline cursor and the map's share.
pub const ENTRY_BYTES: u64 = 48;

/// The memo. See the module documentation.
#[derive(Clone, Debug, Default)]
pub(in crate::loader) struct Memo {
    entries: BTreeMap<u64, Cursor>,
    /// What the entries are charged, and the budget (0: nothing is kept).
    bytes: u64,
    budget: u64,
    /// The grid's spacing once the memo was thinned: a new cursor nearer than this to one
    /// it holds is not kept, so the entries stay evenly spread. 0 until the first thinning.
    spacing: u64,
    /// Positions are the source's own: the empty cursor is at position 0.
    own: bool,
}

fn charge(c: &Cursor) -> u64 {
    ENTRY_BYTES
        + if c.len() > INLINE_CURSOR_LEN {
            c.len() as u64
        } else {
            0
        }
}

impl Memo {
    pub(in crate::loader) fn new(budget: u64) -> Memo {
        Memo {
            budget,
            own: true,
            ..Memo::default()
        }
    }

    /// Remembers that the item just after `cursor` is at `at`.
    pub(in crate::loader) fn record(&mut self, at: u64, cursor: &Cursor) {
        if cursor.is_empty() {
            // The source's start: the origin, known while the numbering is the source's own.
            self.own |= at == 0;
            return;
        }
        let cost = charge(cursor);
        if cost > self.budget || self.crowded(at) {
            return;
        }
        if let Some(old) = self.entries.insert(at, cursor.clone()) {
            self.bytes -= charge(&old);
        }
        self.bytes += cost;
        while self.bytes > self.budget {
            self.thin();
        }
    }

    /// Whether an entry other than one at `at` lies nearer than the spacing.
    fn crowded(&self, at: u64) -> bool {
        if self.spacing == 0 {
            return false;
        }
        let lo = at.saturating_sub(self.spacing - 1);
        let hi = at.saturating_add(self.spacing - 1);
        self.entries.range(lo..=hi).any(|(a, _)| *a != at)
    }

    /// Forgets every other entry, in position order, and doubles the spacing new entries
    /// keep (at least the narrowest gap left).
    fn thin(&mut self) {
        let odd: Vec<u64> = self.entries.keys().skip(1).step_by(2).copied().collect();
        if odd.is_empty() {
            self.entries.clear();
            self.bytes = 0;
            return;
        }
        for at in odd {
            if let Some(c) = self.entries.remove(&at) {
                self.bytes -= charge(&c);
            }
        }
        let keys: Vec<u64> = self.entries.keys().copied().collect();
        let narrowest = keys.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(1);
        self.spacing = (self.spacing * 2).max(narrowest);
    }

    /// The known cursor nearest to `target`, as `(position, cursor)`; at equal distance the
    /// one before (a walk forward from it needs no backward read).
    pub(in crate::loader) fn nearest(&self, target: u64) -> Option<(u64, Cursor)> {
        let before = self
            .entries
            .range(..=target)
            .next_back()
            .map(|(a, c)| (*a, c.clone()));
        let before = match (before, self.own) {
            (None, true) => Some((0, Cursor::default())),
            (b, _) => b,
        };
        let after = self
            .entries
            .range(target..)
            .next()
            .map(|(a, c)| (*a, c.clone()));
        match (before, after) {
            (Some(b), Some(a)) if a.0 - target < target - b.0 => Some(a),
            (Some(b), _) => Some(b),
            (None, a) => a,
        }
    }

    /// Every position moved, or may have: forget everything, the origin included.
    pub(in crate::loader) fn forget(&mut self) {
        // Every whole invalidation comes here, most with nothing remembered: an empty map's
        // `clear` still builds and drops an iterator over it.
        if !self.entries.is_empty() {
            self.entries.clear();
        }
        self.bytes = 0;
        self.spacing = 0;
        self.own = false;
    }

    /// Items changed at cursors from `from` on (`cmp` orders two non-empty cursors): only the
    /// entries before `from` keep their positions. `before_view` says the change may lie
    /// before the first held page, where the view's numbering stops being the source's.
    pub(in crate::loader) fn changed_from(
        &mut self,
        from: &[u8],
        before_view: bool,
        cmp: &mut dyn FnMut(&[u8], &[u8]) -> std::cmp::Ordering,
    ) {
        if before_view {
            // The view's numbering stops being the source's before the first held page,
            // where the cursors before `from` still have the source's: two frames. Keep none.
            self.forget();
            return;
        }
        // Entries are in position order, and so in cursor order: the ones at or after `from`
        // are the last ones. Only they are compared (and one more), so a change costs what it
        // forgets, not the memo's size.
        while let Some(entry) = self.entries.last_entry() {
            // Kept when c < from: not from <= c.
            if !cursor_le(cmp, from, entry.get()) {
                break;
            }
            self.bytes -= charge(&entry.remove());
        }
    }

    /// Whether positions are the source's own (the origin is known).
    pub(in crate::loader) fn own(&self) -> bool {
        self.own
    }

    /// The view reached the source's start while current: positions are the source's own.
    pub(in crate::loader) fn own_numbers(&mut self) {
        self.own = true;
    }

    /// How many cursors it holds, and what they are charged (for tests and benches).
    #[cfg(any(test, feature = "testing"))]
    pub(in crate::loader) fn size(&self) -> (usize, u64) {
        (self.entries.len(), self.bytes)
    }
}

/// The checker's canonical form: the cursors by position, and the memo's accounting.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Memo {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        let Memo {
            entries,
            bytes,
            budget,
            spacing,
            own,
        } = self;
        entries.canon(e);
        for n in [bytes, budget, spacing] {
            e.num(*n);
        }
        own.canon(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(n: u64) -> Cursor {
        crate::loader::cursor::CursorPool::default().make(&n.to_be_bytes())
    }

    #[test]
    fn nearest_prefers_the_closer_then_the_earlier_and_knows_the_origin() {
        let mut m = Memo::new(1 << 20);
        m.record(100, &cursor(100));
        m.record(200, &cursor(200));
        assert_eq!(m.nearest(140).unwrap().0, 100);
        assert_eq!(m.nearest(160).unwrap().0, 200);
        assert_eq!(m.nearest(150).unwrap().0, 100);
        assert_eq!(m.nearest(10).unwrap(), (0, Cursor::default()));
        m.forget();
        assert!(m.nearest(10).is_none());
        m.record(0, &Cursor::default());
        assert_eq!(m.nearest(10).unwrap(), (0, Cursor::default()));
    }

    #[test]
    fn a_full_memo_keeps_an_even_grid_within_its_budget() {
        let mut m = Memo::new(64 * ENTRY_BYTES);
        for i in 0..1000u64 {
            m.record(i * 50, &cursor(i * 50));
            assert!(m.size().1 <= 64 * ENTRY_BYTES);
        }
        let (n, _) = m.size();
        assert!((32..=64).contains(&n), "{n} entries");
        // The grid spans the positions seen, evenly: no gap wider than twice the median.
        let keys: Vec<u64> = m.entries.keys().copied().collect();
        let gaps: Vec<u64> = keys.windows(2).map(|w| w[1] - w[0]).collect();
        let widest = *gaps.iter().max().unwrap();
        let narrowest = *gaps.iter().min().unwrap();
        assert!(widest <= 2 * narrowest, "{gaps:?}");
    }

    #[test]
    fn a_ranged_change_keeps_only_what_lies_before_it() {
        let mut m = Memo::new(1 << 20);
        for i in 1..10u64 {
            m.record(i * 10, &cursor(i * 10));
        }
        let mut cmp = |a: &[u8], b: &[u8]| a.cmp(b);
        m.changed_from(&45u64.to_be_bytes(), false, &mut cmp);
        assert_eq!(m.size().0, 4);
        assert_eq!(m.nearest(1000).unwrap().0, 40);
        assert_eq!(m.nearest(0).unwrap().0, 0, "the origin stays");
        m.record(50, &cursor(50));
        m.changed_from(&45u64.to_be_bytes(), true, &mut cmp);
        assert_eq!(m.size(), (0, 0), "a change before the view: nothing kept");
        m.own_numbers();
        m.changed_from(&[], true, &mut cmp);
        assert_eq!(m.size(), (0, 0));
        assert!(m.nearest(0).is_none());
    }

    #[test]
    fn a_zero_budget_keeps_nothing_but_the_origin() {
        let mut m = Memo::new(0);
        m.record(50, &cursor(50));
        assert_eq!(m.size(), (0, 0));
        assert_eq!(m.nearest(50).unwrap().0, 0);
    }
}
