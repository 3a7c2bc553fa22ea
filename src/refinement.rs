//! Refinement: the production [`Ledger`] takes only steps the model allows.
//!
//! [`check`] drives a ledger through every sequence of host events within the bounds. After
//! each event it maps the ledger's state to a model state (request ids to the model's slots in
//! issue order; released and forgotten requests keep their slot) and checks that
//! - the host event, followed by the eager scheduler's start, is a path of model transitions,
//!   and the scheduler left no `StartFull` or `StartRepair` enabled;
//! - every invariant holds, in the model's terms and in the ledger's own;
//! - answering every in-flight request with success (and retrying an own failure) reaches
//!   quiescence, at the current epoch when the fix is on: no state is stuck;
//! - every refused event (a second answer, an unknown id) changed nothing.
//!
//! The model runs without its `coverage # "full"` guards, since the ledger accepts an
//! invalidation in any state.

use crate::ledger::{self, Config, Effect, Ledger};
use crate::model::{self, Action, Bounds, Invariant, Model, Packer, Req, Rules, State, UNUSED};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

/// The bounds of a refinement run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefineBounds {
    /// The model's `MaxEpoch`: invalidations along one path.
    pub max_epoch: u8,
    /// How many requests may be issued along one path (the model's `Ids`).
    pub ids: usize,
    /// The ledger's `recheck_full`: on is checked against `unifiedMinRecheck` (or
    /// `unifiedMinChurn`), off against the module's exact `unifiedMin`.
    pub recheck_full: bool,
    /// The ledger's `commit_overtaken`: with `recheck_full` on, on is checked against
    /// `unifiedMinChurn` and off against `unifiedMinRecheck`; with it off it has no effect.
    pub commit_overtaken: bool,
}

impl RefineBounds {
    /// The model's rule variant these bounds are checked against.
    pub fn rules(&self) -> Rules {
        match (self.recheck_full, self.commit_overtaken) {
            (true, true) => Rules::UnifiedMinChurn,
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

/// A host event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Invalidate,
    WantMore,
    Retry,
    Settle(u64),
    Fail(u64),
}

/// What became of the request in a model slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlotFate {
    /// The ledger still knows the request.
    Live,
    /// The ledger sent `Release` for it.
    Released,
    /// A failed finite request the ledger forgot; the model keeps it `failed` until an
    /// `ExplicitRetry` releases it.
    FailedForgotten,
}

#[derive(Clone, Debug)]
struct Harness {
    ledger: Ledger,
    /// The model's slots, in issue order.
    slots: Vec<Slot>,
}

/// A model request slot: the ledger request it stands for, booked from the ledger's effects.
/// The slots of a path are in issue order; released and forgotten requests keep theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    /// The ledger request's id.
    pub id: u64,
    /// Its kind, as the ledger started it.
    pub kind: ledger::Kind,
    /// The epoch it was stamped with (the spec's `ep`).
    pub ep: u64,
    /// What became of it, as far as the ledger's effects tell.
    pub fate: SlotFate,
    /// Set when the ledger reported the request superseded.
    pub sup: bool,
}

/// The slot of request `id`.
pub fn slot_of(slots: &[Slot], id: u64) -> Option<usize> {
    slots.iter().position(|s| s.id == id)
}

/// Books the ledger's effects of one event against the slots: a `Start` opens a slot (in
/// increasing id order), a `Release` closes a live one whose request the ledger forgot, a
/// `Superseded` marks a request the ledger now calls superseded. Anything else is an error.
pub fn book(slots: &mut Vec<Slot>, ledger: &Ledger, out: &[Effect]) -> Result<(), String> {
    for e in out {
        match *e {
            Effect::Start { id, kind, epoch } => {
                if slot_of(slots, id).is_some() {
                    return Err(format!("request {id} started twice"));
                }
                if slots.last().is_some_and(|s| s.id >= id) {
                    return Err(format!("request {id} started out of order"));
                }
                slots.push(Slot {
                    id,
                    kind,
                    ep: epoch,
                    fate: SlotFate::Live,
                    sup: false,
                });
            }
            Effect::Release { id } => match slot_of(slots, id) {
                Some(i) if slots[i].fate == SlotFate::Live => {
                    if ledger.request(id).is_some() {
                        return Err(format!("request {id} released but still live"));
                    }
                    slots[i].fate = SlotFate::Released;
                }
                Some(_) => return Err(format!("request {id} released twice")),
                None => return Err(format!("request {id} released but never started")),
            },
            Effect::Superseded { id } => {
                let now_sup = ledger.request(id).is_some_and(|r| r.sup);
                match slot_of(slots, id) {
                    Some(i) if !slots[i].sup && now_sup => slots[i].sup = true,
                    _ => return Err(format!("Superseded({id}) sent wrongly")),
                }
            }
        }
    }
    Ok(())
}

