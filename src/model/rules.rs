//! The module's `Rules` constant: which rule variant the model runs.

use std::fmt;

/// The module's `Rules` constant, plus this project's variant.
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
}

impl Rules {
    /// Every variant, the module's eight first, in the order the module names them.
    pub const ALL: [Rules; 9] = [
        Rules::Current,
        Rules::Unified,
        Rules::UnifiedNoNorm,
        Rules::UnifiedMin,
        Rules::UnifiedMinNoNorm,
        Rules::OldRetire,
        Rules::OldLeak,
        Rules::OldRecover,
        Rules::UnifiedMinRecheck,
    ];

    /// The module's own variants (everything but this project's addition).
    pub fn is_seed(self) -> bool {
        self != Rules::UnifiedMinRecheck
    }

    /// The variant's value of `Rules` (this project's variant has its own module instead).
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
            Rules::Unified | Rules::UnifiedMin | Rules::UnifiedMinRecheck
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
        )
    }

    /// `Rules \in {"unifiedMin", "unifiedMinNoNorm"}`.
    pub(super) fn min_family(self) -> bool {
        matches!(
            self,
            Rules::UnifiedMin | Rules::UnifiedMinNoNorm | Rules::UnifiedMinRecheck
        )
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
