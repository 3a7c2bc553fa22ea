//! The printing of model states: every variable, or the variables a step changed.

use super::{Model, Req, St, State};
use std::fmt;

impl Model {
    /// The variables that differ between `a` and `b`, as `name: old -> new` lines.
    pub fn diff(&self, a: &State, b: &State) -> Vec<String> {
        let mut out = Vec::new();
        macro_rules! var {
            ($field:ident, $name:literal) => {
                if a.$field != b.$field {
                    out.push(format!("{}: {} -> {}", $name, a.$field, b.$field));
                }
            };
        }
        var!(epoch, "epoch");
        var!(debt, "debt");
        var!(phase, "phase");
        var!(chain_epoch, "chainEpoch");
        var!(failure, "failure");
        var!(coverage, "coverage");
        var!(settled_once, "settledOnce");
        var!(cover_epoch, "coverEpoch");
        var!(resumed, "resumed");
        for i in self.ids() {
            if a.req[i] != b.req[i] {
                out.push(format!(
                    "req[{}]: {} -> {}",
                    i + 1,
                    ReqFmt(a.req[i]),
                    ReqFmt(b.req[i])
                ));
            }
        }
        out
    }

    /// Every variable of `s`, one `name = value` per entry.
    pub fn show(&self, s: &State) -> Vec<String> {
        let mut out = vec![
            format!("epoch = {}", s.epoch),
            format!("debt = {}", s.debt),
            format!("phase = {}", s.phase),
            format!("chainEpoch = {}", s.chain_epoch),
            format!("failure = {}", s.failure),
            format!("coverage = {}", s.coverage),
            format!("settledOnce = {}", s.settled_once),
            format!("coverEpoch = {}", s.cover_epoch),
        ];
        if self.rules().escalates() {
            out.push(format!("resumed = {}", s.resumed));
        }
        for i in self.ids() {
            out.push(format!("req[{}] = {}", i + 1, ReqFmt(s.req[i])));
        }
        out
    }
}

struct ReqFmt(Req);

impl fmt::Display for ReqFmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        if r.st == St::Unused {
            return f.write_str("unused");
        }
        write!(f, "{} ep={} {}", r.kind, r.ep, r.st)?;
        if r.sup {
            f.write_str(" sup")?;
        }
        Ok(())
    }
}