/// The model state a ledger state stands for, given its slots.
pub fn map_state(m: &Model, ledger: &Ledger, slots: &[Slot]) -> State {
    let snap = ledger.snapshot();
    let mut s = m.init();
    s.epoch = snap.epoch as u8;
    s.debt = snap.debt;
    s.phase = snap.phase;
    s.chain_epoch = snap.chain_epoch as u8;
    s.failure = snap.failure;
    s.coverage = snap.coverage;
    s.settled_once = snap.settled_once;
    s.cover_epoch = snap.cover_epoch as u8;
    for (i, slot) in slots.iter().enumerate() {
        let kind = match slot.kind {
            ledger::Kind::Finite => model::Kind::Finite,
            ledger::Kind::Chain => model::Kind::Chain,
            ledger::Kind::Full => model::Kind::Full,
        };
        s.req[i] = match slot.fate {
            SlotFate::Live => {
                let r = ledger.request(slot.id).unwrap_or_else(|| {
                    panic!("request {} is live but the ledger forgot it", slot.id)
                });
                Req {
                    kind,
                    ep: r.ep as u8,
                    st: match r.st {
                        ledger::St::Inflight => model::St::Inflight,
                        ledger::St::Settled => model::St::Settled,
                        ledger::St::Failed => model::St::Failed,
                    },
                    sup: r.sup,
                }
            }
            SlotFate::Released | SlotFate::FailedForgotten => Req {
                kind,
                ep: slot.ep as u8,
                st: if slot.fate == SlotFate::Released {
                    model::St::Released
                } else {
                    model::St::Failed
                },
                sup: slot.sup,
            },
        };
    }
    s
}

/// The request slot an answer action acts on.
pub fn acted_on(a: Action) -> Option<u8> {
    match a {
        Action::SettleFinite { i }
        | Action::SettleChain { i, .. }
        | Action::SettleFull { i }
        | Action::Fail { i, .. } => Some(i),
        _ => None,
    }
}

impl Harness {
    fn slot_of(&self, id: u64) -> Option<usize> {
        slot_of(&self.slots, id)
    }

    /// The model state this ledger state stands for.
    fn map(&self, m: &Model) -> State {
        map_state(m, &self.ledger, &self.slots)
    }

    fn fingerprint(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.ledger.snapshot().hash(&mut h);
        self.ledger.requests().hash(&mut h);
        self.slots.len().hash(&mut h);
        self.slots.hash(&mut h);
        h.finish()
    }
}

struct Checker {
    bounds: RefineBounds,
    model: Model,
    packer: Packer,
    seen: HashSet<(u64, u64)>,
    model_seen: HashSet<u64>,
    report: RefineReport,
    path: Vec<Event>,
}

/// Drives the ledger through every host-event sequence within `bounds`.
pub fn check(bounds: RefineBounds) -> Result<RefineReport, String> {
    let model = Model::new(bounds.model_bounds());
    let packer = Packer::new(&model.bounds)?;
    let mut c = Checker {
        bounds,
        model,
        packer,
        seen: HashSet::new(),
        model_seen: HashSet::new(),
        report: RefineReport::default(),
        path: Vec::new(),
    };
    let h = Harness {
        ledger: Ledger::new(bounds.config()),
        slots: Vec::new(),
    };
    if h.map(&c.model) != c.model.init() {
        return Err("the new ledger does not map to Init".into());
    }
    c.visit(h)?;
    Ok(c.report)
}

