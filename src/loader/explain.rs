//! Why the loader waits: plain sentences over its state, for a host author to read
//! (`loader_explain`, `Loader.explain()`).
//!
//! One sentence a line. The first line is `quiescent` exactly when the loader has nothing left
//! to do (`loader_snapshot.quiescent`); otherwise the lines name each thing it waits for: the
//! reads it waits to have answered, a repair or full read running, a failure recorded and what
//! retries it (a backoff deadline, or the host: the retry budget spent), the debt owed, the
//! reads let go of. Read-only.

use super::backoff::Cause;
use super::reads::Outstanding;
use super::{Debt, Direction, Kind, Loader, Phase};
use crate::ledger::{Failure, St};
use std::fmt::Write;

/// How many of the reads let go of are named; the rest are counted.
const NAMED_LET_GO: usize = 4;

impl Loader {
    /// Why the loader waits, in plain sentences, one a line: `quiescent` when nothing is left
    /// to do (no read outstanding, nothing owed, no failure recorded), and otherwise each
    /// thing it waits for. Times are on the loader's clock: the latest `tick` the host made.
    pub fn explain(&self) -> String {
        let mut lines: Vec<String> = Vec::new();
        if self.closed {
            lines.push("closed: the loader takes no more events".into());
            return lines.join("\n");
        }
        if self.is_quiescent() {
            lines.push("quiescent".into());
        } else {
            self.explain_reads(&mut lines);
            self.explain_work(&mut lines);
            self.explain_failure(&mut lines);
            self.explain_debt(&mut lines);
            if lines.is_empty() {
                let s = self.ledger.snapshot();
                lines.push(format!(
                    "not quiescent: phase {}, debt {}, failure {}",
                    s.phase, s.debt, s.failure
                ));
            }
            let (cs, ce) = self.covered();
            let (ws, wl) = self.window();
            let we = ws.saturating_add(wl);
            lines.push(if self.page_count() == 0 {
                format!("the view is empty; the window is [{ws}, {we})")
            } else {
                format!("the view covers items [{cs}, {ce}) for the window [{ws}, {we})")
            });
        }
        self.explain_let_go(&mut lines);
        let queued = self.out.queued().len();
        if queued > 0 {
            lines.push(format!(
                "{queued} effects are queued for the host and not yet taken"
            ));
        }
        lines.join("\n")
    }

    /// `loader_snapshot.quiescent`: nothing in flight, nothing owed, no failure recorded.
    pub fn is_quiescent(&self) -> bool {
        self.ledger.is_quiescent()
            && !self.revalidating()
            && self.ledger.failure() == Failure::None
            && self.reads.len() == 0
    }

    fn explain_reads(&self, lines: &mut Vec<String>) {
        let timeout = self.config.read_timeout_ms;
        for (id, r) in self.reads.iter() {
            if r.superseded {
                let mut s = format!(
                    "read {id} is no longer needed (superseded {} ago{}): answer it, its answer is stale, or abandon it",
                    ago(self.now.saturating_sub(r.superseded_at)),
                    if r.cancelled { ", and cancel said so" } else { "" },
                );
                if timeout > 0 {
                    let at = r.superseded_at.saturating_add(timeout);
                    let _ = write!(s, "; it is let go at {at} ms (read_timeout_ms)");
                }
                lines.push(s);
            } else {
                lines.push(format!(
                    "waiting for read {id} ({}, issued {} ago)",
                    self.describe_read(r),
                    ago(self.now.saturating_sub(r.issued_at)),
                ));
            }
        }
    }

    /// What an outstanding read asks for: what it is for, its direction, its cursor, its
    /// bound and its limit.
    fn describe_read(&self, r: &Outstanding) -> String {
        let what = match r.kind {
            Kind::Finite => "a page",
            Kind::Chain => "a repair's page",
            Kind::Full => "a full read's page",
        };
        let dir = match r.direction {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        };
        let mut s = format!("{what}, {dir} from {}", cursor_text(&r.cursor));
        if let Some(until) = self.requests.get(r.request).and_then(|w| w.until.as_ref()) {
            let _ = write!(s, " up to {}", cursor_text(until));
        }
        let _ = write!(s, ", at most {} items", r.limit);
        s
    }

    fn explain_work(&self, lines: &mut Vec<String>) {
        let page = u64::from(self.config.page_size.max(1));
        for (id, w) in self.requests.iter() {
            if w.kind == Kind::Finite {
                continue;
            }
            let Some(req) = self.ledger.request(id) else {
                continue;
            };
            if req.st != St::Inflight {
                continue;
            }
            let what = match (w.kind, w.ranged.is_some()) {
                (Kind::Full, _) => "a full read of the source",
                (_, true) => "a ranged repair",
                _ => "a repair",
            };
            let read = w.staged.len() + w.staged_back.len();
            let fwd = if w.reached_end {
                0
            } else {
                w.target.saturating_sub(w.staged_items).div_ceil(page)
            };
            let back = if w.reached_start {
                0
            } else {
                w.back_target
                    .saturating_sub(w.staged_back_items)
                    .div_ceil(page)
            };
            let total = (read as u64 + fwd + back).max(read as u64 + u64::from(w.read.is_some()));
            let mut s = format!("{what} is running ({read} of {total} pages read)");
            if req.sup {
                s.push_str(": an invalidation overtook it, and another repair follows it");
            }
            lines.push(s);
        }
    }

