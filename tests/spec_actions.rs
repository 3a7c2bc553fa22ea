//! The TLA+ modules in `spec/` and the executable model name the same actions and invariants:
//! every action in a module's `Next` has a counterpart in `Action::name()`, every invariant a
//! `.cfg` checks has one in `Invariant::name()` and is defined by a module, and every action
//! and invariant of the model appears in some module. A state invariant is checked under
//! `INVARIANTS`, a step invariant (`[][P]_vars`) under `PROPERTIES`. A rename on either side
//! fails here.

#![cfg(feature = "testing")]

use loader::model::{Action, Invariant};
use std::collections::BTreeSet;
use std::path::Path;

/// Words of TLA+ that may appear in `Next` and are not operator names.
const KEYWORDS: &[&str] = &[
    "IF",
    "THEN",
    "ELSE",
    "LET",
    "IN",
    "CASE",
    "OTHER",
    "UNCHANGED",
    "TRUE",
    "FALSE",
    "ENABLED",
    "EXCEPT",
    "CHOOSE",
    "DOMAIN",
    "SUBSET",
    "UNION",
];

/// The keywords that open a section of a TLC configuration file.
const CFG_KEYWORDS: &[&str] = &[
    "CONSTANT",
    "CONSTANTS",
    "INIT",
    "NEXT",
    "SPECIFICATION",
    "INVARIANT",
    "INVARIANTS",
    "PROPERTY",
    "PROPERTIES",
    "CHECK_DEADLOCK",
    "SYMMETRY",
    "VIEW",
    "CONSTRAINT",
    "CONSTRAINTS",
    "ACTION_CONSTRAINT",
    "ACTION_CONSTRAINTS",
    "ALIAS",
    "POSTCONDITION",
];

/// The text without `\*` line comments and `(* *)` block comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("(*") {
            rest = after.find("*)").map_or("", |end| &after[end + 2..]);
        } else if rest.starts_with("\\*") {
            rest = rest.find('\n').map_or("", |end| &rest[end..]);
        } else {
            let c = rest.chars().next().expect("rest is not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    /// A name; an instance prefix (`Base!`) is dropped.
    Ident(String),
    /// A backslash operator such as `\E` or `\in`; empty for `\/`.
    Op(String),
    Punct(char),
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '!'
}

fn tokens(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c == '\\' {
            let start = at + 1;
            at = start;
            while at < chars.len() && chars[at].is_ascii_alphabetic() {
                at += 1;
            }
            out.push(Tok::Op(chars[start..at].iter().collect()));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = at;
            while at < chars.len() && is_ident_char(chars[at]) {
                at += 1;
            }
            let word: String = chars[start..at].iter().collect();
            let name = word.rsplit('!').next().unwrap_or_default().to_string();
            out.push(Tok::Ident(name));
        } else if c.is_ascii_digit() {
            while at < chars.len() && chars[at].is_ascii_alphanumeric() {
                at += 1;
            }
        } else {
            if !c.is_whitespace() {
                out.push(Tok::Punct(c));
            }
            at += 1;
        }
    }
    out
}

/// The name a line defines (`Name ==` or `Name(args) ==` at column 0), if it defines one.
fn definition_name(line: &str) -> Option<&str> {
    if !line.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return None;
    }
    let end = line.find(|c: char| !is_ident_char(c)).unwrap_or(line.len());
    let (name, mut rest) = line.split_at(end);
    rest = rest.trim_start();
    if let Some(args) = rest.strip_prefix('(') {
        rest = args.split_once(')')?.1.trim_start();
    }
    rest.starts_with("==").then_some(name)
}

/// Every operator a module defines.
fn definitions(text: &str) -> BTreeSet<String> {
    strip_comments(text)
        .lines()
        .filter_map(definition_name)
        .map(str::to_string)
        .collect()
}

