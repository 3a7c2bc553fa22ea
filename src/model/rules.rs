//! The module's `Rules` constant: which rule variant the model runs, this project's two
//! variant modules included, and what each variant does with an overtaken chain.

#[cfg(any(test, feature = "testing"))]
use super::Mutant;
use super::{Debt, Failure, Kind, Phase, Req, State};
use std::fmt;

/// The module's `Rules` constant, plus this project's variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rules {
    /// The code's patched case rules: the module's finding.
    Current,
    /// One normalize step; a superseded request's failure only raises debt.
    Unified,
    /// `Unified` without the normalize step.
    UnifiedNoNorm,
    /// `Unified` that keeps settled entries until normalize retires them (the normative rules).
    UnifiedMin,
    /// `UnifiedMin` without the normalize step.
    UnifiedMinNoNorm,
    /// Pre-fix control: a stale prefix supersedes every smaller prefix, the repair's included.
    OldRetire,
    /// Pre-fix control: a stale finite settle is never released.
    OldLeak,
    /// Pre-fix control: a failed repair abandons and nothing restarts.
    OldRecover,
    /// `UnifiedMin` plus this project's fix: a full read that settles with `ep < epoch` leaves
    /// `debt = "bounded"`, so a repair runs at once and no invalidation is lost
    /// (`spec/LoaderLedgerRecheck.tla`).
    UnifiedMinRecheck,
    /// `UnifiedMinRecheck` plus progress under churn: a repair an invalidation overtook commits
    /// at its own epoch and a new chain starts at once; an overtaken chain with full debt is
    /// abandoned for a full read (`spec/LoaderLedgerChurn.tla`).
    UnifiedMinChurn,
    /// `UnifiedMinChurn` plus the page retry: a finite read's own failure with nothing else
    /// owed records `failure = "page"` and no debt, and the retry reads that page again (a
    /// finite read); an invalidation since turns it into the lattice's own failure with full
    /// debt, and a retry by a window move reads the full source (`spec/LoaderLedgerPageRetry.tla`).
    UnifiedMinPageRetry,
    /// `UnifiedMinPageRetry` plus the repair retry: a repair's own failure with nothing else
    /// owed (its chain current, bounded debt, no failure recorded) records the lattice's own
    /// failure but keeps the debt bounded, and the retry starts the repair again (a chain at
    /// `epoch`: the loader resumes it at the failed read, its pages so far current); an
    /// invalidation since raises the debt to full, and a retry by a window move reads the full
    /// source (`spec/LoaderLedgerRepairRetry.tla`).
    UnifiedMinRepairRetry,
    /// `UnifiedMinRepairRetry` plus the escalation: the read a page or repair failure's retry
    /// started again (`resumed`) fails through the debt lattice (the own failure, full debt,
    /// so the retry reads the full source with fresh cursors), never as a page or repair
    /// failure again, until its resumed read is answered (`ResumeAnswered`): a cursor gone
    /// for good fails every time it is read (`spec/LoaderLedgerEscalate.tla`).
    UnifiedMinEscalate,
    /// A deliberately wrong `UnifiedMinChurn` or `UnifiedMinPageRetry`, to show that a check fails without the part of
    /// its rule the mutant breaks (mutant.rs). Not a variant of the modules: never in
    /// [`Rules::ALL`] nor `--list-rules`, and only in builds with the `testing` feature.
    #[cfg(any(test, feature = "testing"))]
    Mutant(Mutant),
}

/// What `SettleChain(i)` does with a chain an invalidation overtook (`chainEpoch # epoch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Overtaken {
    /// Settle it and start a replacement chain at `epoch` (the module's P5).
    Replace,
    /// Settle it and start the full-source read the debt or the failure asks for.
    Abandon,
    /// Commit it: `coverage' = "chain"`, `coverEpoch' = stamp`, `Normalize` at `normalize_at`
    /// (none when `None`), and start a new chain at `epoch`.
    Commit {
        /// `coverEpoch'`.
        stamp: u8,
        /// The coverage epoch `Normalize` releases below, if it runs.
        normalize_at: Option<u8>,
    },
}

impl Rules {
    /// Every variant, the module's eight first, in the order the module names them, then this
    /// project's.
    pub const ALL: [Rules; 13] = [
        Rules::Current,
        Rules::Unified,
        Rules::UnifiedNoNorm,
        Rules::UnifiedMin,
        Rules::UnifiedMinNoNorm,
        Rules::OldRetire,
        Rules::OldLeak,
        Rules::OldRecover,
        Rules::UnifiedMinRecheck,
        Rules::UnifiedMinChurn,
        Rules::UnifiedMinPageRetry,
        Rules::UnifiedMinRepairRetry,
        Rules::UnifiedMinEscalate,
    ];

