//! The plain C types of the ABI: the spec's enums, the structs passed across, and the callback
//! types. Enums only ever flow out of the library; every value C passes in is an integer or a
//! struct of integers, so no C value can be an invalid Rust enum. Result codes live in
//! `result.rs`.

#![allow(non_camel_case_types)]

use super::sized::{Growable, GrowableIn};
use crate::ledger::{self, Coverage, Debt, Failure, Phase, St};
use crate::loader::{self, Answer};
use std::ffi::c_void;
use std::mem::{offset_of, size_of};

/// The kind of a request, and of the reads it issues.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_kind {
    /// One page added at an end of the view: forward after the last page, or backward before
    /// the first (`loader_read.direction`).
    Finite = 0,
    /// A bounded repair, read step by step, each read from the cursor the one before returned.
    /// It starts at the anchor, the held page that holds the window's start (a window before
    /// the held pages anchors at the first one, a window after them at the covered end): from
    /// that page's start cursor forward to the window's end plus `prefetch_distance`, then
    /// backward over the prefetch before the window. A ranged repair (after
    /// `loader_invalidate_range`) re-reads only the held pages the range may touch, with
    /// bounded reads (`loader_read.until`).
    Chain = 1,
    /// A full read: the same reads as a chain, from the same anchor (forward to the window's
    /// end plus prefetch, then backward over the prefetch before the window), relying on
    /// nothing the view holds. Only when nothing is held does it start where the empty view
    /// sits: the source's start, or a `loader_jump` cursor. The retry after an own failure is
    /// one (`loader_retry`), but for a page read's failure with nothing else owed, whose retry
    /// reads that page again (`LOADER_KIND_FINITE`; `loader_counts.retries_page`).
    Full = 2,
}

impl From<ledger::Kind> for loader_kind {
    fn from(k: ledger::Kind) -> loader_kind {
        match k {
            ledger::Kind::Finite => loader_kind::Finite,
            ledger::Kind::Chain => loader_kind::Chain,
            ledger::Kind::Full => loader_kind::Full,
        }
    }
}

/// Which way a read goes from its cursor (`loader_read.direction`).
///
/// Cursors are positions *between* items: a cursor names the gap just after some item, and
/// the empty cursor (length 0) is the gap before the source's first item. Whatever the
/// direction, the host answers with `loader_settle`: `count` items in source order, the
/// `next_cursor` where the next read in the same direction continues, and `end_of_source`.
///
/// With keyset pagination over `ORDER BY k, id`, a cursor holding the key `(k, id)` of the
/// last item it passed (the position just after that item; empty: before every row), the two
/// reads are (`:limit` is `loader_read.limit`):
///
/// ```sql
/// -- LOADER_DIRECTION_FORWARD from cursor (:k, :id); an empty cursor drops the WHERE clause.
/// SELECT k, id, ... FROM items WHERE (k, id) > (:k, :id) ORDER BY k, id LIMIT :limit;
/// -- count = the rows returned; next_cursor = the last row's key (the cursor itself when
/// -- there is none); end_of_source = fewer than :limit rows came back (or, unknown, false).
///
/// -- LOADER_DIRECTION_BACKWARD from cursor (:k, :id); never asked from the empty cursor.
/// SELECT k, id, ... FROM items WHERE (k, id) <= (:k, :id)
///     ORDER BY k DESC, id DESC LIMIT :limit + 1;
/// -- The first :limit rows, reversed into source order, are the answer. If a (:limit+1)-th
/// -- row came back, next_cursor = ITS key (the position just after it, which is just
/// -- before the first row returned) and end_of_source = false; otherwise next_cursor is
/// -- empty (the source's start) and end_of_source = true.
/// ```
///
/// A host with other cursors (log offsets, API page tokens) keeps the same meaning: a
/// backward read returns the items just before its cursor, and its `next_cursor` is the
/// position just before the first item returned, so a forward read from it returns those
/// items first. An answer whose `next_cursor` equals the read's own cursor is a stall in
/// either direction (see `loader_settle`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_direction {
    /// Up to `limit` items just after the cursor, in source order. `next_cursor` is the
    /// position after the last item the host looked at; `end_of_source` says the source's
    /// end was reached.
    Forward = 0,
    /// Up to `limit` items just before the cursor, in source order (the answer's first item
    /// is the farthest from the cursor). `next_cursor` is the position just before the first
    /// item returned (a forward read from it returns these items first; empty at the source's
    /// start); `end_of_source` says the source's START was reached: nothing lies before
    /// `next_cursor`.
    Backward = 1,
}

impl From<loader::Direction> for loader_direction {
    fn from(d: loader::Direction) -> loader_direction {
        match d {
            loader::Direction::Forward => loader_direction::Forward,
            loader::Direction::Backward => loader_direction::Backward,
        }
    }
}

/// The spec's `debt`: none < bounded < full.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_debt {
    /// Nothing owed: the view matches the source as far as the loader knows.
    None = 0,
    /// A bounded repair is owed: a chain from the anchor, or only the pages a ranged
    /// invalidation marked (see `LOADER_KIND_CHAIN`).
    Bounded = 1,
    /// A full read is owed: from the anchor, relying on nothing held (see `LOADER_KIND_FULL`).
    Full = 2,
}

/// The spec's `phase`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_phase {
    /// No repair or full read is running.
    Idle = 0,
    /// A bounded repair (chain) is running.
    Repair = 1,
    /// A full read is running.
    Fullheld = 2,
}

