//! The OrderedSourceLoader: the window, pages, cursor memo, chain and full-read steps,
//! refill, backoff, and the view, on top of the [`Ledger`].
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

mod backoff;
mod config;
mod cursor;

pub use crate::ledger::Kind;
pub use config::{Config, ConfigError, MAX_CURSOR_LEN, MAX_PAGE_SIZE};
pub use cursor::Cursor;

use crate::ledger::{self, Debt, Failed, Ledger, LedgerError, Phase, Settled};
use backoff::Backoff;
use cursor::CursorPool;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::collections::VecDeque;
use thiserror::Error;

/// A read the loader asks the host to perform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    /// Names this read in the answer (`settle` or `fail`). Never reused.
    pub read_id: u64,
    /// The ledger request the read belongs to; its acquisitions belong to that request.
    pub request_id: u64,
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
}

/// What the loader asks of its host, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Perform this read and answer it once.
    Issue(Read),
    /// The loader is done with this acquisition: free it. Sent exactly once per accepted one.
    Release { acquisition: u64 },
    /// This read's answer is no longer needed (it was superseded, or the loader closed); the
    /// host may abort it. Answering it anyway is fine: the answer is classified stale.
    Cancel { read_id: u64 },
    /// The view or the ledger state changed.
    Changed,
}

/// How an accepted answer was classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Authoritative: it is in the view, or will be when its request commits; for a failure,
    /// the loader's own failure, now waiting for a retry.
    Current,
    /// Superseded or overtaken: nothing of it enters the view; for a failure, it only raised
    /// the debt.
    Stale,
    /// The answer had items but its cursor did not advance: a host bug. A chain escalated to a
    /// full read; a finite or full read recorded an own failure.
    CursorStalled,
}

/// Why the loader refused a call. A refused call changes nothing and accepts nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum LoaderError {
    #[error("read {0} was never issued")]
    UnknownRead(u64),
    #[error("read {0} was already answered")]
    AlreadyAnswered(u64),
    #[error("count {count} exceeds the read's limit {limit}")]
    CountOverLimit { count: u32, limit: u32 },
    #[error("cursor of {0} bytes exceeds the maximum of {MAX_CURSOR_LEN}")]
    CursorTooLong(usize),
    #[error("window start plus length overflows")]
    WindowOverflow,
    #[error("the loader is closed")]
    Closed,
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("invalid config: {0}")]
    Config(#[from] ConfigError),
}

/// One page of the view: the items one read returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The host's token for the items.
    pub acquisition: u64,
    pub count: u32,
    /// The epoch of the request that read it.
    pub epoch: u64,
    /// The offset of its first item in the source.
    pub start: u64,
    end_cursor: Cursor,
    request: u64,
    slot: u32,
}

impl Page {
    /// The cursor after this page's last item.
    pub fn end_cursor(&self) -> &[u8] {
        &self.end_cursor
    }
}

/// Counters for reports and demos.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Reads issued, by kind: finite, chain, full.
    pub issued: [u64; 3],
    pub answered_current: u64,
    pub answered_stale: u64,
    pub failed_own: u64,
    pub failed_stale: u64,
    pub cursor_stalls: u64,
    pub retries_auto: u64,
    pub retries_explicit: u64,
    pub accepted: u64,
    pub released: u64,
    pub cancels: u64,
}

/// The work of one live ledger request.
#[derive(Clone, Debug)]
struct Work {
    kind: Kind,
    epoch: u64,
    /// Every acquisition accepted for this request; `None` once released early (dropped).
    acqs: Acqs,
    /// How many of this request's pages are in the view.
    in_view: u32,
    /// The outstanding read, if any.
    read: Option<u64>,
    /// Chain and full reads: pages read so far, committed together with the last step.
    staged: Vec<Page>,
    staged_items: u64,
    step: u32,
    /// Chain and full reads: how many items to cover before settling.
    target: u64,
    /// Where the request's pages start: offset and cursor.
    base_offset: u64,
    base_cursor: Cursor,
}

