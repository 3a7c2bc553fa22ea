//! Recording a loader's run: every call into it, with its arguments and result, and every
//! batch of effects handed out of it, written as one line each to a log that `loader-check
//! --replay` runs again against the loader and the model (docs/RECORDING.md gives the format).
//!
//! A loader records only when asked: [`Loader::record_to`] after [`Loader::hold_prelude`]
//! (which the C layer calls at every creation, so that the creation's own calls can still be
//! written once the host asks), or [`Loader::recorded`] from the start. When off, each entry
//! point pays one branch on an `Option`.
//!
//! Items are the host's: the log holds their tokens (acquisitions) and the cursors' bytes,
//! never the items. The host's clock is in it (`tick`'s argument), and the answers of the
//! host's `compare` callback during a ranged invalidation, so a replay needs nothing else.

use super::{Answer, Config, Effect, Kind, Loader, LoaderError};
use std::fmt::Write as _;
use std::io::Write;

/// The first line of every log: its format and version.
pub const LOG_MAGIC: &str = "loader-log 1";

/// Where a recording goes.
pub type Sink = Box<dyn Write + Send>;

/// One call into the loader, as the log writes it.
pub(super) enum Call<'a> {
    Hints(bool),
    Window(u64, u64),
    Tick(u64),
    Settle {
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &'a [u8],
        end_of_source: bool,
        items_before: Option<u64>,
    },
    Fail(u64, i32),
    Abandon(u64),
    Invalidate,
    Range {
        from: &'a [u8],
        to: Option<&'a [u8]>,
        /// The host's `compare` answers, in the order the loader asked.
        answers: &'a [std::cmp::Ordering],
    },
    Jump(&'a [u8], u64),
    Retry,
    Close,
}

/// A recording in progress.
pub struct Recorder {
    /// `None` while the creation's calls are held for a host that may still ask.
    sink: Option<Sink>,
    /// Lines not yet written: the header and the creation's calls, before a sink is given.
    held: String,
    /// The creation is over: the next call ends a recording nobody asked for.
    sealed: bool,
    /// A write failed: the recording stopped there.
    broken: bool,
}

/// The loader's recording slot: a clone of a loader does not record (it is another run), and
/// the slot prints nothing of itself, so the checker's canonical form ignores it.
#[derive(Default)]
pub(super) struct Slot(pub(super) Option<Box<Recorder>>);

impl Clone for Slot {
    fn clone(&self) -> Slot {
        Slot(None)
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("-")
    }
}

