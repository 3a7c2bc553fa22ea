//! The model's request slots: the ledger request each stands for, booked from the ledger's
//! effects, and the model state a ledger state maps to through them.

use crate::ledger::{self, Effect, Ledger};
use crate::model::{self, Action, Model, Req, State};

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
    if m.bounds.rules.escalates() {
        s.resumed = ledger
            .resumed()
            .and_then(|id| slot_of(slots, id))
            .map_or(0, |i| i as u8 + 1);
    }
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
        | Action::Fail { i, .. }
        | Action::ResumeAnswered { i } => Some(i),
        _ => None,
    }
}
