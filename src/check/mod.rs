//! The loader checker: explores the production [`Loader`](crate::Loader) exhaustively, every
//! interleaving of host events from small starting configurations, with the header's
//! promises as named properties ([`Property`]).
//!
//! A state is the sim host (`sim::Host`: the source, the reads pending, the acquisitions
//! handed over) with the loader inside it, plus the budgets spent. From each state every
//! enabled [`Event`] is applied to a clone; states are deduplicated by a canonical form
//! built from the state's fields (`canon`: ids renumbered by class, times relative, counters
//! dropped, hashed). The search is breadth-first to a stated
//! depth, so the first violation found has a shortest trace, which [`replay`] runs again.
//!
//! The parts: `canon` (the canonical form; `text`, the `Debug`-text form it replaced, kept
//! for comparison), `event` (the host's events), `props` (the
//! properties), `explore` (the search and its report).

pub(crate) mod canon;
mod event;
mod explore;
pub(crate) mod props;
mod text;

pub use event::Event;
pub use explore::{check, check_with, replay, replay_recorded, Dedup, Report, Violation};
pub use props::Property;

use crate::loader::Config;
use crate::sim::{Host, Source};

/// One starting configuration and the budgets of its exploration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// The loader's config.
    pub config: Config,
    /// How many items the source starts with (numbered, four to a key).
    pub source: usize,
    /// The window's length.
    pub window: u64,
    /// A starting point given before the first event call (as a C host's `initial_cursor`
    /// and `initial_position`): jump to (the cursor before the item at index, position).
    pub initial: Option<(usize, u64)>,
    /// Source changes allowed (inserts and deletes, each reported whole or ranged).
    pub changes: u8,
    /// Window moves and jumps allowed.
    pub moves: u8,
    /// Failures and bad answers (fail, empty, repeated cursor, abandon unasked) allowed.
    pub faults: u8,
    /// How deep the search goes, in events.
    pub depth: u32,
    /// A host bug to inject, to show that the properties catch it (`None`: an honest host).
    pub fault: Option<HostFault>,
    /// Window moves may also be made with a `locate` that answers right, unknown or wrong
    /// (`Loader::set_window_located`), to the far starts and to the source's last item.
    pub locate: bool,
    /// The exploration starts once the first window is read (every read answered honestly,
    /// oldest first), so that its depth goes to what follows.
    pub settled: bool,
    /// Wide changes and window resizes: a change may be an update of every item in place,
    /// reported as one range from the source's start to its last item ([`Event::Touch`]),
    /// and the window may shrink to one item (where it is, or at the source's middle) or
    /// move to the middle at its length.
    pub wide: bool,
}

/// A host bug the checker can inject: each makes a property fail, which shows that the
/// property is not vacuous.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostFault {
    /// Inserts reach the source and are never reported (`quiet_view` fails).
    Unreported,
    /// Backward reads are answered with the items after their cursor (`unique` fails).
    BackwardAfter,
    /// Once the source stops changing, every read is answered with its own cursor
    /// (`progress` fails).
    Stalling,
    /// A forward read at one cursor is answered with its items and the cursor it was asked
    /// with, every time (a server that repeats the next key, as Paging's "server repeats the
    /// next key"): in each progress walk, the cursor of the first forward read it answers
    /// whose page has items; other reads are answered honestly. `progress` asks the loader to
    /// wait for the host (no read in flight, no timer armed, only the host's retry left, and
    /// `explain` saying `loader_retry`), or be quiescent, within [`Settings::fault_bound`]
    /// answers.
    RepeatsWithItems,
    /// Reads at one cursor fail for good (a page-token API's 404: the item the cursor names is
    /// gone): in each progress walk, the cursor of the first page read (`Kind::Finite`) it
    /// answers that names an item of the source. That item is deleted from the source then,
    /// unreported (the view is not compared with the source after it: the host did not say),
    /// and every read at the cursor fails, whatever its kind; other reads are answered
    /// honestly, from the source as it is, so a read from an anchor before the cursor gets
    /// fresh cursors past it. The host retries while a page failure is recorded (the failed
    /// page is read again once, and its failing again reads from the anchor); `progress` asks
    /// the loader to be quiescent with the window covered, or to wait for the host with
    /// another failure recorded (the anchor's own cursor gone), within
    /// [`Settings::fault_bound`] answers.
    CursorGone,
}