/// The spec's `failure`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_failure {
    /// No failure recorded.
    None = 0,
    /// The loader's own read failed; it waits for a retry: the backoff timer's while
    /// automatic retries remain (`loader_next_deadline`), then `loader_retry` or a window
    /// move only. When the read that failed was a page read (`LOADER_KIND_FINITE`) and nothing
    /// else was owed (no repair or full read running or due), the retry by the timer or
    /// `loader_retry` reads that page again: a finite read with the same cursor, direction and
    /// `until`. An invalidation since the failure, a window move that retries, a page read
    /// whose cursor stalled (`LOADER_ANSWER_CURSOR_STALLED`), or the page read again failing
    /// again retries with a full read (`LOADER_KIND_FULL`) instead. Likewise, when the read
    /// that failed was a repair's (`LOADER_KIND_CHAIN`) and nothing else was owed (the repair
    /// not overtaken by an invalidation; `loader_snapshot.debt` stays
    /// `LOADER_DEBT_BOUNDED`), the retry by the timer or `loader_retry` resumes the repair at
    /// that read (see `loader_retry`); an invalidation since (the debt rises to
    /// `LOADER_DEBT_FULL`), a window move that retries, or that read failing again retries
    /// with a full read. So a failed page costs one page read: its retry issues that read and
    /// nothing else.
    Own = 1,
    /// A superseded read failed; it only raised the debt.
    Superseded = 2,
}

/// The spec's `coverage`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_coverage {
    /// Nothing loaded yet.
    Nothing = 0,
    /// Finite pages only.
    Pages = 1,
    /// Covered by a committed repair chain.
    Chain = 2,
    /// Covered by a committed full read.
    Full = 3,
}

/// A live request's `st`. Released requests are forgotten and not listed.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_request_state {
    /// Reads issued and not all answered.
    Inflight = 0,
    /// Answered; waiting to commit or be released.
    Settled = 1,
    /// Failed; waiting for a retry to release it.
    Failed = 2,
}

impl From<St> for loader_request_state {
    fn from(st: St) -> loader_request_state {
        match st {
            St::Inflight => loader_request_state::Inflight,
            St::Settled => loader_request_state::Settled,
            St::Failed => loader_request_state::Failed,
        }
    }
}

/// How an accepted answer was classified.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum loader_answer {
    /// Authoritative: in the view, or will be when its request commits. For a failure: the
    /// loader's own failure, which waits for a retry (explicit, window move, or backoff).
    Current = 0,
    /// Superseded or overtaken: not part of the view. For a failure: it only raised debt.
    Stale = 1,
    /// `next_cursor` equals the read's own cursor, and the answer had items, or had none and
    /// did not set `end_of_source` (for a read not hinted cancelled): a host bug the loader
    /// survived (reading on from there would loop). A chain escalates to a full read at once;
    /// a finite or full read records an own failure, which waits for backoff
    /// (`loader_next_deadline`) or `loader_retry`. The acquisition was accepted as usual.
    CursorStalled = 2,
}

impl From<Answer> for loader_answer {
    fn from(a: Answer) -> loader_answer {
        match a {
            Answer::Current => loader_answer::Current,
            Answer::Stale => loader_answer::Stale,
            Answer::CursorStalled => loader_answer::CursorStalled,
        }
    }
}

impl From<Debt> for loader_debt {
    fn from(d: Debt) -> loader_debt {
        match d {
            Debt::None => loader_debt::None,
            Debt::Bounded => loader_debt::Bounded,
            Debt::Full => loader_debt::Full,
        }
    }
}

impl From<Phase> for loader_phase {
    fn from(p: Phase) -> loader_phase {
        match p {
            Phase::Idle => loader_phase::Idle,
            Phase::Repair => loader_phase::Repair,
            Phase::FullHeld => loader_phase::Fullheld,
        }
    }
}

impl From<Failure> for loader_failure {
    fn from(f: Failure) -> loader_failure {
        match f {
            Failure::None => loader_failure::None,
            // A page failure is the loader's own failure: it waits for a retry the same way;
            // only the read the retry issues differs.
            Failure::Own | Failure::Page => loader_failure::Own,
            Failure::Superseded => loader_failure::Superseded,
        }
    }
}

impl From<Coverage> for loader_coverage {
    fn from(c: Coverage) -> loader_coverage {
        match c {
            Coverage::Nothing => loader_coverage::Nothing,
            Coverage::Pages => loader_coverage::Pages,
            Coverage::Chain => loader_coverage::Chain,
            Coverage::Full => loader_coverage::Full,
        }
    }
}

