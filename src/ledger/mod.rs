//! The production request ledger: request authority and acquisition retirement.
//!
//! This is the TLA+ module's `unifiedMin` rule set, generalised as DESIGN.md describes:
//! - request ids are `u64`, issued in increasing order and never reused; a released request
//!   is forgotten;
//! - there is no bound on requests or epochs, and an invalidation may arrive in any state;
//! - scheduling is eager: after every event the ledger takes `StartFull` or `StartRepair` when
//!   enabled, and `IssueFinite` when the caller says the window wants more ([`Ledger::want_more`]);
//! - with [`Config::recheck_full`] on (the default), a full read that an invalidation overtook
//!   leaves bounded debt, so no invalidation is lost (the model's `unifiedMinRecheck`).
//!
//! It owns no pages, cursors, clocks or I/O. Events go in; [`Effect`]s come out into a buffer
//! the caller owns. Each event costs O(1) amortised plus O(k) for the k requests it retires:
//! `Normalize` is incremental, over settled requests bucketed by epoch stamp.

mod settled;

pub use crate::model::{Coverage, Debt, Failure, Phase};

use rustc_hash::FxHashMap as HashMap;
use settled::SettledIndex;

/// A request's `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Finite,
    Chain,
    Full,
}

/// A live request's `st`. Released requests are forgotten, so they have no state here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum St {
    Inflight,
    Settled,
    Failed,
}

/// One live request: the module's `[kind, ep, st, sup]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    pub kind: Kind,
    pub ep: u64,
    pub st: St,
    pub sup: bool,
}

/// What the ledger asks of its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Start the work of a new request.
    Start { id: u64, kind: Kind, epoch: u64 },
    /// The request is retired: hand back everything it acquired. Sent once per request.
    Release { id: u64 },
    /// Authoritative work superseded this in-flight finite request; its answer will be stale.
    Superseded { id: u64 },
}

/// How an accepted answer was classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// A finite read that is authoritative: it extends the coverage.
    FiniteCurrent,
    /// A finite read that is not: its data is not part of the view.
    FiniteStale,
    /// A chain whose epoch moved: it settled stale and `next` replaces it (P5).
    ChainReplaced { next: u64 },
    /// A chain abandoned for the full-source read `full`.
    ChainAbandoned { full: u64 },
    /// A chain that finished its repair: its data is the view.
    ChainCommitted,
    /// A full read that settled: its data is the view. With `recheck`, an invalidation overtook
    /// it and a repair follows.
    FullCommitted { recheck: bool },
}

/// How a failure was classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failed {
    /// The loader's own failure: it waits for a retry.
    Own,
    /// A superseded request failed: it only raised debt and blocks nothing.
    Superseded,
}

/// Why the ledger refused an event. A refused event changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("request {0} was never issued")]
    NotIssued(u64),
    #[error("request {0} was already answered")]
    AlreadyAnswered(u64),
    #[error("request {0} was answered and has been retired")]
    Retired(u64),
    #[error("the epoch counter is exhausted")]
    EpochOverflow,
    #[error("the request id space is exhausted")]
    IdOverflow,
}

/// Ledger settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// A full read that settles with `ep < epoch` leaves bounded debt, so the invalidation that
    /// overtook it is repaired. Off restores the module's exact `unifiedMin`, which loses it.
    pub recheck_full: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config { recheck_full: true }
    }
}

/// The module's abstract variables, plus counts of live requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Snapshot {
    pub epoch: u64,
    pub debt: Debt,
    pub phase: Phase,
    pub chain_epoch: u64,
    pub failure: Failure,
    pub coverage: Coverage,
    pub settled_once: bool,
    pub cover_epoch: u64,
    pub inflight: usize,
    pub settled: usize,
    pub failed: usize,
    pub next_id: u64,
}

/// The request ledger.
#[derive(Clone, Debug)]
pub struct Ledger {
    config: Config,
    epoch: u64,
    debt: Debt,
    phase: Phase,
    chain_epoch: u64,
    failure: Failure,
    coverage: Coverage,
    settled_once: bool,
    cover_epoch: u64,
    next_id: u64,
    /// Counts the events that changed the state, so callers can tell cheaply.
    changes: u64,
    live: HashMap<u64, Request>,
    settled: SettledIndex,
    /// Failed chain and full requests; `ExplicitRetry` releases them. A failed finite request
    /// is forgotten at once: no rule reads it again until `ExplicitRetry` would release it,
    /// and the caller hands back whatever its one read acquired.
    failed: Vec<u64>,
    /// `Inflight("finite")`: the rule allows at most one.
    inflight_finite: Option<u64>,
    inflight_chain: usize,
    inflight_full: usize,
    inflight: usize,
}

