//! The deterministic host that drives workloads 1 and 2 against a real `Loader`.
//!
//! The host owns a virtual source that never ends and never stores an item: a cursor is the
//! 8-byte big-endian position between items it names (the number of items before it), so
//! answering a read costs the host nothing beyond its bookkeeping, and what is measured is
//! the loader. A forward read gets a full page; a backward read gets the page just before its
//! cursor, cut short (and ending the read) at the source's start.
//!
//! # The mix, and what the ledger allows of it
//!
//! The target is 70% answers to current reads, 15% stale answers, 5% failures of superseded
//! reads, 5% invalidations and 5% window moves. The ledger lets at most one finite request
//! be in flight, and starts a chain or full read only when none is in flight, so at most two
//! reads are ever outstanding. A read turns stale in exactly two ways:
//! - the in-flight finite read is superseded when a repair starts from idle (the loader sends
//!   `Cancel`); the host keeps it pending and later answers it (stale) or fails it
//!   (superseded failure);
//! - the in-flight chain step is overtaken by an invalidation; its answer settles the chain
//!   stale and a replacement starts (P5).
//!
//! Each invalidation makes at most one read stale, so stale answers plus superseded failures
//! cannot exceed the invalidations (5%): the 15% + 5% target is out of reach for one loader,
//! and the host reports the mix it achieved. Current answers take up the difference.
//!
//! # Keeping a view of N pages steady
//!
//! A chain re-reads every held page, so a repair of an N-page view costs N reads (each is
//! counted as one event). Invalidations arriving every 20 events at random
//! points would restart the chain forever once N > 20, and every replaced chain stays live
//! until a commit: the state would grow without bound. So invalidations, exogenous at 5%,
//! arrive at random (see `arrivals.rs`) and wait while a full read runs or a chain longer
//! than [`MAX_LOST_STEPS`] is past its first step. On a small view they land anywhere, and
//! one during a chain overtakes its step. On a large view they queue up and arrive as a burst
//! at the chain's first step (invalidate, stale answer, invalidate, ...), like a batch of
//! writes to the source; then the chain runs to its commit. The state stays bounded, and
//! from about 1,000 pages up the mix no longer depends on N.
//!
//! Window moves alternate between extending the window one page past the covered end (so a
//! finite read is issued, which an invalidation can supersede) and resetting it to N pages
//! (so the full read that follows a superseded failure rebuilds an N-page view). The view
//! stays within a small slack of N pages; past it the host fails the next superseded read,
//! which sends the view through a full read at the reset window.
#![allow(dead_code)]

use super::arrivals::Arrivals;
use loader::ledger::{Debt, Phase};
use loader::{Answer, Config, Direction, Effect, Kind, Loader};

/// Items per read.
pub const PAGE: u32 = 50;

/// Event categories, in the order of [`TARGET`].
pub const CURRENT: usize = 0;
pub const STALE: usize = 1;
pub const SUP_FAIL: usize = 2;
pub const INVAL: usize = 3;
pub const WINDOW: usize = 4;
pub const NAMES: [&str; 5] = ["current", "stale", "sup-fail", "invalidate", "window"];
/// The target mix, in percent (docs/BENCHMARKS.md, workload 1).
pub const TARGET: [i64; 5] = [70, 15, 5, 5, 5];
/// A view this small is repaired in fewer steps than the mean gap between invalidations, so
/// an invalidation may overtake its chain at any step and the repair still completes.
pub const MAX_LOST_STEPS: u64 = 20;

#[derive(Clone, Debug)]
struct Pending {
    read_id: u64,
    kind: Kind,
    epoch: u64,
    step: u32,
    pos: u64,
    limit: u32,
    direction: Direction,
    cancelled: bool,
}

/// The answer of the never-ending source to a read of up to `limit` items from position
/// `pos`: how many items, the next position, and whether the read reached the source's
/// start (a backward read; the source has no end).
pub fn page(direction: Direction, pos: u64, limit: u32) -> (u32, u64, bool) {
    match direction {
        Direction::Forward => (limit, pos + u64::from(limit), false),
        Direction::Backward => {
            let count = pos.min(u64::from(limit));
            (count as u32, pos - count, pos == count)
        }
    }
}

#[derive(Clone, Debug)]
pub struct Stream {
    pub loader: Loader,
    effects: Vec<Effect>,
    pending: Vec<Pending>,
    /// The view size the stream keeps, in pages.
    pages: u64,
    slack: u64,
    next_acq: u64,
    extend_next: bool,
    was_busy: bool,
    arrivals: Arrivals,
    /// Events by category, as the loader classified them.
    pub counts: [u64; 5],
    pub events: u64,
    pub accepted: u64,
    pub releases: u64,
    /// XOR of released acquisitions: the no-op callback's record, kept so nothing is elided.
    pub released_xor: u64,
    /// Repairs and full reads that committed and left the loader quiet.
    pub commits: u64,
    /// When set, every loader call the stream makes is appended here (see [`Replay`]).
    pub trace: Option<Vec<Call>>,
}

