//! An executable transcription of `spec/LoaderLedger.tla` and its variants
//! `spec/LoaderLedgerRecheck.tla`, `spec/LoaderLedgerChurn.tla`, `spec/LoaderLedgerPageRetry.tla`,
//! `spec/LoaderLedgerRepairRetry.tla` and `spec/LoaderLedgerEscalate.tla`: the model, its constants and the module's operators.
//!
//! Every variable, operator, action and invariant of the module appears here under its own
//! name, so the TLA+ text and this code can be read side by side. The module's constants are
//! parameters ([`Bounds`]): `MaxEpoch`, the number of `Ids`, the `Rules` variant, and whether the
//! `coverage # "full"` model-bound guards on `IssueFinite` and `Invalidate` are kept.
//!
//! The files follow the module's parts: [`Rules`] (rules.rs), the state (state.rs), [`Action`]
//! (action.rs), `Next` and its actions in the module's order (next.rs), the invariants
//! (invariants.rs), the printing of states (show.rs), the progress checks under churn and
//! with a cursor gone for good (progress.rs), and, in builds with the `testing` feature, the
//! mutants of this project's variants that show their checks can fail (mutant.rs).
//!
//! This layer knows nothing of the production ledger; `crate::refinement` relates the two. The
//! values both share live in `crate::vocab`.

mod action;
pub mod explore;
mod invariants;
#[cfg(any(test, feature = "testing"))]
mod mutant;
mod next;
mod pack;
pub mod progress;
mod rules;
mod show;
mod state;

pub use crate::vocab::{Coverage, Debt, Failure, Invariant, Phase};
pub use action::Action;
#[cfg(any(test, feature = "testing"))]
pub use mutant::{Mutant, MutantCheck};
pub use pack::Packer;
pub use rules::Rules;
pub use state::{Bounds, Kind, Req, St, State, MAX_IDS, UNUSED};

/// The module, instantiated with its constants.
#[derive(Clone, Copy, Debug)]
pub struct Model {
    /// The constants.
    pub bounds: Bounds,
}

impl Model {
    /// The module under `bounds`. Panics if `bounds.ids` is not in `1..=MAX_IDS`.
    pub fn new(bounds: Bounds) -> Model {
        assert!(
            bounds.ids >= 1 && bounds.ids <= MAX_IDS,
            "ids must be 1..=8"
        );
        Model { bounds }
    }

    fn ids(&self) -> std::ops::Range<usize> {
        0..self.bounds.ids
    }

    fn rules(&self) -> Rules {
        self.bounds.rules
    }

    /// `Init`.
    pub fn init(&self) -> State {
        State {
            epoch: 0,
            debt: Debt::None,
            phase: Phase::Idle,
            chain_epoch: 0,
            failure: Failure::None,
            coverage: Coverage::Nothing,
            req: [UNUSED; MAX_IDS],
            settled_once: false,
            cover_epoch: 0,
            resumed: 0,
        }
    }

    /// `Inflight(k) # {}`.
    pub fn has_inflight(&self, s: &State, kind: Kind) -> bool {
        self.ids()
            .any(|i| s.req[i].st == St::Inflight && s.req[i].kind == kind)
    }

    /// `AnyInflight`.
    pub fn any_inflight(&self, s: &State) -> bool {
        self.ids().any(|i| s.req[i].st == St::Inflight)
    }

    /// `Free`, as slot indices.
    fn free(&self, s: &State) -> impl Iterator<Item = usize> + '_ {
        let req = s.req;
        self.ids().filter(move |&i| req[i].st == St::Unused)
    }

    /// `New(k)`.
    fn new_req(s: &State, kind: Kind) -> Req {
        Req {
            kind,
            ep: s.epoch,
            st: St::Inflight,
            sup: false,
        }
    }

    /// `Supersede(r)`.
    fn supersede(&self, r: &mut [Req; MAX_IDS]) {
        for j in self.ids() {
            if r[j].st == St::Inflight && r[j].kind == Kind::Finite {
                r[j].sup = true;
            }
        }
    }

    /// `Normalize(r, ph, db, ce)`.
    fn normalize(&self, r: &mut [Req; MAX_IDS], ph: Phase, db: Debt, ce: u8) {
        if self.rules().normalizes() && ph == Phase::Idle && db == Debt::None {
            for i in self.ids() {
                if r[i].st == St::Settled && r[i].ep < ce {
                    r[i].st = St::Released;
                }
            }
        }
    }

    /// `ReleaseAllSettledExcept(r, keep)`.
    fn release_all_settled_except(&self, r: &mut [Req; MAX_IDS], keep: usize) {
        for j in self.ids() {
            if j != keep && r[j].st == St::Settled {
                r[j].st = St::Released;
            }
        }
    }
}