/// Loader settings. Set `struct_size`, fill the rest with `loader_config_default`, then change
/// fields:
///
/// ```c
/// loader_config config = { .struct_size = sizeof config };
/// loader_config_default(&config);
/// config.page_size = 100;
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_config {
    /// `sizeof` this struct as the host's `loader.h` declares it; set it before
    /// `loader_config_default`, which keeps it (STRUCTS THAT GROW at the top of this header).
    pub struct_size: u32,
    /// Items per read. Default 50; 1..=`LOADER_MAX_PAGE_SIZE`.
    pub page_size: u32,
    /// Items to keep loaded on EACH side of the window: the view reaches for
    /// `[window_start - prefetch_distance, window_end + prefetch_distance)` (from 0 when the
    /// window starts closer to it), reading forward past the window's end and backward before
    /// its start (a window moved back, a jump, pages `max_pages` released). Default 50; 0 loads
    /// only the window.
    pub prefetch_distance: u64,
    /// Pages wholly more than this many items before the window start are released; 0 (the
    /// default) never drops.
    pub drop_margin: u64,
    /// First backoff delay after an own failure, ms. Default 100; at least 1.
    pub backoff_initial_ms: u64,
    /// Cap on the backoff delay, ms. Default 30000; at least `backoff_initial_ms`.
    pub backoff_max_ms: u64,
    /// Factor between delays. Default 2.0; finite, 1.0..=16.0.
    pub backoff_multiplier: f64,
    /// Automatic retries in a row before waiting for an explicit one: any successful answer
    /// (a page, or one step of a repair or retry) starts the count again, so failures spread
    /// over a long scroll never spend it. Default 5; 0 disables them. Once they are spent, an
    /// own failure arms no deadline and waits for `loader_retry` or a window move: see
    /// `loader_next_deadline`. A repair that commits without any answer (a ranged
    /// invalidation whose marked pages all lay outside the window plus prefetch, so there was
    /// nothing to re-read) counts as a success too: it starts the count again and disarms a
    /// deadline.
    pub max_auto_retries: u32,
    /// Seeds the backoff jitter. Default 0. Each delay is drawn from the upper half of its
    /// step: after `k` automatic retries since the last success, the next waits from `d / 2`
    /// to `d` ms, both included (integer division), where `d` is `backoff_initial_ms ·
    /// backoff_multiplier^k` capped at `backoff_max_ms`, in whole ms. The draws are a fixed
    /// sequence for each seed: loaders with the same seed and the same failures retry in
    /// step, so give each its own.
    pub jitter_seed: u64,
    /// Non-zero (the default): repair an invalidation that overtook a full read. Zero restores
    /// the model's exact `unifiedMin`, which loses it; `commit_overtaken` then has no effect.
    pub recheck_full: u8,
    /// Non-zero (the default): a repair an invalidation overtook runs to its end and commits,
    /// and a new repair starts at once, so the view keeps refreshing under any rate of
    /// changes. Zero settles it stale and starts a replacement. Takes effect only with
    /// `recheck_full` non-zero: with `recheck_full` zero it is ignored, whatever its value (it
    /// is not an error, so the default need not be changed to turn `recheck_full` off), and
    /// an overtaken repair is settled stale, as the model's `unifiedMin` says. The page retry
    /// depends on it as well: only with both non-zero (the defaults) is a page read's failure
    /// with nothing else owed retried by reading that page again
    /// (`loader_counts.retries_page`); with either zero, every own failure is retried by a
    /// full read.
    pub commit_overtaken: u8,
    /// The most pages the view holds, on both sides of the window. Over it, the pages
    /// farthest from the window are released first (before or after it); pages overlapping
    /// `[window_start - prefetch, window_end + prefetch)` are never released. When the page a
    /// finite read in flight continues from is released, that read's answer is released as
    /// it arrives (its page would follow a gap), and the view reads on from where it ends.
    /// Scrolling back over released pages reads them again, backward from the first page
    /// held, or, far back, from a remembered cursor (FAR MOVES at `jump_threshold`). Default
    /// `LOADER_DEFAULT_MAX_PAGES` (64), so a loader made with the default config holds a
    /// bounded number of pages whatever the host does; 0 asks for no bound.
    ///
    /// The acquisitions the loader holds at once (not yet passed to `release`), at every
    /// instant, are at most:
    /// - max(`max_pages`, the pages overlapping the window ± prefetch) pages of the view,
    ///   plus one while a finite read is in flight;
    /// - plus the pages the one running repair, full read or retry has staged: with full
    ///   pages at most ceil((window_len + 2 * prefetch) / page_size) + 2, however far the
    ///   window is from where it started and however it moved or shrank since: the pages
    ///   the window plus prefetch does not cover go back as soon as they are read or the
    ///   window moves (a read in flight beyond them is answered, and its page goes back at
    ///   once). Short pages need more pages for the same items: then the pages overlapping
    ///   the window plus prefetch, plus two.
    ///
    /// Nothing else holds a page: a stale page, the pages of a repair abandoned or
    /// overtaken, and empty pages go back at once. The cursor memo holds cursors, not
    /// pages (`cursor_memo_bytes`). `loader-check --loader` checks this bound
    /// after every event of every interleaving it explores.
    pub max_pages: u32,
    /// How long (ms of the `loader_tick` clock) a superseded read's answer is awaited before
    /// the loader lets it go, as `loader_abandon` would. Default 10000; 0 never lets go.
    pub read_timeout_ms: u64,
    /// A starting point: with `initial_cursor_len > 0` or `initial_position > 0`, `loader_new`
    /// jumps there (as `loader_jump` does) before it returns, so the view is first loaded
    /// around the item just after this cursor, which gets position `initial_position` (the
    /// end of a log, a bookmarked row). NULL with `initial_cursor_len` 0 is the source's
    /// start, where positions are the source's own: its first item gets 0 whatever
    /// `initial_position` says. The bytes are copied: the pointer need only be valid during `loader_new`. NULL
    /// with a length other than 0 is `LOADER_RESULT_NULL_CURSOR`; longer than
    /// `LOADER_MAX_CURSOR_LEN` is `LOADER_RESULT_CURSOR_TOO_LONG`. `loader_new` runs no
    /// callback: the starting point's reads are issued by the loader's first event call
    /// (`loader_set_window`, `loader_tick`, ...), before that call's own.
    /// Default NULL.
    pub initial_cursor: *const u8,
    /// The length of `initial_cursor` in bytes. Default 0.
    pub initial_cursor_len: usize,
    /// The position the item after `initial_cursor` gets, and where the window starts.
    /// Default 0.
    pub initial_position: u64,
    /// FAR MOVES. A window moved (`loader_set_window`) more than this many items beyond the
    /// held pages (prefetch included) is not walked to page by page: the loader starts at the
    /// nearest cursor it knows for it, as `loader_jump` does, and reads about the window
    /// plus prefetch. It knows: the cursors of pages it read and released (the memo,
    /// `cursor_memo_bytes`), the source's start (position 0, while positions are the source's
    /// own), and the host's `locate` callback, if given (`loader_locate_fn`). It starts at a
    /// remembered cursor within one page of the target, else asks `locate`, else starts at
    /// the nearest remembered cursor if it is nearer than the held pages, else walks.
    /// `LOADER_JUMP_THRESHOLD_AUTO` (the default): the window's length plus twice
    /// `prefetch_distance`. 0: always walk (the behaviour before this field existed).
    pub jump_threshold: u64,
    /// The cursor memo's budget in bytes: where the pages the loader read and released
    /// started, by position, kept (cursors only, no item) so that a far move back starts
    /// near its target. Each cursor costs `LOADER_MEMO_ENTRY_BYTES` plus its length when over
    /// 14 bytes; when the budget is reached, every other cursor is forgotten, leaving an even
    /// grid (a far move then reads up to the grid's spacing more). Only pages of a current
    /// view are remembered; a whole invalidation, a `loader_jump` or a renumbering forgets
    /// every cursor, and a ranged one those from its `from` on, since their positions may
    /// have moved. Default 4 MiB (87,381 short cursors: every page of 4.3 million items at 50
    /// a page); 0 remembers nothing.
    pub cursor_memo_bytes: u64,
}

