//! The refinement relation along one recorded run: each loader call's change to the ledger is
//! a path of the model's actions, every state on the way keeps the model's invariants, and
//! every step its step invariants.
//!
//! The exhaustive check (`crate::refinement`) books request ids to the model's slots; a long
//! run issues more requests than the model has slots. So here a ledger state is mapped to the
//! model up to what the model cannot tell apart: requests that are released or failed are
//! inert in every action and invariant (they only occupy a slot) and are dropped; settled
//! requests older than the coverage act alike, as do finite reads in flight that old (see
//! `epoch_of`), and settled requests of the
//! same kind, epoch and `sup` act alike everywhere, so each such class is merged into one;
//! slots are sorted; epochs are counted from the smallest one the two states name. A call
//! then refines the model when a path of at most [`MAX_PATH`] model actions leads from the
//! state before it to the state after it, through these canonical states.

use crate::ledger::{self, Ledger};
use crate::model::{self, Action, Bounds, Invariant, Model, Req, Rules, State, MAX_IDS, UNUSED};
use std::collections::{HashMap, VecDeque};

/// The longest path of model actions one loader call may take.
pub const MAX_PATH: usize = 10;

/// The epoch bound the model runs with here: room for every epoch a call spans.
const MAX_EPOCH: u8 = 200;

/// The model rules a loader with these ledger settings is checked against: with both on,
/// `unifiedMinRepairRetry`, not `unifiedMinEscalate` (which `--impl` checks), since the
/// canonical states here drop the request slots `resumed` names; every step of that variant,
/// `resumed` aside, is one of this.
pub fn rules_for(recheck_full: bool, commit_overtaken: bool) -> Rules {
    match (recheck_full, commit_overtaken) {
        (true, true) => Rules::UnifiedMinRepairRetry,
        (true, false) => Rules::UnifiedMinRecheck,
        (false, _) => Rules::UnifiedMin,
    }
}

/// The model under `rules`, as this check runs it.
pub fn model(rules: Rules) -> Model {
    Model::new(Bounds {
        max_epoch: MAX_EPOCH,
        ids: MAX_IDS,
        rules,
        model_bounds: false,
    })
}

/// What one call's check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A path of these actions leads from the state before to the state after.
    Path(Vec<Action>),
    /// The states fall outside what the model can hold (more distinct live requests than its
    /// slots, or epochs too far apart): not checked.
    Unchecked(&'static str),
}

/// The model's variables for a ledger state, epochs as they are (for the ITF export): every
/// request the ledger still knows, by id.
pub fn variables(l: &Ledger) -> (ledger::Snapshot, Vec<(u64, ledger::Request)>) {
    (l.snapshot(), l.requests())
}

/// A request's epoch as the model needs it: a settled request older than the coverage is
/// released by the next `Normalize` and fails every test on its epoch (`ep >= coverEpoch`,
/// `ep = coverEpoch`) as any other such request does, since `coverEpoch` never falls; a
/// finite read in flight that old is not current (`ep = epoch` fails) and settles into such a
/// request. So all of them are taken at `coverEpoch - 1`. Any other request's epoch is its
/// own (a chain's or full read's stamps the coverage it commits).
fn epoch_of(r: &ledger::Request, cover_epoch: u64) -> u64 {
    let old_finite = r.kind == ledger::Kind::Finite && r.st == ledger::St::Inflight;
    if (r.st == ledger::St::Settled || old_finite) && r.ep < cover_epoch {
        cover_epoch - 1
    } else {
        r.ep
    }
}

/// A ledger state's model state, epochs less `base`, requests canonical.
fn map(l: &Ledger, base: u64) -> Result<State, &'static str> {
    let s = l.snapshot();
    let ep = |e: u64| -> Result<u8, &'static str> {
        e.checked_sub(base)
            .and_then(|d| u8::try_from(d).ok())
            .filter(|&d| d < MAX_EPOCH / 2)
            .ok_or("epochs too far apart for the model")
    };
    let mut reqs = Vec::new();
    for (_, r) in l.requests() {
        let st = match r.st {
            ledger::St::Inflight => model::St::Inflight,
            ledger::St::Settled => model::St::Settled,
            ledger::St::Failed => continue,
        };
        let kind = match r.kind {
            ledger::Kind::Finite => model::Kind::Finite,
            ledger::Kind::Chain => model::Kind::Chain,
            ledger::Kind::Full => model::Kind::Full,
        };
        reqs.push(Req {
            kind,
            ep: ep(epoch_of(&r, s.cover_epoch))?,
            st,
            sup: r.sup,
        });
    }
    let mut t = State {
        epoch: ep(s.epoch)?,
        debt: s.debt,
        phase: s.phase,
        chain_epoch: ep(s.chain_epoch)?,
        failure: s.failure,
        coverage: s.coverage,
        req: [UNUSED; MAX_IDS],
        settled_once: s.settled_once,
        cover_epoch: ep(s.cover_epoch)?,
        resumed: 0,
    };
    // Merged before they are placed: a long view holds many settled requests alike.
    reqs.sort_by_key(|r| (r.st as u8, r.kind as u8, r.ep, r.sup));
    reqs.dedup_by(|a, b| a.st == model::St::Settled && a == b);
    if reqs.len() > MAX_IDS {
        return Err("more distinct live requests than the model's slots");
    }
    t.req[..reqs.len()].copy_from_slice(&reqs);
    canon(&t).ok_or("more distinct live requests than the model's slots")
}

