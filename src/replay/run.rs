//! Running a recorded log again: its calls against a new production [`Loader`], each result
//! and each batch of effects compared with the log's, and after each entry the checks that
//! apply to one run: the ledger's invariants, the refinement relation (`refine`), the
//! loader's properties that need no source (`check::props`), a contiguous view, `changed`
//! once and last in each batch, and every acquisition released once.

use super::log::{Call, Entry, Log};
use super::refine::{self, Step};
use crate::check::props::loader_props;
use crate::ledger::{self, Ledger};
use crate::loader::{Effect, Loader, LoaderError, Read};
use std::collections::HashSet;

/// How a replay runs.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// How many entries before a divergence to print with it.
    pub context: usize,
    /// Check each call against the model (the refinement relation).
    pub refine: bool,
    /// The model's rules to check against; `None`: those the log's settings select.
    pub rules: Option<crate::model::Rules>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            context: 12,
            refine: true,
            rules: None,
        }
    }
}

/// The model's variables after one call, for the ITF export.
#[derive(Clone, Debug)]
pub struct Snap {
    /// The log line of the call.
    pub line: usize,
    /// The call, as the log writes it.
    pub call: String,
    /// The model actions the call took (empty when unchecked or none).
    pub actions: Vec<String>,
    /// The ledger's variables.
    pub ledger: ledger::Snapshot,
    /// Its requests, by id.
    pub requests: Vec<(u64, ledger::Request)>,
}

/// What a replay that found nothing wrong covered.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Calls replayed.
    pub calls: usize,
    /// Batches of effects compared.
    pub batches: usize,
    /// Effects compared.
    pub effects: usize,
    /// Calls checked against the model.
    pub refined: usize,
    /// Model actions along the run.
    pub model_steps: usize,
    /// Calls the model could not hold (too many distinct live requests), not checked.
    pub unchecked: usize,
    /// Why the first of them was not checked, and its log line.
    pub unchecked_first: Option<(usize, &'static str)>,
    /// The initial state, then the state after each call.
    pub states: Vec<Snap>,
}

/// The first thing a replay found wrong.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The log line where it showed.
    pub line: usize,
    /// What differed, or which check failed.
    pub what: String,
    /// The entries before it (at most `Options::context`), then the line itself.
    pub context: Vec<(usize, String)>,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "divergence at line {}: {}", self.line, self.what)?;
        writeln!(f, "the events that led to it:")?;
        for (n, text) in &self.context {
            let mark = if *n == self.line { ">>" } else { "  " };
            writeln!(f, "{mark} {n:>6}  {text}")?;
        }
        Ok(())
    }
}

fn snap(line: usize, call: &str, actions: Vec<String>, l: &Ledger) -> Snap {
    let (ledger, requests) = refine::variables(l);
    Snap {
        line,
        call: call.to_string(),
        actions,
        ledger,
        requests,
    }
}

/// The replay's own picture of the host: what it handed over and was asked for.
#[derive(Default)]
struct HostSide {
    /// Acquisitions accepted and not yet released.
    held: HashSet<u64>,
    /// Reads issued (drained) and not yet answered.
    pending: Vec<Read>,
    closed: bool,
    /// The widest window since the loader was last quiescent: a running repair stages pages
    /// for the window it started with.
    repair_window: u64,
}

