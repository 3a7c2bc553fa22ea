//! `loader-check --loader`: the exhaustive check of the production loader (`loader::check`).

use loader::check::{
    self, bound_grid, far_grid, fault_grid, grid, Dedup, Report, Settings, Violation,
};
use std::process::ExitCode;
use std::time::Instant;

pub(crate) const USAGE: &str = "
       loader-check --loader [--deep] [--stop-at-first] [--json] [--only N]
                            [--canon fields|as-text|text] [--mutant NAME]
                            [--part main|bound|far|faults]
                            [--max-depth N] [--budget N --depth N]

  --loader            explore the production Loader exhaustively: every host event
                      interleaving from the small configurations of loader::check::grid,
                      with the header's promises as named properties; prints states and
                      transitions, and the shortest trace to each violation
  --deep              the wider grid and budgets (longer; not run in CI)
  --only N            only configuration N of the grid
  --verbose           print each configuration's counts as it finishes
  --mutant NAME       run the loader with one fix undone (loader::loader::mutant:
                      rangedRereadsOutside, rangedReadsPast, rangedKeepsBefore,
                      rangedShiftUnsigned, repairShiftsKept, farStartKeepsRepair,
                      aheadNeverReached, rangedAsWhole, appendedInvalidates,
                      pageRetryFull, settledSkipsPump, retryResetBySuccess,
                      pageRetriedForEver)
  --part PART         only the grid's configurations for the pages-held bound (bound),
                      for the cost of far moves (far), for the hosts that repeat a cursor
                      or lose one for good (faults), or the others (main)
  --max-depth N       explore no configuration deeper than N events (with --part main and
                      7: the quick grid as it was before the structural canonical form)
  --budget N          every configuration may make N source changes, N window moves and N
                      faults (the grids allow 1 to 2); for runs outside CI
  --depth N           explore every configuration to N events (raises or lowers the grid's
                      depth; --max-depth only lowers it)
  --canon FORM        how states are deduplicated: fields (the default: the structural
                      canonical form), as-text (the structural form restricted to what the
                      text form saw) or text (the Debug-text form it replaced, slower)";

