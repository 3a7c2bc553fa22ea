//! The view: the pages shown, in source order, and where they sit in the source (the first
//! held page's offset and cursor, the covered end, whether it reaches the end of the
//! source); a commit's swap, dropping pages far behind the window, closing gaps, and the
//! end-cursor memo a finite read continues from.

use super::cursor::CursorPool;
use super::outbox::Outbox;
use super::requests::Requests;
use super::{Cursor, Kind};
use std::collections::VecDeque;

/// One page of the view: the items one read returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The host's token for the items.
    pub acquisition: u64,
    /// How many items the page holds.
    pub count: u32,
    /// The epoch of the request that read it.
    pub epoch: u64,
    /// Its first item's position in the items counted from the source's start: the true
    /// offset while every page from the start is held, possibly off after pages before the
    /// window were dropped and rows changed above them (see `loader_page.start` in the
    /// header).
    pub start: u64,
    pub(super) end_cursor: Cursor,
    /// The request whose acquisition it is, and where in that request's list.
    pub(super) request: u64,
    pub(super) slot: u32,
}

impl Page {
    /// The cursor after this page's last item.
    pub fn end_cursor(&self) -> &[u8] {
        &self.end_cursor
    }
}

/// Where a new request reads from, and how far.
pub(super) struct Origin {
    /// Where its pages start: offset and cursor.
    pub(super) base_offset: u64,
    pub(super) base_cursor: Cursor,
    /// Chain and full reads: how many items to cover before settling.
    pub(super) target: u64,
    /// Where its first read starts.
    pub(super) cursor: Cursor,
}

/// The pages shown and where they sit.
#[derive(Clone, Debug, Default)]
pub(super) struct View {
    pages: VecDeque<Page>,
    /// The cursor memo's start: where the first held page starts.
    base_offset: u64,
    base_cursor: Cursor,
    covered_end: u64,
    /// The cursor after empty pages that followed the last held page (a filtered stretch of
    /// the source): where the next finite read continues instead of that page's end. `None`
    /// when the last answer that advanced the view had items.
    tail_cursor: Option<Cursor>,
    end_of_source: bool,
    /// The window moved back over dropped pages: the next repair starts at the source's start.
    rewind: bool,
    /// Changed since the last announcement.
    changed: bool,
}

impl View {
    #[inline]
    pub(super) fn pages(&self) -> &VecDeque<Page> {
        &self.pages
    }

    /// The items the view covers: from the first held page's start to the last page's end.
    #[inline]
    pub(super) fn covered(&self) -> (u64, u64) {
        (self.base_offset, self.covered_end)
    }

    #[inline]
    pub(super) fn base_cursor(&self) -> &Cursor {
        &self.base_cursor
    }

    #[inline]
    pub(super) fn end_of_source(&self) -> bool {
        self.end_of_source
    }

    /// Whether the view falls short of `want` items while the source goes on.
    #[inline]
    pub(super) fn short_of(&self, want: u64) -> bool {
        !self.end_of_source && self.covered_end < want
    }

    /// The cursor after the last held page: where a finite read continues, unless empty
    /// pages moved past it.
    #[inline]
    fn last_page_end(&self) -> &Cursor {
        self.pages
            .back()
            .map_or(&self.base_cursor, |p| &p.end_cursor)
    }

    /// The cursor after everything covered, empty pages included: where a finite read
    /// continues.
    #[inline]
    fn end_cursor(&self) -> &Cursor {
        self.tail_cursor
            .as_ref()
            .unwrap_or_else(|| self.last_page_end())
    }

    /// An answer that advanced the view ended at `end`: when empty pages moved it past the
    /// last held page (or past the base, with no page), the next finite read starts there.
    pub(super) fn skip_to(&mut self, end: &[u8], cursors: &mut CursorPool) {
        let moved = end != &**self.last_page_end();
        let tail = moved.then(|| cursors.make(end));
        if let Some(old) = std::mem::replace(&mut self.tail_cursor, tail) {
            cursors.recycle(old);
        }
    }

