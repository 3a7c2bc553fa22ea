//! The loader's answer events: `settle`, `settle_counted` and `fail`.
//!
//! Each is checked against the read it answers, then handed to the answer rules of its kind
//! (`answer`).

use super::answer::Step;
use super::backoff::Cause;
use super::cursor::{cursor_le, Le, Order};
use super::reads::Reads;
use super::record::Call;
use super::{
    ledger, Accepted, Answer, Kind, LedgerError, Loader, LoaderError, MAX_CURSOR_LEN, MAX_POSITION,
};

impl Loader {
    /// Answers a read with `count` items held by `acquisition`. On `Ok`, the loader owns the
    /// acquisition until it sends `Release` for it; on `Err`, nothing changed and the host
    /// still owns it.
    ///
    /// An empty page (`count` 0) whose `next_cursor` moved is progress: it takes no position,
    /// its acquisition is released at once, and the next read starts at `next_cursor` (a
    /// bounded read's too, short of its `until`). An unmoved `next_cursor` with items, or
    /// without items and without `end_of_source` (for a read not hinted cancelled), is
    /// [`Answer::CursorStalled`]: a chain escalates to a full read, a finite or full read
    /// records an own failure that waits for backoff.
    // The answer path of its own for the plain answer (no count, no order): its five
    // arguments travel in registers, and the code for a host's count is not in it.
    #[inline(never)]
    pub fn settle(
        &mut self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
    ) -> Result<Answer, LoaderError> {
        if !self.noting() {
            return self.settle_unrecorded(
                read_id,
                acquisition,
                count,
                next_cursor,
                end_of_source,
                None,
                None,
            );
        }
        self.settle_noted(
            read_id,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            None,
            None,
        )
    }

    /// [`Loader::settle`] from a host that knows how many items come before the page's first
    /// item (`items_before`; a count query, an offset in the answer). When the page enters
    /// the view (now, or when its repair commits), the view is renumbered so that the page
    /// starts at that position, and the window moves with it: the positions become the
    /// source's own without reading back to its start. A count that contradicts the view
    /// (fewer items before the page than the view holds before it) is ignored, as is one over
    /// [`MAX_POSITION`], and any count while the view (or the repair the page commits with)
    /// reaches the source's start, whose positions are the source's own already.
    pub fn settle_counted(
        &mut self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
        items_before: Option<u64>,
    ) -> Result<Answer, LoaderError> {
        self.settle_ordered(
            read_id,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            items_before,
            None,
        )
    }

