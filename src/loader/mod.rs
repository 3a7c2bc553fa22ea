//! The OrderedSourceLoader, on top of the [`Ledger`]: the [`Loader`], which routes the host's
//! events to its parts, and the public types.
//!
//! The parts, one module each: `view` (the pages shown and where they sit: commit, drop,
//! gap closing, the end-cursor memo), `reads` (the reads issued and outstanding), `requests`
//! (each live request's acquisitions and staged pages), `answer` (the answer rules by kind:
//! finite, step, fail), `schedule` (the window and the pump), `pools` (recycled buffers),
//! `outbox` (effects and counters), `backoff`, `cursor`, `config` and `error`.
//!
//! The ledger decides which requests exist and when each is retired; this layer turns a
//! request into page reads, keeps the acquisitions each read produced, and builds the view.
//! It is sans-IO: events go in (`settle`, `fail`, `invalidate`, `retry`, `set_window`,
//! `tick`), effects come out ([`Loader::take_effects`]). It never reads a clock, sleeps or
//! does I/O; time comes from `tick(now_ms)`.
//!
//! Ownership: every acquisition the loader accepts (a `settle` that returns `Ok`) is handed
//! back exactly once through [`Effect::Release`]: when the ledger retires the request it
//! belongs to, when its page falls behind the window by more than `drop_margin`, or at
//! [`Loader::close`]. A call that returns an error accepted nothing.
//!
//! ```
//! use loader::loader::{Config, Effect, Loader};
//! use std::collections::{HashMap, VecDeque};
//!
//! // A source of 120 numbered items; a cursor is the index of the next item, as 8 bytes.
//! let items: Vec<u64> = (0..120).collect();
//! let mut l = Loader::new(Config { page_size: 50, prefetch_distance: 0, ..Config::default() })?;
//! l.set_window(0, 100)?;
//! let mut reads = VecDeque::new();
//! let mut held = HashMap::new(); // acquisition -> the items it holds
//! for acquisition in 1.. {
//!     for effect in l.take_effects() {
//!         match effect {
//!             Effect::Issue(read) => reads.push_back(read),
//!             Effect::Release { acquisition } => { held.remove(&acquisition); }
//!             Effect::Cancel { .. } | Effect::Changed => {}
//!         }
//!     }
//!     let Some(read) = reads.pop_front() else { break };
//!     let at = match read.cursor.len() {
//!         0 => 0,
//!         _ => u64::from_be_bytes(read.cursor[..].try_into().unwrap()) as usize,
//!     };
//!     let end = (at + read.limit as usize).min(items.len());
//!     held.insert(acquisition, items[at..end].to_vec());
//!     let next = (end as u64).to_be_bytes();
//!     l.settle(read.read_id, acquisition, (end - at) as u32, &next, end == items.len())?;
//! }
//! let view: Vec<u64> = l.pages().flat_map(|p| held[&p.acquisition].clone()).collect();
//! assert_eq!(view, (0..100).collect::<Vec<u64>>());
//! assert!(!l.revalidating());
//!
//! // Closing hands back every acquisition still held.
//! l.close();
//! for effect in l.take_effects() {
//!     if let Effect::Release { acquisition } = effect {
//!         held.remove(&acquisition);
//!     }
//! }
//! assert!(held.is_empty());
//! # Ok::<(), loader::loader::LoaderError>(())
//! ```

mod answer;
mod backoff;
mod config;
mod cursor;
mod error;
mod outbox;
mod pools;
mod reads;
mod requests;
mod schedule;
mod view;

pub use crate::ledger::Kind;
pub use answer::Answer;
pub use config::{Config, ConfigError, MAX_CURSOR_LEN, MAX_PAGE_SIZE, MAX_POSITION};
pub use cursor::Cursor;
pub use error::LoaderError;
pub use outbox::{Effect, Stats};
pub use reads::{Direction, Read};
pub use view::Page;

use crate::ledger::{self, Debt, Ledger, LedgerError, Phase};
use answer::Accepted;
use backoff::Backoff;
use outbox::Outbox;
use pools::Pools;
use reads::Reads;
use requests::Requests;
use schedule::Window;
use view::View;

