//! Progress under churn: a bounded `AF` check over the graph a churn adversary leaves; and,
//! the same way, progress under the gone-cursor adversary (`gone_cursor`: every read a page
//! or repair failure's retry resumes fails, no invalidation; a path passes when `coverEpoch`
//! rises or nothing is owed any more, see [`Model::gone_cursor_successors`]).
//!
//! The adversary invalidates after every system step, while `epoch < MaxEpoch`. A system step
//! is any enabled action but `Invalidate` and `Fail`: the loader's own moves and successful
//! answers. From every reachable state with `coverEpoch < epoch` and `failure = "none"`, every
//! path of that graph must raise `coverEpoch` above its start value within `bound` system
//! steps. A path may also end early: in a state with nothing owed (`phase = "idle"`,
//! `debt = "none"`), which passes, or in a state with something owed and no system step, a
//! deadlock, which fails. A path that ends only because every request slot is used (the
//! model's `Ids` bound) is cut there: what it did up to the cut is judged, nothing after.
//!
//! A cut can hide a failure: a rule whose worst path needs more slots than are left looks as
//! good as its cut. So the start states, reachable under `Ids`, can be judged as if more slots
//! were free: with `spare_ids`, the adversary's graph is that of the model with `Ids +
//! spare_ids` slots, the extra ones unused at the start. With enough spare slots no path is
//! cut ([`ProgressReport::cut`] is 0), and the worst case is exact for those start states.
//!
//! The graph is finite and, since every step advances some request or the epoch, acyclic; a
//! cycle would be found and would fail. The worst number of system steps to a rise is
//! computed exactly, by a depth-first search memoised per state, once per start value of
//! `coverEpoch`.

use super::explore::{reachable, trace_to, Step};
use super::{Action, Bounds, Debt, Failure, Model, Packer, Phase, State};

use rustc_hash::FxHashMap as HashMap;
use std::time::{Duration, Instant};

/// The bound `make check` uses: the worst case of `unifiedMinChurn`, the same at every
/// `MaxEpoch` checked (2 to 4), with spare slots enough that no path is cut. The longest paths start a full read or a repair, answer the
/// finite read it superseded, then answer the full read or chain, which commits at its own
/// epoch although an invalidation overtook it.
pub const DEFAULT_BOUND: u32 = 3;

/// A path that deadlocks with something owed, or cycles, never rises.
const NEVER: u8 = u8::MAX;
/// On the search's stack: reaching it again closes a cycle.
const ON_STACK: u8 = u8::MAX - 1;

/// How to check progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressOptions {
    /// The most system steps any path may take to raise `coverEpoch`.
    pub bound: u32,
    /// Request slots the adversary's graph has beyond the `Ids` of the reachable states.
    pub spare_ids: usize,
    /// Stop at the first start state (nearest `Init`, for the smallest start value of
    /// `coverEpoch`) that has a path exceeding the bound.
    pub stop_at_first: bool,
    /// The gone-cursor adversary instead of churn (see [`Model::gone_cursor_successors`]).
    pub gone_cursor: bool,
}

impl Default for ProgressOptions {
    fn default() -> ProgressOptions {
        ProgressOptions {
            bound: DEFAULT_BOUND,
            spare_ids: 0,
            stop_at_first: false,
            gone_cursor: false,
        }
    }
}

/// The bound of the gone-cursor check (`--progress --gone-cursor`): the worst case of
/// `unifiedMinEscalate`. The longest paths start at a repair failure with a superseded read
/// still out: it is answered, the host resumes the repair, the resumed read fails and goes
/// through the lattice, the host retries with a full read, which settles (`SettleFinite`,
/// `ExplicitRetry`, `Fail`, `ExplicitRetry`, `SettleFull`).
pub const GONE_CURSOR_BOUND: u32 = 5;