/// The names a module declares with `CONSTANT(S)` or `VARIABLE(S)`.
fn declarations(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut declaring = false;
    for line in strip_comments(text).lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if !line.starts_with(char::is_whitespace) {
            declaring = matches!(first, "CONSTANT" | "CONSTANTS" | "VARIABLE" | "VARIABLES");
        }
        if declaring {
            for t in tokens(line) {
                if let Tok::Ident(name) = t {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// The body of `Next`: the rest of its line and the indented lines after it.
fn next_body(text: &str) -> Option<String> {
    let text = strip_comments(text);
    let mut lines = text.lines();
    let first = lines
        .by_ref()
        .find(|l| definition_name(l) == Some("Next"))?;
    let mut body = first.split_once("==")?.1.to_string();
    for line in lines {
        if !(line.is_empty() || line.starts_with(char::is_whitespace)) {
            break;
        }
        body.push('\n');
        body.push_str(line);
    }
    Some(body)
}

/// The actions `Next` is made of, in order: its names, less keywords, declared constants and
/// variables, and the bound variables and domains of its quantifiers.
fn next_actions(text: &str) -> Option<Vec<String>> {
    let body = next_body(text)?;
    let declared = declarations(text);
    let mut in_quantifier = false;
    let mut bound = BTreeSet::new();
    let mut out: Vec<String> = Vec::new();
    for t in tokens(&body) {
        match t {
            Tok::Op(op) if matches!(op.as_str(), "E" | "A" | "EE" | "AA") => in_quantifier = true,
            Tok::Punct(':') => in_quantifier = false,
            Tok::Ident(name) if in_quantifier => {
                bound.insert(name);
            }
            Tok::Ident(name)
                if !KEYWORDS.contains(&name.as_str())
                    && !declared.contains(&name)
                    && !bound.contains(&name)
                    && !out.contains(&name) =>
            {
                out.push(name)
            }
            _ => {}
        }
    }
    Some(out)
}

/// How a TLC configuration file checks a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Checked {
    /// Under `INVARIANT(S)`: a state predicate.
    Invariant,
    /// Under `PROPERTY`/`PROPERTIES`: a temporal formula, here `[][P]_vars`.
    Property,
}

/// The invariants and properties a TLC configuration file checks, in order.
fn cfg_checks(text: &str) -> Vec<(String, Checked)> {
    let mut collecting = None;
    let mut out = Vec::new();
    for word in strip_comments(text).split_whitespace() {
        if CFG_KEYWORDS.contains(&word) {
            collecting = match word {
                "INVARIANT" | "INVARIANTS" => Some(Checked::Invariant),
                "PROPERTY" | "PROPERTIES" => Some(Checked::Property),
                _ => None,
            };
        } else if let Some(how) = collecting {
            out.push((word.to_string(), how));
        }
    }
    out
}

/// The invariants a TLC configuration file checks.
fn cfg_invariants(text: &str) -> Vec<String> {
    cfg_checks(text)
        .into_iter()
        .filter(|(_, how)| *how == Checked::Invariant)
        .map(|(name, _)| name)
        .collect()
}

/// A file's name and text.
type File = (String, String);

/// Every mismatch between the modules and configurations and the model; empty when they agree.
fn mismatches(modules: &[File], cfgs: &[File]) -> Vec<String> {
    let model_actions: BTreeSet<&str> = Action::NAMES.into_iter().collect();
    let model_invariants: BTreeSet<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
    let step_invariants: BTreeSet<&str> = Invariant::STEP.iter().map(|i| i.name()).collect();
    let mut problems = Vec::new();
    let mut defined = BTreeSet::new();
    let mut in_next = BTreeSet::new();
    for (file, text) in modules {
        defined.extend(definitions(text));
        let Some(actions) = next_actions(text) else {
            problems.push(format!("{file}: no Next"));
            continue;
        };
        for a in actions {
            if !model_actions.contains(a.as_str()) {
                problems.push(format!(
                    "{file}: action {a} in Next has no counterpart in the model's Action::name()"
                ));
            }
            in_next.insert(a);
        }
    }
    for a in &model_actions {
        if !in_next.contains(*a) {
            problems.push(format!("the model's action {a} is in no module's Next"));
        }
    }
    let mut checked = BTreeSet::new();
    for (file, text) in cfgs {
        for (inv, how) in cfg_checks(text) {
            if !model_invariants.contains(inv.as_str()) {
                problems.push(format!(
                    "{file}: invariant {inv} has no counterpart in the model's Invariant::name()"
                ));
            } else if step_invariants.contains(inv.as_str()) != (how == Checked::Property) {
                problems.push(format!(
                    "{file}: invariant {inv} is checked as {how:?}, but the model's is a {} invariant",
                    if step_invariants.contains(inv.as_str()) { "step" } else { "state" }
                ));
            }
            if !defined.contains(&inv) {
                problems.push(format!("{file}: invariant {inv} is defined by no module"));
            }
            checked.insert(inv);
        }
    }
    for inv in &model_invariants {
        if !checked.contains(*inv) {
            problems.push(format!("the model's invariant {inv} is checked by no .cfg"));
        }
    }
    problems
}

/// The files in `spec/` with the given extension, sorted by name.
fn spec_files(ext: &str) -> Vec<File> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("spec");
    let mut files: Vec<File> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|p| {
            let name = p.file_name().expect("a file name").to_string_lossy().into();
            let text = std::fs::read_to_string(&p).expect("a readable spec file");
            (name, text)
        })
        .collect();
    files.sort();
    files
}

/// The spec files, with `from` replaced by `to` in the file named `file` (which must contain it).
fn doctored(files: &[File], file: &str, from: &str, to: &str) -> Vec<File> {
    files
        .iter()
        .map(|(name, text)| {
            if name == file {
                assert!(text.contains(from), "{file} no longer contains {from:?}");
                (name.clone(), text.replacen(from, to, 1))
            } else {
                (name.clone(), text.clone())
            }
        })
        .collect()
}

#[test]
fn the_modules_and_the_model_name_the_same_actions_and_invariants() {
    let modules = spec_files("tla");
    let cfgs = spec_files("cfg");
    let names: Vec<&str> = modules.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"LoaderLedger.tla"), "{names:?}");
    assert!(names.contains(&"LoaderLedgerRecheck.tla"), "{names:?}");
    assert_eq!(cfgs.len(), modules.len(), "one .cfg per module");
    for (file, text) in &modules {
        let actions = next_actions(text).unwrap_or_default();
        // `ResumeAnswered` acts on `resumed`, which only LoaderLedgerEscalate.tla has; every
        // other action is in every module's Next.
        let expected: Vec<&str> = Action::NAMES
            .into_iter()
            .filter(|&a| a != "ResumeAnswered" || file == "LoaderLedgerEscalate.tla")
            .collect();
        assert_eq!(actions, expected, "{file}: Next, in order");
    }
    let problems = mismatches(&modules, &cfgs);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_action_renamed_in_next_is_caught() {
    let modules = doctored(
        &spec_files("tla"),
        "LoaderLedger.tla",
        ": SettleFinite(i) \\/ SettleChain(i)",
        ": SettleFinite(i) \\/ SettleChains(i)",
    );
    let problems = mismatches(&modules, &spec_files("cfg"));
    assert_eq!(
        problems,
        ["LoaderLedger.tla: action SettleChains in Next has no counterpart in the model's Action::name()"]
    );
}

