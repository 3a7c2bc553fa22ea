//! `Next` and its nine actions, in the order `spec/LoaderLedger.tla` gives them. Each action
//! calls `emit` once per successor, with the [`Action`] that reaches it.

use super::rules::Overtaken;
use super::{Action, Coverage, Debt, Failure, Kind, Model, Phase, Rules, St, State};

impl Model {
    /// Every successor of `s` under `Next`, each with the action that reaches it.
    pub fn next(&self, s: &State, mut emit: impl FnMut(Action, State)) {
        self.issue_finite(s, &mut emit);
        self.invalidate(s, &mut emit);
        self.start_repair(s, &mut emit);
        self.start_full(s, &mut emit);
        self.explicit_retry(s, &mut emit);
        for i in self.ids() {
            if s.resumed as usize == i + 1 {
                // `resumed` names a request until it is answered: its answer clears it.
                let mut answered = |a: Action, mut t: State| {
                    t.resumed = 0;
                    emit(a, t)
                };
                self.settle_finite(s, i, &mut answered);
                self.settle_chain(s, i, &mut answered);
                self.settle_full(s, i, &mut answered);
                self.fail(s, i, &mut answered);
                self.resume_answered(s, i, &mut answered);
            } else {
                self.settle_finite(s, i, &mut emit);
                self.settle_chain(s, i, &mut emit);
                self.settle_full(s, i, &mut emit);
                self.fail(s, i, &mut emit);
            }
        }
    }

    /// The successors of `s` by one named action (any request, any choice of `k`).
    pub fn successors_by(&self, s: &State, name: &str) -> Vec<(Action, State)> {
        let mut out = Vec::new();
        self.next(s, |a, t| {
            if a.name() == name {
                out.push((a, t))
            }
        });
        out
    }

    /// `IssueFinite`: the window wants another page, and nothing else is owed or running.
    pub fn issue_finite(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.phase == Phase::Idle
            && s.debt == Debt::None
            && s.failure == Failure::None
            && (!self.bounds.model_bounds || s.coverage != Coverage::Full)
            && !self.has_inflight(s, Kind::Finite)
        {
            for i in self.free(s) {
                let mut t = *s;
                t.req[i] = Self::new_req(s, Kind::Finite);
                emit(Action::IssueFinite { k: i as u8 }, t);
            }
        }
    }

    /// `Invalidate`: the source changed; debt rises to bounded after a settled read, else to full.
    pub fn invalidate(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.epoch < self.bounds.max_epoch
            && (!self.bounds.model_bounds || s.coverage != Coverage::Full)
        {
            let mut t = *s;
            t.epoch = s.epoch + 1;
            t.debt = if s.debt == Debt::None && s.settled_once && s.phase == Phase::Idle {
                Debt::Bounded
            } else if s.debt == Debt::None {
                Debt::Full
            } else {
                s.debt
            };
            if s.failure == Failure::Page && self.rules().demotes_page_failure() {
                // The source changed since the page failed: the retry owes a full read.
                t.failure = Failure::Own;
                t.debt = Debt::Full;
            }
            if s.failure == Failure::Own
                && s.debt == Debt::Bounded
                && self.rules().demotes_repair_failure()
            {
                // The source changed since the repair failed: its pages so far may be stale,
                // and the retry owes a full read.
                t.debt = Debt::Full;
            }
            emit(Action::Invalidate, t);
        }
    }

    /// `StartRepair`: bounded debt starts a chain read, superseding the in-flight finite read.
    pub fn start_repair(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.phase == Phase::Idle
            && s.debt == Debt::Bounded
            && s.failure == Failure::None
            && !self.has_inflight(s, Kind::Chain)
        {
            for i in self.free(s) {
                let mut t = *s;
                self.supersede(&mut t.req);
                t.req[i] = Self::new_req(s, Kind::Chain);
                t.phase = Phase::Repair;
                t.chain_epoch = s.epoch;
                emit(Action::StartRepair { k: i as u8 }, t);
            }
        }
    }

    /// `StartFull`: full debt starts a full-source read, superseding the in-flight finite read.
    pub fn start_full(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.phase == Phase::Idle
            && s.debt == Debt::Full
            && s.failure == Failure::None
            && !self.has_inflight(s, Kind::Full)
        {
            for i in self.free(s) {
                let mut t = *s;
                self.supersede(&mut t.req);
                t.req[i] = Self::new_req(s, Kind::Full);
                t.phase = Phase::FullHeld;
                emit(Action::StartFull { k: i as u8 }, t);
            }
        }
    }

