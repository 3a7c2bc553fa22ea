//! The simulation's runner: a seeded op list, and a run from a fresh host to its close.

use super::host::{Host, Violation};
use super::source::Source;
use super::Op;
use crate::loader::Config;

/// A seeded op list: the same seed gives the same run. It includes filter changes
/// ([`Op::Hide`]), answers with the host's count ([`Op::DeliverCounted`]) and, with
/// `failures`, host bugs: failed reads, empty pages that repeat
/// their read's cursor ([`Op::StallEmpty`]) and `issue` callbacks that throw
/// ([`Op::IssueThrows`]).
pub fn random_ops(seed: u64, n: usize, failures: bool) -> Vec<Op> {
    let mut rng = seed;
    let mut next = move || {
        rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
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
                65..=70 => Op::DeleteRanged { index: a },
                71..=74 => Op::Delete { index: a },
                75..=82 => Op::Window {
                    start: a % 120,
                    len: 1 + b % 60,
                },
                83..=86 => Op::WindowLocated {
                    start: a % 120,
                    len: 1 + b % 20,
                    answer: b as u8,
                },
                87..=93 => Op::Tick { ms: a % 6000 },
                94..=96 => Op::Retry,
                97 => Op::Invalidate,
                98 => Op::DeleteLying { index: a },
                _ => Op::Jump { index: a },
            }
        })
        .collect()
}

/// Runs `ops`, then settles down and closes, checking every property on the way.
pub fn run(config: Config, source: Source, ops: &[Op]) -> Result<Host, Violation> {
    let mut h = Host::new(config, source);
    h.apply(Op::Window { start: 0, len: 20 })?;
    for &op in ops {
        h.apply(op)?;
    }
    h.settle_down()?;
    let ended = h.clone();
    h.close()?;
    Ok(ended)
}
