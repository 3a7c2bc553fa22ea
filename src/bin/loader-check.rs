//! `loader-check`: explores the LoaderLedger model exhaustively, checks its progress under
//! churn (`--progress`), checks the production ledger against it (`--impl`), or replays a
//! recorded run against both (`--replay`).
//!
//! Exit status: 0 when every invariant holds (or the progress or refinement check passes), 1
//! when one is violated (or the check fails), 2 on a usage error.

use loader::model::explore::{explore, Options, Report};
use loader::model::progress::{
    check_progress, ProgressOptions, ProgressReport, DEFAULT_BOUND, GONE_CURSOR_BOUND,
};
use loader::model::{Bounds, Model, Mutant, Rules};
use loader::refinement::{self, RefineBounds};
use std::process::ExitCode;

/// The loader checker allocates for every state it copies: mimalloc's small-object pools cost
/// less than glibc's malloc there (docs/BENCHMARKS.md, "The loader checker").
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "loader_check/loader_mode.rs"]
mod loader_mode;
#[path = "loader_check/replay_mode.rs"]
mod replay_mode;
use std::time::Instant;

const USAGE: &str =
    "usage: loader-check [--rules NAME] [--max-epoch N] [--ids N] [--no-model-bounds]
                    [--stop-at-first] [--json] [--impl] [--list-rules] [--list-mutants]
                    [--progress [--gone-cursor] [--progress-bound B] [--spare-ids S]]

  --rules NAME        rule variant (default unifiedMin; see --list-rules), or a mutant of
                      unifiedMinChurn, unifiedMinPageRetry or unifiedMinRepairRetry
                      (mutantChurn..., mutantPage..., mutantRepair...; see --list-mutants)
  --max-epoch N       the module's MaxEpoch (default 2)
  --ids N             the number of request ids (default 4)
  --no-model-bounds   drop the coverage # \"full\" guards on IssueFinite and Invalidate
  --stop-at-first     stop at the first violated invariant, as TLC does (with --progress, at
                      the first start state with a path over the bound)
  --json              print one JSON object instead of text
  --impl              check the production ledger against the model (refinement); with no
                      --rules, for every setting of recheck_full and commit_overtaken
  --list-rules        print one rule variant name per line
  --list-mutants      print one mutant name per line, with the checks it must fail
  --progress          progress under churn: with an Invalidate after every system step (any
                      action but Invalidate and Fail), coverEpoch rises within B system steps
                      from every reachable state with coverEpoch < epoch and failure = none
  --gone-cursor       with --progress, the gone-cursor adversary instead of churn: every read
                      a page or repair failure's retry resumes (resumed, unifiedMinEscalate)
                      fails, nothing is invalidated, the host retries when only it can; from
                      every reachable state owing something, coverEpoch rises or nothing is
                      owed within B steps (default 5)
  --progress-bound B  the bound B for --progress (default 3; 5 with --gone-cursor)
  --spare-ids S       with --progress, judge the start states (reachable with --ids slots) as
                      if S more request slots were free (default 0), so that a path is not cut
                      short because the slots ran out";

