//! The ledger's actions, one function per action of `spec/LoaderLedger.tla`, in the module's
//! order, then `Normalize`. Host events are the public ones; `StartRepair` and `StartFull` are
//! taken eagerly by `schedule` after every event.

use super::{
    Coverage, Debt, Effect, Failed, Failure, Kind, Ledger, LedgerError, Phase, Request, Settled, St,
};

impl Ledger {
    /// `IssueFinite`, when enabled: the window needs another page. Returns the new request.
    pub fn issue_finite(&mut self, out: &mut Vec<Effect>) -> Result<Option<u64>, LedgerError> {
        if !(self.phase == Phase::Idle
            && self.debt == Debt::None
            && self.failure == Failure::None
            && self.inflight_finite.is_none())
        {
            return Ok(None);
        }
        let id = self.new_request(Kind::Finite, out)?;
        self.after_event();
        Ok(Some(id))
    }

    /// `Invalidate`: the source changed.
    pub fn invalidate(&mut self, out: &mut Vec<Effect>) -> Result<(), LedgerError> {
        let epoch = self
            .epoch
            .checked_add(1)
            .ok_or(LedgerError::EpochOverflow)?;
        self.check_id_room()?;
        self.epoch = epoch;
        self.debt = match self.debt {
            Debt::None if self.settled_once && self.phase == Phase::Idle => Debt::Bounded,
            Debt::None => Debt::Full,
            d => d,
        };
        if self.failure == Failure::Page || self.repair_failed() {
            // The source changed since the page or the repair failed: the retry owes a full
            // read.
            self.failure = Failure::Own;
            self.debt = Debt::Full;
        }
        self.schedule(out);
        self.after_event();
        Ok(())
    }

    /// `StartRepair`, when enabled: bounded debt starts a chain read.
    fn start_repair(&mut self, out: &mut Vec<Effect>) {
        if !(self.phase == Phase::Idle
            && self.debt == Debt::Bounded
            && self.failure == Failure::None
            && self.inflight_chain == 0)
        {
            return;
        }
        self.supersede(out);
        self.phase = Phase::Repair;
        self.chain_epoch = self.epoch;
        let started = self.new_request(Kind::Chain, out);
        debug_assert!(started.is_ok(), "id room was checked before the event");
    }

    /// `StartFull`, when enabled: full debt starts a full-source read.
    fn start_full(&mut self, out: &mut Vec<Effect>) {
        if !(self.phase == Phase::Idle
            && self.debt == Debt::Full
            && self.failure == Failure::None
            && self.inflight_full == 0)
        {
            return;
        }
        self.supersede(out);
        self.phase = Phase::FullHeld;
        let started = self.new_request(Kind::Full, out);
        debug_assert!(started.is_ok(), "id room was checked before the event");
    }

    /// The eager scheduler: `StartRepair` or `StartFull`, whichever is enabled. The debt
    /// lattice makes them exclusive, and each leaves the phase non-idle. Every event that can
    /// reach here checked `check_id_room` first.
    fn schedule(&mut self, out: &mut Vec<Effect>) {
        self.start_repair(out);
        self.start_full(out);
    }

    /// `ExplicitRetry`, when enabled: a recorded failure is retried with a full-source read,
    /// a page failure by reading the page again (a finite read), a repair failure by starting
    /// the repair again (a chain read at the current epoch). Returns the new request, or
    /// `None` when there is nothing to retry yet.
    pub fn explicit_retry(&mut self, out: &mut Vec<Effect>) -> Result<Option<u64>, LedgerError> {
        if !self.retry_enabled() {
            return Ok(None);
        }
        self.check_id_room()?;
        if self.failure == Failure::Page {
            // The failed finite request was forgotten when it failed; nothing else is held
            // for the retry.
            self.failure = Failure::None;
            let id = self.new_request(Kind::Finite, out)?;
            self.resumed = Some(id);
            self.after_event();
            return Ok(Some(id));
        }
        if self.repair_failed() {
            // Nothing changed since the repair failed: it starts again at this epoch, and
            // the caller may resume it where it failed.
            self.release_failed(out);
            self.failure = Failure::None;
            self.supersede(out);
            let id = self.new_request(Kind::Chain, out)?;
            self.phase = Phase::Repair;
            self.chain_epoch = self.epoch;
            self.resumed = Some(id);
            self.after_event();
            return Ok(Some(id));
        }
        self.retry_full(out)
    }