    /// `ExplicitRetry`: an explicit window move releases the failed requests and starts a full
    /// read in the same step (P3).
    pub fn explicit_retry(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        self.retry_page(s, emit);
        self.retry_repair(s, emit);
        if s.failure != Failure::None
            && s.failure != Failure::Page
            && s.phase == Phase::Idle
            && s.debt == Debt::Full
            && !self.has_inflight(s, Kind::Full)
        {
            let mut cleared = s.req;
            for i in self.ids() {
                if cleared[i].st == St::Failed {
                    cleared[i].st = St::Released;
                }
            }
            for k in self.ids() {
                if matches!(cleared[k].st, St::Unused | St::Released) {
                    let mut t = *s;
                    t.failure = Failure::None;
                    t.req = cleared;
                    self.supersede(&mut t.req);
                    t.req[k] = Self::new_req(s, Kind::Full);
                    t.phase = Phase::FullHeld;
                    emit(Action::ExplicitRetry { k: k as u8 }, t);
                }
            }
        }
    }

    /// `ExplicitRetry` of a page failure (`spec/LoaderLedgerPageRetry.tla`): the failed
    /// request is released and, in the same step, either the page is read again (a finite read
    /// at `epoch`: the retry with the window where it was), or the full source is read with
    /// full debt, as the lattice does (the retry by a window move).
    fn retry_page(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if s.failure == Failure::Page
            && s.phase == Phase::Idle
            && s.debt == Debt::None
            && !self.has_inflight(s, Kind::Finite)
        {
            self.retry_again_or_full(s, emit, |_, t, k| {
                t.req[k] = Self::new_req(s, Kind::Finite);
            });
        }
    }

    /// `ExplicitRetry` of a repair failure (`spec/LoaderLedgerRepairRetry.tla`: the own failure
    /// over bounded debt): the failed request is released and, in the same step, either the
    /// repair starts again (a chain at `epoch`, which the loader resumes at its failed read),
    /// or the full source is read with full debt, as the lattice does (the retry by a window
    /// move).
    fn retry_repair(&self, s: &State, emit: &mut impl FnMut(Action, State)) {
        if self.rules().retries_repair()
            && s.failure == Failure::Own
            && s.debt == Debt::Bounded
            && s.phase == Phase::Idle
            && !self.has_inflight(s, Kind::Chain)
            && !self.has_inflight(s, Kind::Full)
        {
            self.retry_again_or_full(s, emit, |m, t, k| {
                m.supersede(&mut t.req);
                t.req[k] = Self::new_req(s, Kind::Chain);
                t.phase = Phase::Repair;
                t.chain_epoch = s.epoch;
            });
        }
    }

    /// The two retries of a page or repair failure: the failed requests released, no failure
    /// recorded, and in slot `k` either the work that failed started `again`, or a full read
    /// with full debt (the lattice's retry).
    fn retry_again_or_full(
        &self,
        s: &State,
        emit: &mut impl FnMut(Action, State),
        again: impl Fn(&Model, &mut State, usize),
    ) {
        let mut cleared = s.req;
        for i in self.ids() {
            if cleared[i].st == St::Failed {
                cleared[i].st = St::Released;
            }
        }
        for k in self.ids() {
            if matches!(cleared[k].st, St::Unused | St::Released) {
                let mut t = *s;
                t.failure = Failure::None;
                t.req = cleared;
                again(self, &mut t, k);
                if self.rules().escalates() {
                    // The read started again is remembered until it is answered.
                    t.resumed = k as u8 + 1;
                }
                emit(Action::ExplicitRetry { k: k as u8 }, t);
                let mut t = *s;
                t.failure = Failure::None;
                t.req = cleared;
                self.supersede(&mut t.req);
                t.req[k] = Self::new_req(s, Kind::Full);
                t.phase = Phase::FullHeld;
                t.debt = Debt::Full;
                emit(Action::ExplicitRetry { k: k as u8 }, t);
            }
        }
    }

