//! The view: the pages shown, in source order, and where they sit in the source (the first
//! held page's offset and cursor, the covered end, whether it reaches the end of the
//! source); a commit's swap, dropping pages far behind the window, closing gaps, and the
//! end-cursor memo a finite read continues from.

use super::cursor::CursorPool;
use super::outbox::Outbox;
use super::requests::Requests;
use super::{Cursor, Direction, Kind};
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
    /// Its first item's position. Positions are consecutive across the view: the source's
    /// own (item 0 is its first) whenever the view reaches the source's start
    /// ([`Loader::start_of_source`](super::Loader::start_of_source)); otherwise anchored: a
    /// repair keeps the anchor item's number, a jump uses the host's, pages read backward get
    /// the numbers before. When the numbers are corrected, the whole view and the window move
    /// together ([`Loader::window`](super::Loader::window)).
    pub start: u64,
    pub(super) end_cursor: Cursor,
    /// The request whose acquisition it is, and where in that request's list.
    pub(super) request: u64,
    pub(super) slot: u32,
    /// A ranged invalidation covered it: the next repair re-reads it.
    pub(super) dirty: bool,
}

impl Page {
    /// The cursor after this page's last item.
    pub fn end_cursor(&self) -> &[u8] {
        &self.end_cursor
    }
}

/// Where a new request reads from, and how far.
pub(super) struct Origin {
    /// Which way its first read goes.
    pub(super) direction: Direction,
    /// The anchor: the position and cursor its forward pages start at (a backward finite
    /// read: the position and cursor it reads before).
    pub(super) base_offset: u64,
    pub(super) base_cursor: Cursor,
    /// Chain and full reads: how many items to cover forward from the anchor, and backward
    /// from it, before settling.
    pub(super) target: u64,
    pub(super) back_target: u64,
    /// Where its first read starts.
    pub(super) cursor: Cursor,
    /// It starts at a jump's cursor.
    pub(super) jump: bool,
    /// A ranged repair: the held pages it re-reads (the first and the last, by identity),
    /// and where its reads stop (`until`: the start of the first page kept after them). A
    /// ranged repair with no run re-reads nothing.
    pub(super) ranged: Option<Option<Run>>,
    pub(super) until: Option<Cursor>,
}

/// A run of held pages a ranged repair replaces, named by the first's and the last's
/// `(request, slot)`: indices move when pages are dropped or added meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Run {
    pub(super) first: (u64, u32),
    pub(super) last: (u64, u32),
}

/// The items a view should cover: `[start, end)` in positions, the window widened by the
/// prefetch on both sides.
#[derive(Clone, Copy, Debug)]
pub(super) struct Want {
    pub(super) start: u64,
    pub(super) end: u64,
    /// The window's own start, which the anchor must hold.
    pub(super) window_start: u64,
    /// The prefetch before the window reaches below position 0: rows inserted before an
    /// anchored view at 0 are read (and the view renumbered).
    pub(super) below_zero: bool,
}

/// The pages shown and where they sit.
///
/// Positions: the items the view holds are numbered consecutively. The numbering is the
/// source's own (item 0 is the source's first) whenever the view reaches the source's start;
/// otherwise it is anchored: a repair keeps the anchor item's number, a jump takes the host's,
/// and pages read backward get the numbers before the first held page. When such a number
/// would fall below 0, or a read reaches the source's start and its first item is not 0, the
/// whole view and the window are renumbered by the same amount (see [`View::shift`]).
#[derive(Clone, Debug)]
pub(super) struct View {
    pages: VecDeque<Page>,
    /// Where the first held page starts, position and cursor.
    base_offset: u64,
    base_cursor: Cursor,
    covered_end: u64,
    /// The cursor after empty pages that followed the last held page (a filtered stretch of
    /// the source): where the next finite read continues instead of that page's end. `None`
    /// when the last answer that advanced the view had items.
    tail_cursor: Option<Cursor>,
    end_of_source: bool,
    /// `base_cursor` is the source's start: nothing to read before the first held page.
    start_of_source: bool,
    /// A jump waiting for its repair to commit: the position and cursor to rebuild around.
    jump: Option<(u64, Cursor)>,
    /// The renumbering applied since the host last looked (see [`View::take_shift`]).
    shift: i128,
    /// A whole invalidation (or one whose range is unknown) is owed: the next repair is
    /// anchored and replaces every page. Otherwise a repair re-reads only the dirty pages.
    whole: bool,
    /// Changed since the last announcement.
    changed: bool,
}

