//! The module's invariants, evaluated on a model state.

use super::{Coverage, Debt, Failure, Invariant, Kind, Model, Phase, St, State, MAX_IDS, UNUSED};

impl Invariant {
    /// Whether the invariant holds in `s`.
    pub fn holds(self, m: &Model, s: &State) -> bool {
        match self {
            // Types are enforced by Rust; what can still go wrong is a slot outside `Ids` in use
            // or a stamp outside `0..MaxEpoch`, i.e. a broken transcription.
            Invariant::TypeOK => m.type_ok(s),
            Invariant::ChainHeld => m.chain_held(s),
            Invariant::NoLeak => m.no_leak(s),
            Invariant::NoStrandedStaleFailure => m.no_stranded_stale_failure(s),
            Invariant::NoLostInvalidation => m.no_lost_invalidation(s),
        }
    }
}

impl Model {
    /// `TypeOK`, widened to every variable's domain under the constants.
    pub fn type_ok(&self, s: &State) -> bool {
        let me = self.bounds.max_epoch;
        let in_use_ok = self.ids().all(|i| {
            let r = s.req[i];
            r.ep <= me && ((r.st == St::Unused) == (r.kind == Kind::None))
        });
        let unused_beyond = (self.bounds.ids..MAX_IDS).all(|i| s.req[i] == UNUSED);
        s.epoch <= me && s.chain_epoch <= me && s.cover_epoch <= me && in_use_ok && unused_beyond
    }

    /// `ChainHeld`.
    pub fn chain_held(&self, s: &State) -> bool {
        !(s.phase == Phase::Idle && s.debt == Debt::None && s.coverage == Coverage::Chain)
            || self.ids().any(|i| {
                let r = s.req[i];
                r.kind == Kind::Chain && r.ep == s.cover_epoch && r.st == St::Settled
            })
    }

    /// `NoLeak`.
    pub fn no_leak(&self, s: &State) -> bool {
        !(s.phase == Phase::Idle && s.debt == Debt::None && !self.any_inflight(s))
            || self
                .ids()
                .all(|i| s.req[i].st != St::Settled || s.req[i].ep >= s.cover_epoch)
    }

    /// `NoStrandedStaleFailure`.
    pub fn no_stranded_stale_failure(&self, s: &State) -> bool {
        s.failure != Failure::Superseded || s.phase != Phase::Idle || self.any_inflight(s)
    }

    /// `NoLostInvalidation == (phase = "idle" /\ debt = "none") => coverEpoch = epoch`.
    pub fn no_lost_invalidation(&self, s: &State) -> bool {
        !(s.phase == Phase::Idle && s.debt == Debt::None) || s.cover_epoch == s.epoch
    }
}