    /// The module's own variants (everything but this project's additions).
    pub fn is_seed(self) -> bool {
        !matches!(
            self.base(),
            Rules::UnifiedMinRecheck
                | Rules::UnifiedMinChurn
                | Rules::UnifiedMinPageRetry
                | Rules::UnifiedMinRepairRetry
                | Rules::UnifiedMinEscalate
        )
    }

    /// The real variant a mutant mutates; a real variant itself.
    fn base(self) -> Rules {
        match self {
            #[cfg(any(test, feature = "testing"))]
            Rules::Mutant(m) => m.base(),
            r => r,
        }
    }

    /// The variant's value of `Rules` (this project's variants have their own modules instead;
    /// a mutant's name starts with `mutant`).
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(any(test, feature = "testing"))]
            Rules::Mutant(m) => m.name(),
            Rules::Current => "current",
            Rules::Unified => "unified",
            Rules::UnifiedNoNorm => "unifiedNoNorm",
            Rules::UnifiedMin => "unifiedMin",
            Rules::UnifiedMinNoNorm => "unifiedMinNoNorm",
            Rules::OldRetire => "oldRetire",
            Rules::OldLeak => "oldLeak",
            Rules::OldRecover => "oldRecover",
            Rules::UnifiedMinRecheck => "unifiedMinRecheck",
            Rules::UnifiedMinChurn => "unifiedMinChurn",
            Rules::UnifiedMinPageRetry => "unifiedMinPageRetry",
            Rules::UnifiedMinRepairRetry => "unifiedMinRepairRetry",
            Rules::UnifiedMinEscalate => "unifiedMinEscalate",
        }
    }

    /// The variant [`Rules::name`] spells `s`, if any; a mutant's name too, in builds that have
    /// them.
    pub fn parse(s: &str) -> Option<Rules> {
        let real = Rules::ALL.into_iter().find(|r| r.name() == s);
        #[cfg(any(test, feature = "testing"))]
        let real = real.or_else(|| {
            Mutant::ALL
                .into_iter()
                .map(Rules::Mutant)
                .find(|r| r.name() == s)
        });
        real
    }

    /// `Rules \in {"unified", "unifiedMin"}`: the variants whose `Normalize` is not the identity.
    pub(super) fn normalizes(self) -> bool {
        matches!(
            self.base(),
            Rules::Unified
                | Rules::UnifiedMin
                | Rules::UnifiedMinRecheck
                | Rules::UnifiedMinChurn
                | Rules::UnifiedMinPageRetry
                | Rules::UnifiedMinRepairRetry
                | Rules::UnifiedMinEscalate
        )
    }

    /// `Rules \in {"unified", "unifiedNoNorm", "unifiedMin", "unifiedMinNoNorm"}`.
    pub(super) fn unified_family(self) -> bool {
        matches!(
            self.base(),
            Rules::Unified
                | Rules::UnifiedNoNorm
                | Rules::UnifiedMin
                | Rules::UnifiedMinNoNorm
                | Rules::UnifiedMinRecheck
                | Rules::UnifiedMinChurn
                | Rules::UnifiedMinPageRetry
                | Rules::UnifiedMinRepairRetry
                | Rules::UnifiedMinEscalate
        )
    }

    /// `Rules \in {"unifiedMin", "unifiedMinNoNorm"}`.
    pub(super) fn min_family(self) -> bool {
        matches!(
            self.base(),
            Rules::UnifiedMin
                | Rules::UnifiedMinNoNorm
                | Rules::UnifiedMinRecheck
                | Rules::UnifiedMinChurn
                | Rules::UnifiedMinPageRetry
                | Rules::UnifiedMinRepairRetry
                | Rules::UnifiedMinEscalate
        )
    }

    /// `spec/LoaderLedgerRecheck.tla`'s `SettleFull`: an overtaken full read leaves bounded debt.
    pub(super) fn rechecks_full(self) -> bool {
        matches!(
            self.base(),
            Rules::UnifiedMinRecheck
                | Rules::UnifiedMinChurn
                | Rules::UnifiedMinPageRetry
                | Rules::UnifiedMinRepairRetry
                | Rules::UnifiedMinEscalate
        )
    }

    /// `spec/LoaderLedgerChurn.tla`'s `SettleChain`: an overtaken repair commits.
    pub(super) fn commits_overtaken(self) -> bool {
        matches!(
            self.base(),
            Rules::UnifiedMinChurn
                | Rules::UnifiedMinPageRetry
                | Rules::UnifiedMinRepairRetry
                | Rules::UnifiedMinEscalate
        )
    }

    /// `spec/LoaderLedgerPageRetry.tla`: a finite read's own failure is retried as that page.
    pub(super) fn retries_page(self) -> bool {
        matches!(
            self.base(),
            Rules::UnifiedMinPageRetry | Rules::UnifiedMinRepairRetry | Rules::UnifiedMinEscalate
        )
    }

    /// `spec/LoaderLedgerRepairRetry.tla`: a repair's own failure is retried as that repair.
    pub(super) fn retries_repair(self) -> bool {
        matches!(
            self.base(),
            Rules::UnifiedMinRepairRetry | Rules::UnifiedMinEscalate
        )
    }

    /// `spec/LoaderLedgerEscalate.tla`: the retry of a page or repair failure that starts the
    /// read again remembers it (`resumed`), and its failure goes through the debt lattice.
    pub fn escalates(self) -> bool {
        self.base() == Rules::UnifiedMinEscalate
    }

    /// `spec/LoaderLedgerEscalate.tla`'s `Fail(i)` of the resumed read `r`: whether its
    /// failure may be recorded as a page or repair failure (the retry starting it again) and
    /// whether as the lattice's failure. The variant escalates: the lattice only. Variants
    /// without `resumed` never ask.
    pub(super) fn resumed_failure(self) -> (bool, bool) {
        #[cfg(any(test, feature = "testing"))]
        if let Rules::Mutant(m) = self {
            if let Some(v) = m.resumed_failure() {
                return v;
            }
        }
        (false, true)
    }

    /// `spec/LoaderLedgerRepairRetry.tla`'s `Fail(i)`: whether request `r`'s failure in `s` is
    /// recorded as a repair failure (the own failure over bounded debt): the running chain,
    /// nothing superseded it, of the current epoch and not overtaken, with nothing but its own
    /// bounded debt owed and no failure recorded.
    pub(super) fn repair_failure(self, s: &State, r: &Req) -> bool {
        #[cfg(any(test, feature = "testing"))]
        if let Rules::Mutant(m) = self {
            if let Some(v) = m.repair_failure(s, r) {
                return v;
            }
        }
        self.retries_repair()
            && r.kind == Kind::Chain
            && !r.sup
            && r.ep == s.epoch
            && s.chain_epoch == s.epoch
            && s.phase == Phase::Repair
            && s.debt == Debt::Bounded
            && s.failure == Failure::None
    }

    /// `spec/LoaderLedgerRepairRetry.tla`'s `Invalidate`: whether an invalidation after a
    /// repair failure raises the debt to full (the repair's pages so far may then be stale).
    pub(super) fn demotes_repair_failure(self) -> bool {
        #[cfg(any(test, feature = "testing"))]
        if let Rules::Mutant(m) = self {
            if !m.demotes_repair_failure() {
                return false;
            }
        }
        self.retries_repair()
    }

    /// `spec/LoaderLedgerPageRetry.tla`'s `Fail(i)`: whether request `r`'s failure in `s` is
    /// recorded as a page failure: a finite read nothing superseded, of the current epoch,
    /// failing while nothing else is owed or running.
    pub(super) fn page_failure(self, s: &State, r: &Req) -> bool {
        #[cfg(any(test, feature = "testing"))]
        if let Rules::Mutant(m) = self {
            if let Some(v) = m.page_failure(s, r) {
                return v;
            }
        }
        self.retries_page()
            && r.kind == Kind::Finite
            && !r.sup
            && r.ep == s.epoch
            && s.phase == Phase::Idle
            && s.debt == Debt::None
            && s.failure == Failure::None
    }

    /// `spec/LoaderLedgerPageRetry.tla`'s `Invalidate`: whether an invalidation turns a page
    /// failure into the lattice's own failure with full debt.
    pub(super) fn demotes_page_failure(self) -> bool {
        #[cfg(any(test, feature = "testing"))]
        if let Rules::Mutant(m) = self {
            if !m.demotes_page_failure() {
                return false;
            }
        }
        self.retries_page()
    }

    /// What `SettleChain(i)` does in `s` with a chain an invalidation overtook: the module's
    /// replacement (P5), or under `unifiedMinChurn` a commit at the chain's own epoch, or, when
    /// a full read is owed (full debt, or a failure recorded), abandonment for one.
    pub(super) fn overtaken(self, s: &State) -> Overtaken {
        #[cfg(any(test, feature = "testing"))]
        if let Rules::Mutant(m) = self {
            return m.overtaken(s);
        }
        if !self.commits_overtaken() {
            Overtaken::Replace
        } else if s.failure != Failure::None || s.debt == Debt::Full {
            Overtaken::Abandon
        } else {
            Overtaken::Commit {
                stamp: s.chain_epoch,
                normalize_at: Some(s.chain_epoch),
            }
        }
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_round_trip() {
        for r in Rules::ALL {
            assert_eq!(Rules::parse(r.name()), Some(r));
        }
        assert_eq!(Rules::parse("bogus"), None);
    }
}
