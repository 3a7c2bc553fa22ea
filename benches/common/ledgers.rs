//! Ledger-level workloads: the production `Ledger` and a literal port of the TLA+ text, behind
//! one trait, driven by the same deterministic host.
#![allow(dead_code)]

use super::arrivals::Arrivals;
use loader::ledger::{Coverage, Debt, Effect, Failed, Failure, Kind, Ledger, Phase, Settled};

/// What the ledger-level host needs of a ledger.
pub trait LedgerLike: Clone {
    fn invalidate(&mut self, out: &mut Vec<Effect>);
    fn want_more(&mut self, out: &mut Vec<Effect>) -> Option<u64>;
    fn settle(&mut self, id: u64, out: &mut Vec<Effect>) -> Settled;
    fn fail(&mut self, id: u64, out: &mut Vec<Effect>) -> Failed;
    fn epoch(&self) -> u64;
    fn phase(&self) -> Phase;
    fn debt(&self) -> Debt;
    /// Requests not yet released.
    fn live(&self) -> usize;
}

#[derive(Clone)]
pub struct Production(pub Ledger);

/// The production ledger with the rules the literal baseline transcribes (`unifiedMinRecheck`:
/// `commit_overtaken` off), so that both run the same workload and agree call by call.
impl Default for Production {
    fn default() -> Production {
        Production(Ledger::new(loader::ledger::Config {
            commit_overtaken: false,
            ..loader::ledger::Config::default()
        }))
    }
}

impl LedgerLike for Production {
    fn invalidate(&mut self, out: &mut Vec<Effect>) {
        self.0.invalidate(out).expect("invalidate");
    }
    fn want_more(&mut self, out: &mut Vec<Effect>) -> Option<u64> {
        self.0.issue_finite(out).expect("issue_finite")
    }
    fn settle(&mut self, id: u64, out: &mut Vec<Effect>) -> Settled {
        self.0.settle(id, out).expect("settle")
    }
    fn fail(&mut self, id: u64, out: &mut Vec<Effect>) -> Failed {
        self.0.fail(id, out).expect("fail")
    }
    fn epoch(&self) -> u64 {
        self.0.epoch()
    }
    fn phase(&self) -> Phase {
        self.0.phase()
    }
    fn debt(&self) -> Debt {
        self.0.debt()
    }
    fn live(&self) -> usize {
        let s = self.0.snapshot();
        s.inflight + s.settled + s.failed
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Inflight,
    Settled,
    Failed,
}

#[derive(Clone, Copy, Debug)]
struct Req {
    kind: Kind,
    ep: u64,
    st: St,
    sup: bool,
}

/// `src/model` ported to unbounded `u64` ids, operator by operator, with the production
/// ledger's eager scheduling and `recheck_full` on, so that both ledgers take the same
/// transitions and emit the same effects (checked in setup, see [`cross_check`]).
///
/// `req` is a `Vec` of the requests that are not released, in id order. Every operator that
/// the TLA+ text writes as a quantifier over `Ids` (`Inflight`, `Supersede`, `Normalize`)
/// scans all of it, as the text reads. Two choices keep the baseline honest rather than
/// absurd: `req[i]` (function application) is a binary search, not a scan; and a released
/// request is dropped from the `Vec` in the scan that releases it (a failed finite request,
/// which acquired nothing, at once), where the module would keep it as `"released"`
/// forever and every later scan would grow with the run's length. `Free` becomes "the next
/// id", since an unbounded id space has no finite set of free slots to choose from.
#[derive(Debug)]
pub struct Literal {
    recheck: bool,
    epoch: u64,
    debt: Debt,
    phase: Phase,
    chain_epoch: u64,
    failure: Failure,
    coverage: Coverage,
    settled_once: bool,
    cover_epoch: u64,
    next_id: u64,
    req: Vec<(u64, Req)>,
}

impl Clone for Literal {
    /// Keeps the spare capacity of `req`, as a ledger that got here by running would have:
    /// a derived clone would shrink it and bill the first push with a copy of the whole.
    fn clone(&self) -> Literal {
        let mut req = Vec::with_capacity(self.req.capacity());
        req.extend_from_slice(&self.req);
        Literal {
            req,
            recheck: self.recheck,
            epoch: self.epoch,
            debt: self.debt,
            phase: self.phase,
            chain_epoch: self.chain_epoch,
            failure: self.failure,
            coverage: self.coverage,
            settled_once: self.settled_once,
            cover_epoch: self.cover_epoch,
            next_id: self.next_id,
        }
    }
}

impl Default for Literal {
    fn default() -> Literal {
        Literal {
            recheck: true,
            epoch: 0,
            debt: Debt::None,
            phase: Phase::Idle,
            chain_epoch: 0,
            failure: Failure::None,
            coverage: Coverage::Nothing,
            settled_once: false,
            cover_epoch: 0,
            next_id: 1,
            req: Vec::new(),
        }
    }
}

impl Literal {
    fn at(&self, id: u64) -> usize {
        self.req
            .binary_search_by_key(&id, |&(i, _)| i)
            .expect("a live request")
    }

