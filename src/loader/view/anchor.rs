//! The view's anchoring and positions: where a request reads from, how held items are numbered.
//!
//! Where: the anchor, a finite read's continuation, a ranged repair's run. Numbers: as pages
//! join the view, as the host counts, as a jump moves it.

use super::{Origin, Page, Run, View, Want};
use crate::loader::cursor::CursorPool;
use crate::loader::{Cursor, Direction, Kind};

impl View {
    /// An answer that advanced the view ended at `end`: when empty pages moved it past the
    /// last held page (or past the base, with no page), the next finite read starts there.
    pub(in crate::loader) fn skip_to(&mut self, end: &[u8], cursors: &mut CursorPool) {
        let moved = end != &**self.last_page_end();
        let tail = moved.then(|| cursors.make(end));
        if let Some(old) = std::mem::replace(&mut self.tail_cursor, tail) {
            cursors.recycle(old);
        }
    }

    /// The anchor for a window starting at `window_start`: the held page that contains it, as
    /// its start position and cursor. A window before the held pages anchors at the first
    /// one; a window after them (or no page held) at the covered end.
    pub(in crate::loader) fn anchor(&self, window_start: u64) -> (u64, &Cursor) {
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
    pub(in crate::loader) fn origin(
        &self,
        kind: Kind,
        direction: Direction,
        want: &Want,
    ) -> Origin {
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
    /// The last page held, by identity (request and slot).
    pub(in crate::loader) fn last_key(&self) -> Option<(u64, u32)> {
        self.pages.back().map(|p| (p.request, p.slot))
    }

    /// A forward finite read's page joins the end of the view.
    #[inline]
    pub(in crate::loader) fn append(
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
    pub(in crate::loader) fn prepend(
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
    /// starts at `n`, unless the view holds more than `n` items before it, or holds the
    /// source's start (its numbers are the source's own already).
    pub(in crate::loader) fn number_next_at(&mut self, n: u64) {
        let held = self.covered_end - self.base_offset;
        if n >= held && n != self.covered_end && !self.start_of_source {
            self.renumber(n as i128 - self.covered_end as i128);
        }
    }

    /// The host counted `n` items before the first held page: renumber so it starts at `n`,
    /// unless the view holds the source's start (its numbers are the source's own already).
    pub(in crate::loader) fn number_first_at(&mut self, n: u64) {
        if n != self.base_offset && !self.start_of_source {
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
        // The memo's positions were counted in the old numbering.
        self.memo.forget();
    }

    /// The renumbering since the last call: the host's window moves by the same amount, so
    /// it stays on the same items.
    #[inline]
    pub(in crate::loader) fn take_shift(&mut self) -> i128 {
        std::mem::take(&mut self.shift)
    }

    /// A finite read settled current: whether it reached the end of the source (forward) or
    /// its start (backward; see [`View::prepend`]).
    #[inline]
    pub(in crate::loader) fn extended(&mut self, direction: Direction, end_of_source: bool) {
        if direction == Direction::Forward {
            self.end_of_source = end_of_source;
        }
        self.changed = true;
    }

    /// Rebuilds the next repair around `cursor`, whose next item gets position `at`.
    pub(in crate::loader) fn jump_to(&mut self, at: u64, cursor: Cursor, cursors: &mut CursorPool) {
        if let Some((_, old)) = self.jump.replace((at, cursor)) {
            cursors.recycle(old);
        }
    }

    /// Moves an empty view with nothing in flight to `cursor` at position `at` directly.
    pub(in crate::loader) fn move_empty(
        &mut self,
        at: u64,
        cursor: Cursor,
        cursors: &mut CursorPool,
    ) {
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
}
