//! The simulation's runner: seeded op lists (the general mix, and one for the cost
//! properties on long sources), and a run from a fresh host to its close.

use super::host::{Host, Violation};
use super::source::Source;
use super::Op;
use crate::loader::Config;

/// SplitMix64 from `seed`: the op lists' random numbers.
fn splitmix(seed: u64) -> impl FnMut() -> u64 {
    let mut rng = seed;
    move || {
        rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A seeded op list: the same seed gives the same run. It includes filter changes
/// ([`Op::Hide`]), answers with the host's count ([`Op::DeliverCounted`]) and, with
/// `failures`, host bugs: failed reads, empty pages that repeat
/// their read's cursor ([`Op::StallEmpty`]) and `issue` callbacks that throw
/// ([`Op::IssueThrows`]).
pub fn random_ops(seed: u64, n: usize, failures: bool) -> Vec<Op> {
    let mut next = splitmix(seed);
    (0..n)
        .map(|_| {
            let r = next();
            let a = (r >> 8) as u16;
            let b = (r >> 24) as u16;
            // About one op in 40 changes the filter, one answers with the host's count of the
            // items before the page (the source's, now: over a view the source changed under,
            // it may disagree with the view's numbering), and with `failures` one more answers
            // an empty page that repeats its read's cursor.
            match (r >> 48) % 40 {
                0 => return Op::Hide { mask: b as u8 },
                3 => return Op::DeliverCounted { index: a },
                1 if failures => return Op::StallEmpty { index: a },
                2 if failures => return Op::IssueThrows,
                _ => {}
            }
            match r % 100 {
                0..=46 => Op::Deliver {
                    index: a,
                    fresh: b.is_multiple_of(2),
                },
                47 => Op::Abandon { index: a },
                48..=49 => Op::Drop { index: a },
                50..=57 if failures => Op::Fail { index: a },
                50..=61 => Op::InsertRanged { key: a as u8 },
                62..=64 => Op::Insert { key: a as u8 },
                65..=70 => Op::DeleteRanged { index: a.into() },
                71..=74 => Op::Delete { index: a },
                75..=82 => Op::Window {
                    start: a % 120,
                    len: 1 + b % 60,
                },
                83..=86 => Op::WindowLocated {
                    start: (a % 120).into(),
                    len: 1 + b % 20,
                    answer: b as u8,
                },
                87..=93 => Op::Tick { ms: a % 6000 },
                94..=96 => Op::Retry,
                97 => Op::Invalidate,
                98 => Op::DeleteLying { index: a },
                _ => Op::Jump { index: a.into() },
            }
        })
        .collect()
}

/// A seeded op list for the cost properties (`sim::cost`) over a source of `len` items: far
/// moves with `locate` answering right and jumps (to anywhere, and near the source's end so
/// that appends follow a view that holds it), near moves with `locate`, ranged deletes near
/// the last target and ranged inserts, failures, abandons, drops, ticks, retries and appends,
/// interleaved with answers in any order, so that most events come with reads in flight.
/// No whole invalidation, filter or host bug: those promise no cost and would close the
/// budgets. Moves with `locate` answering wrong are one in a hundred.
pub fn cost_ops(seed: u64, n: usize, len: u32) -> Vec<Op> {
    let mut next = splitmix(seed ^ 0x5851_f42d_4c95_7f2d);
    let len = len.max(1);
    let mut target = 0u32;
    (0..n)
        .map(|_| {
            let r = next();
            let a = (r >> 8) as u16;
            let b = (r >> 24) as u16;
            let far = (r >> 32) as u32 % len;
            let near = |t: u32| t.saturating_add(u32::from(b % 200)).saturating_sub(100) % len;
            match r % 100 {
                0..=54 | 93..=99 => Op::Deliver {
                    index: a,
                    fresh: b.is_multiple_of(2),
                },
                55..=59 => {
                    target = far;
                    Op::WindowLocated {
                        start: far,
                        len: 10 + a % 50,
                        answer: 0,
                    }
                }
                60..=62 => {
                    target = far;
                    Op::Jump { index: far }
                }
                63..=65 => {
                    target = near(target);
                    Op::WindowLocated {
                        start: target,
                        len: 10 + a % 50,
                        answer: 0,
                    }
                }
                66 => Op::WindowLocated {
                    start: far,
                    len: 10 + a % 50,
                    answer: 2,
                },
                67..=70 => Op::DeleteRanged {
                    index: near(target),
                },
                71 => Op::InsertRanged { key: a as u8 },
                72..=76 => Op::Fail { index: a },
                77 => Op::Abandon { index: a },
                78..=79 => Op::Drop { index: a },
                80..=86 => Op::Tick { ms: a % 3000 },
                87..=88 => Op::Retry,
                89..=90 => Op::Append {
                    items: 1 + (b % 3) as u8,
                },
                _ => {
                    target = len.saturating_sub(u32::from(b % 40));
                    Op::Jump { index: target }
                }
            }
        })
        .collect()
}

/// Runs `ops`, then settles down and closes, checking every property on the way, the cost
/// properties (`sim::cost`) among them.
pub fn run(config: Config, source: Source, ops: &[Op]) -> Result<Host, Violation> {
    let mut h = Host::new(config, source).with_costs();
    h.apply(Op::Window { start: 0, len: 20 })?;
    for &op in ops {
        h.apply(op)?;
    }
    h.settle_down()?;
    let ended = h.clone();
    h.close()?;
    Ok(ended)
}
