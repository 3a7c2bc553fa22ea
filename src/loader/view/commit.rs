//! A repair's commit into the view: the whole swap, the ranged rejoin, and what is owed next.
//!
//! `commit` swaps to the staged pages; `commit_run` replaces only the run a ranged repair
//! re-read; the marks (whole, or dirty pages) say what the next repair re-reads.

use super::{Page, Run, View};
use crate::loader::cursor::{cursor_le, CursorPool};
use crate::loader::outbox::Outbox;
use crate::loader::requests::Requests;
use std::collections::VecDeque;

impl View {
    /// A whole invalidation: the next repair replaces every page.
    pub(in crate::loader) fn owe_whole(&mut self) {
        self.whole = true;
    }

    /// A whole repair committed with nothing owed since: ranged repairs may follow again.
    pub(in crate::loader) fn whole_repaired(&mut self) {
        self.whole = false;
    }

    /// Marks dirty every held page that may hold a changed item, for changes at positions
    /// in `[from, to]` (`from` empty: the source's start; `to` `None`: its end), ordered by
    /// `cmp`. An item lies in a page when it comes after the page's start cursor and at or
    /// before its end cursor. A change after the last page of a view that reached the
    /// source's end means it reaches no longer. Returns how many pages were marked, plus one
    /// when a change after the last page drops the tail cursor (reads continued past empty
    /// pages from there).
    pub(in crate::loader) fn mark_range(
        &mut self,
        from: &[u8],
        to: Option<&[u8]>,
        cmp: &mut dyn FnMut(&[u8], &[u8]) -> std::cmp::Ordering,
    ) -> usize {
        let mut le = |a: &[u8], b: &[u8]| cursor_le(cmp, a, b);
        let mut marked = 0;
        let n = self.pages.len();
        for i in 0..n {
            let start = self.start_cursor_of(i).clone();
            let end = self.pages[i].end_cursor.clone();
            // Some item k with start < k <= end and from <= k <= to.
            let after_from = le(from, &end);
            let before_to = to.is_none_or(|t| !le(t, &start));
            if after_from && before_to {
                self.pages[i].dirty = true;
                marked += 1;
            }
        }
        // A change after the last page: what the view knew past it (the source's end, empty
        // pages skipped) no longer holds.
        let last_end = self.last_page_end().clone();
        if to.is_none_or(|t| !le(t, &last_end)) {
            if self.end_of_source {
                self.end_of_source = false;
                self.changed = true;
            }
            // Reads continued from a tail past empty pages: one in flight from there would
            // join the view right after the last page, skipping the change. It counts as a
            // marked page, so the invalidation supersedes that read.
            if let Some(tail) = self.tail_cursor.take() {
                drop(tail);
                marked += 1;
            }
        }
        marked
    }

