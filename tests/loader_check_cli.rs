//! The `loader-check` command line: its JSON object, its exit status, `--list-rules`,
//! `--list-mutants`, `--impl`, `--progress` with `--spare-ids`, and the counterexample docs/DESIGN.md
//! quotes.

// Uses the test instruments (`sim`, `refinement`, `loader-check`).
#![cfg(feature = "testing")]

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loader-check"))
        .args(args)
        .output()
        .expect("loader-check runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("utf-8"),
    )
}

#[test]
fn json_reports_every_invariant_with_traces_from_init() {
    let (code, out) = run(&[
        "--rules",
        "unifiedMin",
        "--max-epoch",
        "2",
        "--ids",
        "4",
        "--json",
    ]);
    assert_eq!(code, 1, "unifiedMin loses an invalidation");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(v["rules"], "unifiedMin");
    assert_eq!(v["max_epoch"], 2);
    assert_eq!(v["ids"], 4);
    assert_eq!(v["model_bounds"], true);
    assert!(v["distinct_states"].as_u64().unwrap() > 1000);
    let invs = v["invariants"].as_object().unwrap();
    assert_eq!(invs.len(), 11);
    for name in [
        "PageFailureQuiet",
        "RepairFailureQuiet",
        "TypeOK",
        "ChainHeld",
        "NoLeak",
        "NoStrandedStaleFailure",
        "CoverageHeld",
        "CommitStamped",
        "CommitReleases",
        "ChainCommitBoundedDebt",
    ] {
        assert_eq!(invs[name]["holds"], true, "{name}");
    }
    let lost = &invs["NoLostInvalidation"];
    assert_eq!(lost["holds"], false);
    let trace: Vec<&str> = lost["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        trace,
        ["Invalidate", "StartFull", "Invalidate", "SettleFull"]
    );
}

