//! The reads: the [`Read`]s issued to the host, which of them are outstanding, and their
//! names (read ids, never reused).

use super::outbox::Outbox;
use super::requests::Work;
use super::{Cursor, Kind, LoaderError};

/// Which way a read goes from its cursor. Cursors are positions *between* items.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Up to `limit` items just after the cursor, in source order; `next_cursor` is the
    /// position after the last one, and `end_of_source` says the source's end was reached.
    #[default]
    Forward,
    /// Up to `limit` items just before the cursor, in source order; `next_cursor` is the
    /// position before the first one (a forward read from it returns these items first),
    /// and `end_of_source` says the source's start was reached.
    Backward,
}

/// A read the loader asks the host to perform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    /// Names this read in the answer (`settle` or `fail`). Never reused.
    pub read_id: u64,
    /// The ledger request the read belongs to; its acquisitions belong to that request.
    pub request_id: u64,
    /// The kind of that request: a finite read, a chain step or a full read step.
    pub kind: Kind,
    /// The epoch the request was stamped with.
    pub epoch: u64,
    /// 0 for the first read of a request; chain and full reads count up.
    pub step: u32,
    /// Where to start: bytes the host returned as `next_cursor` earlier; empty is the
    /// source's start.
    pub cursor: Cursor,
    /// At most this many items.
    pub limit: u32,
    /// Which way from `cursor`.
    pub direction: Direction,
    /// A bounded read (a ranged repair's): only the items before this position, at most
    /// `limit` of them; fewer than `limit` means it reached `until` or the source's end. An
    /// empty page whose cursor moved short of `until` is not the bound: the repair reads on.
    /// `None`: unbounded.
    pub until: Option<Cursor>,
}

/// What the loader keeps of an issued read until it is answered.
#[derive(Clone, Debug)]
pub(super) struct Outstanding {
    pub(super) request: u64,
    pub(super) kind: Kind,
    /// Where the read starts: an answer with items that returns it again stalled.
    pub(super) cursor: Cursor,
    pub(super) limit: u32,
    pub(super) direction: super::Direction,
    /// The host was told its answer is no longer needed: an empty answer to it is the host
    /// letting go of the read, never a stall, whatever its cursor.
    pub(super) cancelled: bool,
    /// Its answer is no longer needed (hinted or not), since this time (the loader's clock).
    pub(super) superseded: bool,
    pub(super) superseded_at: u64,
    /// When it was issued (the loader's clock): only `explain` reads it.
    pub(super) issued_at: u64,
}

/// What an answer needs of the read it answers (see [`Reads::answer_page`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Answered {
    pub(super) request: u64,
    pub(super) kind: Kind,
    pub(super) direction: super::Direction,
    pub(super) cancelled: bool,
    /// The answer's `next_cursor` differs from the read's cursor.
    pub(super) advanced: bool,
}

/// The outstanding reads, oldest first, and the name of the next one.
#[derive(Clone, Debug)]
pub(super) struct Reads {
    /// A short list, not a map: each in-flight request has one read, and the ledger lets at
    /// most one finite request and one chain or full read be in flight (superseded ones
    /// included), so a scan beats hashing.
    list: Vec<(u64, Outstanding)>,
    /// The next read's id; ids below it were issued.
    next: u64,
    /// The read answered last.
    last: u64,
    /// Whether the host hears `Cancel` effects. A host that does not (a C host without a
    /// `cancel` callback) was never told to let a read go, so no read counts as cancelled.
    hints_heard: bool,
    /// A forward finite read's id, and the first position of the ranged changes reported
    /// while it was out that lie after its cursor and touch nothing held. Whether its answer
    /// could contain one is decided when it arrives: it could only when it reached this
    /// position (its `next_cursor` at or past it, or a claim of the source's end). One slot:
    /// at most one finite read is out and not superseded, and only such a read is marked. The
    /// mark goes with the read's answer, failure or letting go (`take_ahead`); one left by a
    /// read superseded since (whose answer is stale whatever it reached) is replaced when
    /// another read is marked.
    ahead: Option<(u64, Cursor)>,
}

