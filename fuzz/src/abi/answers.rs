//! Answers to reads: `loader_settle` and `loader_fail`, and the codes and classes they must give.
//!
//! The read id is outstanding, answered, never issued or garbage; the answer's class must say
//! a stalled cursor or a cancelled read.

use super::calls::Cursor;
use super::host::Read;
use super::report::tally;
use super::world::{Books, World};
use super::R;
use crate::input::Input;
use loader::ffi::*;

impl World {
    /// Picks a read id from `host`'s books: usually an outstanding read, sometimes one already
    /// answered, one never issued, or garbage. Returns the id and the read if outstanding.
    fn pick_read(&self, b: Books, input: &mut Input) -> (u64, Option<Read>) {
        let host = self.host(b);
        let (id, pending) = {
            let bk = host.books.borrow();
            let id = match input.byte() % 8 {
                0..=4 if !bk.pending.is_empty() => {
                    bk.pending[input.below(256) % bk.pending.len()].id
                }
                5 if !bk.answered.is_empty() => bk.answered[input.below(256) % bk.answered.len()],
                6 => bk.max_read + 1,
                7 => input.near(bk.max_read),
                _ => bk.pending.first().map_or(0, |r| r.id),
            };
            (id, bk.pending.iter().any(|r| r.id == id))
        };
        (id, if pending { host.take_pending(id) } else { None })
    }

    /// The read-id check, for a live loader: unknown, already answered, or outstanding. A
    /// read the host let go of (failed after its hint) may be answered again, late: accepted
    /// as stale, or refused once the loader no longer remembers it.
    fn read_code(&self, b: Books, id: u64, read: &Option<Read>) -> Option<Vec<R>> {
        if read.is_some() {
            return None;
        }
        let books = self.host(b).books.borrow();
        Some(if id == 0 || id > books.max_read {
            vec![R::UnknownRead]
        } else if books.let_go.contains(&id) {
            // A late answer is checked as any answer is: its count against the read's limit.
            vec![R::AlreadyAnswered, R::Ok, R::CountOverLimit]
        } else {
            vec![R::AlreadyAnswered]
        })
    }