impl Checker {
    fn fail(&self, what: String) -> String {
        format!(
            "refinement failed ({} rules, max-epoch {}, ids {}) after events {:?}: {}",
            self.bounds.rules(),
            self.bounds.max_epoch,
            self.bounds.ids,
            self.path,
            what
        )
    }

    fn visit(&mut self, h: Harness) -> Result<(), String> {
        let mapped = h.map(&self.model);
        let key = (self.packer.pack(&mapped), h.fingerprint());
        if !self.seen.insert(key) {
            return Ok(());
        }
        self.report.states += 1;
        self.model_seen.insert(key.0);
        self.report.model_states = self.model_seen.len() as u64;
        self.check_state(&h, &mapped)?;
        self.check_refusals(&h)?;

        let mut events = vec![Event::WantMore, Event::Retry];
        if h.ledger.epoch() < self.bounds.max_epoch as u64 {
            events.push(Event::Invalidate);
        }
        for slot in &h.slots {
            if h.ledger.request(slot.id).map(|r| r.st) == Some(ledger::St::Inflight) {
                events.push(Event::Settle(slot.id));
                events.push(Event::Fail(slot.id));
            }
        }
        for ev in events {
            self.path.push(ev);
            let r = self.step(&h, ev);
            let next = match r {
                Ok(next) => next,
                Err(e) => return Err(self.fail(e)),
            };
            if let Some(next) = next {
                self.visit(next)?;
            }
            self.path.pop();
        }
        Ok(())
    }

    /// Applies one event and checks the step; `None` when the successor is not followed.
    fn step(&mut self, h: &Harness, ev: Event) -> Result<Option<Harness>, String> {
        let mut next = h.clone();
        let mut out = Vec::new();
        let before = h.map(&self.model);
        let (label, slot) = match ev {
            Event::Invalidate => {
                next.ledger
                    .invalidate(&mut out)
                    .map_err(|e| e.to_string())?;
                ("Invalidate", None)
            }
            Event::WantMore => {
                let started = next
                    .ledger
                    .issue_finite(&mut out)
                    .map_err(|e| e.to_string())?;
                if started.is_none() {
                    return self.stutter(h, &next, &out, "IssueFinite").map(|_| None);
                }
                ("IssueFinite", None)
            }
            Event::Retry => {
                let started = next
                    .ledger
                    .explicit_retry(&mut out)
                    .map_err(|e| e.to_string())?;
                if started.is_none() {
                    return self.stutter(h, &next, &out, "ExplicitRetry").map(|_| None);
                }
                for s in next.slots.iter_mut() {
                    if s.fate == SlotFate::FailedForgotten {
                        s.fate = SlotFate::Released;
                    }
                }
                ("ExplicitRetry", None)
            }
            Event::Settle(id) => {
                let kind = h.ledger.request(id).expect("settle of a live request").kind;
                next.ledger
                    .settle(id, &mut out)
                    .map_err(|e| e.to_string())?;
                let label = match kind {
                    ledger::Kind::Finite => "SettleFinite",
                    ledger::Kind::Chain => "SettleChain",
                    ledger::Kind::Full => "SettleFull",
                };
                (label, h.slot_of(id))
            }
            Event::Fail(id) => {
                let kind = h.ledger.request(id).expect("fail of a live request").kind;
                next.ledger.fail(id, &mut out).map_err(|e| e.to_string())?;
                if kind == ledger::Kind::Finite {
                    let s = h.slot_of(id).expect("slot");
                    next.slots[s].fate = SlotFate::FailedForgotten;
                }
                ("Fail", h.slot_of(id))
            }
        };
        self.report.events += 1;
        book(&mut next.slots, &next.ledger, &out)?;
        if next.slots.len() > self.bounds.ids {
            self.report.pruned += 1;
            return Ok(None);
        }
        let after = next.map(&self.model);
        // The host's action, by the request it names, then possibly the scheduler's start.
        let mut reach: Vec<State> = self
            .model
            .successors_by(&before, label)
            .into_iter()
            .filter(|(a, _)| slot.is_none_or(|s| acted_on(*a) == Some(s as u8)))
            .map(|(_, t)| t)
            .collect();
        if reach.is_empty() {
            return Err(format!("{label} is not enabled in the model at {before:?}"));
        }
        let first = reach.clone();
        for t in &first {
            for name in ["StartFull", "StartRepair"] {
                reach.extend(
                    self.model
                        .successors_by(t, name)
                        .into_iter()
                        .map(|(_, u)| u),
                );
            }
        }
        if !reach.contains(&after) {
            return Err(format!(
                "no model path {label} [+ start] leads from\n  {}\nto\n  {}",
                self.model.show(&before).join(", "),
                self.model.show(&after).join(", ")
            ));
        }
        for name in ["StartFull", "StartRepair"] {
            if !self.model.successors_by(&after, name).is_empty() {
                return Err(format!("the scheduler left {name} enabled"));
            }
        }
        Ok(Some(next))
    }

