//! The answer rules: how an accepted answer is classified ([`Answer`]) and what it does, by
//! the kind of its request (finite, chain or full step), and how a failure is recorded.

use super::{Cursor, Direction, Kind, Loader, LoaderError};
use crate::ledger::{Debt, Failed, Settled};

/// How an accepted answer was classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Authoritative: it is in the view, or will be when its request commits; for a failure,
    /// the loader's own failure, now waiting for a retry.
    Current,
    /// Superseded or overtaken: nothing of it enters the view; for a failure, it only raised
    /// the debt.
    Stale,
    /// The answer's cursor did not advance, and it had items or did not claim the source's
    /// end: a host bug (read again, it would loop). A chain escalated to a full read; a
    /// finite or full read recorded an own failure, which waits for backoff.
    CursorStalled,
}

/// What a chain's or full read's step came to.
pub(super) enum Step {
    /// It read on: its page was staged (or let go) and its request's next read issued, and
    /// nothing the pump reads changed: no ledger call, the view, the window and follow mode
    /// untouched, and a chain or full read still the one in flight. The answer is
    /// [`Answer::Current`]; the pump, which ran to its end after the last call, would find
    /// nothing to do, and `settle` skips it (an answer that changes nothing about what is
    /// held walks neither the view nor the repairs).
    ReadOn,
    /// It settled, or was classified so: the pump follows.
    Settled(Answer),
}

/// An answer `settle` accepted, on its way to the rule for its request's kind.
#[derive(Clone, Copy)]
pub(super) struct Accepted<'a> {
    pub(super) request: u64,
    pub(super) acquisition: u64,
    pub(super) count: u32,
    pub(super) next_cursor: &'a [u8],
    pub(super) end_of_source: bool,
    /// The cursor did not advance, yet the answer had items, or had none and neither claimed
    /// the source's end nor answered a cancelled read: a host bug (an empty page that does
    /// not move would be read again forever).
    pub(super) stalled: bool,
    /// The cursor moved: `next_cursor` differs from the read's own.
    pub(super) advanced: bool,
    /// The host's count of the items before the page's first item, if it knows it.
    pub(super) items_before: Option<u64>,
}

