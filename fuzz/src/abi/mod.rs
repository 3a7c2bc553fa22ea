//! `fuzz_abi`: byte strings decoded into sequences of calls to the exported `loader_*`
//! functions, on up to [`SLOTS`] loaders at once.
//!
//! Handles, read ids, counts, cursors and window values are usually valid, sometimes one off,
//! sometimes garbage; frees, double frees and calls after free are part of the mix, and the
//! callbacks themselves answer, fail, invalidate, move the window or free their own loader
//! (see `host.rs`). Every call's result is checked against the code the header documents for
//! its arguments, in the order the library checks them; a refused call must change nothing
//! (state, requests, view, deadline) and run no callback.
//!
//! After every call, for each loader the call may have touched (and for all of them every 16
//! calls; an untouched loader cannot change), through `loader_state`, `loader_requests` and
//! `loader_view`: the module's invariants `ChainHeld`, `NoLeak`, `NoStrandedStaleFailure`,
//! and `NoLostInvalidation` when `recheck_full` is on; the counts agree with the request list
//! and with the host's own books (reads outstanding, acquisitions accepted and released); each
//! in-flight request has one outstanding read; the view is contiguous and every page's
//! acquisition is still held; an accepted call that changed the spec's state, the requests or
//! the view ran `changed`. The callbacks check that read ids are consecutive, that a cancel
//! names a read issued and not answered, that no callback runs nested inside another (except
//! under `loader_free`) or after `loader_free` returned. At the end every loader is freed, and
//! every acquisition the loader accepted must have been released exactly once, none it
//! refused, and every read outstanding at a free cancelled.
//!
//! `LOADER_FUZZ_TRACE=1` prints every call and callback as it happens.

mod calls;
mod host;

use crate::input::Input;
use calls::Cursor;
use host::{Host, Read};
use loader::ffi::*;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Mutex, Once, OnceLock};

/// Loaders alive at once.
pub const SLOTS: usize = 3;
/// Calls per run.
pub const MAX_OPS: usize = 1500;

type R = loader_result;

pub(crate) fn blank_snapshot() -> loader_snapshot {
    loader_snapshot {
        epoch: 0,
        debt: loader_debt::None,
        phase: loader_phase::Idle,
        chain_epoch: 0,
        failure: loader_failure::None,
        coverage: loader_coverage::Nothing,
        settled_once: false,
        cover_epoch: 0,
        inflight: 0,
        settled: 0,
        failed: 0,
        next_request_id: 0,
        pages: 0,
        outstanding_reads: 0,
        revalidating: false,
        end_of_source: false,
        covered_start: 0,
        covered_end: 0,
        window_start: 0,
        window_len: 0,
        accepted: 0,
        released: 0,
    }
}

/// A sentinel entry: a refused copy must leave it untouched.
fn blank_request() -> loader_request_info {
    loader_request_info {
        id: u64::MAX,
        kind: loader_kind::Full,
        epoch: u64::MAX,
        state: loader_request_state::Failed,
        superseded: true,
    }
}

fn blank_page() -> loader_page {
    loader_page {
        acquisition: usize::MAX,
        count: u32::MAX,
        epoch: u64::MAX,
        start: u64::MAX,
    }
}

/// `LOADER_FUZZ_TRACE=1`: print every call and callback as it happens (for reproducers).
pub(crate) fn tracing() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("LOADER_FUZZ_TRACE").is_some())
}

/// `loader_test_panic` panics on purpose inside the library, which catches it. libFuzzer's
/// panic hook would abort at the panic; this hook lets that one message through quietly and
/// hands every other panic on, so a real panic inside the library is still a crash even
/// though the boundary would have turned it into `LOADER_RESULT_PANIC`.
fn quiet_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let next = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| p.downcast_ref::<String>().map(String::as_str));
            if msg.is_some_and(|m| m.starts_with("loader_test_panic")) {
                return;
            }
            next(info)
        }));
    });
}

/// What the ABI shows of one loader.
#[derive(Clone, Debug)]
struct Obs {
    snap: loader_snapshot,
    requests: Vec<loader_request_info>,
    pages: Vec<loader_page>,
    revalidating: bool,
    deadline: Option<u64>,
}

impl Obs {
    /// Everything, as plain numbers, for "a refused call changed nothing".
    fn key(&self) -> Vec<u64> {
        let s = &self.snap;
        let mut k = vec![
            s.epoch,
            s.debt as u64,
            s.phase as u64,
            s.chain_epoch,
            s.failure as u64,
            s.coverage as u64,
            s.settled_once as u64,
            s.cover_epoch,
            s.inflight,
            s.settled,
            s.failed,
            s.next_request_id,
            s.pages,
            s.outstanding_reads,
            s.revalidating as u64,
            s.end_of_source as u64,
            s.covered_start,
            s.covered_end,
            s.window_start,
            s.window_len,
            s.accepted,
            s.released,
            self.revalidating as u64,
            self.deadline.is_some() as u64,
            self.deadline.unwrap_or(0),
        ];
        for r in &self.requests {
            k.extend([
                r.id,
                r.kind as u64,
                r.epoch,
                r.state as u64,
                r.superseded as u64,
            ]);
        }
        for p in &self.pages {
            k.extend([p.acquisition as u64, u64::from(p.count), p.epoch, p.start]);
        }
        k
    }