impl Work {
    /// Takes `acquisition` from the answer to this request's outstanding read; returns where
    /// it sits in the request's list.
    fn accept(&mut self, acquisition: u64) -> u32 {
        self.read = None;
        let slot = self.acqs.len() as u32;
        self.acqs.push(Some(acquisition));
        slot
    }

    /// Names the request's next read `*next_read`, and advances the counter.
    fn name_read(&mut self, next_read: &mut u64) -> u64 {
        let read_id = *next_read;
        *next_read += 1;
        self.read = Some(read_id);
        read_id
    }

    /// How many pages fit before either vector grows.
    fn room(&self) -> usize {
        self.staged.capacity().min(self.acqs.capacity())
    }
}

/// Retired finite records kept for reuse.
const SPARE_FINITE: usize = 64;
/// Retired chain and full records kept for reuse, besides the roomy one.
const SPARE_STEPS: usize = 32;

/// Gives a chain's or full read's vector, at its first step (a page or so in it), room for
/// `steps` entries. One that is too small is replaced, not grown: growing reallocates, and a
/// reallocation copies the whole old buffer, which for a record recycled from a slightly
/// smaller view is megabytes to keep one entry. The new one has an eighth to spare, so a view
/// that breathes around its size is not resized at every repair.
fn size_for<T>(v: &mut Vec<T>, steps: usize) {
    if v.capacity() < steps {
        let mut roomy = Vec::with_capacity(steps + steps / 8);
        roomy.append(v);
        *v = roomy;
    }
}

/// [`size_for`], for a request's acquisitions.
fn size_acqs_for(v: &mut Acqs, steps: usize) {
    if v.capacity() < steps {
        let mut roomy = Acqs::with_capacity(steps + steps / 8);
        roomy.append(v);
        *v = roomy;
    }
}

/// A request's acquisitions. Finite requests, and chains overtaken at their first step, hold
/// exactly one: it is stored inline, so a burst of overtaken chains allocates nothing.
type Acqs = SmallVec<[Option<u64>; 1]>;

/// An answer `settle` accepted, on its way to the rule for its request's kind.
struct Accepted<'a> {
    request: u64,
    acquisition: u64,
    count: u32,
    next_cursor: &'a [u8],
    end_of_source: bool,
    /// Items, but the cursor did not advance.
    stalled: bool,
}

#[derive(Clone, Debug)]
struct Outstanding {
    request: u64,
    kind: Kind,
    cursor: Cursor,
    limit: u32,
}

/// The loader. See the module documentation.
#[derive(Clone, Debug)]
pub struct Loader {
    config: Config,
    ledger: Ledger,
    scratch: Vec<ledger::Effect>,
    effects: Vec<Effect>,
    work: HashMap<u64, Work>,
    /// The outstanding reads, oldest first. A short list, not a map: each in-flight request
    /// has one read, and the ledger lets at most one finite request and one chain or full
    /// read be in flight (superseded ones included), so a scan beats hashing.
    reads: Vec<(u64, Outstanding)>,
    next_read: u64,
    view: VecDeque<Page>,
    /// The cursor memo's start: where the first held page starts.
    base_offset: u64,
    base_cursor: Cursor,
    covered_end: u64,
    end_of_source: bool,
    window_start: u64,
    window_len: u64,
    /// The window moved back over dropped pages: the next repair starts at the source's start.
    rewind: bool,
    now: u64,
    backoff: Backoff,
    closed: bool,
    view_changed: bool,
    /// The ledger's change count when `Changed` was last announced.
    announced: u64,
    stats: Stats,
    /// Recycled cursor buffers and request records: the steady state allocates nothing.
    cursors: CursorPool,
    /// Records of retired finite requests (small: one page each).
    spare_finite: Vec<Work>,
    /// Records of retired chain and full requests (most of them were overtaken at their
    /// first step and are small).
    spare_steps: Vec<Work>,
    /// The roomiest retired chain or full record: its vectors keep the capacity a repair of
    /// the whole view needed, so the next repair of the same view allocates nothing. Kept
    /// apart, so chain starts never take it and recycling never scans for it.
    spare_roomy: Option<Work>,
}

