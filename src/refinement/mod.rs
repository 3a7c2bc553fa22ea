//! Refinement: the production [`Ledger`](crate::ledger::Ledger) takes only steps the model allows.
//!
//! [`check`] drives a ledger through every sequence of host events within the bounds. After
//! each event it maps the ledger's state to a model state (request ids to the model's slots in
//! issue order; released and forgotten requests keep their slot) and checks that
//! - the host event, followed by the eager scheduler's start, is a path of model transitions,
//!   and the scheduler left no `StartFull` or `StartRepair` enabled;
//! - every invariant holds, in the model's terms and in the ledger's own, and every step
//!   invariant holds on the model's steps the event took;
//! - answering every in-flight request with success (and retrying an own failure) reaches
//!   quiescence, at the current epoch when the fix is on: no state is stuck;
//! - every refused event (a second answer, an unknown id) changed nothing.
//!
//! The model runs without its `coverage # "full"` guards, since the ledger accepts an
//! invalidation in any state.
//!
//! Files: `slots.rs` (the model's request slots and the state a ledger state maps to),
//! `checker.rs` (the walk over host events and the checks after each), `progress.rs` (answering
//! everything reaches quiescence).

mod checker;
mod progress;
mod slots;

pub use checker::check;
pub use progress::check_progress;
pub use slots::{acted_on, book, map_state, slot_of, Slot, SlotFate};

use crate::ledger::Config;
use crate::model::{Bounds, Rules};

/// The bounds of a refinement run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefineBounds {
    /// The model's `MaxEpoch`: invalidations along one path.
    pub max_epoch: u8,
    /// How many requests may be issued along one path (the model's `Ids`).
    pub ids: usize,
    /// The ledger's `recheck_full`: on is checked against `unifiedMinRecheck` (or
    /// `unifiedMinEscalate`), off against the module's exact `unifiedMin`.
    pub recheck_full: bool,
    /// The ledger's `commit_overtaken`: with `recheck_full` on, on is checked against
    /// `unifiedMinEscalate` (`unifiedMinChurn` with the page retry, the repair retry and the
    /// escalation of a read started again, which the ledger takes under the same two
    /// settings) and off against
    /// `unifiedMinRecheck`; with it off it has no effect.
    pub commit_overtaken: bool,
}

impl RefineBounds {
    /// The model's rule variant these bounds are checked against.
    pub fn rules(&self) -> Rules {
        match (self.recheck_full, self.commit_overtaken) {
            (true, true) => Rules::UnifiedMinEscalate,
            (true, false) => Rules::UnifiedMinRecheck,
            (false, _) => Rules::UnifiedMin,
        }
    }

    /// The ledger settings these bounds check.
    pub fn config(&self) -> Config {
        Config {
            recheck_full: self.recheck_full,
            commit_overtaken: self.commit_overtaken,
        }
    }

    fn model_bounds(&self) -> Bounds {
        Bounds {
            max_epoch: self.max_epoch,
            ids: self.ids,
            rules: self.rules(),
            model_bounds: false,
        }
    }
}

/// What a refinement run covered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefineReport {
    /// Distinct ledger states reached.
    pub states: u64,
    /// Host events applied and checked.
    pub events: u64,
    /// Refused events checked to change nothing.
    pub refused: u64,
    /// Events whose successor needed more request slots than the bound, so not followed.
    pub pruned: u64,
    /// The distinct model states the ledger's states mapped to.
    pub model_states: u64,
}
