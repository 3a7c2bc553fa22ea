//! Far moves: a window moved more than the jump threshold beyond the held pages starts at the
//! nearest cursor the loader knows for it (the cursor memo, the numbering origin, or the
//! host's `locate`), as a jump does, instead of walking page by page toward it.
//!
//! The decision, for a window whose wanted items (window ± prefetch) lie `distance` items
//! beyond what the view covers:
//! 1. `distance` at most the threshold: walk, as for any move.
//! 2. A memo entry (or the origin) within one page of the wanted start: start there.
//! 3. The host's `locate`, if given, asked for the window's start: start at its cursor,
//!    unless it answers unknown (or a cursor too long).
//! 4. The nearest memo entry, if nearer than the held pages: start there, and read the rest.
//! 5. Otherwise walk.
//!
//! Starting at a cursor is the jump's rebuild (`View::jump_to`, an invalidation whose
//! repair reads the window plus prefetch around it), with the window where the host put it.
//!
//! One rule for every far start (this one, and `Loader::jump`), whatever came before it: it
//! starts at its cursor. A repair or full read in flight (an earlier far start's rebuild, a
//! jump's, an invalidation's repair, a retry) reads nothing the new target needs: its read
//! is let go (a cancel hint, and a late answer is stale), as is a failed one kept for its
//! retry, so that neither resumes nor commits around the old anchor and walks from there.
//! In the ledger's terms the read in flight fails and the failure is retried at once
//! (`Fail`, then `ExplicitRetry` by a window move: a full read, which starts at the new
//! cursor); no rule of the ledger changes.

use super::{Cursor, Kind, Window};
use super::{LedgerError, Loader, LoaderError, JUMP_THRESHOLD_AUTO, MAX_CURSOR_LEN};

/// The host's answer to "which cursor has the item at this position just after it": the
/// bytes go into the buffer, and `true` says they are known. `false` is "unknown".
pub type Locate<'a> = &'a mut dyn FnMut(u64, &mut Vec<u8>) -> bool;

impl Loader {
    /// The jump threshold for a window of `len` items: the configured one, or (the default,
    /// `JUMP_THRESHOLD_AUTO`) the window plus twice the prefetch. `None`: always walk.
    pub(super) fn jump_threshold(&self, len: u64) -> Option<u64> {
        match self.config.jump_threshold {
            0 => None,
            JUMP_THRESHOLD_AUTO => {
                Some(len.saturating_add(self.config.prefetch_distance.saturating_mul(2)))
            }
            t => Some(t),
        }
    }

    /// Whether a move to `window` is far: more than the threshold beyond the held pages.
    pub(super) fn far(&self, window: &Window) -> bool {
        self.jump_threshold(window.len)
            .is_some_and(|t| self.distance(window) > t)
    }

    /// How far the items `window` wants lie beyond what the view covers (or, with a jump
    /// waiting for its repair, beyond the jump's position); 0 when they overlap or adjoin it.
    fn distance(&self, window: &Window) -> u64 {
        let want = window.want(self.config.prefetch_distance);
        let (from, to) = match self.view.pending_jump() {
            Some(at) => (at, at),
            None => self.view.covered(),
        };
        // At most one of the two is not 0: `want` lies after what is held, or before it.
        want.start
            .saturating_sub(to)
            .max(from.saturating_sub(want.end))
    }

    /// Where a move to `window` should start, when it is far: a position and the cursor
    /// whose next item sits there. `None`: walk.
    pub(super) fn far_start(
        &mut self,
        window: &Window,
        locate: Option<Locate<'_>>,
    ) -> Option<(u64, Cursor)> {
        let distance = self.distance(window);
        if !self.far(window) {
            return None;
        }
        // The pages held now are about to be replaced: remember where they start.
        if !self.revalidating() {
            self.view.remember_held();
        }
        let aim = window.want(self.config.prefetch_distance).start;
        let near = self.view.memo().nearest(aim);
        let cost = |at: u64| at.abs_diff(aim);
        if let Some((at, c)) = &near {
            if cost(*at) <= u64::from(self.config.page_size) {
                return Some((*at, c.clone()));
            }
        }
        if let Some(locate) = locate {
            let mut buf = std::mem::take(&mut self.locate_buf);
            buf.clear();
            let found = locate(window.start, &mut buf);
            let answer = (found && buf.len() <= MAX_CURSOR_LEN)
                .then(|| (window.start, self.pools.cursors.make(&buf)));
            self.locate_buf = buf;
            match answer {
                Some(a) => {
                    self.out.stats.located += 1;
                    // The source's numbering from here on: what the memo holds was counted
                    // in the view's, unless the two are the same.
                    if !self.view.memo().own() {
                        self.view.memo_mut().forget();
                    }
                    return Some(a);
                }
                None => self.out.stats.locate_unknown += 1,
            }
        }
        near.filter(|(at, _)| cost(*at) < distance)
    }

