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
    /// `set_window_located`, with the host's `locate` answer: not asked (`None`), unknown
    /// (`Some(None)`) or a cursor.
    Located {
        start: u64,
        len: u64,
        answer: Option<Option<&'a [u8]>>,
    },
    Tick(u64),
    Settle {
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &'a [u8],
        end_of_source: bool,
        items_before: Option<u64>,
        /// The host's `compare` answers, in the order the loader asked (none: no field).
        answers: &'a [std::cmp::Ordering],
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
    /// `appended`.
    Appended,
    /// `follow`.
    Follow(bool),
    Retry,
    Close,
}

/// A recording in progress.
pub struct Recorder {
    /// `None` while the creation's calls are held for a host that may still ask.
    sink: Option<Sink>,
    /// Lines not yet written: the header and the creation's calls before a sink is given,
    /// then up to [`BUFFER`] bytes at a time.
    buf: Vec<u8>,
    /// The creation is over: the next call ends a recording nobody asked for.
    sealed: bool,
    /// A write failed: the recording stopped there.
    broken: bool,
    /// The last cursor field written (see [`cursor`]).
    last: Vec<u8>,
}

/// The recorder writes to its sink once it has buffered this many bytes: one write per few
/// thousand events, so the sink need not buffer.
const BUFFER: usize = 64 * 1024;

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
pub(crate) fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    if bytes.is_empty() {
        out.push(b'-');
    }
    out.reserve(2 * bytes.len());
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
}

/// A cursor field: as [`hex`], or `^` when it repeats the cursor field written just before it
/// in the log (a read usually starts where the answer before it ended). `last` is that
/// cursor, and becomes this one; `None` writes every cursor whole (the replay's form).
pub(crate) fn cursor(out: &mut Vec<u8>, last: &mut Option<&mut Vec<u8>>, bytes: &[u8]) {
    match last {
        Some(l) if !bytes.is_empty() && l.as_slice() == bytes => out.push(b'^'),
        Some(l) => {
            hex(out, bytes);
            l.clear();
            l.extend_from_slice(bytes);
        }
        None => hex(out, bytes),
    }
}

/// The two-digit numbers 00 to 99, for [`num`].
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// A number in decimal, two digits at a time, without the formatting machinery (the recorder
/// writes several per event).
fn num(out: &mut Vec<u8>, mut n: u64) {
    if n < 10 {
        out.push(b'0' + n as u8);
        return;
    }
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    while n >= 100 {
        let r = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        buf[at] = PAIRS[r];
        buf[at + 1] = PAIRS[r + 1];
    }
    if n >= 10 {
        let r = n as usize * 2;
        at -= 2;
        buf[at] = PAIRS[r];
        buf[at + 1] = PAIRS[r + 1];
    } else {
        at -= 1;
        buf[at] = b'0' + n as u8;
    }
    // Byte by byte: a call to copy a few digits costs more than they do.
    for &d in &buf[at..] {
        out.push(d);
    }
}

/// The header: the format, then every setting (`key=value`), then the counters a test loader
/// started from, if not the defaults.
/// The host's `compare` answers, one character each (`<`, `=`, `>`).
fn orderings(out: &mut Vec<u8>, answers: &[std::cmp::Ordering]) {
    for a in answers {
        out.push(match a {
            std::cmp::Ordering::Less => b'<',
            std::cmp::Ordering::Equal => b'=',
            std::cmp::Ordering::Greater => b'>',
        });
    }
}

