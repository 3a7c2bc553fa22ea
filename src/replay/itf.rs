//! A replayed run as an ITF trace (the Informal Trace Format of Apalache and Quint): one state
//! per call, each holding the model's nine variables (spec/LoaderLedger.tla), so a TLA+ user
//! can read the run with their own tools.
//!
//! Integers are `{"#bigint": "n"}`; `req` is a `{"#map": [[id, record], ...]}` over the
//! requests the ledger still knows (released ones are forgotten), keyed by the ledger's
//! request ids; strings are the module's own values. Each state's `#meta` names the log line
//! and call that led to it, and the model actions it took.

use super::run::Snap;
use crate::ledger;

fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

fn big(n: u64) -> String {
    format!("{{\"#bigint\": \"{n}\"}}")
}

fn kind(k: ledger::Kind) -> &'static str {
    match k {
        ledger::Kind::Finite => "finite",
        ledger::Kind::Chain => "chain",
        ledger::Kind::Full => "full",
    }
}

fn st(s: ledger::St) -> &'static str {
    match s {
        ledger::St::Inflight => "inflight",
        ledger::St::Settled => "settled",
        ledger::St::Failed => "failed",
    }
}

fn state(index: usize, s: &Snap) -> String {
    let l = &s.ledger;
    let req: Vec<String> = s
        .requests
        .iter()
        .map(|(id, r)| {
            format!(
                "[{}, {{\"kind\": \"{}\", \"ep\": {}, \"st\": \"{}\", \"sup\": {}}}]",
                big(*id),
                kind(r.kind),
                big(r.ep),
                st(r.st),
                r.sup
            )
        })
        .collect();
    let actions: Vec<String> = s.actions.iter().map(|a| quote(a)).collect();
    format!(
        "{{\"#meta\": {{\"index\": {index}, \"line\": {}, \"call\": {}, \"actions\": [{}]}}, \"epoch\": {}, \"debt\": \"{}\", \"phase\": \"{}\", \"chainEpoch\": {}, \"failure\": \"{}\", \"coverage\": \"{}\", \"req\": {{\"#map\": [{}]}}, \"settledOnce\": {}, \"coverEpoch\": {}}}",
        s.line,
        quote(&s.call),
        actions.join(", "),
        big(l.epoch),
        l.debt.name(),
        l.phase.name(),
        big(l.chain_epoch),
        l.failure.name(),
        l.coverage.name(),
        req.join(", "),
        l.settled_once,
        big(l.cover_epoch)
    )
}

/// The ITF JSON text of a replayed run's states; `source` names the log.
pub fn itf(source: &str, rules: &str, states: &[Snap]) -> String {
    let mut out = format!(
        "{{\n\"#meta\": {{\"format\": \"ITF\", \"format-description\": \"https://apalache-mc.org/docs/adr/015adr-trace.html\", \"source\": {}, \"description\": {}}},\n\"vars\": [\"epoch\", \"debt\", \"phase\", \"chainEpoch\", \"failure\", \"coverage\", \"req\", \"settledOnce\", \"coverEpoch\"],\n\"states\": [\n",
        quote(source),
        quote(&format!(
            "a recorded libloader run replayed: the LoaderLedger variables after each call ({rules} rules)"
        ))
    );
    for (i, s) in states.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&state(i, s));
    }
    out.push_str("\n]\n}\n");
    out
}