    /// `ResumeAnswered(i)` (`spec/LoaderLedgerEscalate.tla`): the read that the resumed chain
    /// `id` resumed at was answered, so its cursor was not gone, and the chain reads on; a
    /// later failure of it is a repair failure again. Returns whether `id` was the resumed
    /// chain, in flight (else nothing changes).
    pub fn resume_answered(&mut self, id: u64) -> bool {
        let chain = self
            .live
            .get(&id)
            .is_some_and(|r| r.kind == Kind::Chain && r.st == St::Inflight);
        if !(chain && self.resumed == Some(id)) {
            return false;
        }
        // Not counted in `changes`: nothing a snapshot shows changed.
        self.resumed = None;
        true
    }

    /// `ExplicitRetry` by a window move: as [`Ledger::explicit_retry`], but a page or repair
    /// failure is retried as the lattice retries an own failure, with full debt and a
    /// full-source read (the page that failed, or the pages the repair re-reads, may no longer
    /// be the ones the window needs).
    pub fn explicit_retry_moved(
        &mut self,
        out: &mut Vec<Effect>,
    ) -> Result<Option<u64>, LedgerError> {
        if !self.retry_enabled() {
            return Ok(None);
        }
        self.check_id_room()?;
        self.debt = Debt::Full;
        self.retry_full(out)
    }

    /// `ExplicitRetry`'s full read: releases the failed requests and starts it.
    fn retry_full(&mut self, out: &mut Vec<Effect>) -> Result<Option<u64>, LedgerError> {
        self.release_failed(out);
        self.failure = Failure::None;
        self.supersede(out);
        let id = self.new_request(Kind::Full, out)?;
        self.phase = Phase::FullHeld;
        self.after_event();
        Ok(Some(id))
    }

    /// `ExplicitRetry`'s release of the failed requests.
    fn release_failed(&mut self, out: &mut Vec<Effect>) {
        for id in self.failed.drain(..) {
            self.live.remove(&id);
            out.push(Effect::Release { id });
        }
    }

    /// Whether [`Ledger::explicit_retry`] would start a read now.
    pub fn retry_enabled(&self) -> bool {
        if self.failure == Failure::Page {
            return self.phase == Phase::Idle
                && self.debt == Debt::None
                && self.inflight_finite.is_none();
        }
        if self.repair_failed() {
            return self.phase == Phase::Idle && self.inflight_chain + self.inflight_full == 0;
        }
        self.failure != Failure::None
            && self.phase == Phase::Idle
            && self.debt == Debt::Full
            && self.inflight_full == 0
    }

    /// Whether a failure of finite request `r` now is a page failure
    /// (`spec/LoaderLedgerPageRetry.tla`'s `PageFailure(i)`): under the churn rules, a read of
    /// the current epoch nothing superseded, with nothing else owed or recorded.
    fn page_failure(&self, r: &Request) -> bool {
        self.config.churn_rules()
            && r.kind == Kind::Finite
            && !r.sup
            && r.ep == self.epoch
            && self.phase == Phase::Idle
            && self.debt == Debt::None
            && self.failure == Failure::None
    }

    /// Whether a failure of request `r` now is a repair failure
    /// (`spec/LoaderLedgerRepairRetry.tla`'s `RepairFailure(i)`): under the churn rules, the
    /// running repair's chain, of the current epoch and not overtaken, with nothing but its
    /// own bounded debt owed and no failure recorded.
    fn repair_failure(&self, r: &Request) -> bool {
        self.config.churn_rules()
            && r.kind == Kind::Chain
            && !r.sup
            && r.ep == self.epoch
            && self.chain_epoch == self.epoch
            && self.phase == Phase::Repair
            && self.debt == Debt::Bounded
            && self.failure == Failure::None
    }