    /// A ranged repair committed: `request`'s staged pages replace the run they re-read,
    /// the pages before and after it are kept (adopted by `request`, so retiring the older
    /// requests releases only what left the view), and the pages after the run move by the
    /// net change in items. Returns that change and the run's old end position, or `None`
    /// when the run is no longer held whole (pages were dropped meanwhile): nothing changed
    /// then, and the caller owes a whole repair. With `stale` (an invalidation overtook the
    /// repair) the pages it read are marked dirty for the next one.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::loader) fn commit_run(
        &mut self,
        request: u64,
        run: Option<Run>,
        end_of_source: bool,
        stale: bool,
        requests: &mut Requests,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) -> Option<(i128, u64)> {
        let at =
            |v: &VecDeque<Page>, key: (u64, u32)| v.iter().position(|p| (p.request, p.slot) == key);
        let range = match run {
            None => None,
            Some(r) => {
                let (Some(i), Some(j)) = (at(&self.pages, r.first), at(&self.pages, r.last)) else {
                    return None;
                };
                if j < i {
                    return None;
                }
                Some((i, j))
            }
        };
        let w = requests.live(request);
        let mut staged = std::mem::take(&mut w.staged);
        let new_items = w.staged_items;
        let (cut_items, cut_cursor) = (w.cut_items, w.cut_cursor.take());
        // Cut at the front (`Work::cut_items`): the pages before the run go too, and the view
        // starts where the first page kept starts.
        let range = match (range, cut_cursor) {
            (Some((i, j)), Some(c)) => {
                for p in self.pages.drain(..i) {
                    requests.drop_page(&p, out);
                    cursors.recycle(p.end_cursor);
                }
                let old = std::mem::replace(&mut self.base_cursor, c);
                cursors.recycle(old);
                self.start_of_source = false;
                self.base_offset = self.pages[0].start + cut_items;
                Some((0, j - i))
            }
            (range, c) => {
                if let Some(c) = c {
                    cursors.recycle(c);
                }
                range
            }
        };
        let (net, old_end) = match range {
            None => (0, self.covered_end),
            Some((i, j)) => {
                let from = self.pages[i].start + if i == 0 { cut_items } else { 0 };
                let old_end = self.pages[j].start + u64::from(self.pages[j].count);
                // What it kept may start past the old run's end (items inserted before it).
                let net = if crate::loader::mutant::on(
                    crate::loader::mutant::Mutant::RangedShiftUnsigned,
                ) {
                    new_items as i128
                        - old_end
                            .checked_sub(from)
                            .expect("attempt to subtract with overflow")
                            as i128
                } else {
                    (from + new_items) as i128 - old_end as i128
                };
                let mut pos = from;
                for p in staged.iter_mut() {
                    p.start = pos;
                    pos += u64::from(p.count);
                }
                let at_end = j + 1 == self.pages.len();
                let removed: Vec<Page> = self.pages.drain(i..=j).collect();
                for p in removed {
                    requests.drop_page(&p, out);
                    cursors.recycle(p.end_cursor);
                }
                let placed = staged.len();
                if at_end {
                    // Past the run, only what its last read said holds; an overtaken read's
                    // word is not trusted: the next finite read looks again.
                    self.end_of_source = end_of_source && !stale;
                    if let Some(old) = self.tail_cursor.take() {
                        cursors.recycle(old);
                    }
                }
                for (k, mut p) in staged.drain(..).enumerate() {
                    // An invalidation overtook the repair: what it read may be stale too.
                    p.dirty = stale;
                    self.pages.insert(i + k, p);
                }
                if stale {
                    // Its reads may have stopped short of the changes that overtook it: the
                    // page after the seam is suspect too, and with nothing read, the page
                    // before it carries the marks; with no page left, a whole repair.
                    if placed == 0 && i > 0 {
                        self.pages[i - 1].dirty = true;
                    }
                    if let Some(p) = self.pages.get_mut(i + placed) {
                        p.dirty = true;
                    }
                    if self.pages.is_empty() {
                        self.whole = true;
                    }
                }
                // Pages after the run move by the net change.
                for p in self.pages.iter_mut().skip(i + placed) {
                    p.start = (p.start as i128 + net) as u64;
                }
                self.covered_end = (self.covered_end as i128 + net) as u64;
                (net, old_end)
            }
        };
        requests.live(request).staged = staged;
        // Every page kept joins `request`, so that retiring older requests keeps them.
        for p in self.pages.iter_mut() {
            if p.request != request {
                let acq = requests.take_for(p.request, p.slot);
                let w = requests.live(request);
                p.slot = w.acqs.len() as u32;
                w.acqs.push(acq);
                w.in_view += 1;
                p.request = request;
            }
        }
        let w = requests.live(request);
        w.in_view = self.pages.len() as u32;
        self.changed = true;
        Some((net, old_end))
    }
    /// Swaps the view to `request`'s staged pages, atomically: those read backward, in
    /// source order, then those read forward. The old view's buffer becomes the request's
    /// staging buffer, which goes back to the pool with the request.
    pub(in crate::loader) fn commit(
        &mut self,
        request: u64,
        requests: &mut Requests,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) {
        let w = requests.live(request);
        let mut staged = std::mem::take(&mut w.staged);
        w.in_view = (staged.len() + w.staged_back.len()) as u32;
        let back = w.staged_back_items;
        // The anchor keeps its number, unless the pages before it do not fit below it, or
        // they reach the source's start: then the numbers become the source's own, whatever
        // a host's count says (one that contradicts them counted another state of the source).
        let anchor = match w.counted {
            _ if w.reached_start || w.back_cursor.is_empty() => back,
            Some(n) if n >= back => n,
            _ => w.base_offset.max(back),
        };
        let first = anchor - back;
        if anchor != w.base_offset {
            self.shift += anchor as i128 - w.base_offset as i128;
        }
        if !w.staged_back.is_empty() {
            let mut at = first;
            let mut back_pages: Vec<Page> = w.staged_back.drain(..).rev().collect();
            for p in back_pages.iter_mut() {
                p.start = at;
                at += p.count as u64;
            }
            back_pages.append(&mut staged);
            staged = back_pages;
        }
        // Backward pages, then forward ones: consecutive from `first`, so the anchor item
        // gets `anchor`.
        let mut at = first;
        for p in staged.iter_mut() {
            p.start = at;
            at += p.count as u64;
        }
        self.base_offset = first;
        self.covered_end = anchor + w.staged_items;
        self.end_of_source = w.reached_end;
        // Where the farthest backward read ended: the anchor when none ran.
        let base = std::mem::take(&mut w.back_cursor);
        self.start_of_source = w.reached_start || base.is_empty();
        let old_base = std::mem::replace(&mut self.base_cursor, base);
        cursors.recycle(old_base);
        if w.jump {
            if let Some((_, c)) = self.jump.take() {
                cursors.recycle(c);
            }
        }
        let mut old: Vec<Page> = std::mem::replace(&mut self.pages, staged.into()).into();
        // The old pages leave the view: nothing shows or reads them any more, so their
        // acquisitions go back now rather than when their requests retire (a request at the
        // epoch just committed may stay settled until the next commit). Pages come in runs of
        // one request: one map lookup per run, not per page.
        let mut from = 0;
        while from < old.len() {
            let r = old[from].request;
            let to = from + old[from..].iter().take_while(|p| p.request == r).count();
            requests.release_pages(r, old[from..to].iter().map(|p| p.slot), out);
            from = to;
        }
        for p in old.drain(..) {
            cursors.recycle(p.end_cursor);
        }
        requests.live(request).staged = old;
        self.changed = true;
    }
}
