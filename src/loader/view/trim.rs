//! Trimming the view: releasing the pages the window no longer needs, and closing gaps.
//!
//! Pages go by `drop_margin` and `max_pages` (into the cursor memo, while the view is
//! current); `close_gap` closes the gap a retired request's pages leave.

use super::{View, Want};
use crate::loader::cursor::CursorPool;
use crate::loader::outbox::Outbox;
use crate::loader::requests::Requests;
use crate::loader::Direction;

impl View {
    /// Whether [`View::trim`] with these arguments would release anything: a page wholly
    /// before `keep_from` (and `want`'s start) on a side no finite read continues from, or
    /// more pages than `max_pages`. Most events change neither, and skip the walk.
    #[inline]
    pub(in crate::loader) fn needs_trim(
        &self,
        want: &Want,
        keep_from: u64,
        max_pages: usize,
        hold: Option<Direction>,
    ) -> bool {
        (max_pages > 0 && self.pages.len() > max_pages)
            || (hold != Some(Direction::Backward)
                && self
                    .pages
                    .front()
                    .is_some_and(|p| p.start + p.count as u64 <= keep_from.min(want.start)))
    }

    /// Releases the pages the window no longer needs: first those wholly before
    /// `keep_from`; then, while more than `max_pages` (0: no bound) are held, the first or
    /// the last page, whichever is farther from the window, as long as it lies wholly outside
    /// `want`. `hold` is the side a finite read in flight continues from: the pages before
    /// `keep_from` are not dropped there until it is answered, and when `max_pages` drops the
    /// page it continues from, the side is returned: that read's answer must not join the
    /// view (it would follow a gap).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::loader) fn trim(
        &mut self,
        want: &Want,
        keep_from: u64,
        max_pages: usize,
        hold: Option<Direction>,
        requests: &mut Requests,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) -> Option<Direction> {
        let keep_from = keep_from.min(want.start);
        let front_ok = hold != Some(Direction::Backward);
        let mut cut = None;
        while front_ok
            && self
                .pages
                .front()
                .is_some_and(|p| p.start + p.count as u64 <= keep_from)
        {
            self.drop_front(requests, cursors, out);
        }
        while max_pages > 0 && self.pages.len() > max_pages {
            let (first, last) = match (self.pages.front(), self.pages.back()) {
                (Some(f), Some(l)) => (f, l),
                _ => break,
            };
            let first_end = first.start + first.count as u64;
            // How far each lies outside `want`; `None` when it overlaps it.
            let before = (first_end <= want.start).then(|| want.start - first_end);
            let after = (last.start >= want.end).then(|| last.start - want.end);
            let front = match (before, after) {
                (Some(b), Some(a)) => a <= b,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if front {
                self.drop_front(requests, cursors, out);
                if hold == Some(Direction::Backward) {
                    cut = hold;
                }
            } else {
                self.drop_back(requests, cursors, out);
                if hold == Some(Direction::Forward) {
                    cut = hold;
                }
            }
        }
        cut
    }

    /// Before a ranged repair starts: the changed (dirty) pages that lie wholly outside
    /// `want` are let go instead of re-read, with every page between them and the view's
    /// edge, so that the repair stages only pages the window needs (the header's bound). A
    /// whole or jump repair replaces every page and keeps them. Returns the side a finite read
    /// in flight (`hold`) continued from, if its page went (as `trim` does).
    pub(in crate::loader) fn drop_dirty_outside(
        &mut self,
        want: &Want,
        hold: Option<Direction>,
        requests: &mut Requests,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) -> Option<Direction> {
        if self.whole || self.jump.is_some() {
            return None;
        }
        // What changed is not remembered in the cursor memo: its positions may have moved.
        let current = std::mem::replace(&mut self.current, false);
        let mut cut = None;
        let before = self
            .pages
            .iter()
            .take_while(|p| p.start + p.count as u64 <= want.start)
            .count();
        if let Some(last) = self.pages.iter().take(before).rposition(|p| p.dirty) {
            for _ in 0..=last {
                self.drop_front(requests, cursors, out);
            }
            cut = hold.filter(|&d| d == Direction::Backward);
        }
        let after = self
            .pages
            .iter()
            .rev()
            .take_while(|p| p.start >= want.end)
            .count();
        if let Some(first) = self.pages.iter().rev().take(after).rposition(|p| p.dirty) {
            for _ in 0..=first {
                self.drop_back(requests, cursors, out);
            }
            cut = cut.or(hold.filter(|&d| d == Direction::Forward));
        }
        self.current = current;
        cut
    }

    /// Releases the first page; the next one's start becomes the base.
    fn drop_front(&mut self, requests: &mut Requests, cursors: &mut CursorPool, out: &mut Outbox) {
        let p = self.pages.pop_front().expect("a first page");
        requests.drop_page(&p, out);
        if self.current {
            self.memo.record(p.start, &self.base_cursor);
            self.memo.record(p.start + p.count as u64, &p.end_cursor);
        }
        self.base_offset = p.start + p.count as u64;
        let old_base = std::mem::replace(&mut self.base_cursor, p.end_cursor);
        cursors.recycle(old_base);
        self.start_of_source = false;
        self.changed = true;
    }

    /// Releases the last page; the view ends where it started.
    fn drop_back(&mut self, requests: &mut Requests, cursors: &mut CursorPool, out: &mut Outbox) {
        let p = self.pages.pop_back().expect("a last page");
        requests.drop_page(&p, out);
        if self.current {
            let start = self.last_page_end().clone();
            self.memo.record(p.start, &start);
            self.memo.record(p.start + p.count as u64, &p.end_cursor);
        }
        self.covered_end = p.start;
        cursors.recycle(p.end_cursor);
        if let Some(old) = self.tail_cursor.take() {
            cursors.recycle(old);
        }
        self.end_of_source = false;
        self.changed = true;
    }

    /// Drops `request`'s pages and closes the gap they leave. Only the module's exact rules
    /// (`recheck_full` off) retire a request whose pages are still shown, after a lost
    /// invalidation.
    pub(in crate::loader) fn close_gap(&mut self, request: u64) {
        self.pages.retain(|p| p.request != request);
        let mut at = self.base_offset;
        for p in self.pages.iter_mut() {
            p.start = at;
            at += p.count as u64;
        }
        self.covered_end = at;
        self.tail_cursor = None;
        self.changed = true;
    }
}
