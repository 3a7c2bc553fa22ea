//! The loader checker's search: breadth-first over canonical states to a depth, with a
//! shortest trace to the first violation of each configuration, and its replay.

use super::event::{apply, apply_prepared, apply_unjudged, enabled, host_op, Event};
use super::props::{after_event, progress, retry_reset, Property, Walks};
use super::{canon, text, Settings, State};
use rustc_hash::FxHashSet as HashSet;
use std::hash::{Hash, Hasher};

/// A property violated, with the shortest trace that violates it.
#[derive(Clone, Debug)]
pub struct Violation {
    /// The property.
    pub property: Property,
    /// What was wrong.
    pub message: String,
    /// The configuration explored.
    pub settings: Settings,
    /// The events from the start state, the last one violating the property (or, for
    /// progress, leading to the state it fails from).
    pub trace: Vec<Event>,
}

/// What a check explored and found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Configurations explored.
    pub configurations: usize,
    /// Distinct canonical states, over all configurations.
    pub states: u64,
    /// Events applied.
    pub transitions: u64,
    /// The deepest level reached.
    pub depth: u32,
    /// The most honest answers a progress check needed to reach quiescence.
    pub worst_progress: usize,
    /// The violations: at most one per configuration (its shortest).
    pub violations: Vec<Violation>,
}

/// Runs `f`, a panic in it reported as a violation of [`Property::NoPanic`].
fn guarded<T>(f: impl FnOnce() -> Result<T, (Property, String)>) -> Result<T, (Property, String)> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => {
            let m = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err((Property::NoPanic, format!("panicked: {m}")))
        }
    }
}

/// How states are deduplicated: by the structural canonical form (the default), or by the
/// `Debug`-text form it replaced (`loader-check --loader --canon text`, for comparison).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dedup {
    /// The structural form (`canon::Form::Fields`).
    #[default]
    Fields,
    /// The structural form restricted to what the text form saw (`canon::Form::AsText`):
    /// it finds the same states as [`Dedup::Text`].
    AsText,
    /// The `Debug` text of the state, parsed and renumbered (`text`).
    Text,
}

/// The state's key under `dedup`, and its host's structural key when `dedup` computed it
/// (for the progress walks).
fn key(st: &State, dedup: Dedup, e: &mut canon::Enc) -> (u128, Option<u128>) {
    match dedup {
        Dedup::Fields => {
            let (host, state) = canon::keys(st, canon::Form::Fields, e);
            (state, Some(host))
        }
        Dedup::AsText => (canon::keys(st, canon::Form::AsText, e).1, None),
        Dedup::Text => (text_key(st), None),
    }
}

fn text_key(st: &State) -> u128 {
    let text = text::canonical(&format!("{:?}", st.host), st.host.now);
    let mut a = std::collections::hash_map::DefaultHasher::new();
    let mut b = std::collections::hash_map::DefaultHasher::new();
    (0u8, &text, st.changes, st.moves, st.faults, st.jumps).hash(&mut a);
    (1u8, &text, st.changes, st.moves, st.faults, st.jumps).hash(&mut b);
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

/// Explores each configuration in `settings` on `threads` threads; with `stop_at_first`,
/// no configuration starts after one found a violation. `each` is called after each
/// configuration with its index and report. Violations are listed in configuration order.
pub fn check(
    settings: &[Settings],
    stop_at_first: bool,
    threads: usize,
    each: &(dyn Fn(usize, &Report) + Sync),
) -> Report {
    check_with(settings, stop_at_first, threads, Dedup::default(), each)
}

/// [`check`], deduplicating states by `dedup`.
pub fn check_with(
    settings: &[Settings],
    stop_at_first: bool,
    threads: usize,
    dedup: Dedup,
    each: &(dyn Fn(usize, &Report) + Sync),
) -> Report {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let found = AtomicBool::new(false);
    let done: Mutex<Vec<(usize, Report)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= settings.len() || (stop_at_first && found.load(Ordering::Relaxed)) {
                    break;
                }
                let r = explore_one(&settings[i], dedup);
                each(i, &r);
                if !r.violations.is_empty() {
                    found.store(true, Ordering::Relaxed);
                }
                done.lock().expect("no worker panicked").push((i, r));
            });
        }
    });
    let mut done = done.into_inner().expect("no worker panicked");
    done.sort_by_key(|x| x.0);
    let mut total = Report::default();
    for (_, r) in done {
        total.configurations += 1;
        total.states += r.states;
        total.transitions += r.transitions;
        total.depth = total.depth.max(r.depth);
        total.worst_progress = total.worst_progress.max(r.worst_progress);
        total.violations.extend(r.violations);
    }
    total
}

