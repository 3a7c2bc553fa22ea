//! The production request ledger: request authority and acquisition retirement.
//!
//! This is the TLA+ module's `unifiedMin` rule set, generalised as docs/DESIGN.md describes:
//! - request ids are `u64`, issued in increasing order and never reused; a released request
//!   is forgotten;
//! - there is no bound on requests or epochs, and an invalidation may arrive in any state;
//! - scheduling is eager: after every event the ledger takes `StartFull` or `StartRepair` when
//!   enabled, and `IssueFinite` when the caller says the window wants more
//!   ([`Ledger::issue_finite`]);
//! - with [`Config::recheck_full`] on (the default), a full read that an invalidation overtook
//!   leaves bounded debt, so no invalidation is lost (the model's `unifiedMinRecheck`);
//! - with [`Config::commit_overtaken`] on as well (the default), a repair an invalidation
//!   overtook commits at its own epoch and a new repair starts at once, so the view keeps
//!   committing under any rate of invalidations (the model's `unifiedMinChurn`); and under
//!   the same two settings a finite read's own failure with nothing else owed is a page
//!   failure, retried by reading that page again (the model's `unifiedMinPageRetry`), and
//!   the running repair's own failure with nothing else owed is a repair failure, which
//!   keeps the debt bounded and is retried by starting the repair again (the model's
//!   `unifiedMinRepairRetry`); the request either retry starts again is remembered
//!   (`resumed`) until it is answered, and its failure goes through the debt lattice, so a
//!   cursor gone for good is read again once, not for ever (the model's `unifiedMinEscalate`).
//!
//! It owns no pages, cursors, clocks or I/O. Events go in; [`Effect`]s come out into a buffer
//! the caller owns. Each event costs O(1) amortised plus O(k) for the k requests it retires:
//! `Normalize` is incremental, over settled requests bucketed by epoch stamp.
//!
//! This file holds the ledger's types and state; actions.rs its actions, one per action of the
//! module and in its order; invariants.rs the module's invariants on its state. The values it
//! shares with the model come from `crate::vocab`; it does not use the model.

mod actions;
mod invariants;
mod settled;

pub use crate::vocab::{Coverage, Debt, Failure, Invariant, Phase};

use rustc_hash::FxHashMap as HashMap;
use settled::SettledIndex;

/// A request's `kind`.
///
/// Not the model's `model::Kind`, which has a fourth value, `"none"`, carried only by the
/// module's unused request slots (`Unused`). The ledger keeps live requests alone (released
/// ones are forgotten), so a kind here is always one of these three, and every match over it
/// (here, in the loader, in the C ABI's `loader_kind`) is exhaustive without an arm for a
/// value that cannot occur. The three values are the module's and the model's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A finite read: one page of the window.
    Finite,
    /// A chain read: the repair of bounded debt.
    Chain,
    /// A full-source read.
    Full,
}

/// A live request's `st`. Released requests are forgotten, so they have no state here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum St {
    /// Issued, not yet answered.
    Inflight,
    /// Answered; its acquisitions are still held.
    Settled,
    /// Its work failed; `ExplicitRetry` releases it.
    Failed,
}

/// One live request: the module's `[kind, ep, st, sup]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    /// `kind`.
    pub kind: Kind,
    /// `ep`: the epoch the request was issued in.
    pub ep: u64,
    /// `st`.
    pub st: St,
    /// `sup`: authoritative work superseded it while it was in flight.
    pub sup: bool,
}

/// What the ledger asks of its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Start the work of a new request.
    Start {
        /// The new request.
        id: u64,
        /// What to read.
        kind: Kind,
        /// The epoch the request is stamped with.
        epoch: u64,
    },
    /// The request is retired: hand back everything it acquired. Sent once per request.
    Release {
        /// The retired request.
        id: u64,
    },
    /// Authoritative work superseded this in-flight finite request; its answer will be stale.
    Superseded {
        /// The superseded request.
        id: u64,
    },
}