/// Runs one call against `l`; the result as the log writes it (none for `h` and `x`).
fn run_call(l: &mut Loader, c: &Call) -> Result<Option<String>, String> {
    fn out<T>(r: Result<T, LoaderError>) -> Option<String>
    where
        Result<T, LoaderError>: crate::loader::Outcome,
    {
        let mut s = Vec::new();
        crate::loader::Outcome::write(&r, &mut s);
        Some(String::from_utf8_lossy(&s).into_owned())
    }
    Ok(match c {
        Call::Hints(h) => {
            l.set_cancel_hints_heard(*h);
            None
        }
        Call::Window(s, n) => out(l.set_window(*s, *n)),
        Call::Located { start, len, answer } => {
            let mut asked = false;
            let r = l.set_window_located(*start, *len, &mut |_: u64, buf: &mut Vec<u8>| {
                asked = true;
                match answer {
                    Some(Some(c)) => {
                        buf.clear();
                        buf.extend_from_slice(c);
                        true
                    }
                    _ => false,
                }
            });
            match (asked, answer.is_some()) {
                (true, false) => return Err("the loader asked locate, the log did not".into()),
                (false, true) => return Err("the log asked locate, the loader did not".into()),
                _ => {}
            }
            out(r)
        }
        Call::Tick(t) => out(l.tick(*t)),
        Call::Settle {
            read_id,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            items_before,
            answers,
        } => {
            let mut given = Given::new(answers);
            let r = l.settle_ordered(
                *read_id,
                *acquisition,
                *count,
                next_cursor,
                *end_of_source,
                *items_before,
                (!answers.is_empty()).then_some(&mut |_: &[u8], _: &[u8]| given.next()),
            );
            given.all_asked()?;
            out(r)
        }
        Call::Fail(r, code) => out(l.fail(*r, *code)),
        Call::Abandon(r) => out(l.abandon(*r)),
        Call::Invalidate => out(l.invalidate()),
        Call::Range { from, to, answers } => {
            let mut given = Given::new(answers);
            let r = l.invalidate_range(from, to.as_deref(), &mut |_: &[u8], _: &[u8]| given.next());
            given.all_asked()?;
            out(r)
        }
        Call::Jump(cursor, position) => out(l.jump(cursor, *position)),
        Call::Appended => out(l.appended()),
        Call::Follow(on) => out(l.follow(*on)),
        Call::Retry => out(l.retry()),
        Call::Close => {
            l.close();
            None
        }
    })
}

/// The view's pages lie end to end over the covered range.
fn contiguous(l: &Loader) -> Result<(), String> {
    let (mut at, end) = l.covered();
    for p in l.pages() {
        if p.start != at {
            return Err(format!(
                "contiguous: a page starts at {} but the one before ended at {at}",
                p.start
            ));
        }
        at += u64::from(p.count);
    }
    if at != end {
        return Err(format!(
            "contiguous: the pages end at {at}, the covered range at {end}"
        ));
    }
    Ok(())
}

/// The checks after each entry. Effects still queued in the loader count as delivered.
fn check_state(l: &Loader, host: &mut HostSide, answered: bool) -> Result<(), String> {
    host.repair_window = if l.ledger().is_quiescent() {
        l.window().1
    } else {
        host.repair_window.max(l.window().1)
    };
    l.ledger()
        .check_invariants()
        .map_err(|inv| format!("ledger: the ledger's {inv} is violated"))?;
    if !l.is_closed() {
        contiguous(l)?;
    }
    let mut held = host.held.clone();
    let mut pending = host.pending.clone();
    for e in l.queued_effects() {
        match e {
            Effect::Release { acquisition } => {
                held.remove(acquisition);
            }
            Effect::Issue(r) => pending.push(r.clone()),
            _ => {}
        }
    }
    loader_props(l, &held, &pending, answered, host.repair_window)
        .map_err(|(p, m)| format!("{}: {m}", p.name()))
}