#[test]
fn an_action_added_to_the_variant_s_next_is_caught() {
    let modules = doctored(
        &spec_files("tla"),
        "LoaderLedgerRecheck.tla",
        "\\/ ExplicitRetry\n",
        "\\/ ExplicitRetry \\/ Backoff\n",
    );
    let problems = mismatches(&modules, &spec_files("cfg"));
    assert_eq!(
        problems,
        ["LoaderLedgerRecheck.tla: action Backoff in Next has no counterpart in the model's Action::name()"]
    );
}

#[test]
fn a_model_action_in_no_next_is_caught() {
    let tla = spec_files("tla");
    let tla = doctored(&tla, "LoaderLedger.tla", " \\/ Fail(i)\n", "\n");
    let tla = doctored(&tla, "LoaderLedgerRecheck.tla", " \\/ Fail(i)\n", "\n");
    let tla = doctored(&tla, "LoaderLedgerChurn.tla", " \\/ Fail(i)\n", "\n");
    let tla = doctored(&tla, "LoaderLedgerPageRetry.tla", " \\/ Fail(i)\n", "\n");
    let tla = doctored(&tla, "LoaderLedgerRepairRetry.tla", " \\/ Fail(i)\n", "\n");
    let tla = doctored(&tla, "LoaderLedgerEscalate.tla", " \\/ Fail(i)\n", "\n");
    let problems = mismatches(&tla, &spec_files("cfg"));
    assert_eq!(problems, ["the model's action Fail is in no module's Next"]);
}

#[test]
fn an_unknown_invariant_in_a_cfg_is_caught() {
    let cfgs = doctored(
        &spec_files("cfg"),
        "LoaderLedger.cfg",
        "NoStrandedStaleFailure",
        "NoStrandedStaleFailure NoDeadlock",
    );
    let problems = mismatches(&spec_files("tla"), &cfgs);
    assert_eq!(
        problems,
        [
            "LoaderLedger.cfg: invariant NoDeadlock has no counterpart in the model's Invariant::name()",
            "LoaderLedger.cfg: invariant NoDeadlock is defined by no module",
        ]
    );
}

