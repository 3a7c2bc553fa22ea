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
        self.explain_at(self.now)
    }

    /// [`Loader::explain`] with its durations ("issued ... ago", "... from now") measured
    /// to `now` when that is later than the loader's clock: a host whose clock runs while the
    /// loader's moves only at its events (a feed's) explains at its own time, without ticking
    /// the loader (explaining acts on nothing).
    pub fn explain_at(&self, now: u64) -> String {
        let now = now.max(self.now);
        let mut lines = Lines(String::with_capacity(256));
        if self.closed {
            lines.push("closed: the loader takes no more events");
            return lines.0;
        }
        if self.is_quiescent() {
            lines.push("quiescent");
        } else {
            self.explain_reads(&mut lines, now);
            self.explain_work(&mut lines);
            self.explain_failure(&mut lines, now);
            self.explain_debt(&mut lines);
            if lines.0.is_empty() {
                let s = self.ledger.snapshot();
                let _ = write!(
                    lines.line(),
                    "not quiescent: phase {}, debt {}, failure {}",
                    s.phase,
                    s.debt,
                    s.failure
                );
            }
            let (cs, ce) = self.covered();
            let (ws, wl) = self.window();
            let we = ws.saturating_add(wl);
            let _ = if self.page_count() == 0 {
                write!(
                    lines.line(),
                    "the view is empty; the window is [{ws}, {we})"
                )
            } else {
                write!(
                    lines.line(),
                    "the view covers items [{cs}, {ce}) for the window [{ws}, {we})"
                )
            };
        }
        self.explain_let_go(&mut lines);
        let queued = self.out.queued().len();
        if queued > 0 {
            let _ = write!(
                lines.line(),
                "{queued} effects are queued for the host and not yet taken"
            );
        }
        lines.0
    }

    /// `loader_snapshot.quiescent`: nothing in flight, nothing owed, no failure recorded.
    pub fn is_quiescent(&self) -> bool {
        self.ledger.is_quiescent()
            && !self.revalidating()
            && self.ledger.failure() == Failure::None
            && self.reads.len() == 0
    }

    fn explain_reads(&self, lines: &mut Lines, now: u64) {
        let timeout = self.config.read_timeout_ms;
        for (id, r) in self.reads.iter() {
            let s = lines.line();
            if r.superseded {
                let _ = write!(
                    s,
                    "read {id} is no longer needed (superseded {} ago{}): answer it, its answer is stale, or abandon it",
                    Ago(now.saturating_sub(r.superseded_at)),
                    if r.cancelled { ", and cancel said so" } else { "" },
                );
                if timeout > 0 {
                    let at = r.superseded_at.saturating_add(timeout);
                    let _ = write!(s, "; it is let go at {at} ms (read_timeout_ms)");
                }
            } else {
                let _ = write!(s, "waiting for read {id} (");
                self.describe_read(r, s);
                let _ = write!(s, ", issued {} ago)", Ago(now.saturating_sub(r.issued_at)));
            }
        }
    }

    /// What an outstanding read asks for: what it is for, its direction, its cursor, its
    /// bound and its limit (written to `s`).
    fn describe_read(&self, r: &Outstanding, s: &mut String) {
        let what = match r.kind {
            Kind::Finite => "a page",
            Kind::Chain => "a repair's page",
            Kind::Full => "a full read's page",
        };
        let dir = match r.direction {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        };
        let _ = write!(s, "{what}, {dir} from {}", CursorText(&r.cursor));
        if let Some(until) = self.requests.get(r.request).and_then(|w| w.until.as_ref()) {
            let _ = write!(s, " up to {}", CursorText(until));
        }
        let _ = write!(s, ", at most {} items", r.limit);
    }

    fn explain_work(&self, lines: &mut Lines) {
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
            let s = lines.line();
            let _ = write!(s, "{what} is running ({read} of {total} pages read)");
            if req.sup {
                s.push_str(": an invalidation overtook it, and another repair follows it");
            }
        }
    }

    fn explain_failure(&self, lines: &mut Lines, now: u64) {
        let failure = self.ledger.failure();
        match failure {
            Failure::None => return,
            Failure::Superseded => {
                lines.push(
                    "a superseded read failed: the debt it left is paid by the repair or full read that follows",
                );
                return;
            }
            Failure::Own | Failure::Page => {}
        }
        let b = &self.backoff;
        match b.cause {
            Some(Cause::Stalled { read_id, count: 0 }) => {
                let _ = write!(
                    lines.line(),
                    "read {read_id}'s answer repeated its cursor with no items and no end_of_source: the source returned no progress"
                );
            }
            Some(Cause::Stalled { read_id, count }) => {
                let _ = write!(
                    lines.line(),
                    "read {read_id}'s answer repeated its cursor with {count} items: the source returned no progress"
                );
            }
            Some(Cause::Failed { read_id }) => {
                let _ = write!(lines.line(), "read {read_id} failed");
            }
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
        let s = lines.line();
        let _ = if let Some(d) = b.deadline {
            write!(
                s,
                "{what}: backoff waits until {d} ms ({} from now), then automatic retry {} of {max} starts at the next tick",
                Ago(d.saturating_sub(now)),
                b.retries.saturating_add(1),
            )
        } else if self.ledger.retry_enabled() && self.reads.len() == 0 {
            if max == 0 {
                write!(
                    s,
                    "{what} after {} failures, and automatic retries are off (max_auto_retries 0): call loader_retry or move the window",
                    b.failures
                )
            } else {
                write!(
                    s,
                    "retry budget spent after {} failures: call loader_retry or move the window",
                    b.failures
                )
            }
        } else if self.reads.len() > 0 {
            write!(s, "{what} once the reads in flight are answered")
        } else {
            let snap = self.ledger.snapshot();
            write!(
                s,
                "{what}, which is not enabled yet (phase {}, debt {})",
                snap.phase, snap.debt
            )
        };
        if let Some(w) = &self.resume {
            let kept = w.staged.len() + w.staged_back.len();
            if kept > 0 {
                let _ = write!(
                    lines.line(),
                    "{kept} pages the failed read staged are kept for its retry to resume"
                );
            }
        }
    }

    fn explain_debt(&self, lines: &mut Lines) {
        let l = &self.ledger;
        let running = l.phase() != Phase::Idle;
        match l.debt() {
            Debt::None => {}
            _ if running => {}
            Debt::Bounded if l.failure() == Failure::None => lines.push(
                "an invalidation is owed: a repair starts once the page read in flight is answered",
            ),
            Debt::Full if l.failure() == Failure::None => lines.push(
                "a full read of the source is owed: it starts once the page read in flight is answered",
            ),
            Debt::Bounded | Debt::Full => {}
        }
    }

    fn explain_let_go(&self, lines: &mut Lines) {
        if self.abandoned.is_empty() {
            return;
        }
        let s = lines.line();
        s.push_str("reads let go of, whose late answers are stale and released at once: ");
        for (i, (id, _)) in self.abandoned.iter().rev().take(NAMED_LET_GO).enumerate() {
            let _ = write!(s, "{}read {id}", if i == 0 { "" } else { ", " });
        }
        let more = self.abandoned.len().saturating_sub(NAMED_LET_GO);
        if more > 0 {
            let _ = write!(s, " and {more} more");
        }
    }
}

