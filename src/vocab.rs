//! The TLA+ module's shared vocabulary: the values of its variables and the names of its
//! invariants, used alike by the executable `model` and the production `ledger`.
//!
//! Only names and domains live here, no rule: neither layer reaches into the other's logic
//! through this module.
//!
//! A request's `kind` and `st` are not here: the model's hold an unused request slot's values
//! too (`"none"`, `"unused"`, `"released"`), which the ledger, keeping live requests alone,
//! never holds, so each layer has its own (`model::Kind`, `ledger::Kind`).

use std::fmt;

/// Declares an enum whose variants are the module's string values, with `ALL`, `name()` (the
/// module's spelling) and a `Display` that prints it.
macro_rules! spec_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub enum $name { #[default] $($(#[$vm])* $variant),* }
        impl $name {
            /// Every value, in the module's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            /// The spelling the TLA+ module uses.
            pub fn name(self) -> &'static str { match self { $($name::$variant => $text),* } }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.name()) }
        }
    };
}
#[cfg(any(test, feature = "testing"))]
pub(crate) use spec_enum;

spec_enum!(
    /// `debt`: none < bounded < full.
    Debt {
        /// Nothing is owed: the coverage is current.
        None => "none",
        /// An invalidation is owed that a repair (a chain read) can make good.
        Bounded => "bounded",
        /// Only a full-source read can make good what is owed.
        Full => "full",
    }
);
spec_enum!(
    /// `phase`.
    Phase {
        /// No authoritative work is running.
        Idle => "idle",
        /// A chain read is repairing bounded debt.
        Repair => "repair",
        /// A full-source read holds the source.
        FullHeld => "fullheld",
    }
);
spec_enum!(
    /// `failure`.
    Failure {
        /// No failure is recorded.
        None => "none",
        /// The loader's own work failed: it waits for a retry.
        Own => "own",
        /// A request that authoritative work superseded failed.
        Superseded => "superseded",
        /// A finite read's own failure with nothing else owed (`spec/LoaderLedgerPageRetry.tla`):
        /// the retry reads the same page again, unless the source or the window changed.
        Page => "page",
    }
);
spec_enum!(
    /// `coverage`.
    Coverage {
        /// Nothing has settled yet.
        Nothing => "nothing",
        /// Finite reads established the coverage.
        Pages => "pages",
        /// A chain read (a repair) established it.
        Chain => "chain",
        /// A full-source read established it.
        Full => "full",
    }
);

/// The module's invariants, plus `NoLostInvalidation` of `spec/LoaderLedgerRecheck.tla` and the
/// invariants of the overtaken commit of `spec/LoaderLedgerChurn.tla`. Most are state
/// invariants; the step invariants ([`Invariant::is_step`]) judge each step, a state and its
/// successor (TLA+'s `[][P]_vars`, checked by TLC as a `PROPERTY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invariant {
    /// `TypeOK`: every variable stays in its domain.
    TypeOK,
    /// `ChainHeld`: a finished repair's own acquisition is still held.
    ChainHeld,
    /// `NoLeak`: when quiescent, nothing older than the coverage epoch is still held.
    NoLeak,
    /// `NoStrandedStaleFailure`: a superseded request's failure is never stranded.
    NoStrandedStaleFailure,
    /// `NoLostInvalidation`: quiescent with no debt means the coverage is current.
    NoLostInvalidation,
    /// `CoverageHeld`: in every phase, a request of the coverage's kind stamped `coverEpoch` is
    /// still held (`ChainHeld` without its quiescence guard, for every kind of coverage).
    CoverageHeld,
    /// `CommitStamped` (a step invariant): a step that changes the coverage or its stamp settles
    /// a request of the new coverage's kind, keeps it held, and stamps the coverage with its
    /// epoch.
    CommitStamped,
    /// `CommitReleases` (a step invariant): a step that commits a chain's or a full read's
    /// coverage leaves nothing held that is older than the new stamp.
    CommitReleases,
    /// `ChainCommitBoundedDebt` (a step invariant): a chain commits only over bounded debt with
    /// no failure recorded; owing a full read, it is abandoned for one.
    ChainCommitBoundedDebt,
    /// `PageFailureQuiet`: a page failure is recorded only while nothing else is owed and the
    /// view is current, so that reading the failed page again is all the retry owes.
    PageFailureQuiet,
    /// `RepairFailureQuiet`: a repair failure (the own failure over bounded debt) stands only
    /// while its chain is current and nothing runs, so that starting the repair again (resumed
    /// at its failed read) is all the retry owes.
    RepairFailureQuiet,
}

impl Invariant {
    /// Every invariant, in the order the modules state them.
    pub const ALL: [Invariant; 11] = [
        Invariant::TypeOK,
        Invariant::ChainHeld,
        Invariant::NoLeak,
        Invariant::NoStrandedStaleFailure,
        Invariant::NoLostInvalidation,
        Invariant::CoverageHeld,
        Invariant::CommitStamped,
        Invariant::CommitReleases,
        Invariant::ChainCommitBoundedDebt,
        Invariant::PageFailureQuiet,
        Invariant::RepairFailureQuiet,
    ];

    /// The state invariants: [`Invariant::ALL`] less the step invariants.
    pub const STATE: [Invariant; 8] = [
        Invariant::TypeOK,
        Invariant::ChainHeld,
        Invariant::NoLeak,
        Invariant::NoStrandedStaleFailure,
        Invariant::NoLostInvalidation,
        Invariant::CoverageHeld,
        Invariant::PageFailureQuiet,
        Invariant::RepairFailureQuiet,
    ];

    /// The step invariants: each judges a state and its successor.
    pub const STEP: [Invariant; 3] = [
        Invariant::CommitStamped,
        Invariant::CommitReleases,
        Invariant::ChainCommitBoundedDebt,
    ];

    /// Whether it judges a step (a state and its successor) rather than a state.
    pub fn is_step(self) -> bool {
        Invariant::STEP.contains(&self)
    }

    /// The invariant's name in the module.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::TypeOK => "TypeOK",
            Invariant::ChainHeld => "ChainHeld",
            Invariant::NoLeak => "NoLeak",
            Invariant::NoStrandedStaleFailure => "NoStrandedStaleFailure",
            Invariant::NoLostInvalidation => "NoLostInvalidation",
            Invariant::CoverageHeld => "CoverageHeld",
            Invariant::CommitStamped => "CommitStamped",
            Invariant::CommitReleases => "CommitReleases",
            Invariant::ChainCommitBoundedDebt => "ChainCommitBoundedDebt",
            Invariant::PageFailureQuiet => "PageFailureQuiet",
            Invariant::RepairFailureQuiet => "RepairFailureQuiet",
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
