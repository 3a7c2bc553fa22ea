//! `loader-check --replay LOG`: a recorded run replayed against the production loader and the
//! model (`loader::replay`), and exported as an ITF trace.

use loader::replay::{self, Options};
use std::process::ExitCode;
use std::time::Instant;

pub(crate) const USAGE: &str = "
       loader-check --replay LOG [--itf OUT.json] [--context N] [--no-refine]

  --replay LOG        replay a recorded run (loader_record, LOADER_RECORD) against the
                      production loader: same results and callbacks, the ledger refining the
                      model at every call, the loader's properties after every event; prints
                      the first divergence with the events that led to it
  --itf OUT.json      also write the run as an ITF trace (Apalache, Quint): the model's
                      variables after every call
  --context N         events printed before a divergence (default 12)
  --no-refine         skip the model check (callbacks and properties only)";

/// Runs the replay with the arguments after `--replay`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    let mut it = args.iter();
    let Some(path) = it.next() else {
        eprintln!("loader-check: --replay needs a log file{USAGE}");
        return ExitCode::from(2);
    };
    let mut options = Options::default();
    let mut itf_out = None;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--itf" => match it.next() {
                Some(p) => itf_out = Some(p.clone()),
                None => {
                    eprintln!("loader-check: --itf needs a file");
                    return ExitCode::from(2);
                }
            },
            "--context" => match it.next().and_then(|v| v.parse().ok()) {
                Some(n) => options.context = n,
                None => {
                    eprintln!("loader-check: --context takes a number");
                    return ExitCode::from(2);
                }
            },
            "--no-refine" => options.refine = false,
            other => {
                eprintln!("loader-check: unknown argument {other:?} with --replay{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("loader-check: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let log = match replay::parse(&text) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("loader-check: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let rules = replay::rules_for(log.config.recheck_full, log.config.commit_overtaken);
    let t = Instant::now();
    match replay::replay(&log, options) {
        Ok(r) => {
            if let Some(out) = itf_out {
                if let Err(e) = std::fs::write(&out, replay::itf(path, rules.name(), &r.states)) {
                    eprintln!("loader-check: {out}: {e}");
                    return ExitCode::from(2);
                }
            }
            let model = if options.refine {
                format!(
                    "; the ledger refines {rules} at {} calls along {} model steps{}",
                    r.refined,
                    r.model_steps,
                    match r.unchecked_first {
                        None => String::new(),
                        Some((line, why)) => format!(
                            ", {} calls unchecked (the first at line {line}: {why})",
                            r.unchecked
                        ),
                    }
                )
            } else {
                String::new()
            };
            println!(
                "{path}: replayed {} calls and {} batches of callbacks ({} callbacks), all as recorded{model}; every property held; {:.3}s",
                r.calls,
                r.batches,
                r.effects,
                t.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(d) => {
            print!("{path}: {d}");
            ExitCode::from(1)
        }
    }
}