/// One loader call of the stream, as [`Replay`] repeats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Invalidate,
    Window {
        len: u64,
    },
    Fail {
        read_id: u64,
    },
    /// `settle(read_id, acquisition, count, &next.to_be_bytes(), end)`.
    Settle {
        read_id: u64,
        acquisition: u64,
        count: u32,
        next: u64,
        end: bool,
    },
}

pub fn config() -> Config {
    Config {
        page_size: PAGE,
        // The window alone decides what is wanted, so a view of N pages is exactly N pages.
        prefetch_distance: 0,
        // And the view keeps them: the stream shrinks and grows the window, and a bounded
        // view (the default bounds it) would read the pages it dropped again.
        max_pages: 0,
        // The workload's mix (stale chain answers, failures that shrink the view) is built
        // on repairs that an invalidation replaces rather than lets commit: the seed's rules.
        commit_overtaken: false,
        ..Config::default()
    }
}

impl Stream {
    /// A loader whose view holds `pages` pages, each read by its own finite request, settled
    /// in setup; then the stream runs until two repairs have committed, so that measurement
    /// starts in the steady state.
    pub fn new(pages: u64) -> Stream {
        Stream::with_loader(pages, Loader::new(config()).expect("valid config"))
    }

    /// [`Stream::new`] whose loader records its whole run to `sink`, from its creation.
    pub fn recorded_to(pages: u64, sink: loader::loader::Sink) -> Stream {
        Stream::with_loader(
            pages,
            Loader::recorded(config(), sink).expect("valid config"),
        )
    }

    fn with_loader(pages: u64, loader: Loader) -> Stream {
        let mut s = Stream {
            loader,
            effects: Vec::with_capacity(1024),
            pending: Vec::with_capacity(8),
            pages,
            slack: (pages / 2).clamp(2, 1000),
            next_acq: 1,
            extend_next: true,
            was_busy: false,
            arrivals: Arrivals::new(0x5eed),
            counts: [0; 5],
            events: 0,
            accepted: 0,
            releases: 0,
            released_xor: 0,
            commits: 0,
            trace: None,
        };
        // The stream shrinks its view by failing superseded reads, which costs the debt a full
        // read only when the host was not told it may let them go: it does not hear the hints
        // (it still sees the `Cancel` effects, to know which reads are superseded).
        s.loader.set_cancel_hints_heard(false);
        s.loader.set_window(0, pages * PAGE as u64).expect("window");
        s.collect();
        while let Some(i) = s.pending.iter().position(|p| p.kind == Kind::Finite) {
            s.answer(i);
            s.collect();
        }
        assert_eq!(s.loader.pages().len() as u64, pages);
        s.run_until_commits(2);
        s.reset_counts();
        s
    }

    pub fn reset_counts(&mut self) {
        self.counts = [0; 5];
        self.events = 0;
    }

    pub fn view_pages(&self) -> usize {
        self.loader.page_count()
    }

    pub fn live_requests(&self) -> usize {
        let s = self.loader.ledger().snapshot();
        s.inflight + s.settled + s.failed
    }

    fn busy(&self) -> bool {
        let l = self.loader.ledger();
        l.phase() != Phase::Idle || l.debt() != Debt::None
    }

    pub fn run_until_commits(&mut self, n: u64) {
        let goal = self.commits + n;
        while self.commits < goal {
            self.step();
        }
    }

    /// Runs `n` events.
    #[inline(never)]
    pub fn run(&mut self, n: u64) {
        for _ in 0..n {
            self.step();
        }
    }

    /// Events from here until the next commit, inclusive (runs them).
    pub fn run_round(&mut self) -> u64 {
        let start = self.events;
        self.run_until_commits(1);
        self.events - start
    }

    /// The realized mix, in percent.
    pub fn mix(&self) -> [f64; 5] {
        let n = self.events.max(1) as f64;
        self.counts.map(|c| 100.0 * c as f64 / n)
    }