/// How an accepted answer was classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// A finite read that is authoritative: it extends the coverage.
    FiniteCurrent,
    /// A finite read that is not: its data is not part of the view.
    FiniteStale,
    /// A chain whose epoch moved: it settled stale and `next` replaces it (P5).
    ChainReplaced {
        /// The replacement chain.
        next: u64,
    },
    /// A chain abandoned for the full-source read `full`.
    ChainAbandoned {
        /// The full-source read that replaces the chain.
        full: u64,
    },
    /// A chain that finished its repair: its data is the view.
    ChainCommitted,
    /// A chain an invalidation overtook, with `commit_overtaken` on: its data is the view,
    /// stamped with the chain's epoch, and `next` repairs the invalidations since.
    ChainOvertakenCommitted {
        /// The chain that repairs the invalidations that overtook this one.
        next: u64,
    },
    /// A full read that settled: its data is the view. With `recheck`, an invalidation overtook
    /// it and a repair follows.
    FullCommitted {
        /// An invalidation overtook the read: bounded debt remains.
        recheck: bool,
    },
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
    /// The id was never issued.
    #[error("request {0} was never issued")]
    NotIssued(u64),
    /// The request was already answered (settled or failed).
    #[error("request {0} was already answered")]
    AlreadyAnswered(u64),
    /// The request was answered and then released.
    #[error("request {0} was answered and has been retired")]
    Retired(u64),
    /// `epoch` would overflow.
    #[error("the epoch counter is exhausted")]
    EpochOverflow,
    /// No request id is left.
    #[error("the request id space is exhausted")]
    IdOverflow,
}

/// Ledger settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// A full read that settles with `ep < epoch` leaves bounded debt, so the invalidation that
    /// overtook it is repaired. Off restores the module's exact `unifiedMin`, which loses it.
    pub recheck_full: bool,
    /// A chain that settles with `chainEpoch # epoch` commits at its own epoch and a new
    /// chain starts at once, so an invalidation rate faster than a repair still lets the view
    /// commit. Off settles it stale and starts a replacement (the module's P5), under which
    /// the view can wait for the invalidations to stop. Taken with `recheck_full` on (the
    /// model's `unifiedMinChurn`); with `recheck_full` off it has no effect, so that off
    /// restores the module's exact `unifiedMin` whatever this says.
    pub commit_overtaken: bool,
}

impl Config {
    /// Whether the model's `unifiedMinChurn` rules are in force: `commit_overtaken` on top of
    /// `recheck_full`. With them the page retry is in force too (`unifiedMinPageRetry`): a
    /// finite read's own failure with nothing else owed is retried by reading that page again;
    /// and the repair retry (`unifiedMinRepairRetry`): the running repair's own failure with
    /// nothing else owed is retried by starting the repair again.
    pub fn churn_rules(&self) -> bool {
        self.recheck_full && self.commit_overtaken
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            recheck_full: true,
            commit_overtaken: true,
        }
    }
}