    /// `Inflight(k) # {}`.
    fn has_inflight(&self, kind: Kind) -> bool {
        self.req
            .iter()
            .any(|(_, r)| r.st == St::Inflight && r.kind == kind)
    }

    /// `Supersede(r)`: every in-flight finite request becomes superseded.
    fn supersede(&mut self, out: &mut Vec<Effect>) {
        for (id, r) in self.req.iter_mut() {
            if r.st == St::Inflight && r.kind == Kind::Finite && !r.sup {
                r.sup = true;
                out.push(Effect::Superseded { id: *id });
            }
        }
    }

    /// `Normalize(r, ph, db, ce)`.
    fn normalize(&mut self, ph: Phase, db: Debt, ce: u64, out: &mut Vec<Effect>) {
        if ph == Phase::Idle && db == Debt::None {
            self.req.retain(|&(id, r)| {
                let release = r.st == St::Settled && r.ep < ce;
                if release {
                    out.push(Effect::Release { id });
                }
                !release
            });
        }
    }

    /// `New(k)`, for `k` the next id.
    fn new_req(&mut self, kind: Kind, out: &mut Vec<Effect>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.req.push((
            id,
            Req {
                kind,
                ep: self.epoch,
                st: St::Inflight,
                sup: false,
            },
        ));
        out.push(Effect::Start {
            id,
            kind,
            epoch: self.epoch,
        });
        id
    }

    /// `StartFull` or `StartRepair`, whichever is enabled, taken eagerly.
    fn schedule(&mut self, out: &mut Vec<Effect>) {
        if self.phase != Phase::Idle || self.failure != Failure::None {
            return;
        }
        if self.debt == Debt::Full && !self.has_inflight(Kind::Full) {
            self.supersede(out);
            self.new_req(Kind::Full, out);
            self.phase = Phase::FullHeld;
        } else if self.debt == Debt::Bounded && !self.has_inflight(Kind::Chain) {
            self.supersede(out);
            self.new_req(Kind::Chain, out);
            self.phase = Phase::Repair;
            self.chain_epoch = self.epoch;
        }
    }
}

impl LedgerLike for Literal {
    /// `Invalidate`, then the scheduler.
    fn invalidate(&mut self, out: &mut Vec<Effect>) {
        self.epoch += 1;
        self.debt = if self.debt == Debt::None && self.settled_once && self.phase == Phase::Idle {
            Debt::Bounded
        } else if self.debt == Debt::None {
            Debt::Full
        } else {
            self.debt
        };
        self.schedule(out);
    }

    /// `IssueFinite`.
    fn want_more(&mut self, out: &mut Vec<Effect>) -> Option<u64> {
        if self.phase == Phase::Idle
            && self.debt == Debt::None
            && self.failure == Failure::None
            && !self.has_inflight(Kind::Finite)
        {
            Some(self.new_req(Kind::Finite, out))
        } else {
            None
        }
    }