/// The canonical form of a model state: released and failed slots dropped, settled slots
/// older than the coverage taken at `coverEpoch - 1` (see `epoch_of`), equal settled slots
/// merged, the rest sorted. `None` when they do not fit.
fn canon(s: &State) -> Option<State> {
    let mut reqs: Vec<Req> = s
        .req
        .iter()
        .copied()
        .filter(|r| matches!(r.st, model::St::Inflight | model::St::Settled))
        .map(|mut r| {
            let old_finite = r.kind == model::Kind::Finite && r.st == model::St::Inflight;
            if (r.st == model::St::Settled || old_finite) && r.ep < s.cover_epoch {
                r.ep = s.cover_epoch - 1;
            }
            r
        })
        .collect();
    reqs.sort_by_key(|r| (r.st as u8, r.kind as u8, r.ep, r.sup));
    reqs.dedup_by(|a, b| a.st == model::St::Settled && a == b);
    if reqs.len() > MAX_IDS {
        return None;
    }
    let mut t = *s;
    t.req = [UNUSED; MAX_IDS];
    t.req[..reqs.len()].copy_from_slice(&reqs);
    Some(t)
}

/// The smallest epoch a ledger state names.
fn least_epoch(l: &Ledger) -> u64 {
    let s = l.snapshot();
    l.requests()
        .iter()
        .map(|(_, r)| epoch_of(r, s.cover_epoch))
        .chain([s.epoch, s.chain_epoch, s.cover_epoch])
        .min()
        .unwrap_or(0)
}

/// Checks one call: the ledger went from `before` to `after`. `Err` says how it does not
/// refine the model: no path within [`MAX_PATH`] actions, or an invariant broken.
pub fn check_call(m: &Model, before: &Ledger, after: &Ledger) -> Result<Step, String> {
    let base = least_epoch(before).min(least_epoch(after));
    let (from, to) = match (map(before, base), map(after, base)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return Ok(Step::Unchecked(e)),
    };
    for inv in Invariant::STATE {
        if inv == Invariant::NoLostInvalidation && !after.config().recheck_full {
            continue;
        }
        if inv == Invariant::TypeOK {
            continue;
        }
        if !inv.holds(m, &to) {
            return Err(format!(
                "the model's invariant {inv} is violated at {}",
                m.show(&to).join(", ")
            ));
        }
    }
    if from == to {
        return Ok(Step::Path(Vec::new()));
    }
    // Breadth first, so the path found is a shortest one.
    let mut seen: HashMap<State, Option<(State, Action)>> = HashMap::new();
    seen.insert(from, None);
    let mut queue = VecDeque::from([(from, 0usize)]);
    while let Some((s, depth)) = queue.pop_front() {
        if depth == MAX_PATH {
            continue;
        }
        let mut next = Vec::new();
        m.next(&s, |a, t| next.push((a, t)));
        for (a, t) in next {
            if !Invariant::STEP.iter().all(|inv| inv.holds_step(m, &s, &t)) {
                continue;
            }
            let Some(c) = canon(&t) else { continue };
            if seen.contains_key(&c) {
                continue;
            }
            seen.insert(c, Some((s, a)));
            if c == to {
                let mut path = vec![a];
                let mut at = s;
                while let Some(Some((p, a))) = seen.get(&at) {
                    path.push(*a);
                    at = *p;
                }
                path.reverse();
                return Ok(Step::Path(path));
            }
            queue.push_back((c, depth + 1));
        }
    }
    Err(format!(
        "no path of at most {MAX_PATH} model actions ({} rules) leads from\n    {}\n  to\n    {}",
        m.bounds.rules,
        m.show(&from).join(", "),
        m.show(&to).join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Ledger {
        Ledger::new(ledger::Config {
            recheck_full: true,
            commit_overtaken: true,
        })
    }

    #[test]
    fn a_finite_read_settled_is_the_models_path() {
        let m = model(Rules::UnifiedMinRepairRetry);
        let mut l = ledger();
        let mut out = Vec::new();
        let before = l.clone();
        let id = l.issue_finite(&mut out).unwrap().unwrap();
        l.settle(id, &mut out).unwrap();
        l.invalidate(&mut out).unwrap();
        let names: Vec<&str> = match check_call(&m, &before, &l).unwrap() {
            Step::Path(p) => p.iter().map(|a| a.name()).collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            names,
            ["IssueFinite", "SettleFinite", "Invalidate", "StartRepair"]
        );
    }

    #[test]
    fn a_change_no_model_path_makes_is_refused() {
        // The epoch and the coverage's stamp at 5 with nothing read: invalidations raise the
        // epoch, but only a commit raises the stamp, and nothing committed.
        let m = model(Rules::UnifiedMinRepairRetry);
        let jumped = Ledger::with_counters(ledger().config(), 5, 1);
        let e = check_call(&m, &ledger(), &jumped).unwrap_err();
        assert!(e.contains("no path"), "{e}");
    }

    #[test]
    fn settled_requests_alike_are_one_slot() {
        let m = model(Rules::UnifiedMinRepairRetry);
        let mut l = ledger();
        let mut out = Vec::new();
        for _ in 0..20 {
            let id = l.issue_finite(&mut out).unwrap().unwrap();
            l.settle(id, &mut out).unwrap();
        }
        let before = l.clone();
        let id = l.issue_finite(&mut out).unwrap().unwrap();
        l.settle(id, &mut out).unwrap();
        assert!(matches!(check_call(&m, &before, &l), Ok(Step::Path(_))));
    }
}
