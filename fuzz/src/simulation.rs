//! `fuzz_loader`: the loader's simulated host (`loader::sim`) driven by fuzz input.
//!
//! The input picks a config, a source (size and how many distinct keys, so ties abound), and a
//! list of [`Op`]s: answers in any order (fresh or as prepared at issue time), failures,
//! stalled cursors (on pages with items and on empty ones), filters that hide keys (so empty
//! pages with advancing cursors abound), inserts and deletes (reported whole, reported with
//! the exact range they changed, or, by a lying host, with a range that misses the change),
//! window moves, jumps, time, retries and bare invalidations. Ranged reports make the loader
//! repair with bounded reads and rejoin the pages it kept. Reads go both ways (repairs read backward from the anchor, and
//! scrolling back over released pages reads backward); the config's `max_pages` bound, when
//! set, is checked after every op.
//! `sim::run` applies them one by one, checking after every op that the ledger keeps its
//! invariants, that every view page is still held, and that a quiet view equals the source;
//! then answers everything (`settle_down`: the loader must reach quiescence with the window
//! covered) and closes (every acquisition released exactly once). Any violation panics.
//!
//! `sim::run` checks the cost properties too (`loader::sim::cost`): what a jump or a far move
//! with `locate` answering right, a ranged change, a failed page and an append may read, each
//! a budget checked after every op. Far moves with `locate` and appends are decoded when bit
//! 4 of the memory byte is set (tags 12 and 30 then mean them, not a lying delete and a bare
//! invalidation); no committed seed or regression sets it, so each decodes as it did.
//!
//! `LOADER_FUZZ_MUTANT=<name>` turns on one of the loader's test mutants (`loader::mutant`)
//! for the whole run, to show that the checks find the defect it makes (docs/DESIGN.md
//! records the executions each took).
//!
//! `recheck_full` stays on: with it off the harness finds the lost invalidation docs/DESIGN.md
//! describes, by design.

use crate::input::Input;
use loader::sim::{self, Op, Source};
use loader::Config;

/// Ops per run: enough to reach deep states, few enough to keep executions fast.
pub const MAX_OPS: usize = 400;

pub fn decode(data: &[u8]) -> (Config, Source, Vec<Op>) {
    let mut input = Input::new(data);
    let page_size = 1 + input.below(8) as u32;
    let prefetch_distance = input.below(6) as u64;
    // One byte for both memory knobs: its low bits pick `drop_margin`, its high bits
    // `max_pages`, so that small bytes (the committed seeds) keep the bound off.
    let memory = input.byte();
    let costs = memory & 0x10 != 0;
    let config = Config {
        page_size,
        prefetch_distance,
        drop_margin: [0, 0, 3, 15][usize::from(memory % 4)],
        max_pages: [0, 0, 0, 0, 1, 2, 3, 6][usize::from(memory >> 5)],
        max_auto_retries: input.below(4) as u32,
        jitter_seed: u64::from(input.u16()),
        backoff_initial_ms: 50,
        backoff_max_ms: 800,
        ..Config::default()
    };
    let source = Source::with_items(input.below(48), 1 + input.below(6) as u32);
    let mut ops = Vec::new();
    while !input.is_empty() && ops.len() < MAX_OPS {
        ops.push(op(&mut input, costs));
    }
    (config, source, ops)
}