    /// `SettleFinite`, `SettleChain` or `SettleFull`, then the scheduler.
    fn settle(&mut self, id: u64, out: &mut Vec<Effect>) -> Settled {
        let i = self.at(id);
        let r = self.req[i].1;
        assert_eq!(r.st, St::Inflight);
        self.req[i].1.st = St::Settled;
        let outcome = match r.kind {
            Kind::Finite => {
                let current = r.ep == self.epoch
                    && self.phase == Phase::Idle
                    && self.failure == Failure::None;
                if current {
                    self.cover_epoch = self.epoch;
                }
                self.normalize(self.phase, self.debt, self.cover_epoch, out);
                if current {
                    self.coverage = Coverage::Pages;
                    self.settled_once = true;
                    Settled::FiniteCurrent
                } else {
                    Settled::FiniteStale
                }
            }
            Kind::Chain if self.chain_epoch != self.epoch => {
                let next = self.new_req(Kind::Chain, out);
                self.chain_epoch = self.epoch;
                Settled::ChainReplaced { next }
            }
            Kind::Chain if self.failure != Failure::None || self.debt == Debt::Full => {
                let full = self.new_req(Kind::Full, out);
                self.phase = Phase::FullHeld;
                self.debt = Debt::Full;
                Settled::ChainAbandoned { full }
            }
            Kind::Chain => {
                self.normalize(Phase::Idle, Debt::None, self.epoch, out);
                self.phase = Phase::Idle;
                self.debt = Debt::None;
                self.coverage = Coverage::Chain;
                self.settled_once = true;
                self.cover_epoch = self.epoch;
                Settled::ChainCommitted
            }
            Kind::Full => {
                self.normalize(Phase::Idle, Debt::None, r.ep, out);
                let recheck = self.recheck && r.ep < self.epoch;
                self.phase = Phase::Idle;
                self.debt = if recheck { Debt::Bounded } else { Debt::None };
                self.coverage = Coverage::Full;
                self.failure = Failure::None;
                self.settled_once = true;
                self.cover_epoch = r.ep;
                Settled::FullCommitted { recheck }
            }
        };
        self.schedule(out);
        outcome
    }

    /// `Fail`, under the unified rules, then the scheduler.
    fn fail(&mut self, id: u64, out: &mut Vec<Effect>) -> Failed {
        let i = self.at(id);
        let r = self.req[i].1;
        assert_eq!(r.st, St::Inflight);
        let upgrade_only = r.kind == Kind::Finite && r.sup;
        let outcome = if upgrade_only {
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
            self.req.remove(i);
        } else {
            self.req[i].1.st = St::Failed;
        }
        self.schedule(out);
        outcome
    }

    fn epoch(&self) -> u64 {
        self.epoch
    }
    fn phase(&self) -> Phase {
        self.phase
    }
    fn debt(&self) -> Debt {
        self.debt
    }
    fn live(&self) -> usize {
        self.req.len()
    }
}

/// Ledger-level event categories: the loader-level ones of `stream.rs`.
pub const NAMES: [&str; 5] = ["current", "stale", "sup-fail", "invalidate", "window"];
const TARGET: [i64; 5] = [70, 15, 5, 5, 5];

#[derive(Clone, Copy, Debug)]
struct Flight {
    id: u64,
    kind: Kind,
    ep: u64,
    sup: bool,
}

/// Workload 1 at the ledger level: what the loader's `pump` does with the ledger, with every
/// read a single settle. After every event the host asks for more, as the loader does while
/// its window wants more, so a finite read is in flight whenever the ledger allows one and
/// every current finite settle adds a live page request until the next repair retires them.
pub struct LStream<L: LedgerLike> {
    pub ledger: L,
    out: Vec<Effect>,
    flights: Vec<Flight>,
    arrivals: Arrivals,
    pub counts: [u64; 5],
    pub events: u64,
    pub releases: u64,
    /// Every call's effects, for the cross-check; off while measuring.
    pub record: Option<Vec<Vec<Effect>>>,
}

impl<L: LedgerLike> Clone for LStream<L> {
    /// Keeps the host's buffers at their working capacity (see `Literal::clone`).
    fn clone(&self) -> LStream<L> {
        let mut out = Vec::with_capacity(self.out.capacity());
        out.extend_from_slice(&self.out);
        let mut flights = Vec::with_capacity(self.flights.capacity());
        flights.extend_from_slice(&self.flights);
        LStream {
            ledger: self.ledger.clone(),
            out,
            flights,
            arrivals: self.arrivals.clone(),
            counts: self.counts,
            events: self.events,
            releases: self.releases,
            record: self.record.clone(),
        }
    }
}

impl<L: LedgerLike> LStream<L> {
    pub fn new(ledger: L) -> LStream<L> {
        LStream::with_seed(ledger, 0x1ed9e5)
    }