/// What the progress check found.
#[derive(Clone, Debug)]
pub struct ProgressReport {
    /// The constants the start states were reached under.
    pub bounds: Bounds,
    /// The bound checked.
    pub bound: u32,
    /// The adversary was the gone-cursor one, not churn.
    pub gone_cursor: bool,
    /// Request slots the adversary's graph had beyond `bounds.ids`.
    pub spare_ids: usize,
    /// Distinct states reachable under `Next`.
    pub reachable: u64,
    /// Start states: reachable, `coverEpoch < epoch`, `failure = "none"`.
    pub starts: u64,
    /// States of the adversary's graph visited, summed over the start values of `coverEpoch`.
    pub visited: u64,
    /// Paths cut because every slot, spare ones included, was used (counted once per state
    /// that ends them).
    pub cut: u64,
    /// The most system steps any path takes to raise `coverEpoch`; `None` when some path
    /// never does (a deadlock with something owed, or a cycle).
    pub worst: Option<u32>,
    /// False when `stop_at_first` ended the run at the first violation: `worst` is then the
    /// worst found so far.
    pub complete: bool,
    /// When the check fails: the shortest path from `Init` to the start state, then the
    /// adversary's longest path from it, up to the rise (past the bound), or `bound + 1`
    /// system steps or up to its deadlock when it never rises.
    pub counterexample: Option<(Vec<Step>, Vec<Step>)>,
    /// The system steps the counterexample's path takes to rise; `None` if it never does.
    pub worst_from_witness: Option<u32>,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

impl ProgressReport {
    /// Every path rises within the bound.
    pub fn holds(&self) -> bool {
        self.worst.is_some_and(|w| w <= self.bound)
    }
}

struct Search<'a> {
    /// The model with the spare slots.
    model: &'a Model,
    /// The packer of the reachable states, without the spare slots.
    packer: &'a Packer,
    spare: usize,
    /// The start value of `coverEpoch` being judged.
    c0: u8,
    /// Keyed by the packed state and its packed spare slots.
    memo: HashMap<(u64, u64), u8>,
    cut: u64,
    gone_cursor: bool,
}

impl Model {
    /// Whether something is still owed: a read in progress or debt.
    fn owes(&self, s: &State) -> bool {
        s.phase != Phase::Idle || s.debt != Debt::None
    }

    /// The adversary's successors of `s`: a system step, then an `Invalidate` if one is
    /// enabled. Each comes with the actions taken.
    pub fn churn_successors(&self, s: &State) -> Vec<(Action, Option<State>, State)> {
        let mut out = Vec::new();
        self.next(s, |a, t| {
            if matches!(a, Action::Invalidate | Action::Fail { .. }) {
                return;
            }
            let mut after = None;
            self.invalidate(&t, &mut |_, u| after = Some(u));
            match after {
                Some(u) => out.push((a, Some(t), u)),
                None => out.push((a, None, t)),
            }
        });
        out
    }

    /// Nothing owed and nothing to wait for: `phase = "idle"`, `debt = "none"`, no failure
    /// recorded and no resumed read in flight. Where the gone-cursor adversary's paths may end.
    fn quiet(&self, s: &State) -> bool {
        !self.owes(s) && s.failure == Failure::None && s.resumed == 0
    }

    /// The gone-cursor adversary's successors of `s` (`--progress --gone-cursor`): the cursor
    /// a page or repair failure's retry reads again is gone for good, so the resumed read
    /// (`resumed`) only ever fails, and every other read may succeed. No invalidation. The
    /// steps are the loader's own, the answers to reads not resumed, `Fail` of the resumed
    /// read, and `ExplicitRetry` (either way the host may take it) when nothing else can
    /// happen: the host retries when only it can.
    pub fn gone_cursor_successors(&self, s: &State) -> Vec<(Action, Option<State>, State)> {
        let mut out = Vec::new();
        let mut retries = Vec::new();
        let resumed = s.resumed.checked_sub(1);
        self.next(s, |a, t| match a {
            Action::Invalidate => {}
            Action::ExplicitRetry { .. } => retries.push((a, None, t)),
            Action::Fail { i, .. } if Some(i) != resumed => {}
            Action::SettleFinite { i }
            | Action::SettleChain { i, .. }
            | Action::SettleFull { i }
            | Action::ResumeAnswered { i }
                if Some(i) == resumed => {}
            _ => out.push((a, None, t)),
        });
        if out.is_empty() {
            retries
        } else {
            out
        }
    }
}