impl Default for Ledger {
    fn default() -> Ledger {
        Ledger::new(Config::default())
    }
}

impl Ledger {
    /// The module's `Init`.
    pub fn new(config: Config) -> Ledger {
        Ledger::with_counters(config, 0, 1)
    }

    /// A ledger whose epoch and first request id start at the given values, so that counter
    /// exhaustion can be tested without 2^64 events.
    pub fn with_counters(config: Config, epoch: u64, next_id: u64) -> Ledger {
        Ledger {
            config,
            epoch,
            debt: Debt::None,
            phase: Phase::Idle,
            chain_epoch: epoch,
            failure: Failure::None,
            coverage: Coverage::Nothing,
            settled_once: false,
            cover_epoch: epoch,
            next_id: next_id.max(1),
            changes: 0,
            live: HashMap::default(),
            settled: SettledIndex::default(),
            failed: Vec::new(),
            inflight_finite: None,
            inflight_chain: 0,
            inflight_full: 0,
            inflight: 0,
        }
    }

    pub fn config(&self) -> Config {
        self.config
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn debt(&self) -> Debt {
        self.debt
    }

    pub fn failure(&self) -> Failure {
        self.failure
    }

    pub fn cover_epoch(&self) -> u64 {
        self.cover_epoch
    }

    /// The id the next request will get; `u64::MAX` when the id space is exhausted.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// How many events have changed the state so far.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// A live request, if `id` names one.
    pub fn request(&self, id: u64) -> Option<Request> {
        self.live.get(&id).copied()
    }

    /// Idle, no debt, nothing in flight.
    pub fn is_quiescent(&self) -> bool {
        self.phase == Phase::Idle && self.debt == Debt::None && self.inflight == 0
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            epoch: self.epoch,
            debt: self.debt,
            phase: self.phase,
            chain_epoch: self.chain_epoch,
            failure: self.failure,
            coverage: self.coverage,
            settled_once: self.settled_once,
            cover_epoch: self.cover_epoch,
            inflight: self.inflight,
            settled: self.settled.len(),
            failed: self.failed.len(),
            next_id: self.next_id,
        }
    }

    /// Every live request, in id order. Allocates: this is for introspection, not the hot path.
    pub fn requests(&self) -> Vec<(u64, Request)> {
        let mut v: Vec<_> = self.live.iter().map(|(&id, &r)| (id, r)).collect();
        v.sort_unstable_by_key(|&(id, _)| id);
        v
    }

    // ---- host events ----

    /// `Invalidate`: the source changed.
    pub fn invalidate(&mut self, out: &mut Vec<Effect>) -> Result<(), LedgerError> {
        let epoch = self
            .epoch
            .checked_add(1)
            .ok_or(LedgerError::EpochOverflow)?;
        self.check_id_room()?;
        self.epoch = epoch;
        self.debt = match self.debt {
            Debt::None if self.settled_once && self.phase == Phase::Idle => Debt::Bounded,
            Debt::None => Debt::Full,
            d => d,
        };
        self.schedule(out);
        self.after_event();
        Ok(())
    }

    /// `IssueFinite`, when enabled: the window needs another page. Returns the new request.
    pub fn want_more(&mut self, out: &mut Vec<Effect>) -> Result<Option<u64>, LedgerError> {
        if !(self.phase == Phase::Idle
            && self.debt == Debt::None
            && self.failure == Failure::None
            && self.inflight_finite.is_none())
        {
            return Ok(None);
        }
        let id = self.start(Kind::Finite, out)?;
        self.after_event();
        Ok(Some(id))
    }

    /// `ExplicitRetry`, when enabled: a recorded failure is retried with a full-source read.
    /// Returns the new request, or `None` when there is nothing to retry yet.
    pub fn retry(&mut self, out: &mut Vec<Effect>) -> Result<Option<u64>, LedgerError> {
        if !self.retry_enabled() {
            return Ok(None);
        }
        self.check_id_room()?;
        for id in self.failed.drain(..) {
            self.live.remove(&id);
            out.push(Effect::Release { id });
        }
        self.failure = Failure::None;
        self.supersede(out);
        let id = self.start(Kind::Full, out)?;
        self.phase = Phase::FullHeld;
        self.after_event();
        Ok(Some(id))
    }

    /// Whether [`Ledger::retry`] would start a read now.
    pub fn retry_enabled(&self) -> bool {
        self.failure != Failure::None
            && self.phase == Phase::Idle
            && self.debt == Debt::Full
            && self.inflight_full == 0
    }

