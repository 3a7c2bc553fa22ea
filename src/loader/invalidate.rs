//! The loader's events that rebuild the view: `invalidate`, `invalidate_range` and `jump`.
//!
//! The source changed anywhere, or only in a range of cursors, or the view moves around a
//! cursor. Each takes an epoch from the ledger and may start a repair.

use super::cursor::cursor_le;
use super::record::Call;
use super::{LedgerError, Loader, LoaderError, MAX_CURSOR_LEN, MAX_POSITION};

impl Loader {
    /// The source changed, anywhere: the next repair re-reads the window around the anchor
    /// and replaces every page.
    pub fn invalidate(&mut self) -> Result<(), LoaderError> {
        let r = self.invalidate_unrecorded();
        self.note(Call::Invalidate, &r);
        r
    }

    fn invalidate_unrecorded(&mut self) -> Result<(), LoaderError> {
        self.open()?;
        self.ledger.invalidate(&mut self.scratch)?;
        self.view.owe_whole();
        self.view.memo_mut().forget();
        self.pump();
        Ok(())
    }

    /// The source changed, but only at positions in `[from, to]`: `from` empty is the
    /// source's start, `to` `None` its end; `cmp` orders two (non-empty) cursors as the source
    /// does. The next repair re-reads only the held pages that may hold a changed item (an
    /// item lies in a page when it comes after the page's start cursor and at or before its
    /// end cursor), from the first such page's start cursor, with reads bounded (`Read::until`)
    /// by the start of the first page kept after them, and rejoins there: the pages before
    /// and after are kept, not re-read, not released and not reordered. The pages it replaces
    /// are released when it commits, and the pages after it move by the net change. Such pages
    /// wholly outside the window plus prefetch are released when the repair starts (with the
    /// pages between them and the view's edge) instead of re-read, and a repair that would
    /// read on past the window plus prefetch stops there (the view then ends where it
    /// stopped). A change
    /// outside the held pages and outside every read still needed (a finite read forward reads
    /// what follows its cursor, backward what precedes it; a running repair counts as
    /// touching) supersedes nothing and re-reads nothing: no repair starts. When the only read
    /// that may hold it is a forward read whose cursor lies before `from`, its answer decides
    /// ([`Loader::settle_ordered`]): one that ends before `from` without claiming the source's
    /// end did not reach it. Several ranged
    /// invalidations before a commit merge; a whole one ([`Loader::invalidate`]) subsumes them.
    ///
    /// A range too narrow (a change outside it) is a host bug: the view may then be wrong
    /// outside what was re-read, until the next invalidation that covers it; nothing leaks.
    pub fn invalidate_range(
        &mut self,
        from: &[u8],
        to: Option<&[u8]>,
        cmp: &mut dyn FnMut(&[u8], &[u8]) -> std::cmp::Ordering,
    ) -> Result<(), LoaderError> {
        if self.record.0.is_none() {
            return self.invalidate_range_unrecorded(from, to, cmp);
        }
        // The host's answers go into the log: a replay gives them back in the same order.
        let mut answers = Vec::new();
        let r = self.invalidate_range_unrecorded(from, to, &mut |a: &[u8], b: &[u8]| {
            let o = cmp(a, b);
            answers.push(o);
            o
        });
        let call = Call::Range {
            from,
            to,
            answers: &answers,
        };
        self.note(call, &r);
        r
    }