    /// `SettleFinite(i)`: a finite read answered; it extends the coverage only if current.
    pub fn settle_finite(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if !(r.st == St::Inflight && r.kind == Kind::Finite) {
            return;
        }
        let rules = self.rules();
        let current = r.ep == s.epoch && s.phase == Phase::Idle && s.failure == Failure::None;
        let finished = s.phase == Phase::Idle && s.debt == Debt::None;
        let mut nr = s.req;
        nr[i].st = St::Settled;
        if !current && finished && !matches!(rules, Rules::OldLeak) && !rules.min_family() {
            nr[i].st = St::Released;
        }
        if !current && rules == Rules::OldRetire {
            for j in self.ids() {
                if nr[j].kind == Kind::Chain && nr[j].st == St::Settled {
                    nr[j].st = St::Released;
                }
            }
        }
        let mut t = *s;
        t.cover_epoch = if current { s.epoch } else { s.cover_epoch };
        self.normalize(&mut nr, s.phase, s.debt, t.cover_epoch);
        t.req = nr;
        if current {
            t.coverage = Coverage::Pages;
        }
        t.settled_once = s.settled_once || current;
        emit(Action::SettleFinite { i: i as u8 }, t);
    }

    /// `SettleChain(i)`: a chain answered; it is replaced, abandoned for a full read, or commits.
    /// Under `unifiedMinChurn` (`spec/LoaderLedgerChurn.tla`) an overtaken chain commits at its
    /// own epoch and a new chain starts, or, owing a full read, is abandoned for one.
    pub fn settle_chain(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if !(r.st == St::Inflight && r.kind == Kind::Chain) {
            return;
        }
        let rules = self.rules();
        if s.chain_epoch != s.epoch {
            let how = rules.overtaken(s);
            for k in self.free(s) {
                let mut t = *s;
                t.req[i].st = St::Settled;
                match how {
                    Overtaken::Replace => {
                        // A newer invalidation: start the replacement chain (P5).
                        t.req[k] = Self::new_req(s, Kind::Chain);
                        t.chain_epoch = s.epoch;
                    }
                    Overtaken::Abandon => {
                        // Its pages cannot repair full debt: abandon it for the full read.
                        t.req[k] = Self::new_req(s, Kind::Full);
                        t.phase = Phase::FullHeld;
                        t.debt = Debt::Full;
                    }
                    Overtaken::Commit {
                        stamp,
                        normalize_at,
                    } => {
                        // Overtaken, but newer than the view: commit at the chain's own epoch
                        // and start the chain that covers the invalidations since.
                        if let Some(ce) = normalize_at {
                            self.normalize(&mut t.req, Phase::Idle, Debt::None, ce);
                        }
                        t.req[k] = Self::new_req(s, Kind::Chain);
                        t.coverage = Coverage::Chain;
                        t.cover_epoch = stamp;
                        t.settled_once = true;
                        t.chain_epoch = s.epoch;
                    }
                }
                emit(
                    Action::SettleChain {
                        i: i as u8,
                        k: Some(k as u8),
                    },
                    t,
                );
            }
        } else if s.failure != Failure::None || (rules.unified_family() && s.debt == Debt::Full) {
            if rules == Rules::OldRecover {
                // Abandon: debt stays full, nothing restarts.
                let mut t = *s;
                t.req[i].st = St::Settled;
                t.phase = Phase::Idle;
                t.debt = Debt::Full;
                emit(
                    Action::SettleChain {
                        i: i as u8,
                        k: None,
                    },
                    t,
                );
            } else {
                // Abandon and start the full-source read the overlap replaced.
                for k in self.free(s) {
                    let mut t = *s;
                    t.req[i].st = St::Settled;
                    t.req[k] = Self::new_req(s, Kind::Full);
                    t.phase = Phase::FullHeld;
                    t.debt = Debt::Full;
                    emit(
                        Action::SettleChain {
                            i: i as u8,
                            k: Some(k as u8),
                        },
                        t,
                    );
                }
            }
        } else {
            let mut t = *s;
            t.req[i].st = St::Settled;
            if !rules.min_family() {
                self.release_all_settled_except(&mut t.req, i);
            }
            self.normalize(&mut t.req, Phase::Idle, Debt::None, s.epoch);
            t.phase = Phase::Idle;
            t.debt = Debt::None;
            t.coverage = Coverage::Chain;
            t.settled_once = true;
            t.cover_epoch = s.epoch;
            emit(
                Action::SettleChain {
                    i: i as u8,
                    k: None,
                },
                t,
            );
        }
    }

