//! The module's invariants, checked on the ledger's own state.

use super::{Coverage, Debt, Failure, Invariant, Kind, Ledger, Phase, St};

impl Ledger {
    /// The module's invariants on this ledger's own state, and `NoLostInvalidation` when
    /// `recheck_full` is on. Visits the settled requests: for tests and debug builds.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let quiet = self.phase == Phase::Idle && self.debt == Debt::None;
        if quiet && self.coverage == Coverage::Chain {
            let held = self.settled.ids_at(self.cover_epoch).any(|id| {
                self.live
                    .get(&id)
                    .is_some_and(|r| r.kind == Kind::Chain && r.st == St::Settled)
            });
            if !held {
                return Err(Invariant::ChainHeld.name());
            }
        }
        if quiet
            && self.inflight == 0
            && self.settled.min_ep().is_some_and(|e| e < self.cover_epoch)
        {
            return Err(Invariant::NoLeak.name());
        }
        if self.failure == Failure::Superseded && self.phase == Phase::Idle && self.inflight == 0 {
            return Err(Invariant::NoStrandedStaleFailure.name());
        }
        if self.config.recheck_full && quiet && self.cover_epoch != self.epoch {
            return Err(Invariant::NoLostInvalidation.name());
        }
        if self.failure == Failure::Page && !(quiet && self.cover_epoch == self.epoch) {
            return Err(Invariant::PageFailureQuiet.name());
        }
        if self.repair_failed()
            && !(self.phase == Phase::Idle
                && self.chain_epoch == self.epoch
                && self.inflight_chain + self.inflight_full == 0)
        {
            return Err(Invariant::RepairFailureQuiet.name());
        }
        Ok(())
    }

    /// Runs after every event that changed the state: counts it, and in debug builds
    /// asserts the invariants.
    #[inline]
    pub(super) fn after_event(&mut self) {
        self.changes += 1;
        #[cfg(debug_assertions)]
        if let Err(inv) = self.check_invariants() {
            panic!("ledger invariant {inv} violated: {:?}", self.snapshot());
        }
    }
}
