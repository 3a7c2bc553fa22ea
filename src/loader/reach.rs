//! A repair's reach: a chain or full read keeps only the pages the window and its prefetch
//! need. Pages it walks past toward a window far from its anchor are handed back as soon as
//! they are read (their cursors are all it needs), and pages a moved or shrunk window no
//! longer covers as soon as it moves, so a repair or retry holds no more than the window's
//! share of the bound, at every instant.

use super::cursor::CursorPool;
use super::outbox::Outbox;
use super::requests::Work;
use super::view::Want;

impl Work {
    /// Hands back the staged pages that lie wholly outside `want`: forward pages before its
    /// start (while no backward step is owed), and the backward pages nearest the anchor
    /// that lie after its end, with every forward page (which lie after them). The anchor
    /// moves to the first page kept, so positions and cursors stay consistent. Then the
    /// forward pages after its end and the backward pages before its start, farthest first,
    /// keeping one page: that direction's reading is done. Returns whether forward pages
    /// went (the forward reading ends at the last page kept). A read out in the direction
    /// whose pages went lies beyond them: its answer will be let go (`overshot`).
    #[inline]
    pub(super) fn keep_within(
        &mut self,
        want: &Want,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) -> bool {
        if self.within(want) {
            return false;
        }
        self.keep_within_walk(want, cursors, out)
    }

    /// Whether `keep_within` would change nothing: no backward page is staged, a backward
    /// step is still owed or none was (so nothing about the backward reading changes), no
    /// forward page but the last lies wholly before `want`, and none but the first starts
    /// at or after its end. A repair reading toward the window's end is in this case at
    /// every step.
    #[inline(always)]
    fn within(&self, want: &Want) -> bool {
        if self.ranged.is_some() || !self.staged_back.is_empty() {
            return false;
        }
        let back_needed =
            !(self.base_offset <= want.start && (self.base_offset > 0 || !want.below_zero));
        (back_needed || self.back_target == 0)
            && !(self.read.is_some() && self.direction == super::Direction::Backward)
            // The first and the last of two or more pages, without an index checked twice.
            && match self.staged.as_slice() {
                [first, .., last] => {
                    !(self.back_target == 0
                        && first.start + u64::from(first.count) <= want.start)
                        && last.start < want.end
                }
                _ => true,
            }
    }