    /// [`Loader::settle_counted`] with the host's order of cursors (`cmp`, as
    /// [`Loader::invalidate_range`] takes it). It is asked only when a ranged change was
    /// reported while this forward read was out, after the read's cursor and touching no held
    /// page (see `invalidate_range`): the answer decides. When its `next_cursor` comes before
    /// the change's `from` and it does not claim the source's end, its items cannot hold the
    /// change, and it is taken as any answer (current, when nothing else changed); otherwise
    /// the change is taken as an invalidation now, before the answer, which is then stale and
    /// read again after the repair. Without `cmp` (`settle`, `settle_counted`) such an answer
    /// counts as reaching the change.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn settle_ordered(
        &mut self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
        items_before: Option<u64>,
        cmp: Option<Order<'_>>,
    ) -> Result<Answer, LoaderError> {
        if !self.noting() {
            return self.settle_unrecorded(
                read_id,
                acquisition,
                count,
                next_cursor,
                end_of_source,
                items_before,
                cmp,
            );
        }
        self.settle_noted(
            read_id,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            items_before,
            cmp,
        )
    }

    /// [`Loader::settle_ordered`] while recording: the call, `compare`'s answers and the
    /// outcome go into the log. Kept out of the answer path's code.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn settle_noted(
        &mut self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
        items_before: Option<u64>,
        cmp: Option<Order<'_>>,
    ) -> Result<Answer, LoaderError> {
        // Recording: the host's answers to `cmp` go into the log, and a replay gives them back.
        let mut answers = Vec::new();
        let r = {
            let mut noted;
            let cmp: Option<Order<'_>> = match cmp {
                Some(cmp) => {
                    noted = |a: &[u8], b: &[u8]| {
                        let o = cmp(a, b);
                        answers.push(o);
                        o
                    };
                    Some(&mut noted)
                }
                None => None,
            };
            self.settle_unrecorded(
                read_id,
                acquisition,
                count,
                next_cursor,
                end_of_source,
                items_before,
                cmp,
            )
        };
        let call = Call::Settle {
            read_id,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            items_before,
            answers: &answers,
        };
        self.note(call, &r);
        r
    }

    /// A ranged change was reported after this forward read's cursor while it was out: its
    /// answer says whether it reached it. If it did, the change is the invalidation it would
    /// have been then, taken now, before this answer (which is then stale). One still current
    /// is the only one left to decide: the ledger's epoch has not moved since it was issued
    /// (so none is left to overflow, and the id was checked). The mark goes with the answer. Out
    /// of the answer path's code: marks are rare.
    #[cold]
    #[inline(never)]
    fn decide_ahead(
        &mut self,
        read_id: u64,
        at: usize,
        next_cursor: &[u8],
        end_of_source: bool,
        cmp: Option<Order<'_>>,
    ) -> Result<(), LoaderError> {
        let Some(ahead) = self.reads.ahead_of(read_id) else {
            return Ok(());
        };
        let current = self.requests.live(self.reads.get(at).request).epoch == self.ledger.epoch();
        let mut le = cmp.map(|c| move |a: &[u8], b: &[u8]| cursor_le(c, a, b));
        let reached = Reads::reached_ahead(
            ahead,
            next_cursor,
            end_of_source,
            le.as_mut().map(|l| l as Le<'_>),
        ) && !super::mutant::on(super::mutant::Mutant::AheadNeverReached);
        if current && reached {
            // The invalidation takes an epoch and may start a request, and the answer after it
            // may start another: refuse now, before anything changed (the mark included), if
            // there is no room for both.
            if self.ledger.epoch() == u64::MAX {
                return Err(LedgerError::EpochOverflow.into());
            }
            if self.ledger.next_id() >= u64::MAX - 1 {
                return Err(LedgerError::IdOverflow.into());
            }
            self.ledger.invalidate(&mut self.scratch)?;
        }
        if let Some(ahead) = self.reads.take_ahead(read_id) {
            self.pools.cursors.recycle(ahead);
        }
        Ok(())
    }

    // Always inlined into `settle_counted` (the answer path's one frame): a call of its own
    // cost a frame and the forwarding of seven arguments on every answer.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn settle_unrecorded(
        &mut self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
        items_before: Option<u64>,
        cmp: Option<Order<'_>>,
    ) -> Result<Answer, LoaderError> {
        self.open()?;
        let items_before = items_before.filter(|&n| n <= MAX_POSITION);
        let at = match self.reads.find(read_id) {
            Ok(at) => at,
            Err(e) => {
                // Let go of earlier: checked as any answer, then stale, and nothing keeps the
                // acquisition.
                if let Some(limit) = self.abandoned_limit(read_id) {
                    if count > limit {
                        return Err(LoaderError::CountOverLimit { count, limit });
                    }
                    if next_cursor.len() > MAX_CURSOR_LEN {
                        return Err(LoaderError::CursorTooLong(next_cursor.len()));
                    }
                }
                return if self.forget_abandoned(read_id) {
                    self.out.stats.accepted += 1;
                    self.out.stats.answered_stale += 1;
                    self.out.stats.late_answers += 1;
                    self.out.release(acquisition);
                    Ok(Answer::Stale)
                } else {
                    Err(e)
                };
            }
        };
        let limit = self.reads.get(at).limit;
        if count > limit {
            return Err(LoaderError::CountOverLimit { count, limit });
        }
        if next_cursor.len() > MAX_CURSOR_LEN {
            return Err(LoaderError::CursorTooLong(next_cursor.len()));
        }
        // Whatever follows may start a request; refuse now if no id is left.
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        if self.reads.ahead_of(read_id).is_some() {
            self.decide_ahead(read_id, at, next_cursor, end_of_source, cmp)?;
        }
        let read = self
            .reads
            .answer_page(at, next_cursor, &mut self.pools.cursors);
        // An unmoved cursor is a stall when the page had items, or when it had none yet did not
        // claim the source's end, unless the host was told it may let the read go.
        let advanced = read.advanced;
        let stalled = !advanced && (count > 0 || !(end_of_source || read.cancelled));
        let (request, kind) = (read.request, read.kind);
        // A read issued before an append may have missed the new items: its claim of the
        // source's end is not believed (see `follow`).
        let end_of_source = end_of_source && self.end_claim_believed(read_id, read.direction);
        self.out.stats.accepted += 1;
        self.out.stats.items_read += u64::from(count);
        let a = Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            stalled,
            advanced,
            items_before,
        };
        let (answer, read_on) = match kind {
            Kind::Finite => (self.settle_finite(&Accepted { ..a })?, false),
            Kind::Chain | Kind::Full => {
                if self.repair_retried == Some(read_id) {
                    // The read the repair's retry resumed at was answered: its cursor is not
                    // gone, and a later failure of the repair is a repair failure again.
                    self.repair_retried = None;
                    self.ledger.resume_answered(request);
                }
                match self.settle_step(a)? {
                    // No ledger effect waits either (a change ahead decided on this answer
                    // would have left one).
                    Step::ReadOn => (Answer::Current, self.scratch.is_empty()),
                    Step::Settled(answer) => (
                        answer,
                        answer == Answer::Current
                            && super::mutant::on(super::mutant::Mutant::SettledSkipsPump),
                    ),
                }
            }
        };
        if count == 0 {
            // An empty page enters no view and nothing reads it: its acquisition goes back
            // now (its request's record kept no copy, see `Work::accept`).
            self.out.release(acquisition);
        }
        let stats = &mut self.out.stats;
        match answer {
            Answer::Current => {
                stats.answered_current += 1;
                // Retries count in a row: any successful answer starts the count again, a
                // step of a long repair or retry included.
                self.backoff.succeeded();
                // Tested before it is taken: `take` writes the field back on every answer.
                if self.page_retried.is_some() {
                    if let Some((c, _)) = self.page_retried.take() {
                        self.pools.cursors.recycle(c);
                    }
                }
            }
            Answer::Stale => stats.answered_stale += 1,
            Answer::CursorStalled => {
                stats.cursor_stalls += 1;
                self.backoff.stalled(read_id, count);
            }
        }
        if read_on {
            // The step read on and changed nothing the pump reads: it would do nothing.
            #[cfg(any(test, feature = "testing"))]
            if super::guard::on() {
                self.assert_pumped();
            }
        } else {
            self.pump();
        }
        Ok(answer)
    }

    /// Answers a read with a failure. `code` is the host's, for its own records.
    pub fn fail(&mut self, read_id: u64, code: i32) -> Result<Answer, LoaderError> {
        let r = self.fail_unrecorded(read_id);
        self.note(Call::Fail(read_id, code), &r);
        r
    }

    /// [`Loader::fail`], not written to a recording (a call that makes it is).
    pub(super) fn fail_unrecorded(&mut self, read_id: u64) -> Result<Answer, LoaderError> {
        self.open()?;
        let at = match self.reads.find(read_id) {
            Ok(at) => at,
            Err(_) if self.forget_abandoned(read_id) => {
                self.out.stats.late_answers += 1;
                return Ok(Answer::Stale);
            }
            Err(e) => return Err(e),
        };
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        if self.reads.get(at).cancelled {
            // The loader hinted this read (its `Cancel` may still be queued behind a running
            // callback): a failure is how the host lets it go, and a later answer is late.
            self.let_go(at)?;
            self.pump();
            return Ok(Answer::Stale);
        }
        let read = self.reads.answer(at);
        // Its mark of a change ahead, if it had one: nothing of it enters the view, and its
        // retry reads after the change.
        if let Some(c) = self.reads.take_ahead(read_id) {
            self.pools.cursors.recycle(c);
        }
        // The page a page failure's retry read again failed again: through the lattice.
        let escalate = read.kind == Kind::Finite
            && !super::mutant::on(super::mutant::Mutant::PageRetriedForEver)
            && self
                .page_retried
                .as_ref()
                .is_some_and(|(c, d)| *c == read.cursor && *d == read.direction);
        if escalate {
            self.pools.cursors.recycle(read.cursor);
            if let Some((c, _)) = self.page_retried.take() {
                self.pools.cursors.recycle(c);
            }
        } else if read.kind == Kind::Finite {
            // Kept for a page failure's retry (see `Loader::retry_recorded`).
            let old = self.page_failed.replace((read.cursor, read.direction));
            if let Some((c, _)) = old {
                self.pools.cursors.recycle(c);
            }
        } else if self.repair_retried == Some(read_id) {
            // The read a repair failure's retry resumed at failed again: through the lattice,
            // and the full read that follows reads from the anchor, with fresh cursors.
            self.pools.cursors.recycle(read.cursor);
        } else {
            // The retry resumes here, with the steps that succeeded: a repair failure's retry
            // (a ranged repair's too) or a full read's (a ranged repair's is not resumed by a
            // full read, which replaces every page: see `fail_request`).
            let w = self.requests.live(read.request);
            if let Some(old) = w.resume_at.replace(read.cursor) {
                self.pools.cursors.recycle(old);
            }
        }
        let again = self.repair_retried.take() == Some(read_id);
        let failed = self.fail_request(read.request, !(escalate || again))?;
        if failed == ledger::Failed::Own {
            self.backoff.cause = Some(Cause::Failed { read_id });
        }
        self.pump();
        Ok(match failed {
            ledger::Failed::Own => Answer::Current,
            ledger::Failed::Superseded => Answer::Stale,
        })
    }
}