#[test]
fn a_model_invariant_no_cfg_checks_is_caught() {
    let cfgs = doctored(
        &spec_files("cfg"),
        "LoaderLedgerRecheck.cfg",
        " NoLostInvalidation",
        "",
    );
    let cfgs = doctored(&cfgs, "LoaderLedgerChurn.cfg", " NoLostInvalidation", "");
    let cfgs = doctored(
        &cfgs,
        "LoaderLedgerPageRetry.cfg",
        " NoLostInvalidation",
        "",
    );
    let cfgs = doctored(
        &cfgs,
        "LoaderLedgerRepairRetry.cfg",
        " NoLostInvalidation",
        "",
    );
    let cfgs = doctored(&cfgs, "LoaderLedgerEscalate.cfg", " NoLostInvalidation", "");
    let problems = mismatches(&spec_files("tla"), &cfgs);
    assert_eq!(
        problems,
        ["the model's invariant NoLostInvalidation is checked by no .cfg"]
    );
}

#[test]
fn a_step_invariant_checked_as_a_state_invariant_is_caught() {
    let cfgs = doctored(
        &spec_files("cfg"),
        "LoaderLedgerChurn.cfg",
        "CoverageHeld\nPROPERTIES CommitStamped",
        "CoverageHeld CommitStamped\nPROPERTIES",
    );
    let problems = mismatches(&spec_files("tla"), &cfgs);
    assert_eq!(
        problems,
        ["LoaderLedgerChurn.cfg: invariant CommitStamped is checked as Invariant, but the model's is a step invariant"]
    );
    let cfgs = doctored(
        &spec_files("cfg"),
        "LoaderLedgerChurn.cfg",
        " CoverageHeld\nPROPERTIES",
        "\nPROPERTIES CoverageHeld",
    );
    let problems = mismatches(&spec_files("tla"), &cfgs);
    assert_eq!(
        problems,
        ["LoaderLedgerChurn.cfg: invariant CoverageHeld is checked as Property, but the model's is a state invariant"]
    );
}

#[test]
fn a_step_invariant_no_cfg_checks_is_caught() {
    let cfgs = doctored(
        &spec_files("cfg"),
        "LoaderLedgerChurn.cfg",
        " ChainCommitBoundedDebt",
        "",
    );
    let cfgs = doctored(
        &cfgs,
        "LoaderLedgerPageRetry.cfg",
        " ChainCommitBoundedDebt",
        "",
    );
    let cfgs = doctored(
        &cfgs,
        "LoaderLedgerRepairRetry.cfg",
        " ChainCommitBoundedDebt",
        "",
    );
    let cfgs = doctored(
        &cfgs,
        "LoaderLedgerEscalate.cfg",
        " ChainCommitBoundedDebt",
        "",
    );
    let problems = mismatches(&spec_files("tla"), &cfgs);
    assert_eq!(
        problems,
        ["the model's invariant ChainCommitBoundedDebt is checked by no .cfg"]
    );
}

#[test]
fn comments_keywords_and_quantified_names_are_not_actions() {
    let text = "---- MODULE M ----\nCONSTANTS S\nVARIABLES v\n\
                A == v' = v\n\
                Next ==\n  \\/ A \\/ UNCHANGED v \\* \\/ Commented\n  \\/ \\E x, y \\in S : Base!B(x) (* \\/ C *)\n\
                Spec == Init /\\ [][Next]_v\n====\n";
    assert_eq!(
        next_actions(text),
        Some(vec!["A".to_string(), "B".to_string()])
    );
    assert_eq!(next_actions("---- MODULE M ----\nInit == TRUE\n===="), None);
    assert_eq!(
        cfg_invariants("INVARIANTS X \\* Y\n  Z\nCHECK_DEADLOCK FALSE\nINVARIANT W"),
        ["X", "Z", "W"]
    );
    assert_eq!(
        cfg_checks("INVARIANT X\nPROPERTIES P Q\nCHECK_DEADLOCK FALSE"),
        [
            ("X".to_string(), Checked::Invariant),
            ("P".to_string(), Checked::Property),
            ("Q".to_string(), Checked::Property),
        ]
    );
}
