//! `fuzz_differential`: the production [`Ledger`] and the executable [`Model`] in lockstep.
//!
//! The input is a sequence of host events (invalidate, want_more, retry, settle or fail of an
//! in-flight request, answers the ledger must refuse). Each event is applied to the ledger, and
//! the model takes the same action on its own state, followed by the eager scheduler's
//! `StartFull` or `StartRepair` when the model enables one. After every event the ledger's
//! state, mapped as `loader::refinement` maps it (request ids to slots in issue order; a
//! failed finite request, which the ledger forgets, stays `failed` in the model until an
//! `ExplicitRetry`), must equal the model's state, and every invariant must hold in both.
//!
//! Unlike the exhaustive refinement check, the model's state here is carried forward by the
//! model alone, never re-derived from the ledger, and the bounds are wider: epochs up to
//! [`MAX_EPOCH`], [`IDS`] requests per run, at most [`MAX_ALIVE`] of them alive at once. An
//! event that would exceed `MAX_ALIVE` is skipped; the run stops when the ledger would issue
//! more than `IDS` requests. Each input is run twice: with `recheck_full` on against
//! `unifiedMinRecheck`, and off against the module's exact `unifiedMin`.

use crate::input::Input;
use loader::ledger::{self, Config, Effect, Ledger, LedgerError};
use loader::model::{Action, Bounds, Invariant, Model, Rules, State};
use loader::refinement::{self, acted_on, Slot, SlotFate as Fate};

/// The model's `MaxEpoch`: invalidations stop there.
pub const MAX_EPOCH: u8 = 15;
/// Requests one run may issue (the model's `Ids`).
pub const IDS: usize = 8;
/// Requests alive at once (in flight, settled, or failed and not yet released).
pub const MAX_ALIVE: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Invalidate,
    WantMore,
    Retry,
    /// Settle or fail the in-flight request picked by the byte.
    Settle(u8),
    Fail(u8),
    /// An answer the ledger must refuse, for the id the byte picks.
    BadSettle(u8),
    BadFail(u8),
}

#[derive(Clone)]
struct Side {
    ledger: Ledger,
    slots: Vec<Slot>,
}

struct Run {
    model: Model,
    recheck: bool,
    side: Side,
    /// The model's own state, advanced by the model's actions only.
    state: State,
    trace: Vec<String>,
}

/// Runs `data` under both settings of `recheck_full`; panics on the first difference.
pub fn run(data: &[u8]) {
    for recheck in [true, false] {
        Run::new(recheck).drive(Input::new(data));
    }
}

impl Side {
    fn slot_of(&self, id: u64) -> Option<usize> {
        refinement::slot_of(&self.slots, id)
    }

    fn alive(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.fate != Fate::Released)
            .count()
    }

    fn inflight(&self) -> Vec<u64> {
        self.slots
            .iter()
            .filter(|s| self.ledger.request(s.id).map(|r| r.st) == Some(ledger::St::Inflight))
            .map(|s| s.id)
            .collect()
    }

    /// The model state this ledger state stands for, mapped as the refinement check maps it.
    fn map(&self, m: &Model) -> State {
        refinement::map_state(m, &self.ledger, &self.slots)
    }

    /// Books the ledger's effects against the slots.
    fn book(&mut self, out: &[Effect]) -> Result<(), String> {
        refinement::book(&mut self.slots, &self.ledger, out)
    }
}