// SAFETY: `#[repr(C)]`, `struct_size` first; FIRST_SIZE ends at its last field.
unsafe impl Growable for loader_config {
    const FIRST_SIZE: usize = offset_of!(loader_config, initial_position) + size_of::<u64>();
}
// SAFETY: integers, a float and a raw pointer: every bit pattern is a valid config.
unsafe impl GrowableIn for loader_config {}

impl From<loader::Config> for loader_config {
    fn from(c: loader::Config) -> loader_config {
        loader_config {
            struct_size: loader_config::own_size(),
            page_size: c.page_size,
            prefetch_distance: c.prefetch_distance,
            drop_margin: c.drop_margin,
            backoff_initial_ms: c.backoff_initial_ms,
            backoff_max_ms: c.backoff_max_ms,
            backoff_multiplier: c.backoff_multiplier,
            max_auto_retries: c.max_auto_retries,
            jitter_seed: c.jitter_seed,
            recheck_full: u8::from(c.recheck_full),
            commit_overtaken: u8::from(c.commit_overtaken),
            max_pages: c.max_pages,
            read_timeout_ms: c.read_timeout_ms,
            initial_cursor: std::ptr::null(),
            initial_cursor_len: 0,
            initial_position: 0,
            jump_threshold: c.jump_threshold,
            cursor_memo_bytes: c.cursor_memo_bytes,
        }
    }
}

impl From<&loader_config> for loader::Config {
    fn from(c: &loader_config) -> loader::Config {
        loader::Config {
            page_size: c.page_size,
            prefetch_distance: c.prefetch_distance,
            drop_margin: c.drop_margin,
            backoff_initial_ms: c.backoff_initial_ms,
            backoff_max_ms: c.backoff_max_ms,
            backoff_multiplier: c.backoff_multiplier,
            max_auto_retries: c.max_auto_retries,
            jitter_seed: c.jitter_seed,
            recheck_full: c.recheck_full != 0,
            max_pages: c.max_pages,
            read_timeout_ms: c.read_timeout_ms,
            commit_overtaken: c.commit_overtaken != 0,
            jump_threshold: c.jump_threshold,
            cursor_memo_bytes: c.cursor_memo_bytes,
        }
    }
}

/// A read the loader asks the host to perform. Valid only during the `issue` callback; copy
/// the cursor bytes if they are needed later.
#[repr(C)]
#[derive(Debug)]
pub struct loader_read {
    /// Names the read in `loader_settle` / `loader_fail`. Never reused.
    pub read_id: u64,
    /// The request the read belongs to.
    pub request_id: u64,
    /// The request's kind.
    pub kind: loader_kind,
    /// The epoch the request was stamped with.
    pub epoch: u64,
    /// 0 for a request's first read; chain and full reads count up.
    pub step: u32,
    /// Where to start: bytes the host returned earlier as a `next_cursor`. Owned by the
    /// loader; NULL when `cursor_len` is 0 (the source's start).
    pub cursor: *const u8,
    /// The cursor's length in bytes; 0 for the source's start.
    pub cursor_len: usize,
    /// At most this many items.
    pub limit: u32,
    /// Which way from `cursor`: after it (forward) or before it (backward).
    pub direction: loader_direction,
    /// NULL: an unbounded read. Otherwise a bounded read (only a ranged repair issues them,
    /// always forward): the host returns only the items after `cursor` and at or before
    /// `until` (with keyset cursors, `cursor < key <= until`), at most `limit` of them.
    /// FEWER than `limit` items means the host reached `until` or the source's end, so a
    /// filtering host keeps scanning past filtered-out rows until it has `limit` items or
    /// reaches `until`. `next_cursor` is, as always, the position after the last row scanned
    /// (`until` itself once the scan reached it). An EMPTY page whose `next_cursor` moved but
    /// is not `until`, without `end_of_source`, is not the bound: the loader reads on from
    /// `next_cursor` (a host that scans a fixed number of rows per read loses nothing on a
    /// filtered stretch); an empty page that repeats `cursor` is `CURSOR_STALLED`.
    /// `end_of_source` on a bounded read means what it means on any forward read: no item at
    /// all lies after the last item the host looked at, in the whole source, past `until`
    /// too. Reaching `until` is NOT the source's end (a short page already says `until` was
    /// reached): a bounded read that stops at `until` with items after it says false, or the
    /// loader ends the view there and the items after it are lost from the view. A host
    /// unsure says false: it costs at most one more read. Owned by the loader and valid only
    /// during the `issue` callback, like `cursor`: copy it if it is needed later.
    pub until: *const u8,
    /// The length of `until` in bytes; 0 when `until` is NULL.
    pub until_len: usize,
}

