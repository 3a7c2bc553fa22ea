//! Every committed seed, and every input that once crashed a target (fuzz/regressions),
//! replays clean through its target, without libFuzzer.

use std::path::Path;

fn replay(dir: &str, target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        run(&std::fs::read(&path).expect("an input file"));
        n += 1;
    }
    assert!(n > 0, "no inputs in {}", dir.display());
}

#[test]
fn abi_seeds_replay() {
    replay("corpus", "fuzz_abi", libloader_fuzz::abi::run);
}

#[test]
fn abi_regressions_replay() {
    replay("regressions", "fuzz_abi", libloader_fuzz::abi::run);
}

#[test]
fn differential_seeds_replay() {
    replay(
        "corpus",
        "fuzz_differential",
        libloader_fuzz::differential::run,
    );
}

#[test]
fn loader_seeds_replay() {
    replay("corpus", "fuzz_loader", libloader_fuzz::simulation::run);
}

#[test]
fn loader_regressions_replay() {
    replay(
        "regressions",
        "fuzz_loader",
        libloader_fuzz::simulation::run,
    );
}
