//! The modules' invariants, evaluated on a model state, and their step invariants, evaluated on
//! a state and its successor.

use super::{Coverage, Debt, Failure, Invariant, Kind, Model, Phase, St, State, MAX_IDS, UNUSED};

impl Invariant {
    /// Whether the state invariant holds in `s`. Panics on a step invariant, which judges a
    /// step: [`Invariant::holds_step`].
    pub fn holds(self, m: &Model, s: &State) -> bool {
        match self {
            // Types are enforced by Rust; what can still go wrong is a slot outside `Ids` in use
            // or a stamp outside `0..MaxEpoch`, i.e. a broken transcription.
            Invariant::TypeOK => m.type_ok(s),
            Invariant::ChainHeld => m.chain_held(s),
            Invariant::NoLeak => m.no_leak(s),
            Invariant::NoStrandedStaleFailure => m.no_stranded_stale_failure(s),
            Invariant::NoLostInvalidation => m.no_lost_invalidation(s),
            Invariant::CoverageHeld => m.coverage_held(s),
            Invariant::PageFailureQuiet => m.page_failure_quiet(s),
            Invariant::RepairFailureQuiet => m.repair_failure_quiet(s),
            Invariant::CommitStamped
            | Invariant::CommitReleases
            | Invariant::ChainCommitBoundedDebt => {
                panic!("{self} is a step invariant: it judges a step, not a state")
            }
        }
    }

    /// Whether the invariant holds over the step from `s` to `t`: a step invariant judges the
    /// step, a state invariant the state `t` it reaches.
    pub fn holds_step(self, m: &Model, s: &State, t: &State) -> bool {
        if !self.is_step() {
            return self.holds(m, t);
        }
        // Every step invariant is about a commit: a step that leaves the coverage and its
        // stamp alone keeps them all.
        if !Invariant::judges_step(s, t) {
            return true;
        }
        match self {
            Invariant::CommitStamped => m.commit_stamped(s, t),
            Invariant::CommitReleases => m.commit_releases(t),
            Invariant::ChainCommitBoundedDebt => m.chain_commit_bounded_debt(s, t),
            state => state.holds(m, t),
        }
    }

    /// `CoverageSwitch`: the step from `s` to `t` changes the coverage or its stamp. The step
    /// invariants judge only such steps, so a checker may skip every other.
    pub fn judges_step(s: &State, t: &State) -> bool {
        t.coverage != s.coverage || t.cover_epoch != s.cover_epoch
    }
}

/// `KindOf(c)`: the kind of request whose settling establishes coverage `c`.
fn kind_of(c: Coverage) -> Kind {
    match c {
        Coverage::Nothing => Kind::None,
        Coverage::Pages => Kind::Finite,
        Coverage::Chain => Kind::Chain,
        Coverage::Full => Kind::Full,
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
        // `resumed \in Ids \cup {0}`, and 0 under the variants that do not have it.
        let resumed_ok =
            s.resumed as usize <= self.bounds.ids && (s.resumed == 0 || self.rules().escalates());
        s.epoch <= me
            && s.chain_epoch <= me
            && s.cover_epoch <= me
            && in_use_ok
            && unused_beyond
            && resumed_ok
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

    /// `CoverageHeld == coverage # "nothing" => \E i \in Ids : req[i].kind = KindOf(coverage)
    /// /\ req[i].ep = coverEpoch /\ req[i].st = "settled"`.
    pub fn coverage_held(&self, s: &State) -> bool {
        let kind = kind_of(s.coverage);
        s.coverage == Coverage::Nothing
            || self.ids().any(|i| {
                let r = s.req[i];
                r.st == St::Settled && r.ep == s.cover_epoch && r.kind == kind
            })
    }

    /// `PageFailureQuiet == failure = "page" => phase = "idle" /\ debt = "none" /\ coverEpoch =
    /// epoch`.
    pub fn page_failure_quiet(&self, s: &State) -> bool {
        s.failure != Failure::Page
            || (s.phase == Phase::Idle && s.debt == Debt::None && s.cover_epoch == s.epoch)
    }

    /// `RepairFailureQuiet == failure = "own" /\ debt = "bounded" => phase = "idle" /\
    /// chainEpoch = epoch /\ Inflight("chain") = {} /\ Inflight("full") = {}`.
    pub fn repair_failure_quiet(&self, s: &State) -> bool {
        !(s.failure == Failure::Own && s.debt == Debt::Bounded)
            || (s.phase == Phase::Idle
                && s.chain_epoch == s.epoch
                && !self.has_inflight(s, Kind::Chain)
                && !self.has_inflight(s, Kind::Full))
    }

    /// `CommitStamped`'s step, on a step that switches the coverage (`CoverageSwitch =>`):
    /// `\E i \in Ids : req[i].st = "inflight" /\ req'[i].st = "settled" /\ req[i].kind =
    /// KindOf(coverage') /\ req[i].ep = coverEpoch'`.
    fn commit_stamped(&self, s: &State, t: &State) -> bool {
        self.ids().any(|i| {
            s.req[i].st == St::Inflight
                && t.req[i].st == St::Settled
                && s.req[i].kind == kind_of(t.coverage)
                && s.req[i].ep == t.cover_epoch
        })
    }

    /// `CommitReleases`'s step, on a step that switches the coverage: `coverage' \in {"chain",
    /// "full"} => \A i \in Ids : req'[i].st = "settled" => req'[i].ep >= coverEpoch'`.
    fn commit_releases(&self, t: &State) -> bool {
        !matches!(t.coverage, Coverage::Chain | Coverage::Full)
            || self
                .ids()
                .all(|i| t.req[i].st != St::Settled || t.req[i].ep >= t.cover_epoch)
    }

    /// `ChainCommitBoundedDebt`'s step, on a step that switches the coverage: `coverage' =
    /// "chain" => debt = "bounded" /\ failure = "none"`.
    fn chain_commit_bounded_debt(&self, s: &State, t: &State) -> bool {
        t.coverage != Coverage::Chain || (s.debt == Debt::Bounded && s.failure == Failure::None)
    }
}