/// The host's pointer-sized token for whatever holds one answer's items (a buffer, a row set,
/// an index into a table): `uintptr_t` in C. The loader never dereferences it; it hands it
/// back, unchanged, to `release`. Tokens need not be distinct, but two acquisitions with the
/// same token are indistinguishable to the host, and a pinned view defers the release of every
/// acquisition whose token it lists.
///
/// Declared in C by `cbindgen.toml` (`typedef uintptr_t loader_acquisition;`), since cbindgen
/// writes `usize` as `size_t`; both have the width of a pointer on every supported target.
///
/// cbindgen:no-export
pub type loader_acquisition = usize;

/// Called to start a read. The host answers it later, exactly once, from any thread, with
/// `loader_settle` or `loader_fail`. The read is valid only during the call: copy its cursor.
///
/// If `issue` does not return normally (a C++ exception or a Rust panic unwinds out of it, or
/// it ends its thread), the loader lets the read go on the unwind's way out, as
/// `loader_abandon` would: for a read still needed that is an own failure (`failed_own`),
/// which the usual retry rules recover (the backoff retry through `loader_tick`,
/// `loader_retry`, a window move), so nothing stays outstanding. An answer the host gives it
/// later anyway is accepted as `LOADER_ANSWER_STALE` and its acquisition released at once
/// (`late_answers`). The unwind continues to the caller; the callbacks still queued on that
/// thread, the failure's `changed` among them, are delivered by the next call into the
/// loader. A host that cannot take a read without unwinding may instead call `loader_fail`
/// (or `loader_abandon`) on it from inside `issue`, and return.
pub type loader_issue_fn =
    Option<unsafe extern "C-unwind" fn(userdata: *mut c_void, read: *const loader_read)>;
/// Called exactly once for every acquisition the loader accepted (a `loader_settle` that
/// returned `LOADER_RESULT_OK`), when it is done with it; never for one it did not accept.
/// Once it is called the host may free what the token names. While a pinned view
/// (`loader_view_acquire`) lists the acquisition, the call is deferred until the last such
/// view is released.
pub type loader_release_fn =
    Option<unsafe extern "C-unwind" fn(userdata: *mut c_void, acquisition: loader_acquisition)>;
/// Called after a call changed the view (its pages, or their positions and the window when
/// the view is renumbered) or the ledger state, once per call at most, after the call's
/// `issue`, `release` and `cancel` callbacks (a nested call from a callback has its own).
/// `loader_state` and `loader_view_acquire` then see the new state; check
/// `loader_snapshot.quiescent` there to know whether anything is left to do.
pub type loader_changed_fn = Option<unsafe extern "C-unwind" fn(userdata: *mut c_void)>;
/// A hint that a read's answer is no longer needed, sent at most once per read: when the
/// read's request is superseded; when a far move or `loader_jump` lets go of a repair's or
/// full read's read (`LOADER_KIND_CHAIN` or `LOADER_KIND_FULL`) it no longer needs, which
/// the loader lets go at once, as `read_timeout_ms` would (it is no longer outstanding, and
/// an answer, failure or `loader_abandon` of it is late: stale); or, for a read never hinted,
/// by `loader_free`. A superseded read stays outstanding (in `outstanding_reads`, its
/// request in flight, which can hold back the next read of its kind) until the host does one
/// of: answers it with `loader_settle`
/// (classified stale), fails it with `loader_fail` (any code; this lets it go at no cost, no
/// debt and no re-read), or calls `loader_abandon`. A host that does none of these loses
/// nothing: after `read_timeout_ms` of `loader_tick` time the loader lets the read go itself.
/// An answer after the read was let go of is stale, and its acquisition is released at once.
/// After `loader_free` no answer is needed (it would return `LOADER_RESULT_STALE_HANDLE`).
///
/// The hint comes from another call than its read's `issue`: when the two calls run on
/// different threads it may run before (or while) that `issue` runs. And it may name a read
/// id the host never saw (one whose `issue` a concurrent `loader_free` dropped): a host
/// ignores a `cancel` for a read id it does not know.
pub type loader_cancel_fn =
    Option<unsafe extern "C-unwind" fn(userdata: *mut c_void, read_id: u64)>;
