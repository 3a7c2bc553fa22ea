//! Mutants: `unifiedMinChurn` with one part of its overtaken-chain rule broken,
//! `unifiedMinPageRetry` with one part of its page retry broken, `unifiedMinRepairRetry`
//! with one part of its repair retry broken, and `unifiedMinEscalate` without its escalation,
//! each paired with the check
//! that must fail because of it. A check that a mutant passes does not show the part
//! it breaks to be needed; `make check` and `tests/mutants.rs` run every mutant and expect its
//! check to fail. Test instruments, in builds with the `testing` feature only, and never listed
//! among the real variants (`Rules::ALL`, `--list-rules`).

use super::rules::Overtaken;
use super::{Debt, Failure, Invariant, Kind, Phase, Req, Rules, State};
use std::fmt;

/// A deliberately wrong `unifiedMinChurn` (everything as in `spec/LoaderLedgerChurn.tla` but
/// what `SettleChain(i)` does with a chain an invalidation overtook), or `unifiedMinPageRetry`
/// (everything as in `spec/LoaderLedgerPageRetry.tla` but one part of the page retry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mutant {
    /// The branch "an overtaken chain owing a full read (full debt, or a failure recorded) is
    /// abandoned for one" removed: the chain is replaced, as in the module (P5).
    NoAbandon,
    /// The overtaken commit stamps `coverEpoch' = epoch` instead of the chain's `chainEpoch`.
    StampEpoch,
    /// The overtaken commit normalizes at `epoch` instead of at the chain's `chainEpoch`.
    NormalizeAtEpoch,
    /// The overtaken commit does not normalize.
    NoNormalize,
    /// The overtaken commit is taken with full debt too (a recorded failure still abandons).
    CommitFullDebt,
    /// `unifiedMinPageRetry` whose `Invalidate` leaves a page failure alone (the debt rises as
    /// the lattice says, but the retry still reads the failed page only).
    PageNoDemote,
    /// `unifiedMinPageRetry` whose `Fail(i)` records a page failure for any finite read nothing
    /// superseded, also when an invalidation arrived while it was in flight (its epoch is old
    /// and debt is owed).
    PageOverDebt,
    /// `unifiedMinRepairRetry` whose `Invalidate` leaves a repair failure's debt bounded (the
    /// retry still starts the repair, over pages an invalidation may have changed).
    RepairNoDemote,
    /// `unifiedMinRepairRetry` whose `Fail(i)` records a repair failure also for a chain an
    /// invalidation overtook (`chainEpoch # epoch`).
    RepairOvertaken,
    /// `unifiedMinEscalate` whose `Fail(i)` of the resumed read records a page or repair
    /// failure again whenever it would record one for a read not resumed: it never escalates.
    EscalateNever,
}

/// The check a mutant must fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutantCheck {
    /// `loader-check --progress`, with spare request slots (`--spare-ids`).
    Progress,
    /// `loader-check --progress --gone-cursor`: progress when every resumed read fails.
    GoneCursor,
    /// The exploration: this invariant is violated.
    Invariant(Invariant),
}

impl Mutant {
    /// Every mutant.
    pub const ALL: [Mutant; 10] = [
        Mutant::NoAbandon,
        Mutant::StampEpoch,
        Mutant::NormalizeAtEpoch,
        Mutant::NoNormalize,
        Mutant::CommitFullDebt,
        Mutant::PageNoDemote,
        Mutant::PageOverDebt,
        Mutant::RepairNoDemote,
        Mutant::RepairOvertaken,
        Mutant::EscalateNever,
    ];

    /// The real variant it mutates.
    pub fn base(self) -> Rules {
        match self {
            Mutant::PageNoDemote | Mutant::PageOverDebt => Rules::UnifiedMinPageRetry,
            Mutant::RepairNoDemote | Mutant::RepairOvertaken => Rules::UnifiedMinRepairRetry,
            Mutant::EscalateNever => Rules::UnifiedMinEscalate,
            _ => Rules::UnifiedMinChurn,
        }
    }

