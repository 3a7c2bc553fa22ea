//! Breadth-first exploration of the model's distinct states.
//!
//! Breadth-first order makes every counterexample a shortest one. A state is stored once, as a
//! packed `u64` (see [`Packer`]) in an open-addressing table; the frontier of the level being
//! explored is the only other storage.

use super::{Action, Bounds, Invariant, Model, Packer, State};

use std::time::{Duration, Instant};

/// How to explore.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Stop at the first violated invariant, as TLC does.
    pub stop_at_first: bool,
    /// Print progress on stderr once the run has taken longer than a second.
    pub progress: bool,
}

/// One step of a counterexample: the action taken (`None` for `Init`) and the state it reached.
#[derive(Clone, Debug)]
pub struct Step {
    /// The action taken; `None` for `Init`.
    pub action: Option<Action>,
    /// The state it reached.
    pub state: State,
}

/// The outcome for one invariant.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The invariant judged.
    pub invariant: Invariant,
    /// The shortest path from `Init` to a violating state, if there is one; for a step
    /// invariant, to a violating step, which is the trace's last.
    pub trace: Option<Vec<Step>>,
}

impl Verdict {
    /// No reachable state violates the invariant (or none was found before the stop).
    pub fn holds(&self) -> bool {
        self.trace.is_none()
    }
}

/// What an exploration found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The constants explored.
    pub bounds: Bounds,
    /// Distinct states reached (TLC's "distinct states found").
    pub distinct_states: u64,
    /// Successor states generated, duplicates included (TLC's "states generated").
    pub transitions: u64,
    /// The length of the longest shortest path from `Init`.
    pub depth: u32,
    /// False when `stop_at_first` ended the run early.
    pub complete: bool,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
    /// Bytes of explorer memory per stored state (array entries plus hash table slots).
    pub bytes_per_state: f64,
    /// One verdict per invariant, step invariants included, in `Invariant::ALL` order.
    pub verdicts: Vec<Verdict>,
}

impl Report {
    /// The verdict on `inv`.
    pub fn verdict(&self, inv: Invariant) -> &Verdict {
        self.verdicts
            .iter()
            .find(|v| v.invariant == inv)
            .expect("every invariant has a verdict")
    }

    /// Whether `inv` holds.
    pub fn holds(&self, inv: Invariant) -> bool {
        self.verdict(inv).holds()
    }