/// Orders two positions of the source (cursors, as the host returns them in `next_cursor`):
/// negative if `a` comes before `b`, 0 if they are the same position, positive if after. Only
/// `loader_invalidate_range` calls it, and `loader_settle` / `loader_settle_counted` for the
/// answer to a forward read that a ranged change was reported ahead of while it was out (see
/// `loader_invalidate_range`), each on its calling thread (a feed's settles: its workers'
/// threads), and only with non-empty cursors (the loader orders the empty cursor, the source's
/// start, itself); `a` and `b` are valid only during the call.
///
/// It runs INSIDE the loader's state change, with the loader's lock held: the one callback
/// that does (CALLBACKS). Other calls on this loader wait for it; calls on other loaders do not.
/// So it must be a pure function of its arguments (and of data that does not change during the
/// call): it must not call any libloader function (a call on the same loader deadlocks, and
/// one on another loader may run that loader's callbacks inside this one), must not block on a
/// thread that calls into the loader, and must return normally (no exception or `longjmp` out
/// of it, no thread exit: the process aborts). It must be a consistent total order, the one
/// the source is sorted by; an inconsistent one cannot break the library's memory safety or
/// its accounting, but the view may then be wrong, as with a range that is too narrow.
pub type loader_compare_fn = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        a: *const u8,
        a_len: usize,
        b: *const u8,
        b_len: usize,
    ) -> i32,
>;

/// Finds the cursor whose next item is at `position`, in the source's own numbering (item 0
/// is the source's first): the key of the item at `position - 1`, or the empty cursor for 0.
/// Write it to `cursor` (room for `capacity` bytes, `LOADER_MAX_CURSOR_LEN`), set
/// `*cursor_len`, and return `LOADER_LOCATE_FOUND`; return `LOADER_LOCATE_UNKNOWN` (or any
/// other value) when the host cannot tell: the move then starts at the nearest cursor the
/// loader remembers, or walks. A keyset host answers with an indexed count or an `OFFSET`
/// query; a log, with its offsets. It is worth it when the host can answer much faster than
/// reading the items between (`OFFSET n` over an index costs about n index steps, and no
/// rows copied); without it, a far move to a position never visited walks.
///
/// Only `loader_set_window` calls it, for a far move (`loader_config.jump_threshold`) with
/// no remembered cursor within one page of the target, at most once per call, on the
/// calling thread. It is synchronous: the loader decides, within the call that moved the
/// window, whether to walk or to start at a cursor; an answer that came later would leave
/// the window waiting on neither. A host whose lookup is slow or remote can find the cursor
/// itself and call `loader_jump`. Like `compare`, it runs INSIDE the loader's state change
/// with the loader's lock held: it must not call any libloader function, must not block on
/// a thread that calls into the loader, and must return normally (no exception, `longjmp`
/// or thread exit: the process aborts). A wrong cursor cannot break memory safety or the
/// accounting: the view is then the source from that cursor on, numbered from `position`.
pub type loader_locate_fn = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        position: u64,
        cursor: *mut u8,
        capacity: usize,
        cursor_len: *mut usize,
    ) -> i32,
>;

/// The host's callbacks. `issue` and `release` are required; `changed`, `cancel`,
/// `compare` and `locate` may be NULL. Each receives `userdata` first, unchanged. Where each runs and what
/// it may do: THREADS and CALLBACKS at the top of this header.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_callbacks {
    /// `sizeof` this struct as the host's `loader.h` declares it; set it before the struct is
    /// passed to the library (STRUCTS THAT GROW at the top of this header).
    pub struct_size: u32,
    /// Passed to every callback, from whichever thread runs it. The host keeps it valid until
    /// `loader_free` returns, every callback running on another thread has returned, and
    /// every pinned view of the loader is released.
    pub userdata: *mut c_void,
    /// Required.
    pub issue: loader_issue_fn,
    /// Required.
    pub release: loader_release_fn,
    /// May be NULL.
    pub changed: loader_changed_fn,
    /// May be NULL.
    pub cancel: loader_cancel_fn,
    /// May be NULL: then `loader_invalidate_range` returns `LOADER_RESULT_NO_COMPARE` and
    /// changes nothing. See `loader_compare_fn` for what it may and may not do.
    pub compare: loader_compare_fn,
    /// May be NULL (the behaviour before this field existed): a far move to a position the
    /// loader never read walks, or starts at the nearest cursor it remembers. See
    /// `loader_locate_fn`.
    pub locate: loader_locate_fn,
}

// SAFETY: `#[repr(C)]`, `struct_size` first; FIRST_SIZE ends at its last field.
unsafe impl Growable for loader_callbacks {
    const FIRST_SIZE: usize = offset_of!(loader_callbacks, compare) + size_of::<usize>();
}
// SAFETY: a raw pointer and `Option`s of function pointers: every bit pattern is valid (NULL
// is `None`).
unsafe impl GrowableIn for loader_callbacks {}