/// The module's abstract variables, plus counts of live requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Snapshot {
    /// `epoch`.
    pub epoch: u64,
    /// `debt`.
    pub debt: Debt,
    /// `phase`.
    pub phase: Phase,
    /// `chainEpoch`.
    pub chain_epoch: u64,
    /// `failure`.
    pub failure: Failure,
    /// `coverage`.
    pub coverage: Coverage,
    /// `settledOnce`.
    pub settled_once: bool,
    /// `coverEpoch`.
    pub cover_epoch: u64,
    /// Requests in flight.
    pub inflight: usize,
    /// Settled requests not yet released.
    pub settled: usize,
    /// Failed chain and full requests, awaiting `ExplicitRetry`.
    pub failed: usize,
    /// The id the next request will get.
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
    /// `resumed` (`spec/LoaderLedgerEscalate.tla`): the request a page or repair failure's
    /// retry started again, until it is answered (a chain: until the read it resumed at is,
    /// [`Ledger::resume_answered`]). Its failure goes through the debt lattice.
    resumed: Option<u64>,
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
            resumed: None,
        }
    }

    /// The settings the ledger was made with.
    pub fn config(&self) -> Config {
        self.config
    }

    /// `epoch`.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// `phase`.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// `debt`.
    pub fn debt(&self) -> Debt {
        self.debt
    }

    /// `failure`.
    pub fn failure(&self) -> Failure {
        self.failure
    }

    /// `coverEpoch`.
    pub fn cover_epoch(&self) -> u64 {
        self.cover_epoch
    }

    /// `resumed`: the request a page or repair failure's retry started again, while its
    /// resumed read is unanswered. Its failure is never a page or repair failure.
    pub fn resumed(&self) -> Option<u64> {
        self.resumed
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

    /// Whether a chain or full request is in flight, or failed and awaiting `ExplicitRetry`.
    pub fn repair_live(&self) -> bool {
        self.inflight_chain + self.inflight_full > 0 || !self.failed.is_empty()
    }

    /// The failed chain and full requests awaiting `ExplicitRetry`, oldest first.
    pub fn failed(&self) -> &[u64] {
        &self.failed
    }

    /// A repair failure is recorded (`spec/LoaderLedgerRepairRetry.tla`'s `RepairFailed`):
    /// the own failure over bounded debt, which only the running repair's failure with nothing
    /// else owed records. Its retry ([`Ledger::explicit_retry`]) starts the repair again.
    pub fn repair_failed(&self) -> bool {
        self.failure == Failure::Own && self.debt == Debt::Bounded
    }

    /// Idle, no debt, nothing in flight.
    pub fn is_quiescent(&self) -> bool {
        self.phase == Phase::Idle && self.debt == Debt::None && self.inflight == 0
    }

    /// The module's variables and the request counts, copied out.
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

    // ---- the module's operators, used by the actions ----

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

    /// `New(kind)`: a request stamped with the current epoch. (Not `new`: that name is the
    /// ledger's constructor.)
    fn new_request(&mut self, kind: Kind, out: &mut Vec<Effect>) -> Result<u64, LedgerError> {
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
        // `r` is the record `live` holds (`inflight_request` read it): only its state
        // changes, in place, without the insert's copy of the record and of the one it
        // replaces.
        match self.live.get_mut(&id) {
            Some(q) => q.st = St::Settled,
            None => {
                self.live.insert(
                    id,
                    Request {
                        st: St::Settled,
                        ..r
                    },
                );
            }
        }
        self.settled.insert(r.ep, id);
    }
}

#[cfg(test)]
mod tests;

/// The checker's canonical form (`check::canon`): every field, each id of its class. The
/// config is fixed for one exploration, and `changes` only tells callers that something
/// changed.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Ledger {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::Class;
        let Ledger {
            config: _,
            epoch,
            debt,
            phase,
            chain_epoch,
            failure,
            coverage,
            settled_once,
            cover_epoch,
            next_id,
            changes: _,
            live,
            settled,
            failed,
            inflight_finite,
            inflight_chain,
            inflight_full,
            inflight,
            resumed,
        } = self;
        e.id(Class::Epoch, *epoch);
        for v in [
            *debt as u64,
            *phase as u64,
            *failure as u64,
            *coverage as u64,
        ] {
            e.num(v);
        }
        e.id(Class::Epoch, *chain_epoch);
        settled_once.canon(e);
        e.id(Class::Epoch, *cover_epoch);
        e.id(Class::Request, *next_id);
        e.id_map(Class::Request, live.iter().map(|(k, v)| (*k, v)), |e, r| {
            let Request { kind, ep, st, sup } = r;
            kind.canon(e);
            e.id(Class::Epoch, *ep);
            e.num(*st as u64);
            sup.canon(e);
        });
        settled.canon(e);
        e.seq(failed, |e, r| e.id(Class::Request, *r));
        e.opt(inflight_finite, |e, r| e.id(Class::Request, *r));
        for n in [inflight_chain, inflight_full, inflight] {
            n.canon(e);
        }
        e.opt(resumed, |e, r| e.id(Class::Request, *r));
    }
}

#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Kind {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        e.num(*self as u64);
    }
}