/// The text being written, one sentence a line (one buffer: `explain` runs after every
/// event in the checkers).
struct Lines(String);

impl Lines {
    /// A new line to write to.
    fn line(&mut self) -> &mut String {
        if !self.0.is_empty() {
            self.0.push('\n');
        }
        &mut self.0
    }

    /// A line of fixed text.
    fn push(&mut self, text: &str) {
        self.line().push_str(text);
    }
}

/// A duration in ms, for a person.
struct Ago(u64);

impl std::fmt::Display for Ago {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.0;
        if ms < 1000 {
            write!(f, "{ms} ms")
        } else if ms < 10_000 {
            write!(f, "{:.1} s", ms as f64 / 1000.0)
        } else {
            write!(f, "{} s", ms / 1000)
        }
    }
}

/// A cursor, for a person: the source's start, printable text in quotes, or hex (the first
/// 16 bytes).
struct CursorText<'a>(&'a [u8]);

impl std::fmt::Display for CursorText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.0;
        if c.is_empty() {
            return f.write_str("the source's start");
        }
        if c.len() <= 32 && c.iter().all(|b| (0x20..0x7f).contains(b)) {
            return write!(f, "cursor \"{}\"", String::from_utf8_lossy(c));
        }
        f.write_str("cursor 0x")?;
        for b in c.iter().take(16) {
            write!(f, "{b:02x}")?;
        }
        if c.len() > 16 {
            write!(f, "… ({} bytes)", c.len())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Ago, CursorText};

    fn ago(ms: u64) -> String {
        Ago(ms).to_string()
    }

    fn cursor_text(c: &[u8]) -> String {
        CursorText(c).to_string()
    }

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