    /// An in-flight request's work finished: `SettleFinite`, `SettleChain` or `SettleFull`.
    pub fn settle(&mut self, id: u64, out: &mut Vec<Effect>) -> Result<Settled, LedgerError> {
        let r = self.inflight_request(id)?;
        // Settling may start a request; refuse before changing anything if no id is left.
        self.check_id_room()?;
        if self.resumed == Some(id) {
            self.resumed = None;
        }
        let outcome = match r.kind {
            Kind::Finite => self.settle_finite(id, r, out),
            Kind::Chain => self.settle_chain(id, r, out)?,
            Kind::Full => self.settle_full(id, r, out),
        };
        self.schedule(out);
        // `Normalize` runs last in each settle rule, after the state it reads was updated.
        self.after_event();
        Ok(outcome)
    }

    /// `SettleFinite(i)`: the read extends the coverage only if it is current.
    fn settle_finite(&mut self, id: u64, r: Request, out: &mut Vec<Effect>) -> Settled {
        let current =
            r.ep == self.epoch && self.phase == Phase::Idle && self.failure == Failure::None;
        self.leave_inflight(id, r.kind);
        self.mark_settled(id, r);
        if current {
            self.cover_epoch = self.epoch;
            self.coverage = Coverage::Pages;
            self.settled_once = true;
        }
        self.normalize(self.phase, self.debt, self.cover_epoch, out);
        if current {
            Settled::FiniteCurrent
        } else {
            Settled::FiniteStale
        }
    }

    /// `SettleChain(i)`: the chain is replaced, abandoned for a full read, or commits. With
    /// [`Config::churn_rules`] (`spec/LoaderLedgerChurn.tla`), a chain an invalidation overtook
    /// commits at its own epoch and a new chain starts, or, owing a full read, is abandoned
    /// for one.
    fn settle_chain(
        &mut self,
        id: u64,
        r: Request,
        out: &mut Vec<Effect>,
    ) -> Result<Settled, LedgerError> {
        self.leave_inflight(id, r.kind);
        self.mark_settled(id, r);
        let owes_full = self.failure != Failure::None || self.debt == Debt::Full;
        let overtaken = self.chain_epoch != self.epoch;
        let commit_overtaken = self.config.churn_rules();
        if overtaken && commit_overtaken && !owes_full {
            // Its data is newer than the view's: the view switches to it, stamped with the
            // chain's epoch, and the next chain repairs the invalidations since.
            let ce = self.chain_epoch;
            self.normalize(Phase::Idle, Debt::None, ce, out);
            self.coverage = Coverage::Chain;
            self.settled_once = true;
            self.cover_epoch = ce;
            let next = self.new_request(Kind::Chain, out)?;
            self.chain_epoch = self.epoch;
            Ok(Settled::ChainOvertakenCommitted { next })
        } else if overtaken && !commit_overtaken {
            // A newer invalidation: start the replacement chain (P5).
            let next = self.new_request(Kind::Chain, out)?;
            self.chain_epoch = self.epoch;
            Ok(Settled::ChainReplaced { next })
        } else if owes_full {
            // Abandon and start the full-source read the overlap replaced.
            let full = self.new_request(Kind::Full, out)?;
            self.phase = Phase::FullHeld;
            self.debt = Debt::Full;
            Ok(Settled::ChainAbandoned { full })
        } else {
            self.normalize(Phase::Idle, Debt::None, self.epoch, out);
            self.phase = Phase::Idle;
            self.debt = Debt::None;
            self.coverage = Coverage::Chain;
            self.settled_once = true;
            self.cover_epoch = self.epoch;
            Ok(Settled::ChainCommitted)
        }
    }

