//! The lockstep's checks: both sides' invariants after each event, and progress at the end.

use super::Run;
use loader::ledger;
use loader::model::Invariant;

impl Run {
    /// Every invariant of the module on the model's state, the ledger's own, and no request
    /// superseded behind the model's back.
    pub(super) fn check_invariants(&self) {
        for inv in Invariant::ALL {
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
        let mut l = self.side.ledger.clone();
        let mut out = Vec::new();
        for _ in 0..256 {
            if l.retry_enabled() {
                l.explicit_retry(&mut out).expect("explicit_retry");
                continue;
            }
            match l
                .requests()
                .into_iter()
                .find(|(_, r)| r.st == ledger::St::Inflight)
            {
                Some((id, _)) => {
                    l.settle(id, &mut out).expect("settle");
                }
                None => break,
            }
        }
        if !l.is_quiescent() {
            self.fail(format!(
                "stuck: answering everything leaves {:?}",
                l.snapshot()
            ));
        }
        if self.recheck && l.cover_epoch() != l.epoch() {
            self.fail("answering everything ends with coverEpoch < epoch".into());
        }
    }
}