impl Loader {
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
        }
    }

    fn with_ledger(config: Config, ledger: Ledger) -> Result<Loader, LoaderError> {
        config.validate()?;
        Ok(Loader {
            config,
            ledger,
            scratch: Vec::new(),
            effects: Vec::new(),
            work: HashMap::default(),
            reads: Vec::with_capacity(4),
            next_read: 1,
            view: VecDeque::new(),
            base_offset: 0,
            base_cursor: Cursor::default(),
            covered_end: 0,
            end_of_source: false,
            window_start: 0,
            window_len: 0,
            rewind: false,
            now: 0,
            backoff: Backoff::new(config.jitter_seed),
            closed: false,
            view_changed: false,
            announced: 0,
            stats: Stats::default(),
            cursors: CursorPool::default(),
            spare_finite: Vec::new(),
            spare_steps: Vec::new(),
            spare_roomy: None,
        })
    }

    // ---- introspection ----

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The ledger beneath: the spec's abstract state and live requests.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The view's pages, in source order.
    pub fn pages(&self) -> impl ExactSizeIterator<Item = &Page> + '_ {
        self.view.iter()
    }

    /// How many pages the view holds: `pages().len()`, without building the iterator.
    pub fn page_count(&self) -> usize {
        self.view.len()
    }

    /// Whether the view is being revalidated: a repair or full read is pending or running,
    /// and the view shown is the old one.
    pub fn revalidating(&self) -> bool {
        self.ledger.phase() != Phase::Idle || self.ledger.debt() != Debt::None
    }

    /// The items the view covers: from the first held page's start to the last page's end.
    pub fn covered(&self) -> (u64, u64) {
        (self.base_offset, self.covered_end)
    }

    /// The cursor where the first held page starts (empty: the source's start).
    pub fn base_cursor(&self) -> &[u8] {
        &self.base_cursor
    }

    /// Whether the last page read reached the end of the source.
    pub fn end_of_source(&self) -> bool {
        self.end_of_source
    }

    pub fn window(&self) -> (u64, u64) {
        (self.window_start, self.window_len)
    }

    /// Reads issued and not yet answered.
    pub fn outstanding_reads(&self) -> usize {
        self.reads.len()
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// When the host should next call [`Loader::tick`], if a backoff retry is armed.
    pub fn next_deadline(&self) -> Option<u64> {
        self.backoff.deadline
    }

    /// Hands the queued effects to the caller, in the order they arose.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Moves the queued effects into `out`, keeping both allocations for reuse. When `out` is
    /// empty (a host that handles every batch before the next call) the two vectors are
    /// swapped, so the effects are not copied at all.
    pub fn drain_effects_into(&mut self, out: &mut Vec<Effect>) {
        if out.is_empty() {
            std::mem::swap(out, &mut self.effects);
        } else {
            out.append(&mut self.effects);
        }
    }

    // ---- host events ----

    /// The source changed.
    pub fn invalidate(&mut self) -> Result<(), LoaderError> {
        self.open()?;
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
            self.stats.retries_explicit += 1;
            self.backoff.deadline = None;
        }
        self.pump();
        Ok(started)
    }

    /// Moves the window. Growing it issues reads; with a failure recorded, it retries (P3);
    /// with `drop_margin > 0`, pages far behind it are released.
    pub fn set_window(&mut self, start: u64, len: u64) -> Result<(), LoaderError> {
        self.open()?;
        start.checked_add(len).ok_or(LoaderError::WindowOverflow)?;
        let retry = self.ledger.retry_enabled();
        let rewind = start < self.base_offset && !self.rewind;
        // Refuse before moving anything, so that a refusal changes nothing: a retry and a
        // rewind each take a request id, and a rewind an epoch.
        if rewind && self.ledger.epoch() == u64::MAX {
            return Err(LedgerError::EpochOverflow.into());
        }
        let ids = u64::from(retry) + u64::from(rewind);
        if self.ledger.next_id() > u64::MAX - ids {
            return Err(LedgerError::IdOverflow.into());
        }
        if retry {
            self.ledger.explicit_retry(&mut self.scratch)?;
            self.stats.retries_explicit += 1;
            self.backoff.deadline = None;
        }
        self.window_start = start;
        self.window_len = len;
        if rewind {
            // The window moved back over dropped pages, whose cursors are gone: repair
            // everything from the source's start. The old view stays until that commits.
            self.ledger.invalidate(&mut self.scratch)?;
            self.rewind = true;
        }
        self.drop_behind();
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
        if due {
            self.backoff.deadline = None;
            if self.ledger.explicit_retry(&mut self.scratch)?.is_some() {
                self.backoff.retries += 1;
                self.stats.retries_auto += 1;
            }
        }
        self.pump();
        Ok(())
    }

    /// Answers a read with `count` items held by `acquisition`. On `Ok`, the loader owns the
    /// acquisition until it sends `Release` for it; on `Err`, nothing changed and the host
    /// still owns it.
    pub fn settle(
        &mut self,
        read_id: u64,
        acquisition: u64,
        count: u32,
        next_cursor: &[u8],
        end_of_source: bool,
    ) -> Result<Answer, LoaderError> {
        self.open()?;
        let at = self.read_index(read_id)?;
        let limit = self.reads[at].1.limit;
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
        let (_, read) = self.reads.remove(at);
        let stalled = count > 0 && read.cursor == next_cursor;
        let (request, kind) = (read.request, read.kind);
        self.cursors.recycle(read.cursor);
        self.stats.accepted += 1;
        let a = Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            stalled,
        };
        let answer = match kind {
            Kind::Finite => self.settle_finite(&a)?,
            Kind::Chain | Kind::Full => self.settle_step(&a)?,
        };
        match answer {
            Answer::Current => self.stats.answered_current += 1,
            Answer::Stale => self.stats.answered_stale += 1,
            Answer::CursorStalled => self.stats.cursor_stalls += 1,
        }
        self.pump();
        Ok(answer)
    }

    /// Answers a read with a failure. `code` is the host's, for its own records.
    pub fn fail(&mut self, read_id: u64, code: i32) -> Result<Answer, LoaderError> {
        let _ = code;
        self.open()?;
        let at = self.read_index(read_id)?;
        if self.ledger.next_id() == u64::MAX {
            return Err(LedgerError::IdOverflow.into());
        }
        let (_, read) = self.reads.remove(at);
        let failed = self.fail_request(read.request)?;
        self.pump();
        Ok(match failed {
            Failed::Own => Answer::Current,
            Failed::Superseded => Answer::Stale,
        })
    }

    /// Releases every acquisition still held, exactly once, and asks the host to cancel every
    /// outstanding read. Later calls return [`LoaderError::Closed`]. Closing twice is a no-op.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let mut reads: Vec<u64> = self.reads.iter().map(|(id, _)| *id).collect();
        reads.sort_unstable();
        for read_id in reads {
            self.effects.push(Effect::Cancel { read_id });
            self.stats.cancels += 1;
        }
        self.reads.clear();
        let mut ids: Vec<u64> = self.work.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let w = self.work.remove(&id).expect("listed");
            self.release_acqs(&w);
        }
        self.view.clear();
        self.effects.push(Effect::Changed);
    }

    // ---- answers ----

    fn settle_finite(&mut self, a: &Accepted<'_>) -> Result<Answer, LoaderError> {
        let &Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            stalled,
        } = a;
        let w = self
            .work
            .get_mut(&request)
            .expect("a read's request is live");
        let slot = w.accept(acquisition);
        let epoch = w.epoch;
        if stalled {
            self.fail_request(request)?;
            return Ok(Answer::CursorStalled);
        }
        match self.ledger.settle(request, &mut self.scratch)? {
            Settled::FiniteCurrent => {
                if count > 0 {
                    self.view.push_back(Page {
                        acquisition,
                        count,
                        epoch,
                        start: self.covered_end,
                        end_cursor: self.cursors.make(next_cursor),
                        request,
                        slot,
                    });
                    w.in_view += 1;
                    self.covered_end += count as u64;
                }
                self.end_of_source = end_of_source;
                self.view_changed = true;
                self.backoff.reset();
                self.drop_behind();
                Ok(Answer::Current)
            }
            _ => Ok(Answer::Stale),
        }
    }

    fn settle_step(&mut self, a: &Accepted<'_>) -> Result<Answer, LoaderError> {
        let &Accepted {
            request,
            acquisition,
            count,
            next_cursor,
            end_of_source,
            stalled,
        } = a;
        let epoch_now = self.ledger.epoch();
        let debt_full = self.ledger.debt() == Debt::Full;
        let w = self
            .work
            .get_mut(&request)
            .expect("a read's request is live");
        let slot = w.accept(acquisition);
        let kind = w.kind;
        // The epoch moved at a step boundary, or a superseded failure raised the debt to full
        // so the chain will be abandoned anyway: settle now rather than read on.
        let overtaken = kind == Kind::Chain && (w.epoch != epoch_now || debt_full);
        if stalled {
            if kind == Kind::Chain {
                // A tie the host's cursors cannot break: escalate to a full read at once.
                self.fail_request(request)?;
                if self.ledger.explicit_retry(&mut self.scratch)?.is_some() {
                    self.backoff.deadline = None;
                }
            } else {
                self.fail_request(request)?;
            }
            return Ok(Answer::CursorStalled);
        }
        if overtaken {
            // The page is not staged (it would be dropped at once); its acquisition stays
            // with the request.
            self.ledger.settle(request, &mut self.scratch)?;
            self.clear_staged(request);
            return Ok(Answer::Stale);
        }
        let end_cursor = self.cursors.make(next_cursor);
        if count > 0 {
            let start = w.base_offset + w.staged_items;
            w.staged.push(Page {
                acquisition,
                count,
                epoch: w.epoch,
                start,
                end_cursor: end_cursor.clone(),
                request,
                slot,
            });
            w.staged_items += count as u64;
        }
        let done = end_of_source || w.staged_items >= w.target;
        if !done {
            if w.step == 0 {
                // It survived its first step: size it for the rest, with a roomy spare
                // record's vectors when one is pooled (no-op for a record that already fits).
                let page_size = self.config.page_size as u64;
                let steps = w.target.div_ceil(page_size).min(1 << 20) as usize;
                if w.room() < steps {
                    Self::take_roomy(&mut self.spare_roomy, &mut self.spare_steps, w);
                }
                size_for(&mut w.staged, steps);
                size_acqs_for(&mut w.acqs, steps);
            }
            w.step += 1;
            let read_id = w.name_read(&mut self.next_read);
            let (epoch, step) = (w.epoch, w.step);
            self.push_read(request, read_id, kind, epoch, step, end_cursor);
            return Ok(Answer::Current);
        }
        match self.ledger.settle(request, &mut self.scratch)? {
            Settled::ChainCommitted | Settled::FullCommitted { .. } => {
                self.commit(request, end_of_source);
                self.backoff.reset();
                Ok(Answer::Current)
            }
            _ => {
                self.clear_staged(request);
                Ok(Answer::Stale)
            }
        }
    }

    /// Fails a request in the ledger and does the loader's part: a failed finite request is
    /// forgotten by the ledger, so its acquisitions are released here; an own failure arms
    /// the backoff timer.
    fn fail_request(&mut self, request: u64) -> Result<Failed, LoaderError> {
        let failed = self.ledger.fail(request, &mut self.scratch)?;
        let w = &self.work[&request];
        if w.kind == Kind::Finite {
            let w = self.work.remove(&request).expect("live");
            self.release_acqs(&w);
            self.recycle_work(w);
        }
        match failed {
            Failed::Own => {
                self.stats.failed_own += 1;
                self.backoff.failed(&self.config, self.now);
            }
            Failed::Superseded => self.stats.failed_stale += 1,
        }
        Ok(failed)
    }

    /// Swaps the view to a chain's or full read's staged pages, atomically.
    fn commit(&mut self, request: u64, end_of_source: bool) {
        let w = self.work.get_mut(&request).expect("live");
        let staged = std::mem::take(&mut w.staged);
        w.in_view = staged.len() as u32;
        self.base_offset = w.base_offset;
        let base = std::mem::take(&mut w.base_cursor);
        self.covered_end = w.base_offset + w.staged_items;
        self.end_of_source = end_of_source;
        let old_base = std::mem::replace(&mut self.base_cursor, base);
        self.cursors.recycle(old_base);
        let mut old: Vec<Page> = std::mem::replace(&mut self.view, staged.into()).into();
        // Pages come in runs of one request: one map lookup per run, not per page.
        let mut run: Option<(u64, u32)> = None;
        for p in old.drain(..) {
            match &mut run {
                Some((r, n)) if *r == p.request => *n += 1,
                _ => {
                    if let Some((r, n)) = run.replace((p.request, 1)) {
                        self.leave_view(r, n);
                    }
                }
            }
            self.cursors.recycle(p.end_cursor);
        }
        if let Some((r, n)) = run {
            self.leave_view(r, n);
        }
        // The old view's buffer becomes the committing request's staging buffer, which goes
        // back to the pool with the request.
        self.work.get_mut(&request).expect("live").staged = old;
        self.rewind = false;
        self.view_changed = true;
        self.drop_behind();
    }

    /// Releases the pages wholly more than `drop_margin` items before the window start.
    fn drop_behind(&mut self) {
        if self.config.drop_margin == 0 {
            return;
        }
        while let Some(p) = self.view.front() {
            let end = p.start + p.count as u64;
            if end.saturating_add(self.config.drop_margin) > self.window_start {
                break;
            }
            let p = self.view.pop_front().expect("front exists");
            if let Some(w) = self.work.get_mut(&p.request) {
                w.in_view -= 1;
                if let Some(acq) = w.acqs[p.slot as usize].take() {
                    self.effects.push(Effect::Release { acquisition: acq });
                    self.stats.released += 1;
                }
            }
            self.base_offset = end;
            let old_base = std::mem::replace(&mut self.base_cursor, p.end_cursor);
            self.cursors.recycle(old_base);
            self.view_changed = true;
        }
    }

    // ---- the ledger's effects ----

    /// Carries out the ledger's effects, then refills, until nothing more is enabled.
    fn pump(&mut self) {
        loop {
            let mut out = std::mem::take(&mut self.scratch);
            for e in out.drain(..) {
                match e {
                    ledger::Effect::Start { id, kind, epoch } => self.start(id, kind, epoch),
                    ledger::Effect::Release { id } => self.retire(id),
                    ledger::Effect::Superseded { id } => {
                        if let Some(read_id) = self.work.get(&id).and_then(|w| w.read) {
                            self.effects.push(Effect::Cancel { read_id });
                            self.stats.cancels += 1;
                        }
                    }
                }
            }
            self.scratch = out;
            if !self.wants_more() {
                break;
            }
            match self.ledger.issue_finite(&mut self.scratch) {
                Ok(Some(_)) => continue,
                // Nothing enabled, or no request id left: the window waits.
                _ => break,
            }
        }
        // Compared with the last announcement, not with the start of this pump: the event's
        // own ledger call ran before it.
        if self.view_changed || self.ledger.changes() != self.announced {
            self.view_changed = false;
            self.announced = self.ledger.changes();
            self.effects.push(Effect::Changed);
        }
    }

    fn wants_more(&self) -> bool {
        let want =
            (self.window_start + self.window_len).saturating_add(self.config.prefetch_distance);
        !self.end_of_source && self.covered_end < want
    }

    fn start(&mut self, id: u64, kind: Kind, epoch: u64) {
        let want =
            (self.window_start + self.window_len).saturating_add(self.config.prefetch_distance);
        let (base_offset, base_cursor, target, cursor) = match kind {
            Kind::Finite => (0, Cursor::default(), 0, self.memo_end_cursor().clone()),
            Kind::Chain if self.rewind => (
                0,
                Cursor::default(),
                self.covered_end.max(want),
                Cursor::default(),
            ),
            Kind::Chain => {
                let target = (self.covered_end.max(want)).saturating_sub(self.base_offset);
                (
                    self.base_offset,
                    self.base_cursor.clone(),
                    target,
                    self.base_cursor.clone(),
                )
            }
            Kind::Full => (0, Cursor::default(), want, Cursor::default()),
        };
        let spare = if kind == Kind::Finite {
            self.spare_finite.pop()
        } else {
            // Never the roomy record: in a burst of invalidations most chains are overtaken
            // at their first step and stay live until the next commit, and each would lock
            // the roomy record away from the chain that survives. That one takes the roomy
            // vectors when its first step is answered (`take_roomy`).
            self.spare_steps.pop()
        };
        let mut w = spare.unwrap_or_else(|| Work {
            kind,
            epoch,
            acqs: Acqs::new(),
            in_view: 0,
            read: None,
            staged: Vec::new(),
            staged_items: 0,
            step: 0,
            target: 0,
            base_offset: 0,
            base_cursor: Cursor::default(),
        });
        // A repair's vectors are sized for the whole view only once its first step is answered
        // (in `settle_step`), not here: in a burst of invalidations most chains are overtaken
        // at their first step, and sizing each of them for a 100,000-page view allocated
        // megabytes per event.
        w.kind = kind;
        w.epoch = epoch;
        w.target = target;
        w.base_offset = base_offset;
        w.base_cursor = base_cursor;
        self.work.insert(id, w);
        self.issue(id, cursor);
    }

    /// The cursor after the last held page: where a finite read continues.
    fn memo_end_cursor(&self) -> &Cursor {
        self.view
            .back()
            .map_or(&self.base_cursor, |p| &p.end_cursor)
    }

    fn issue(&mut self, request: u64, cursor: Cursor) {
        let w = self.work.get_mut(&request).expect("live");
        let read_id = w.name_read(&mut self.next_read);
        let (kind, epoch, step) = (w.kind, w.epoch, w.step);
        self.push_read(request, read_id, kind, epoch, step, cursor);
    }

    /// Records read `read_id` of `request` as outstanding and asks the host for it; the
    /// request's record already names it.
    fn push_read(
        &mut self,
        request: u64,
        read_id: u64,
        kind: Kind,
        epoch: u64,
        step: u32,
        cursor: Cursor,
    ) {
        let limit = self.config.page_size;
        self.reads.push((
            read_id,
            Outstanding {
                request,
                kind,
                cursor: cursor.clone(),
                limit,
            },
        ));
        debug_assert!(
            self.reads.len() <= 2,
            "more reads outstanding than the ledger allows: {:?}",
            self.reads
        );
        self.stats.issued[kind as usize] += 1;
        self.effects.push(Effect::Issue(Read {
            read_id,
            request_id: request,
            kind,
            epoch,
            step,
            cursor,
            limit,
        }));
    }

    /// The ledger retired a request: hand back everything it acquired.
    fn retire(&mut self, id: u64) {
        let Some(w) = self.work.remove(&id) else {
            return;
        };
        self.release_acqs(&w);
        let shown = w.in_view > 0;
        self.recycle_work(w);
        if shown {
            // Only the module's exact rules (`recheck_full` off) retire a request whose pages
            // are still shown, after a lost invalidation. Drop them and close the gap.
            self.view.retain(|p| p.request != id);
            let mut at = self.base_offset;
            for p in self.view.iter_mut() {
                p.start = at;
                at += p.count as u64;
            }
            self.covered_end = at;
            self.view_changed = true;
        }
    }

    fn leave_view(&mut self, request: u64, pages: u32) {
        if let Some(w) = self.work.get_mut(&request) {
            w.in_view -= pages;
        }
    }

    /// Drops a chain's or full read's staged pages (their acquisitions stay with the request).
    fn clear_staged(&mut self, request: u64) {
        let w = self.work.get_mut(&request).expect("live");
        w.staged_items = 0;
        for p in w.staged.drain(..) {
            self.cursors.recycle(p.end_cursor);
        }
    }

    /// Gives `w` the vectors of the roomy pooled record, if they have more room than `w`'s
    /// own, moving what `w` holds so far into them; the record, with `w`'s smaller vectors,
    /// joins the small ones. A repair of a big view thus reuses the vectors of the last one
    /// instead of allocating (and faulting in) fresh ones.
    fn take_roomy(roomy: &mut Option<Work>, small: &mut Vec<Work>, w: &mut Work) {
        let Some(spare) = roomy.as_mut() else {
            return;
        };
        if spare.room() <= w.room() {
            return;
        }
        debug_assert!(spare.staged.is_empty() && spare.acqs.is_empty());
        spare.staged.append(&mut w.staged);
        spare.acqs.append(&mut w.acqs);
        std::mem::swap(&mut spare.staged, &mut w.staged);
        std::mem::swap(&mut spare.acqs, &mut w.acqs);
        let spare = roomy.take().expect("checked");
        if small.len() < SPARE_STEPS {
            small.push(spare);
        }
    }

    /// Keeps a retired request's buffers for the next request.
    fn recycle_work(&mut self, mut w: Work) {
        for p in w.staged.drain(..) {
            self.cursors.recycle(p.end_cursor);
        }
        self.cursors.recycle(std::mem::take(&mut w.base_cursor));
        w.acqs.clear();
        w.in_view = 0;
        w.read = None;
        w.staged_items = 0;
        w.step = 0;
        if w.kind == Kind::Finite {
            if self.spare_finite.len() < SPARE_FINITE {
                self.spare_finite.push(w);
            }
            return;
        }
        // The roomier of this record and the roomy one stays roomy; the other joins the
        // small ones, while there is room for it.
        let w = match &mut self.spare_roomy {
            Some(r) if r.room() >= w.room() => w,
            roomy => match roomy.replace(w) {
                Some(old) => old,
                None => return,
            },
        };
        if self.spare_steps.len() < SPARE_STEPS {
            self.spare_steps.push(w);
        }
    }

    fn release_acqs(&mut self, w: &Work) {
        for acq in w.acqs.iter().flatten() {
            self.effects.push(Effect::Release { acquisition: *acq });
            self.stats.released += 1;
        }
    }

    fn open(&self) -> Result<(), LoaderError> {
        if self.closed {
            Err(LoaderError::Closed)
        } else {
            Ok(())
        }
    }

    /// Where outstanding read `read_id` is in the list, or why it is not there.
    fn read_index(&self, read_id: u64) -> Result<usize, LoaderError> {
        match self.reads.iter().position(|(id, _)| *id == read_id) {
            Some(at) => Ok(at),
            None if read_id > 0 && read_id < self.next_read => {
                Err(LoaderError::AlreadyAnswered(read_id))
            }
            None => Err(LoaderError::UnknownRead(read_id)),
        }
    }
}

#[cfg(test)]
mod tests;
