//! Reading a recorded log (the format `loader::record` writes; docs/RECORDING.md): its header
//! (the settings, the counters a test loader started from) and its entries, one a line.

use crate::loader::{Config, LOG_MAGIC};
use std::cmp::Ordering;

/// One call into the loader, with its arguments as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `set_cancel_hints_heard`.
    Hints(bool),
    /// `set_window(start, len)`.
    Window(u64, u64),
    /// `set_window_located(start, len, locate)`, with what `locate` answered: not asked
    /// (`None`), unknown (`Some(None)`), or a cursor.
    Located {
        /// The window's start.
        start: u64,
        /// Its length.
        len: u64,
        /// The host's answer.
        answer: Option<Option<Vec<u8>>>,
    },
    /// `tick(now_ms)`: the host's clock.
    Tick(u64),
    /// `settle_counted`.
    Settle {
        /// The read answered.
        read_id: u64,
        /// The host's token for the items.
        acquisition: u64,
        /// How many items.
        count: u32,
        /// The cursor after them.
        next_cursor: Vec<u8>,
        /// The end flag.
        end_of_source: bool,
        /// The items before the page, if the host counted them.
        items_before: Option<u64>,
        /// What `compare` answered, in the order the loader asked (`settle_ordered`); empty
        /// when it asked nothing.
        answers: Vec<Ordering>,
    },
    /// `fail(read_id, code)`.
    Fail(u64, i32),
    /// `abandon(read_id)`.
    Abandon(u64),
    /// `invalidate()`.
    Invalidate,
    /// `invalidate_range(from, to, compare)`, with the host's `compare` answers in order.
    Range {
        /// The range's start.
        from: Vec<u8>,
        /// Its end; `None` is the source's end.
        to: Option<Vec<u8>>,
        /// What `compare` answered, in the order the loader asked.
        answers: Vec<Ordering>,
    },
    /// `jump(cursor, position)`.
    Jump(Vec<u8>, u64),
    /// `appended()`.
    Appended,
    /// `follow(on)`.
    Follow(bool),
    /// `retry()`.
    Retry,
    /// `close()`.
    Close,
}

/// One line of a log after its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A call and what it returned (as the log writes it; none for `h` and `x`).
    Call(Call, Option<String>),
    /// One batch of effects handed to the host, each written whole (no `^`, no release runs).
    Effects(String),
}

/// A parsed log.
#[derive(Clone, Debug)]
pub struct Log {
    /// The loader's settings.
    pub config: Config,
    /// The epoch and first request id a test loader started from, if not the defaults.
    pub counters: Option<(u64, u64)>,
    /// The entries, each with its line number (1-based) and its text.
    pub entries: Vec<(usize, String, Entry)>,
}

fn bytes(s: &str) -> Result<Vec<u8>, String> {
    if s == "-" {
        return Ok(Vec::new());
    }
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd hex {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| format!("bad hex {s:?}")))
        .collect()
}

/// A cursor field: hex, `-`, or `^` (the cursor field before it in the log, `last`), which it
/// then becomes.
fn cursor(s: &str, last: &mut Vec<u8>) -> Result<Vec<u8>, String> {
    let b = if s == "^" {
        if last.is_empty() {
            return Err("`^` with no cursor before it".into());
        }
        last.clone()
    } else {
        bytes(s)?
    };
    last.clone_from(&b);
    Ok(b)
}

