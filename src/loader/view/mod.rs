//! The view: the pages shown, in source order, and where they sit in the source (the first
//! held page's offset and cursor, the covered end, whether it reaches the end of the
//! source); a commit's swap, dropping pages far behind the window, closing gaps, and the
//! end-cursor memo a finite read continues from.
//!
//! This file holds the view's types and its lookups; the rest, one concept each:
//! `anchor` (where a new request reads from, and how the held items are numbered),
//! `commit` (a repair's swap, whole or ranged, and the marks a ranged invalidation leaves),
//! `trim` (dropping the pages the window no longer needs, closing gaps) and `memo` (the
//! cursors of pages read, kept by position for far moves).

mod anchor;
mod commit;
mod memo;
mod trim;

use memo::Memo;
pub use memo::ENTRY_BYTES as MEMO_ENTRY_BYTES;

use super::{Cursor, Direction};
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// The cursors of pages read and let go, by position (see `memo`).
    memo: Memo,
    /// The view is current (no invalidation owed): pages dropped now go into the memo.
    current: bool,
}

impl View {
    /// An empty view at the source's start, whose memo keeps `memo_bytes` of cursors.
    pub(super) fn new(memo_bytes: u64) -> View {
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
            memo: Memo::new(memo_bytes),
            current: true,
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

    /// Items were added after the source's last item: the view no longer reaches the end
    /// (a tail cursor past empty pages still holds: the new items come after it).
    pub(super) fn grew(&mut self) {
        if self.end_of_source {
            self.end_of_source = false;
            self.changed = true;
        }
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

    /// Whether a tail cursor (past empty pages after the last page) is known.
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn tail_known(&self) -> bool {
        self.tail_cursor.is_some()
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

    /// The cursor memo.
    #[inline]
    pub(super) fn memo(&self) -> &Memo {
        &self.memo
    }

    #[inline]
    pub(super) fn memo_mut(&mut self) -> &mut Memo {
        &mut self.memo
    }

    /// Whether the view is current (no invalidation owed). While it is, the pages it drops
    /// go into the memo, and reaching the source's start makes the numbering the source's
    /// own.
    #[inline]
    pub(super) fn set_current(&mut self, current: bool) {
        self.current = current;
        if current && self.start_of_source && self.base_offset == 0 {
            self.memo.own_numbers();
        }
    }

    /// Remembers where every held page starts, and where the last one ends (the view is
    /// current, and about to be replaced by a far move).
    pub(super) fn remember_held(&mut self) {
        for at in 0..self.pages.len() {
            let start = self.pages[at].start;
            let cursor = self.start_cursor_of(at).clone();
            self.memo.record(start, &cursor);
        }
        if let Some(last) = self.pages.back() {
            let (end, cursor) = (self.covered_end, last.end_cursor.clone());
            self.memo.record(end, &cursor);
        }
    }

    /// A jump waiting for its repair: the position its cursor's next item gets.
    #[inline]
    pub(super) fn pending_jump(&self) -> Option<u64> {
        self.jump.as_ref().map(|(at, _)| *at)
    }
}

/// The checker's canonical form of a page: its acquisition, epoch and request by class.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Page {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::Class;
        let Page {
            acquisition,
            count,
            epoch,
            start,
            end_cursor,
            request,
            slot,
            dirty,
        } = self;
        e.id(Class::Acquisition, *acquisition);
        count.canon(e);
        e.id(Class::Epoch, *epoch);
        e.num(*start);
        end_cursor.canon(e);
        e.id(Class::Request, *request);
        slot.canon(e);
        dirty.canon(e);
    }
}

/// The checker's canonical form of a ranged run: its first and last pages' names (request
/// and slot). The `Debug`-text form classified numbers by field name: it kept `first`'s
/// request id raw, and took both numbers of `last` for read ids.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Run {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::{Class, Form};
        let Run { first, last } = self;
        match e.form() {
            Form::Fields => {
                for (request, slot) in [first, last] {
                    e.id(Class::Request, *request);
                    slot.canon(e);
                }
            }
            Form::AsText => {
                e.num(first.0);
                first.1.canon(e);
                e.id(Class::Read, last.0);
                e.id(Class::Read, u64::from(last.1));
            }
        }
    }
}

#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for View {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        let View {
            pages,
            base_offset,
            base_cursor,
            covered_end,
            tail_cursor,
            end_of_source,
            start_of_source,
            jump,
            shift,
            whole,
            changed,
            memo,
            current,
        } = self;
        pages.canon(e);
        e.num(*base_offset);
        base_cursor.canon(e);
        e.num(*covered_end);
        tail_cursor.canon(e);
        end_of_source.canon(e);
        start_of_source.canon(e);
        e.opt(jump, |e, (position, cursor)| {
            e.num(*position);
            cursor.canon(e);
        });
        shift.canon(e);
        whole.canon(e);
        changed.canon(e);
        memo.canon(e);
        current.canon(e);
    }
}