fn header(config: &Config, counters: Option<(u64, u64)>) -> String {
    let c = config;
    let mut s = format!(
        "{LOG_MAGIC}\nconfig page_size={} prefetch_distance={} drop_margin={} max_pages={} jump_threshold={} cursor_memo_bytes={} backoff_initial_ms={} backoff_max_ms={} backoff_multiplier={:?} max_auto_retries={} jitter_seed={} read_timeout_ms={} recheck_full={} commit_overtaken={}\n",
        c.page_size,
        c.prefetch_distance,
        c.drop_margin,
        c.max_pages,
        c.jump_threshold,
        c.cursor_memo_bytes,
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

/// One effect, as a drain line writes it (see docs/RECORDING.md); `last` as for [`cursor`].
pub(crate) fn effect(out: &mut Vec<u8>, last: &mut Option<&mut Vec<u8>>, e: &Effect) {
    match e {
        Effect::Issue(r) => {
            out.push(b'I');
            num(out, r.read_id);
            out.push(b',');
            num(out, r.request_id);
            out.extend_from_slice(match r.kind {
                Kind::Finite => b",f,",
                Kind::Chain => b",c,",
                Kind::Full => b",F,",
            });
            num(out, r.epoch);
            out.push(b',');
            num(out, u64::from(r.step));
            out.push(b',');
            cursor(out, last, &r.cursor);
            out.push(b',');
            num(out, u64::from(r.limit));
            out.extend_from_slice(match r.direction {
                super::Direction::Forward => b",f,",
                super::Direction::Backward => b",b,",
            });
            match &r.until {
                Some(u) => cursor(out, last, u),
                None => out.push(b'.'),
            }
        }
        Effect::Release { acquisition } => {
            out.push(b'R');
            num(out, *acquisition);
        }
        Effect::Cancel { read_id } => {
            out.push(b'X');
            num(out, *read_id);
        }
        Effect::Changed => out.push(b'C'),
    }
}

/// One batch of effects, as a drain line writes it after `> `: space-separated, and a run of
/// releases of consecutive acquisitions as one `R<first>..<last>` (a repair's commit releases
/// a view's pages at once). With `last` `None`, the replay's form: every effect whole.
pub(crate) fn effects(out: &mut Vec<u8>, mut last: Option<&mut Vec<u8>>, batch: &[Effect]) {
    let compact = last.is_some();
    let mut i = 0;
    while i < batch.len() {
        if i > 0 {
            out.push(b' ');
        }
        if let Effect::Release { acquisition: first } = batch[i] {
            let mut last = first;
            let mut j = i + 1;
            while let Some(Effect::Release { acquisition }) = batch.get(j) {
                if last.checked_add(1) != Some(*acquisition) {
                    break;
                }
                last = *acquisition;
                j += 1;
            }
            if j - i > 2 && compact {
                out.push(b'R');
                num(out, first);
                out.extend_from_slice(b"..");
                num(out, last);
                i = j;
                continue;
            }
        }
        effect(out, &mut last, &batch[i]);
        i += 1;
    }
}

/// A call's line, less its result.
fn call(out: &mut Vec<u8>, last: &mut Vec<u8>, c: &Call<'_>) {
    let last = &mut Some(last);
    match *c {
        Call::Hints(heard) => out.extend_from_slice(if heard { b"h 1" } else { b"h 0" }),
        Call::Window(start, len) => {
            out.extend_from_slice(b"w ");
            num(out, start);
            out.push(b' ');
            num(out, len);
        }
        Call::Located { start, len, answer } => {
            out.extend_from_slice(b"W ");
            num(out, start);
            out.push(b' ');
            num(out, len);
            out.push(b' ');
            match answer {
                None => out.push(b'.'),
                Some(None) => out.push(b'?'),
                Some(Some(c)) => cursor(out, last, c),
            }
        }
        Call::Tick(now) => {
            out.extend_from_slice(b"t ");
            num(out, now);
        }
        Call::Settle {
            read_id,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            items_before,
            answers,
        } => {
            out.extend_from_slice(b"s ");
            num(out, read_id);
            out.push(b' ');
            num(out, acquisition);
            out.push(b' ');
            num(out, u64::from(count));
            out.push(b' ');
            cursor(out, last, next_cursor);
            out.extend_from_slice(if end_of_source { b" 1 " } else { b" 0 " });
            match items_before {
                Some(n) => num(out, n),
                None => out.push(b'.'),
            }
            if !answers.is_empty() {
                out.push(b' ');
                orderings(out, answers);
            }
        }
        Call::Fail(read_id, code) => {
            out.extend_from_slice(b"f ");
            num(out, read_id);
            out.push(b' ');
            let _ = write!(out, "{code}");
        }
        Call::Abandon(read_id) => {
            out.extend_from_slice(b"a ");
            num(out, read_id);
        }
        Call::Invalidate => out.push(b'v'),
        Call::Range { from, to, answers } => {
            out.extend_from_slice(b"V ");
            cursor(out, last, from);
            out.push(b' ');
            match to {
                Some(t) => cursor(out, last, t),
                None => out.push(b'.'),
            }
            out.push(b' ');
            if answers.is_empty() {
                out.push(b'-');
            }
            orderings(out, answers);
        }
        Call::Jump(at, position) => {
            out.extend_from_slice(b"j ");
            cursor(out, last, at);
            out.push(b' ');
            num(out, position);
        }
        Call::Appended => out.push(b'g'),
        Call::Follow(on) => out.extend_from_slice(if on { b"F 1" } else { b"F 0" }),
        Call::Retry => out.push(b'y'),
        Call::Close => out.push(b'x'),
    }
}

/// What a call returned, as the log writes it after ` = `.
pub(crate) trait Outcome {
    /// Appends it.
    fn write(&self, out: &mut Vec<u8>);
}

impl Outcome for () {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"ok");
    }
}

