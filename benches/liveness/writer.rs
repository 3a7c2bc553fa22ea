//! Table (d) of `make bench-liveness`: a writer changing items near the window, each change
//! reported as its exact range, while reads fail at a rate; the reads it costs against the
//! same run without failures.
//!
//! The simulated host of `loader::sim` (which checks every property after every event) holds
//! a numbered source of 2,000 items; the window is [0, 100) (page 50, prefetch 50). Its
//! workers take 20 ms a read: every 20 ms every read outstanding is answered, and the writer,
//! at 200 changes a second, makes four changes meanwhile, alternately an insert (a key among
//! the window's first items) and a delete (of one of the first 150 items), each reported with
//! `invalidate_range`. Each answer fails with probability 0 or 5%; with nothing outstanding
//! the host retries (`retry`) or ticks to the backoff deadline. After `CHANGES` changes it
//! answers everything, failure-free. It counts the reads issued by kind and the items read,
//! over `TRIALS` seeded trials.
//!
//! So every retry comes after the writer's next changes, and a repair failure's retry is a
//! full read (an invalidation since the failure raises the debt to full,
//! `unifiedMinRepairRetry`). A row is the same run with a host that retries at once,
//! as soon as an answer leaves a failure to retry, before the writer's next change.
//!
//! The last rows are the same writer over reads of 1 ms (a local database): five rounds of
//! answers between two changes, so a repair (two or three reads) usually ends before the next
//! change, and a repair read that fails is retried (by the backoff timer, 1 ms) before it: the
//! case the repair retry is for, which resumes the repair at the failed read (a chain read)
//! where the rules before it read the window again (a full read).

use crate::common::rng::Rng;
use loader::sim::{Host, Op, Source};
use loader::Config;

/// Changes per trial.
pub const CHANGES: u64 = 1_000;
/// How changes and reads interleave: `changes` changes, then `rounds` rounds of reads (each
/// answers every read outstanding, or with none retries or ticks).
#[derive(Clone, Copy)]
pub struct Pace {
    pub changes: u64,
    pub rounds: u64,
    /// A read's time, in ms, at 200 changes a second.
    pub read_ms: u64,
}

/// Reads of 20 ms: four changes while a read is out.
pub const SLOW: Pace = Pace {
    changes: 4,
    rounds: 1,
    read_ms: 20,
};
/// Reads of 1 ms: five rounds of reads between two changes.
pub const FAST: Pace = Pace {
    changes: 1,
    rounds: 5,
    read_ms: 1,
};
/// Seeded trials per rate.
pub const TRIALS: u64 = 10;
/// Failure rates, in percent of reads.
pub const RATES: [u64; 2] = [0, 5];
/// The target (issue 35): at 5% failures, at most this many times the failure-free reads.
pub const FACTOR: f64 = 1.5;

/// One row: a failure rate and the mean reads by kind.
pub struct Writer {
    pub pace: Pace,
    pub percent: u64,
    /// The host retries at once, before the writer's next change.
    pub prompt: bool,
    /// Mean reads issued: finite, chain, full.
    pub issued: [f64; 3],
    /// Mean items read.
    pub items: f64,
    /// Mean retries that resumed a failed repair or full read (`Stats::resumed`).
    pub resumed: f64,
}

impl Writer {
    pub fn reads(&self) -> f64 {
        self.issued.iter().sum()
    }
}

/// Answers every read outstanding (failing each with probability `percent`), or, with none
/// outstanding, retries or ticks to the next deadline. A `prompt` host retries as soon as an
/// answer leaves a failure to retry.
fn step(h: &mut Host, rng: &mut Rng, percent: u64, prompt: bool) -> Result<(), String> {
    if h.pending() > 0 {
        for _ in 0..h.pending() {
            let op = if rng.percent(percent) {
                Op::Fail { index: 0 }
            } else {
                Op::Deliver {
                    index: 0,
                    fresh: true,
                }
            };
            h.apply(op)?;
            if prompt && h.pending() == 0 && h.loader.ledger().retry_enabled() {
                h.apply(Op::Retry)?;
            }
        }
        return Ok(());
    }
    let op = if h.loader.ledger().retry_enabled() {
        Op::Retry
    } else if let Some(d) = h.loader.next_deadline() {
        Op::Tick {
            ms: d.saturating_sub(h.now).clamp(1, u64::from(u16::MAX)) as u16,
        }
    } else {
        Op::Tick { ms: 5 }
    };
    h.apply(op)
}

fn trial(
    seed: u64,
    pace: Pace,
    percent: u64,
    prompt: bool,
) -> Result<([u64; 3], u64, u64), String> {
    let config = Config {
        page_size: 50,
        prefetch_distance: 50,
        backoff_initial_ms: 1,
        backoff_max_ms: 4,
        ..Config::default()
    };
    let mut h = Host::new(config, Source::numbered(2_000));
    h.apply(Op::Window { start: 0, len: 100 })?;
    h.settle_down()?;
    let (before, items) = (h.loader.stats().issued, h.loader.stats().items_read);
    let resumed = h.loader.stats().resumed;
    let mut rng = Rng(seed);
    for i in 0..CHANGES {
        let change = if i % 2 == 0 {
            Op::InsertRanged {
                key: rng.below(16) as u8,
            }
        } else {
            Op::DeleteRanged {
                index: rng.below(150) as u32,
            }
        };
        h.apply(change)?;
        if (i + 1) % pace.changes == 0 {
            for _ in 0..pace.rounds {
                step(&mut h, &mut rng, percent, prompt)?;
            }
        }
    }
    h.settle_down()?;
    let after = h.loader.stats().issued;
    let items = h.loader.stats().items_read - items;
    let resumed = h.loader.stats().resumed - resumed;
    Ok(([0, 1, 2].map(|k| after[k] - before[k]), items, resumed))
}

/// At each pace, every rate's row, then, for slow reads, the last rate's with a host that
/// retries at once (with fast reads every retry comes before the next change anyway).
pub fn table() -> Result<Vec<Writer>, String> {
    let last = RATES[RATES.len() - 1];
    let rows = |pace: Pace, prompt_row: bool| {
        RATES
            .iter()
            .map(move |&percent| (pace, percent, false))
            .chain(prompt_row.then_some((pace, last, true)))
    };
    rows(SLOW, true)
        .chain(rows(FAST, false))
        .map(|(pace, percent, prompt)| {
            let (mut sum, mut items, mut resumed) = ([0u64; 3], 0, 0);
            for seed in 0..TRIALS {
                let (t, n, r) = trial(0x5eed_0000 + seed, pace, percent, prompt)?;
                for k in 0..3 {
                    sum[k] += t[k];
                }
                items += n;
                resumed += r;
            }
            Ok(Writer {
                pace,
                percent,
                prompt,
                issued: sum.map(|n| n as f64 / TRIALS as f64),
                items: items as f64 / TRIALS as f64,
                resumed: resumed as f64 / TRIALS as f64,
            })
        })
        .collect()
}