/// What a loader is doing, as `loader_state` reports it: first what a host acts on (whether
/// anything is left to do, the window, what the view covers), then the ledger's state under
/// the names the model (`spec/LoaderLedger.tla`) gives it, for diagnostics and tests.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_snapshot {
    /// `sizeof` this struct as the host's `loader.h` declares it; set it before the call
    /// that fills it, which sets it to the bytes it filled (STRUCTS THAT GROW at the top of this header).
    pub struct_size: u32,
    /// Nothing is left to do until the host calls again: no read outstanding, no repair or
    /// full read pending or running (so not `revalidating`), no failure recorded, and the
    /// ledger quiescent (phase idle, no debt, nothing in flight). A host that waits for the
    /// loader to settle down (a test, a batch job) waits for this, but not for it alone: once
    /// the automatic retries are spent (`max_auto_retries`), an own failure keeps it false and
    /// arms no deadline, and nothing changes until the host acts. So when
    /// `loader_next_deadline` arms nothing and `failure` is `LOADER_FAILURE_OWN`, the host
    /// calls `loader_retry` or gives up by its own rule (the loop at `loader_next_deadline`).
    pub quiescent: bool,
    /// The view shown is the old one: a repair or full read is pending or running.
    pub revalidating: bool,
    /// The view reaches the source's end.
    pub end_of_source: bool,
    /// The first page held starts at the source's start (nothing before it): the view's
    /// positions are then the source's own (item `n` of the source is at `n`). Otherwise
    /// they are anchored (see `loader_page.start`).
    pub start_of_source: bool,
    /// The window's first item. Read it back after `changed`: a renumbering moves it (see
    /// `loader_page.start`).
    pub window_start: u64,
    /// The window's length in items.
    pub window_len: u64,
    /// The view holds items `[covered_start, covered_end)`.
    pub covered_start: u64,
    /// See `covered_start`.
    pub covered_end: u64,
    /// Pages in the view.
    pub pages: u64,
    /// Reads issued and not yet answered (nor let go of).
    pub outstanding_reads: u64,
    /// Acquisitions accepted so far.
    pub accepted: u64,
    /// Acquisitions the loader let go of so far. It counts a release that a pinned view
    /// defers when the loader lets go, not when the callback runs.
    pub released: u64,
    /// Whether a read failed and what it costs: nothing, the loader's own read (it waits for
    /// a retry), or a superseded one (it only raised `debt`). The model's `failure`.
    pub failure: loader_failure,
    /// The work the loader owes the view since the last invalidation: nothing, a bounded
    /// repair, or a full read. The model's `debt`.
    pub debt: loader_debt,
    /// The repair running: none, a bounded repair (chain), or a full read. The model's
    /// `phase`.
    pub phase: loader_phase,
    /// What the view was last made current by: nothing yet, finite pages only, a repair, or
    /// a full read. The model's `coverage`.
    pub coverage: loader_coverage,
    /// A current (not stale) answer has committed at least once. The model's `settledOnce`.
    pub settled_once: bool,
    /// How many invalidations the loader has seen: each one bumps it. The model's `epoch`.
    pub epoch: u64,
    /// The epoch the running repair was started at. The model's `chainEpoch`.
    pub chain_epoch: u64,
    /// The epoch of the request that last made the view current: the view reflects every
    /// change before it. The model's `coverEpoch`.
    pub cover_epoch: u64,
    /// The id the next request will get.
    pub next_request_id: u64,
    /// Live requests in flight.
    pub inflight: u64,
    /// Live requests answered and waiting to commit or be released.
    pub settled: u64,
    /// Live requests failed (waiting for a retry to release them).
    pub failed: u64,
}

// SAFETY: `#[repr(C)]`, `struct_size` first; FIRST_SIZE ends at its last field.
unsafe impl Growable for loader_snapshot {
    const FIRST_SIZE: usize = offset_of!(loader_snapshot, failed) + size_of::<u64>();
}