/// What a host event did to the ledger.
enum Outcome {
    /// Applied; the model must take `label` on request slot `on` (if any).
    Step { label: &'static str, on: Option<u8> },
    /// The ledger declined (`issue_finite` or `explicit_retry` with nothing enabled): the
    /// model's action must be disabled too, and nothing may change.
    Declined(&'static str),
    /// A refused answer, already checked.
    Refused,
}

impl Run {
    fn new(recheck: bool) -> Run {
        let rules = if recheck {
            Rules::UnifiedMinRecheck
        } else {
            Rules::UnifiedMin
        };
        let model = Model::new(Bounds {
            max_epoch: MAX_EPOCH,
            ids: IDS,
            rules,
            model_bounds: false,
        });
        Run {
            state: model.init(),
            model,
            recheck,
            side: Side {
                ledger: Ledger::new(Config {
                    recheck_full: recheck,
                }),
                slots: Vec::new(),
            },
            trace: Vec::new(),
        }
    }

    fn fail(&self, what: String) -> ! {
        panic!(
            "differential ({} rules) failed after {:?}:\n{what}\nmodel:  {}\nledger: {}",
            self.model.bounds.rules,
            self.trace,
            self.model.show(&self.state).join(", "),
            self.model.show(&self.side.map(&self.model)).join(", "),
        )
    }

    fn drive(mut self, mut input: Input) {
        while !input.is_empty() {
            let ev = match input.byte() % 16 {
                0 | 1 => Event::Invalidate,
                2..=4 => Event::WantMore,
                5 => Event::Retry,
                6..=10 => Event::Settle(input.byte()),
                11..=13 => Event::Fail(input.byte()),
                14 => Event::BadSettle(input.byte()),
                _ => Event::BadFail(input.byte()),
            };
            if !self.event(ev) {
                break;
            }
        }
        self.check_progress();
    }

    /// Applies one event to both sides; `false` when the run must stop (the ledger would issue
    /// more requests than the model has slots).
    fn event(&mut self, ev: Event) -> bool {
        if ev == Event::Invalidate && self.side.ledger.epoch() >= u64::from(MAX_EPOCH) {
            return true;
        }
        let mut next = self.side.clone();
        let mut out = Vec::new();
        let fresh = self.side.slots.len() as u8;
        let outcome = match self.apply(&mut next, ev, &mut out) {
            Ok(o) => o,
            Err(e) => self.fail(format!("{ev:?}: {e}")),
        };
        let (label, on) = match outcome {
            Outcome::Refused => {
                self.trace.push(format!("{ev:?} refused"));
                return true;
            }
            Outcome::Declined(name) => {
                if !self.model.successors_by(&self.state, name).is_empty() {
                    self.fail(format!(
                        "{name} is enabled in the model, the ledger declined"
                    ));
                }
                if !out.is_empty() || next.ledger.snapshot() != self.side.ledger.snapshot() {
                    self.fail(format!("a declined {name} changed the ledger"));
                }
                return true;
            }
            Outcome::Step { label, on } => (label, on),
        };
        if let Err(e) = next.book(&out) {
            self.fail(format!("{ev:?}: {e}"));
        }
        if next.slots.len() > IDS {
            return false;
        }
        if next.alive() > MAX_ALIVE {
            return true;
        }
        self.trace.push(match on {
            Some(i) => format!("{label}({})", i + 1),
            None => label.to_string(),
        });

        // The model: the host's action, then the eager scheduler's start if one is enabled.
        let host = self.unique(&self.state, label, |a| {
            acted_on(a) == on && new_slot(a).is_none_or(|k| k == fresh)
        });
        let started = host.1.map_or(0, |_| 1);
        let sched = fresh + started;
        let mut after = host.0;
        for name in ["StartFull", "StartRepair"] {
            let starts = self.model.successors_by(&after, name);
            if !starts.is_empty() {
                after = self.unique(&after, name, |a| new_slot(a) == Some(sched)).0;
                break;
            }
        }
        self.state = after;
        self.side = next;

        let mapped = self.side.map(&self.model);
        if mapped != self.state {
            self.fail(format!(
                "states differ after {label}:\n  diff (model -> ledger): {}",
                self.model.diff(&self.state, &mapped).join("; ")
            ));
        }
        self.check_invariants();
        true
    }

    /// The one successor of `s` by `name` that `pick` accepts, and the slot it started.
    fn unique(&self, s: &State, name: &str, pick: impl Fn(Action) -> bool) -> (State, Option<u8>) {
        let found: Vec<(Action, State)> = self
            .model
            .successors_by(s, name)
            .into_iter()
            .filter(|(a, _)| pick(*a))
            .collect();
        match found.as_slice() {
            [(a, t)] => (*t, new_slot(*a)),
            [] => self.fail(format!(
                "the ledger took {name}, which the model does not allow here"
            )),
            _ => self.fail(format!("{name} is ambiguous in the model: {found:?}")),
        }
    }

    fn apply(&self, next: &mut Side, ev: Event, out: &mut Vec<Effect>) -> Result<Outcome, String> {
        let l = &mut next.ledger;
        let e = |e: LedgerError| e.to_string();
        Ok(match ev {
            Event::Invalidate => {
                l.invalidate(out).map_err(e)?;
                Outcome::Step {
                    label: "Invalidate",
                    on: None,
                }
            }
            Event::WantMore => match l.issue_finite(out).map_err(e)? {
                Some(_) => Outcome::Step {
                    label: "IssueFinite",
                    on: None,
                },
                None => Outcome::Declined("IssueFinite"),
            },
            Event::Retry => {
                let enabled = l.retry_enabled();
                match l.explicit_retry(out).map_err(e)? {
                    Some(_) => {
                        for s in next.slots.iter_mut() {
                            if s.fate == Fate::FailedForgotten {
                                s.fate = Fate::Released;
                            }
                        }
                        Outcome::Step {
                            label: "ExplicitRetry",
                            on: None,
                        }
                    }
                    None if enabled => return Err("retry_enabled but retry declined".into()),
                    None => Outcome::Declined("ExplicitRetry"),
                }
            }
            Event::Settle(pick) | Event::Fail(pick) => {
                let inflight = self.side.inflight();
                if inflight.is_empty() {
                    return Ok(Outcome::Refused);
                }
                let id = inflight[pick as usize % inflight.len()];
                let slot = self.side.slot_of(id).expect("in flight") as u8;
                let k = self.side.slots[slot as usize].kind;
                if let Event::Settle(_) = ev {
                    l.settle(id, out).map_err(e)?;
                    Outcome::Step {
                        label: match k {
                            ledger::Kind::Finite => "SettleFinite",
                            ledger::Kind::Chain => "SettleChain",
                            ledger::Kind::Full => "SettleFull",
                        },
                        on: Some(slot),
                    }
                } else {
                    l.fail(id, out).map_err(e)?;
                    if k == ledger::Kind::Finite {
                        next.slots[slot as usize].fate = Fate::FailedForgotten;
                    }
                    Outcome::Step {
                        label: "Fail",
                        on: Some(slot),
                    }
                }
            }
            Event::BadSettle(pick) | Event::BadFail(pick) => {
                self.refuse(matches!(ev, Event::BadSettle(_)), pick)?;
                Outcome::Refused
            }
        })
    }

    /// An answer for a request that is not in flight: refused with the right error, and
    /// nothing changes.
    fn refuse(&self, settle: bool, pick: u8) -> Result<(), String> {
        let l = &self.side.ledger;
        let next_id = l.snapshot().next_id;
        let mut ids = vec![0, next_id, next_id + 1 + u64::from(pick >> 4)];
        ids.extend(
            self.side
                .slots
                .iter()
                .filter(|s| l.request(s.id).map(|r| r.st) != Some(ledger::St::Inflight))
                .map(|s| s.id),
        );
        let id = ids[pick as usize % ids.len()];
        let want = match l.request(id) {
            _ if id == 0 || id >= next_id => LedgerError::NotIssued(id),
            Some(_) => LedgerError::AlreadyAnswered(id),
            None => LedgerError::Retired(id),
        };
        let mut copy = l.clone();
        let mut out = Vec::new();
        let got = if settle {
            copy.settle(id, &mut out).err()
        } else {
            copy.fail(id, &mut out).err()
        };
        if got != Some(want) {
            return Err(format!("answer for {id}: got {got:?}, wanted {want:?}"));
        }
        if !out.is_empty() || copy.snapshot() != l.snapshot() || copy.requests() != l.requests() {
            return Err(format!("the refused answer for {id} changed the ledger"));
        }
        Ok(())
    }

    fn check_invariants(&self) {
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
    fn check_progress(&self) {
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

/// The slot an action starts a request in.
fn new_slot(a: Action) -> Option<u8> {
    match a {
        Action::IssueFinite { k }
        | Action::StartRepair { k }
        | Action::StartFull { k }
        | Action::ExplicitRetry { k } => Some(k),
        Action::SettleChain { k, .. } | Action::Fail { k, .. } => k,
        Action::Invalidate | Action::SettleFinite { .. } | Action::SettleFull { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_trace_runs_in_lockstep() {
        // WantMore, Settle, WantMore, Invalidate (repair starts), Settle the chain,
        // Invalidate, Fail the superseded finite read.
        run(&[2, 6, 0, 2, 0, 6, 1, 0, 11, 0]);
    }

    #[test]
    fn an_empty_input_is_the_initial_state() {
        run(&[]);
    }
}