    /// The spec's state, the live requests and the view: what `changed` announces.
    fn abstract_key(&self) -> Vec<u64> {
        let s = &self.snap;
        let mut k = vec![
            s.epoch,
            s.debt as u64,
            s.phase as u64,
            s.chain_epoch,
            s.failure as u64,
            s.coverage as u64,
            s.settled_once as u64,
            s.cover_epoch,
            s.end_of_source as u64,
            s.covered_start,
            s.covered_end,
        ];
        for r in &self.requests {
            k.extend([r.id, r.state as u64, r.superseded as u64]);
        }
        for p in &self.pages {
            k.extend([p.acquisition as u64, p.start]);
        }
        k
    }

    /// `ExplicitRetry`'s guard, as the ABI shows it.
    fn retry_enabled(&self) -> bool {
        let s = &self.snap;
        s.failure != loader_failure::None
            && s.phase == loader_phase::Idle
            && s.debt == loader_debt::Full
            && !self
                .requests
                .iter()
                .any(|r| r.kind == loader_kind::Full && r.state == loader_request_state::Inflight)
    }
}

fn observe(h: loader_handle) -> Result<Obs, String> {
    let mut snap = blank_snapshot();
    let r = calls::state(h, Some(&mut snap));
    if r != R::Ok {
        return Err(format!("loader_state returned {r:?}"));
    }
    let mut requests = vec![blank_request(); snap.inflight as usize + 8];
    let mut n = 0;
    loop {
        let cap = requests.len();
        match calls::requests(h, Some(&mut requests), cap, Some(&mut n)) {
            R::Ok => break,
            R::BufferTooSmall if n > cap => requests.resize(n, blank_request()),
            r => {
                return Err(format!(
                    "loader_requests returned {r:?} (n {n}, capacity {cap})"
                ))
            }
        }
    }
    requests.truncate(n);
    let mut pages = vec![blank_page(); snap.pages as usize];
    let mut revalidating = !snap.revalidating;
    let cap = pages.len();
    let r = calls::view(
        h,
        Some(&mut pages),
        cap,
        Some(&mut n),
        Some(&mut revalidating),
    );
    if r != R::Ok || n != cap {
        return Err(format!(
            "loader_view returned {r:?} with {n} of {cap} pages"
        ));
    }
    let (mut armed, mut at) = (true, 1);
    let r = calls::next_deadline(h, Some(&mut armed), Some(&mut at));
    if r != R::Ok || (!armed && at != 0) {
        return Err(format!(
            "loader_next_deadline returned {r:?}, armed {armed} at {at}"
        ));
    }
    Ok(Obs {
        snap,
        requests,
        pages,
        revalidating,
        deadline: armed.then_some(at),
    })
}

/// The module's invariants and the ABI's own consistency, for one observation.
fn check_invariants(o: &Obs, recheck: bool) -> Result<(), String> {
    use loader_request_state as St;
    let s = &o.snap;
    let quiet = s.phase == loader_phase::Idle && s.debt == loader_debt::None;
    if quiet
        && s.coverage == loader_coverage::Chain
        && !o.requests.iter().any(|r| {
            r.kind == loader_kind::Chain && r.state == St::Settled && r.epoch == s.cover_epoch
        })
    {
        return Err("ChainHeld".into());
    }
    if quiet
        && s.inflight == 0
        && o.requests
            .iter()
            .any(|r| r.state == St::Settled && r.epoch < s.cover_epoch)
    {
        return Err("NoLeak".into());
    }
    if s.failure == loader_failure::Superseded && s.phase == loader_phase::Idle && s.inflight == 0 {
        return Err("NoStrandedStaleFailure".into());
    }
    if recheck && quiet && s.cover_epoch != s.epoch {
        return Err("NoLostInvalidation".into());
    }
    let count = |st: St| o.requests.iter().filter(|r| r.state == st).count() as u64;
    if (count(St::Inflight), count(St::Settled), count(St::Failed))
        != (s.inflight, s.settled, s.failed)
    {
        return Err("the snapshot's counts differ from loader_requests".into());
    }
    if o.requests.windows(2).any(|w| w[0].id >= w[1].id)
        || o.requests
            .iter()
            .any(|r| r.id == 0 || r.id >= s.next_request_id || r.epoch > s.epoch)
    {
        return Err("requests out of order, or with ids or epochs never issued".into());
    }
    if s.revalidating == quiet || o.revalidating != s.revalidating {
        return Err("revalidating disagrees with phase and debt".into());
    }
    let mut at = s.covered_start;
    for p in &o.pages {
        if p.start != at || p.count == 0 || p.epoch > s.epoch {
            return Err(format!("view page {p:?} does not continue at {at}"));
        }
        at += u64::from(p.count);
    }
    if at != s.covered_end {
        return Err(format!(
            "the view ends at {at}, covered_end is {}",
            s.covered_end
        ));
    }
    Ok(())
}

/// What a handle value names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Live(usize),
    Stale,
    Invalid,
    /// Forged: invalid, or stale if it matches a slot generation freed in an earlier run.
    Unknown,
}

/// Whose books a call keeps.
#[derive(Clone, Copy, Debug)]
enum Books {
    Slot(usize),
    Retired(usize),
    Stray,
}

struct World {
    slots: [Option<Box<Host>>; SLOTS],
    /// Hosts of freed loaders, kept for answers after free and for the final checks.
    /// Boxed: each `Host`'s address is its loader's userdata, so it must not move.
    #[allow(clippy::vec_box)]
    retired: Vec<Box<Host>>,
    /// Books for calls on handles that name no loader.
    stray: Box<Host>,
    recheck: [bool; SLOTS],
    now: [u64; SLOTS],
    tags: usize,
    trace: Vec<String>,
    /// Slots a call may have changed since the last sweep.
    touched: [bool; SLOTS],
    /// After an accepted event call: the slot, its abstract state and `changed` count before,
    /// and the call; the sweep checks that a change was announced.
    told: Option<(usize, Vec<u64>, u64, String)>,
    /// A refused call on a live loader, for the sweep: slot, observation and callback count
    /// before, the call and its result.
    refused: Option<(usize, Obs, u64, String, R)>,
    /// Each live slot's observation from the last sweep that looked at it.
    cache: [Option<Obs>; SLOTS],
    /// The target's `changed` count when [`World::before`] observed it.
    changes_before: Cell<u64>,
    ops: usize,
}