/// Replays `log`. `Ok` with what it covered when the loader did what the log says and every
/// check held; otherwise the first divergence.
pub fn replay(log: &Log, options: Options) -> Result<Report, Divergence> {
    let fail = |i: usize, what: String| {
        let from = i.saturating_sub(options.context);
        Divergence {
            line: log.entries.get(i).map_or(0, |e| e.0),
            what,
            context: log.entries[from..=i.min(log.entries.len().saturating_sub(1))]
                .iter()
                .map(|(n, t, _)| (*n, t.clone()))
                .collect(),
        }
    };
    let made = match log.counters {
        Some((epoch, next_id)) => Loader::with_counters(log.config, epoch, next_id),
        None => Loader::new(log.config),
    };
    let mut l = made.map_err(|e| Divergence {
        line: 2,
        what: format!("the log's settings are refused: {e}"),
        context: Vec::new(),
    })?;
    let model = refine::model(options.rules.unwrap_or(refine::rules_for(
        log.config.recheck_full,
        log.config.commit_overtaken,
    )));
    let mut host = HostSide::default();
    let mut report = Report {
        states: vec![snap(0, "init", Vec::new(), l.ledger())],
        ..Report::default()
    };
    for (i, (line, text, entry)) in log.entries.iter().enumerate() {
        let answered = match entry {
            Entry::Call(c, expected) => {
                let before = options.refine.then(|| l.ledger().clone());
                let current = l.stats().answered_current;
                let got = run_call(&mut l, c).map_err(|e| fail(i, e))?;
                if got != *expected {
                    return Err(fail(
                        i,
                        format!(
                            "the call returned {} where the log says {}",
                            got.as_deref().unwrap_or("nothing"),
                            expected.as_deref().unwrap_or("nothing")
                        ),
                    ));
                }
                report.calls += 1;
                match c {
                    Call::Settle {
                        read_id,
                        acquisition,
                        ..
                    } => {
                        if got.as_deref().is_some_and(|g| g.starts_with("ok")) {
                            host.held.insert(*acquisition);
                        }
                        host.pending.retain(|r| r.read_id != *read_id);
                    }
                    Call::Fail(read_id, _) => host.pending.retain(|r| r.read_id != *read_id),
                    Call::Close => host.closed = true,
                    _ => {}
                }
                let mut actions = Vec::new();
                if let Some(before) = before {
                    match refine::check_call(&model, &before, l.ledger()) {
                        Ok(Step::Path(path)) => {
                            report.refined += 1;
                            report.model_steps += path.len();
                            actions = path.iter().map(|a| a.to_string()).collect();
                        }
                        Ok(Step::Unchecked(why)) => {
                            report.unchecked += 1;
                            report.unchecked_first.get_or_insert((*line, why));
                        }
                        Err(e) => return Err(fail(i, format!("refinement: {e}"))),
                    }
                }
                report.states.push(snap(*line, text, actions, l.ledger()));
                l.stats().answered_current > current
            }
            Entry::Effects(expected) => {
                let effects = l.take_effects();
                let mut got = Vec::new();
                crate::loader::record_effects(&mut got, None, &effects);
                let got = String::from_utf8_lossy(&got).into_owned();
                if got != *expected {
                    return Err(fail(
                        i,
                        format!("the loader's callbacks were\n    > {got}\n  where the log says\n    > {expected}"),
                    ));
                }
                report.batches += 1;
                report.effects += effects.len();
                let changed = effects.iter().filter(|e| **e == Effect::Changed).count();
                if changed > 1 || (changed == 1 && effects.last() != Some(&Effect::Changed)) {
                    return Err(fail(
                        i,
                        "changed_once_last: `changed` more than once, or not last".into(),
                    ));
                }
                for e in effects {
                    match e {
                        Effect::Issue(r) => host.pending.push(r),
                        Effect::Release { acquisition } if !host.held.remove(&acquisition) => {
                            return Err(fail(
                                i,
                                format!(
                                    "accounting: acquisition {acquisition} released but not held"
                                ),
                            ));
                        }
                        _ => {}
                    }
                }
                false
            }
        };
        check_state(&l, &mut host, answered).map_err(|e| fail(i, e))?;
    }
    if host.closed && l.queued_effects().is_empty() && !host.held.is_empty() {
        let last = log.entries.len().saturating_sub(1);
        return Err(fail(
            last,
            format!(
                "accounting: closed with acquisitions never released: {:?}",
                host.held
            ),
        ));
    }
    Ok(report)
}

/// The host's recorded `compare` answers, given back in order.
struct Given<'a> {
    answers: std::slice::Iter<'a, std::cmp::Ordering>,
    over: bool,
}

impl<'a> Given<'a> {
    fn new(answers: &'a [std::cmp::Ordering]) -> Given<'a> {
        Given {
            answers: answers.iter(),
            over: false,
        }
    }

    /// The next answer; asked past the last, `Equal` and remembered.
    fn next(&mut self) -> std::cmp::Ordering {
        self.answers.next().copied().unwrap_or_else(|| {
            self.over = true;
            std::cmp::Ordering::Equal
        })
    }

    /// Whether the loader asked exactly as often as the log recorded.
    fn all_asked(self) -> Result<(), String> {
        let left = self.answers.count();
        if self.over {
            return Err("the loader asked compare more often than the log recorded".into());
        }
        if left > 0 {
            return Err(format!(
                "the loader asked compare {left} times fewer than the log recorded"
            ));
        }
        Ok(())
    }
}