    /// An event that did nothing: the model's action must be disabled there too.
    fn stutter(
        &self,
        h: &Harness,
        next: &Harness,
        out: &[Effect],
        name: &str,
    ) -> Result<(), String> {
        let before = h.map(&self.model);
        if !out.is_empty() || next.map(&self.model) != before {
            return Err(format!("a declined {name} changed the state"));
        }
        if !self.model.successors_by(&before, name).is_empty() {
            return Err(format!(
                "{name} is enabled in the model but the ledger declined it"
            ));
        }
        Ok(())
    }

    fn check_state(&self, h: &Harness, s: &State) -> Result<(), String> {
        for inv in Invariant::ALL {
            if inv == Invariant::NoLostInvalidation && !self.bounds.recheck_full {
                continue;
            }
            if !inv.holds(&self.model, s) {
                return Err(self.fail(format!(
                    "{inv} violated at {}",
                    self.model.show(s).join(", ")
                )));
            }
        }
        for slot in &h.slots {
            if let Some(r) = h.ledger.request(slot.id) {
                if r.sup != slot.sup {
                    return Err(self.fail(format!("request {} superseded without notice", slot.id)));
                }
            }
        }
        h.ledger
            .check_invariants()
            .map_err(|inv| self.fail(format!("ledger's own {inv} violated")))?;
        for slot in h.slots.len()..self.bounds.ids {
            if s.req[slot] != UNUSED {
                return Err(self.fail("a slot beyond the issued requests is in use".into()));
            }
        }
        // Progress: answer everything with success; retry own failures.
        let mut l = h.ledger.clone();
        let mut out = Vec::new();
        for _ in 0..64 {
            if l.retry_enabled() {
                l.explicit_retry(&mut out)
                    .map_err(|e| self.fail(e.to_string()))?;
                continue;
            }
            match l
                .requests()
                .into_iter()
                .find(|(_, r)| r.st == ledger::St::Inflight)
            {
                Some((id, _)) => {
                    l.settle(id, &mut out)
                        .map_err(|e| self.fail(e.to_string()))?;
                }
                None => break,
            }
        }
        if !l.is_quiescent() {
            return Err(self.fail(format!(
                "stuck: answering everything leaves {:?}",
                l.snapshot()
            )));
        }
        if self.bounds.recheck_full && l.cover_epoch() != l.epoch() {
            return Err(self.fail("quiescent with coverEpoch < epoch".into()));
        }
        Ok(())
    }

    /// Every answer the ledger must refuse: it returns an error and changes nothing.
    fn check_refusals(&mut self, h: &Harness) -> Result<(), String> {
        let snap = h.ledger.snapshot();
        let mut bad: Vec<u64> = vec![0, snap.next_id, snap.next_id + 7];
        for slot in &h.slots {
            if h.ledger.request(slot.id).map(|r| r.st) != Some(ledger::St::Inflight) {
                bad.push(slot.id);
            }
        }
        for id in bad {
            for settle in [true, false] {
                let mut l = h.ledger.clone();
                let mut out = Vec::new();
                let refused = if settle {
                    l.settle(id, &mut out).is_err()
                } else {
                    l.fail(id, &mut out).is_err()
                };
                if !refused
                    || !out.is_empty()
                    || l.snapshot() != snap
                    || l.requests() != h.ledger.requests()
                {
                    return Err(self.fail(format!(
                        "{} of request {id} was not refused cleanly",
                        if settle { "settle" } else { "fail" }
                    )));
                }
                self.report.refused += 1;
            }
        }
        Ok(())
    }
}
