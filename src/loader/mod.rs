//! The OrderedSourceLoader, on top of the [`Ledger`]: the [`Loader`], which routes the host's
//! events to its parts, and the public types.
//!
//! The parts, one module each: `view` (the pages shown and where they sit: commit, drop,
//! gap closing, the end-cursor memo), `reads` (the reads issued and outstanding), `requests`
//! (each live request's acquisitions and staged pages), `answer` (the answer rules by kind:
//! finite, step, fail), `schedule` (the window and the pump), `pools` (recycled buffers),
//! `outbox` (effects and counters), `record` (the optional recording of a run, for
//! `loader-check --replay`), `backoff`, `cursor`, `config` and `error`; `far` (a move far
//! from the held pages starts at the nearest cursor known); `follow` (appends, and the window
//! pinned to the source's end).
//!
//! This file holds the [`Loader`] type, its construction and its close; its entry points are
//! grouped by event, one module each: `invalidate` (`invalidate`, `invalidate_range`,
//! `jump`), `retry` (`retry`, `set_window`, `tick`), `settle` (`settle`, `settle_counted`,
//! `fail`), `abandon` (`abandon`, and the reads let go of), `inspect` (the read-only
//! queries) and `explain` (why the loader waits, in sentences).
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
//! use loader::{Config, Effect, Loader};
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
//! # Ok::<(), loader::LoaderError>(())
//! ```

mod abandon;
mod answer;
#[cfg(any(test, feature = "testing"))]
mod audit;
mod backoff;
mod config;
mod cursor;
mod error;
mod explain;
mod far;
mod follow;
#[cfg(any(test, feature = "testing"))]
pub mod guard;
mod inspect;
mod invalidate;
#[cfg(any(test, feature = "testing"))]
pub mod mutant;
#[cfg(not(any(test, feature = "testing")))]
pub(crate) mod mutant;
mod outbox;
mod pools;
mod reach;
mod reads;
mod record;
mod requests;
mod retry;
mod schedule;
mod settle;
mod view;

pub use crate::ledger::Kind;
pub use answer::Answer;
#[cfg(any(test, feature = "testing"))]
pub use audit::Holder;
pub use config::{
    Config, ConfigError, DEFAULT_MAX_PAGES, JUMP_THRESHOLD_AUTO, MAX_CURSOR_LEN, MAX_PAGE_SIZE,
    MAX_POSITION, MEMO_ENTRY_BYTES,
};
pub use cursor::{Cursor, Order};
pub use error::LoaderError;
pub use far::Locate;
pub use outbox::{Effect, Stats};
pub use reads::{Direction, Read};
#[cfg(feature = "testing")]
pub(crate) use record::{effects as record_effects, Outcome};
pub use record::{Recorder, Sink, LOG_MAGIC};
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
    /// What the view should cover: `window` widened by the prefetch (see `Loader::want`).
    reach: view::Want,
    pools: Pools,
    /// The latest time the host reported.
    now: u64,
    backoff: Backoff,
    /// Which way the next finite request reads (the pump decides before it asks the ledger).
    finite_direction: Direction,
    /// A chain or full read that failed, kept when the ledger released it, for the retry
    /// that follows to adopt (see `Loader::retire`).
    resume: Option<Box<requests::Work>>,
    /// A page failure's read (its cursor and direction), while the ledger records one: the
    /// retry reads it again only while it is still the read the window needs.
    page_failed: Option<(Cursor, Direction)>,
    /// The read a page failure's retry read again (its cursor and direction), until an
    /// answer is current: if it fails again, the failure goes through the debt lattice (a
    /// full read, with fresh cursors), since reading that page a third time may never work
    /// (a cursor whose item is gone for good). The ledger holds the same rule for the request
    /// it started again (`Ledger::resumed`, the model's `unifiedMinEscalate`).
    page_retried: Option<(Cursor, Direction)>,
    /// The read a repair failure's retry resumed at (its id), until it is answered: if it
    /// fails again, the failure goes through the debt lattice (a full read, with fresh
    /// cursors), since resuming there a third time may never work (a cursor whose item is
    /// gone for good), as for `page_retried`. The ledger escalates that failure too
    /// (`unifiedMinEscalate`); when the read is answered the loader tells it
    /// (`Ledger::resume_answered`), so that a later failure of the repair resumes again.
    repair_retried: Option<u64>,
    /// Reads let go of (abandoned, or timed out), newest last: a late answer to one is stale
    /// and its acquisition goes back at once. Bounded: the oldest are forgotten (an answer
    /// to a forgotten one is refused as already answered).
    abandoned: std::collections::VecDeque<(u64, u32)>,
    /// The buffer the host's `locate` writes a cursor into, kept for reuse.
    locate_buf: Vec<u8>,
    closed: bool,
    /// Follow mode and appends (see `follow`).
    follow: follow::Follow,
    /// The recording of this run, if one was asked for (`record`).
    record: record::Slot,
}