pub fn run(data: &[u8]) {
    quiet_deliberate_panics();
    let mut input = Input::new(data);
    let mut w = World {
        slots: Default::default(),
        retired: Vec::new(),
        stray: Box::new(Host::new(0, 1, 0, false)),
        recheck: [true; SLOTS],
        now: [0; SLOTS],
        tags: 0,
        trace: Vec::new(),
        touched: [true; SLOTS],
        told: None,
        refused: None,
        cache: Default::default(),
        changes_before: Cell::new(0),
        ops: 0,
    };
    let mut ops = 0;
    while !input.is_empty() && ops < MAX_OPS {
        w.op(&mut input);
        w.sweep();
        ops += 1;
    }
    w.finish();
}

/// The calls `op_pointers` makes, by its case number.
const POINTER_CALLS: [&str; 10] = [
    "loader_state (NULL out)",
    "loader_next_deadline (NULL out_armed)",
    "loader_next_deadline (NULL out_deadline_ms)",
    "loader_requests (NULL out_len)",
    "loader_requests (short array)",
    "loader_requests (NULL array)",
    "loader_view (NULL out_len)",
    "loader_view (NULL array)",
    "loader_config_default (NULL)",
    "loader_config_default",
];

/// `LOADER_FUZZ_STATS=1`: every checked result, by call and code, printed by `print_stats`.
type Tally = Mutex<BTreeMap<(String, String), u64>>;

fn stats() -> Option<&'static Tally> {
    static STATS: OnceLock<Option<Tally>> = OnceLock::new();
    STATS
        .get_or_init(|| std::env::var_os("LOADER_FUZZ_STATS").map(|_| Mutex::new(BTreeMap::new())))
        .as_ref()
}

/// Prints the tally `LOADER_FUZZ_STATS=1` kept: call, result code, how many times.
pub fn print_stats() {
    if let Some(s) = stats() {
        for ((call, code), n) in s.lock().expect("stats lock").iter() {
            println!("{call}\t{code}\t{n}");
        }
    }
}

pub(crate) fn tally(call: &str, got: impl std::fmt::Debug) {
    if let Some(s) = stats() {
        *s.lock()
            .expect("stats lock")
            .entry((call.to_string(), format!("{got:?}")))
            .or_insert(0) += 1;
    }
}

fn expect(call: &str, got: R, allowed: &[R]) -> Result<(), String> {
    if allowed.contains(&got) {
        tally(call, got);
        Ok(())
    } else {
        Err(format!("returned {got:?}, wanted one of {allowed:?}"))
    }
}

impl World {
    fn fail(&self, what: String) -> ! {
        let tail = self.trace.len().saturating_sub(40);
        panic!(
            "fuzz_abi: {what}\nlast calls (of {}):\n  {}",
            self.trace.len(),
            self.trace[tail..].join("\n  ")
        )
    }

    fn log(&mut self, line: String) {
        if tracing() {
            eprintln!("{line}");
        }
        self.trace.push(line);
    }

    fn host(&self, b: Books) -> &Host {
        match b {
            Books::Slot(i) => self.slots[i].as_deref().expect("occupied"),
            Books::Retired(i) => &self.retired[i],
            Books::Stray => &self.stray,
        }
    }

