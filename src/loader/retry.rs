//! The loader's events that may retry an own failure: `retry`, `set_window` and `tick`.
//!
//! `retry` retries now; a window move retries (P3); time fires a due backoff retry, and times
//! out superseded reads. An own failure is retried with a full-source read; a page failure (a
//! page read's own failure while nothing else was owed, under the churn rules) by reading the
//! same page again, unless the retry is a window move that moved the window, or the read the
//! window needs is no longer the failed one (the window moved, or a jump came, between its
//! issue and the retry): then it reads the full source as for an own failure. So
//! `retries_page` counts only true re-reads of the failed read. A repair failure (a repair's
//! own failure while nothing else was owed, under the churn rules) is retried as the repair
//! again, which resumes at the failed read with the pages staged so far (`schedule`'s
//! `resume_into`), unless the retry is a window move that moved the window, or an
//! invalidation came since: then the full source is read.

use super::record::Call;
use super::{Direction, Kind, LedgerError, Loader, LoaderError, Locate, Window};
use crate::ledger::Failure;

impl Loader {
    /// Retries a recorded own failure now (a full-source read; for a page failure, the page
    /// again; for a repair failure, the repair again, resumed at its failed read). Returns
    /// whether a read started; `false` when there is nothing to retry yet.
    pub fn retry(&mut self) -> Result<bool, LoaderError> {
        let r = self.retry_unrecorded();
        self.note(Call::Retry, &r);
        r
    }

    fn retry_unrecorded(&mut self) -> Result<bool, LoaderError> {
        self.open()?;
        let started = self.retry_recorded()?;
        if let Some(page) = started {
            self.out.stats.retries_explicit += 1;
            self.out.stats.retries_page += u64::from(page);
            self.backoff.deadline = None;
        }
        self.pump();
        Ok(started.is_some())
    }

    /// `ExplicitRetry` of the failure recorded, if one is enabled: a page failure reads the
    /// failed read again (the same cursor, direction and `until`) only while that is still
    /// the read the window needs; otherwise (the window moved, or a jump came, between its
    /// issue and now) the retry reads from the anchor, as a window move's does. Returns
    /// whether a read started, and whether it was the page again.
    fn retry_recorded(&mut self) -> Result<Option<bool>, LoaderError> {
        if !self.ledger.retry_enabled() {
            return Ok(None);
        }
        let page = self.ledger.failure() == Failure::Page;
        let full = super::mutant::on(super::mutant::Mutant::PageRetryFull);
        let started = if page && (!self.page_still_wanted() || full) {
            self.ledger
                .explicit_retry_moved(&mut self.scratch)?
                .map(|_| false)
        } else {
            self.ledger.explicit_retry(&mut self.scratch)?.map(|_| page)
        };
        let failed = self.page_failed.take();
        let again = match started {
            Some(true) => failed,
            _ => {
                if let Some((c, _)) = failed {
                    self.pools.cursors.recycle(c);
                }
                None
            }
        };
        if let Some((c, _)) = std::mem::replace(&mut self.page_retried, again) {
            self.pools.cursors.recycle(c);
        }
        Ok(started)
    }

    /// Whether the page read that failed is the finite read the view would issue now.
    fn page_still_wanted(&self) -> bool {
        let Some((cursor, direction)) = &self.page_failed else {
            return false;
        };
        let want = self.want();
        let needed = if self.view.short_after(&want) {
            Direction::Forward
        } else if self.view.short_before(&want) {
            Direction::Backward
        } else {
            return false;
        };
        needed == *direction && self.view.origin(Kind::Finite, needed, &want).cursor == *cursor
    }

    /// Moves the window. Growing it issues reads (forward after the last page, backward
    /// before the first); with a failure recorded, it retries (P3); pages the window no
    /// longer needs are released (`drop_margin`, `max_pages`). A window moved more than the
    /// jump threshold beyond the held pages starts at the nearest cursor the loader knows for
    /// it (`far`), as a jump does; [`Loader::set_window_located`] also asks the host.
    pub fn set_window(&mut self, start: u64, len: u64) -> Result<(), LoaderError> {
        let r = self.move_window(start, len, None);
        self.note(Call::Window(start, len), &r);
        r
    }