    /// Starts the view over at `cursor`, whose next item is at `at`, for the window the host
    /// just set: a loader holding nothing moves at once; otherwise the jump's rebuild, and a
    /// recorded failure is retried from there (a window move retries).
    pub(super) fn start_far(&mut self, at: u64, cursor: Cursor) -> Result<(), LoaderError> {
        self.out.stats.far_jumps += 1;
        // The source's start is position 0, whatever a wrong `locate` said.
        let at = if cursor.is_empty() { 0 } else { at };
        let idle =
            self.view.pages().is_empty() && self.reads.len() == 0 && self.ledger.is_quiescent();
        if idle {
            self.view.move_empty(at, cursor, &mut self.pools.cursors);
            // A window move retries a recorded failure (a page failure, with nothing else
            // owed): from here, as a full read.
            if self.ledger.retry_enabled() {
                self.ledger.explicit_retry_moved(&mut self.scratch)?;
                self.out.stats.retries_explicit += 1;
                self.backoff.deadline = None;
            }
            return Ok(());
        }
        self.start_over(at, cursor)
    }

    /// A far start's rebuild at `cursor` (its next item at `at`) on a loader that holds or
    /// reads something: the repair in flight and a failed one kept for its retry are let go
    /// (the module's rule), then the jump's rebuild, and a recorded failure is retried from
    /// there at once (a window move retries). Shared by far moves and `Loader::jump`.
    pub(super) fn start_over(&mut self, at: u64, cursor: Cursor) -> Result<(), LoaderError> {
        let failed_before = self.ledger.retry_enabled();
        self.let_go_repairs()?;
        self.view.jump_to(at, cursor, &mut self.pools.cursors);
        self.ledger.invalidate(&mut self.scratch)?;
        if self.ledger.retry_enabled() {
            self.ledger.explicit_retry_moved(&mut self.scratch)?;
            // A failure of the loader's own letting go is not one the host saw: only a
            // recorded one counts as retried.
            self.out.stats.retries_explicit += u64::from(failed_before);
            self.backoff.deadline = None;
        }
        Ok(())
    }

    /// Lets go of every chain or full read in flight (a cancel hint; its request fails in
    /// the ledger, and a late answer is stale) and of a failed one kept for its retry: none
    /// of their pages is kept, and nothing resumes them.
    fn let_go_repairs(&mut self) -> Result<(), LoaderError> {
        if super::mutant::on(super::mutant::Mutant::FarStartKeepsRepair) {
            if let Some(w) = self.resume.take() {
                self.out.release_all(&w.acqs);
                self.pools.recycle_work(w);
            }
            return Ok(());
        }
        let repairs: Vec<u64> = self
            .reads
            .iter()
            .filter(|(_, o)| o.kind != Kind::Finite)
            .map(|(id, _)| id)
            .collect();
        self.repair_retried = None;
        for read_id in repairs {
            self.reads.cancel(read_id, self.now, &mut self.out);
            let at = self.reads.find(read_id)?;
            let read = self.reads.answer(at);
            self.pools.cursors.recycle(read.cursor);
            self.ledger.fail(read.request, &mut self.scratch)?;
            self.requests.live(read.request).read = None;
            self.out.stats.abandoned += 1;
            self.remember_abandoned(read_id, read.limit);
        }
        // A failed request kept for its retry would resume where it was, not here.
        if let Some(w) = self.resume.take() {
            self.out.release_all(&w.acqs);
            self.pools.recycle_work(w);
        }
        for &id in self.ledger.failed() {
            if let Some(w) = self.requests.get_mut(id) {
                if let Some(c) = w.resume_at.take() {
                    self.pools.cursors.recycle(c);
                }
                w.discard(&mut self.pools.cursors, &mut self.out);
            }
        }
        Ok(())
    }

    /// Whether the ledger has room for a far start (an epoch and request ids).
    pub(super) fn far_room(&self) -> Result<(), LoaderError> {
        if self.ledger.epoch() == u64::MAX {
            return Err(LedgerError::EpochOverflow.into());
        }
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        Ok(())
    }
}