    /// `SettleFull(i)`: the read becomes the coverage; with `recheck_full`, an invalidation
    /// that overtook it leaves bounded debt (`spec/LoaderLedgerRecheck.tla`).
    fn settle_full(&mut self, id: u64, r: Request, out: &mut Vec<Effect>) -> Settled {
        self.leave_inflight(id, r.kind);
        self.mark_settled(id, r);
        self.normalize(Phase::Idle, Debt::None, r.ep, out);
        let recheck = self.config.recheck_full && r.ep < self.epoch;
        self.phase = Phase::Idle;
        self.debt = if recheck { Debt::Bounded } else { Debt::None };
        self.coverage = Coverage::Full;
        self.failure = Failure::None;
        self.settled_once = true;
        self.cover_epoch = r.ep;
        Settled::FullCommitted { recheck }
    }

    /// An in-flight request failed: `Fail`. Under the churn rules a finite read's own failure
    /// with nothing else owed is a page failure (`Failure::Page`), retried by reading the page
    /// again; the running repair's own failure with nothing else owed is a repair failure
    /// (the own failure over bounded debt, [`Ledger::repair_failed`]), retried by starting
    /// the repair again.
    pub fn fail(&mut self, id: u64, out: &mut Vec<Effect>) -> Result<Failed, LedgerError> {
        self.fail_as(id, true, out)
    }

    /// An in-flight request failed in a way that reading it again would repeat (a cursor that
    /// did not move, or a read that failed again when read again): `Fail`, never a page or
    /// repair failure, so its retry reads the full source.
    pub fn fail_stalled(&mut self, id: u64, out: &mut Vec<Effect>) -> Result<Failed, LedgerError> {
        self.fail_as(id, false, out)
    }

    fn fail_as(
        &mut self,
        id: u64,
        again: bool,
        out: &mut Vec<Effect>,
    ) -> Result<Failed, LedgerError> {
        let r = self.inflight_request(id)?;
        self.check_id_room()?;
        // `spec/LoaderLedgerEscalate.tla`: the read a retry started again fails through the
        // lattice, never as a page or repair failure again (not with the test build's mutant
        // that undoes the escalation, which the loader checker must then find).
        let again = again
            && (self.resumed != Some(id)
                || crate::loader::mutant::on(crate::loader::mutant::Mutant::PageRetriedForEver));
        if self.resumed == Some(id) {
            self.resumed = None;
        }
        let page = again && self.page_failure(&r);
        let repair = again && self.repair_failure(&r);
        self.leave_inflight(id, r.kind);
        let outcome = if page {
            // Nothing else is owed: the retry reads this page again.
            self.failure = Failure::Page;
            Failed::Own
        } else if repair {
            // Nothing else is owed: the debt stays bounded, and the retry starts the repair
            // again.
            self.failure = Failure::Own;
            self.phase = Phase::Idle;
            Failed::Own
        } else if r.kind == Kind::Finite && r.sup {
            // Unified: a superseded request's failure blocks nothing; it only raises debt.
            if !(self.coverage == Coverage::Full
                && self.phase == Phase::Idle
                && self.debt == Debt::None)
            {
                self.debt = Debt::Full;
            }
            Failed::Superseded
        } else {
            self.failure = Failure::Own;
            self.debt = Debt::Full;
            if r.kind != Kind::Finite {
                self.phase = Phase::Idle;
            }
            Failed::Own
        };
        if r.kind == Kind::Finite {
            self.live.remove(&id);
        } else {
            self.live.insert(
                id,
                Request {
                    st: St::Failed,
                    ..r
                },
            );
            self.failed.push(id);
        }
        self.schedule(out);
        self.after_event();
        Ok(outcome)
    }

    /// `Normalize`: in a quiescent coverage state, every settled request older than `ce` is
    /// redundant. Only the retired requests are visited.
    fn normalize(&mut self, ph: Phase, db: Debt, ce: u64, out: &mut Vec<Effect>) {
        if ph == Phase::Idle && db == Debt::None {
            let live = &mut self.live;
            self.settled.release_below(ce, |id| {
                live.remove(&id);
                out.push(Effect::Release { id });
            });
        }
    }
}
