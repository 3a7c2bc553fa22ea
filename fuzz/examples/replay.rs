//! Replays fuzz inputs without libFuzzer: `cargo run --example replay -- <target> [-q] <file>...`.
//! With `LOADER_FUZZ_TRACE=1`, `fuzz_abi` prints every call and callback; with
//! `LOADER_FUZZ_STATS=1`, a tally of every checked result by call and code, and `-q` prints
//! no line per file.

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let target = args
        .next()
        .expect("usage: replay <fuzz_abi|fuzz_differential|fuzz_loader> FILE...");
    let run: fn(&[u8]) = match target.as_str() {
        "fuzz_abi" => libloader_fuzz::abi::run,
        "fuzz_differential" => libloader_fuzz::differential::run,
        "fuzz_loader" => libloader_fuzz::simulation::run,
        other => panic!("unknown target {other}"),
    };
    let quiet = args.peek().is_some_and(|a| a == "-q");
    if quiet {
        args.next();
    }
    let mut n = 0;
    for path in args {
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            // A running fuzzer replaces the inputs it reduces: skip the ones gone meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => panic!("{path}: {e}"),
        };
        run(&data);
        n += 1;
        if !quiet {
            println!("{path}: ok");
        }
    }
    libloader_fuzz::abi::print_stats();
    println!("{n} inputs replayed clean");
}