impl Loader {
    /// A finite read's answer: its page joins the view if the ledger finds it current.
    pub(super) fn settle_finite(&mut self, a: &Accepted<'_>) -> Result<Answer, LoaderError> {
        let &Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            stalled,
            items_before,
            ..
        } = a;
        let w = self.requests.live(request);
        let slot = w.accept(acquisition, count);
        let epoch = w.epoch;
        if stalled {
            // Read again, the page would stall again: the retry reads the full source.
            self.fail_request(request, false)?;
            return Ok(Answer::CursorStalled);
        }
        let direction = w.direction;
        let overshot = std::mem::take(&mut w.overshot);
        match self.ledger.settle(request, &mut self.scratch)? {
            Settled::FiniteCurrent if overshot => {
                // The page it continued from went (`max_pages`) while it was out: its page
                // would join the view past a gap, so it goes back, and the view reads on
                // from where it ends now if the window needs it.
                let w = self.requests.live(request);
                w.release_slot(slot, &mut self.out);
                self.backoff.reset();
                Ok(Answer::Current)
            }
            Settled::FiniteCurrent => {
                match direction {
                    Direction::Forward if count > 0 => {
                        if let Some(n) = items_before {
                            self.view.number_next_at(n);
                        }
                        let end_cursor = self.pools.cursors.make(next_cursor);
                        self.view
                            .append(request, slot, acquisition, count, epoch, end_cursor);
                    }
                    // Empty pages cost no position; the next read continues past them.
                    Direction::Forward => self.view.skip_to(next_cursor, &mut self.pools.cursors),
                    Direction::Backward => {
                        let start_cursor = self.pools.cursors.make(next_cursor);
                        self.view.prepend(
                            request,
                            slot,
                            acquisition,
                            count,
                            epoch,
                            start_cursor,
                            end_of_source,
                        );
                        if let (Some(n), true) = (items_before, count > 0) {
                            self.view.number_first_at(n);
                        }
                    }
                }
                if count > 0 {
                    w.in_view += 1;
                }
                self.view.extended(direction, end_of_source);
                self.backoff.reset();
                Ok(Answer::Current)
            }
            _ => {
                // A stale page is never shown: it goes back now.
                self.requests
                    .live(request)
                    .discard(&mut self.pools.cursors, &mut self.out);
                Ok(Answer::Stale)
            }
        }
    }

    /// A chain's or full read's step: staged, then either the next step is issued or the
    /// request settles, committing its staged pages if the ledger finds it current.
    #[inline(always)]
    pub(super) fn settle_step(&mut self, a: Accepted<'_>) -> Result<Step, LoaderError> {
        let Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            stalled,
            advanced,
            items_before,
        } = a;
        // The answer again, for a rule out of line: built on its own branch, from the fields
        // (`a` itself is never written to memory on a step that reads on).
        let a = || Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            stalled,
            advanced,
            items_before,
        };
        let epoch_now = self.ledger.epoch();
        let debt_full = self.ledger.debt() == Debt::Full;
        let w = self.requests.live(request);
        let slot = w.accept(acquisition, count);
        let kind = w.kind;
        // The epoch moved at a step boundary, or a superseded failure raised the debt to full
        // so the chain will be abandoned anyway: settle now rather than read on. Under the
        // churn rules an overtaken chain still commits, so it reads on to its end.
        let epoch_moved = w.epoch != epoch_now && !self.ledger.config().churn_rules();
        let overtaken = kind == Kind::Chain && (epoch_moved || debt_full);
        if stalled || overtaken {
            return self.step_abandoned(request, kind, stalled);
        }
        if w.ranged.is_some() {
            return self.step_ranged(&a(), slot);
        }
        let limit = self.config.page_size;
        // `self.want()`, borrowed as a field (the request's record is borrowed too), not
        // copied onto the stack.
        let want = &self.reach;
        let next = self.pools.cursors.make(next_cursor);
        if let (Some(n), true) = (items_before, count > 0) {
            // Where the anchor item is, by the host's count.
            w.counted = match w.direction {
                Direction::Forward => n.checked_sub(w.staged_items),
                Direction::Backward => Some(n + u64::from(count) + w.staged_back_items),
            };
        }
        if w.direction == Direction::Forward {
            let (mut next, mut end_of_source) = (next, end_of_source);
            if std::mem::take(&mut w.overshot) {
                // Pages past the window were let go while this read was out: its page lies
                // past them, and the forward reading ended at the last page kept.
                w.release_slot(slot, &mut self.out);
                self.pools.cursors.recycle(next);
                next = w.tail.clone();
                end_of_source = false;
            } else if count > 0 {
                w.stage(request, slot, acquisition, count, next.clone());
                if w.keep_within(want, &mut self.pools.cursors, &mut self.out) {
                    // The pages past the window went: the reading ends at the last one kept.
                    self.pools.cursors.recycle(next);
                    next = w.tail.clone();
                    end_of_source = false;
                }
            }
            if !(end_of_source || w.staged_items >= w.target) {
                if w.step == 0 {
                    // It survived its first step: size it for the rest.
                    let page_size = self.config.page_size as u64;
                    let steps = w.target.div_ceil(page_size).min(1 << 20) as usize;
                    self.pools.size_for_steps(w, steps);
                }
                w.step += 1;
                self.reads
                    .issue(request, w, next, limit, self.now, &mut self.out);
                return Ok(Step::ReadOn);
            }
            self.step_forward_done(request, next, end_of_source)
        } else {
            self.step_backward(&a(), slot, next)
        }
    }

    /// A chain's or full read's forward reading covered the window's end plus prefetch (its
    /// last forward page `next`): then the prefetch before the anchor, or the request
    /// settles. Out of the answer path's code: once per request.
    #[inline(never)]
    fn step_forward_done(
        &mut self,
        request: u64,
        next: Cursor,
        end_of_source: bool,
    ) -> Result<Step, LoaderError> {
        let limit = self.config.page_size;
        let w = self.requests.live(request);
        w.reached_end = end_of_source;
        let old = std::mem::replace(&mut w.tail, next);
        self.pools.cursors.recycle(old);
        if w.back_target > 0 {
            w.direction = Direction::Backward;
            w.step += 1;
            let from = w.back_cursor.clone();
            self.reads
                .issue(request, w, from, limit, self.now, &mut self.out);
            return Ok(Step::ReadOn);
        }
        self.step_settle(request)
    }

    /// A chain's or full read's backward step (its answer accepted into `slot`, its
    /// `next_cursor` made into `next`). Out of the answer path's code: a repair reads forward
    /// to the window's end plus prefetch first, and backward only for the prefetch before it.
    #[inline(never)]
    fn step_backward(
        &mut self,
        a: &Accepted<'_>,
        slot: u32,
        next: Cursor,
    ) -> Result<Step, LoaderError> {
        let &Accepted {
            request,
            acquisition,
            count,
            end_of_source,
            ..
        } = a;
        let limit = self.config.page_size;
        let want = self.want();
        let w = self.requests.live(request);
        if std::mem::take(&mut w.overshot) {
            // Pages before the window were let go while this read was out: its page lies
            // before them, and the backward reading is done.
            w.release_slot(slot, &mut self.out);
            self.pools.cursors.recycle(next);
        } else {
            if count > 0 {
                w.stage_back(request, slot, acquisition, count);
            }
            w.reached_start = end_of_source || next.is_empty();
            let old = std::mem::replace(&mut w.back_cursor, next);
            self.pools.cursors.recycle(old);
            w.keep_within(&want, &mut self.pools.cursors, &mut self.out);
            if !(w.reached_start || w.staged_back_items >= w.back_target) {
                w.step += 1;
                let from = w.back_cursor.clone();
                self.reads
                    .issue(request, w, from, limit, self.now, &mut self.out);
                return Ok(Step::ReadOn);
            }
        }
        self.step_settle(request)
    }

    /// A step that stalled or was overtaken: the request fails or settles now, reading no
    /// further. Out of the answer path's code.
    #[cold]
    #[inline(never)]
    fn step_abandoned(
        &mut self,
        request: u64,
        kind: Kind,
        stalled: bool,
    ) -> Result<Step, LoaderError> {
        if stalled {
            self.fail_request(request, false)?;
            // A tie the host's cursors cannot break: a chain escalates to a full read at once.
            if kind == Kind::Chain && self.ledger.explicit_retry(&mut self.scratch)?.is_some() {
                self.backoff.deadline = None;
            }
            return Ok(Step::Settled(Answer::CursorStalled));
        }
        // Overtaken and abandoned: nothing it read will be shown, so every page goes back now.
        self.ledger.settle(request, &mut self.scratch)?;
        self.requests
            .live(request)
            .discard(&mut self.pools.cursors, &mut self.out);
        Ok(Step::Settled(Answer::Stale))
    }

    /// A ranged repair's step (its answer accepted into `slot`). Out of the answer path's
    /// code: the steady stream's steps are whole repairs'.
    #[inline(never)]
    fn step_ranged(&mut self, a: &Accepted<'_>, slot: u32) -> Result<Step, LoaderError> {
        let &Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            advanced,
            ..
        } = a;
        let limit = self.config.page_size;
        let want = self.want();
        let w = self.requests.live(request);
        if std::mem::take(&mut w.overshot) {
            // The window moved while this read was out, and the repair was cut short
            // before it: its page goes back, and the repair commits what it kept.
            w.release_slot(slot, &mut self.out);
            return self.settle_ranged(request, false).map(Step::Settled);
        }
        // A ranged repair reads forward until its bound: a short page with items, the
        // bound itself, or the source's end. An empty page whose cursor moved is progress
        // (a filtered stretch): it reads on from there, as every other path does.
        let next = self.pools.cursors.make(next_cursor);
        if count > 0 {
            w.stage(request, slot, acquisition, count, next.clone());
        }
        if !super::mutant::on(super::mutant::Mutant::RangedKeepsBefore) {
            w.cut_run_front(&want, &mut self.pools.cursors, &mut self.out);
        }
        let at_bound = w.until.as_deref() == Some(next_cursor);
        let short = count < limit && !(count == 0 && advanced);
        if !(end_of_source || short || at_bound)
            && w.base_offset + w.staged_items >= want.end
            && !super::mutant::on(super::mutant::Mutant::RangedReadsPast)
        {
            // It would read on past the window plus prefetch: it stops there instead.
            w.keep_run_within(&want, &mut self.pools.cursors, &mut self.out);
            self.pools.cursors.recycle(next);
            return self.settle_ranged(request, false).map(Step::Settled);
        }
        if !(end_of_source || short || at_bound) {
            w.step += 1;
            self.reads
                .issue(request, w, next, limit, self.now, &mut self.out);
            return Ok(Step::ReadOn);
        }
        self.pools.cursors.recycle(next);
        self.settle_ranged(request, end_of_source)
            .map(Step::Settled)
    }

    /// A chain's or full read's last step was answered: the request settles, committing its
    /// staged pages if the ledger finds it current. Out of the answer path's code: one step
    /// in a hundred at 100 pages.
    #[inline(never)]
    fn step_settle(&mut self, request: u64) -> Result<Step, LoaderError> {
        let w = self.requests.live(request);
        let tail = std::mem::take(&mut w.tail);
        let current = w.epoch == self.ledger.epoch();
        let resumed_stale = w.resumed_stale;
        let answer = match self.ledger.settle(request, &mut self.scratch)? {
            Settled::ChainCommitted
            | Settled::ChainOvertakenCommitted { .. }
            | Settled::FullCommitted { .. } => {
                self.view.commit(
                    request,
                    &mut self.requests,
                    &mut self.pools.cursors,
                    &mut self.out,
                );
                // Every page was replaced: what ranged invalidations marked is gone with the
                // old pages. One that arrived meanwhile may have changed what was just read,
                // so an overtaken read owes a whole repair still.
                if current {
                    self.view.whole_repaired();
                } else {
                    self.view.owe_whole();
                }
                // The forward reads may have ended on empty pages: the next finite read
                // continues after them.
                self.view.skip_to(&tail, &mut self.pools.cursors);
                self.backoff.reset();
                // Some pages predate invalidations that came before the retry: repair. (With the
                // epoch or the ids exhausted no call can do anything; the view stays.)
                if resumed_stale
                    && self.ledger.epoch() < u64::MAX
                    && self.ledger.next_id() < u64::MAX
                {
                    self.view.owe_whole();
                    self.ledger.invalidate(&mut self.scratch)?;
                }
                Answer::Current
            }
            _ => {
                self.requests
                    .live(request)
                    .discard(&mut self.pools.cursors, &mut self.out);
                Answer::Stale
            }
        };
        self.pools.cursors.recycle(tail);
        Ok(Step::Settled(answer))
    }

    /// A ranged repair read up to its bound (or has nothing to read): settles it, and if the
    /// ledger commits it, its pages replace the run it re-read, rejoining the pages kept
    /// around it. The window moves by the net change when it lies after the run.
    pub(super) fn settle_ranged(
        &mut self,
        request: u64,
        end_of_source: bool,
    ) -> Result<Answer, LoaderError> {
        let w = self.requests.live(request);
        let current = w.epoch == self.ledger.epoch();
        let truncated = w.truncated;
        // Cut short at the window's end: it replaces every page from its run's first on.
        let run = w.ranged.flatten().map(|r| match self.view.last_key() {
            Some(last) if truncated => super::view::Run { last, ..r },
            _ => r,
        });
        let end_of_source = end_of_source && !truncated;
        match self.ledger.settle(request, &mut self.scratch)? {
            Settled::ChainCommitted | Settled::ChainOvertakenCommitted { .. } => {
                let committed = self.view.commit_run(
                    request,
                    run,
                    end_of_source,
                    !current,
                    &mut self.requests,
                    &mut self.pools.cursors,
                    &mut self.out,
                );
                match committed {
                    Some((net, old_end)) => {
                        if net != 0 && self.window.start >= old_end {
                            self.window.shift(net);
                            self.window_moved();
                        }
                        self.out.stats.ranged_repairs += 1;
                    }
                    None => {
                        // The pages it was to replace were dropped meanwhile: it cannot
                        // rejoin. Nothing changed; a whole repair follows.
                        self.requests
                            .live(request)
                            .discard(&mut self.pools.cursors, &mut self.out);
                        self.view.owe_whole();
                        self.ledger.invalidate(&mut self.scratch)?;
                    }
                }
                self.backoff.reset();
                Ok(Answer::Current)
            }
            _ => {
                self.requests
                    .live(request)
                    .discard(&mut self.pools.cursors, &mut self.out);
                Ok(Answer::Stale)
            }
        }
    }

    /// Fails a request in the ledger and does the loader's part: a failed finite request is
    /// forgotten by the ledger, so its acquisitions are released here; an own failure arms
    /// the backoff timer. With `again` off (a stalled cursor, or a read retried in place
    /// that failed again), the failure is never a page or repair failure: its retry reads the
    /// full source.
    pub(super) fn fail_request(
        &mut self,
        request: u64,
        again: bool,
    ) -> Result<Failed, LoaderError> {
        let failed = if again {
            self.ledger.fail(request, &mut self.scratch)?
        } else {
            self.ledger.fail_stalled(request, &mut self.scratch)?
        };
        let repair_failed = self.ledger.repair_failed();
        let w = self.requests.live(request);
        if w.kind == Kind::Finite {
            let w = self.requests.remove(request).expect("live");
            self.out.release_all(&w.acqs);
            self.pools.recycle_work(w);
        } else if w.resume_at.is_none() || (w.ranged.is_some() && !repair_failed) {
            // Nothing will resume it (a stalled cursor, a read retried that failed again, or
            // a ranged repair whose retry is a full read, which replaces every page): the
            // retry reads afresh, so its pages go back now.
            if let Some(c) = w.resume_at.take() {
                self.pools.cursors.recycle(c);
            }
            w.discard(&mut self.pools.cursors, &mut self.out);
        }
        match failed {
            Failed::Own => {
                self.out.stats.failed_own += 1;
                self.backoff.failed(&self.config, self.now);
            }
            Failed::Superseded => self.out.stats.failed_stale += 1,
        }
        Ok(failed)
    }
}