/// Tags added after seeds were committed take values those seeds never use as tags (they
/// deliver with 0, insert with 18 and delete with 21), so every committed seed decodes as it
/// did: `Jump` took 13 from the deliveries, the ranged ops take 12, 19 and 22.
fn op(input: &mut Input, costs: bool) -> Op {
    match input.byte() % 32 {
        12 if costs => Op::WindowLocated {
            start: u32::from(input.byte()),
            len: 1 + u16::from(input.byte() % 60),
            answer: input.byte(),
        },
        30 if costs => Op::Append {
            items: input.byte() % 4,
        },
        0..=11 => Op::Deliver {
            index: u16::from(input.byte()),
            fresh: input.bool(),
        },
        12 => Op::DeleteLying {
            index: u16::from(input.byte()),
        },
        13 => Op::Jump {
            index: u32::from(input.byte()),
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
        18 | 20 => Op::Insert { key: input.byte() },
        19 => Op::InsertRanged { key: input.byte() },
        21 => Op::Delete {
            index: u16::from(input.byte()),
        },
        22 => Op::DeleteRanged {
            index: u32::from(input.byte()),
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

/// The mutant `LOADER_FUZZ_MUTANT` names, on for the whole process, set on the first run.
fn mutant_from_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Ok(name) = std::env::var("LOADER_FUZZ_MUTANT") {
            let m = loader::loader::mutant::Mutant::from_name(&name)
                .unwrap_or_else(|| panic!("no mutant named {name}"));
            loader::loader::mutant::set(Some(m));
        }
    });
}

pub fn run(data: &[u8]) {
    mutant_from_env();
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
    fn the_bound_and_jumps_are_reachable() {
        // page 3, prefetch 1, drop_margin 3 and max_pages 2, no retries, jitter 0, 30 items of
        // 4 keys;
        // then a jump to item 25 and a delivery.
        let (config, source, ops) = decode(&[2, 1, 2 | (5 << 5), 0, 0, 0, 30, 3, 13, 25, 0, 0, 0]);
        assert_eq!((config.drop_margin, config.max_pages), (3, 2));
        assert_eq!(source.len(), 30);
        assert_eq!(ops[0], Op::Jump { index: 25 });
        let (small, _, _) = decode(&[2, 1, 3]);
        assert_eq!((small.drop_margin, small.max_pages), (15, 0));
    }

    #[test]
    fn a_bounded_run_with_jumps_and_a_move_back_passes() {
        // max_pages 1 (the tightest bound): deliveries, a jump near the end, a window far
        // below it (read backward from the first held page), deliveries.
        let d = [0u8, 0, 0];
        let mut data = vec![1, 1, 1 | (4 << 5), 1, 0, 0, 40, 2];
        data.extend(d.repeat(6));
        data.extend([13, 35]);
        data.extend(d.repeat(8));
        data.extend([23, 2, 6]);
        data.extend(d.repeat(10));
        let (config, source, ops) = decode(&data);
        assert_eq!(config.max_pages, 1);
        assert!(ops.contains(&Op::Jump { index: 35 }));
        let ended = sim::run(config, source, &ops).unwrap_or_else(|v| panic!("{v}"));
        let stats = ended.loader.stats();
        assert_eq!(stats.jumps, 1);
        assert!(stats.issued_backward > 0, "{stats:?}");
    }

    #[test]
    fn ranged_reports_reach_ranged_repairs() {
        // page 3, prefetch 1, no bound, 40 items of 6 keys; the window over 30 items, loaded;
        // then an insert and a delete reported with their exact ranges, and a lying delete,
        // each followed by deliveries. The same bytes are the seed `ranged-and-lying`.
        let d = [0u8, 0, 0];
        let mut data = vec![2, 1, 0, 0, 0, 0, 40, 5, 23, 0, 30];
        data.extend(d.repeat(14));
        data.extend([19, 7]);
        data.extend(d.repeat(6));
        data.extend([22, 10]);
        data.extend(d.repeat(6));
        data.extend([12, 5]);
        data.extend(d.repeat(6));
        let (config, source, ops) = decode(&data);
        assert!(ops.contains(&Op::InsertRanged { key: 7 }));
        assert!(ops.contains(&Op::DeleteRanged { index: 10 }));
        assert!(ops.contains(&Op::DeleteLying { index: 5 }));
        let ended = sim::run(config, source, &ops).unwrap_or_else(|v| panic!("{v}"));
        let stats = ended.loader.stats();
        assert_eq!(stats.ranged_invalidations, 3, "{stats:?}");
        assert!(stats.ranged_repairs > 0, "{stats:?}");
    }

    #[test]
    fn far_moves_with_locate_and_appends_decode_with_the_cost_bit() {
        // page 3, prefetch 1, the cost bit (0x10), 47 items of 5 keys; the first window read;
        // a far move with `locate` answering right to item 40, answered; two items
        // appended after a jump to the end, answered. Without the bit, tag 12 is a lying
        // delete (and tag 30 a bare invalidation), as every committed input decodes.
        let d = [0u8, 0, 0];
        let mut data = vec![2, 1, 0x10, 0, 0, 0, 47, 4];
        data.extend(d.repeat(10));
        data.extend([12, 40, 2, 0]);
        data.extend(d.repeat(10));
        data.extend([13, 46]);
        data.extend(d.repeat(10));
        data.extend([30, 2]);
        data.extend(d.repeat(6));
        let (config, source, ops) = decode(&data);
        assert!(ops.contains(&Op::WindowLocated {
            start: 40,
            len: 3,
            answer: 0
        }));
        assert!(ops.contains(&Op::Append { items: 2 }));
        let ended = sim::run(config, source, &ops).unwrap_or_else(|v| panic!("{v}"));
        assert_eq!(ended.far_jumps, 1);
        let costs = ended.costs().expect("sim::run checks the costs");
        assert!(
            costs.met.get("far_move_cost").is_some_and(|&n| n >= 2),
            "{costs:?}"
        );
        assert!(
            costs.met.contains_key(loader::sim::APPEND_COST),
            "{costs:?}"
        );
        data[2] = 0;
        let (_, _, plain) = decode(&data);
        assert!(plain.contains(&Op::DeleteLying { index: 40 }));
    }

    #[test]
    fn a_short_run_passes() {
        run(&[3, 2, 0, 1, 0, 0, 20, 5, 0, 0, 0, 1, 0, 0, 18, 3, 0, 0]);
    }
}