/// Cursor bytes as the log writes them: `-` for the empty cursor, else lower-case hex.
pub(crate) fn hex(out: &mut String, bytes: &[u8]) {
    if bytes.is_empty() {
        out.push('-');
    }
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// The header: the format, then every setting (`key=value`), then the counters a test loader
/// started from, if not the defaults.
fn header(config: &Config, counters: Option<(u64, u64)>) -> String {
    let c = config;
    let mut s = format!(
        "{LOG_MAGIC}\nconfig page_size={} prefetch_distance={} drop_margin={} max_pages={} backoff_initial_ms={} backoff_max_ms={} backoff_multiplier={:?} max_auto_retries={} jitter_seed={} read_timeout_ms={} recheck_full={} commit_overtaken={}\n",
        c.page_size,
        c.prefetch_distance,
        c.drop_margin,
        c.max_pages,
        c.backoff_initial_ms,
        c.backoff_max_ms,
        c.backoff_multiplier,
        c.max_auto_retries,
        c.jitter_seed,
        c.read_timeout_ms,
        u8::from(c.recheck_full),
        u8::from(c.commit_overtaken),
    );
    if let Some((epoch, next_id)) = counters {
        let _ = writeln!(s, "counters {epoch} {next_id}");
    }
    s
}

/// One effect, as a drain line writes it (see docs/RECORDING.md).
pub(crate) fn effect(out: &mut String, e: &Effect) {
    match e {
        Effect::Issue(r) => {
            let kind = match r.kind {
                Kind::Finite => 'f',
                Kind::Chain => 'c',
                Kind::Full => 'F',
            };
            let dir = match r.direction {
                super::Direction::Forward => 'f',
                super::Direction::Backward => 'b',
            };
            let _ = write!(
                out,
                "I{},{},{kind},{},{},",
                r.read_id, r.request_id, r.epoch, r.step
            );
            hex(out, &r.cursor);
            let _ = write!(out, ",{},{dir},", r.limit);
            match &r.until {
                Some(u) => hex(out, u),
                None => out.push('.'),
            }
        }
        Effect::Release { acquisition } => {
            let _ = write!(out, "R{acquisition}");
        }
        Effect::Cancel { read_id } => {
            let _ = write!(out, "X{read_id}");
        }
        Effect::Changed => out.push('C'),
    }
}

/// A call's line, less its result.
fn call(out: &mut String, c: &Call<'_>) {
    match *c {
        Call::Hints(heard) => {
            let _ = write!(out, "h {}", u8::from(heard));
        }
        Call::Window(start, len) => {
            let _ = write!(out, "w {start} {len}");
        }
        Call::Tick(now) => {
            let _ = write!(out, "t {now}");
        }
        Call::Settle {
            read_id,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            items_before,
        } => {
            let _ = write!(out, "s {read_id} {acquisition} {count} ");
            hex(out, next_cursor);
            let _ = write!(out, " {} ", u8::from(end_of_source));
            match items_before {
                Some(n) => {
                    let _ = write!(out, "{n}");
                }
                None => out.push('.'),
            }
        }
        Call::Fail(read_id, code) => {
            let _ = write!(out, "f {read_id} {code}");
        }
        Call::Abandon(read_id) => {
            let _ = write!(out, "a {read_id}");
        }
        Call::Invalidate => out.push('v'),
        Call::Range { from, to, answers } => {
            out.push_str("V ");
            hex(out, from);
            out.push(' ');
            match to {
                Some(t) => hex(out, t),
                None => out.push('.'),
            }
            out.push(' ');
            if answers.is_empty() {
                out.push('-');
            }
            for a in answers {
                out.push(match a {
                    std::cmp::Ordering::Less => '<',
                    std::cmp::Ordering::Equal => '=',
                    std::cmp::Ordering::Greater => '>',
                });
            }
        }
        Call::Jump(cursor, position) => {
            out.push_str("j ");
            hex(out, cursor);
            let _ = write!(out, " {position}");
        }
        Call::Retry => out.push('y'),
        Call::Close => out.push('x'),
    }
}

/// What a call returned, as the log writes it after ` = `.
pub(crate) trait Outcome {
    /// Appends it.
    fn write(&self, out: &mut String);
}

impl Outcome for () {
    fn write(&self, out: &mut String) {
        out.push_str("ok");
    }
}

impl Outcome for bool {
    fn write(&self, out: &mut String) {
        out.push_str(if *self { "ok started" } else { "ok idle" });
    }
}

impl Outcome for Answer {
    fn write(&self, out: &mut String) {
        out.push_str(match self {
            Answer::Current => "ok current",
            Answer::Stale => "ok stale",
            Answer::CursorStalled => "ok stalled",
        });
    }
}

impl<T: Outcome> Outcome for Result<T, LoaderError> {
    fn write(&self, out: &mut String) {
        match self {
            Ok(v) => v.write(out),
            Err(e) => {
                let _ = write!(out, "err {e:?}");
            }
        }
    }
}

impl Recorder {
    fn line(&mut self, text: &str) {
        if self.broken {
            return;
        }
        match self.sink.as_mut() {
            Some(sink) => {
                if sink.write_all(text.as_bytes()).is_err() {
                    self.broken = true;
                }
            }
            None => self.held.push_str(text),
        }
    }
}

impl Loader {
    /// A loader with `config` that records its whole run to `sink` (see [`Loader::record_to`]).
    pub fn recorded(config: Config, sink: Sink) -> Result<Loader, LoaderError> {
        let mut l = Loader::new(config)?;
        l.hold_prelude();
        l.record_to(sink)?;
        Ok(l)
    }

    /// Holds the calls made from now until [`Loader::seal_prelude`] (a creation's: its
    /// starting point, whether hints are heard) in memory, so that a recording asked for
    /// right after the creation ([`Loader::record_to`]) can still begin with them. The C
    /// layer calls both at every creation; the first call after the seal lets them go when no
    /// recording was asked for.
    pub fn hold_prelude(&mut self) {
        let counters = self.counters_at_start();
        self.record.0 = Some(Box::new(Recorder {
            sink: None,
            held: header(&self.config, counters),
            sealed: false,
            broken: false,
        }));
    }

    /// Ends the creation's calls held by [`Loader::hold_prelude`].
    pub fn seal_prelude(&mut self) {
        if let Some(r) = self.record.0.as_deref_mut() {
            r.sealed = true;
        }
    }

    /// Records every later call and effect to `sink`, after the creation's calls held since
    /// [`Loader::hold_prelude`]. Only before the first call after the creation:
    /// [`LoaderError::RecordTooLate`] otherwise (the log must start where the loader started,
    /// or a replay could not run it), or when this loader already records.
    pub fn record_to(&mut self, sink: Sink) -> Result<(), LoaderError> {
        match self.record.0.as_deref_mut() {
            Some(r) if r.sink.is_none() => {
                r.sink = Some(sink);
                let held = std::mem::take(&mut r.held);
                r.line(&held);
                Ok(())
            }
            _ => Err(LoaderError::RecordTooLate),
        }
    }

    /// Whether [`Loader::record_to`] would start a recording now.
    pub fn may_record(&self) -> bool {
        self.record.0.as_ref().is_some_and(|r| r.sink.is_none())
    }

    /// Whether this loader writes a recording.
    pub fn is_recording(&self) -> bool {
        self.record.0.as_ref().is_some_and(|r| r.sink.is_some())
    }

    /// Writes what is buffered of the recording to its sink.
    pub fn flush_recording(&mut self) {
        if let Some(r) = self.record.0.as_deref_mut() {
            if let Some(s) = r.sink.as_mut() {
                if s.flush().is_err() {
                    r.broken = true;
                }
            }
        }
    }

    /// Writes call `c` and its outcome `r`, when recording. Called at the end of each entry
    /// point: one branch when off.
    #[inline]
    pub(super) fn note(&mut self, c: Call<'_>, r: &dyn Outcome) {
        if let Some(rec) = self.record.0.as_deref_mut() {
            if rec.sealed && rec.sink.is_none() {
                // The creation is over and nobody asked for its calls.
                self.record.0 = None;
                return;
            }
            let mut line = String::with_capacity(48);
            call(&mut line, &c);
            if !matches!(c, Call::Hints(_) | Call::Close) {
                line.push_str(" = ");
                r.write(&mut line);
            }
            line.push('\n');
            rec.line(&line);
        }
    }

    /// Writes one batch of effects handed to the host, when recording.
    #[inline]
    pub(super) fn note_effects(&mut self, effects: &[Effect]) {
        if effects.is_empty() {
            return;
        }
        if let Some(rec) = self.record.0.as_deref_mut() {
            if rec.sink.is_none() {
                return;
            }
            let mut line = String::with_capacity(16 * effects.len() + 2);
            line.push('>');
            for e in effects {
                line.push(' ');
                effect(&mut line, e);
            }
            line.push('\n');
            rec.line(&line);
        }
    }
}
