//! `fuzz_differential`: the production [`Ledger`] and the executable [`Model`] in lockstep.
//!
//! The input is a sequence of host events (invalidate, issue_finite, explicit_retry, settle or fail of an
//! in-flight request, answers the ledger must refuse). Each event is applied to the ledger, and
//! the model takes the same action on its own state, followed by the eager scheduler's
//! `StartFull` or `StartRepair` when the model enables one. After every event the ledger's
//! state, mapped as `loader::refinement` maps it (request ids to slots in issue order; a
//! failed finite request, which the ledger forgets, stays `failed` in the model until an
//! `ExplicitRetry`), must equal the model's state, every state invariant must hold in both, and
//! every step invariant on the model's steps.
//!
//! Unlike the exhaustive refinement check, the model's state here is carried forward by the
//! model alone, never re-derived from the ledger, and the bounds are wider: epochs up to
//! [`MAX_EPOCH`], [`IDS`] requests per run, at most [`MAX_ALIVE`] of them alive at once. An
//! event that would exceed `MAX_ALIVE` is skipped; the run stops when the ledger would issue
//! more than `IDS` requests. Each input is run twice: with `recheck_full` on against
//! `unifiedMinRecheck`, and off against the module's exact `unifiedMin`.

mod checks;
mod ledger_side;

use crate::input::Input;
use ledger_side::{Outcome, Side};
use loader::ledger::{Config, Ledger};
use loader::model::{Action, Bounds, Invariant, Model, Rules, State};
use loader::refinement::acted_on;

/// The model's `MaxEpoch`: invalidations stop there.
pub const MAX_EPOCH: u8 = 15;
/// Requests one run may issue (the model's `Ids`).
pub const IDS: usize = 8;
/// Requests alive at once (in flight, settled, or failed and not yet released).
pub const MAX_ALIVE: usize = 4;

/// A host event, decoded from one byte (and one more for the request it picks).
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

/// One pass over an input: the model and the ledger side, advanced in lockstep.
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
                    commit_overtaken: false,
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
        // The step invariants, on the host's step and the start's.
        let mut steps = vec![(self.state, host.0)];
        if after != host.0 {
            steps.push((host.0, after));
        }
        for (s, t) in steps {
            for inv in Invariant::STEP {
                if !inv.holds_step(&self.model, &s, &t) {
                    self.fail(format!("{inv} violated by {label}"));
                }
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
}

/// The slot an action starts a request in.
fn new_slot(a: Action) -> Option<u8> {
    match a {
        Action::IssueFinite { k }
        | Action::StartRepair { k }
        | Action::StartFull { k }
        | Action::ExplicitRetry { k } => Some(k),
        Action::SettleChain { k, .. } | Action::Fail { k, .. } => k,
        Action::Invalidate
        | Action::SettleFinite { .. }
        | Action::SettleFull { .. }
        | Action::ResumeAnswered { .. } => None,
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