#[test]
fn exit_status_is_zero_when_everything_holds() {
    let (code, out) = run(&["--rules", "unifiedMinRecheck", "--no-model-bounds"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches(" holds").count(), 11, "{out}");
}

#[test]
fn list_rules_prints_every_variant_one_per_line() {
    let (code, out) = run(&["--list-rules"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = out.lines().collect();
    for name in [
        "current",
        "unified",
        "unifiedNoNorm",
        "unifiedMin",
        "unifiedMinNoNorm",
        "oldRetire",
        "oldLeak",
        "oldRecover",
        "unifiedMinRecheck",
        "unifiedMinChurn",
        "unifiedMinPageRetry",
        "unifiedMinRepairRetry",
        "unifiedMinEscalate",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(names.len(), 13);
    assert!(!out.contains("mutant"), "{out}");
}

#[test]
fn a_mutant_runs_by_name_and_fails_what_list_mutants_says() {
    let (code, out) = run(&["--list-mutants"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 10, "{out}");
    assert!(
        lines.contains(&"mutantEscalateNever ProgressGoneCursor"),
        "{out}"
    );
    assert!(
        lines.contains(&"mutantPageNoDemote PageFailureQuiet ProgressGoneCursor"),
        "{out}"
    );
    assert!(
        lines.contains(&"mutantRepairNoDemote RepairFailureQuiet"),
        "{out}"
    );
    assert!(
        lines.contains(&"mutantChurnNoNormalize CommitReleases"),
        "{out}"
    );
    let (code, out) = run(&["--rules", "mutantChurnNoNormalize", "--no-model-bounds"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Rules = mutantChurnNoNormalize"), "{out}");
    assert!(out.contains("  CommitReleases           violated"), "{out}");
    // A step invariant's trace ends with the step that breaks it.
    let trace = &out[out.find("Invariant CommitReleases is violated").unwrap()..];
    let last = trace.lines().rev().find(|l| l.contains(". ")).unwrap();
    assert!(last.contains("SettleChain("), "{trace}");
}

#[test]
fn usage_errors_exit_with_two() {
    assert_eq!(run(&["--rules", "nonsense"]).0, 2);
    assert_eq!(run(&["--ids", "0"]).0, 2);
    assert_eq!(run(&["--bogus"]).0, 2);
    assert_eq!(run(&["--impl", "--rules", "current"]).0, 2);
    assert_eq!(run(&["--impl", "--rules", "mutantChurnNoAbandon"]).0, 2);
    assert_eq!(
        run(&["--spare-ids", "2"]).0,
        2,
        "--spare-ids needs --progress"
    );
    assert_eq!(run(&["--progress", "--spare-ids", "8"]).0, 2);
    assert_eq!(
        run(&["--progress", "--ids", "5", "--spare-ids", "4"]).0,
        2,
        "more than 8 slots in all"
    );
}

#[test]
fn impl_checks_both_settings() {
    let (code, out) = run(&["--impl", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["refines"] == true));
    let rules: Vec<&str> = runs.iter().map(|r| r["rules"].as_str().unwrap()).collect();
    assert_eq!(
        rules,
        [
            "unifiedMinEscalate",
            "unifiedMinRecheck",
            "unifiedMin",
            "unifiedMin"
        ]
    );
}

#[test]
fn gone_cursor_progress_passes_with_the_escalation_and_fails_without() {
    let args = [
        "--progress",
        "--gone-cursor",
        "--no-model-bounds",
        "--spare-ids",
        "3",
    ];
    let (code, out) = run(&[&args[..], &["--rules", "unifiedMinEscalate"]].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ProgressGoneCursor       holds"), "{out}");
    assert!(out.contains("within 5 system steps; bound 5"), "{out}");
    let (code, out) = run(&[&args[..], &["--rules", "mutantEscalateNever", "--json"]].concat());
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["progress"], false);
    assert_eq!(v["gone_cursor"], true);
    assert_eq!(v["worst"], serde_json::Value::Null);
    assert_eq!(
        run(&["--gone-cursor"]).0,
        2,
        "--gone-cursor needs --progress"
    );
}

#[test]
fn progress_passes_under_the_churn_variant_and_fails_under_the_seed() {
    let args = [
        "--progress",
        "--max-epoch",
        "3",
        "--ids",
        "4",
        "--no-model-bounds",
        "--rules",
    ];
    let (code, out) = run(&[&args[..], &["unifiedMinChurn"]].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ProgressUnderChurn       holds"), "{out}");
    let (code, out) = run(&[&args[..], &["unifiedMin", "--stop-at-first"]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Progress under churn is violated"), "{out}");
    assert!(out.contains("SettleChain(3, new 4)"), "{out}");
    let (code, out) = run(&[&args[..], &["current", "--json"]].concat());
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["progress"], false);
    assert_eq!(v["bound"], 3);
    assert_eq!(v["spare_ids"], 0);
}

#[test]
fn spare_ids_show_the_failure_the_ids_bound_hides() {
    let args = [
        "--progress",
        "--max-epoch",
        "3",
        "--ids",
        "4",
        "--no-model-bounds",
        "--json",
        "--rules",
    ];
    let json = |out: &str| -> serde_json::Value { serde_json::from_str(out).unwrap() };
    let (code, out) = run(&[&args[..], &["mutantChurnNoAbandon"]].concat());
    assert_eq!(code, 0, "without spare slots the mutant passes: {out}");
    assert!(json(&out)["cut"].as_u64().unwrap() > 0, "{out}");
    let spare = ["--spare-ids", "4"];
    let (code, out) = run(&[&args[..], &["mutantChurnNoAbandon"], &spare].concat());
    assert_eq!(code, 1, "{out}");
    let v = json(&out);
    assert_eq!(
        (v["spare_ids"].as_u64(), v["worst"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(v["cut"], 0);
    let (code, out) = run(&[&args[..], &["unifiedMinChurn"], &spare].concat());
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        (json(&out)["worst"].as_u64(), json(&out)["cut"].as_u64()),
        (Some(3), Some(0))
    );
}

#[test]
fn the_design_quotes_the_trace_loader_check_prints() {
    let (_, out) = run(&["--rules", "current"]);
    let start = out
        .find("Invariant NoStrandedStaleFailure is violated")
        .expect("current strands a failure");
    let block: String = out[start..]
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    let design = include_str!("../docs/DESIGN.md");
    assert!(
        design.contains(&block),
        "docs/DESIGN.md must quote, verbatim, what `loader-check --rules current` prints:\n{block}"
    );
}

/// The deepest level's states are judged as they are found, not stored (`src/check/explore.rs`):
/// a violation that only a progress walk from a state at the deepest level sees (a ranged change
/// that re-reads pages outside the window, `rangedRereadsOutside`, 2 events) is still reported,
/// with its shortest trace, when that level is the last one explored; one level less sees none.
#[test]
fn a_violation_at_the_deepest_level_is_reported() {
    let args = |depth: &'static str| {
        [
            "--loader",
            "--part",
            "bound",
            "--mutant",
            "rangedRereadsOutside",
            "--max-depth",
            depth,
        ]
    };
    let (code, out) = run(&args("2"));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATED ranged_cost:"), "{out}");
    assert!(out.contains("shortest trace (2 events):"), "{out}");
    assert!(!out.contains("shortest trace (1 events):"), "{out}");
    let (code, out) = run(&args("1"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("every property holds"), "{out}");
}