impl Settings {
    /// The window starts a move may go to: the source's start, near, and far (past the
    /// source's end).
    fn window_starts(&self) -> [u64; 3] {
        let n = self.source as u64;
        [0, 1, n + 2]
    }

    /// What a move or jump with a known cursor may read before the view is fresh again
    /// ([`props::far_move_budget`], with the settings' window and a walk up to
    /// `jump_threshold` allowed: a move that near is not a far one).
    fn far_move_budget(&self, in_flight: usize) -> u64 {
        let walk = props::walk_allowance(&self.config, self.window);
        props::far_move_budget(&self.config, self.window, walk, in_flight)
    }

    /// Honest answers within which progress must reach quiescence: twice the pages from the
    /// source's start to the far end of the farthest window plus prefetch, plus two for the
    /// partial pages at each end, per direction.
    pub fn progress_bound(&self) -> usize {
        let page = u64::from(self.config.page_size);
        let span = self.source as u64 + 3 + self.window + 2 * self.config.prefetch_distance;
        (2 * (span.div_ceil(page) + 2)) as usize
    }

    /// The answers a progress walk may make before the loader must be quiescent or, with a
    /// faulty host of issue 35, wait for the host. With P = [`Settings::progress_bound`] and
    /// r = `max_auto_retries`: an honest host (and a `Stalling` one), P.
    /// [`HostFault::RepeatsWithItems`]: (1 + r)·P, an honest walk's worth for the first stall
    /// and one for each automatic retry, which reads from the anchor back to the cursor (the
    /// steps that succeed on the way do not start the count again), after which the loader
    /// waits. [`HostFault::CursorGone`]: 2·P + 3 + r, an honest walk's worth up to the page
    /// read at the cursor, that read and the page read again (2), both failing, then the
    /// full read from the anchor: an honest walk's worth with fresh cursors, or, when the
    /// anchor's own cursor is the one gone (or a failed full read resumes at it), 1 + r
    /// failing reads before the loader waits.
    pub fn fault_bound(&self) -> usize {
        let p = self.progress_bound();
        match self.fault {
            Some(HostFault::RepeatsWithItems) => (1 + self.config.max_auto_retries as usize) * p,
            Some(HostFault::CursorGone) => 2 * p + 3 + self.config.max_auto_retries as usize,
            _ => p,
        }
    }

    /// The state the exploration starts from.
    fn start(&self) -> State {
        self.start_recorded(None)
    }

    /// The starting state, its loader recording to `sink` if given (`replay_recorded`).
    fn start_recorded(&self, sink: Option<crate::loader::Sink>) -> State {
        let mut host = Host::new(self.config, Source::numbered(self.source));
        if let Some(sink) = sink {
            host.loader = crate::loader::Loader::recorded(self.config, sink).expect("valid config");
        }
        host.lossy = !self.config.recheck_full;
        match self.initial {
            Some((index, position)) => {
                // As `loader_new` with a starting point, then the host's first window: the
                // jump's effects wait for the first call that delivers effects.
                let cursor = host.source.cursor_before(index);
                host.loader
                    .jump(&cursor, position)
                    .expect("a small position");
                let start = host.loader.window().0;
                host.loader
                    .set_window(start, self.window)
                    .expect("a small window");
            }
            None => {
                host.loader
                    .set_window(0, self.window)
                    .expect("a small window");
                host.collect().expect("a first window's effects");
            }
        }
        if self.settled {
            // The first window read: honest answers, oldest first, and timers run.
            host.collect().expect("a first window's effects");
            for _ in 0..self.progress_bound() {
                let Some(read) = host.pending_ids().min() else {
                    break;
                };
                let index = host.index_of(read);
                host.apply(crate::sim::Op::Deliver { index, fresh: true })
                    .expect("an honest answer");
            }
        }
        // The starting effects stay queued: the first event's call carries them out, as the
        // C layer's first call does after `loader_new` with a starting point.
        State {
            host,
            changes: 0,
            moves: 0,
            faults: 0,
            jumps: 0,
            far: None,
            ranged: None,
        }
    }
}