impl Reads {
    pub(super) fn new() -> Reads {
        Reads {
            list: Vec::with_capacity(4),
            next: 1,
            last: 0,
            hints_heard: true,
            ahead: None,
        }
    }

    /// Whether a change somewhere in `[from, to]` (`to` `None`: the source's end) may lie in
    /// what a read still needed returns, deciding now for every read but a forward finite
    /// read whose cursor lies before `from`. A finite read forward reads what follows its
    /// cursor, backward what comes up to its cursor; a chain or full read may have staged
    /// pages the change hits, so it always may. `le` orders two cursors, the empty one first.
    /// The reads left undecided are marked (`ahead`) when `defer` is set: their answers
    /// decide (see [`Reads::reached_ahead`]); without `defer` they count as touched.
    pub(super) fn may_touch(
        &mut self,
        from: &[u8],
        to: Option<&[u8]>,
        defer: bool,
        le: &mut dyn FnMut(&[u8], &[u8]) -> bool,
        cursors: &mut super::cursor::CursorPool,
    ) -> bool {
        let mut undecided = false;
        let now = self.list.iter().any(|(_, r)| {
            !r.superseded
                && match (r.kind, r.direction) {
                    (Kind::Chain | Kind::Full, _) => true,
                    // Some item k > cursor with k <= to; from after the cursor: its answer
                    // says whether it reached from.
                    (Kind::Finite, super::Direction::Forward) => {
                        let may = to.is_none_or(|t| !le(t, &r.cursor));
                        let later = may && !le(from, &r.cursor);
                        undecided |= later;
                        may && !(later && defer)
                    }
                    // Some item k <= cursor with k >= from.
                    (Kind::Finite, super::Direction::Backward) => le(from, &r.cursor),
                }
        });
        if now || !undecided || !defer {
            return now;
        }
        let Reads { list, ahead, .. } = self;
        for (id, r) in list.iter() {
            let later = !r.superseded
                && r.kind == Kind::Finite
                && r.direction == super::Direction::Forward
                && to.is_none_or(|t| !le(t, &r.cursor))
                && !le(from, &r.cursor);
            let marked = ahead.as_ref().filter(|(a, _)| a == id).map(|(_, c)| c);
            if later && marked.is_none_or(|a| !le(a, from)) {
                if let Some((_, old)) = ahead.replace((*id, cursors.make(from))) {
                    cursors.recycle(old);
                }
            }
        }
        false
    }

    /// The position read `read_id` is marked with, if any (see `may_touch`).
    #[inline]
    pub(super) fn ahead_of(&self, read_id: u64) -> Option<&Cursor> {
        self.ahead
            .as_ref()
            .filter(|(id, _)| *id == read_id)
            .map(|(_, c)| c)
    }

    /// Takes read `read_id`'s mark, if it has one: it is answered.
    #[inline]
    pub(super) fn take_ahead(&mut self, read_id: u64) -> Option<Cursor> {
        match self.ahead {
            Some((id, _)) if id == read_id => self.ahead.take().map(|(_, c)| c),
            _ => None,
        }
    }

    /// Whether a forward finite read marked `ahead` reached a change: its answer ends at
    /// `next_cursor` (and claims the source's end with `end_of_source`). Its items lie after
    /// its cursor and at or before `next_cursor`, so a change strictly after `next_cursor`
    /// is not in them, unless the answer claims the source ends there (an insert past that
    /// claim makes it wrong). Without `le` (no order at hand) it counts as reached.
    pub(super) fn reached_ahead(
        ahead: &[u8],
        next_cursor: &[u8],
        end_of_source: bool,
        le: Option<super::cursor::Le<'_>>,
    ) -> bool {
        end_of_source || le.is_none_or(|le| le(ahead, next_cursor))
    }

    /// The id the next read issued gets: every read issued so far has a smaller one.
    #[inline]
    pub(super) fn next_id(&self) -> u64 {
        self.next
    }