    pub fn mix_line(&self) -> String {
        let m = self.mix();
        NAMES
            .iter()
            .zip(m)
            .map(|(n, p)| format!("{n} {p:.1}%"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How far a category is behind its target share, in units of 1/100 event.
    fn due(&self, c: usize) -> i64 {
        TARGET[c] * (self.events as i64 + 1) - 100 * self.counts[c] as i64
    }

    fn stale_read(&self, p: &Pending, epoch: u64) -> bool {
        (p.kind == Kind::Finite && p.cancelled) || (p.kind == Kind::Chain && p.epoch < epoch)
    }

    /// One host event.
    pub fn step(&mut self) {
        self.arrivals.tick();
        let epoch = self.loader.ledger().epoch();
        let over = self.view_pages() as u64 > self.pages + self.slack;
        let short = self.view_pages() as u64 <= MAX_LOST_STEPS;
        let mut current = None;
        let mut stale = None;
        let mut sup = None;
        let mut inval_ok = true;
        for (i, p) in self.pending.iter().enumerate() {
            if self.stale_read(p, epoch) {
                stale = Some(i);
                if p.kind == Kind::Finite {
                    sup = Some(i);
                }
            } else if !(over && p.kind == Kind::Finite) {
                // Past the slack the host holds a current finite read back, so that the next
                // invalidation supersedes it and its failure shrinks the view.
                current = Some(i);
            }
            // An invalidation that would overtake a read already overtaken, a full read, or
            // a long chain's progress waits (see the module comment).
            match p.kind {
                Kind::Full => inval_ok = false,
                Kind::Chain if p.epoch < epoch || (p.step > 0 && !short) => inval_ok = false,
                _ => {}
            }
        }
        if current.is_none() && stale.is_none() {
            self.arrivals.wait();
        }
        let l = self.loader.ledger();
        let reset_due = over
            && l.debt() == Debt::Full
            && l.phase() != Phase::FullHeld
            && self.loader.window().1 != self.pages * PAGE as u64;
        let cat = if reset_due {
            // The full read that the failure forces must start at the reset window, or the
            // view does not shrink: this move comes early.
            self.arrivals.moves = self.arrivals.moves.saturating_sub(1);
            WINDOW
        } else if inval_ok && self.arrivals.invalidations > 0 {
            self.arrivals.invalidations -= 1;
            INVAL
        } else if self.arrivals.moves > 0 {
            self.arrivals.moves -= 1;
            WINDOW
        } else {
            // Answers: the eligible category furthest behind its own rate.
            let mut best: Option<(usize, i64)> = None;
            for (c, ok) in [
                (CURRENT, current.is_some()),
                (STALE, stale.is_some()),
                (SUP_FAIL, sup.is_some()),
            ] {
                if !ok {
                    continue;
                }
                let mut d = self.due(c) * 100 / TARGET[c];
                if over && c == SUP_FAIL {
                    d = i64::MAX;
                }
                if best.is_none_or(|(_, bd)| d > bd) {
                    best = Some((c, d));
                }
            }
            best.expect("something to answer, or an arrival").0
        };
        let counted = match cat {
            INVAL => {
                self.loader.invalidate().expect("invalidate");
                self.traced(Call::Invalidate);
                INVAL
            }
            WINDOW => {
                self.move_window();
                WINDOW
            }
            SUP_FAIL => {
                let p = self.pending.swap_remove(sup.expect("eligible"));
                let a = self.loader.fail(p.read_id, 7).expect("fail");
                debug_assert_eq!(a, Answer::Stale);
                self.traced(Call::Fail { read_id: p.read_id });
                SUP_FAIL
            }
            STALE => self.answer(stale.expect("eligible")),
            _ => self.answer(current.expect("eligible")),
        };
        self.counts[counted] += 1;
        self.events += 1;
        self.collect();
        let busy = self.busy();
        if self.was_busy && !busy {
            self.commits += 1;
        }
        self.was_busy = busy;
    }

    fn move_window(&mut self) {
        let l = self.loader.ledger();
        // After a superseded failure the full read must see the reset window, or the view
        // would not shrink back.
        let shrinking = l.debt() == Debt::Full && l.phase() != Phase::FullHeld;
        let len = if self.extend_next && !shrinking {
            self.loader.covered().1 + PAGE as u64
        } else {
            self.pages * PAGE as u64
        };
        self.extend_next = !self.extend_next;
        self.loader.set_window(0, len).expect("window");
        self.traced(Call::Window { len });
    }

    fn traced(&mut self, call: Call) {
        if let Some(t) = self.trace.as_mut() {
            t.push(call);
        }
    }

    /// Answers pending read `i` with what the source holds there (see [`page`]); returns the
    /// category the loader gave it.
    fn answer(&mut self, i: usize) -> usize {
        let p = self.pending.swap_remove(i);
        let (count, next, end) = page(p.direction, p.pos, p.limit);
        let acq = self.next_acq;
        self.next_acq += 1;
        let a = self
            .loader
            .settle(p.read_id, acq, count, &next.to_be_bytes(), end)
            .expect("settle");
        self.traced(Call::Settle {
            read_id: p.read_id,
            acquisition: acq,
            count,
            next,
            end,
        });
        self.accepted += 1;
        match a {
            Answer::Current => CURRENT,
            _ => STALE,
        }
    }

    fn collect(&mut self) {
        self.loader.drain_effects_into(&mut self.effects);
        for e in &self.effects {
            match *e {
                Effect::Issue(ref r) => {
                    let pos = match r.cursor.len() {
                        0 => 0,
                        _ => u64::from_be_bytes(r.cursor[..8].try_into().expect("8 bytes")),
                    };
                    self.pending.push(Pending {
                        read_id: r.read_id,
                        kind: r.kind,
                        epoch: r.epoch,
                        step: r.step,
                        pos,
                        limit: r.limit,
                        direction: r.direction,
                        cancelled: false,
                    });
                }
                Effect::Release { acquisition } => {
                    self.releases += 1;
                    self.released_xor ^= acquisition;
                }
                Effect::Cancel { read_id } => {
                    if let Some(p) = self.pending.iter_mut().find(|p| p.read_id == read_id) {
                        p.cancelled = true;
                    }
                }
                Effect::Changed => {}
            }
        }
        self.effects.clear();
    }

    /// A burst of `n` invalidations, each overtaking the newest chain at step 0 and answered
    /// at once: afterwards the ledger holds `n` more stale chains awaiting retirement. Not
    /// counted as stream events.
    pub fn stale_burst(&mut self, n: usize) {
        if !self.pending.iter().any(|p| p.kind == Kind::Chain) {
            // From idle the first invalidation only starts the chain the others overtake.
            self.loader.invalidate().expect("invalidate");
            self.collect();
        }
        for _ in 0..n {
            self.loader.invalidate().expect("invalidate");
            self.collect();
            let epoch = self.loader.ledger().epoch();
            let i = self
                .pending
                .iter()
                .position(|p| p.kind == Kind::Chain && p.epoch < epoch)
                .expect("a chain step was overtaken");
            let a = self.answer(i);
            assert_eq!(a, STALE);
            self.collect();
        }
        self.was_busy = self.busy();
    }
}

/// A recorded stream's calls, made again on a loader in the state the recording started
/// from, by a host that does nothing else: it drains the effects and records each released
/// acquisition. What it costs per call is the library's share of the live stream, without
/// the live host's choosing and bookkeeping.
pub struct Replay {
    pub loader: Loader,
    effects: Vec<Effect>,
    pub releases: u64,
    pub released_xor: u64,
}

impl Replay {
    /// A replay from the state `Stream::new(pages)` starts its recording in.
    pub fn from_start(pages: u64) -> Replay {
        Replay::new(Stream::new(pages).loader)
    }

    pub fn new(loader: Loader) -> Replay {
        Replay {
            loader,
            effects: Vec::with_capacity(1024),
            releases: 0,
            released_xor: 0,
        }
    }

    /// Makes `calls` in order. Each was accepted when recorded, and the loader is
    /// deterministic, so each is accepted again.
    #[inline(never)]
    pub fn run(&mut self, calls: &[Call]) {
        for &c in calls {
            match c {
                Call::Invalidate => self.loader.invalidate().expect("invalidate"),
                Call::Window { len } => self.loader.set_window(0, len).expect("window"),
                Call::Fail { read_id } => {
                    self.loader.fail(read_id, 7).expect("fail");
                }
                Call::Settle {
                    read_id,
                    acquisition,
                    count,
                    next,
                    end,
                } => {
                    self.loader
                        .settle(read_id, acquisition, count, &next.to_be_bytes(), end)
                        .expect("settle");
                }
            }
            self.loader.drain_effects_into(&mut self.effects);
            for e in &self.effects {
                if let Effect::Release { acquisition } = *e {
                    self.releases += 1;
                    self.released_xor ^= acquisition;
                }
            }
            self.effects.clear();
        }
    }
}

/// Records `events` events of the stream from `Stream::new(pages)`, and checks that replaying
/// them on a second `Stream::new(pages)` makes the same releases and the same statistics.
pub fn recorded(pages: u64, events: u64) -> Vec<Call> {
    let mut s = Stream::new(pages);
    let before = (s.releases, s.released_xor);
    s.trace = Some(Vec::with_capacity(events as usize));
    s.run(events);
    let calls = s.trace.take().expect("recording");
    assert_eq!(calls.len() as u64, events, "one loader call per event");
    let mut r = Replay::from_start(pages);
    r.run(&calls);
    assert_eq!(
        (r.releases, r.released_xor),
        (s.releases - before.0, s.released_xor ^ before.1),
        "the replay releases what the recording did"
    );
    assert_eq!(
        r.loader.stats(),
        s.loader.stats(),
        "the replay is the same run"
    );
    calls
}
