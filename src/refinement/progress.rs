//! Progress from one ledger state: answering every in-flight request with success, and
//! retrying an own failure, reaches quiescence.

use crate::ledger::{Ledger, St};

/// Answers the in-flight requests of a copy of `ledger` with success, one at a time, and
/// retries an own failure, for at most `steps` events or until nothing is in flight. The copy
/// must end quiescent, and, when `at_epoch` is set (the ledger's `recheck_full`), with its
/// `cover_epoch` at its `epoch`. `Err` says how it fell short, or what the ledger refused.
///
/// The refinement check runs it in every state it reaches, and the differential fuzz target
/// at the end of every run.
pub fn check_progress(ledger: &Ledger, steps: usize, at_epoch: bool) -> Result<(), String> {
    let mut l = ledger.clone();
    let mut out = Vec::new();
    for _ in 0..steps {
        if l.retry_enabled() {
            l.explicit_retry(&mut out).map_err(|e| e.to_string())?;
            continue;
        }
        match l.requests().into_iter().find(|(_, r)| r.st == St::Inflight) {
            Some((id, _)) => {
                l.settle(id, &mut out).map_err(|e| e.to_string())?;
            }
            None => break,
        }
    }
    if !l.is_quiescent() {
        return Err(format!(
            "stuck: answering everything leaves {:?}",
            l.snapshot()
        ));
    }
    if at_epoch && l.cover_epoch() != l.epoch() {
        return Err("answering everything ends quiescent with coverEpoch < epoch".into());
    }
    Ok(())
}
