//! What the ABI shows of one loader ([`Obs`]), and the sentinels the reads must overwrite.
//!
//! Read through `loader_state`, `loader_requests`, `loader_view` and `loader_next_deadline`.

use super::{calls, R};
use loader::ffi::*;

/// A zeroed snapshot, for out-parameters whose contents do not matter.
pub(super) fn blank_snapshot() -> loader_snapshot {
    loader_snapshot {
        struct_size: std::mem::size_of::<loader_snapshot>() as u32,
        epoch: 0,
        debt: loader_debt::None,
        phase: loader_phase::Idle,
        chain_epoch: 0,
        failure: loader_failure::None,
        coverage: loader_coverage::Nothing,
        settled_once: false,
        cover_epoch: 0,
        inflight: 0,
        settled: 0,
        failed: 0,
        next_request_id: 0,
        pages: 0,
        outstanding_reads: 0,
        revalidating: false,
        end_of_source: false,
        covered_start: 0,
        covered_end: 0,
        window_start: 0,
        window_len: 0,
        accepted: 0,
        released: 0,
        quiescent: false,
        start_of_source: false,
    }
}

/// A sentinel entry: a refused copy must leave it untouched.
pub(super) fn blank_request() -> loader_request_info {
    loader_request_info {
        id: u64::MAX,
        kind: loader_kind::Full,
        epoch: u64::MAX,
        state: loader_request_state::Failed,
        superseded: true,
    }
}

/// A sentinel page: a refused copy must leave it untouched.
pub(super) fn blank_page() -> loader_page {
    loader_page {
        acquisition: usize::MAX,
        count: u32::MAX,
        epoch: u64::MAX,
        start: u64::MAX,
    }
}

/// What the ABI shows of one loader.
#[derive(Clone, Debug)]
pub(super) struct Obs {
    pub(super) snap: loader_snapshot,
    pub(super) requests: Vec<loader_request_info>,
    pub(super) pages: Vec<loader_page>,
    pub(super) revalidating: bool,
    pub(super) deadline: Option<u64>,
}

impl Obs {
    /// The spec's variables in the snapshot, as plain numbers: both keys start with them.
    fn spec_key(&self) -> Vec<u64> {
        let s = &self.snap;
        vec![
            s.epoch,
            s.debt as u64,
            s.phase as u64,
            s.chain_epoch,
            s.failure as u64,
            s.coverage as u64,
            s.settled_once as u64,
            s.cover_epoch,
            s.end_of_source as u64,
            s.covered_start,
            s.covered_end,
        ]
    }

    /// Everything, as plain numbers, for "a refused call changed nothing".
    pub(super) fn key(&self) -> Vec<u64> {
        let s = &self.snap;
        let mut k = self.spec_key();
        k.extend([
            s.inflight,
            s.settled,
            s.failed,
            s.next_request_id,
            s.pages,
            s.outstanding_reads,
            s.revalidating as u64,
            s.window_start,
            s.window_len,
            s.accepted,
            s.released,
            s.quiescent as u64,
            s.start_of_source as u64,
            self.revalidating as u64,
            self.deadline.is_some() as u64,
            self.deadline.unwrap_or(0),
        ]);
        for r in &self.requests {
            k.extend([
                r.id,
                r.kind as u64,
                r.epoch,
                r.state as u64,
                r.superseded as u64,
            ]);
        }
        for p in &self.pages {
            k.extend([p.acquisition as u64, u64::from(p.count), p.epoch, p.start]);
        }
        k
    }

    /// The spec's state, the live requests and the view: what `changed` announces.
    pub(super) fn abstract_key(&self) -> Vec<u64> {
        let mut k = self.spec_key();
        for r in &self.requests {
            k.extend([r.id, r.state as u64, r.superseded as u64]);
        }
        for p in &self.pages {
            k.extend([p.acquisition as u64, p.start]);
        }
        k
    }

    /// The request id counter is spent: a call that must issue a request returns
    /// `ID_OVERFLOW`.
    pub(super) fn ids_spent(&self) -> bool {
        self.snap.next_request_id == u64::MAX
    }

    /// One request id is left: an answer that decides a ranged change ahead of its read
    /// (which may start two requests) returns `ID_OVERFLOW`.
    pub(super) fn one_id_left(&self) -> bool {
        self.snap.next_request_id == u64::MAX - 1
    }

    /// The epoch counter is spent: an answer that decides a ranged change ahead of its read
    /// (which takes an epoch) returns `EPOCH_OVERFLOW`.
    pub(super) fn epochs_spent(&self) -> bool {
        self.snap.epoch == u64::MAX
    }

    /// `ExplicitRetry`'s guard, as the ABI shows it.
    pub(super) fn retry_enabled(&self) -> bool {
        let s = &self.snap;
        let inflight = |k| {
            self.requests
                .iter()
                .any(|r| r.kind == k && r.state == loader_request_state::Inflight)
        };
        // A page failure (shown as an own failure with no debt) is retried by reading that
        // page again, once no finite read is in flight; a repair's failure (an own failure
        // over bounded debt) by resuming the repair, once no chain or full read is in flight;
        // any other, by a full read over full debt.
        let page = s.debt == loader_debt::None;
        let repair = s.failure == loader_failure::Own && s.debt == loader_debt::Bounded;
        s.failure != loader_failure::None
            && s.phase == loader_phase::Idle
            && if page {
                !inflight(loader_kind::Finite)
            } else if repair {
                !inflight(loader_kind::Chain) && !inflight(loader_kind::Full)
            } else {
                s.debt == loader_debt::Full && !inflight(loader_kind::Full)
            }
    }
}

/// Reads everything the ABI shows of loader `h`; an error if any introspection call fails
/// or contradicts another.
pub(super) fn observe(h: loader_handle) -> Result<Obs, String> {
    let mut snap = blank_snapshot();
    let r = calls::state(h, Some(&mut snap));
    if r != R::Ok {
        return Err(format!("loader_state returned {r:?}"));
    }
    let mut requests = vec![blank_request(); snap.inflight as usize + 8];
    let mut n = 0;
    loop {
        let cap = requests.len();
        match calls::requests(h, Some(&mut requests), cap, Some(&mut n)) {
            R::Ok => break,
            R::BufferTooSmall if n > cap => requests.resize(n, blank_request()),
            r => {
                return Err(format!(
                    "loader_requests returned {r:?} (n {n}, capacity {cap})"
                ))
            }
        }
    }
    requests.truncate(n);
    let mut pages = vec![blank_page(); snap.pages as usize];
    let mut revalidating = !snap.revalidating;
    let cap = pages.len();
    let r = calls::view(
        h,
        Some(&mut pages),
        cap,
        Some(&mut n),
        Some(&mut revalidating),
    );
    if r != R::Ok || n != cap {
        return Err(format!(
            "loader_view returned {r:?} with {n} of {cap} pages"
        ));
    }
    let (mut armed, mut at) = (true, 1);
    let r = calls::next_deadline(h, Some(&mut armed), Some(&mut at));
    if r != R::Ok || (!armed && at != 0) {
        return Err(format!(
            "loader_next_deadline returned {r:?}, armed {armed} at {at}"
        ));
    }
    Ok(Obs {
        snap,
        requests,
        pages,
        revalidating,
        deadline: armed.then_some(at),
    })
}