fn explore_one(s: &Settings, dedup: Dedup) -> Report {
    let mut r = Report {
        configurations: 1,
        ..Report::default()
    };
    let start = s.start();
    let mut enc = canon::Enc::new(0, canon::Form::Fields);
    // Today's checker took every progress walk whole; the structural forms remember them.
    let mut walks = (dedup != Dedup::Text).then(Walks::default);
    let mut seen: HashSet<u128> = HashSet::default();
    let mut firsts = Vec::new();
    let (k, host_key) = key(&start, dedup, &mut enc);
    seen.insert(k);
    // Each node's parent and the event that reached it, for traces.
    let mut nodes: Vec<(u32, Option<Event>)> = vec![(u32::MAX, None)];
    let mut frontier = vec![(0u32, Box::new(start), host_key)];
    let trace = |nodes: &[(u32, Option<Event>)], mut at: u32| {
        let mut t = Vec::new();
        while let Some(e) = nodes[at as usize].1 {
            t.push(e);
            at = nodes[at as usize].0;
        }
        t.reverse();
        t
    };
    if s.depth == 0 {
        // The start state alone: judged below as the last level.
        frontier.clear();
        r.states = 1;
        if let Err((property, message)) =
            guarded(|| progress(&s.start(), s, walks.as_mut(), host_key, None))
        {
            r.violations.push(Violation {
                property,
                message,
                settings: *s,
                trace: Vec::new(),
            });
        }
        return r;
    }
    for level in 0..s.depth {
        r.depth = level;
        // The states of the last level are not expanded: each is judged (progress) as it is
        // found and dropped, so that the frontier never holds the widest level's states, only
        // their fingerprints in `seen` (memory, docs/DESIGN.md). A progress violation found
        // there waits for the rest of this level, whose own violations have shorter traces
        // or come first in breadth-first order, as they did when the last level was stored.
        let last = level + 1 == s.depth;
        let mut deferred: Option<Violation> = None;
        let mut next = Vec::new();
        for (node, st, host_key) in frontier.drain(..) {
            r.states += 1;
            // The walks' first steps from `st`, which its events of the same op take over.
            firsts.clear();
            let share = walks.is_some().then_some(&mut firsts);
            match guarded(|| progress(&st, s, walks.as_mut(), host_key, share)) {
                Ok(n) => r.worst_progress = r.worst_progress.max(n),
                Err((property, message)) => {
                    r.violations.push(Violation {
                        property,
                        message,
                        settings: *s,
                        trace: trace(&nodes, node),
                    });
                    return r;
                }
            }
            for e in enabled(&st, s) {
                r.transitions += 1;
                // A walk took this event's step already: its host, and that host's key.
                let walked = match firsts.is_empty() {
                    true => None,
                    false => host_op(&st.host, s, e).and_then(|op| {
                        let f = firsts.iter_mut().find(|f| f.op == op)?;
                        Some((f.host.take()?, f.key))
                    }),
                };
                let (mut succ, walked_key) = match walked {
                    // The walk's host, with the state's budgets (copied, not the host again).
                    Some((host, k)) => (Box::new(State { host, ..*st }), Some(k)),
                    None => (Box::new((*st).clone()), None),
                };
                // The properties of the event, after every event; those of the state it
                // reaches, once per canonical state (they do not depend on the ids' names).
                let judged = guarded(|| match walked_key {
                    Some(_) => apply_prepared(&mut succ, s, e, &st.host),
                    None => apply_unjudged(&mut succ, s, e),
                })
                .and_then(|answered| {
                    retry_reset(&succ.host.loader, answered)?;
                    let (k, host_key) = match walked_key {
                        Some(host) => (canon::state_key(host, &succ), Some(host)),
                        None => key(&succ, dedup, &mut enc),
                    };
                    if seen.insert(k) {
                        after_event(&succ, answered)?;
                        Ok(Some(host_key))
                    } else {
                        Ok(None)
                    }
                });
                match judged {
                    Ok(Some(host_key)) if last => {
                        r.states += 1;
                        r.depth = s.depth;
                        if deferred.is_some() {
                            continue;
                        }
                        match guarded(|| progress(&succ, s, walks.as_mut(), host_key, None)) {
                            Ok(n) => r.worst_progress = r.worst_progress.max(n),
                            Err((property, message)) => {
                                let mut t = trace(&nodes, node);
                                t.push(e);
                                deferred = Some(Violation {
                                    property,
                                    message,
                                    settings: *s,
                                    trace: t,
                                });
                            }
                        }
                    }
                    Ok(Some(host_key)) => {
                        nodes.push((node, Some(e)));
                        next.push(((nodes.len() - 1) as u32, succ, host_key));
                    }
                    Ok(None) => {}
                    Err((property, message)) => {
                        let mut t = trace(&nodes, node);
                        t.push(e);
                        r.violations.push(Violation {
                            property,
                            message,
                            settings: *s,
                            trace: t,
                        });
                        return r;
                    }
                }
            }
        }
        if let Some(v) = deferred {
            r.violations.push(v);
            return r;
        }
        if next.is_empty() {
            break;
        }
        r.depth = level + 1;
        frontier = next;
    }
    r
}

/// Runs `trace` from the start state of `s`, checking every property after each event and
/// progress from each state: the first violation, if any.
pub fn replay(s: &Settings, trace: &[Event]) -> Result<(), (Property, String)> {
    replay_from(&mut s.start(), s, trace)
}

/// [`replay`], with the loader's run recorded to `sink` (a log for `loader-check --replay`):
/// the trace's events as far as they go, then the loader closed.
pub fn replay_recorded(
    s: &Settings,
    trace: &[Event],
    sink: crate::loader::Sink,
) -> Result<(), (Property, String)> {
    let mut st = s.start_recorded(Some(sink));
    let r = replay_from(&mut st, s, trace);
    st.host.loader.close();
    let _ = st.host.collect();
    st.host.loader.flush_recording();
    r
}

fn replay_from(st: &mut State, s: &Settings, trace: &[Event]) -> Result<(), (Property, String)> {
    guarded(|| progress(st, s, None, None, None))?;
    for (i, &e) in trace.iter().enumerate() {
        if !enabled(st, s).contains(&e) {
            return Err((
                Property::Refused,
                format!("event {i} ({e:?}) is not enabled here"),
            ));
        }
        guarded(|| apply(st, s, e))?;
        guarded(|| progress(st, s, None, None, None))?;
    }
    Ok(())
}