    /// A stream whose invalidations and window moves arrive in another (seeded) order.
    pub fn with_seed(ledger: L, seed: u64) -> LStream<L> {
        let mut s = LStream {
            ledger,
            out: Vec::with_capacity(1 << 16),
            flights: Vec::with_capacity(8),
            arrivals: Arrivals::new(seed),
            counts: [0; 5],
            events: 0,
            releases: 0,
            record: None,
        };
        s.ledger.want_more(&mut s.out);
        s.collect();
        s
    }

    pub fn reset_counts(&mut self) {
        self.counts = [0; 5];
        self.events = 0;
    }

    /// Settles `n` current finite requests, so that `n` page requests are live: the view of
    /// `n` pages built "with many finite settles". Not counted as events.
    pub fn build_view(&mut self, n: usize) {
        for _ in 0..n {
            let f = self.take(Kind::Finite);
            let r = self.ledger.settle(f.id, &mut self.out);
            assert_eq!(r, Settled::FiniteCurrent);
            self.ledger.want_more(&mut self.out);
            self.collect();
        }
    }

    fn take(&mut self, kind: Kind) -> Flight {
        let i = self
            .flights
            .iter()
            .position(|f| f.kind == kind)
            .expect("such a request is in flight");
        self.flights.swap_remove(i)
    }

    fn due(&self, c: usize) -> i64 {
        TARGET[c] * (self.events as i64 + 1) - 100 * self.counts[c] as i64
    }

    /// The next event's category and, for an answer, the request it answers.
    fn choose(&self, arrivals: &mut Arrivals) -> (usize, Option<usize>) {
        let epoch = self.ledger.epoch();
        let (mut current, mut stale, mut sup) = (None, None, None);
        for (i, f) in self.flights.iter().enumerate() {
            if (f.kind == Kind::Finite && f.sup) || (f.kind == Kind::Chain && f.ep < epoch) {
                stale = Some(i);
                if f.kind == Kind::Finite {
                    sup = Some(i);
                }
            } else {
                current = Some(i);
            }
        }
        if current.is_none() && stale.is_none() {
            arrivals.wait();
        }
        if arrivals.invalidations > 0 {
            return (3, None);
        }
        if arrivals.moves > 0 {
            return (4, None);
        }
        let mut best: Option<(usize, i64, usize)> = None;
        for (c, at) in [(0, current), (1, stale), (2, sup)] {
            if let Some(i) = at {
                let d = self.due(c) * 100 / TARGET[c];
                if best.is_none_or(|(_, bd, _)| d > bd) {
                    best = Some((c, d, i));
                }
            }
        }
        let (c, _, i) = best.expect("something to answer, or an arrival");
        (c, Some(i))
    }

    /// Whether the next event commits a chain or full read, retiring every older request.
    /// Segments measured "while N requests are live" stop before it.
    pub fn next_commits(&self) -> bool {
        // The same draw `step` will make, on a copy of the arrival state.
        let mut arrivals = self.arrivals.clone();
        arrivals.tick();
        let (cat, i) = self.choose(&mut arrivals);
        if cat != 0 {
            return false;
        }
        let f = self.flights[i.expect("an answer")];
        match f.kind {
            Kind::Finite => false,
            Kind::Chain => f.ep == self.ledger.epoch() && self.ledger.debt() != Debt::Full,
            Kind::Full => true,
        }
    }

    pub fn step(&mut self) {
        self.arrivals.tick();
        let mut arrivals = std::mem::replace(&mut self.arrivals, Arrivals::new(0));
        let (cat, i) = self.choose(&mut arrivals);
        self.arrivals = arrivals;
        let counted = match cat {
            3 => {
                self.arrivals.invalidations -= 1;
                self.ledger.invalidate(&mut self.out);
                3
            }
            4 => {
                self.arrivals.moves -= 1;
                self.ledger.want_more(&mut self.out);
                4
            }
            2 => {
                let f = self.flights.swap_remove(i.expect("eligible"));
                self.ledger.fail(f.id, &mut self.out);
                2
            }
            _ => {
                let f = self.flights.swap_remove(i.expect("eligible"));
                match self.ledger.settle(f.id, &mut self.out) {
                    Settled::FiniteCurrent
                    | Settled::ChainCommitted
                    | Settled::FullCommitted { .. } => 0,
                    _ => 1,
                }
            }
        };
        // The loader's pump: refill while the window wants more.
        self.ledger.want_more(&mut self.out);
        self.counts[counted] += 1;
        self.events += 1;
        self.collect();
    }