    fn resolve(&self, h: loader_handle) -> Target {
        if h == 0 {
            return Target::Invalid;
        }
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(host) = s {
                if host.handle.get() == h {
                    return if host.books.borrow().freed {
                        Target::Stale
                    } else {
                        Target::Live(i)
                    };
                }
            }
        }
        if self.retired.iter().any(|r| r.handle.get() == h) {
            Target::Stale
        } else {
            Target::Unknown
        }
    }

    /// A handle value for the next call, and whose books it keeps.
    fn choose(&mut self, input: &mut Input) -> (loader_handle, Target, Books) {
        let slot = input.below(SLOTS);
        let (base, books) = match &self.slots[slot] {
            Some(h) => (h.handle.get(), Books::Slot(slot)),
            None if !self.retired.is_empty() => {
                let i = input.below(self.retired.len().min(256));
                (self.retired[i].handle.get(), Books::Retired(i))
            }
            None => (0, Books::Stray),
        };
        let h = match input.byte() % 16 {
            0..=11 => base,
            12 => 0,
            13 => base ^ (1 << 40),
            14 => base & 0xffff_ffff,
            _ => input.u64(),
        };
        let t = self.resolve(h);
        if let Target::Live(i) = t {
            self.touched[i] = true;
        }
        let books = match t {
            Target::Live(i) => Books::Slot(i),
            _ if h == base => books,
            _ => Books::Stray,
        };
        (h, t, books)
    }

    /// The codes a call on `t` returns before it looks at its arguments, or `None` to go on.
    fn gate(&self, t: Target) -> Option<Vec<R>> {
        match t {
            Target::Invalid => Some(vec![R::InvalidHandle]),
            Target::Stale => Some(vec![R::StaleHandle]),
            Target::Unknown => Some(vec![R::InvalidHandle, R::StaleHandle]),
            Target::Live(i) if self.slots[i].as_ref().expect("live").poisoned.get() => {
                Some(vec![R::Poisoned])
            }
            Target::Live(_) => None,
        }
    }

    /// Observes the target before a call, if it is a live, healthy loader.
    fn before(&self, t: Target) -> Option<(usize, Obs, u64)> {
        match t {
            Target::Live(i) if self.gate(t).is_none() => {
                let host = self.slots[i].as_ref().expect("live");
                // The sweep after the last call observed every slot that call touched, and an
                // untouched loader does not change: its cached observation is current.
                let obs = match &self.cache[i] {
                    Some(o) => o.clone(),
                    None => observe(host.handle.get())
                        .unwrap_or_else(|e| self.fail(format!("observing slot {i}: {e}"))),
                };
                let b = host.books.borrow();
                self.changes_before.set(b.changes);
                Some((i, obs, b.callbacks))
            }
            _ => None,
        }
    }

    /// Books the checks the sweep makes after a call on a live loader: a refused call changed
    /// nothing and ran no callback; an accepted one that changed something announced it.
    fn unchanged(&mut self, got: R, before: &Option<(usize, Obs, u64)>, what: &str) {
        let Some((i, obs, callbacks)) = before else {
            return;
        };
        if got == R::Ok {
            let changes = self.changes_before.get();
            self.told = Some((*i, obs.abstract_key(), changes, what.to_string()));
        } else {
            self.refused = Some((*i, obs.clone(), *callbacks, what.to_string(), got));
        }
    }

    /// The sweep's half of [`World::unchanged`] for a refused call on slot `i`.
    fn check_refused(&self, i: usize, after: &Obs) {
        let Some((_, obs, callbacks, what, got)) = self.refused.as_ref().filter(|r| r.0 == i)
        else {
            return;
        };
        let host = self.slots[i].as_ref().expect("live");
        let ran = host.books.borrow().callbacks != *callbacks;
        if after.key() != obs.key() || ran {
            self.fail(format!(
                "{what} returned {got:?} but changed the loader (callbacks ran: {ran})\n  before {obs:?}\n  after  {after:?}"
            ));
        }
    }

    fn op(&mut self, input: &mut Input) {
        match input.byte() % 32 {
            0 | 1 => self.op_lifecycle(input),
            2..=4 => self.op_invalidate(input),
            5..=7 => self.op_window(input),
            8 => self.op_tick(input),
            9 => self.op_retry(input),
            10..=17 | 27..=31 => self.op_settle(input),
            18..=20 => self.op_fail(input),
            21 => self.op_pointers(input),
            22 => self.op_floor(input),
            23 => self.op_panic(input),
            24 | 25 => self.op_script(input),
            _ => self.op_strings(input),
        }
    }

    /// Creates a loader in an empty slot; frees the loader in an occupied one.
    fn op_lifecycle(&mut self, input: &mut Input) {
        let slot = input.below(SLOTS);
        if self.slots[slot].is_some() {
            let (h, t, _) = self.choose(input);
            self.log(format!("free({h:#x}) -> {t:?}"));
            match t {
                Target::Live(i) => {
                    let r = self.slots[i].as_ref().expect("live").free();
                    if r != R::Ok {
                        self.fail(format!("free of live slot {i} returned {r:?}"));
                    }
                }
                _ => {
                    let r = loader_free(h);
                    let want = self.gate(t).expect("not live");
                    if let Err(e) = expect("loader_free", r, &want) {
                        self.fail(format!("free({h:#x}) {e}"));
                    }
                }
            }
            return;
        }
        self.op_new(slot, input);
    }

    fn op_new(&mut self, slot: usize, input: &mut Input) {
        let mut cfg = loader::ffi::loader_config::from(loader::loader::Config::default());
        if calls::config_default(Some(&mut cfg)) != R::Ok {
            self.fail("loader_config_default failed".into());
        }
        cfg.page_size = match input.byte() % 16 {
            0 => 0,
            1 => LOADER_MAX_PAGE_SIZE,
            2 => LOADER_MAX_PAGE_SIZE + 1,
            3 => u32::MAX,
            b => 1 + u32::from(b % 8),
        };
        cfg.prefetch_distance = match input.byte() % 8 {
            7 => u64::MAX,
            b => u64::from(b),
        };
        cfg.drop_margin = [0, 0, 0, 3, 15, 1, u64::MAX, 0][input.below(8)];
        cfg.backoff_initial_ms = match input.byte() % 8 {
            0 => 0,
            1 => u64::MAX,
            _ => 50,
        };
        cfg.backoff_max_ms = match input.byte() % 8 {
            0 => cfg.backoff_initial_ms.wrapping_sub(1),
            1 => u64::MAX,
            _ => 800,
        };
        cfg.backoff_multiplier =
            [2.0, 1.0, 16.0, 0.5, f64::NAN, f64::INFINITY, 16.5, 1.5][input.below(8)];
        cfg.max_auto_retries = input.below(4) as u32;
        cfg.jitter_seed = u64::from(input.u16());
        cfg.recheck_full = [1, 0, 2, 255][input.below(4)];
        let counters = match input.byte() % 16 {
            0..=9 => None,
            10 => Some((0, 0)),
            11 => Some((u64::MAX - u64::from(input.byte() % 4), 1)),
            12 => Some((0, u64::MAX - u64::from(input.byte() % 6))),
            13 => {
                let d = u64::from(input.byte() % 4);
                Some((u64::MAX - d, u64::MAX - d - 1))
            }
            _ => Some((u64::from(input.byte()), 1 + u64::from(input.byte()))),
        };
        let high = counters.is_some_and(|(e, i)| e > u64::MAX - 64 || i > u64::MAX - 64);
        let source_len = u64::from(input.byte());
        self.tags += 1;
        let mut host = Box::new(Host::new(source_len, cfg.page_size, self.tags << 40, high));
        let optional = input.byte();
        host.has_changed = optional & 1 == 0;
        host.has_cancel = optional & 2 == 0;
        let script = input.below(24);
        host.books
            .borrow_mut()
            .script
            .extend(input.take(script).iter().copied());

        let valid_multiplier =
            cfg.backoff_multiplier.is_finite() && (1.0..=16.0).contains(&cfg.backoff_multiplier);
        let want = if cfg.page_size == 0 || cfg.page_size > LOADER_MAX_PAGE_SIZE {
            R::InvalidPageSize
        } else if cfg.backoff_initial_ms == 0 {
            R::InvalidBackoffInitial
        } else if cfg.backoff_max_ms < cfg.backoff_initial_ms {
            R::InvalidBackoffMax
        } else if !valid_multiplier {
            R::InvalidBackoffMultiplier
        } else {
            R::Ok
        };
        let cbs = host.callbacks();
        let mut out: loader_handle = 0xdead;
        let r = calls::new(Some(&cfg), Some(&cbs), counters, Some(&mut out));
        self.log(format!(
            "new(slot {slot}, page {}, prefetch {}, drop {}, recheck {}, counters {counters:?}, source {source_len}) -> {r:?} {out:#x}",
            cfg.page_size, cfg.prefetch_distance, cfg.drop_margin, cfg.recheck_full
        ));
        tally("loader_new", r);
        if r != want {
            if r == R::Ok {
                loader_free(out);
            }
            self.fail(format!("loader_new returned {r:?}, wanted {want:?}"));
        }
        if r != R::Ok {
            if out != 0xdead {
                self.fail("loader_new wrote its out-parameter on failure".into());
            }
            return;
        }
        if out == 0 || self.resolve(out) != Target::Unknown {
            self.fail(format!(
                "loader_new returned handle {out:#x}, already in use"
            ));
        }
        host.handle.set(out);
        self.slots[slot] = Some(host);
        self.touched[slot] = true;
        self.recheck[slot] = cfg.recheck_full != 0;
        self.now[slot] = 0;
    }

    fn op_invalidate(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let want = match (&before, self.gate(t)) {
            (_, Some(w)) => w,
            (Some((_, o, _)), None) if o.snap.epoch == u64::MAX => vec![R::EpochOverflow],
            (Some((_, o, _)), None) if o.snap.next_request_id == u64::MAX => vec![R::IdOverflow],
            _ => vec![R::Ok],
        };
        let r = loader_invalidate(h);
        self.log(format!("invalidate({h:#x}) -> {r:?}"));
        if let Err(e) = expect("loader_invalidate", r, &want) {
            self.fail(format!("invalidate {e}"));
        }
        self.unchanged(r, &before, "invalidate");
    }

    fn op_window(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let (cs, ce, ws, wl) = before.as_ref().map_or((0, 0, 0, 0), |(_, o, _)| {
            let s = &o.snap;
            (s.covered_start, s.covered_end, s.window_start, s.window_len)
        });
        let start = match input.byte() % 4 {
            0 => u64::from(input.byte() % 64),
            1 => input.near(ce),
            2 => input.near(ws),
            _ => input.near(cs),
        };
        let len = match input.byte() % 4 {
            0 | 1 => u64::from(input.byte() % 64),
            2 => input.near(wl),
            _ => input.u64(),
        };
        let want = match (&before, self.gate(t)) {
            (_, Some(w)) => w,
            _ if start.checked_add(len).is_none() => vec![R::WindowOverflow],
            (Some((_, o, _)), None) => {
                let mut w = vec![R::Ok];
                if o.snap.epoch == u64::MAX {
                    w.push(R::EpochOverflow);
                }
                if o.snap.next_request_id >= u64::MAX - 1 {
                    w.push(R::IdOverflow);
                }
                w
            }
            (None, None) => unreachable!("a live target is observed"),
        };
        // The window is set before the callbacks run, and one of them may move it again:
        // book it first, and put the old one back if the call is refused.
        let old = match t {
            Target::Live(i) => {
                let host = self.slots[i].as_ref().expect("live");
                Some((i, host.window.replace((start, len))))
            }
            _ => None,
        };
        let r = loader_set_window(h, start, len);
        self.log(format!("set_window({h:#x}, {start}, {len}) -> {r:?}"));
        if let Err(e) = expect("loader_set_window", r, &want) {
            self.fail(format!("set_window {e}"));
        }
        if let (Some((i, old)), true) = (old, r != R::Ok) {
            if let Some(host) = &self.slots[i] {
                host.window.set(old);
            }
        }
        self.unchanged(r, &before, "set_window");
    }

    fn op_tick(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let slot_now = match t {
            Target::Live(i) => self.now[i],
            _ => 0,
        };
        let deadline = before.as_ref().and_then(|(_, o, _)| o.deadline);
        let at = match input.byte() % 8 {
            0..=3 => slot_now.saturating_add(u64::from(input.u16())),
            4 | 5 => input.near(deadline.unwrap_or(slot_now)),
            6 => u64::MAX,
            _ => input.u64(),
        };
        let want = match (&before, self.gate(t)) {
            (_, Some(w)) => w,
            (Some((_, o, _)), None) => {
                let due = o.deadline.is_some_and(|d| d <= slot_now.max(at));
                if due && o.retry_enabled() && o.snap.next_request_id == u64::MAX {
                    vec![R::IdOverflow]
                } else {
                    vec![R::Ok]
                }
            }
            (None, None) => unreachable!("a live target is observed"),
        };
        let r = loader_tick(h, at);
        self.log(format!("tick({h:#x}, {at}) -> {r:?}"));
        if let Err(e) = expect("loader_tick", r, &want) {
            self.fail(format!("tick {e}"));
        }
        if let Target::Live(i) = t {
            self.now[i] = self.now[i].max(at);
        }
        self.unchanged(r, &before, "tick");
    }

    fn op_retry(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let want_out = input.bool();
        let (want, enabled) = match (&before, self.gate(t)) {
            (_, Some(w)) => (w, false),
            (Some((_, o, _)), None) => {
                let en = o.retry_enabled();
                if en && o.snap.next_request_id == u64::MAX {
                    (vec![R::IdOverflow], en)
                } else {
                    (vec![R::Ok], en)
                }
            }
            (None, None) => unreachable!("a live target is observed"),
        };
        let mut started = !enabled;
        let r = calls::retry(h, want_out.then_some(&mut started));
        self.log(format!("retry({h:#x}) -> {r:?} {started}"));
        if let Err(e) = expect("loader_retry", r, &want) {
            self.fail(format!("retry {e}"));
        }
        if r == R::Ok && want_out && started != enabled {
            self.fail(format!(
                "retry said started = {started}, its guard says {enabled}"
            ));
        }
        self.unchanged(r, &before, "retry");
    }

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

    /// The read-id check, for a live loader: unknown, already answered, or outstanding.
    fn read_code(&self, b: Books, id: u64, read: &Option<Read>) -> Option<R> {
        if read.is_some() {
            return None;
        }
        let max = self.host(b).books.borrow().max_read;
        Some(if id == 0 || id > max {
            R::UnknownRead
        } else {
            R::AlreadyAnswered
        })
    }

    fn op_settle(&mut self, input: &mut Input) {
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
        let stalled = count > 0 && sent == read_cursor.as_slice();

        let want = if clen > LOADER_MAX_CURSOR_LEN {
            vec![R::CursorTooLong]
        } else if cnull && clen > 0 {
            vec![R::NullCursor]
        } else if let Some(w) = self.gate(t) {
            w
        } else if let Some(c) = self.read_code(b, id, &read) {
            vec![c]
        } else if count > limit {
            vec![R::CountOverLimit]
        } else if before
            .as_ref()
            .is_some_and(|(_, o, _)| o.snap.next_request_id == u64::MAX)
        {
            vec![R::IdOverflow]
        } else {
            vec![R::Ok]
        };
        let cancelled = host.books.borrow().cancels.contains_key(&id);
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
        if let Err(e) = expect("loader_settle", r, &want) {
            self.fail(format!("settle {e}"));
        }
        if r == R::Ok && want_out {
            tally(
                match (stalled, cancelled) {
                    (true, _) => "loader_settle answer: stalled cursor",
                    (false, true) => "loader_settle answer: a cancelled read",
                    (false, false) => "loader_settle answer: other",
                },
                answer,
            );
            let bad = if stalled {
                answer != loader_answer::CursorStalled
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

    fn op_fail(&mut self, input: &mut Input) {
        let (h, t, b) = self.choose(input);
        let before = self.before(t);
        let (id, read) = self.pick_read(b, input);
        let code = input.u32() as i32;
        let want_out = input.bool();
        let want = if let Some(w) = self.gate(t) {
            w
        } else if let Some(c) = self.read_code(b, id, &read) {
            vec![c]
        } else if before
            .as_ref()
            .is_some_and(|(_, o, _)| o.snap.next_request_id == u64::MAX)
        {
            vec![R::IdOverflow]
        } else {
            vec![R::Ok]
        };
        let host = self.host(b);
        let cancelled = host.books.borrow().cancels.contains_key(&id);
        let mut answer = loader_answer::CursorStalled;
        let r = host.fail(h, id, read, code, want_out.then_some(&mut answer));
        self.log(format!(
            "fail({h:#x}, read {id}, {code}) -> {r:?} {answer:?}"
        ));
        if let Err(e) = expect("loader_fail", r, &want) {
            self.fail(format!("fail {e}"));
        }
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

    /// NULL and short out-parameters, on every function that takes them.
    fn op_pointers(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let gate = self.gate(t);
        let n_req = before.as_ref().map(|(_, o, _)| o.requests.len());
        let n_pages = before.as_ref().map(|(_, o, _)| o.pages.len());
        let which = input.byte() % 10;
        let cap = input.below(6);
        let mut n = usize::MAX;
        let (r, want): (R, Vec<R>) = match which {
            0 => (calls::state(h, None), vec![R::NullPointer]),
            1 => (
                calls::next_deadline(h, None, Some(&mut 0)),
                vec![R::NullPointer],
            ),
            2 => (
                calls::next_deadline(h, Some(&mut false), None),
                vec![R::NullPointer],
            ),
            3 | 4 => {
                let mut arr = vec![blank_request(); cap];
                let r = if which == 3 {
                    calls::requests(h, Some(&mut arr), cap, None)
                } else {
                    calls::requests(h, Some(&mut arr), cap, Some(&mut n))
                };
                let want = match (gate, n_req) {
                    (Some(w), _) => w,
                    (None, _) if which == 3 => vec![R::NullPointer],
                    (None, Some(k)) if k > cap => vec![R::BufferTooSmall],
                    _ => vec![R::Ok],
                };
                if r == R::BufferTooSmall
                    && (Some(n) != n_req || arr.iter().any(|e| e.id != u64::MAX))
                {
                    self.fail(format!(
                        "loader_requests too small: n {n}, wrote into the array"
                    ));
                }
                if r == R::Ok && which == 4 {
                    let o = &before.as_ref().expect("live").1;
                    if Some(n) != n_req
                        || arr[..n].iter().zip(&o.requests).any(|(a, b)| a.id != b.id)
                    {
                        self.fail("loader_requests copied the wrong entries".into());
                    }
                }
                (r, want)
            }
            5 => {
                let r = calls::requests(h, None, cap, Some(&mut n));
                let want = match (gate, n_req) {
                    (Some(w), _) => w,
                    (None, Some(k)) if k > cap => vec![R::BufferTooSmall],
                    (None, Some(k)) if k > 0 => vec![R::NullPointer],
                    _ => vec![R::Ok],
                };
                (r, want)
            }
            6 | 7 => {
                let mut arr = vec![blank_page(); cap];
                let mut reval = !before.as_ref().is_some_and(|(_, o, _)| o.revalidating);
                let r = if which == 6 {
                    calls::view(h, Some(&mut arr), cap, None, Some(&mut reval))
                } else {
                    calls::view(h, None, cap, Some(&mut n), Some(&mut reval))
                };
                let want = match (gate, n_pages) {
                    (Some(w), _) => w,
                    (None, _) if which == 6 => vec![R::NullPointer],
                    (None, Some(k)) if k > cap => vec![R::BufferTooSmall],
                    (None, Some(k)) if k > 0 => vec![R::NullPointer],
                    _ => vec![R::Ok],
                };
                if r == R::Ok
                    && before
                        .as_ref()
                        .is_some_and(|(_, o, _)| o.revalidating != reval)
                {
                    self.fail("loader_view wrote the wrong revalidating flag".into());
                }
                (r, want)
            }
            8 => {
                let r = calls::config_default(None);
                let mut stray = Box::new(Host::new(0, 1, 0, false));
                stray.has_cancel = false;
                let mut cbs = stray.callbacks();
                let mut cfg = loader_config::from(loader::loader::Config::default());
                let mut out: loader_handle = 7;
                let (r2, want2) = match input.byte() % 5 {
                    0 => (
                        calls::new(None, Some(&cbs), None, Some(&mut out)),
                        R::NullPointer,
                    ),
                    1 => (
                        calls::new(Some(&cfg), None, None, Some(&mut out)),
                        R::NullPointer,
                    ),
                    2 => (
                        calls::new(Some(&cfg), Some(&cbs), Some((1, 1)), None),
                        R::NullPointer,
                    ),
                    3 => {
                        cbs.issue = None;
                        (
                            calls::new(Some(&cfg), Some(&cbs), None, Some(&mut out)),
                            R::MissingCallback,
                        )
                    }
                    _ => {
                        cbs.release = None;
                        cfg.page_size = 0;
                        (
                            calls::new(Some(&cfg), Some(&cbs), None, Some(&mut out)),
                            R::MissingCallback,
                        )
                    }
                };
                tally("loader_new (bad pointer or callback)", r2);
                if r2 != want2 || out != 7 {
                    self.fail(format!("loader_new with a bad pointer: {r2:?} (out {out})"));
                }
                (r, vec![R::NullPointer])
            }
            _ => {
                let mut cfg = loader_config::from(loader::loader::Config::default());
                cfg.page_size = 0;
                let r = calls::config_default(Some(&mut cfg));
                if cfg.page_size != 50 || cfg.recheck_full != 1 {
                    self.fail("loader_config_default wrote other defaults".into());
                }
                (r, vec![R::Ok])
            }
        };
        self.log(format!("pointers #{which} on {h:#x} (cap {cap}) -> {r:?}"));
        if let Err(e) = expect(POINTER_CALLS[which as usize], r, &want) {
            self.fail(format!("bad-pointer call #{which} {e}"));
        }
        // Introspection changes nothing, whatever it returns.
        self.unchanged(R::Panic, &before, "introspection");
    }

    fn op_floor(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let want = self.gate(t).unwrap_or_else(|| vec![R::Ok]);
        let r = loader_floor(h);
        self.log(format!("floor({h:#x}) -> {r:?}"));
        if let Err(e) = expect("loader_floor", r, &want) {
            self.fail(format!("floor {e}"));
        }
    }

    fn op_panic(&mut self, input: &mut Input) {
        if input.byte() != 0x5a {
            return;
        }
        let (h, t, _) = self.choose(input);
        let want = self.gate(t).unwrap_or_else(|| vec![R::Panic]);
        let r = loader_test_panic(h);
        self.log(format!("test_panic({h:#x}) -> {r:?}"));
        if let Err(e) = expect("loader_test_panic", r, &want) {
            self.fail(format!("test_panic {e}"));
        }
        if let (R::Panic, Target::Live(i)) = (r, t) {
            self.slots[i].as_ref().expect("live").poisoned.set(true);
        }
    }

    fn op_script(&mut self, input: &mut Input) {
        let slot = input.below(SLOTS);
        let n = input.below(24);
        let bytes = input.take(n);
        if let Some(host) = &self.slots[slot] {
            host.books.borrow_mut().script.extend(bytes.iter().copied());
        }
    }

    fn op_strings(&mut self, input: &mut Input) {
        let code = match input.byte() % 4 {
            0 => input.u32() as i32,
            _ => i32::from(input.byte() % 24) - 1,
        };
        let msg = calls::result_str(code);
        let known = (0..=20).contains(&code);
        if known == (msg == "unknown result code") || msg.is_empty() {
            self.fail(format!("loader_result_str({code}) = {msg:?}"));
        }
        if !calls::version().contains('.') {
            self.fail(format!("loader_version is {:?}", calls::version()));
        }
    }

    /// Moves loaders freed inside callbacks out of their slots, checks every live one, and
    /// raises any violation a callback recorded.
    fn sweep(&mut self) {
        for i in 0..SLOTS {
            if self.slots[i]
                .as_ref()
                .is_some_and(|h| h.books.borrow().freed)
            {
                let host = self.slots[i].take().expect("occupied");
                self.cache[i] = None;
                self.trace
                    .push(format!("slot {i} ({:#x}) was freed", host.handle.get()));
                self.retired.push(host);
            }
        }
        self.ops += 1;
        let all = self.ops.is_multiple_of(16);
        let told = self.told.take();
        for i in 0..SLOTS {
            if self.slots[i].as_ref().is_some_and(|h| h.poisoned.get()) {
                self.cache[i] = None;
            }
            let Some(host) = &self.slots[i] else { continue };
            if !(all || std::mem::take(&mut self.touched[i])) {
                continue;
            }
            let h = host.handle.get();
            if host.poisoned.get() {
                let r = calls::state(h, Some(&mut blank_snapshot()));
                if r != R::Poisoned {
                    self.fail(format!("a poisoned loader's state returned {r:?}"));
                }
                continue;
            }
            let o = observe(h).unwrap_or_else(|e| self.fail(format!("observing slot {i}: {e}")));
            if let Err(inv) = check_invariants(&o, self.recheck[i]) {
                self.fail(format!("slot {i}: {inv} violated: {o:?}"));
            }
            let b = host.books.borrow();
            let s = &o.snap;
            let released: u64 = b.released.values().map(|&n| u64::from(n)).sum();
            let mut problems = Vec::new();
            if s.outstanding_reads != b.pending.len() as u64 {
                problems.push(format!(
                    "{} reads outstanding, the host holds {} unanswered",
                    s.outstanding_reads,
                    b.pending.len()
                ));
            }
            if s.inflight != s.outstanding_reads {
                problems.push(format!(
                    "{} requests in flight but {} reads outstanding",
                    s.inflight, s.outstanding_reads
                ));
            }
            if s.accepted != b.accepted.len() as u64 || s.released != released {
                problems.push(format!(
                    "counts accepted {} released {}, the host saw {} and {released}",
                    s.accepted,
                    s.released,
                    b.accepted.len()
                ));
            }
            if (s.window_start, s.window_len) != host.window.get() {
                problems.push("the window is not the last one set".into());
            }
            for p in &o.pages {
                if !b.accepted.contains(&p.acquisition) || b.released.contains_key(&p.acquisition) {
                    problems.push(format!("view page {p:?} is not held"));
                }
            }
            if let Some((_, key, changes, what)) = told.as_ref().filter(|t| t.0 == i) {
                if host.has_changed && b.changes == *changes && o.abstract_key() != *key {
                    problems.push(format!(
                        "{what} changed the state or the view, and no `changed` callback ran"
                    ));
                }
            }
            drop(b);
            if !problems.is_empty() {
                self.fail(format!("slot {i}: {}\n  {o:?}", problems.join("; ")));
            }
            self.check_refused(i, &o);
            self.cache[i] = Some(o);
        }
        self.refused = None;
        let hosts = self
            .slots
            .iter()
            .flatten()
            .chain(self.retired.iter())
            .chain(std::iter::once(&self.stray));
        let violations: Vec<String> = hosts
            .flat_map(|h| {
                h.books
                    .borrow_mut()
                    .violations
                    .drain(..)
                    .collect::<Vec<_>>()
            })
            .collect();
        if !violations.is_empty() {
            self.fail(format!("callbacks recorded: {}", violations.join("; ")));
        }
    }

    /// Frees every loader left and checks every acquisition's fate.
    fn finish(mut self) {
        for i in 0..SLOTS {
            if let Some(host) = &self.slots[i] {
                let r = host.free();
                self.log(format!("final free of slot {i} -> {r:?}"));
            }
        }
        self.sweep();
        for host in &self.retired {
            let b = host.books.borrow();
            for (acq, n) in &b.released {
                if *n != 1 || !b.accepted.contains(acq) {
                    self.fail(format!(
                        "acquisition {acq:#x} released {n} times (accepted: {})",
                        b.accepted.contains(acq)
                    ));
                }
            }
            if let Some(a) = b.accepted.iter().find(|a| !b.released.contains_key(a)) {
                self.fail(format!(
                    "acquisition {a:#x} was accepted and never released"
                ));
            }
            if !b.offering.is_empty() {
                self.fail("a settle is still offering an acquisition".into());
            }
        }
        if !self.stray.books.borrow().released.is_empty() {
            self.fail("an acquisition offered to no loader was released".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_input_runs() {
        run(&[]);
    }

    #[test]
    fn a_loader_loads_and_is_freed() {
        // new (slot 0, page 4, source 20), set_window(0, 10), settles, free.
        let mut data = vec![0, 0, 7, 3, 0, 2, 2, 2, 0, 0, 0, 0, 0, 20, 3, 0];
        data.extend([5, 0, 0, 0, 10, 0, 10]);
        for _ in 0..6 {
            data.extend([10, 0, 0, 0, 0, 0, 0, 1]);
        }
        data.extend([0, 0, 0, 0]);
        run(&data);
    }
}