/// Cursor bytes in the replay's form: hex, `-` for the empty cursor.
fn whole(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".into();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A drain line's effects in the replay's form: every effect whole, `^` and `R<a>..<b>`
/// written out.
fn expand(text: &str, last: &mut Vec<u8>) -> Result<String, String> {
    let mut out = Vec::new();
    for t in text.split(' ').filter(|t| !t.is_empty()) {
        if let Some(rest) = t.strip_prefix('I') {
            let mut f: Vec<String> = rest.split(',').map(str::to_string).collect();
            if f.len() != 9 {
                return Err(format!("bad issue {t:?}"));
            }
            f[5] = whole(&cursor(&f[5], last)?);
            if f[8] != "." {
                f[8] = whole(&cursor(&f[8], last)?);
            }
            out.push(format!("I{}", f.join(",")));
        } else if let Some((a, b)) = t.strip_prefix('R').and_then(|r| r.split_once("..")) {
            let (a, b): (u64, u64) = (num(Some(a))?, num(Some(b))?);
            if b < a || b - a > 1 << 20 {
                return Err(format!("bad release run {t:?}"));
            }
            out.extend((a..=b).map(|x| format!("R{x}")));
        } else {
            out.push(t.to_string());
        }
    }
    Ok(out.join(" "))
}

fn num<T: std::str::FromStr>(s: Option<&str>) -> Result<T, String> {
    let s = s.ok_or("a field is missing")?;
    s.parse().map_err(|_| format!("bad number {s:?}"))
}

fn flag(s: Option<&str>) -> Result<bool, String> {
    match s {
        Some("0") => Ok(false),
        Some("1") => Ok(true),
        other => Err(format!("bad flag {other:?}")),
    }
}

fn config(line: &str) -> Result<Config, String> {
    let mut c = Config::default();
    for kv in line.split_whitespace().skip(1) {
        let (k, v) = kv.split_once('=').ok_or(format!("bad setting {kv:?}"))?;
        let v = Some(v);
        match k {
            "page_size" => c.page_size = num(v)?,
            "prefetch_distance" => c.prefetch_distance = num(v)?,
            "drop_margin" => c.drop_margin = num(v)?,
            "max_pages" => c.max_pages = num(v)?,
            "jump_threshold" => c.jump_threshold = num(v)?,
            "cursor_memo_bytes" => c.cursor_memo_bytes = num(v)?,
            "backoff_initial_ms" => c.backoff_initial_ms = num(v)?,
            "backoff_max_ms" => c.backoff_max_ms = num(v)?,
            "backoff_multiplier" => c.backoff_multiplier = num(v)?,
            "max_auto_retries" => c.max_auto_retries = num(v)?,
            "jitter_seed" => c.jitter_seed = num(v)?,
            "read_timeout_ms" => c.read_timeout_ms = num(v)?,
            "recheck_full" => c.recheck_full = flag(v)?,
            "commit_overtaken" => c.commit_overtaken = flag(v)?,
            _ => {
                return Err(format!(
                    "unknown setting {k:?}: a newer library wrote this log"
                ))
            }
        }
    }
    Ok(c)
}

/// The host's `compare` answers, one character each.
fn orderings(a: &str) -> Result<Vec<Ordering>, String> {
    a.chars()
        .map(|c| match c {
            '<' => Ok(Ordering::Less),
            '=' => Ok(Ordering::Equal),
            '>' => Ok(Ordering::Greater),
            _ => Err(format!("bad compare answer {c:?}")),
        })
        .collect()
}

fn call(text: &str, last: &mut Vec<u8>) -> Result<(Call, Option<String>), String> {
    // The last " = ": compare answers may be "=", results never hold one.
    let (head, result) = match text.rsplit_once(" = ") {
        Some((h, r)) => (h, Some(r.to_string())),
        None => (text, None),
    };
    let mut f = head.split(' ');
    let op = f.next().unwrap_or_default();
    let c = match op {
        "h" => Call::Hints(flag(f.next())?),
        "w" => Call::Window(num(f.next())?, num(f.next())?),
        "W" => Call::Located {
            start: num(f.next())?,
            len: num(f.next())?,
            answer: match f.next().ok_or("no locate answer")? {
                "." => None,
                "?" => Some(None),
                c => Some(Some(cursor(c, last)?)),
            },
        },
        "t" => Call::Tick(num(f.next())?),
        "s" => Call::Settle {
            read_id: num(f.next())?,
            acquisition: num(f.next())?,
            count: num(f.next())?,
            next_cursor: cursor(f.next().ok_or("no cursor")?, last)?,
            end_of_source: flag(f.next())?,
            items_before: match f.next() {
                Some(".") => None,
                n => Some(num(n)?),
            },
            answers: match f.next() {
                None => Vec::new(),
                Some(a) => orderings(a)?,
            },
        },
        "f" => Call::Fail(num(f.next())?, num(f.next())?),
        "a" => Call::Abandon(num(f.next())?),
        "v" => Call::Invalidate,
        "V" => Call::Range {
            from: cursor(f.next().ok_or("no range start")?, last)?,
            to: match f.next().ok_or("no range end")? {
                "." => None,
                t => Some(cursor(t, last)?),
            },
            answers: match f.next().ok_or("no compare answers")? {
                "-" => Vec::new(),
                a => orderings(a)?,
            },
        },
        "j" => Call::Jump(cursor(f.next().ok_or("no cursor")?, last)?, num(f.next())?),
        "g" => Call::Appended,
        "F" => Call::Follow(flag(f.next())?),
        "y" => Call::Retry,
        "x" => Call::Close,
        _ => return Err(format!("unknown call {op:?}")),
    };
    if f.next().is_some() {
        return Err("extra fields".into());
    }
    let wants_result = !matches!(c, Call::Hints(_) | Call::Close);
    if wants_result != result.is_some() {
        return Err("a call's result is missing or unexpected".into());
    }
    Ok((c, result))
}

/// Parses a log; `Err` names the line that is not in the format.
pub fn parse(text: &str) -> Result<Log, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l == LOG_MAGIC => {}
        Some((_, l)) if l.starts_with("loader-log ") => {
            return Err(format!("line 1: {l:?}: this replayer reads {LOG_MAGIC:?}"))
        }
        _ => return Err("line 1: not a loader log".into()),
    }
    let mut log = Log {
        config: Config::default(),
        counters: None,
        entries: Vec::new(),
    };
    let mut seen_config = false;
    let mut last = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let at = |e: String| format!("line {n}: {e}: {line:?}");
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('>') {
            let effects = rest.strip_prefix(' ').unwrap_or(rest);
            let effects = expand(effects, &mut last).map_err(at)?;
            log.entries
                .push((n, line.to_string(), Entry::Effects(effects)));
        } else if line.starts_with("config ") {
            log.config = config(line).map_err(at)?;
            seen_config = true;
        } else if let Some(rest) = line.strip_prefix("counters ") {
            let mut f = rest.split(' ');
            log.counters = Some((num(f.next()).map_err(at)?, num(f.next()).map_err(at)?));
        } else {
            let (c, r) = call(line, &mut last).map_err(at)?;
            log.entries.push((n, line.to_string(), Entry::Call(c, r)));
        }
    }
    if !seen_config {
        return Err("the log has no config line".into());
    }
    Ok(log)
}