/// Counters since the loader was created, for reports and monitoring.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_counts {
    /// `sizeof` this struct as the host's `loader.h` declares it; set it before the call
    /// that fills it, which sets it to the bytes it filled (STRUCTS THAT GROW at the top of this header).
    pub struct_size: u32,
    /// Finite reads issued.
    pub issued_finite: u64,
    /// Chain (repair) reads issued.
    pub issued_chain: u64,
    /// Full reads issued.
    pub issued_full: u64,
    /// Accepted answers classified current.
    pub answered_current: u64,
    /// Accepted answers classified stale.
    pub answered_stale: u64,
    /// Accepted answers whose cursor did not advance.
    pub cursor_stalls: u64,
    /// Failures that were the loader's own (they wait for a retry).
    pub failed_own: u64,
    /// Failures of superseded reads.
    pub failed_stale: u64,
    /// Retries started by the backoff timer. A retry reads the full source
    /// (`LOADER_KIND_FULL`), resumes a failed repair or full read (`resumed`), or reads a
    /// failed page again (`retries_page`).
    pub retries_auto: u64,
    /// Retries started by `loader_retry`, a window move or a `loader_jump` (read as for
    /// `retries_auto`; a window move or a jump never reads the failed page again).
    pub retries_explicit: u64,
    /// Acquisitions accepted.
    pub accepted: u64,
    /// Acquisitions released.
    pub released: u64,
    /// Cancellation hints sent.
    pub cancels: u64,
    /// Reads issued with `LOADER_DIRECTION_BACKWARD` (also counted by kind above).
    pub issued_backward: u64,
    /// Items in the answers accepted for reads still outstanding, in both directions (current,
    /// stale and stalled answers alike): what the loader made the host read. A late answer,
    /// to a read already let go of (`late_answers`), is not counted here, though its
    /// acquisition is in `accepted`; a host that wants every item it loaded counts its own.
    pub items_read: u64,
    /// Times the view's positions were renumbered, and the window moved with them (see
    /// `loader_page.start`).
    pub renumbered: u64,
    /// Calls to `loader_jump` that succeeded (an `initial_cursor` start counts as one).
    pub jumps: u64,
    /// Retries that resumed a failed repair or full read at its failed read, keeping the
    /// reads that succeeded at the same epoch: a full read's retry, or a repair failure's,
    /// which reads on as the repair (see `loader_retry`).
    pub resumed: u64,
    /// Reads the loader no longer needed that were let go of at no cost: a superseded read
    /// passed to `loader_abandon`, failed with `loader_fail` after its `cancel` hint, timed out
    /// by `read_timeout_ms`, or whose `issue` unwound; and a repair's or full read's read in
    /// flight that a far move or `loader_jump` made unneeded (sent a `cancel` hint; it
    /// starts at its own cursor instead). A read still needed that is abandoned
    /// (by `loader_abandon`, or because its `issue` unwound) is a failure instead, counted in
    /// `failed_own`, not here; its late answer is still stale (`late_answers`).
    pub abandoned: u64,
    /// Of those, the ones `read_timeout_ms` let go of.
    pub timed_out: u64,
    /// Answers (`loader_settle`, `loader_settle_counted` or `loader_fail`) to reads already let
    /// go of, whether counted in `abandoned` or in `failed_own`: classified stale. A late
    /// settle's acquisition is accepted (`accepted`, `answered_stale`) and released at once;
    /// its items are not in `items_read`. A late `loader_fail` is in no other counter.
    pub late_answers: u64,
    /// Calls to `loader_invalidate_range` that succeeded.
    pub ranged_invalidations: u64,
    /// Ranged repairs that committed: the view current again after re-reading only the
    /// pages a ranged invalidation marked (or none, for a change outside the held pages).
    pub ranged_repairs: u64,
    /// Of `retries_auto` and `retries_explicit`, the retries that read a failed page again
    /// (one finite read, `LOADER_KIND_FINITE`, with the failed read's cursor, direction and
    /// `until`) instead of the full source: a page read's own failure while nothing else was
    /// owed, retried by the timer, `loader_retry` or `loader_set_window` with the window
    /// unchanged, with no invalidation since and while that read is still the one the window
    /// needs (no window move or `loader_jump` since the read was issued). Every other retry
    /// of a page failure is a full read, counted in `retries_auto` or `retries_explicit`
    /// only. Always 0 unless `recheck_full` and `commit_overtaken` are both non-zero (the
    /// defaults): without them there is no page failure.
    pub retries_page: u64,
    /// Window moves far from the held pages (`loader_config.jump_threshold`) that started at
    /// a known cursor (the memo, the source's start, or `locate`) instead of walking.
    pub far_jumps: u64,
    /// `locate` calls that gave a cursor.
    pub located: u64,
    /// `locate` calls that answered unknown (or a cursor too long): the move fell back to
    /// the nearest cursor remembered, or walked.
    pub locate_unknown: u64,
}

impl From<crate::loader::Stats> for loader_counts {
    fn from(s: crate::loader::Stats) -> loader_counts {
        loader_counts {
            struct_size: loader_counts::own_size(),
            issued_finite: s.issued[0],
            issued_chain: s.issued[1],
            issued_full: s.issued[2],
            answered_current: s.answered_current,
            answered_stale: s.answered_stale,
            cursor_stalls: s.cursor_stalls,
            failed_own: s.failed_own,
            failed_stale: s.failed_stale,
            retries_auto: s.retries_auto,
            retries_explicit: s.retries_explicit,
            accepted: s.accepted,
            released: s.released,
            cancels: s.cancels,
            issued_backward: s.issued_backward,
            items_read: s.items_read,
            renumbered: s.renumbered,
            jumps: s.jumps,
            resumed: s.resumed,
            abandoned: s.abandoned,
            timed_out: s.timed_out,
            late_answers: s.late_answers,
            ranged_invalidations: s.ranged_invalidations,
            ranged_repairs: s.ranged_repairs,
            retries_page: s.retries_page,
            far_jumps: s.far_jumps,
            located: s.located,
            locate_unknown: s.locate_unknown,
        }
    }
}

// SAFETY: `#[repr(C)]`, `struct_size` first; FIRST_SIZE ends at its last field.
unsafe impl Growable for loader_counts {
    const FIRST_SIZE: usize = offset_of!(loader_counts, ranged_repairs) + size_of::<u64>();
}

/// One live request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_request_info {
    /// The request's id.
    pub id: u64,
    /// The request's kind.
    pub kind: loader_kind,
    /// The epoch the request was stamped with.
    pub epoch: u64,
    /// The spec's `st`.
    pub state: loader_request_state,
    /// Authoritative work superseded it while in flight.
    pub superseded: bool,
}

/// One page of the view.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct loader_page {
    /// The host's token for the page's items. Still owned by the loader.
    pub acquisition: loader_acquisition,
    /// Items in the page.
    pub count: u32,
    /// The epoch of the request that loaded it.
    pub epoch: u64,
    /// The position of the page's first item. Positions are consecutive across the view:
    /// each page starts where the one before it ends.
    ///
    /// While the view reaches the source's start (`loader_snapshot.start_of_source`), they
    /// are the source's own numbers: item `n` of the source is at `n`. Otherwise they are
    /// anchored: a repair keeps the number of the item at the window's start, `loader_jump`
    /// uses the position the host gave, and pages read backward take the numbers before.
    /// Rows inserted or deleted before the first page held move the true offsets without the
    /// loader seeing it. When numbers would go below 0 (rows inserted above), or a backward
    /// read reaches the source's start and its first item is not at 0, the loader renumbers
    /// the whole view AND the window by the same amount (`loader_counts.renumbered`), so the
    /// window stays on the same items: after `changed`, read `window_start` back
    /// (`loader_state`) instead of assuming the one last set.
    pub start: u64,
}