impl Search<'_> {
    /// The adversary's successors of `s`.
    fn successors(&self, s: &State) -> Vec<(Action, Option<State>, State)> {
        if self.gone_cursor {
            self.model.gone_cursor_successors(s)
        } else {
            self.model.churn_successors(s)
        }
    }

    /// Where a path ends well: `coverEpoch` rose, or, against the gone-cursor adversary,
    /// nothing is owed any more.
    fn done(&self, s: &State) -> bool {
        s.cover_epoch > self.c0 || (self.gone_cursor && self.model.quiet(s))
    }

    /// The most system steps from `s` until `coverEpoch > c0`, or [`NEVER`].
    fn worst(&mut self, s: &State) -> u8 {
        if self.done(s) {
            return 0;
        }
        let w = (self.packer.pack(s), self.packer.pack_spare(s, self.spare));
        match self.memo.get(&w) {
            Some(&ON_STACK) => return NEVER,
            Some(&v) => return v,
            None => {}
        }
        self.memo.insert(w, ON_STACK);
        let succ = self.successors(s);
        let v = if succ.is_empty() {
            if self.model.free(s).next().is_none() {
                self.cut += 1;
                0
            } else if self.model.owes(s) {
                NEVER
            } else {
                0
            }
        } else {
            let mut v = 0u8;
            for (_, _, t) in &succ {
                let x = self.worst(t);
                v = if x >= ON_STACK { NEVER } else { v.max(x + 1) };
                if v == NEVER {
                    break;
                }
            }
            v
        };
        self.memo.insert(w, v);
        v
    }

    /// The adversary's path from `s` that takes longest to rise: at most `steps` system steps,
    /// each followed by its `Invalidate`, ending at the rise if it comes within them.
    fn longest_path(&mut self, s: &State, steps: u32) -> Vec<Step> {
        let mut path = Vec::new();
        let mut s = *s;
        for _ in 0..steps {
            if self.done(&s) {
                break;
            }
            let here = self.worst(&s);
            let pick = self.successors(&s).into_iter().find(|(_, _, t)| {
                let x = self.worst(t);
                if here == NEVER {
                    x == NEVER
                } else {
                    x + 1 == here
                }
            });
            let Some((a, mid, t)) = pick else { break };
            if let Some(m) = mid {
                path.push(Step {
                    action: Some(a),
                    state: m,
                });
                path.push(Step {
                    action: Some(Action::Invalidate),
                    state: t,
                });
            } else {
                path.push(Step {
                    action: Some(a),
                    state: t,
                });
            }
            s = t;
        }
        path
    }
}

/// Checks progress under churn from the states reachable under `bounds`, as `options` say.
pub fn check_progress(bounds: Bounds, options: ProgressOptions) -> Result<ProgressReport, String> {
    let ProgressOptions {
        bound,
        spare_ids,
        stop_at_first,
        gone_cursor,
    } = options;
    let packer = Packer::new(&bounds)?;
    Packer::spare_fits(&bounds, spare_ids)?;
    let model = Model::new(bounds);
    let wide = Model::new(Bounds {
        ids: bounds.ids + spare_ids,
        ..bounds
    });
    let start = Instant::now();
    let all = reachable(&model, &packer);
    let mut starts = 0u64;
    let mut visited = 0u64;
    let mut cut = 0u64;
    let mut worst = 0u8;
    // The first start (in breadth-first order: nearest `Init`) with a path over the bound.
    let mut witness: Option<(u64, u8)> = None;
    'passes: for c0 in 0..bounds.max_epoch + u8::from(gone_cursor) {
        let mut search = Search {
            model: &wide,
            packer: &packer,
            spare: spare_ids,
            c0,
            memo: HashMap::default(),
            cut: 0,
            gone_cursor,
        };
        for &w in &all {
            let s = packer.unpack(w).expect("stored states decode");
            let start = if gone_cursor {
                s.cover_epoch == c0 && !model.quiet(&s)
            } else {
                s.cover_epoch == c0 && s.cover_epoch < s.epoch && s.failure == Failure::None
            };
            if !start {
                continue;
            }
            starts += 1;
            let v = search.worst(&s);
            worst = worst.max(v);
            if witness.is_none() && (v == NEVER || v as u32 > bound) {
                witness = Some((w, c0));
                if stop_at_first {
                    visited += search.memo.len() as u64;
                    cut += search.cut;
                    break 'passes;
                }
            }
        }
        visited += search.memo.len() as u64;
        cut += search.cut;
    }
    let complete = !(stop_at_first && witness.is_some());
    let worst = (worst != NEVER).then_some(worst as u32);
    let mut worst_from_witness = None;
    let counterexample = match witness {
        Some((w, c0)) => {
            let prefix = trace_to(&model, &packer, w, u32::MAX);
            let mut search = Search {
                model: &wide,
                packer: &packer,
                spare: spare_ids,
                c0,
                memo: HashMap::default(),
                cut: 0,
                gone_cursor,
            };
            let s = packer.unpack(w).expect("stored states decode");
            // Up to the rise, or past the bound when there is none.
            let steps = match search.worst(&s) {
                NEVER => bound + 1,
                v => {
                    worst_from_witness = Some(v as u32);
                    v as u32
                }
            };
            let path = search.longest_path(&s, steps);
            Some((prefix, path))
        }
        _ => None,
    };
    Ok(ProgressReport {
        bounds,
        bound,
        gone_cursor,
        spare_ids,
        reachable: all.len() as u64,
        starts,
        visited,
        cut,
        worst,
        complete,
        counterexample,
        worst_from_witness,
        elapsed: start.elapsed(),
    })
}
