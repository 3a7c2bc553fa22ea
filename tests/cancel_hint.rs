//! The cancellation hint, over thousands of random runs of the Rust loader:
//! - every `Cancel` names a read that is outstanding when it is sent;
//! - a read is cancelled exactly when its request is superseded, or a far start lets it go (a
//!   repair's or full read's read, when the window moves far), once; at close, every read
//!   still outstanding and not hinted yet is hinted, so each read gets at most one hint;
//! - a cancelled read may still be answered: a success is classified stale (or, for a
//!   stalled cursor, `CursorStalled`), never current, and a failure is stale.
//!
//! `LOADER_CANCEL_CASES=N` sets the number of runs (default 1,000).

use loader::ledger::St;
use loader::{Answer, Config, Direction, Effect, Kind, Loader};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

#[derive(Clone, Copy, Debug)]
enum Step {
    Answer { index: u8, fail: bool, stall: bool },
    Invalidate,
    Window { start: u8, len: u8 },
    Retry,
    Tick { ms: u16 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (any::<u8>(), prop::bool::weighted(0.15), prop::bool::weighted(0.05))
            .prop_map(|(index, fail, stall)| Step::Answer { index, fail, stall }),
        3 => Just(Step::Invalidate),
        3 => (0u8..40, 1u8..40).prop_map(|(start, len)| Step::Window { start, len }),
        1 => Just(Step::Retry),
        1 => (0u16..2000).prop_map(|ms| Step::Tick { ms }),
    ]
}

/// A host over a source of `len` numbered items; a cursor is the next item's index.
struct Host {
    loader: Loader,
    len: u64,
    /// Outstanding reads: id -> (request, first item, count, cursor bytes, next cursor).
    reads: HashMap<u64, (u64, u64, u32, Vec<u8>, u64)>,
    answered: HashSet<u64>,
    cancels: HashMap<u64, u32>,
    now: u64,
    next_acq: u64,
}

impl Host {
    /// Takes the loader's effects and checks each cancel against the reads outstanding.
    fn collect(&mut self, closing: bool) -> Result<(), TestCaseError> {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(r) => {
                    let at = match r.cursor.len() {
                        8 => u64::from_be_bytes(r.cursor[..].try_into().expect("8 bytes")),
                        _ => 0,
                    };
                    // Forward: the items from `at`; backward: those before it.
                    let (first, end) = match r.direction {
                        Direction::Forward => (at, (at + u64::from(r.limit)).min(self.len)),
                        Direction::Backward => (at.saturating_sub(u64::from(r.limit)), at),
                    };
                    let next = if r.direction == Direction::Forward {
                        end
                    } else {
                        first
                    };
                    let count = (end - first) as u32;
                    self.reads.insert(
                        r.read_id,
                        (r.request_id, first, count, r.cursor.to_vec(), next),
                    );
                }
                Effect::Cancel { read_id } => {
                    prop_assert!(
                        self.reads.contains_key(&read_id),
                        "cancel of read {read_id}, which is not outstanding"
                    );
                    let n = self.cancels.entry(read_id).or_insert(0);
                    *n += 1;
                    prop_assert!(*n == 1, "read {read_id} cancelled {n} times");
                    let _ = closing;
                }
                Effect::Release { .. } | Effect::Changed => {}
            }
        }
        // Exactly the superseded requests' reads have been cancelled, and the reads a far
        // start let go of (a repair's or full read's, whose request is no longer in flight:
        // it failed in the ledger, and a late answer is stale).
        if !closing {
            for (id, (request, ..)) in &self.reads {
                let r = self.loader.ledger().request(*request);
                let sup = r.is_some_and(|r| r.sup);
                let let_go = r.is_none_or(|r| r.kind != Kind::Finite && r.st != St::Inflight);
                prop_assert_eq!(sup || let_go, self.cancels.contains_key(id), "read {}", id);
            }
        }
        Ok(())
    }

    fn answer(&mut self, index: u8, fail: bool, stall: bool) -> Result<(), TestCaseError> {
        let mut ids: Vec<u64> = self.reads.keys().copied().collect();
        if ids.is_empty() {
            return Ok(());
        }
        ids.sort_unstable();
        let id = ids[index as usize % ids.len()];
        let (_, first, count, cursor, next) = self.reads.remove(&id).expect("outstanding");
        self.answered.insert(id);
        let cancelled = self.cancels.contains_key(&id);
        let answer = if fail {
            self.loader.fail(id, 1)
        } else {
            let end = if next == 0 {
                true
            } else {
                first + u64::from(count) == self.len
            };
            let bytes = match (stall && count > 0, next) {
                (true, _) => cursor,
                (false, 0) => Vec::new(),
                (false, n) => n.to_be_bytes().to_vec(),
            };
            self.next_acq += 1;
            self.loader.settle(id, self.next_acq, count, &bytes, end)
        }
        .map_err(|e| TestCaseError::fail(format!("answer to read {id} refused: {e}")))?;
        if cancelled {
            prop_assert_ne!(answer, Answer::Current, "cancelled read {} was current", id);
            if fail {
                prop_assert_eq!(answer, Answer::Stale);
            }
        }
        Ok(())
    }

    fn apply(&mut self, s: Step) -> Result<(), TestCaseError> {
        let r = match s {
            Step::Answer { index, fail, stall } => return self.answer(index, fail, stall),
            Step::Invalidate => self.loader.invalidate(),
            Step::Window { start, len } => self.loader.set_window(start.into(), len.into()),
            Step::Retry => self.loader.retry().map(|_| ()),
            Step::Tick { ms } => {
                self.now += u64::from(ms);
                self.loader.tick(self.now)
            }
        };
        r.map_err(|e| TestCaseError::fail(format!("{s:?} refused: {e}")))
    }
}

fn cases() -> u32 {
    std::env::var("LOADER_CANCEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn cancels_name_superseded_reads_once_and_their_answers_are_stale(
        page_size in 1u32..6,
        prefetch in 0u64..4,
        len in 0u64..60,
        steps in prop::collection::vec(step(), 0..120),
    ) {
        let config = Config {
            page_size,
            prefetch_distance: prefetch,
            backoff_initial_ms: 50,
            backoff_max_ms: 400,
            ..Config::default()
        };
        let mut h = Host {
            loader: Loader::new(config).expect("valid config"),
            len,
            reads: HashMap::new(),
            answered: HashSet::new(),
            cancels: HashMap::new(),
            now: 0,
            next_acq: 0,
        };
        h.apply(Step::Window { start: 0, len: 10 })?;
        h.collect(false)?;
        for s in steps {
            h.apply(s)?;
            h.collect(false)?;
        }
        let outstanding: Vec<u64> = h.reads.keys().copied().collect();
        let before: HashMap<u64, u32> = h.cancels.clone();
        h.loader.close();
        h.collect(true)?;
        for id in outstanding {
            prop_assert_eq!(h.cancels.get(&id).copied(), Some(1), "read {} at close", id);
        }
        for id in &h.answered {
            prop_assert_eq!(h.cancels.get(id), before.get(id), "answered read {} cancelled at close", id);
        }
    }
}
