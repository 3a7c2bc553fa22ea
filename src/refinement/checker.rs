//! The exhaustive walk: every host-event sequence within the bounds, each event checked
//! against the model's transitions, with the invariants, progress and refusals checked in
//! every state reached.

use super::{
    acted_on, book, check_progress, map_state, slot_of, RefineBounds, RefineReport, Slot, SlotFate,
};
use crate::ledger::{self, Effect, Ledger};
use crate::model::{Invariant, Model, Packer, State, UNUSED};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

/// A host event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Invalidate,
    WantMore,
    Retry,
    /// A retry by a window move: a page failure is retried with a full read.
    RetryMoved,
    Settle(u64),
    Fail(u64),
    /// A failure that reading again would repeat (a stalled cursor): never a page failure.
    FailStalled(u64),
    /// The read the resumed chain resumed at was answered.
    ResumeAnswered(u64),
}

#[derive(Clone, Debug)]
struct Harness {
    ledger: Ledger,
    /// The model's slots, in issue order.
    slots: Vec<Slot>,
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

        let mut events = vec![Event::WantMore, Event::Retry, Event::RetryMoved];
        if h.ledger.epoch() < self.bounds.max_epoch as u64 {
            events.push(Event::Invalidate);
        }
        for slot in &h.slots {
            if h.ledger.request(slot.id).map(|r| r.st) == Some(ledger::St::Inflight) {
                events.push(Event::Settle(slot.id));
                events.push(Event::Fail(slot.id));
                events.push(Event::FailStalled(slot.id));
                if h.ledger.resumed() == Some(slot.id) {
                    events.push(Event::ResumeAnswered(slot.id));
                }
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
            Event::WantMore | Event::Retry | Event::RetryMoved => {
                let (label, started) = match ev {
                    Event::WantMore => ("IssueFinite", next.ledger.issue_finite(&mut out)),
                    Event::Retry => ("ExplicitRetry", next.ledger.explicit_retry(&mut out)),
                    _ => ("ExplicitRetry", next.ledger.explicit_retry_moved(&mut out)),
                };
                if started.map_err(|e| e.to_string())?.is_none() {
                    return self.stutter(h, &next, &out, label).map(|_| None);
                }
                if matches!(ev, Event::Retry | Event::RetryMoved) {
                    for s in next.slots.iter_mut() {
                        if s.fate == SlotFate::FailedForgotten {
                            s.fate = SlotFate::Released;
                        }
                    }
                }
                (label, None)
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
            Event::ResumeAnswered(id) => {
                if !next.ledger.resume_answered(id) {
                    return self.stutter(h, &next, &out, "ResumeAnswered").map(|_| None);
                }
                ("ResumeAnswered", h.slot_of(id))
            }
            Event::Fail(id) | Event::FailStalled(id) => {
                let kind = h.ledger.request(id).expect("fail of a live request").kind;
                if matches!(ev, Event::Fail(_)) {
                    next.ledger.fail(id, &mut out)
                } else {
                    next.ledger.fail_stalled(id, &mut out)
                }
                .map_err(|e| e.to_string())?;
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
        // Each path: the host's action's state, then the start's, if any.
        let mut paths: Vec<(State, Option<State>)> = Vec::new();
        for t in reach.drain(..) {
            paths.push((t, None));
            for name in ["StartFull", "StartRepair"] {
                for (_, u) in self.model.successors_by(&t, name) {
                    paths.push((t, Some(u)));
                }
            }
        }
        let ends_at_after = |(t, u): &(State, Option<State>)| u.unwrap_or(*t) == after;
        if !paths.iter().any(ends_at_after) {
            return Err(format!(
                "no model path {label} [+ start] leads from\n  {}\nto\n  {}",
                self.model.show(&before).join(", "),
                self.model.show(&after).join(", ")
            ));
        }
        // The step invariants, on the steps of a path the ledger took.
        let keeps = |inv: Invariant, (t, u): &(State, Option<State>)| {
            inv.holds_step(&self.model, &before, t)
                && u.is_none_or(|u| inv.holds_step(&self.model, t, &u))
        };
        for inv in Invariant::STEP {
            if !paths
                .iter()
                .filter(|p| ends_at_after(p))
                .any(|p| keeps(inv, p))
            {
                return Err(format!("{inv} violated by the step to {after:?}"));
            }
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
        for inv in Invariant::STATE {
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
        check_progress(&h.ledger, 64, self.bounds.recheck_full).map_err(|e| self.fail(e))?;
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