    /// Reads issued and not yet answered.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// The outstanding reads, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &Outstanding)> + '_ {
        self.list.iter().map(|(id, r)| (*id, r))
    }

    /// Names request `request`'s next read, records it as outstanding (issued at `now`) and
    /// asks the host for it: `limit` items from `cursor`, at the step `w` is at.
    // A function of its own: inlined into the answer path, the code generator made its two
    // pushes (the outstanding record, the `Issue` effect) calls to `Vec::push_mut`, each
    // record built on the stack and copied; here both pushes are inlined.
    #[inline(never)]
    pub(super) fn issue(
        &mut self,
        request: u64,
        w: &mut Work,
        cursor: Cursor,
        limit: u32,
        now: u64,
        out: &mut Outbox,
    ) {
        let read_id = self.next;
        self.next += 1;
        w.read = Some(read_id);
        let kind = w.kind;
        self.list.push((
            read_id,
            Outstanding {
                request,
                kind,
                cursor: cursor.clone(),
                limit,
                direction: w.direction,
                cancelled: false,
                superseded: false,
                superseded_at: 0,
                issued_at: now,
            },
        ));
        debug_assert!(
            self.list.len() <= 2,
            "more reads outstanding than the ledger allows: {:?}",
            self.list
        );
        out.issue(Read {
            read_id,
            request_id: request,
            kind,
            epoch: w.epoch,
            step: w.step,
            cursor,
            limit,
            direction: w.direction,
            until: w.until.clone(),
        });
    }

    /// Which way the outstanding finite read goes, if one is outstanding and not cancelled.
    #[inline]
    pub(super) fn finite_in_flight(&self) -> Option<super::Direction> {
        self.list
            .iter()
            .find(|(_, r)| r.kind == Kind::Finite && !r.superseded)
            .map(|(_, r)| r.direction)
    }

    /// Where outstanding read `read_id` is in the list, or why it is not there.
    #[inline]
    pub(super) fn find(&self, read_id: u64) -> Result<usize, LoaderError> {
        match self.list.iter().position(|(id, _)| *id == read_id) {
            Some(at) => Ok(at),
            None if read_id > 0 && read_id < self.next => {
                Err(LoaderError::AlreadyAnswered(read_id))
            }
            None => Err(LoaderError::UnknownRead(read_id)),
        }
    }

    /// The outstanding read at `at` (from [`Reads::find`]).
    #[inline]
    pub(super) fn get(&self, at: usize) -> &Outstanding {
        &self.list[at].1
    }

    /// Says whether the host hears the cancel hints (see [`Reads::cancel`]).
    pub(super) fn set_hints_heard(&mut self, heard: bool) {
        self.hints_heard = heard;
    }

    /// Hints the host that outstanding read `read_id`'s answer is no longer needed (at
    /// time `now`), and remembers that it did if the host hears hints. A read is hinted once.
    #[inline]
    pub(super) fn cancel(&mut self, read_id: u64, now: u64, out: &mut Outbox) {
        if let Some((_, r)) = self.list.iter_mut().find(|(id, _)| *id == read_id) {
            if r.superseded {
                return;
            }
            r.cancelled = self.hints_heard;
            r.superseded = true;
            r.superseded_at = now;
            out.cancel(read_id);
        }
    }

    /// The superseded reads whose answer has been awaited for `timeout` ms by `now`.
    pub(super) fn timed_out(&self, now: u64, timeout: u64) -> Vec<u64> {
        self.list
            .iter()
            .filter(|(_, r)| r.superseded && r.superseded_at.saturating_add(timeout) <= now)
            .map(|(id, _)| *id)
            .collect()
    }

    /// When the first superseded read times out, with `timeout`.
    pub(super) fn next_timeout(&self, timeout: u64) -> Option<u64> {
        self.list
            .iter()
            .filter(|(_, r)| r.superseded)
            .map(|(_, r)| r.superseded_at.saturating_add(timeout))
            .min()
    }

    /// Takes the read at `at` off the list: it is answered.
    #[inline]
    pub(super) fn answer(&mut self, at: usize) -> Outstanding {
        // Of at most two reads, the one left keeps its place either way: no shift (a call to
        // `memmove`) on every answer.
        // The newest read leaves by a pop: `swap_remove` would copy it onto itself.
        let (id, r) = if at + 1 == self.list.len() {
            self.list.pop().expect("found at the end")
        } else if self.list.len() <= 2 {
            self.list.swap_remove(at)
        } else {
            self.list.remove(at)
        };
        self.last = id;
        r
    }

    /// [`Reads::answer`] for an answer with a page: what the answer path needs of the read at
    /// `at` is read where the read lies (whether `next_cursor` moved from its cursor, which
    /// the read's long cursor buffer, if any, goes back to `cursors`), and the record leaves
    /// the list without being copied out whole.
    #[inline(always)]
    pub(super) fn answer_page(
        &mut self,
        at: usize,
        next_cursor: &[u8],
        cursors: &mut super::cursor::CursorPool,
    ) -> Answered {
        let (id, r) = &mut self.list[at];
        let answered = Answered {
            request: r.request,
            kind: r.kind,
            direction: r.direction,
            cancelled: r.cancelled,
            advanced: r.cursor != next_cursor,
        };
        self.last = *id;
        cursors.recycle_in(&mut r.cursor);
        // As in `answer`: the newest by a pop, the older of two by `swap_remove`. The record
        // owns nothing now (its cursor is inline or was emptied above): it is forgotten, not
        // dropped, so no destructor tests its cursor again.
        let gone = if at + 1 == self.list.len() {
            self.list.pop()
        } else if self.list.len() <= 2 {
            Some(self.list.swap_remove(at))
        } else {
            Some(self.list.remove(at))
        };
        // Every field is named: a field added to `Outstanding` does not compile here until it
        // is listed, and one that owns memory must be emptied above, as `cursor` is, or the
        // `forget` leaks it.
        if let Some((
            _,
            Outstanding {
                request: _,
                kind: _,
                cursor: _,
                limit: _,
                direction: _,
                cancelled: _,
                superseded: _,
                superseded_at: _,
                issued_at: _,
            },
        )) = &gone
        {}
        std::mem::forget(gone);
        answered
    }

    /// The id of the read [`Reads::answer`] took last.
    #[inline]
    pub(super) fn last_answered(&self) -> u64 {
        self.last
    }

    /// Cancels every outstanding read not hinted yet, in the order they were issued, and
    /// forgets them all.
    pub(super) fn cancel_all(&mut self, out: &mut Outbox) {
        let mut ids: Vec<u64> = self
            .list
            .iter()
            .filter(|(_, r)| !r.superseded)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        for read_id in ids {
            out.cancel(read_id);
        }
        self.list.clear();
        self.ahead = None;
    }
}