    pub fn run(&mut self, n: u64) {
        for _ in 0..n {
            self.step();
        }
    }

    /// Runs until the next event would commit; returns the events run.
    pub fn run_until_commit(&mut self) -> u64 {
        let start = self.events;
        while !self.next_commits() {
            self.step();
        }
        self.events - start
    }

    /// The commit `run_until_commit` stopped before: one event that retires every request
    /// older than the repair.
    pub fn commit(&mut self) -> usize {
        let before = self.releases;
        self.step();
        (self.releases - before) as usize
    }

    /// Workload 2's repair at the ledger level. On a view of N pages the chain takes N reads
    /// the ledger never sees, while invalidations queue (`stream.rs`); what the ledger sees
    /// is the burst at the chain's first step: the invalidation that starts the repair
    /// (superseding the in-flight finite read), `k` more that each overtake the newest chain,
    /// whose answer settles it stale, `k` window moves, and the superseded read's failure.
    /// The commit that ends the repair is left to [`LStream::commit`]. Returns the events.
    pub fn repair_burst(&mut self, k: usize) -> u64 {
        self.ledger.invalidate(&mut self.out);
        self.ledger.want_more(&mut self.out);
        self.collect();
        for _ in 0..k {
            self.ledger.invalidate(&mut self.out);
            self.ledger.want_more(&mut self.out);
            self.collect();
            let c = self.take(Kind::Chain);
            let r = self.ledger.settle(c.id, &mut self.out);
            debug_assert!(matches!(r, Settled::ChainReplaced { .. }));
            self.ledger.want_more(&mut self.out);
            self.collect();
            self.ledger.want_more(&mut self.out);
            self.collect();
        }
        let mut events = 1 + 3 * k as u64;
        if let Some(i) = self.flights.iter().position(|f| f.sup) {
            let f = self.flights.swap_remove(i);
            self.ledger.fail(f.id, &mut self.out);
            self.ledger.want_more(&mut self.out);
            self.collect();
            events += 1;
        }
        events
    }

    fn collect(&mut self) {
        if let Some(rec) = self.record.as_mut() {
            let mut call = self.out.clone();
            // Both ledgers release the same set; only the order within a call may differ.
            call.sort_by_key(|e| match *e {
                Effect::Start { id, .. } => (0, id),
                Effect::Superseded { id } => (1, id),
                Effect::Release { id } => (2, id),
            });
            rec.push(call);
        }
        for e in self.out.drain(..) {
            match e {
                Effect::Start { id, kind, epoch } => self.flights.push(Flight {
                    id,
                    kind,
                    ep: epoch,
                    sup: false,
                }),
                Effect::Release { .. } => self.releases += 1,
                Effect::Superseded { id } => {
                    if let Some(f) = self.flights.iter_mut().find(|f| f.id == id) {
                        f.sup = true;
                    }
                }
            }
        }
    }

    pub fn mix_line(&self) -> String {
        let n = self.events.max(1) as f64;
        NAMES
            .iter()
            .zip(self.counts)
            .map(|(name, c)| format!("{name} {:.1}%", 100.0 * c as f64 / n))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A stream with a view of `view` live page requests.
pub fn prepared<L: LedgerLike>(ledger: L, view: usize, seed: u64) -> LStream<L> {
    let mut s = LStream::with_seed(ledger, seed);
    s.build_view(view);
    s
}

/// Drives both ledgers through the same setup and events, and panics unless every call
/// produced the same effects: the literal port takes the production ledger's transitions.
pub fn cross_check(view: usize, bursts: usize, events: u64) {
    fn drive<L: LedgerLike>(ledger: L, view: usize, bursts: usize, events: u64) -> LStream<L> {
        let mut s = prepared(ledger, view, 1);
        s.record = Some(Vec::new());
        for _ in 0..bursts {
            s.repair_burst(100);
            s.run_until_commit();
            s.commit();
        }
        s.run(events);
        s
    }
    let mut p = drive(Production::default(), view, bursts, events);
    let mut l = drive(Literal::default(), view, bursts, events);
    let (a, b) = (p.record.take().unwrap(), l.record.take().unwrap());
    assert_eq!(a.len(), b.len());
    for (n, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "call {n}: production and literal ledgers differ");
    }
    assert_eq!(p.counts, l.counts);
    assert_eq!(p.ledger.live(), l.ledger.live());
}
