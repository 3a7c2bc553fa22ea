//! The ledger's half of the lockstep: events applied, effects booked, refusals checked.
//!
//! A host event is applied to the production ledger, its effects are booked against the
//! model's request slots, and answers the ledger must refuse are checked to change nothing.

use super::{Event, Run};
use loader::ledger::{self, Effect, Ledger, LedgerError};
use loader::model::{Model, State};
use loader::refinement::{self, Slot, SlotFate as Fate};

/// The production ledger, and its requests in issue order as the model's slots.
#[derive(Clone)]
pub(super) struct Side {
    /// The ledger under test.
    pub(super) ledger: Ledger,
    /// Request `k`'s id and fate, for slot `k` of the model.
    pub(super) slots: Vec<Slot>,
}

impl Side {
    /// The model slot of request `id`.
    fn slot_of(&self, id: u64) -> Option<usize> {
        refinement::slot_of(&self.slots, id)
    }

    /// Requests not yet released: the model's `MaxAlive` bound counts them.
    pub(super) fn alive(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.fate != Fate::Released)
            .count()
    }

    /// The ids of requests in flight, in issue order.
    fn inflight(&self) -> Vec<u64> {
        self.slots
            .iter()
            .filter(|s| self.ledger.request(s.id).map(|r| r.st) == Some(ledger::St::Inflight))
            .map(|s| s.id)
            .collect()
    }

    /// The model state this ledger state stands for, mapped as the refinement check maps it.
    pub(super) fn map(&self, m: &Model) -> State {
        refinement::map_state(m, &self.ledger, &self.slots)
    }

    /// Books the ledger's effects against the slots.
    pub(super) fn book(&mut self, out: &[Effect]) -> Result<(), String> {
        refinement::book(&mut self.slots, &self.ledger, out)
    }
}

/// What a host event did to the ledger.
pub(super) enum Outcome {
    /// Applied; the model must take `label` on request slot `on` (if any).
    Step { label: &'static str, on: Option<u8> },
    /// The ledger declined (`issue_finite` or `explicit_retry` with nothing enabled): the model's action
    /// must be disabled too, and nothing may change.
    Declined(&'static str),
    /// A refused answer, already checked.
    Refused,
}

impl Run {
    /// Applies `ev` to `next` (a copy of the ledger side), collecting its effects in `out`.
    pub(super) fn apply(
        &self,
        next: &mut Side,
        ev: Event,
        out: &mut Vec<Effect>,
    ) -> Result<Outcome, String> {
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
}
