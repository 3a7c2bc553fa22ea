//! The lockstep's checks: both sides' invariants after each event, and progress at the end.

use super::Run;
use loader::model::Invariant;
use loader::refinement;

impl Run {
    /// Every state invariant of the modules on the model's state, the ledger's own, and no
    /// request superseded behind the model's back. (The step invariants are checked on each
    /// model step as it is taken.)
    pub(super) fn check_invariants(&self) {
        for inv in Invariant::STATE {
            if inv == Invariant::NoLostInvalidation && !self.recheck {
                continue;
            }
            if !inv.holds(&self.model, &self.state) {
                self.fail(format!("{inv} violated"));
            }
        }
        if let Err(inv) = self.side.ledger.check_invariants() {
            self.fail(format!("the ledger's own {inv} violated"));
        }
        for s in &self.side.slots {
            if let Some(r) = self.side.ledger.request(s.id) {
                if r.sup != s.sup {
                    self.fail(format!("request {} superseded without notice", s.id));
                }
            }
        }
    }

    /// Answering every in-flight request with success, and retrying an own failure, reaches
    /// quiescence; at the current epoch when the fix is on.
    pub(super) fn check_progress(&self) {
        if let Err(e) = refinement::check_progress(&self.side.ledger, 256, self.recheck) {
            self.fail(e);
        }
    }
}
