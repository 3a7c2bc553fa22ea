//! A repair's allocations, counted by a counting global allocator, on a view of 500 pages:
//! - a burst of invalidations, each overtaking the newest chain at its first step, allocates
//!   nothing once warm: no chain is sized for the whole view before it survives a step;
//! - the chain that survives the burst reuses the vectors of the last repair: its steps and
//!   its commit allocate nothing sized for the view (only its first page, staged before it is
//!   sized for the rest, may start a small vector).
//!
//! Each measured round follows an identical warm-up round, so that the host's and the
//! loader's buffers and maps have reached their size; any allocation left is the loader's.

// Counting allocations needs a `GlobalAlloc`, whose methods are `unsafe` to implement.
#![allow(unsafe_code)]

#[macro_use]
#[path = "../benches/common/counting_alloc.rs"]
mod counting_alloc;

use loader::{Config, Effect, Kind, Loader, Page};
use std::alloc::Layout;
use std::cell::Cell;

struct Counting;

thread_local! {
    // Per thread: the test harness runs tests on several threads at once.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

impl Counting {
    fn note(&self, layout: Layout) {
        // `try_with`: never panic inside the allocator, even while a thread shuts down.
        if COUNTING.try_with(Cell::get).unwrap_or(false) {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
            let _ = BYTES.try_with(|b| b.set(b.get() + layout.size() as u64));
        }
    }
}

counting_global_alloc!(Counting);

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocations `run` makes on this thread: how many, and how many bytes.
fn counted(run: impl FnOnce()) -> (u64, u64) {
    ALLOCS.with(|a| a.set(0));
    BYTES.with(|b| b.set(0));
    COUNTING.with(|c| c.set(true));
    run();
    COUNTING.with(|c| c.set(false));
    (ALLOCS.with(Cell::get), BYTES.with(Cell::get))
}

/// Items in the source, and per read: a view of 500 pages.
const ITEMS: u64 = 2_000;
const PAGE: u32 = 4;

/// A host over `ITEMS` numbered items, whose cursor is the next item's index as 8 bytes. It
/// keeps its buffers from one event to the next, so that it allocates nothing once warm.
struct Host {
    loader: Loader,
    effects: Vec<Effect>,
    /// Outstanding reads, oldest first: read id, first item, limit, kind, step.
    reads: Vec<(u64, u64, u32, Kind, u32)>,
    next_acq: u64,
}

impl Host {
    /// A loader showing the whole source, read by finite reads.
    fn new() -> Host {
        // Overtaken chains settled and replaced at their first step (the module's P5): with
        // `commit_overtaken` on they read on to their commit instead.
        let config = Config {
            page_size: PAGE,
            prefetch_distance: 0,
            commit_overtaken: false,
            ..Config::default()
        };
        let mut h = Host {
            loader: Loader::new(config).unwrap(),
            effects: Vec::with_capacity(64),
            reads: Vec::with_capacity(8),
            next_acq: 0,
        };
        h.loader.set_window(0, ITEMS).unwrap();
        h.drain();
        assert_eq!(h.loader.page_count(), 500);
        h
    }

    fn collect(&mut self) {
        self.loader.drain_effects_into(&mut self.effects);
        for e in self.effects.drain(..) {
            if let Effect::Issue(r) = e {
                let at = match r.cursor.len() {
                    8 => u64::from_be_bytes(r.cursor[..].try_into().unwrap()),
                    _ => 0,
                };
                self.reads.push((r.read_id, at, r.limit, r.kind, r.step));
            }
        }
    }

    /// Answers the oldest outstanding read with the items it asks for.
    fn answer(&mut self) {
        let (read_id, at, limit, _, _) = self.reads.remove(0);
        let end = (at + limit as u64).min(ITEMS);
        self.next_acq += 1;
        let next = end.to_be_bytes();
        self.loader
            .settle(
                read_id,
                self.next_acq,
                (end - at) as u32,
                &next,
                end == ITEMS,
            )
            .unwrap();
        self.collect();
    }

    fn invalidate(&mut self) {
        self.loader.invalidate().unwrap();
        self.collect();
    }

    /// Answers reads until none is outstanding.
    fn drain(&mut self) {
        self.collect();
        while !self.reads.is_empty() {
            self.answer();
        }
    }

    /// Invalidations, each overtaking the newest chain at its first step.
    fn burst(&mut self, chains: usize) {
        self.invalidate();
        for _ in 0..chains {
            self.invalidate();
            assert_eq!(self.reads.len(), 1);
            assert_eq!((self.reads[0].3, self.reads[0].4), (Kind::Chain, 0));
            self.answer();
        }
    }

    /// The repair that survives: answers its steps up to the commit.
    fn repair(&mut self) {
        self.drain();
        assert!(!self.loader.revalidating());
        assert_eq!(self.loader.covered(), (0, ITEMS));
        assert_eq!(self.loader.page_count(), 500);
    }
}

/// More overtaken chains than the loader keeps spare records for, so that a chain sized at
/// its start would need a fresh record sized for the view.
const CHAINS: usize = 100;

#[test]
fn a_burst_of_overtaken_chains_allocates_nothing_once_warm() {
    let mut h = Host::new();
    h.burst(CHAINS);
    h.repair();
    let (allocs, bytes) = counted(|| h.burst(CHAINS));
    assert_eq!(
        (allocs, bytes),
        (0, 0),
        "{CHAINS} overtaken chains allocated {allocs} times, {bytes} bytes"
    );
    h.repair();
    h.loader.close();
}

#[test]
fn the_chain_that_survives_a_burst_reuses_the_last_repairs_vectors() {
    let mut h = Host::new();
    // The first repairs leave a record sized for the whole view in the pool.
    for _ in 0..2 {
        h.burst(CHAINS);
        h.repair();
    }
    h.burst(CHAINS);
    let (allocs, bytes) = counted(|| h.repair());
    // Vectors for the whole view would take 500 pages' worth; a first page's staging takes a
    // few.
    let view_bytes = 500 * std::mem::size_of::<Page>() as u64;
    assert!(
        allocs <= 1 && bytes < view_bytes / 10,
        "the surviving repair of a 500-page view allocated {allocs} times, {bytes} bytes"
    );
    h.loader.close();
}