    #[inline(never)]
    fn keep_within_walk(
        &mut self,
        want: &Want,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) -> bool {
        if self.ranged.is_some() {
            self.keep_run_within(want, cursors, out);
            return false;
        }
        let reading = self.read.is_some();
        // An anchor at or after the prefetch's start needs nothing read before it any more
        // (at 0, unless the prefetch reaches below 0, where rows before it are looked for).
        let back_needed =
            !(self.base_offset <= want.start && (self.base_offset > 0 || !want.below_zero));
        if !back_needed {
            self.back_target = self.back_target.min(self.staged_back_items);
            // A backward read out from the anchor is not needed: its answer is let go, so
            // the anchor may move past the forward pages before the window.
            if self.back_target == 0 && reading && self.direction == super::Direction::Backward {
                self.overshot = true;
            }
        }
        // Backward pages before the window, farthest first: the backward reading is done.
        let mut cut_back = false;
        // All of them when the anchor is in or before the window: nothing before it is needed.
        let keep = usize::from(back_needed);
        while self.staged_back.len() > keep {
            let p = &self.staged_back[self.staged_back.len() - 1];
            // Where it ends: the staged backward items may reach below position 0 (rows
            // before an anchor at 0), where nothing lies before the window.
            let far_end =
                (self.base_offset + u64::from(p.count)).checked_sub(self.staged_back_items);
            if far_end.is_none_or(|end| end > want.start) {
                break;
            }
            let p = self.staged_back.pop().expect("a farthest staged page");
            self.release_slot(p.slot, out);
            self.staged_back_items -= u64::from(p.count);
            // The next page's start is where the one let go ended.
            let old = std::mem::replace(&mut self.back_cursor, p.end_cursor);
            cursors.recycle(old);
            cut_back = true;
        }
        if cut_back {
            self.back_target = self.back_target.min(self.staged_back_items);
            self.reached_start = false;
            self.overshot |= reading && self.direction == super::Direction::Backward;
        }
        // Forward pages before the window: the anchor moves past them, all in one step (a
        // repair may hold many: one by one would shift the rest once per page).
        if self.back_target == 0 && self.staged_back.is_empty() {
            let last = self.staged.len().saturating_sub(1);
            let before = self.staged[..last]
                .iter()
                .take_while(|p| p.start + u64::from(p.count) <= want.start)
                .count();
            if before > 0 {
                let mut n = 0;
                let mut end = None;
                for p in self.staged.drain(..before) {
                    n += u64::from(p.count);
                    if let Some(a) = self.acqs[p.slot as usize].take() {
                        out.release(a);
                    }
                    if let Some(old) = end.replace(p.end_cursor) {
                        cursors.recycle(old);
                    }
                }
                self.base_offset += n;
                self.staged_items -= n;
                self.target = self.target.saturating_sub(n);
                self.counted = self.counted.map(|c| c + n);
                let end = end.expect("a page let go");
                let old = std::mem::replace(&mut self.base_cursor, end.clone());
                cursors.recycle(old);
                let old = std::mem::replace(&mut self.back_cursor, end);
                cursors.recycle(old);
                // The pages kept keep their positions: the anchor moved to the first of them.
                if super::mutant::on(super::mutant::Mutant::RepairShiftsKept) {
                    for q in self.staged.iter_mut() {
                        q.start -= n;
                    }
                }
            }
        }
        // Backward pages after the window (the anchor lies past it): the nearest goes, with
        // the forward pages, while another backward page remains.
        while self.staged_back.len() > 1 {
            let n = u64::from(self.staged_back[0].count);
            if self.base_offset.saturating_sub(n) < want.end {
                break;
            }
            let p = self.staged_back.remove(0);
            self.release_slot(p.slot, out);
            for q in std::mem::take(&mut self.staged) {
                self.release_slot(q.slot, out);
                cursors.recycle(q.end_cursor);
            }
            self.staged_items = 0;
            self.reached_end = false;
            self.base_offset -= n;
            self.staged_back_items -= n;
            self.back_target = self.back_target.saturating_sub(n);
            self.counted = self.counted.map(|c| c.saturating_sub(n));
            // The view now ends where the dropped page started: the next page's end.
            let end = self.staged_back[0].end_cursor.clone();
            let old = std::mem::replace(&mut self.base_cursor, end.clone());
            cursors.recycle(old);
            let old = std::mem::replace(&mut self.tail, end);
            cursors.recycle(old);
            cursors.recycle(p.end_cursor);
        }
        // Forward pages after the window: the forward reading is done at the last one kept.
        let mut cut = false;
        // Every forward page may go when backward pages remain (the view then ends at the
        // anchor); otherwise one stays.
        let keep = usize::from(self.staged_back.is_empty());
        while self.staged.len() > keep && self.staged[self.staged.len() - 1].start >= want.end {
            let p = self.staged.pop().expect("a last staged page");
            self.release_slot(p.slot, out);
            self.staged_items -= u64::from(p.count);
            cursors.recycle(p.end_cursor);
            cut = true;
        }
        if cut {
            self.target = self.target.min(self.staged_items);
            self.reached_end = false;
            let end = self
                .staged
                .last()
                .map_or(&self.base_cursor, |p| &p.end_cursor)
                .clone();
            let old = std::mem::replace(&mut self.tail, end);
            cursors.recycle(old);
            self.overshot |= reading && self.direction == super::Direction::Forward;
        }
        cut
    }

    /// A ranged repair's share of `keep_within`: its pages that start past the window plus
    /// prefetch go, and when it has read (or is reading) past there, it is `truncated`: it
    /// stops, a read out lies beyond what it keeps (`overshot`), and it commits what it kept.
    pub(super) fn keep_run_within(
        &mut self,
        want: &Want,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) {
        use super::mutant::{on, Mutant};
        if !on(Mutant::RangedKeepsBefore) {
            self.cut_run_front(want, cursors, out);
        }
        if on(Mutant::RangedReadsPast) {
            return;
        }
        let mut cut = false;
        while self.staged.last().is_some_and(|p| p.start >= want.end) {
            let p = self.staged.pop().expect("a last staged page");
            self.release_slot(p.slot, out);
            self.staged_items -= u64::from(p.count);
            cursors.recycle(p.end_cursor);
            cut = true;
        }
        if cut || self.base_offset + self.staged_items >= want.end {
            self.truncated = true;
            self.overshot |= self.read.is_some();
        }
    }

    /// A ranged repair's pages wholly before the window plus prefetch (it moved on) go, and
    /// the view will start where the first page kept starts (`cut_items`, `cut_cursor`).
    pub(super) fn cut_run_front(
        &mut self,
        want: &Want,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) {
        let before = self
            .staged
            .iter()
            .take_while(|p| p.start + u64::from(p.count) <= want.start)
            .count();
        for p in self.staged.drain(..before) {
            if let Some(a) = self.acqs[p.slot as usize].take() {
                out.release(a);
            }
            let n = u64::from(p.count);
            self.base_offset += n;
            self.staged_items -= n;
            self.cut_items += n;
            if let Some(old) = self.cut_cursor.replace(p.end_cursor) {
                cursors.recycle(old);
            }
        }
    }

    pub(super) fn release_slot(&mut self, slot: u32, out: &mut Outbox) {
        if let Some(a) = self.acqs[slot as usize].take() {
            out.release(a);
        }
    }
}