    fn invalidate_range_unrecorded(
        &mut self,
        from: &[u8],
        to: Option<&[u8]>,
        cmp: &mut dyn FnMut(&[u8], &[u8]) -> std::cmp::Ordering,
    ) -> Result<(), LoaderError> {
        if super::mutant::on(super::mutant::Mutant::RangedAsWhole) {
            return self.invalidate_unrecorded();
        }
        self.open()?;
        let longest = from.len().max(to.map_or(0, <[u8]>::len));
        if longest > MAX_CURSOR_LEN {
            return Err(LoaderError::CursorTooLong(longest));
        }
        if let Some(t) = to {
            let reversed = match (from.is_empty(), t.is_empty()) {
                (_, true) => !from.is_empty(),
                (true, false) => false,
                (false, false) => cmp(from, t) == std::cmp::Ordering::Greater,
            };
            if reversed {
                return Err(LoaderError::RangeReversed);
            }
        }
        // Refuse before marking anything: the invalidation takes an epoch and may start a
        // repair.
        if self.ledger.epoch() == u64::MAX {
            return Err(LedgerError::EpochOverflow.into());
        }
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        let marked = self.view.mark_range(from, to, cmp);
        let before_view =
            !self.view.start_of_source() && cursor_le(cmp, from, self.view.base_cursor());
        self.view.memo_mut().changed_from(from, before_view, cmp);
        self.out.stats.ranged_invalidations += 1;
        let mut le = |a: &[u8], b: &[u8]| cursor_le(cmp, a, b);
        // A chain or full read, running or failed and kept for its retry, may have staged
        // pages the change hits: it counts as touching.
        let repairing = self.ledger.repair_live() || self.resume.is_some();
        // A forward finite read whose cursor lies before `from` is not decided here when
        // nothing else is touched: its answer says how far it reached (`settle_ordered`).
        let defer = marked == 0 && !repairing;
        if marked > 0
            || repairing
            || self
                .reads
                .may_touch(from, to, defer, &mut le, &mut self.pools.cursors)
        {
            self.ledger.invalidate(&mut self.scratch)?;
        }
        // Otherwise no page held and no read still needed can hold a changed item, or only
        // a forward read's answer can tell: nothing is superseded and nothing re-read. Reads
        // to come see the change; a claim of the source's end past the last page was dropped
        // above.
        self.pump();
        Ok(())
    }

    /// Rebuilds the view around `cursor`: the item just after it gets `position`, and the
    /// window moves to start there (its length kept). The empty cursor is the source's
    /// start, where positions are the source's own: its first item gets 0, whatever
    /// `position` says, and the window starts at 0 (counted in
    /// [`Stats::renumbered`](super::Stats::renumbered)). As with any repair, the old view
    /// stays until the new one commits; the repair reads the window plus prefetch around the
    /// cursor, whatever the distance. A loader with nothing held, nothing in flight and
    /// nothing owed moves at once, with no invalidation (a starting point, such as the end of
    /// a log); a page failure recorded stays recorded, and its retry reads from the anchor.
    /// Otherwise (a full read still owed after an own failure included) the jump starts over
    /// as a far move does, whatever is in flight or failed: the repair or full read in flight
    /// is let go, a failed one is not resumed, and a recorded failure is retried at once.
    pub fn jump(&mut self, cursor: &[u8], position: u64) -> Result<(), LoaderError> {
        let r = self.jump_unrecorded(cursor, position);
        self.note(Call::Jump(cursor, position), &r);
        r
    }

    fn jump_unrecorded(&mut self, cursor: &[u8], position: u64) -> Result<(), LoaderError> {
        self.open()?;
        if cursor.len() > MAX_CURSOR_LEN {
            return Err(LoaderError::CursorTooLong(cursor.len()));
        }
        // Positions count items from there on: leave them room to grow.
        if position > MAX_POSITION {
            return Err(LoaderError::WindowOverflow);
        }
        position
            .checked_add(self.window.len)
            .ok_or(LoaderError::WindowOverflow)?;
        let idle =
            self.view.pages().is_empty() && self.reads.len() == 0 && self.ledger.is_quiescent();
        if !idle {
            if self.ledger.epoch() == u64::MAX {
                return Err(LedgerError::EpochOverflow.into());
            }
            if self.ledger.next_id() == u64::MAX {
                return Err(LedgerError::IdOverflow.into());
            }
        }
        // The empty cursor is the source's start, where positions are the source's own: its
        // first item is at 0 whatever `position` says, and the window starts there (a
        // renumbering, counted as one).
        let position = if cursor.is_empty() {
            self.out.stats.renumbered += u64::from(position != 0);
            0
        } else {
            position
        };
        let cursor = self.pools.cursors.make(cursor);
        self.out.stats.jumps += 1;
        self.follow_jumped();
        // The host's positions from here on: what the memo knew was counted otherwise.
        self.view.memo_mut().forget();
        self.window.start = position;
        self.window_moved();
        if idle {
            self.view
                .move_empty(position, cursor, &mut self.pools.cursors);
        } else {
            // A far start, as a far move's: whatever is in flight or failed, it starts here.
            self.start_over(position, cursor)?;
            self.keep_repairs_within();
        }
        self.pump();
        Ok(())
    }
}