/// Runs the loader checker with the arguments after `--loader`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    // Every answer that skips the pump is checked against a pump run on a copy.
    loader::loader::guard::set(true);
    let mut deep = false;
    let mut stop_at_first = false;
    let mut json = false;
    let mut only = None;
    let mut verbose = false;
    let mut dedup = Dedup::Fields;
    let mut part: Option<String> = None;
    let mut max_depth = u32::MAX;
    let mut budget: Option<u8> = None;
    let mut depth: Option<u32> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--deep" => deep = true,
            "--stop-at-first" => stop_at_first = true,
            "--json" => json = true,
            "--verbose" => verbose = true,
            "--mutant" => match it
                .next()
                .and_then(|n| loader::loader::mutant::Mutant::from_name(n))
            {
                Some(m) => loader::loader::mutant::set(Some(m)),
                None => {
                    eprintln!("loader-check: --mutant takes a mutant's name");
                    return ExitCode::from(2);
                }
            },
            "--part" => match it.next().map(String::as_str) {
                Some(p @ ("main" | "bound" | "far" | "faults")) => part = Some(p.to_string()),
                _ => {
                    eprintln!("loader-check: --part takes main, bound, far or faults");
                    return ExitCode::from(2);
                }
            },
            "--max-depth" => match it.next().and_then(|v| v.parse::<u32>().ok()) {
                Some(n) => max_depth = n,
                None => {
                    eprintln!("loader-check: --max-depth takes a number of events");
                    return ExitCode::from(2);
                }
            },
            "--budget" => match it.next().and_then(|v| v.parse::<u8>().ok()) {
                Some(n) => budget = Some(n),
                None => {
                    eprintln!("loader-check: --budget takes a number of each kind of event");
                    return ExitCode::from(2);
                }
            },
            "--depth" => match it.next().and_then(|v| v.parse::<u32>().ok()) {
                Some(n) => depth = Some(n),
                None => {
                    eprintln!("loader-check: --depth takes a number of events");
                    return ExitCode::from(2);
                }
            },
            "--canon" => match it.next().map(String::as_str) {
                Some("fields") => dedup = Dedup::Fields,
                Some("as-text") => dedup = Dedup::AsText,
                Some("text") => dedup = Dedup::Text,
                _ => {
                    eprintln!("loader-check: --canon takes fields, as-text or text");
                    return ExitCode::from(2);
                }
            },
            "--only" => match it.next().and_then(|v| v.parse::<usize>().ok()) {
                Some(n) => only = Some(n),
                None => {
                    eprintln!("loader-check: --only takes a configuration index");
                    return ExitCode::from(2);
                }
            },
            other => {
                eprintln!("loader-check: unknown argument {other:?} with --loader");
                return ExitCode::from(2);
            }
        }
    }
    let mut settings = match part.as_deref() {
        Some("bound") => bound_grid(deep),
        Some("far") => far_grid(deep),
        Some("faults") => fault_grid(deep),
        Some(_) => {
            let (bound, far, faults) = (bound_grid(deep), far_grid(deep), fault_grid(deep));
            grid(deep)
                .into_iter()
                .filter(|s| !bound.contains(s) && !far.contains(s) && !faults.contains(s))
                .collect()
        }
        None => grid(deep),
    };
    for s in &mut settings {
        if let Some(n) = budget {
            (s.changes, s.moves, s.faults) = (n, n, n);
        }
        s.depth = depth.unwrap_or(s.depth).min(max_depth);
    }
    if let Some(n) = only {
        match settings.get(n) {
            Some(s) => settings = vec![*s],
            None => {
                eprintln!(
                    "loader-check: --only {n}: the grid has {} configurations",
                    settings.len()
                );
                return ExitCode::from(2);
            }
        }
    }
    let t = Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = Instant::now();
    let each = |i: usize, r: &Report| {
        if verbose {
            eprintln!(
                "[{:.1}s] configuration {i}: {} states, {} transitions, depth {}{}",
                started.elapsed().as_secs_f64(),
                r.states,
                r.transitions,
                r.depth,
                if r.violations.is_empty() {
                    ""
                } else {
                    ", VIOLATED"
                }
            );
        }
    };
    let report = check::check_with(&settings, stop_at_first, threads, dedup, &each);
    let secs = t.elapsed().as_secs_f64();
    if json {
        println!("{}", to_json(&report, secs));
    } else {
        print!("{}", to_text(&report, secs));
    }
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn describe(s: &Settings) -> String {
    let c = &s.config;
    format!(
        "source {} items, page {}, window {}, prefetch {}, max_pages {}, recheck_full {}, commit_overtaken {}, max_auto_retries {}, read_timeout_ms {}, initial {:?}, budgets: changes {} moves {} faults {}, depth {}{}",
        s.source, c.page_size, s.window, c.prefetch_distance, c.max_pages, c.recheck_full,
        c.commit_overtaken, c.max_auto_retries, c.read_timeout_ms, s.initial, s.changes,
        s.moves, s.faults, s.depth,
        s.fault.map_or(String::new(), |f| format!(", host fault {f:?}"))
    )
}

fn to_text(r: &Report, secs: f64) -> String {
    let mut out = format!(
        "loader: {} configurations, {} distinct states, {} transitions, depth {}, worst progress {} answers, {:.1}s\n",
        r.configurations, r.states, r.transitions, r.depth, r.worst_progress, secs
    );
    for v in &r.violations {
        out.push_str(&violation_text(v));
    }
    if r.violations.is_empty() {
        out.push_str("every property holds\n");
    }
    out
}

fn violation_text(v: &Violation) -> String {
    let mut out = format!(
        "VIOLATED {}: {}\n  in: {}\n  shortest trace ({} events):\n",
        v.property.name(),
        v.message,
        describe(&v.settings),
        v.trace.len()
    );
    for e in &v.trace {
        out.push_str(&format!("    {e:?}\n"));
    }
    out
}

fn to_json(r: &Report, secs: f64) -> String {
    let vs: Vec<String> = r
        .violations
        .iter()
        .map(|v| {
            format!(
                "{{\"property\": \"{}\", \"message\": {:?}, \"trace\": {:?}}}",
                v.property.name(),
                v.message,
                v.trace.iter().map(|e| format!("{e:?}")).collect::<Vec<_>>()
            )
        })
        .collect();
    format!(
        "{{\"configurations\": {}, \"states\": {}, \"transitions\": {}, \"depth\": {}, \"worst_progress\": {}, \"seconds\": {:.2}, \"violations\": [{}]}}",
        r.configurations, r.states, r.transitions, r.depth, r.worst_progress, secs, vs.join(", ")
    )
}