/// The loader. See the module documentation; its state lives in the parts listed there.
#[derive(Clone, Debug)]
pub struct Loader {
    config: Config,
    ledger: Ledger,
    /// The ledger's effects, between a ledger call and the pump that carries them out.
    scratch: Vec<ledger::Effect>,
    out: Outbox,
    requests: Requests,
    reads: Reads,
    view: View,
    window: Window,
    pools: Pools,
    /// The latest time the host reported.
    now: u64,
    backoff: Backoff,
    /// Which way the next finite request reads (the pump decides before it asks the ledger).
    finite_direction: Direction,
    /// A chain or full read that failed, kept when the ledger released it, for the retry
    /// that follows to adopt (see `Loader::retire`).
    resume: Option<requests::Work>,
    /// Reads let go of (abandoned, or timed out), newest last: a late answer to one is stale
    /// and its acquisition goes back at once. Bounded: the oldest are forgotten (an answer
    /// to a forgotten one is refused as already answered).
    abandoned: std::collections::VecDeque<(u64, u32)>,
    closed: bool,
}

impl Loader {
    /// A loader with `config`, an empty view and a zero window.
    pub fn new(config: Config) -> Result<Loader, LoaderError> {
        Loader::with_ledger(config, Ledger::new(Self::ledger_config(&config)))
    }

    /// A loader whose epoch and request ids start near given values, for testing counter
    /// exhaustion.
    pub fn with_counters(config: Config, epoch: u64, next_id: u64) -> Result<Loader, LoaderError> {
        let ledger = Ledger::with_counters(Self::ledger_config(&config), epoch, next_id);
        Loader::with_ledger(config, ledger)
    }

    fn ledger_config(config: &Config) -> ledger::Config {
        ledger::Config {
            recheck_full: config.recheck_full,
            commit_overtaken: config.commit_overtaken,
        }
    }

    fn with_ledger(config: Config, ledger: Ledger) -> Result<Loader, LoaderError> {
        config.validate()?;
        Ok(Loader {
            config,
            ledger,
            scratch: Vec::new(),
            out: Outbox::default(),
            requests: Requests::default(),
            reads: Reads::new(),
            view: View::default(),
            window: Window::default(),
            pools: Pools::default(),
            now: 0,
            backoff: Backoff::new(config.jitter_seed),
            finite_direction: Direction::Forward,
            resume: None,
            abandoned: std::collections::VecDeque::new(),
            closed: false,
        })
    }

    /// Tells the loader whether the host hears its [`Effect::Cancel`] hints (it does unless
    /// this is called with `false`). An empty answer whose cursor did not move is stale, not a
    /// stall, only for a read the host was told to let go, so a host that drops the hints
    /// (a C host without a `cancel` callback) gets `CursorStalled` for it as for any read.
    pub fn set_cancel_hints_heard(&mut self, heard: bool) {
        self.reads.set_hints_heard(heard);
    }

    // ---- introspection ----

