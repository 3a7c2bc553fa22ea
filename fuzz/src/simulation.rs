//! `fuzz_loader`: the loader's simulated host (`loader::sim`) driven by fuzz input.
//!
//! The input picks a config, a source (size and how many distinct keys, so ties abound), and a
//! list of [`Op`]s: answers in any order (fresh or as prepared at issue time), failures,
//! stalled cursors (on pages with items and on empty ones), filters that hide keys (so empty
//! pages with advancing cursors abound), inserts, deletes, window moves, time, retries and bare invalidations.
//! `sim::run` applies them one by one, checking after every op that the ledger keeps its
//! invariants, that every view page is still held, and that a quiet view equals the source;
//! then answers everything (`settle_down`: the loader must reach quiescence with the window
//! covered) and closes (every acquisition released exactly once). Any violation panics.
//!
//! `recheck_full` stays on: with it off the harness finds the lost invalidation the README
//! describes, by design.

use crate::input::Input;
use loader::loader::Config;
use loader::sim::{self, Op, Source};

/// Ops per run: enough to reach deep states, few enough to keep executions fast.
pub const MAX_OPS: usize = 400;

pub fn decode(data: &[u8]) -> (Config, Source, Vec<Op>) {
    let mut input = Input::new(data);
    let config = Config {
        page_size: 1 + input.below(8) as u32,
        prefetch_distance: input.below(6) as u64,
        drop_margin: [0, 0, 3, 15][input.below(4)],
        max_auto_retries: input.below(4) as u32,
        jitter_seed: u64::from(input.u16()),
        backoff_initial_ms: 50,
        backoff_max_ms: 800,
        ..Config::default()
    };
    let source = Source::with_items(input.below(48), 1 + input.below(6) as u32);
    let mut ops = Vec::new();
    while !input.is_empty() && ops.len() < MAX_OPS {
        ops.push(op(&mut input));
    }
    (config, source, ops)
}

fn op(input: &mut Input) -> Op {
    match input.byte() % 32 {
        0..=13 => Op::Deliver {
            index: u16::from(input.byte()),
            fresh: input.bool(),
        },
        14..=16 => Op::Fail {
            index: u16::from(input.byte()),
        },
        17 => {
            let index = u16::from(input.byte());
            if input.bool() {
                Op::StallEmpty { index }
            } else {
                Op::Stall { index }
            }
        }
        18..=20 => Op::Insert { key: input.byte() },
        21 | 22 => Op::Delete {
            index: u16::from(input.byte()),
        },
        23..=25 => Op::Window {
            start: u16::from(input.byte() % 100),
            len: 1 + u16::from(input.byte() % 60),
        },
        26 => Op::Window {
            start: input.u16(),
            len: input.u16(),
        },
        27 | 28 => Op::Tick {
            ms: input.u16() % 3000,
        },
        29 => Op::Retry,
        30 => Op::Invalidate,
        _ => Op::Hide { mask: input.byte() },
    }
}

pub fn run(data: &[u8]) {
    let (config, source, ops) = decode(data);
    if let Err(violation) = sim::run(config, source.clone(), &ops) {
        panic!(
            "{violation}\nconfig: {config:?}\nsource: {} items {:?}\nops: {ops:?}",
            source.len(),
            source.items()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_decode_to_a_valid_config() {
        for seed in 0..=255u8 {
            let (config, _, _) = decode(&[seed, seed.wrapping_mul(7), 3, 9]);
            assert!(config.validate().is_ok());
            assert!(config.recheck_full);
        }
    }

    #[test]
    fn a_short_run_passes() {
        run(&[3, 2, 0, 1, 0, 0, 20, 5, 0, 0, 0, 1, 0, 0, 18, 3, 0, 0]);
    }
}