    /// Distinct states per second of wall-clock time.
    pub fn states_per_second(&self) -> f64 {
        self.distinct_states as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

fn hash(word: u64) -> u64 {
    // The splitmix64 finaliser: cheap, and every input bit reaches every output bit.
    let mut z = word.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The visited set: open addressing with linear probing over packed states, so a lookup
/// touches one cache line. No parent links are kept; a trace is rebuilt by a second search
/// that is bounded by the violation's depth ([`trace_to`]).
struct Visited {
    slots: Vec<u64>,
    len: usize,
}

/// No state packs to this: a packed state has at most 64 bits set, and `Packer` uses fewer.
const EMPTY: u64 = u64::MAX;

impl Visited {
    fn new() -> Visited {
        Visited {
            slots: vec![EMPTY; 1 << 16],
            len: 0,
        }
    }

    /// Adds `word` if it is new; returns whether it was.
    fn insert(&mut self, word: u64) -> bool {
        self.insert_hashed(word, hash(word))
    }

    /// [`Visited::insert`], given `hash(word)`.
    fn insert_hashed(&mut self, word: u64, h: u64) -> bool {
        // Keep the load under 70%, where linear probing stays short.
        if (self.len + 1) * 10 > self.slots.len() * 7 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let k = self.slots[i];
            if k == word {
                return false;
            }
            if k == EMPTY {
                self.slots[i] = word;
                self.len += 1;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// Loads the first slot each of `hashes` probes, and nothing else: the loads do not
    /// depend on each other, so the processor overlaps their cache misses, and the inserts
    /// that follow find the slots cached. A probe is one random access into a table far
    /// larger than the caches, so on its own each insert waits for memory once.
    fn touch(&self, hashes: impl Iterator<Item = u64>) {
        let mask = self.slots.len() - 1;
        let mut any = 0u64;
        for h in hashes {
            any ^= self.slots[h as usize & mask];
        }
        std::hint::black_box(any);
    }

    fn grow(&mut self) {
        let doubled = vec![EMPTY; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for w in old.into_iter().filter(|&w| w != EMPTY) {
            let mut i = hash(w) as usize & mask;
            while self.slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = w;
        }
    }

    fn bytes_per_state(&self, peak_frontier: usize) -> f64 {
        let bytes = self.slots.len() * 8 + peak_frontier * 8;
        bytes as f64 / self.len.max(1) as f64
    }
}

/// A shortest path from `Init` to `target`, which a breadth-first search reached at `depth`.
pub(super) fn trace_to(model: &Model, packer: &Packer, target: u64, depth: u32) -> Vec<Step> {
    use std::collections::HashMap;
    let init = packer.pack(&model.init());
    let mut parent: HashMap<u64, (u64, Action)> = HashMap::new();
    let mut frontier = vec![init];
    let mut seen = std::collections::HashSet::from([init]);
    'search: for _ in 0..depth {
        let mut next = Vec::new();
        for &w in &frontier {
            let s = packer.unpack(w).expect("stored states decode");
            let mut found = false;
            model.next(&s, |a, t| {
                let tw = packer.pack(&t);
                if seen.insert(tw) {
                    parent.insert(tw, (w, a));
                    next.push(tw);
                    found |= tw == target;
                }
            });
            if found {
                break 'search;
            }
        }
        frontier = next;
    }
    let unpack = |w: u64| packer.unpack(w).expect("stored states decode");
    let mut steps = Vec::new();
    let mut w = target;
    while let Some(&(p, a)) = parent.get(&w) {
        steps.push(Step {
            action: Some(a),
            state: unpack(w),
        });
        w = p;
    }
    assert_eq!(w, init, "the trace search reaches the violating state");
    steps.push(Step {
        action: None,
        state: unpack(init),
    });
    steps.reverse();
    steps
}

/// Every state reachable from `Init`, packed, in breadth-first order (so the first of them to
/// satisfy a predicate is one nearest `Init`).
pub(super) fn reachable(model: &Model, packer: &Packer) -> Vec<u64> {
    let mut visited = Visited::new();
    let init = packer.pack(&model.init());
    visited.insert(init);
    let mut all = vec![init];
    let mut done = 0;
    while done < all.len() {
        let end = all.len();
        for n in done..end {
            let s = packer.unpack(all[n]).expect("stored states decode");
            model.next(&s, |_, t| {
                let tw = packer.pack(&t);
                if visited.insert(tw) {
                    all.push(tw);
                }
            });
        }
        done = end;
    }
    all
}

/// Frontier states whose successors are generated before any is inserted.
const CHUNK: usize = 16;

/// Where an invariant was first violated: the state at `depth`, or for a step invariant the
/// step from that state by `step`'s action to its state.
#[derive(Clone, Copy, Debug)]
struct Found {
    word: u64,
    depth: u32,
    step: Option<(Action, State)>,
}

/// Explores every state reachable from `Init` under `bounds`, checking the state invariants
/// in every state and the step invariants on every transition.
pub fn explore(bounds: Bounds, options: Options) -> Result<Report, String> {
    let packer = Packer::new(&bounds)?;
    let model = Model::new(bounds);
    let start = Instant::now();
    let mut visited = Visited::new();
    // The first violation of each invariant, in `Invariant::ALL` order.
    let mut violated: Vec<Option<Found>> = vec![None; Invariant::ALL.len()];
    let init = model.init();
    let init_word = packer.pack(&init);
    visited.insert(init_word);
    let mut stop = check(&model, &init, (init_word, 0), &mut violated) && options.stop_at_first;

    let mut transitions = 0u64;
    let mut depth = 0u32;
    let mut frontier = vec![init_word];
    let mut next_frontier = Vec::new();
    let mut peak_frontier = 1usize;
    let mut explored = 0u64;
    let mut last_progress = start;
    let mut next_report = 65_536u64;
    // Successors are generated for a chunk of the frontier, their slots touched together,
    // then inserted in generation order. The set of states found at each depth, and so every
    // count in the report, is what a state-at-a-time search finds.
    let mut batch: Vec<(u64, u64, State)> = Vec::with_capacity(CHUNK * 8);
    // The steps of one state that switch the coverage: the only ones a step invariant judges.
    let mut switches: Vec<(Action, State)> = Vec::new();
    while !stop && !frontier.is_empty() {
        for chunk in frontier.chunks(CHUNK) {
            for &word in chunk {
                let s = packer.unpack(word).expect("stored states decode");
                model.next(&s, |a, t| {
                    if Invariant::judges_step(&s, &t) {
                        switches.push((a, t));
                    }
                    let tw = packer.pack(&t);
                    batch.push((tw, hash(tw), t));
                });
                for (a, t) in switches.drain(..) {
                    stop |= check_step(&model, (&s, word, depth), a, &t, &mut violated)
                        && options.stop_at_first;
                }
            }
            visited.touch(batch.iter().map(|&(_, h, _)| h));
            for (tw, h, t) in batch.drain(..) {
                if stop {
                    break;
                }
                transitions += 1;
                if visited.insert_hashed(tw, h) {
                    next_frontier.push(tw);
                    stop =
                        check(&model, &t, (tw, depth + 1), &mut violated) && options.stop_at_first;
                }
            }
            explored += chunk.len() as u64;
            if stop {
                break;
            }
            if options.progress && explored >= next_report {
                next_report = explored + 65_536;
                let now = Instant::now();
                if now - start > Duration::from_secs(1)
                    && now - last_progress > Duration::from_secs(1)
                {
                    last_progress = now;
                    eprintln!(
                        "loader-check: {} distinct states, depth {}, {:.1}s",
                        visited.len,
                        depth,
                        (now - start).as_secs_f64()
                    );
                }
            }
        }
        peak_frontier = peak_frontier.max(frontier.len() + next_frontier.len());
        if !next_frontier.is_empty() {
            depth += 1;
        }
        std::mem::swap(&mut frontier, &mut next_frontier);
        next_frontier.clear();
    }
    let elapsed = start.elapsed();

    let verdicts = Invariant::ALL
        .iter()
        .zip(&violated)
        .map(|(&invariant, v)| Verdict {
            invariant,
            trace: v.map(|f| {
                let mut trace = trace_to(&model, &packer, f.word, f.depth);
                if let Some((action, state)) = f.step {
                    trace.push(Step {
                        action: Some(action),
                        state,
                    });
                }
                trace
            }),
        })
        .collect();
    Ok(Report {
        bounds,
        distinct_states: visited.len as u64,
        transitions,
        depth,
        complete: !stop,
        elapsed,
        bytes_per_state: visited.bytes_per_state(peak_frontier),
        verdicts,
    })
}

/// Checks every state invariant not yet violated in `s`, found at `at` (its word and depth);
/// returns whether one is violated now.
fn check(model: &Model, s: &State, at: (u64, u32), violated: &mut [Option<Found>]) -> bool {
    let mut any = false;
    for (slot, inv) in violated.iter_mut().zip(Invariant::ALL) {
        if slot.is_none() && !inv.is_step() && !inv.holds(model, s) {
            *slot = Some(Found {
                word: at.0,
                depth: at.1,
                step: None,
            });
            any = true;
        }
    }
    any
}

/// Checks every step invariant not yet violated on the step from `from` (a state, its word and
/// its depth) by `a` to `t`; returns whether one is violated now.
fn check_step(
    model: &Model,
    from: (&State, u64, u32),
    a: Action,
    t: &State,
    violated: &mut [Option<Found>],
) -> bool {
    let (s, word, depth) = from;
    let mut any = false;
    for (slot, inv) in violated.iter_mut().zip(Invariant::ALL) {
        if slot.is_none() && inv.is_step() && !inv.holds_step(model, s, t) {
            *slot = Some(Found {
                word,
                depth,
                step: Some((a, *t)),
            });
            any = true;
        }
    }
    any
}