    /// Its name for `--rules`: always starting with `mutant`.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::NoAbandon => "mutantChurnNoAbandon",
            Mutant::StampEpoch => "mutantChurnStampEpoch",
            Mutant::NormalizeAtEpoch => "mutantChurnNormalizeAtEpoch",
            Mutant::NoNormalize => "mutantChurnNoNormalize",
            Mutant::CommitFullDebt => "mutantChurnCommitFullDebt",
            Mutant::PageNoDemote => "mutantPageNoDemote",
            Mutant::PageOverDebt => "mutantPageOverDebt",
            Mutant::RepairNoDemote => "mutantRepairNoDemote",
            Mutant::RepairOvertaken => "mutantRepairOvertaken",
            Mutant::EscalateNever => "mutantEscalateNever",
        }
    }

    /// The checks the mutant fails, every one of them: the progress check for the mutant
    /// whose rule still keeps every invariant, else each invariant it violates, every other
    /// invariant holding. `tests/mutants.rs` holds each mutant to exactly this list.
    pub fn fails(self) -> &'static [MutantCheck] {
        use Invariant::*;
        use MutantCheck::Invariant as Inv;
        match self {
            // Replacing a chain is safe; only progress under churn needs the abandonment.
            Mutant::NoAbandon => &[MutantCheck::Progress],
            // The committed chain, stamped chainEpoch, is not the one the stamp names; it is
            // also older than the stamp and still held. And a full read that settles at the
            // epoch the stamp claimed raises nothing: progress fails too (with spare slots).
            Mutant::StampEpoch => &[
                Inv(CoverageHeld),
                Inv(CommitStamped),
                Inv(CommitReleases),
                MutantCheck::Progress,
            ],
            // Normalize at epoch releases the committed chain itself (its ep is chainEpoch).
            Mutant::NormalizeAtEpoch => &[Inv(CoverageHeld), Inv(CommitStamped)],
            // The view switched to the chain, but what it showed before is still held.
            Mutant::NoNormalize => &[Inv(CommitReleases)],
            // Every state it reaches, unifiedMinChurn reaches too (the full debt comes from a
            // superseded read's failure, which could as well have come after the commit): only
            // a step invariant sees the commit over full debt.
            Mutant::CommitFullDebt => &[Inv(ChainCommitBoundedDebt)],
            // A page failure an invalidation overtook is retried by reading one page of a
            // stale view: it stands with bounded debt that no rule can start repairing (the
            // repair waits for the failure, and the page retry for no debt), and no other
            // invariant sees it, nor the progress check under churn, whose start states record
            // no failure. The gone-cursor check, whose start states do, finds that state owing
            // something with nothing enabled: a deadlock.
            Mutant::PageNoDemote => &[Inv(PageFailureQuiet), MutantCheck::GoneCursor],
            // The same state, reached by the failure instead of after it.
            Mutant::PageOverDebt => &[Inv(PageFailureQuiet), MutantCheck::GoneCursor],
            // A repair failure an invalidation overtook would restart a repair over pages it
            // may have changed: only RepairFailureQuiet sees it.
            Mutant::RepairNoDemote => &[Inv(RepairFailureQuiet)],
            // The same state, reached by the failure instead of after it.
            Mutant::RepairOvertaken => &[Inv(RepairFailureQuiet)],
            // Every state it reaches is one unifiedMinRepairRetry reaches, and every invariant
            // and progress under churn hold there: only the gone-cursor adversary, failing
            // every resumed read, sees the page retried (or the repair resumed) for ever.
            Mutant::EscalateNever => &[MutantCheck::GoneCursor],
        }
    }

    /// `Fail(i)` of the resumed read as the mutant changes it (whether a page or repair
    /// failure, and whether the lattice's failure, may be recorded); `None` where it does not.
    pub(super) fn resumed_failure(self) -> Option<(bool, bool)> {
        (self == Mutant::EscalateNever).then_some((true, false))
    }

    /// `Fail(i)`'s page-failure condition as the mutant changes it; `None` where it does not.
    pub(super) fn page_failure(self, s: &State, r: &Req) -> Option<bool> {
        (self == Mutant::PageOverDebt).then(|| {
            r.kind == Kind::Finite && !r.sup && s.phase == Phase::Idle && s.failure == Failure::None
        })
    }

    /// `Fail(i)`'s repair-failure condition as the mutant changes it; `None` where it does not.
    pub(super) fn repair_failure(self, s: &State, r: &Req) -> Option<bool> {
        (self == Mutant::RepairOvertaken).then(|| {
            r.kind == Kind::Chain
                && !r.sup
                && s.phase == Phase::Repair
                && s.debt == Debt::Bounded
                && s.failure == Failure::None
        })
    }

    /// Whether `Invalidate` raises a repair failure's debt to full.
    pub(super) fn demotes_repair_failure(self) -> bool {
        self != Mutant::RepairNoDemote
    }

    /// Whether `Invalidate` turns a page failure into the lattice's own failure.
    pub(super) fn demotes_page_failure(self) -> bool {
        self != Mutant::PageNoDemote
    }

    /// The mutant as a rule variant.
    pub fn rules(self) -> Rules {
        Rules::Mutant(self)
    }

    /// What `SettleChain(i)` does in `s` with an overtaken chain: `unifiedMinChurn`'s choice,
    /// broken as the mutant says.
    pub(super) fn overtaken(self, s: &State) -> Overtaken {
        let right = Rules::UnifiedMinChurn.overtaken(s);
        match (self, right) {
            (Mutant::NoAbandon, Overtaken::Abandon) => Overtaken::Replace,
            (Mutant::StampEpoch, Overtaken::Commit { normalize_at, .. }) => Overtaken::Commit {
                stamp: s.epoch,
                normalize_at,
            },
            (Mutant::NormalizeAtEpoch, Overtaken::Commit { stamp, .. }) => Overtaken::Commit {
                stamp,
                normalize_at: Some(s.epoch),
            },
            (Mutant::NoNormalize, Overtaken::Commit { stamp, .. }) => Overtaken::Commit {
                stamp,
                normalize_at: None,
            },
            (Mutant::CommitFullDebt, Overtaken::Abandon)
                if s.failure == Failure::None && s.debt == Debt::Full =>
            {
                Overtaken::Commit {
                    stamp: s.chain_epoch,
                    normalize_at: Some(s.chain_epoch),
                }
            }
            (_, right) => right,
        }
    }
}

impl fmt::Display for MutantCheck {
    /// `ProgressUnderChurn`, as `loader-check --progress` names its check, or the invariant.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MutantCheck::Progress => f.write_str("ProgressUnderChurn"),
            MutantCheck::GoneCursor => f.write_str("ProgressGoneCursor"),
            MutantCheck::Invariant(inv) => f.write_str(inv.name()),
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