    /// `loader_settle` with a good, short, long or zero count and a good, stalled, long or
    /// NULL cursor.
    pub(super) fn op_settle(&mut self, input: &mut Input) {
        let (h, t, b) = self.choose(input);
        let before = self.before(t);
        let (id, read) = self.pick_read(b, input);
        let host = self.host(b);
        let (good, next, eos) = read.as_ref().map_or((1, 1, false), |r| host.good_answer(r));
        let limit = read.as_ref().map_or(host.page_size, |r| r.limit);
        let count = match input.byte() % 16 {
            0..=10 => good,
            11 => 0,
            12 => limit,
            13 => limit.saturating_add(1),
            14 => u32::MAX,
            _ => good.saturating_add(1),
        };
        let read_cursor = read.as_ref().map_or(Vec::new(), |r| r.cursor.clone());
        let mut buf = next.to_be_bytes().to_vec();
        let mut null = None;
        match input.byte() % 16 {
            0..=9 => {}
            10 => buf.resize(LOADER_MAX_CURSOR_LEN, 0x5a),
            11 => buf = read_cursor.clone(),
            12 => null = Some(0),
            13 => buf.clear(),
            14 => match input.byte() % 3 {
                0 => buf.resize(LOADER_MAX_CURSOR_LEN + 1, 0xa5),
                1 => null = Some(1 + input.below(16)),
                _ => null = Some(usize::MAX),
            },
            _ => {
                let n = 1 + input.below(12);
                buf = input.take(n).to_vec();
            }
        }
        let cursor = match null {
            Some(len) => Cursor::Null(len),
            None => Cursor::Bytes(&buf),
        };
        let (clen, cnull) = match cursor {
            Cursor::Null(len) => (len, true),
            Cursor::Bytes(b) => (b.len(), false),
        };
        let eos = if input.byte().is_multiple_of(8) {
            !eos
        } else {
            eos
        };
        let want_out = !input.byte().is_multiple_of(4);
        let sent: &[u8] = match cursor {
            Cursor::Bytes(b) => b,
            Cursor::Null(_) => &[],
        };
        // The header's rule: the cursor did not move, and the page had items, or had none
        // and neither claimed the source's end nor answered a read the host was told to
        // let go.
        let hinted = host.books.borrow().cancels.contains_key(&id);
        // A host without `cancel` is never told which reads the loader let go of (a far
        // start, a jump): any of its reads may be one, and a late answer needs no id.
        let may_be_let_go = hinted || !host.has_cancel;
        // Judged against the read's own cursor, which only a read the host still holds has: an
        // answer to one it already answered or failed (in a callback, say) is a late answer to
        // a read the loader let go, stale whatever it holds.
        let stalled =
            read.is_some() && sent == read_cursor.as_slice() && (count > 0 || !(eos || hinted));
        let known = read.is_some();

        let want = if clen > LOADER_MAX_CURSOR_LEN {
            vec![R::CursorTooLong]
        } else if cnull && clen > 0 {
            vec![R::NullCursor]
        } else {
            self.want(t, &before, |o| {
                if let Some(c) = self.read_code(b, id, &read) {
                    c
                } else if count > limit {
                    vec![R::CountOverLimit]
                } else if o.ids_spent() && may_be_let_go {
                    // A read the loader let go of (a far start, a jump; hinted, or any read of
                    // a host without `cancel`) takes a late answer as stale, which needs no id.
                    vec![R::IdOverflow, R::Ok]
                } else if o.ids_spent() {
                    vec![R::IdOverflow]
                } else if o.one_id_left() || o.epochs_spent() {
                    // An answer that decides a ranged change ahead of its read (unseen here)
                    // takes an epoch and may start two requests: refused, changing nothing.
                    vec![R::Ok, R::IdOverflow, R::EpochOverflow]
                } else {
                    vec![R::Ok]
                }
            })
        };
        let cancelled = host.books.borrow().cancels.contains_key(&id);
        // The loader lets a superseded read go once `read_timeout_ms` of tick time passed (for
        // a host that hears hints, a hinted one): the answer is then a late one, stale
        // whatever it holds. It cannot have happened before `issued_at + read_timeout_ms`.
        let timeout = host.read_timeout_ms;
        let may_have_timed_out = timeout != 0
            && (!host.has_cancel || cancelled)
            && read
                .as_ref()
                .is_some_and(|r| host.books.borrow().now >= r.issued_at.saturating_add(timeout));
        // A far move or `loader_jump` lets a repair's read go at once, with its hint (never
        // heard by a host without `cancel`): its answer is then a late one too.
        let may_have_timed_out = may_have_timed_out
            || ((!host.has_cancel || cancelled) && read.as_ref().is_some_and(|r| r.repair));
        // A sentinel the call must overwrite: the wrong class for this answer.
        let mut answer = if stalled {
            loader_answer::Current
        } else {
            loader_answer::CursorStalled
        };
        let r = host.settle(
            h,
            id,
            read,
            count,
            cursor,
            eos,
            want_out.then_some(&mut answer),
        );
        self.log(format!(
            "settle({h:#x}, read {id}, count {count}/{limit}, cursor {clen}{}, eos {eos}) -> {r:?} {answer:?}",
            if cnull { " NULL" } else { "" }
        ));
        self.check("loader_settle", "settle", r, &want);
        if r == R::Ok && want_out {
            tally(
                match (stalled, cancelled) {
                    (true, _) => "loader_settle answer: stalled cursor",
                    (false, true) => "loader_settle answer: a cancelled read",
                    (false, false) => "loader_settle answer: other",
                },
                answer,
            );
            let bad = if !known {
                answer != loader_answer::Stale
            } else if stalled {
                answer != loader_answer::CursorStalled
                    && !(may_have_timed_out && answer == loader_answer::Stale)
            } else {
                answer == loader_answer::CursorStalled
                    || (cancelled && answer == loader_answer::Current)
            };
            if bad {
                self.fail(format!(
                    "read {id} (stalled {stalled}, cancelled {cancelled}) classified {answer:?}"
                ));
            }
        }
        self.unchanged(r, &before, "settle");
    }

    /// `loader_fail` with any error code.
    pub(super) fn op_fail(&mut self, input: &mut Input) {
        let (h, t, b) = self.choose(input);
        let before = self.before(t);
        let (id, read) = self.pick_read(b, input);
        let code = input.u32() as i32;
        let want_out = input.bool();
        let hinted = self.host(b).books.borrow().cancels.contains_key(&id);
        // As for settle: a host without `cancel` is not told which reads were let go.
        let may_be_let_go = hinted || !self.host(b).has_cancel;
        let want = self.want(t, &before, |o| {
            if let Some(c) = self.read_code(b, id, &read) {
                c
            } else if o.ids_spent() && may_be_let_go {
                // A read the loader let go of (a far start, a jump): a late failure is stale,
                // and needs no id.
                vec![R::IdOverflow, R::Ok]
            } else if o.ids_spent() {
                vec![R::IdOverflow]
            } else {
                vec![R::Ok]
            }
        });
        let host = self.host(b);
        let cancelled = host.books.borrow().cancels.contains_key(&id);
        let mut answer = loader_answer::CursorStalled;
        let r = host.fail(h, id, read, code, want_out.then_some(&mut answer));
        self.log(format!(
            "fail({h:#x}, read {id}, {code}) -> {r:?} {answer:?}"
        ));
        self.check("loader_fail", "fail", r, &want);
        if r == R::Ok && want_out {
            tally(
                if cancelled {
                    "loader_fail answer: a cancelled read"
                } else {
                    "loader_fail answer: other"
                },
                answer,
            );
        }
        if r == R::Ok
            && want_out
            && (answer == loader_answer::CursorStalled
                || (cancelled && answer != loader_answer::Stale))
        {
            self.fail(format!(
                "failed read {id} (cancelled {cancelled}) classified {answer:?}"
            ));
        }
        self.unchanged(r, &before, "fail");
    }
}