impl Default for View {
    fn default() -> View {
        View {
            pages: VecDeque::new(),
            base_offset: 0,
            base_cursor: Cursor::default(),
            covered_end: 0,
            tail_cursor: None,
            end_of_source: false,
            start_of_source: true,
            jump: None,
            shift: 0,
            whole: false,
            changed: false,
        }
    }
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

    #[inline]
    pub(super) fn start_of_source(&self) -> bool {
        self.start_of_source
    }

    /// Whether the view falls short of `want` after its last page while the source goes on.
    #[inline]
    pub(super) fn short_after(&self, want: &Want) -> bool {
        !self.end_of_source && self.covered_end < want.end
    }

    /// Whether the view falls short of `want` before its first page while the source's start
    /// is not reached. At position 0 without the source's start, with the prefetch reaching
    /// below 0, rows may lie before the anchor: it reads on, and the renumbering moves the
    /// window up by what it found, so this stops once the prefetch is filled.
    #[inline]
    pub(super) fn short_before(&self, want: &Want) -> bool {
        !self.start_of_source
            && (self.base_offset > want.start || (self.base_offset == 0 && want.below_zero))
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

    /// Where held page `at` starts: the page before it ends there.
    fn start_cursor_of(&self, at: usize) -> &Cursor {
        match at {
            0 => &self.base_cursor,
            _ => &self.pages[at - 1].end_cursor,
        }
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

    /// The anchor for a window starting at `window_start`: the held page that contains it, as
    /// its start position and cursor. A window before the held pages anchors at the first
    /// one; a window after them (or no page held) at the covered end.
    pub(super) fn anchor(&self, window_start: u64) -> (u64, &Cursor) {
        if window_start < self.base_offset {
            return (self.base_offset, &self.base_cursor);
        }
        if window_start >= self.covered_end {
            return (self.covered_end, self.end_cursor());
        }
        // Pages are in position order: the last one starting at or before the window.
        let at = self.pages.partition_point(|p| p.start <= window_start) - 1;
        (self.pages[at].start, self.start_cursor_of(at))
    }

    /// Where a new request of `kind` reads from, for a view that should cover `want`: a
    /// finite read continues after the last page (forward) or before the first (backward);
    /// a chain or full read starts at the anchor (or a pending jump's cursor), reads forward
    /// to `want.end`, then backward to `want.start`.
    #[inline]
    pub(super) fn origin(&self, kind: Kind, direction: Direction, want: &Want) -> Origin {
        match (kind, direction) {
            (Kind::Finite, Direction::Forward) => Origin {
                direction,
                base_offset: self.covered_end,
                base_cursor: Cursor::default(),
                target: 0,
                back_target: 0,
                cursor: self.end_cursor().clone(),
                jump: false,
                ranged: None,
                until: None,
            },
            (Kind::Finite, Direction::Backward) => Origin {
                direction,
                base_offset: self.base_offset,
                base_cursor: Cursor::default(),
                target: 0,
                back_target: 0,
                cursor: self.base_cursor.clone(),
                jump: false,
                ranged: None,
                until: None,
            },
            (Kind::Chain, _) if !self.whole && self.jump.is_none() => self.ranged_origin(),
            _ => {
                let (at, cursor, jump) = match &self.jump {
                    Some((at, cursor)) => (*at, cursor, true),
                    None => {
                        let (at, cursor) = self.anchor(want.window_start);
                        (at, cursor, false)
                    }
                };
                // The source's start has nothing before it.
                let back_target = if cursor.is_empty() {
                    0
                } else {
                    at.saturating_sub(want.start).max(u64::from(at == 0))
                };
                Origin {
                    direction: Direction::Forward,
                    base_offset: at,
                    base_cursor: cursor.clone(),
                    target: want.end.saturating_sub(at).max(1),
                    back_target,
                    cursor: cursor.clone(),
                    jump,
                    ranged: None,
                    until: None,
                }
            }
        }
    }

    /// A ranged repair's origin: from the first dirty page's start, until the last dirty
    /// page's end (the start of the first page kept after it), re-reading the pages between.
    /// With no dirty page, it re-reads nothing.
    fn ranged_origin(&self) -> Origin {
        let first = self.pages.iter().position(|p| p.dirty);
        let last = self.pages.iter().rposition(|p| p.dirty);
        let (Some(first), Some(last)) = (first, last) else {
            return Origin {
                direction: Direction::Forward,
                base_offset: self.base_offset,
                base_cursor: self.base_cursor.clone(),
                target: 0,
                back_target: 0,
                cursor: self.base_cursor.clone(),
                jump: false,
                ranged: Some(None),
                until: None,
            };
        };
        let (f, l) = (&self.pages[first], &self.pages[last]);
        let cursor = self.start_cursor_of(first).clone();
        Origin {
            direction: Direction::Forward,
            base_offset: f.start,
            base_cursor: cursor.clone(),
            target: u64::MAX,
            back_target: 0,
            cursor,
            jump: false,
            ranged: Some(Some(Run {
                first: (f.request, f.slot),
                last: (l.request, l.slot),
            })),
            until: Some(l.end_cursor.clone()),
        }
    }

    /// A whole invalidation: the next repair replaces every page.
    pub(super) fn owe_whole(&mut self) {
        self.whole = true;
    }

    /// A whole repair committed with nothing owed since: ranged repairs may follow again.
    pub(super) fn whole_repaired(&mut self) {
        self.whole = false;
    }

    /// Marks dirty every held page that may hold a changed item, for changes at positions
    /// in `[from, to]` (`from` empty: the source's start; `to` `None`: its end), ordered by
    /// `cmp`. An item lies in a page when it comes after the page's start cursor and at or
    /// before its end cursor. A change after the last page of a view that reached the
    /// source's end means it reaches no longer. Returns how many pages were marked.
    pub(super) fn mark_range(
        &mut self,
        from: &[u8],
        to: Option<&[u8]>,
        cmp: &mut dyn FnMut(&[u8], &[u8]) -> std::cmp::Ordering,
    ) -> usize {
        use std::cmp::Ordering::*;
        // a <= b, with the empty cursor the source's start (before everything else).
        let mut le = |a: &[u8], b: &[u8]| match (a.is_empty(), b.is_empty()) {
            (true, _) => true,
            (false, true) => false,
            (false, false) => cmp(a, b) != Greater,
        };
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
            self.tail_cursor = None;
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
    pub(super) fn commit_run(
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
        let (net, old_end) = match range {
            None => (0, self.covered_end),
            Some((i, j)) => {
                let from = self.pages[i].start;
                let old_end = self.pages[j].start + u64::from(self.pages[j].count);
                let net = new_items as i128 - (old_end - from) as i128;
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

    /// A forward finite read's page joins the end of the view.
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
            dirty: false,
        });
        self.covered_end += count as u64;
        self.tail_cursor = None;
    }

    /// A backward finite read's page joins the start of the view; `start_cursor` is its
    /// answer's `next_cursor`, where the page starts. An empty page moves the base back over
    /// the empty stretch. Renumbers the view if the page's numbers would fall below 0.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn prepend(
        &mut self,
        request: u64,
        slot: u32,
        acquisition: u64,
        count: u32,
        epoch: u64,
        start_cursor: Cursor,
        start_of_source: bool,
    ) {
        let n = count as u64;
        if n > self.base_offset {
            self.renumber((n - self.base_offset) as i128);
        }
        let end_cursor = std::mem::replace(&mut self.base_cursor, start_cursor);
        self.base_offset -= n;
        if count > 0 {
            self.pages.push_front(Page {
                acquisition,
                count,
                epoch,
                start: self.base_offset,
                end_cursor,
                request,
                slot,
                dirty: false,
            });
        }
        self.start_of_source = start_of_source || self.base_cursor.is_empty();
        if self.start_of_source && self.base_offset != 0 {
            // The source's start is item 0: the numbers are the source's own again.
            self.renumber(-(self.base_offset as i128));
        }
        self.changed = true;
    }

    /// The host counted `n` items before the page about to be appended: renumber so that it
    /// starts at `n`, unless the view holds more than `n` items before it.
    pub(super) fn number_next_at(&mut self, n: u64) {
        let held = self.covered_end - self.base_offset;
        if n >= held && n != self.covered_end {
            self.renumber(n as i128 - self.covered_end as i128);
        }
    }

    /// The host counted `n` items before the first held page: renumber so it starts at `n`.
    pub(super) fn number_first_at(&mut self, n: u64) {
        if n != self.base_offset {
            self.renumber(n as i128 - self.base_offset as i128);
        }
    }

    /// Adds `by` to every position the view holds, and remembers it for the window.
    fn renumber(&mut self, by: i128) {
        let at = |x: u64| (x as i128 + by) as u64;
        for p in self.pages.iter_mut() {
            p.start = at(p.start);
        }
        self.base_offset = at(self.base_offset);
        self.covered_end = at(self.covered_end);
        if let Some((pos, _)) = self.jump.as_mut() {
            *pos = (*pos as i128 + by).max(0) as u64;
        }
        self.shift += by;
        self.changed = true;
    }

    /// The renumbering since the last call: the host's window moves by the same amount, so
    /// it stays on the same items.
    #[inline]
    pub(super) fn take_shift(&mut self) -> i128 {
        std::mem::take(&mut self.shift)
    }

    /// A finite read settled current: whether it reached the end of the source (forward) or
    /// its start (backward; see [`View::prepend`]).
    #[inline]
    pub(super) fn extended(&mut self, direction: Direction, end_of_source: bool) {
        if direction == Direction::Forward {
            self.end_of_source = end_of_source;
        }
        self.changed = true;
    }

    /// Rebuilds the next repair around `cursor`, whose next item gets position `at`.
    pub(super) fn jump_to(&mut self, at: u64, cursor: Cursor, cursors: &mut CursorPool) {
        if let Some((_, old)) = self.jump.replace((at, cursor)) {
            cursors.recycle(old);
        }
    }

    /// Moves an empty view with nothing in flight to `cursor` at position `at` directly.
    pub(super) fn move_empty(&mut self, at: u64, cursor: Cursor, cursors: &mut CursorPool) {
        debug_assert!(self.pages.is_empty());
        self.start_of_source = cursor.is_empty();
        let old = std::mem::replace(&mut self.base_cursor, cursor);
        cursors.recycle(old);
        if let Some(old) = self.tail_cursor.take() {
            cursors.recycle(old);
        }
        self.base_offset = at;
        self.covered_end = at;
        self.end_of_source = false;
        self.changed = true;
    }

    /// Swaps the view to `request`'s staged pages, atomically: those read backward, in
    /// source order, then those read forward. The old view's buffer becomes the request's
    /// staging buffer, which goes back to the pool with the request.
    pub(super) fn commit(
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
        // they reach the source's start: then the numbers become the source's own.
        let anchor = match w.counted {
            _ if w.reached_start => back,
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

    /// Releases the pages the window no longer needs: first those wholly before
    /// `keep_from`; then, while more than `max_pages` (0: no bound) are held, the first or
    /// the last page, whichever is farther from the window, as long as it lies wholly outside
    /// `want`. `hold` is the side a finite read in flight continues from: nothing is dropped
    /// there until it is answered. Returns how many pages were dropped.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn trim(
        &mut self,
        want: &Want,
        keep_from: u64,
        max_pages: usize,
        hold: Option<Direction>,
        requests: &mut Requests,
        cursors: &mut CursorPool,
        out: &mut Outbox,
    ) -> usize {
        let keep_from = keep_from.min(want.start);
        let front_ok = hold != Some(Direction::Backward);
        let back_ok = hold != Some(Direction::Forward);
        let mut dropped = 0;
        while front_ok
            && self
                .pages
                .front()
                .is_some_and(|p| p.start + p.count as u64 <= keep_from)
        {
            self.drop_front(requests, cursors, out);
            dropped += 1;
        }
        while max_pages > 0 && self.pages.len() > max_pages {
            let (first, last) = match (self.pages.front(), self.pages.back()) {
                (Some(f), Some(l)) => (f, l),
                _ => break,
            };
            let first_end = first.start + first.count as u64;
            // How far each lies outside `want`; `None` when it overlaps it.
            let before = (front_ok && first_end <= want.start).then(|| want.start - first_end);
            let after = (back_ok && last.start >= want.end).then(|| last.start - want.end);
            match (before, after) {
                (Some(b), Some(a)) if a > b => self.drop_back(requests, cursors, out),
                (Some(_), _) => self.drop_front(requests, cursors, out),
                (None, Some(_)) => self.drop_back(requests, cursors, out),
                (None, None) => break,
            }
            dropped += 1;
        }
        dropped
    }

    /// Releases the first page; the next one's start becomes the base.
    fn drop_front(&mut self, requests: &mut Requests, cursors: &mut CursorPool, out: &mut Outbox) {
        let p = self.pages.pop_front().expect("a first page");
        requests.drop_page(&p, out);
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
