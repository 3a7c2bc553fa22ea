//! Calls that name positions of the source: `loader_invalidate_range` and `loader_jump`, and
//! their codes.
//!
//! Cursors are big-endian positions near the view or the window, empty, NULL with or without a
//! length, too long, or short garbage. The host's `compare` (when it has one) orders cursors as
//! bytes, so a range is reversed exactly when its `to` sorts before its `from`.

use super::calls::{self, Cursor};
use super::world::{Target, World};
use super::R;
use crate::input::Input;
use loader::ffi::*;

/// A cursor argument, owned: these bytes, or NULL with this length.
enum Arg {
    Bytes(Vec<u8>),
    Null(usize),
}

impl Arg {
    fn as_cursor(&self) -> Cursor<'_> {
        match self {
            Arg::Bytes(b) => Cursor::Bytes(b),
            Arg::Null(len) => Cursor::Null(*len),
        }
    }

    fn len(&self) -> usize {
        match self {
            Arg::Bytes(b) => b.len(),
            Arg::Null(len) => *len,
        }
    }

    /// The code the library's cursor check gives it, if any: the length first, then NULL.
    fn refusal(&self) -> Option<R> {
        match self {
            _ if self.len() > LOADER_MAX_CURSOR_LEN => Some(R::CursorTooLong),
            Arg::Null(len) if *len > 0 => Some(R::NullCursor),
            _ => None,
        }
    }

    /// The bytes a valid argument names (NULL of length 0 is empty).
    fn bytes(&self) -> &[u8] {
        match self {
            Arg::Bytes(b) => b,
            Arg::Null(_) => &[],
        }
    }
}

impl World {
    /// A cursor near `around` (a position of the view or the window), or an edge case.
    fn position_arg(&self, input: &mut Input, around: u64) -> Arg {
        match input.byte() % 16 {
            0..=8 => Arg::Bytes(input.near(around).to_be_bytes().to_vec()),
            9 => Arg::Bytes(u64::from(input.byte() % 64).to_be_bytes().to_vec()),
            10 => Arg::Bytes(Vec::new()),
            11 => Arg::Null(0),
            12 => Arg::Null(
                [
                    1,
                    8,
                    LOADER_MAX_CURSOR_LEN,
                    LOADER_MAX_CURSOR_LEN + 1,
                    usize::MAX,
                ][input.below(5)],
            ),
            13 => Arg::Bytes(vec![0xab; LOADER_MAX_CURSOR_LEN + 1]),
            14 => Arg::Bytes(vec![0x01; LOADER_MAX_CURSOR_LEN]),
            _ => {
                let n = input.below(12);
                Arg::Bytes(input.take(n).to_vec())
            }
        }
    }

    /// `loader_invalidate_range` (most often) or `loader_jump`.
    pub(super) fn op_positions(&mut self, input: &mut Input) {
        if input.byte().is_multiple_of(4) {
            self.op_jump(input);
        } else {
            self.op_invalidate_range(input);
        }
    }

    /// `loader_invalidate_range` over positions near the view, the whole source, or bad
    /// cursors. Codes: the cursors' (from, then to) before the handle's, then `NO_COMPARE`,
    /// `RANGE_REVERSED`, and the overflows.
    fn op_invalidate_range(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let (cs, ce) = before.as_ref().map_or((0, 0), |(_, o, _)| {
            (o.snap.covered_start, o.snap.covered_end)
        });
        let from = self.position_arg(input, cs + (ce - cs) / 2);
        let to = match input.byte() % 4 {
            0 => Arg::Null(0), // the source's end
            _ => self.position_arg(input, cs + (ce - cs) / 2),
        };
        let compare = match t {
            Target::Live(i) => self.slots[i].as_ref().expect("live").has_compare,
            _ => false,
        };
        let to_end = matches!(to, Arg::Null(0));
        let want = match from.refusal().or_else(|| to.refusal()) {
            Some(code) => vec![code],
            None => self.want(t, &before, |o| {
                let reversed = !to_end && {
                    let (f, e) = (from.bytes(), to.bytes());
                    match (f.is_empty(), e.is_empty()) {
                        (_, true) => !f.is_empty(),
                        (true, false) => false,
                        (false, false) => f > e,
                    }
                };
                if !compare {
                    vec![R::NoCompare]
                } else if reversed {
                    vec![R::RangeReversed]
                } else if o.snap.epoch == u64::MAX {
                    vec![R::EpochOverflow]
                } else if o.ids_spent() {
                    vec![R::IdOverflow]
                } else {
                    vec![R::Ok]
                }
            }),
        };
        let r = calls::invalidate_range(h, from.as_cursor(), to.as_cursor());
        self.log(format!(
            "invalidate_range({h:#x}, from {:x?}, to {}) -> {r:?}",
            from.bytes().get(..8).unwrap_or(from.bytes()),
            if to_end {
                "end".to_string()
            } else {
                format!("{:x?}", to.bytes().get(..8).unwrap_or(to.bytes()))
            }
        ));
        self.check("loader_invalidate_range", "invalidate_range", r, &want);
        self.unchanged(r, &before, "invalidate_range");
    }

    /// `loader_jump` near the view or anywhere. Codes: the cursor's before the handle's, then
    /// `WINDOW_OVERFLOW`, then the overflows, only when the loader is not idle (an idle one
    /// moves without an invalidation).
    fn op_jump(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let (ce, ws) = before.as_ref().map_or((0, 0), |(_, o, _)| {
            (o.snap.covered_end, o.snap.window_start)
        });
        let cursor = self.position_arg(input, ce);
        let position = match input.byte() % 4 {
            0 | 1 => input.near(ws),
            2 => u64::from(input.byte()),
            _ => input.u64(),
        };
        let want = match cursor.refusal() {
            Some(code) => vec![code],
            None => self.want(t, &before, |o| {
                let s = &o.snap;
                if position > 1 << 62 || position.checked_add(s.window_len).is_none() {
                    return vec![R::WindowOverflow];
                }
                let idle = s.pages == 0
                    && s.outstanding_reads == 0
                    && s.phase == loader_phase::Idle
                    && s.debt == loader_debt::None
                    && s.inflight == 0;
                if idle {
                    vec![R::Ok]
                } else if s.epoch == u64::MAX {
                    vec![R::EpochOverflow]
                } else if o.ids_spent() {
                    vec![R::IdOverflow]
                } else {
                    vec![R::Ok]
                }
            }),
        };
        // The jump moves the window's start (its length kept) before the callbacks run, and
        // one of them may move it again: book it first, and put the old one back if refused.
        let old = match t {
            Target::Live(i) => {
                let host = self.slots[i].as_ref().expect("live");
                let len = host.window.get().1;
                host.window_read_at.set(host.books.borrow().changes);
                Some((i, host.window.replace((position, len))))
            }
            _ => None,
        };
        let r = calls::jump(h, cursor.as_cursor(), position);
        self.log(format!(
            "jump({h:#x}, {:x?}, {position}) -> {r:?}",
            cursor.bytes().get(..8).unwrap_or(cursor.bytes())
        ));
        self.check("loader_jump", "jump", r, &want);
        if let (Some((i, old)), true) = (old, r != R::Ok) {
            if let Some(host) = &self.slots[i] {
                host.window.set(old);
            }
        }
        self.unchanged(r, &before, "jump");
    }
}