#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Direction {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        e.num(*self as u64);
    }
}

/// The checker's canonical form of a read the host holds. The `Debug`-text form kept its
/// request id raw.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Read {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::Class;
        let Read {
            read_id,
            request_id,
            kind,
            epoch,
            step,
            cursor,
            limit,
            direction,
            until,
        } = self;
        e.id(Class::Read, *read_id);
        e.id_text_raw(Class::Request, *request_id);
        kind.canon(e);
        e.id(Class::Epoch, *epoch);
        step.canon(e);
        cursor.canon(e);
        limit.canon(e);
        direction.canon(e);
        until.canon(e);
    }
}

/// The checker's canonical form: when a read was issued is left out (only `explain` reads
/// it).
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Reads {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::Class;
        let Reads {
            list,
            next,
            last,
            hints_heard,
            ahead,
        } = self;
        e.seq(list, |e, (id, o)| {
            e.id(Class::Read, *id);
            let Outstanding {
                request,
                kind,
                cursor,
                limit,
                direction,
                cancelled,
                superseded,
                superseded_at,
                issued_at: _,
            } = o;
            e.id(Class::Request, *request);
            kind.canon(e);
            cursor.canon(e);
            limit.canon(e);
            direction.canon(e);
            cancelled.canon(e);
            superseded.canon(e);
            e.time(*superseded_at);
        });
        e.id(Class::Read, *next);
        e.id(Class::Read, *last);
        hints_heard.canon(e);
        e.opt(ahead, |e, (id, c)| {
            e.id(Class::Read, *id);
            c.canon(e);
        });
    }
}