struct Args {
    rules: Option<Rules>,
    max_epoch: u8,
    ids: usize,
    model_bounds: bool,
    stop_at_first: bool,
    json: bool,
    implementation: bool,
    list_rules: bool,
    list_mutants: bool,
    progress: bool,
    gone_cursor: bool,
    progress_bound: Option<u32>,
    spare_ids: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        rules: None,
        max_epoch: 2,
        ids: 4,
        model_bounds: true,
        stop_at_first: false,
        json: false,
        implementation: false,
        list_rules: false,
        list_mutants: false,
        progress: false,
        gone_cursor: false,
        progress_bound: None,
        spare_ids: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--rules" => {
                let v = value("--rules")?;
                a.rules = Some(Rules::parse(&v).ok_or_else(|| {
                    format!("unknown rule variant {v:?}; --list-rules lists them")
                })?);
            }
            "--max-epoch" => {
                let v = value("--max-epoch")?;
                a.max_epoch = v
                    .parse()
                    .ok()
                    .filter(|&n: &u8| n <= 15)
                    .ok_or_else(|| format!("--max-epoch takes 0..=15, not {v:?}"))?;
            }
            "--ids" => {
                let v = value("--ids")?;
                a.ids = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=loader::model::MAX_IDS).contains(n))
                    .ok_or_else(|| format!("--ids takes 1..=8, not {v:?}"))?;
            }
            "--no-model-bounds" => a.model_bounds = false,
            "--stop-at-first" => a.stop_at_first = true,
            "--json" => a.json = true,
            "--impl" => a.implementation = true,
            "--list-rules" => a.list_rules = true,
            "--list-mutants" => a.list_mutants = true,
            "--progress" => a.progress = true,
            "--gone-cursor" => a.gone_cursor = true,
            "--progress-bound" => {
                let v = value("--progress-bound")?;
                a.progress_bound = Some(
                    v.parse()
                        .ok()
                        .filter(|&n: &u32| n <= 200)
                        .ok_or_else(|| format!("--progress-bound takes 0..=200, not {v:?}"))?,
                );
            }
            "--spare-ids" => {
                let v = value("--spare-ids")?;
                a.spare_ids = v
                    .parse()
                    .ok()
                    .filter(|n| *n < loader::model::MAX_IDS)
                    .ok_or_else(|| format!("--spare-ids takes 0..=7, not {v:?}"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.spare_ids > 0 && !a.progress {
        return Err("--spare-ids applies to --progress only".into());
    }
    if a.gone_cursor && !a.progress {
        return Err("--gone-cursor applies to --progress only".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let all: Vec<String> = std::env::args().skip(1).collect();
    if all.first().map(String::as_str) == Some("--loader") {
        return loader_mode::run(&all[1..]);
    }
    if all.first().map(String::as_str) == Some("--replay") {
        return replay_mode::run(&all[1..]);
    }
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("loader-check: {e}");
            }
            eprintln!("{USAGE}{}{}", loader_mode::USAGE, replay_mode::USAGE);
            return ExitCode::from(2);
        }
    };
    if args.list_rules {
        for r in Rules::ALL {
            println!("{r}");
        }
        return ExitCode::SUCCESS;
    }
    if args.list_mutants {
        for m in Mutant::ALL {
            let checks: Vec<String> = m.fails().iter().map(|c| c.to_string()).collect();
            println!("{m} {}", checks.join(" "));
        }
        return ExitCode::SUCCESS;
    }
    if args.implementation {
        return run_impl(&args);
    }
    let bounds = Bounds {
        max_epoch: args.max_epoch,
        ids: args.ids,
        rules: args.rules.unwrap_or(Rules::UnifiedMin),
        model_bounds: args.model_bounds,
    };
    if args.progress {
        return run_progress(bounds, &args);
    }
    let options = Options {
        stop_at_first: args.stop_at_first,
        progress: true,
    };
    let report = match explore(bounds, options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loader-check: {e}");
            return ExitCode::from(2);
        }
    };
    if args.json {
        println!("{}", json(&report));
    } else {
        print!("{}", text(&report));
    }
    if report.verdicts.iter().all(|v| v.holds()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn run_impl(args: &Args) -> ExitCode {
    // (recheck_full, commit_overtaken): every combination the loader accepts.
    let settings: Vec<(bool, bool)> = match args.rules {
        None => vec![(true, true), (true, false), (false, true), (false, false)],
        Some(Rules::UnifiedMinRepairRetry) => vec![(true, true)],
        Some(Rules::UnifiedMinRecheck) => vec![(true, false)],
        Some(Rules::UnifiedMin) => vec![(false, true), (false, false)],
        Some(r) => {
            eprintln!(
                "loader-check: --impl checks the ledger against unifiedMinRepairRetry (both fixes on), unifiedMinRecheck (commit_overtaken off) or unifiedMin (recheck_full off), not {r}"
            );
            return ExitCode::from(2);
        }
    };
    let mut ok = true;
    let mut objects = Vec::new();
    for (recheck_full, commit_overtaken) in settings {
        let b = RefineBounds {
            max_epoch: args.max_epoch,
            ids: args.ids,
            recheck_full,
            commit_overtaken,
        };
        let t = Instant::now();
        let result = refinement::check(b);
        let secs = t.elapsed().as_secs_f64();
        match result {
            Ok(r) => {
                if args.json {
                    objects.push(format!(
                        "{{\"rules\": \"{}\", \"recheck_full\": {}, \"commit_overtaken\": {}, \"max_epoch\": {}, \"ids\": {}, \"refines\": true, \"ledger_states\": {}, \"model_states\": {}, \"events\": {}, \"refused\": {}, \"pruned\": {}}}",
                        b.rules(), recheck_full, commit_overtaken, b.max_epoch, b.ids, r.states, r.model_states, r.events, r.refused, r.pruned
                    ));
                } else {
                    println!(
                        "ledger (recheck_full = {recheck_full}, commit_overtaken = {commit_overtaken}) refines {}: MaxEpoch={} Ids={}: {} ledger states ({} model states), {} events, {} refused answers checked, {} paths pruned at the id bound, {:.2}s",
                        b.rules(), b.max_epoch, b.ids, r.states, r.model_states, r.events, r.refused, r.pruned, secs
                    );
                }
            }
            Err(e) => {
                ok = false;
                if args.json {
                    objects.push(format!(
                        "{{\"rules\": \"{}\", \"recheck_full\": {}, \"commit_overtaken\": {}, \"refines\": false, \"error\": {}}}",
                        b.rules(),
                        recheck_full,
                        commit_overtaken,
                        quote(&e)
                    ));
                } else {
                    println!(
                        "ledger (recheck_full = {recheck_full}, commit_overtaken = {commit_overtaken}) does NOT refine {}:\n{e}",
                        b.rules()
                    );
                }
            }
        }
    }
    if args.json {
        println!("[{}]", objects.join(", "));
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn run_progress(bounds: Bounds, args: &Args) -> ExitCode {
    let default = if args.gone_cursor {
        GONE_CURSOR_BOUND
    } else {
        DEFAULT_BOUND
    };
    let options = ProgressOptions {
        bound: args.progress_bound.unwrap_or(default),
        spare_ids: args.spare_ids,
        stop_at_first: args.stop_at_first,
        gone_cursor: args.gone_cursor,
    };
    let report = match check_progress(bounds, options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loader-check: {e}");
            return ExitCode::from(2);
        }
    };
    if args.json {
        println!("{}", progress_json(&report));
    } else {
        print!("{}", progress_text(&report));
    }
    if report.holds() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn progress_text(r: &ProgressReport) -> String {
    let b = r.bounds;
    // The adversary's paths use the spare slots too.
    let model = Model::new(Bounds {
        ids: b.ids + r.spare_ids,
        ..b
    });
    let (check, adversary, what, after) = if r.gone_cursor {
        (
            "ProgressGoneCursor",
            "the gone-cursor adversary",
            "coverEpoch rises or nothing is owed",
            "with every resumed read failing, something is still owed after",
        )
    } else {
        (
            "ProgressUnderChurn",
            "churn",
            "coverEpoch rises",
            "with an Invalidate after every system step, coverEpoch has not risen after",
        )
    };
    let mut s = format!(
        "loader-check --progress: LoaderLedger with Rules = {}, MaxEpoch = {}, Ids = {}, model bounds {}, spare ids {}\n",
        b.rules,
        b.max_epoch,
        b.ids,
        if b.model_bounds { "kept" } else { "dropped" },
        r.spare_ids
    );
    s += &format!(
        "{} reachable states, {} start states, {} adversary states visited, {} paths cut with every slot used, {:.2}s\n",
        r.reachable,
        r.starts,
        r.visited,
        r.cut,
        r.elapsed.as_secs_f64()
    );
    let worst = match r.worst {
        Some(w) if !r.complete => format!("{w} system steps before the stop"),
        Some(w) => format!("{w} system steps"),
        None => "never (a deadlock with something owed, or a cycle)".into(),
    };
    s += &format!(
        "  {check:<24} {} (worst: {what} within {worst}; bound {})\n",
        if r.holds() { "holds" } else { "violated" },
        r.bound
    );
    if let Some((prefix, path)) = &r.counterexample {
        s += &format!(
            "\nProgress under {adversary} is violated. Shortest trace to the start state, {} steps:\n",
            prefix.len() - 1
        );
        s += &steps_text(&model, prefix, 0);
        let tail = match r.worst_from_witness {
            Some(w) => format!("; it rises only at system step {w}"),
            None if r.gone_cursor => {
                "; it never gets there (a deadlock with something owed, or a cycle)".into()
            }
            None => "; it never rises (something is owed and no system step is enabled)".into(),
        };
        s += &format!("Then, {after} {} system steps{tail}:\n", r.bound);
        let start = prefix.last().expect("Init").state;
        let mut whole = vec![loader::model::explore::Step {
            action: None,
            state: start,
        }];
        whole.extend(path.iter().cloned());
        s += &steps_text(&model, &whole, prefix.len() - 1);
    }
    s
}

/// The steps of `trace` after its first, numbered from `offset + 1`; the first is printed in
/// full only when it is `Init` (`offset` 0).
fn steps_text(model: &Model, trace: &[loader::model::explore::Step], offset: usize) -> String {
    let mut s = String::new();
    for (n, step) in trace.iter().enumerate() {
        match step.action {
            None if offset == 0 => {
                s += &format!("  0. Init\n       {}\n", model.show(&step.state).join(", "));
            }
            None => {}
            Some(a) => {
                let prev = &trace[n - 1].state;
                s += &format!(
                    "  {}. {a}\n       {}\n",
                    n + offset,
                    model.diff(prev, &step.state).join("; ")
                );
            }
        }
    }
    s
}

fn progress_json(r: &ProgressReport) -> String {
    let b = r.bounds;
    let trace = match &r.counterexample {
        None => String::new(),
        Some((prefix, path)) => {
            let names = |t: &[loader::model::explore::Step]| {
                t.iter()
                    .filter_map(|s| s.action)
                    .map(|a| quote(&a.to_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!(
                ", \"prefix\": [{}], \"churn\": [{}]",
                names(prefix),
                names(path)
            )
        }
    };
    format!(
        "{{\"rules\": {}, \"max_epoch\": {}, \"ids\": {}, \"spare_ids\": {}, \"model_bounds\": {}, \"progress\": {}, \"gone_cursor\": {}, \"complete\": {}, \"bound\": {}, \"worst\": {}, \"reachable\": {}, \"starts\": {}, \"visited\": {}, \"cut\": {}, \"seconds\": {:.3}{trace}}}",
        quote(b.rules.name()),
        b.max_epoch,
        b.ids,
        r.spare_ids,
        b.model_bounds,
        r.holds(),
        r.gone_cursor,
        r.complete,
        r.bound,
        r.worst.map_or("null".into(), |w| w.to_string()),
        r.reachable,
        r.starts,
        r.visited,
        r.cut,
        r.elapsed.as_secs_f64()
    )
}

fn text(r: &Report) -> String {
    let b = r.bounds;
    let model = Model::new(b);
    let mut s = format!(
        "loader-check: LoaderLedger with Rules = {}, MaxEpoch = {}, Ids = {}, model bounds {}\n",
        b.rules,
        b.max_epoch,
        b.ids,
        if b.model_bounds { "kept" } else { "dropped" }
    );
    s += &format!(
        "{}: {} distinct states, {} transitions, depth {}, {:.2}s ({:.0} states/s, {:.1} bytes/state)\n",
        if r.complete { "Exploration complete" } else { "Stopped at the first violation" },
        r.distinct_states,
        r.transitions,
        r.depth,
        r.elapsed.as_secs_f64(),
        r.states_per_second(),
        r.bytes_per_state
    );
    for v in &r.verdicts {
        let status = match (&v.trace, r.complete) {
            (Some(_), _) => "violated",
            (None, true) => "holds",
            (None, false) => "not violated before the stop",
        };
        s += &format!("  {:<24} {status}\n", v.invariant.name());
    }
    for v in &r.verdicts {
        if let Some(trace) = &v.trace {
            s += &format!(
                "\nInvariant {} is violated. Shortest trace, {} steps{}:\n",
                v.invariant,
                trace.len() - 1,
                if v.invariant.is_step() {
                    " (a step invariant: the last step breaks it)"
                } else {
                    ""
                }
            );
            for (n, step) in trace.iter().enumerate() {
                match step.action {
                    None => {
                        s += &format!(
                            "  {n}. Init\n       {}\n",
                            model.show(&step.state).join(", ")
                        );
                    }
                    Some(a) => {
                        let prev = &trace[n - 1].state;
                        s += &format!(
                            "  {n}. {a}\n       {}\n",
                            model.diff(prev, &step.state).join("; ")
                        );
                    }
                }
            }
        }
    }
    s
}

fn json(r: &Report) -> String {
    let b = r.bounds;
    let invs: Vec<String> = r
        .verdicts
        .iter()
        .map(|v| match &v.trace {
            None => format!("{}: {{\"holds\": true}}", quote(v.invariant.name())),
            Some(t) => {
                let names: Vec<String> = t
                    .iter()
                    .skip(1)
                    .filter_map(|s| s.action)
                    .map(|a| quote(a.name()))
                    .collect();
                let steps: Vec<String> = t
                    .iter()
                    .skip(1)
                    .filter_map(|s| s.action)
                    .map(|a| quote(&a.to_string()))
                    .collect();
                format!(
                    "{}: {{\"holds\": false, \"trace\": [{}], \"steps\": [{}]}}",
                    quote(v.invariant.name()),
                    names.join(", "),
                    steps.join(", ")
                )
            }
        })
        .collect();
    format!(
        "{{\"rules\": {}, \"max_epoch\": {}, \"ids\": {}, \"model_bounds\": {}, \"complete\": {}, \"distinct_states\": {}, \"transitions\": {}, \"depth\": {}, \"seconds\": {:.3}, \"bytes_per_state\": {:.1}, \"invariants\": {{{}}}}}",
        quote(b.rules.name()),
        b.max_epoch,
        b.ids,
        b.model_bounds,
        r.complete,
        r.distinct_states,
        r.transitions,
        r.depth,
        r.elapsed.as_secs_f64(),
        r.bytes_per_state,
        invs.join(", ")
    )
}

fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}