/// A state of the exploration.
#[derive(Clone, Debug)]
pub(crate) struct State {
    host: Host,
    changes: u8,
    moves: u8,
    faults: u8,
    jumps: u8,
    /// After a move or jump with a known cursor, until the view is fresh again: the items
    /// the host may still read ([`Property::FarMoveCost`]).
    far: Option<u64>,
    /// After a ranged change made when the loader was quiescent, until the view is fresh
    /// again: the reads it may still issue ([`Property::RangedCost`]).
    ranged: Option<u64>,
}

/// The configurations explored. The quick grid (`make check`) takes every geometry (source
/// of 0, 2 or 4 items, page 1 or 2, window 1 or 2, prefetch 0 or 1) and, for each, two of
/// the twelve setting combinations (`max_pages` 0 or 2; the three ledger settings; retries
/// and timeouts at their extremes: 5 retries and 10 s, or none and 1 ms), rotating so that
/// every combination meets four geometries; plus starting points given before the first
/// call; each to depth 8 with one source change, one move and one fault. `deep` takes
/// sources of 0, 3 or 5 items and three combinations per geometry, to depth 9. Then the
/// grids of the pages-held bound ([`bound_grid`]), of far moves ([`far_grid`]) and of the
/// faulty hosts of issue 35 ([`fault_grid`]).
pub fn grid(deep: bool) -> Vec<Settings> {
    let mut out = Vec::new();
    let sources: &[usize] = if deep { &[0, 3, 5] } else { &[0, 2, 4] };
    let (stride, depth) = if deep { (4, 9) } else { (6, 8) };
    let mut combos = Vec::new();
    for max_pages in [0, 2] {
        for ledger in [(true, true), (true, false), (false, false)] {
            for retries in [(5, 10_000), (0, 1)] {
                combos.push((max_pages, ledger, retries));
            }
        }
    }
    let mut geometry = 0;
    for &source in sources {
        for page_size in [1, 2] {
            for window in [1, 2] {
                for prefetch in [0, 1] {
                    for (k, &(max_pages, ledger, retries)) in combos.iter().enumerate() {
                        if k % stride != geometry % stride {
                            continue;
                        }
                        let config = Config {
                            page_size,
                            prefetch_distance: prefetch,
                            max_pages,
                            recheck_full: ledger.0,
                            commit_overtaken: ledger.1,
                            max_auto_retries: retries.0,
                            read_timeout_ms: retries.1,
                            backoff_initial_ms: 1,
                            backoff_max_ms: 4,
                            ..Config::default()
                        };
                        out.push(Settings {
                            config,
                            source,
                            window,
                            initial: None,
                            changes: 1,
                            moves: 1,
                            faults: 1,
                            depth,
                            fault: None,
                            locate: false,
                            settled: false,
                            wide: false,
                        });
                    }
                    geometry += 1;
                }
            }
        }
    }
    // Starting points: the source's start named at another position, and an item inside.
    for (source, initial) in [(3, (0, 2)), (3, (1, 1)), (4, (2, 2))] {
        for page_size in [1, 2] {
            out.push(Settings {
                config: Config {
                    page_size,
                    prefetch_distance: 1,
                    backoff_initial_ms: 1,
                    backoff_max_ms: 4,
                    ..Config::default()
                },
                source,
                window: 2,
                initial: Some(initial),
                changes: 1,
                moves: 1,
                faults: 1,
                depth,
                fault: None,
                locate: false,
                settled: false,
                wide: false,
            });
        }
    }
    // Far moves with the host's `locate`: a source long enough that a move to its last item
    // is far from a one-item window, with and without a bound on the pages held.
    out.extend(bound_grid(deep));
    out.extend(far_grid(deep));
    out.extend(fault_grid(deep));
    for (source, page_size, max_pages) in [(4, 1, 0), (5, 2, 2)] {
        out.push(Settings {
            config: Config {
                page_size,
                prefetch_distance: 0,
                max_pages,
                backoff_initial_ms: 1,
                backoff_max_ms: 4,
                ..Config::default()
            },
            source,
            window: 1,
            initial: None,
            changes: 1,
            moves: 1,
            faults: 1,
            depth,
            fault: None,
            locate: true,
            settled: false,
            wide: false,
        });
    }
    out
}