    /// An in-flight request's work finished: `SettleFinite`, `SettleChain` or `SettleFull`.
    pub fn settle(&mut self, id: u64, out: &mut Vec<Effect>) -> Result<Settled, LedgerError> {
        let r = self.inflight_request(id)?;
        // Settling may start a request; refuse before changing anything if no id is left.
        self.check_id_room()?;
        let outcome = match r.kind {
            Kind::Finite => self.settle_finite(id, r, out),
            Kind::Chain => self.settle_chain(id, r, out)?,
            Kind::Full => self.settle_full(id, r, out),
        };
        self.schedule(out);
        // `Normalize` runs last in each settle rule, after the state it reads was updated.
        self.after_event();
        Ok(outcome)
    }

    /// An in-flight request failed: `Fail`.
    pub fn fail(&mut self, id: u64, out: &mut Vec<Effect>) -> Result<Failed, LedgerError> {
        let r = self.inflight_request(id)?;
        self.check_id_room()?;
        self.leave_inflight(id, r.kind);
        let outcome = if r.kind == Kind::Finite && r.sup {
            // Unified: a superseded request's failure blocks nothing; it only raises debt.
            if !(self.coverage == Coverage::Full
                && self.phase == Phase::Idle
                && self.debt == Debt::None)
            {
                self.debt = Debt::Full;
            }
            Failed::Superseded
        } else {
            self.failure = Failure::Own;
            self.debt = Debt::Full;
            if r.kind != Kind::Finite {
                self.phase = Phase::Idle;
            }
            Failed::Own
        };
        if r.kind == Kind::Finite {
            self.live.remove(&id);
        } else {
            self.live.insert(
                id,
                Request {
                    st: St::Failed,
                    ..r
                },
            );
            self.failed.push(id);
        }
        self.schedule(out);
        self.after_event();
        Ok(outcome)
    }

    // ---- the rules ----

    fn settle_finite(&mut self, id: u64, r: Request, out: &mut Vec<Effect>) -> Settled {
        let current =
            r.ep == self.epoch && self.phase == Phase::Idle && self.failure == Failure::None;
        self.leave_inflight(id, r.kind);
        self.mark_settled(id, r);
        if current {
            self.cover_epoch = self.epoch;
            self.coverage = Coverage::Pages;
            self.settled_once = true;
        }
        self.normalize(self.phase, self.debt, self.cover_epoch, out);
        if current {
            Settled::FiniteCurrent
        } else {
            Settled::FiniteStale
        }
    }

    fn settle_chain(
        &mut self,
        id: u64,
        r: Request,
        out: &mut Vec<Effect>,
    ) -> Result<Settled, LedgerError> {
        self.leave_inflight(id, r.kind);
        self.mark_settled(id, r);
        if self.chain_epoch != self.epoch {
            // A newer invalidation: start the replacement chain (P5).
            let next = self.start(Kind::Chain, out)?;
            self.chain_epoch = self.epoch;
            Ok(Settled::ChainReplaced { next })
        } else if self.failure != Failure::None || self.debt == Debt::Full {
            // Abandon and start the full-source read the overlap replaced.
            let full = self.start(Kind::Full, out)?;
            self.phase = Phase::FullHeld;
            self.debt = Debt::Full;
            Ok(Settled::ChainAbandoned { full })
        } else {
            self.normalize(Phase::Idle, Debt::None, self.epoch, out);
            self.phase = Phase::Idle;
            self.debt = Debt::None;
            self.coverage = Coverage::Chain;
            self.settled_once = true;
            self.cover_epoch = self.epoch;
            Ok(Settled::ChainCommitted)
        }
    }

    fn settle_full(&mut self, id: u64, r: Request, out: &mut Vec<Effect>) -> Settled {
        self.leave_inflight(id, r.kind);
        self.mark_settled(id, r);
        self.normalize(Phase::Idle, Debt::None, r.ep, out);
        let recheck = self.config.recheck_full && r.ep < self.epoch;
        self.phase = Phase::Idle;
        self.debt = if recheck { Debt::Bounded } else { Debt::None };
        self.coverage = Coverage::Full;
        self.failure = Failure::None;
        self.settled_once = true;
        self.cover_epoch = r.ep;
        Settled::FullCommitted { recheck }
    }