    /// Where a new request of `kind` reads from, for a view that should reach `want`: a
    /// finite read continues after the last page; a chain re-reads the held pages from the
    /// first one's start (the source's start after a rewind), at least as far as they reach;
    /// a full read goes from the source's start.
    #[inline]
    pub(super) fn origin(&self, kind: Kind, want: u64) -> Origin {
        let from_start = |target| Origin {
            base_offset: 0,
            base_cursor: Cursor::default(),
            target,
            cursor: Cursor::default(),
        };
        match kind {
            Kind::Finite => Origin {
                cursor: self.end_cursor().clone(),
                ..from_start(0)
            },
            Kind::Chain if self.rewind => from_start(self.covered_end.max(want)),
            Kind::Chain => Origin {
                base_offset: self.base_offset,
                base_cursor: self.base_cursor.clone(),
                target: (self.covered_end.max(want)).saturating_sub(self.base_offset),
                cursor: self.base_cursor.clone(),
            },
            Kind::Full => from_start(want),
        }
    }

    /// A finite read's page joins the end of the view.
    #[inline]
    pub(super) fn append(
        &mut self,
        request: u64,
        slot: u32,
        acquisition: u64,
        count: u32,
        epoch: u64,
        end_cursor: Cursor,
    ) {
        self.pages.push_back(Page {
            acquisition,
            count,
            epoch,
            start: self.covered_end,
            end_cursor,
            request,
            slot,
        });
        self.covered_end += count as u64;
        self.tail_cursor = None;
    }

    /// A finite read settled current: whether it reached the end of the source.
    #[inline]
    pub(super) fn extended(&mut self, end_of_source: bool) {
        self.end_of_source = end_of_source;
        self.changed = true;
    }

    /// Swaps the view to `request`'s staged pages, atomically. The old view's buffer becomes
    /// the request's staging buffer, which goes back to the pool with the request.
    pub(super) fn commit(
        &mut self,
        request: u64,
        end_of_source: bool,
        requests: &mut Requests,
        cursors: &mut CursorPool,
    ) {
        let w = requests.live(request);
        let staged = std::mem::take(&mut w.staged);
        w.in_view = staged.len() as u32;
        self.base_offset = w.base_offset;
        let base = std::mem::take(&mut w.base_cursor);
        self.covered_end = w.base_offset + w.staged_items;
        self.end_of_source = end_of_source;
        let old_base = std::mem::replace(&mut self.base_cursor, base);
        cursors.recycle(old_base);
        let mut old: Vec<Page> = std::mem::replace(&mut self.pages, staged.into()).into();
        // Pages come in runs of one request: one map lookup per run, not per page.
        let mut run: Option<(u64, u32)> = None;
        for p in old.drain(..) {
            match &mut run {
                Some((r, n)) if *r == p.request => *n += 1,
                _ => {
                    if let Some((r, n)) = run.replace((p.request, 1)) {
                        requests.leave_view(r, n);
                    }
                }
            }
            cursors.recycle(p.end_cursor);
        }
        if let Some((r, n)) = run {
            requests.leave_view(r, n);
        }
        requests.live(request).staged = old;
        self.rewind = false;
        self.changed = true;
    }

    /// Releases the pages wholly more than `drop_margin` items before `window_start`; the
    /// first page kept becomes the memo's start.
    #[inline]
    pub(super) fn drop_behind(
        &mut self,
        window_start: u64,
        drop_margin: u64,
        requests: &mut Requests,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) {
        if drop_margin == 0 {
            return;
        }
        while let Some(p) = self.pages.front() {
            let end = p.start + p.count as u64;
            if end.saturating_add(drop_margin) > window_start {
                break;
            }
            let p = self.pages.pop_front().expect("front exists");
            requests.drop_page(&p, out);
            self.base_offset = end;
            let old_base = std::mem::replace(&mut self.base_cursor, p.end_cursor);
            cursors.recycle(old_base);
            self.changed = true;
        }
    }

    /// Drops `request`'s pages and closes the gap they leave. Only the module's exact rules
    /// (`recheck_full` off) retire a request whose pages are still shown, after a lost
    /// invalidation.
    pub(super) fn close_gap(&mut self, request: u64) {
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

    /// Whether a window starting at `start` moves back over dropped pages, whose cursors
    /// are gone, for the first time since the last commit.
    #[inline]
    pub(super) fn rewinds_to(&self, start: u64) -> bool {
        start < self.base_offset && !self.rewind
    }

    /// The next repair starts at the source's start; the old view stays until it commits.
    pub(super) fn rewind(&mut self) {
        self.rewind = true;
    }

    /// Whether the view changed since the last call.
    #[inline]
    pub(super) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Forgets every page (at close, once their acquisitions were released).
    pub(super) fn clear(&mut self) {
        self.pages.clear();
    }
}