    /// [`Loader::set_window`], with the host's `locate` for a far move: it is called (at
    /// most once, before this returns) with the window's start when the move is far and no
    /// cursor the loader remembers lies within a page of it, and writes the cursor whose next
    /// item is at that position (in the source's own numbering), or returns `false` for
    /// unknown. An unknown answer, or a cursor longer than [`MAX_CURSOR_LEN`], falls back to
    /// the nearest cursor remembered, or the walk.
    ///
    /// [`MAX_CURSOR_LEN`]: super::MAX_CURSOR_LEN
    pub fn set_window_located(
        &mut self,
        start: u64,
        len: u64,
        locate: Locate<'_>,
    ) -> Result<(), LoaderError> {
        if self.record.0.is_none() {
            return self.move_window(start, len, Some(locate));
        }
        // The host's answer goes into the log: a replay gives it back.
        let mut asked: Option<Option<Vec<u8>>> = None;
        let r = self.move_window(
            start,
            len,
            Some(&mut |at: u64, out: &mut Vec<u8>| {
                let known = locate(at, out);
                asked = Some(known.then(|| out.clone()));
                known
            }),
        );
        let answer = asked.as_ref().map(|a| a.as_deref());
        self.note(Call::Located { start, len, answer }, &r);
        r
    }

    pub(super) fn move_window(
        &mut self,
        start: u64,
        len: u64,
        locate: Option<Locate<'_>>,
    ) -> Result<(), LoaderError> {
        self.open()?;
        start.checked_add(len).ok_or(LoaderError::WindowOverflow)?;
        self.follow_moved(start, len);
        let window = Window { start, len };
        let moved = self.window.start != start || self.window.len != len;
        // A far start takes an epoch and request ids: without room for them (counters
        // exhausted), the move walks, as it would with nothing known.
        if moved && self.far(&window) && self.far_room().is_ok() {
            if let Some((at, cursor)) = self.far_start(&window, locate) {
                self.window = window;
                self.window_moved();
                self.start_far(at, cursor)?;
                self.keep_repairs_within();
                self.pump();
                return Ok(());
            }
        }
        let retry = self.ledger.retry_enabled();
        // Refuse before moving anything, so that a refusal changes nothing: a retry takes a
        // request id.
        if retry && self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        if retry {
            // The failed page is the one to read again only while the window stays put.
            if !moved {
                let page = self.retry_recorded()? == Some(true);
                self.out.stats.retries_page += u64::from(page);
            } else {
                self.ledger.explicit_retry_moved(&mut self.scratch)?;
            }
            self.out.stats.retries_explicit += 1;
            self.backoff.deadline = None;
        }
        self.window = window;
        self.window_moved();
        if moved {
            self.keep_repairs_within();
        }
        self.pump();
        Ok(())
    }

    /// The window moved: a running repair or retry lets go of the pages it no longer covers.
    pub(super) fn keep_repairs_within(&mut self) {
        let want = self.want();
        let epoch = self.ledger.epoch();
        let (cursors, out) = (&mut self.pools.cursors, &mut self.out);
        // The chain and full reads only (a few), not every live request (one per page held).
        self.requests.trim_repairs(|w| {
            // A committed read's pages are the view's: no window move trims them again.
            if w.kind == Kind::Finite || w.in_view > 0 {
                return false;
            }
            // Only pages staged and not yet shown.
            if !(w.staged.is_empty() && w.staged_back.is_empty()) {
                w.keep_within(&want, cursors, out);
            }
            // An overtaken read that reads no more and keeps at most one page has nothing a
            // later move could trim (a failed one kept for its retry comes back through
            // `Requests::insert`).
            let done = w.read.is_none()
                && w.epoch < epoch
                && w.staged.len() <= 1
                && w.staged_back.is_empty();
            !done
        });
    }

    /// Time passed: fires a due backoff retry.
    pub fn tick(&mut self, now_ms: u64) -> Result<(), LoaderError> {
        let r = self.tick_unrecorded(now_ms);
        self.note(Call::Tick(now_ms), &r);
        r
    }

    fn tick_unrecorded(&mut self, now_ms: u64) -> Result<(), LoaderError> {
        self.open()?;
        let due = self
            .backoff
            .deadline
            .is_some_and(|d| d <= now_ms.max(self.now));
        if due && self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        self.now = self.now.max(now_ms);
        let timeout = self.config.read_timeout_ms;
        if timeout > 0 {
            for read_id in self.reads.timed_out(self.now, timeout) {
                if self.ledger.next_id() == u64::MAX {
                    break;
                }
                let at = self.reads.find(read_id)?;
                self.let_go(at)?;
                self.out.stats.timed_out += 1;
            }
        }
        if due {
            self.backoff.deadline = None;
            if let Some(page) = self.retry_recorded()? {
                self.backoff.retries += 1;
                self.out.stats.retries_auto += 1;
                self.out.stats.retries_page += u64::from(page);
            }
        }
        self.pump();
        Ok(())
    }
}
