//! Writes the simulated part of the corpus of recorded runs (`tests/replay/`): seeded runs of
//! the simulated host (`loader::sim`), honest and hostile (failed reads, empty pages that
//! repeat their cursor, `issue` callbacks that throw, ranged invalidations that name the
//! wrong range, filtered stretches), each recorded from the loader's creation to its close.
//!
//! ```text
//! cargo run --release --features testing --example record_corpus -- tests/replay
//! ```
//!
//! `scripts/record_corpus.sh` runs it with the other recordings (the loader checker's
//! regressions, the C example, a C test and the demo).

use loader::replay::Memory;
use loader::sim::{random_ops, Host, Op, Source};
use loader::{Config, Loader};

/// One seeded run, recorded: the window opened, the ops, every read answered, the close.
fn record(config: Config, source: Source, seed: u64, ops: usize, hostile: bool) -> String {
    let log = Memory::new();
    let mut h = Host::new(config, source);
    h.loader = Loader::recorded(config, log.sink()).expect("a valid config");
    let run = (|| -> Result<(), String> {
        h.apply(Op::Window { start: 0, len: 20 })?;
        for op in random_ops(seed, ops, hostile) {
            h.apply(op)?;
        }
        h.settle_down()?;
        h.close()
    })();
    if let Err(e) = run {
        panic!("seed {seed}: the simulated run failed: {e}");
    }
    h.loader.flush_recording();
    log.text()
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tests/replay".into());
    let base = Config {
        page_size: 7,
        prefetch_distance: 5,
        backoff_initial_ms: 1,
        backoff_max_ms: 8,
        ..Config::default()
    };
    let runs = [
        ("sim-honest", base, Source::numbered(60), 1, false),
        (
            "sim-honest-bounded",
            Config {
                max_pages: 4,
                drop_margin: 10,
                ..base
            },
            Source::numbered(80),
            2,
            false,
        ),
        ("sim-hostile", base, Source::numbered(60), 3, true),
        (
            "sim-hostile-filtered",
            Config {
                max_pages: 6,
                max_auto_retries: 1,
                read_timeout_ms: 50,
                ..base
            },
            Source::with_items(70, 16).with_hidden_keys(0b0110_0000_0000_0110),
            4,
            true,
        ),
        (
            "sim-hostile-lossy",
            Config {
                recheck_full: false,
                commit_overtaken: false,
                ..base
            },
            Source::numbered(50),
            5,
            true,
        ),
    ];
    for (name, config, source, seed, hostile) in runs {
        let text = record(config, source, seed, 150, hostile);
        let path = format!("{dir}/{name}.log");
        std::fs::write(&path, &text).expect("write the log");
        println!(
            "{path}: {} lines, {} bytes",
            text.lines().count(),
            text.len()
        );
    }
}
