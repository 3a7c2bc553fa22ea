//! Test-only mutants of the loader: each undoes one fix (five that `fuzz_loader` found, the
//! far-start rule, the forward rule's check of a change ahead, and issue 35's two retry
//! regressions), so that the
//! loader checker (`loader-check --loader --mutant NAME`) can show it finds the defect the fix
//! removed; or breaks one cost the header promises (a ranged change, an append, a failed
//! page), so that the simulation's cost properties (`sim::cost`, tests/cost_mutants.rs) can
//! show they fail; or misapplies a shortcut, so that its guard (`guard`) can show it fails.
//! Built with the `testing` feature only; without it no mutant can be active and every switch
//! is the constant `false`.
#![cfg_attr(not(feature = "testing"), allow(dead_code))]

/// A fix undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutant {
    /// 6a2cf4a undone: a ranged repair re-reads the changed pages wholly outside the window
    /// plus prefetch instead of letting them go.
    RangedRereadsOutside = 1,
    /// b7fde5b undone: a ranged repair reads on past the window plus prefetch, and keeps its
    /// pages past a window that shrank or moved back.
    RangedReadsPast = 2,
    /// 417f188 undone: a ranged repair keeps its pages before a window that moved on.
    RangedKeepsBefore = 3,
    /// 8363f3f undone: the shift after a ranged repair cut at the front is computed in
    /// unsigned arithmetic, which overflows (a panic, as the fuzzer's build with overflow
    /// checks saw) when what it kept starts past its old run's end.
    RangedShiftUnsigned = 4,
    /// 27daac2 undone: a repair that lets go of the pages before the window shifts the
    /// positions of the pages it keeps down.
    RepairShiftsKept = 5,
    /// 4b3ae5f undone (branch i39): a far start keeps the repair in flight (and a failed one
    /// kept for its retry), which then walks from the old anchor to the new target.
    FarStartKeepsRepair = 6,
    /// The forward rule's check undone (this branch, issue 35): a forward read's answer is
    /// taken as current whatever it reached, although a ranged change reported while it was
    /// out lies at or before its `next_cursor`.
    AheadNeverReached = 7,
    /// A cost broken (issue 35): a ranged invalidation is taken as a whole one, so its repair
    /// reads the window plus prefetch whatever it touched (`ranged_cost` fails).
    RangedAsWhole = 8,
    /// A cost broken (issue 35): an append is taken as a whole invalidation, so the view is
    /// read again, not only the new items (`append_cost` fails).
    AppendedInvalidates = 9,
    /// A cost broken (issue 35): a page failure is retried from the anchor, as a window move's
    /// retry is, instead of reading the failed page again (`page_failure_cost` fails).
    PageRetryFull = 10,
    /// The pump's shortcut misapplied (issue 33): a chain's or full read's step that settles
    /// current skips the pump as one that reads on does, although its commit changed the
    /// view and the ledger (the guard, `guard`, fails: `no_panic`).
    SettledSkipsPump = 11,
    /// 832f16c's first fix undone (issue 35): any successful answer starts the automatic
    /// retry count again, a stalled cursor held or not, so a source that repeats a cursor
    /// past a page that succeeds is read again for ever (`progress` fails with the checker's
    /// `RepeatsWithItems` host).
    RetryResetBySuccess = 12,
    /// 832f16c's second fix undone (issue 35): a page read again that fails again is a page
    /// failure again, retried as that page, never escalated through a full read, so a cursor
    /// gone for good is read for ever (`progress` fails with the checker's `CursorGone` host).
    /// The ledger's own rule (`unifiedMinEscalate`'s `resumed`, which escalates whatever the
    /// loader asks) is undone with it.
    PageRetriedForEver = 13,
}

impl Mutant {
    /// Every mutant.
    pub const ALL: [Mutant; 13] = [
        Mutant::RangedRereadsOutside,
        Mutant::RangedReadsPast,
        Mutant::RangedKeepsBefore,
        Mutant::RangedShiftUnsigned,
        Mutant::RepairShiftsKept,
        Mutant::FarStartKeepsRepair,
        Mutant::AheadNeverReached,
        Mutant::RangedAsWhole,
        Mutant::AppendedInvalidates,
        Mutant::PageRetryFull,
        Mutant::SettledSkipsPump,
        Mutant::RetryResetBySuccess,
        Mutant::PageRetriedForEver,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::RangedRereadsOutside => "rangedRereadsOutside",
            Mutant::RangedReadsPast => "rangedReadsPast",
            Mutant::RangedKeepsBefore => "rangedKeepsBefore",
            Mutant::RangedShiftUnsigned => "rangedShiftUnsigned",
            Mutant::RepairShiftsKept => "repairShiftsKept",
            Mutant::FarStartKeepsRepair => "farStartKeepsRepair",
            Mutant::AheadNeverReached => "aheadNeverReached",
            Mutant::RangedAsWhole => "rangedAsWhole",
            Mutant::AppendedInvalidates => "appendedInvalidates",
            Mutant::PageRetryFull => "pageRetryFull",
            Mutant::SettledSkipsPump => "settledSkipsPump",
            Mutant::RetryResetBySuccess => "retryResetBySuccess",
            Mutant::PageRetriedForEver => "pageRetriedForEver",
        }
    }

    /// The commit whose fix it undoes (for a cost broken, the issue that made it a property).
    pub fn commit(self) -> &'static str {
        match self {
            Mutant::RangedRereadsOutside => "6a2cf4a",
            Mutant::RangedReadsPast => "b7fde5b",
            Mutant::RangedKeepsBefore => "417f188",
            Mutant::RangedShiftUnsigned => "8363f3f",
            Mutant::RepairShiftsKept => "27daac2",
            Mutant::FarStartKeepsRepair => "4b3ae5f",
            Mutant::AheadNeverReached => "i35f",
            Mutant::RangedAsWhole | Mutant::AppendedInvalidates | Mutant::PageRetryFull => {
                "issue 35"
            }
            Mutant::SettledSkipsPump => "issue 33",
            Mutant::RetryResetBySuccess | Mutant::PageRetriedForEver => "832f16c",
        }
    }

    /// The mutant named `name`.
    pub fn from_name(name: &str) -> Option<Mutant> {
        Mutant::ALL.into_iter().find(|m| m.name() == name)
    }
}

#[cfg(feature = "testing")]
static ACTIVE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Makes `m` the active mutant of every loader in the process (`None`: the loader as it is).
#[cfg(feature = "testing")]
pub fn set(m: Option<Mutant>) {
    ACTIVE.store(
        m.map_or(0, |m| m as u8),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// Whether `m` is active.
#[inline(always)]
pub(crate) fn on(m: Mutant) -> bool {
    #[cfg(feature = "testing")]
    {
        ACTIVE.load(std::sync::atomic::Ordering::Relaxed) == m as u8
    }
    #[cfg(not(feature = "testing"))]
    {
        let _ = m;
        false
    }
}