impl Outcome for bool {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if *self { b"ok started" } else { b"ok idle" });
    }
}

impl Outcome for Answer {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self {
            Answer::Current => b"ok current",
            Answer::Stale => b"ok stale",
            Answer::CursorStalled => b"ok stalled",
        });
    }
}

impl<T: Outcome> Outcome for Result<T, LoaderError> {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Ok(v) => v.write(out),
            Err(e) => {
                let _ = write!(out, "err {e:?}");
            }
        }
    }
}

impl Recorder {
    /// A line was added: writes the buffer out once it is full.
    #[inline]
    fn line_done(&mut self) {
        if self.buf.len() >= BUFFER {
            self.write_out();
        }
    }

    /// Writes the buffer to the sink, if there is one.
    fn write_out(&mut self) {
        if let Some(sink) = self.sink.as_mut() {
            if !self.broken && sink.write_all(&self.buf).is_err() {
                self.broken = true;
            }
            self.buf.clear();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.write_out();
        if let Some(sink) = self.sink.as_mut() {
            let _ = sink.flush();
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
            buf: header(&self.config, counters).into_bytes(),
            sealed: false,
            broken: false,
            last: Vec::new(),
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
                r.buf.reserve(BUFFER);
                r.line_done();
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

    /// Writes what is buffered of the recording to its sink, and flushes the sink. (Dropping
    /// the loader does too.)
    pub fn flush_recording(&mut self) {
        if let Some(r) = self.record.0.as_deref_mut() {
            r.write_out();
            if let Some(s) = r.sink.as_mut() {
                if s.flush().is_err() {
                    r.broken = true;
                }
            }
        }
    }

    /// Whether [`Loader::note`] would write anything: an entry point on the hot path asks
    /// first, so that it builds no [`Call`] when nothing is recorded.
    #[inline]
    pub(super) fn noting(&self) -> bool {
        self.record.0.is_some()
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
            if rec.broken {
                return;
            }
            call(&mut rec.buf, &mut rec.last, &c);
            if !matches!(c, Call::Hints(_) | Call::Close) {
                rec.buf.extend_from_slice(b" = ");
                r.write(&mut rec.buf);
            }
            rec.buf.push(b'\n');
            rec.line_done();
        }
    }

    /// Writes one batch of effects handed to the host, when recording.
    #[inline]
    pub(super) fn note_effects(&mut self, effects: &[Effect]) {
        if !effects.is_empty() && self.record.0.is_some() {
            self.note_effects_recorded(effects);
        }
    }

    /// [`Loader::note_effects`] while recording: out of the host's loop.
    #[cold]
    #[inline(never)]
    fn note_effects_recorded(&mut self, effects: &[Effect]) {
        if let Some(rec) = self.record.0.as_deref_mut() {
            if rec.sink.is_none() || rec.broken {
                return;
            }
            rec.buf.extend_from_slice(b"> ");
            self::effects(&mut rec.buf, Some(&mut rec.last), effects);
            rec.buf.push(b'\n');
            rec.line_done();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A sink whose bytes the test reads back; `fail` makes every write fail.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>, bool);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.1 {
                return Err(std::io::Error::other("full"));
            }
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn text(s: &Shared) -> String {
        String::from_utf8(s.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn the_creations_calls_are_kept_until_the_first_call() {
        let mut l = Loader::new(Config::default()).unwrap();
        l.hold_prelude();
        l.set_cancel_hints_heard(false);
        l.jump(&[1, 2], 5).unwrap();
        l.seal_prelude();
        let s = Shared::default();
        l.record_to(Box::new(s.clone())).unwrap();
        l.set_window(5, 10).unwrap();
        l.flush_recording();
        let lines: Vec<String> = text(&s).lines().map(str::to_string).collect();
        assert_eq!(lines[0], LOG_MAGIC);
        assert_eq!(&lines[2..5], ["h 0", "j 0102 5 = ok", "w 5 10 = ok"]);
        // A second recording is refused.
        assert_eq!(
            l.record_to(Box::new(Shared::default())),
            Err(LoaderError::RecordTooLate)
        );
    }

    #[test]
    fn a_recording_asked_after_the_first_call_is_refused() {
        let mut l = Loader::new(Config::default()).unwrap();
        l.hold_prelude();
        l.seal_prelude();
        l.set_window(0, 10).unwrap();
        assert!(!l.may_record());
        assert_eq!(
            l.record_to(Box::new(Shared::default())),
            Err(LoaderError::RecordTooLate)
        );
        // Never asked: nothing held.
        assert!(l.record.0.is_none());
    }

    #[test]
    fn a_clone_does_not_record_and_a_failing_sink_stops_the_recording() {
        let s = Shared::default();
        let mut l = Loader::recorded(Config::default(), Box::new(s.clone())).unwrap();
        let mut c = l.clone();
        assert!(l.is_recording() && !c.is_recording());
        c.set_window(0, 7).unwrap();
        l.flush_recording();
        assert!(!text(&s).contains("w 0 7"));
        let failing = Shared(Arc::default(), true);
        let mut l2 = Loader::recorded(Config::default(), Box::new(failing)).unwrap();
        // The calls still work; the recording broke at its first write.
        l2.set_window(0, 10).unwrap();
        l2.take_effects();
        l2.flush_recording();
        assert!(l2.record.0.as_ref().unwrap().broken);
        l2.set_window(0, 20).unwrap();
        assert!(l2.record.0.as_ref().unwrap().buf.is_empty());
        l.set_window(0, 3).unwrap();
        l.flush_recording();
        assert!(text(&s).contains("w 0 3 = ok"));
    }

    #[test]
    fn the_header_names_every_setting() {
        // A setting the header leaves out would be replayed at its default: every field of
        // `Config` (as its `Debug` names them) must be written.
        let header = header(&Config::default(), None);
        let debug = format!("{:?}", Config::default());
        let fields = debug
            .trim_start_matches("Config {")
            .trim_end_matches('}')
            .split(", ")
            .map(|f| f.split(':').next().unwrap().trim().to_string());
        for f in fields {
            assert!(
                header.contains(&format!(" {f}=")),
                "{f} is not in {header:?}"
            );
        }
    }

    #[test]
    fn a_run_of_releases_is_one_token_and_a_repeated_cursor_a_caret() {
        let batch = [
            Effect::Release { acquisition: 4 },
            Effect::Release { acquisition: 5 },
            Effect::Release { acquisition: 6 },
            Effect::Release { acquisition: 9 },
            Effect::Changed,
        ];
        let mut last = b"ab".to_vec();
        let mut out = Vec::new();
        effects(&mut out, Some(&mut last), &batch);
        assert_eq!(out, b"R4..6 R9 C");
        out.clear();
        effects(&mut out, None, &batch);
        assert_eq!(out, b"R4 R5 R6 R9 C");
        out.clear();
        let mut l = Some(&mut last);
        cursor(&mut out, &mut l, b"ab");
        cursor(&mut out, &mut l, b"");
        cursor(&mut out, &mut l, b"");
        assert_eq!(out, b"^--");
    }
}

#[cfg(test)]
mod num_tests {
    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [
            0,
            7,
            9,
            10,
            42,
            99,
            100,
            101,
            999,
            1000,
            65_535,
            1 << 40,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            super::num(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }
}