/// The configurations for the bound on pages held while repairs run and the window moves
/// (last round's five fixes that `fuzz_loader` found, `loader::mutant`): a first window of
/// several pages read before the exploration starts, then wide changes, whole and single-item
/// changes, and window moves that shrink it or move it on, with no failures.
pub fn bound_grid(deep: bool) -> Vec<Settings> {
    let mut out = Vec::new();
    let depth = if deep { 11 } else { 10 };
    for (source, page_size, window, prefetch, max_pages, changes, moves) in [
        (7, 1, 5, 0, 0, 1, 1),
        (7, 1, 5, 0, 2, 1, 1),
        (8, 2, 6, 0, 0, 1, 1),
        (7, 1, 5, 0, 0, 2, 1),
        (7, 1, 5, 0, 0, 1, 2),
    ] {
        out.push(Settings {
            config: Config {
                page_size,
                prefetch_distance: prefetch,
                max_pages,
                backoff_initial_ms: 1,
                backoff_max_ms: 4,
                ..Config::default()
            },
            source,
            window,
            initial: None,
            changes,
            moves,
            faults: 0,
            depth,
            fault: None,
            locate: false,
            settled: true,
            wide: true,
        });
    }
    out
}

/// The configurations for the cost of far moves ([`Property::FarMoveCost`]): a source long
/// against a one-item window and a `jump_threshold` of one item, so that a walk and a jump
/// read differently; the first window read before the search; two moves (with `locate`, to
/// the source's middle and last item, or plain), no changes and no failures.
pub fn far_grid(deep: bool) -> Vec<Settings> {
    let depth = if deep { 14 } else { 12 };
    [(16, 1, 0), (16, 2, 1)]
        .into_iter()
        .map(|(source, page_size, prefetch)| Settings {
            config: Config {
                page_size,
                prefetch_distance: prefetch,
                jump_threshold: 1,
                backoff_initial_ms: 1,
                backoff_max_ms: 4,
                ..Config::default()
            },
            source,
            window: 1,
            initial: None,
            changes: 0,
            moves: 2,
            faults: 0,
            depth,
            fault: None,
            locate: true,
            settled: true,
            wide: false,
        })
        .collect()
}

/// The configurations for the hosts that caused issue 35's two regressions
/// ([`HostFault::RepeatsWithItems`], [`HostFault::CursorGone`]): progress from every state
/// with the faulty host's answers, within [`Settings::fault_bound`]. A source of four items
/// read a page of one or two at a time, so that a cursor lies past a page that succeeds;
/// the automatic retries at the default (5), at one, and off; one change, one move and one
/// fault explored before each walk.
pub fn fault_grid(deep: bool) -> Vec<Settings> {
    let depth = if deep { 8 } else { 6 };
    let mut out = Vec::new();
    for fault in [HostFault::RepeatsWithItems, HostFault::CursorGone] {
        for (page_size, prefetch, retries) in [(1, 0, 5), (2, 1, 1), (1, 1, 0)] {
            out.push(Settings {
                config: Config {
                    page_size,
                    prefetch_distance: prefetch,
                    max_auto_retries: retries,
                    backoff_initial_ms: 1,
                    backoff_max_ms: 4,
                    ..Config::default()
                },
                source: 4,
                window: 2,
                initial: None,
                changes: 1,
                moves: 1,
                faults: 1,
                depth,
                fault: Some(fault),
                locate: false,
                settled: false,
                wide: false,
            });
        }
    }
    out
}
