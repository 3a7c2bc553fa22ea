//! Growing sources: `appended` (items were added after the source's last item, and nothing
//! else changed) and follow mode (`follow`: the window pinned to the source's end, as
//! `tail -f` and `less +F` do).
//!
//! Both are loader policy over the ledger's existing actions: an append takes no epoch and
//! starts no repair (no held page can hold a new item), it only withdraws the view's claim to
//! reach the source's end, so the pump issues an ordinary finite read forward from the last
//! held cursor, which returns only the new items. A read issued before the append whose
//! answer claims the end may have missed them: its items are kept, its claim is not (the
//! next read forward looks again). Follow mode moves the window, as a renumbering does; the
//! ledger never sees it.

use super::record::Call;
use super::{Direction, Loader, LoaderError};

/// The follow state: whether the host asked to follow, whether the window is pinned to the
/// end now, and what the loader knows of the end.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Follow {
    /// The host asked to follow ([`Loader::follow`]): a move back to the end pins again.
    pub(super) on: bool,
    /// The window is pinned to the source's end: it stays on the last `len` items.
    pub(super) pinned: bool,
    /// Reads with an id below this were issued before the last append: an answer of theirs
    /// that claims the source's end is not believed (it may predate the new items).
    pub(super) reads_before: u64,
    /// The view reached the source's end, and only appends came since: the end is where the
    /// forward reads in flight will find it.
    pub(super) grown: bool,
    /// The source's end as last seen (the covered end while the view reached it): where a
    /// pin from far back moves the window.
    pub(super) last_end: Option<u64>,
}

impl Follow {
    /// The view was renumbered by `by`: the end last seen moves with it.
    pub(super) fn shift(&mut self, by: i128) {
        if let Some(e) = self.last_end.as_mut() {
            *e = (*e as i128 + by).clamp(0, u64::MAX as i128) as u64;
        }
    }
}

impl Loader {
    /// Items were added after the source's last item, and nothing else changed (a log line
    /// written, a chat message, a row with a growing key). The cheap report of an append: no
    /// held page can hold a new item, so nothing is re-read, no repair starts and no epoch is
    /// taken; the view only stops claiming to reach the source's end, and when the window
    /// (or follow mode) wants the end, one finite read forward from the last held cursor
    /// returns only the new items. A read in flight keeps its items; its claim of the end, if
    /// any, is not believed, and the next read forward looks again. Anything else changed
    /// (an item updated, inserted before the end, or removed) is an invalidation.
    pub fn appended(&mut self) -> Result<(), LoaderError> {
        let r = self.appended_unrecorded();
        self.note(Call::Appended, &r);
        r
    }

    fn appended_unrecorded(&mut self) -> Result<(), LoaderError> {
        if super::mutant::on(super::mutant::Mutant::AppendedInvalidates) {
            return self.invalidate();
        }
        self.open()?;
        self.follow.reads_before = self.reads.next_id();
        self.follow.grown |= self.view.end_of_source();
        self.view.grew();
        // A repair or retry may have read to the end already: what it says of the end may
        // predate the new items too.
        self.requests.trim_repairs(|w| {
            w.reached_end = false;
            true
        });
        if let Some(w) = self.resume.as_mut() {
            w.reached_end = false;
        }
        self.pump();
        Ok(())
    }

    /// Follow mode: with `on`, pins the window to the source's end (its length kept): while
    /// pinned, the window stays on the last `len` items as the source grows, reading forward
    /// until the end when the view does not reach it yet. A window move away from the end
    /// unpins it; a move whose window reaches the end pins it again (as `less +F` does),
    /// until `follow(false)`. A jump unpins. When the view was moved far from the end, the
    /// pin moves the window back to the end last seen (a far move), then follows from there.
    pub fn follow(&mut self, on: bool) -> Result<(), LoaderError> {
        let r = self.follow_unrecorded(on);
        self.note(Call::Follow(on), &r);
        r
    }

    fn follow_unrecorded(&mut self, on: bool) -> Result<(), LoaderError> {
        self.open()?;
        self.follow.on = on;
        if !on {
            self.follow.pinned = false;
            self.pump();
            return Ok(());
        }
        let len = self.window.len;
        let (_, end) = self.view.covered();
        // The end last seen lies past the held pages: move there first (far, through the
        // cursors remembered, when it is far), then pin.
        if let Some(last) = self.follow.last_end.filter(|&e| e > end) {
            let start = last.saturating_sub(len);
            self.move_window(start, len, None)?;
        }
        self.follow.pinned = true;
        self.pump();
        Ok(())
    }

    /// Whether the window is pinned to the source's end (follow mode, and not moved away).
    pub fn following(&self) -> bool {
        self.follow.pinned
    }

    /// A window move: pinned when follow mode is on and the window reaches the end of the
    /// held items while the view reaches the source's end (or only appends came since);
    /// otherwise unpinned.
    pub(super) fn follow_moved(&mut self, start: u64, len: u64) {
        if !self.follow.on {
            return;
        }
        let (_, end) = self.view.covered();
        let at_end = self.view.end_of_source() || self.follow.grown || self.follow.pinned;
        self.follow.pinned = at_end && start.saturating_add(len) >= end;
    }

    /// A jump: the window goes where the host put it.
    pub(super) fn follow_jumped(&mut self) {
        self.follow.pinned = false;
        self.follow.last_end = None;
    }

    /// While pinned, the window sits on the last `len` items held; not while a jump or far
    /// move waits for its repair (the held items are the old view's: the window stays where
    /// the move put it).
    #[inline]
    pub(super) fn pin_to_end(&mut self) {
        if self.follow.pinned && self.view.pending_jump().is_none() {
            let (_, end) = self.view.covered();
            self.window.start = end.saturating_sub(self.window.len);
            self.window_moved();
        }
    }

    /// While pinned and the view does not reach the source's end, the view reads forward.
    #[inline]
    pub(super) fn wants_tail(&self) -> bool {
        self.follow.pinned && !self.view.end_of_source()
    }

    /// After a pump: what the loader knows of the end.
    #[inline]
    pub(super) fn note_end(&mut self) {
        if self.view.end_of_source() {
            self.follow.grown = false;
            self.follow.last_end = Some(self.view.covered().1);
        }
    }

    /// Whether an answer to forward read `read_id` that claims the source's end is believed:
    /// not when the read was issued before the last append.
    #[inline]
    pub(super) fn end_claim_believed(&self, read_id: u64, direction: Direction) -> bool {
        direction == Direction::Backward || read_id >= self.follow.reads_before
    }
}

/// The checker's canonical form: `reads_before` is compared with read ids, so it is ranked
/// with them; the end last seen is a position.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Follow {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        let Follow {
            on,
            pinned,
            reads_before,
            grown,
            last_end,
        } = self;
        on.canon(e);
        pinned.canon(e);
        e.id(crate::check::canon::Class::Read, *reads_before);
        grown.canon(e);
        e.opt(last_end, |e, n| e.num(*n));
    }
}