    /// The eager scheduler: `StartFull` or `StartRepair`, whichever is enabled (the debt
    /// lattice makes them exclusive, and each leaves the phase non-idle).
    fn schedule(&mut self, out: &mut Vec<Effect>) {
        if self.phase != Phase::Idle || self.failure != Failure::None {
            return;
        }
        // Every event that can reach here checked `check_id_room` first.
        let started = match self.debt {
            Debt::Full if self.inflight_full == 0 => {
                self.supersede(out);
                self.phase = Phase::FullHeld;
                self.start(Kind::Full, out)
            }
            Debt::Bounded if self.inflight_chain == 0 => {
                self.supersede(out);
                self.phase = Phase::Repair;
                self.chain_epoch = self.epoch;
                self.start(Kind::Chain, out)
            }
            _ => return,
        };
        debug_assert!(started.is_ok(), "id room was checked before the event");
    }

    /// `Supersede`: authoritative work started, so the in-flight finite request is stale.
    fn supersede(&mut self, out: &mut Vec<Effect>) {
        if let Some(id) = self.inflight_finite {
            let r = self.live.get_mut(&id).expect("in-flight finite is live");
            if !r.sup {
                r.sup = true;
                out.push(Effect::Superseded { id });
            }
        }
    }

    /// `Normalize`: in a quiescent coverage state, every settled request older than `ce` is
    /// redundant. Only the retired requests are visited.
    fn normalize(&mut self, ph: Phase, db: Debt, ce: u64, out: &mut Vec<Effect>) {
        if ph == Phase::Idle && db == Debt::None {
            let live = &mut self.live;
            self.settled.release_below(ce, |id| {
                live.remove(&id);
                out.push(Effect::Release { id });
            });
        }
    }

    /// `New(kind)`: a request stamped with the current epoch.
    fn start(&mut self, kind: Kind, out: &mut Vec<Effect>) -> Result<u64, LedgerError> {
        let id = self.next_id;
        self.next_id = id.checked_add(1).ok_or(LedgerError::IdOverflow)?;
        let r = Request {
            kind,
            ep: self.epoch,
            st: St::Inflight,
            sup: false,
        };
        self.live.insert(id, r);
        self.inflight += 1;
        match kind {
            Kind::Finite => self.inflight_finite = Some(id),
            Kind::Chain => self.inflight_chain += 1,
            Kind::Full => self.inflight_full += 1,
        }
        out.push(Effect::Start {
            id,
            kind,
            epoch: self.epoch,
        });
        Ok(id)
    }

    /// Refuses an event that might start a request when no id is left, before it changes
    /// anything.
    fn check_id_room(&self) -> Result<(), LedgerError> {
        if self.next_id == u64::MAX {
            Err(LedgerError::IdOverflow)
        } else {
            Ok(())
        }
    }

    fn inflight_request(&self, id: u64) -> Result<Request, LedgerError> {
        match self.live.get(&id) {
            Some(r) if r.st == St::Inflight => Ok(*r),
            Some(_) => Err(LedgerError::AlreadyAnswered(id)),
            None if id == 0 || id >= self.next_id => Err(LedgerError::NotIssued(id)),
            None => Err(LedgerError::Retired(id)),
        }
    }

    fn leave_inflight(&mut self, id: u64, kind: Kind) {
        self.inflight -= 1;
        match kind {
            Kind::Finite => {
                debug_assert_eq!(self.inflight_finite, Some(id));
                self.inflight_finite = None;
            }
            Kind::Chain => self.inflight_chain -= 1,
            Kind::Full => self.inflight_full -= 1,
        }
    }

    fn mark_settled(&mut self, id: u64, r: Request) {
        self.live.insert(
            id,
            Request {
                st: St::Settled,
                ..r
            },
        );
        self.settled.insert(r.ep, id);
    }

    // ---- invariants ----

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
                return Err("ChainHeld");
            }
        }
        if quiet
            && self.inflight == 0
            && self.settled.min_ep().is_some_and(|e| e < self.cover_epoch)
        {
            return Err("NoLeak");
        }
        if self.failure == Failure::Superseded && self.phase == Phase::Idle && self.inflight == 0 {
            return Err("NoStrandedStaleFailure");
        }
        if self.config.recheck_full && quiet && self.cover_epoch != self.epoch {
            return Err("NoLostInvalidation");
        }
        Ok(())
    }

    /// Runs after every event that changed the state: counts it, and in debug builds
    /// asserts the invariants.
    #[inline]
    fn after_event(&mut self) {
        self.changes += 1;
        #[cfg(debug_assertions)]
        if let Err(inv) = self.check_invariants() {
            panic!("ledger invariant {inv} violated: {:?}", self.snapshot());
        }
    }
}

#[cfg(test)]
mod tests;