    /// The config the loader was made with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The ledger beneath: the spec's abstract state and live requests.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The view's pages, in source order.
    pub fn pages(&self) -> impl ExactSizeIterator<Item = &Page> + '_ {
        self.view.pages().iter()
    }

    /// How many pages the view holds: `pages().len()`, without building the iterator.
    pub fn page_count(&self) -> usize {
        self.view.pages().len()
    }

    /// Whether the view is being revalidated: a repair or full read is pending or running,
    /// and the view shown is the old one.
    pub fn revalidating(&self) -> bool {
        self.ledger.phase() != Phase::Idle || self.ledger.debt() != Debt::None
    }

    /// The items the view covers: from the first held page's start to the last page's end.
    pub fn covered(&self) -> (u64, u64) {
        self.view.covered()
    }

    /// The cursor where the first held page starts (empty: the source's start).
    pub fn base_cursor(&self) -> &[u8] {
        self.view.base_cursor()
    }

    /// Whether the last page read reached the end of the source.
    pub fn end_of_source(&self) -> bool {
        self.view.end_of_source()
    }

    /// Whether the first held page starts at the source's start (nothing before it).
    pub fn start_of_source(&self) -> bool {
        self.view.start_of_source()
    }

    /// The window, as `(start, len)`. The loader moves it when it renumbers the view (see
    /// `View` positions in the header), so that it stays on the same items.
    pub fn window(&self) -> (u64, u64) {
        (self.window.start, self.window.len)
    }

    /// Reads issued and not yet answered.
    pub fn outstanding_reads(&self) -> usize {
        self.reads.len()
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.out.stats
    }

    /// Whether [`Loader::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// When the host should next call [`Loader::tick`]: a backoff retry is armed, or a
    /// superseded read will time out (`read_timeout_ms`).
    pub fn next_deadline(&self) -> Option<u64> {
        let timeout = match self.config.read_timeout_ms {
            0 => None,
            t => self.reads.next_timeout(t),
        };
        match (self.backoff.deadline, timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Hands the queued effects to the caller, in the order they arose.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        self.out.take()
    }

    /// Moves the queued effects into `out`, keeping both allocations for reuse. When `out` is
    /// empty (a host that handles every batch before the next call) the two vectors are
    /// swapped, so the effects are not copied at all.
    pub fn drain_effects_into(&mut self, out: &mut Vec<Effect>) {
        self.out.drain_into(out);
    }

    // ---- host events ----

    /// The source changed, anywhere: the next repair re-reads the window around the anchor
    /// and replaces every page.
    pub fn invalidate(&mut self) -> Result<(), LoaderError> {
        self.open()?;
        self.ledger.invalidate(&mut self.scratch)?;
        self.view.owe_whole();
        self.pump();
        Ok(())
    }

    /// The source changed, but only at positions in `[from, to]`: `from` empty is the
    /// source's start, `to` `None` its end; `cmp` orders two (non-empty) cursors as the source
    /// does. The next repair re-reads only the held pages that may hold a changed item (an
    /// item lies in a page when it comes after the page's start cursor and at or before its
    /// end cursor), from the first such page's start cursor, with reads bounded (`Read::until`)
    /// by the start of the first page kept after them, and rejoins there: the pages before
    /// and after are kept, not re-read, not released and not reordered. The pages it replaces
    /// are released when it commits, and the pages after it move by the net change. A change
    /// outside the held pages re-reads nothing: the repair commits at once. Several ranged
    /// invalidations before a commit merge; a whole one ([`Loader::invalidate`]) subsumes them.
    ///
    /// A range too narrow (a change outside it) is a host bug: the view may then be wrong
    /// outside what was re-read, until the next invalidation that covers it; nothing leaks.
    pub fn invalidate_range(
        &mut self,
        from: &[u8],
        to: Option<&[u8]>,
        cmp: &mut dyn FnMut(&[u8], &[u8]) -> std::cmp::Ordering,
    ) -> Result<(), LoaderError> {
        self.open()?;
        let longest = from.len().max(to.map_or(0, <[u8]>::len));
        if longest > MAX_CURSOR_LEN {
            return Err(LoaderError::CursorTooLong(longest));
        }
        if let Some(t) = to {
            let reversed = match (from.is_empty(), t.is_empty()) {
                (_, true) => !from.is_empty(),
                (true, false) => false,
                (false, false) => cmp(from, t) == std::cmp::Ordering::Greater,
            };
            if reversed {
                return Err(LoaderError::RangeReversed);
            }
        }
        // Refuse before marking anything: the invalidation takes an epoch and may start a
        // repair.
        if self.ledger.epoch() == u64::MAX {
            return Err(LedgerError::EpochOverflow.into());
        }
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        self.view.mark_range(from, to, cmp);
        self.out.stats.ranged_invalidations += 1;
        self.ledger.invalidate(&mut self.scratch)?;
        self.pump();
        Ok(())
    }

    /// Retries a recorded own failure now (a full-source read). Returns whether a read
    /// started; `false` when there is nothing to retry yet.
    pub fn retry(&mut self) -> Result<bool, LoaderError> {
        self.open()?;
        let started = self.ledger.explicit_retry(&mut self.scratch)?.is_some();
        if started {
            self.out.stats.retries_explicit += 1;
            self.backoff.deadline = None;
        }
        self.pump();
        Ok(started)
    }

    /// Moves the window. Growing it issues reads (forward after the last page, backward
    /// before the first); with a failure recorded, it retries (P3); pages the window no
    /// longer needs are released (`drop_margin`, `max_pages`).
    pub fn set_window(&mut self, start: u64, len: u64) -> Result<(), LoaderError> {
        self.open()?;
        start.checked_add(len).ok_or(LoaderError::WindowOverflow)?;
        let retry = self.ledger.retry_enabled();
        // Refuse before moving anything, so that a refusal changes nothing: a retry takes a
        // request id.
        if retry && self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        if retry {
            self.ledger.explicit_retry(&mut self.scratch)?;
            self.out.stats.retries_explicit += 1;
            self.backoff.deadline = None;
        }
        self.window = Window { start, len };
        self.pump();
        Ok(())
    }

    /// Rebuilds the view around `cursor`: the item just after it gets `position`, and the
    /// window moves to start there (its length kept). As with any repair, the old view
    /// stays until the new one commits; the repair reads the window plus prefetch around the
    /// cursor, whatever the distance. A loader with nothing held and nothing in flight moves
    /// at once, with no invalidation (a starting point, such as the end of a log).
    pub fn jump(&mut self, cursor: &[u8], position: u64) -> Result<(), LoaderError> {
        self.open()?;
        if cursor.len() > MAX_CURSOR_LEN {
            return Err(LoaderError::CursorTooLong(cursor.len()));
        }
        // Positions count items from there on: leave them room to grow.
        if position > MAX_POSITION {
            return Err(LoaderError::WindowOverflow);
        }
        position
            .checked_add(self.window.len)
            .ok_or(LoaderError::WindowOverflow)?;
        let idle =
            self.view.pages().is_empty() && self.reads.len() == 0 && self.ledger.is_quiescent();
        if !idle {
            if self.ledger.epoch() == u64::MAX {
                return Err(LedgerError::EpochOverflow.into());
            }
            if self.ledger.next_id() == u64::MAX {
                return Err(LedgerError::IdOverflow.into());
            }
        }
        let cursor = self.pools.cursors.make(cursor);
        self.out.stats.jumps += 1;
        self.window.start = position;
        if idle {
            self.view
                .move_empty(position, cursor, &mut self.pools.cursors);
        } else {
            self.view.jump_to(position, cursor, &mut self.pools.cursors);
            self.ledger.invalidate(&mut self.scratch)?;
        }
        self.pump();
        Ok(())
    }

    /// Time passed: fires a due backoff retry.
    pub fn tick(&mut self, now_ms: u64) -> Result<(), LoaderError> {
        self.open()?;
        let due = self
            .backoff
            .deadline
            .is_some_and(|d| d <= now_ms.max(self.now));
        if due && self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        self.now = self.now.max(now_ms);
        let timeout = self.config.read_timeout_ms;
        if timeout > 0 {
            for read_id in self.reads.timed_out(self.now, timeout) {
                if self.ledger.next_id() == u64::MAX {
                    break;
                }
                let at = self.reads.find(read_id)?;
                self.let_go(at)?;
                self.out.stats.timed_out += 1;
            }
        }
        if due {
            self.backoff.deadline = None;
            if self.ledger.explicit_retry(&mut self.scratch)?.is_some() {
                self.backoff.retries += 1;
                self.out.stats.retries_auto += 1;
            }
        }
        self.pump();
        Ok(())
    }

    /// Answers a read with `count` items held by `acquisition`. On `Ok`, the loader owns the
    /// acquisition until it sends `Release` for it; on `Err`, nothing changed and the host
    /// still owns it.
    ///
    /// An empty page (`count` 0) whose `next_cursor` moved is progress: it takes no position,
    /// its acquisition is released at once, and the next read starts at `next_cursor` (a
    /// bounded read's too, short of its `until`). An unmoved `next_cursor` with items, or
    /// without items and without `end_of_source` (for a read not hinted cancelled), is
    /// [`Answer::CursorStalled`]: a chain escalates to a full read, a finite or full read
    /// records an own failure that waits for backoff.
    pub fn settle(
        &mut self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
    ) -> Result<Answer, LoaderError> {
        self.settle_counted(
            read_id,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            None,
        )
    }

    /// [`Loader::settle`] from a host that knows how many items come before the page's first
    /// item (`items_before`; a count query, an offset in the answer). When the page enters
    /// the view (now, or when its repair commits), the view is renumbered so that the page
    /// starts at that position, and the window moves with it: the positions become the
    /// source's own without reading back to its start. A count that contradicts the view
    /// (fewer items before the page than the view holds before it) is ignored, as is one over
    /// [`MAX_POSITION`].
    pub fn settle_counted(
        &mut self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
        items_before: Option<u64>,
    ) -> Result<Answer, LoaderError> {
        self.open()?;
        let items_before = items_before.filter(|&n| n <= MAX_POSITION);
        let at = match self.reads.find(read_id) {
            Ok(at) => at,
            Err(e) => {
                // Let go of earlier: checked as any answer, then stale, and nothing keeps the
                // acquisition.
                if let Some(limit) = self.abandoned_limit(read_id) {
                    if count > limit {
                        return Err(LoaderError::CountOverLimit { count, limit });
                    }
                    if next_cursor.len() > MAX_CURSOR_LEN {
                        return Err(LoaderError::CursorTooLong(next_cursor.len()));
                    }
                }
                return if self.forget_abandoned(read_id) {
                    self.out.stats.accepted += 1;
                    self.out.stats.answered_stale += 1;
                    self.out.stats.late_answers += 1;
                    self.out.release(acquisition);
                    Ok(Answer::Stale)
                } else {
                    Err(e)
                };
            }
        };
        let limit = self.reads.get(at).limit;
        if count > limit {
            return Err(LoaderError::CountOverLimit { count, limit });
        }
        if next_cursor.len() > MAX_CURSOR_LEN {
            return Err(LoaderError::CursorTooLong(next_cursor.len()));
        }
        // Whatever follows may start a request; refuse now if no id is left.
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        let read = self.reads.answer(at);
        // An unmoved cursor is a stall when the page had items, or when it had none yet did not
        // claim the source's end, unless the host was told it may let the read go.
        let advanced = read.cursor != next_cursor;
        let stalled = !advanced && (count > 0 || !(end_of_source || read.cancelled));
        let (request, kind) = (read.request, read.kind);
        self.pools.cursors.recycle(read.cursor);
        self.out.stats.accepted += 1;
        self.out.stats.items_read += u64::from(count);
        let a = Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            stalled,
            advanced,
            items_before,
        };
        let answer = match kind {
            Kind::Finite => self.settle_finite(&a)?,
            Kind::Chain | Kind::Full => self.settle_step(&a)?,
        };
        if count == 0 {
            // An empty page enters no view and nothing reads it: its acquisition goes back
            // now (its request's record kept no copy, see `Work::accept`).
            self.out.release(acquisition);
        }
        let stats = &mut self.out.stats;
        match answer {
            Answer::Current => stats.answered_current += 1,
            Answer::Stale => stats.answered_stale += 1,
            Answer::CursorStalled => stats.cursor_stalls += 1,
        }
        self.pump();
        Ok(answer)
    }

    /// Answers a read with a failure. `code` is the host's, for its own records.
    pub fn fail(&mut self, read_id: u64, code: i32) -> Result<Answer, LoaderError> {
        let _ = code;
        self.open()?;
        let at = match self.reads.find(read_id) {
            Ok(at) => at,
            Err(_) if self.forget_abandoned(read_id) => {
                self.out.stats.late_answers += 1;
                return Ok(Answer::Stale);
            }
            Err(e) => return Err(e),
        };
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        if self.reads.get(at).cancelled {
            // The host was told it may let this read go: a failure is how it did.
            self.let_go(at)?;
            self.pump();
            return Ok(Answer::Stale);
        }
        let read = self.reads.answer(at);
        if read.kind == Kind::Finite {
            self.pools.cursors.recycle(read.cursor);
        } else {
            // The retry resumes here, with the steps that succeeded. Not a ranged repair's:
            // the retry is a full read, which replaces every page.
            let w = self.requests.live(read.request);
            if w.ranged.is_some() {
                self.pools.cursors.recycle(read.cursor);
            } else if let Some(old) = w.resume_at.replace(read.cursor) {
                self.pools.cursors.recycle(old);
            }
        }
        let failed = self.fail_request(read.request)?;
        self.pump();
        Ok(match failed {
            ledger::Failed::Own => Answer::Current,
            ledger::Failed::Superseded => Answer::Stale,
        })
    }

    /// The host gives up on read `read_id` and will not answer it. For a read the loader no
    /// longer needed (it was superseded: `Effect::Cancel` hinted it, if the host hears
    /// hints) this costs nothing: no debt, no re-read, and the reads it blocked may start.
    /// For a read still needed it is a failure, as [`Loader::fail`]. An answer that arrives
    /// later anyway is classified stale, and its acquisition is released at once. Abandoning a
    /// read the loader already let go of (its timeout came first) is stale and changes
    /// nothing.
    pub fn abandon(&mut self, read_id: u64) -> Result<Answer, LoaderError> {
        self.open()?;
        let at = match self.reads.find(read_id) {
            Ok(at) => at,
            // Already let go of (its timeout came first): nothing more to do; a late answer
            // is still stale.
            Err(_) if self.abandoned_limit(read_id).is_some() => return Ok(Answer::Stale),
            Err(e) => return Err(e),
        };
        if !self.reads.get(at).superseded {
            let limit = self.reads.get(at).limit;
            let answer = self.fail(read_id, 0)?;
            self.remember_abandoned(read_id, limit);
            return Ok(answer);
        }
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        self.let_go(at)?;
        self.pump();
        Ok(Answer::Stale)
    }

    /// Lets go of the superseded read at `at`: its request ends as an empty answer would end
    /// it (stale: it costs no debt), nothing enters the view, and a late answer is expected.
    fn let_go(&mut self, at: usize) -> Result<(), LoaderError> {
        let read = self.reads.answer(at);
        let read_id = self.reads.last_answered();
        self.pools.cursors.recycle(read.cursor);
        if read.kind == Kind::Finite {
            self.requests.live(read.request).read = None;
            self.ledger.settle(read.request, &mut self.scratch)?;
        } else {
            self.fail_request(read.request)?;
        }
        self.out.stats.abandoned += 1;
        self.remember_abandoned(read_id, read.limit);
        Ok(())
    }

    /// Remembers that read `read_id` (of `limit` items) was let go of.
    fn remember_abandoned(&mut self, read_id: u64, limit: u32) {
        const KEEP: usize = 4096;
        if self.abandoned.len() == KEEP {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back((read_id, limit));
    }

    /// The limit of read `read_id` if it was let go of and not answered since.
    fn abandoned_limit(&self, read_id: u64) -> Option<u32> {
        self.abandoned
            .iter()
            .find(|&&(id, _)| id == read_id)
            .map(|&(_, limit)| limit)
    }

    /// Whether `read_id` was let go of; forgets it (it is answered now).
    fn forget_abandoned(&mut self, read_id: u64) -> bool {
        match self.abandoned.iter().position(|&(id, _)| id == read_id) {
            Some(i) => {
                self.abandoned.remove(i);
                true
            }
            None => false,
        }
    }

    /// Releases every acquisition still held, exactly once, and asks the host to cancel every
    /// outstanding read. Later calls return [`LoaderError::Closed`]. Closing twice is a no-op.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.reads.cancel_all(&mut self.out);
        if let Some(w) = self.resume.take() {
            self.out.release_all(&w.acqs);
        }
        self.requests.release_all(&mut self.out);
        self.view.clear();
        self.out.changed();
    }

    fn open(&self) -> Result<(), LoaderError> {
        if self.closed {
            Err(LoaderError::Closed)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
