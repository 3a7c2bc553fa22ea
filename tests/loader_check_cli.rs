//! The `loader-check` command line: its JSON object, its exit status, `--list-rules`, `--impl`,
//! and the counterexample docs/DESIGN.md quotes.

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
    assert_eq!(invs.len(), 5);
    for name in ["TypeOK", "ChainHeld", "NoLeak", "NoStrandedStaleFailure"] {
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
    assert_eq!(out.matches(" holds").count(), 5, "{out}");
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
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(names.len(), 10);
}

#[test]
fn usage_errors_exit_with_two() {
    assert_eq!(run(&["--rules", "nonsense"]).0, 2);
    assert_eq!(run(&["--ids", "0"]).0, 2);
    assert_eq!(run(&["--bogus"]).0, 2);
    assert_eq!(run(&["--impl", "--rules", "current"]).0, 2);
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
            "unifiedMinChurn",
            "unifiedMinRecheck",
            "unifiedMin",
            "unifiedMin"
        ]
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
