//! The module's `Rules` constant: which rule variant the model runs, this project's two
//! variant modules included.

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
}

impl Rules {
    /// Every variant, the module's eight first, in the order the module names them, then this
    /// project's.
    pub const ALL: [Rules; 10] = [
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
    ];

    /// The module's own variants (everything but this project's additions).
    pub fn is_seed(self) -> bool {
        !matches!(self, Rules::UnifiedMinRecheck | Rules::UnifiedMinChurn)
    }

    /// The variant's value of `Rules` (this project's variants have their own modules instead).
    pub fn name(self) -> &'static str {
        match self {
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
        }
    }

    /// The variant [`Rules::name`] spells `s`, if any.
    pub fn parse(s: &str) -> Option<Rules> {
        Rules::ALL.into_iter().find(|r| r.name() == s)
    }

    /// `Rules \in {"unified", "unifiedMin"}`: the variants whose `Normalize` is not the identity.
    pub(super) fn normalizes(self) -> bool {
        matches!(
            self,
            Rules::Unified | Rules::UnifiedMin | Rules::UnifiedMinRecheck | Rules::UnifiedMinChurn
        )
    }

    /// `Rules \in {"unified", "unifiedNoNorm", "unifiedMin", "unifiedMinNoNorm"}`.
    pub(super) fn unified_family(self) -> bool {
        matches!(
            self,
            Rules::Unified
                | Rules::UnifiedNoNorm
                | Rules::UnifiedMin
                | Rules::UnifiedMinNoNorm
                | Rules::UnifiedMinRecheck
                | Rules::UnifiedMinChurn
        )
    }

    /// `Rules \in {"unifiedMin", "unifiedMinNoNorm"}`.
    pub(super) fn min_family(self) -> bool {
        matches!(
            self,
            Rules::UnifiedMin
                | Rules::UnifiedMinNoNorm
                | Rules::UnifiedMinRecheck
                | Rules::UnifiedMinChurn
        )
    }

    /// `spec/LoaderLedgerRecheck.tla`'s `SettleFull`: an overtaken full read leaves bounded debt.
    pub(super) fn rechecks_full(self) -> bool {
        matches!(self, Rules::UnifiedMinRecheck | Rules::UnifiedMinChurn)
    }

    /// `spec/LoaderLedgerChurn.tla`'s `SettleChain`: an overtaken repair commits.
    pub(super) fn commits_overtaken(self) -> bool {
        self == Rules::UnifiedMinChurn
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