impl Loader {
    /// A loader with `config`, an empty view and a zero window.
    pub fn new(config: Config) -> Result<Loader, LoaderError> {
        Loader::with_ledger(config, Ledger::new(Self::ledger_config(&config)))
    }

    /// A loader whose epoch and request ids start near given values, for testing counter
    /// exhaustion (a test instrument: only with the `testing` feature).
    #[cfg(any(test, feature = "testing"))]
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
            view: View::new(config.cursor_memo_bytes),
            window: Window::default(),
            reach: Window::default().want(config.prefetch_distance),
            pools: Pools::default(),
            now: 0,
            backoff: Backoff::new(config.jitter_seed),
            finite_direction: Direction::Forward,
            resume: None,
            page_failed: None,
            page_retried: None,
            repair_retried: None,
            abandoned: std::collections::VecDeque::new(),
            locate_buf: Vec::new(),
            closed: false,
            follow: follow::Follow::default(),
            record: record::Slot::default(),
        })
    }

    /// Tells the loader whether the host hears its [`Effect::Cancel`] hints (it does unless
    /// this is called with `false`). An empty answer whose cursor did not move is stale, not a
    /// stall, only for a read the host was told to let go, so a host that drops the hints
    /// (a C host without a `cancel` callback) gets `CursorStalled` for it as for any read.
    pub fn set_cancel_hints_heard(&mut self, heard: bool) {
        self.reads.set_hints_heard(heard);
        self.note(record::Call::Hints(heard), &());
    }

    /// Hands the queued effects to the caller, in the order they arose.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        let effects = self.out.take();
        self.note_effects(&effects);
        effects
    }

    /// Moves the queued effects into `out`, keeping both allocations for reuse. When `out` is
    /// empty (a host that handles every batch before the next call) the two vectors are
    /// swapped, so the effects are not copied at all. A host that then reads them in place
    /// (`for e in &out`) and clears `out` moves none of them either; `out.drain(..)` moves
    /// each one out of the vector.
    // Inlined into the host's loop: called once per call, and its own frame was a third of
    // its cost.
    #[inline]
    pub fn drain_effects_into(&mut self, out: &mut Vec<Effect>) {
        // Not recording (one test): nothing to note, no slice of what was handed over.
        if !self.noting() {
            self.out.drain_into(out);
            return;
        }
        self.drain_effects_noted(out);
    }

    /// [`Loader::drain_effects_into`] while recording: out of the host's loop.
    #[cold]
    #[inline(never)]
    fn drain_effects_noted(&mut self, out: &mut Vec<Effect>) {
        let from = out.len();
        self.out.drain_into(out);
        self.note_effects(&out[from..]);
    }

    /// Releases every acquisition still held, exactly once, and asks the host to cancel every
    /// outstanding read. Later calls return [`LoaderError::Closed`]. Closing twice is a no-op.
    pub fn close(&mut self) {
        self.note(record::Call::Close, &());
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

    /// The epoch and first request id this loader's ledger started from, when not the
    /// defaults (a test loader's, `with_counters`); read before the first call.
    fn counters_at_start(&self) -> Option<(u64, u64)> {
        let (epoch, next_id) = (self.ledger.epoch(), self.ledger.next_id());
        (epoch != 0 || next_id != 1).then_some((epoch, next_id))
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

/// The checker's canonical form (`check::canon`): the loader's state between calls. The
/// config is fixed for one exploration; the ledger's effects wait in `scratch` only within a
/// call; the pools, the `locate` buffer and the recording slot are capacity and output, which
/// no rule reads.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Loader {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::Class;
        let Loader {
            config: _,
            ledger,
            scratch,
            out,
            requests,
            reads,
            view,
            window,
            reach: _,
            pools: _,
            now,
            backoff,
            finite_direction,
            resume,
            page_failed,
            page_retried,
            repair_retried,
            abandoned,
            locate_buf: _,
            closed,
            record: _,
            follow,
        } = self;
        debug_assert!(
            scratch.is_empty(),
            "the ledger's effects wait only within a call"
        );
        ledger.canon(e);
        out.canon(e);
        requests.canon(e);
        reads.canon(e);
        view.canon(e);
        window.canon(e);
        e.time(*now);
        backoff.canon(e);
        finite_direction.canon(e);
        e.opt(resume, |e, w| w.canon(e));
        page_failed.canon(e);
        page_retried.canon(e);
        e.opt(repair_retried, |e, r| e.id(Class::Read, *r));
        e.seq(abandoned, |e, (read, count)| {
            e.id(Class::Read, *read);
            count.canon(e);
        });
        closed.canon(e);
        follow.canon(e);
    }
}
