//! The checks on one observation: invariants, consistency, and agreement with the books.
//!
//! The module's invariants, the ABI's own consistency (counts, ids, a contiguous view), and
//! the loader's counts against the host's books.

use super::host::Host;
use super::observe::Obs;
use loader::ffi::*;

/// The module's invariants and the ABI's own consistency, for one observation.
pub(super) fn check_invariants(o: &Obs, recheck: bool) -> Result<(), String> {
    use loader_request_state as St;
    let s = &o.snap;
    let quiet = s.phase == loader_phase::Idle && s.debt == loader_debt::None;
    if quiet
        && s.coverage == loader_coverage::Chain
        && !o.requests.iter().any(|r| {
            r.kind == loader_kind::Chain && r.state == St::Settled && r.epoch == s.cover_epoch
        })
    {
        return Err("ChainHeld".into());
    }
    if quiet
        && s.inflight == 0
        && o.requests
            .iter()
            .any(|r| r.state == St::Settled && r.epoch < s.cover_epoch)
    {
        return Err("NoLeak".into());
    }
    if s.failure == loader_failure::Superseded && s.phase == loader_phase::Idle && s.inflight == 0 {
        return Err("NoStrandedStaleFailure".into());
    }
    if recheck && quiet && s.cover_epoch != s.epoch {
        return Err("NoLostInvalidation".into());
    }
    let count = |st: St| o.requests.iter().filter(|r| r.state == st).count() as u64;
    if (count(St::Inflight), count(St::Settled), count(St::Failed))
        != (s.inflight, s.settled, s.failed)
    {
        return Err("the snapshot's counts differ from loader_requests".into());
    }
    if o.requests.windows(2).any(|w| w[0].id >= w[1].id)
        || o.requests
            .iter()
            .any(|r| r.id == 0 || r.id >= s.next_request_id || r.epoch > s.epoch)
    {
        return Err("requests out of order, or with ids or epochs never issued".into());
    }
    if s.revalidating == quiet || o.revalidating != s.revalidating {
        return Err("revalidating disagrees with phase and debt".into());
    }
    let mut at = s.covered_start;
    for p in &o.pages {
        if p.start != at || p.count == 0 || p.epoch > s.epoch {
            return Err(format!("view page {p:?} does not continue at {at}"));
        }
        at += u64::from(p.count);
    }
    if at != s.covered_end {
        return Err(format!(
            "the view ends at {at}, covered_end is {}",
            s.covered_end
        ));
    }
    Ok(())
}

/// Where the loader's counts and view disagree with `host`'s books: reads outstanding,
/// requests in flight, acquisitions accepted and released, the window, pages held.
pub(super) fn books_disagree(o: &Obs, host: &Host) -> Vec<String> {
    let b = host.books.borrow();
    let mut problems = Vec::new();
    let s = &o.snap;
    let released: u64 = b.released.values().map(|&n| u64::from(n)).sum();
    // The loader lets a hinted read go after `read_timeout_ms` of tick time, while the host
    // may still hold it (a late answer is stale): only those may be missing. A host without
    // `cancel` is never told which reads were superseded, so any of its reads may be.
    let hinted = b
        .pending
        .iter()
        .filter(|r| b.cancels.contains_key(&r.id))
        .count() as u64;
    let held = b.pending.len() as u64;
    let may_go = if host.has_cancel { hinted } else { held };
    if s.outstanding_reads > held || held - s.outstanding_reads > may_go {
        problems.push(format!(
            "{} reads outstanding, the host holds {held} unanswered ({hinted} of them hinted)",
            s.outstanding_reads
        ));
    }
    // With the id space spent (the header's LOADER_RESULT_ID_OVERFLOW), a repair that needed
    // no read stays in flight: its commit is refused like every event that needs an id.
    if s.inflight != s.outstanding_reads && !o.ids_spent() {
        problems.push(format!(
            "{} requests in flight but {} reads outstanding",
            s.inflight, s.outstanding_reads
        ));
    }
    if s.accepted != b.accepted.len() as u64 || s.released != released {
        problems.push(format!(
            "counts accepted {} released {}, the host saw {} and {released}",
            s.accepted,
            s.released,
            b.accepted.len()
        ));
    }
    let (start, len) = host.window.get();
    if (s.window_start, s.window_len) != (start, len) {
        // Renumbered positions (a backward read reached the source's start away from 0)
        // move the window's start and run `changed`; the host reads the window back then (a
        // host without `changed` reads it whenever it looks).
        let told = b.changes > host.window_read_at.get() || !host.has_changed;
        if s.window_len == len && told {
            host.window.set((s.window_start, len));
            host.window_read_at.set(b.changes);
        } else {
            problems.push("the window is not the last one set".into());
        }
    }
    for p in &o.pages {
        if !b.accepted.contains(&p.acquisition) || b.released.contains_key(&p.acquisition) {
            problems.push(format!("view page {p:?} is not held"));
        }
    }
    problems
}