    fn explain_failure(&self, lines: &mut Vec<String>) {
        let failure = self.ledger.failure();
        match failure {
            Failure::None => return,
            Failure::Superseded => {
                lines.push(
                    "a superseded read failed: the debt it left is paid by the repair or full read that follows"
                        .into(),
                );
                return;
            }
            Failure::Own | Failure::Page => {}
        }
        let b = &self.backoff;
        match b.cause {
            Some(Cause::Stalled { read_id, count: 0 }) => lines.push(format!(
                "read {read_id}'s answer repeated its cursor with no items and no end_of_source: the source returned no progress"
            )),
            Some(Cause::Stalled { read_id, count }) => lines.push(format!(
                "read {read_id}'s answer repeated its cursor with {count} items: the source returned no progress"
            )),
            Some(Cause::Failed { read_id }) => lines.push(format!("read {read_id} failed")),
            None => {}
        }
        let what = match failure {
            Failure::Page => "a page failure awaits its retry, which reads that page again",
            _ if self.ledger.repair_failed() => {
                "a repair failure awaits its retry, which resumes the repair at its failed read"
            }
            _ => "a failure awaits its retry, a full read of the source",
        };
        let max = self.config.max_auto_retries;
        let s = if let Some(d) = b.deadline {
            format!(
                "{what}: backoff waits until {d} ms ({} from now), then automatic retry {} of {max} starts at the next tick",
                ago(d.saturating_sub(self.now)),
                b.retries.saturating_add(1),
            )
        } else if self.ledger.retry_enabled() && self.reads.len() == 0 {
            if max == 0 {
                format!(
                    "{what} after {} failures, and automatic retries are off (max_auto_retries 0): call loader_retry or move the window",
                    b.failures
                )
            } else {
                format!(
                    "retry budget spent after {} failures: call loader_retry or move the window",
                    b.failures
                )
            }
        } else if self.reads.len() > 0 {
            format!("{what} once the reads in flight are answered")
        } else {
            let s = self.ledger.snapshot();
            format!(
                "{what}, which is not enabled yet (phase {}, debt {})",
                s.phase, s.debt
            )
        };
        lines.push(s);
        if let Some(w) = &self.resume {
            let kept = w.staged.len() + w.staged_back.len();
            if kept > 0 {
                lines.push(format!(
                    "{kept} pages the failed read staged are kept for its retry to resume"
                ));
            }
        }
    }

    fn explain_debt(&self, lines: &mut Vec<String>) {
        let l = &self.ledger;
        let running = l.phase() != Phase::Idle;
        match l.debt() {
            Debt::None => {}
            _ if running => {}
            Debt::Bounded if l.failure() == Failure::None => lines.push(
                "an invalidation is owed: a repair starts once the page read in flight is answered"
                    .into(),
            ),
            Debt::Full if l.failure() == Failure::None => lines.push(
                "a full read of the source is owed: it starts once the page read in flight is answered"
                    .into(),
            ),
            Debt::Bounded | Debt::Full => {}
        }
    }

    fn explain_let_go(&self, lines: &mut Vec<String>) {
        if self.abandoned.is_empty() {
            return;
        }
        let ids: Vec<String> = self
            .abandoned
            .iter()
            .rev()
            .take(NAMED_LET_GO)
            .map(|(id, _)| id.to_string())
            .collect();
        let more = self.abandoned.len().saturating_sub(NAMED_LET_GO);
        let mut s = format!(
            "reads let go of, whose late answers are stale and released at once: read {}",
            ids.join(", read ")
        );
        if more > 0 {
            let _ = write!(s, " and {more} more");
        }
        lines.push(s);
    }
}

/// A duration in ms, for a person.
fn ago(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 10_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} s", ms / 1000)
    }
}

/// A cursor, for a person: the source's start, printable text in quotes, or hex (the first
/// 16 bytes).
fn cursor_text(c: &[u8]) -> String {
    if c.is_empty() {
        return "the source's start".into();
    }
    if c.len() <= 32 && c.iter().all(|b| (0x20..0x7f).contains(b)) {
        return format!("cursor \"{}\"", String::from_utf8_lossy(c));
    }
    let mut s = String::from("cursor 0x");
    for b in c.iter().take(16) {
        let _ = write!(s, "{b:02x}");
    }
    if c.len() > 16 {
        let _ = write!(s, "… ({} bytes)", c.len());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{ago, cursor_text};

    #[test]
    fn cursors_and_durations_read_plainly() {
        assert_eq!(cursor_text(b""), "the source's start");
        assert_eq!(cursor_text(b"k:17"), "cursor \"k:17\"");
        assert_eq!(cursor_text(&[0, 0, 0, 42]), "cursor 0x0000002a");
        assert!(cursor_text(&[1; 20]).ends_with("… (20 bytes)"));
        assert_eq!(ago(250), "250 ms");
        assert_eq!(ago(1500), "1.5 s");
        assert_eq!(ago(12_300), "12 s");
    }
}