    /// `SettleFull(i)`: a full-source read answered and becomes the coverage. Under
    /// `unifiedMinRecheck` (`spec/LoaderLedgerRecheck.tla`) it leaves bounded debt when an
    /// invalidation overtook it.
    pub fn settle_full(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if !(r.st == St::Inflight && r.kind == Kind::Full) {
            return;
        }
        let mut t = *s;
        t.req[i].st = St::Settled;
        if self.rules().min_family() {
            self.normalize(&mut t.req, Phase::Idle, Debt::None, r.ep);
        } else {
            self.release_all_settled_except(&mut t.req, i);
        }
        t.phase = Phase::Idle;
        // The fix: a full read an invalidation overtook leaves bounded debt behind it.
        t.debt = if self.rules().rechecks_full() && r.ep < s.epoch {
            Debt::Bounded
        } else {
            Debt::None
        };
        t.coverage = Coverage::Full;
        t.failure = Failure::None;
        t.settled_once = true;
        t.cover_epoch = r.ep;
        emit(Action::SettleFull { i: i as u8 }, t);
    }

    /// `Fail(i)`: an in-flight request failed.
    pub fn fail(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if r.st != St::Inflight {
            return;
        }
        let rules = self.rules();
        let finished_before =
            s.phase == Phase::Idle && s.debt == Debt::None && s.failure == Failure::None;
        let authoritative = matches!(r.kind, Kind::Chain | Kind::Full);
        let f = if authoritative {
            Failure::Own
        } else if s.failure == Failure::None {
            if r.sup {
                Failure::Superseded
            } else {
                Failure::Own
            }
        } else {
            s.failure
        };
        let ph = if authoritative { Phase::Idle } else { s.phase };
        let retried = rules.repair_failure(s, &r) || rules.page_failure(s, &r);
        // `spec/LoaderLedgerEscalate.tla`: the resumed read's failure goes through the lattice
        // (below), never as a page or repair failure again.
        let (again, lattice) = if s.resumed as usize == i + 1 && rules.escalates() {
            rules.resumed_failure()
        } else {
            (true, true)
        };
        let lattice = lattice || !retried;
        if again && rules.repair_failure(s, &r) {
            // The repair retry: the repair's own failure, nothing else owed; the debt stays
            // bounded and the retry starts the repair again. The loader may still record it
            // as the lattice does (below).
            let mut t = *s;
            t.req[i].st = St::Failed;
            t.failure = Failure::Own;
            t.phase = Phase::Idle;
            emit(
                Action::Fail {
                    i: i as u8,
                    k: None,
                },
                t,
            );
        }
        if again && rules.page_failure(s, &r) {
            // The page retry: its own failure, nothing else owed; the retry reads it again.
            // The loader may still record it as the lattice does (below): a stalled cursor,
            // which reading again would not move.
            let mut t = *s;
            t.req[i].st = St::Failed;
            t.failure = Failure::Page;
            emit(
                Action::Fail {
                    i: i as u8,
                    k: None,
                },
                t,
            );
        }
        if !lattice {
            return;
        }
        let upgrade_only = rules.unified_family() && r.kind == Kind::Finite && r.sup;
        let recover = !upgrade_only && r.sup && finished_before && rules != Rules::OldRecover;
        let mut base = *s;
        base.req[i].st = St::Failed;
        base.failure = if upgrade_only { s.failure } else { f };
        base.debt = if upgrade_only
            && s.coverage == Coverage::Full
            && s.phase == Phase::Idle
            && s.debt == Debt::None
        {
            s.debt
        } else {
            Debt::Full
        };
        if recover {
            for k in self.free(s) {
                let mut t = base;
                t.req[k] = Self::new_req(s, Kind::Full);
                t.phase = Phase::FullHeld;
                emit(
                    Action::Fail {
                        i: i as u8,
                        k: Some(k as u8),
                    },
                    t,
                );
            }
        } else {
            let mut t = base;
            t.phase = if upgrade_only { s.phase } else { ph };
            emit(
                Action::Fail {
                    i: i as u8,
                    k: None,
                },
                t,
            );
        }
    }

    /// `ResumeAnswered(i)` (`spec/LoaderLedgerEscalate.tla`): the read the resumed chain `i`
    /// resumed at was answered, and the chain reads on. Its cursor was not gone: a later
    /// failure of the chain is a repair failure again, retried where it failed. (A finite read
    /// is one read: its answer is `SettleFinite` or `Fail`.)
    fn resume_answered(&self, s: &State, i: usize, emit: &mut impl FnMut(Action, State)) {
        let r = s.req[i];
        if s.resumed as usize == i + 1 && r.st == St::Inflight && r.kind == Kind::Chain {
            emit(Action::ResumeAnswered { i: i as u8 }, *s);
        }
    }
}
