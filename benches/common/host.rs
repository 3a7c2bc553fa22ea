//! The sans-IO host the counting benches (depth, liveness) share: it drives a [`Loader`]
//! directly (`take_effects`, `settle`, `fail`, `tick`), queues the reads to answer, and books
//! each acquisition the loader holds with what its [`Source`] handed over.
#![allow(dead_code)]

use loader::{Config, Effect, Loader, Read};
use std::collections::{HashMap, VecDeque};

/// Where the host's answers come from.
pub trait Source {
    /// What one acquisition holds, for checking the view against the source.
    type Held;

    /// Answers `read`: what its acquisition holds, the item count, the cursor the next read
    /// continues from, and whether the source's end (forward) or start (backward) was reached.
    fn answer(&mut self, read: &Read) -> (Self::Held, u32, Vec<u8>, bool);
}

/// The host: the loader, its source, the reads to answer, and the acquisitions held.
pub struct Host<S: Source> {
    pub loader: Loader,
    pub source: S,
    /// Reads issued and not yet answered, in issue order.
    pub reads: VecDeque<Read>,
    /// Acquisition -> what it holds.
    pub held: HashMap<u64, S::Held>,
    next_acquisition: u64,
    /// The most acquisitions held at any moment (a caller may restart it).
    pub max_held: usize,
    /// The host's clock, for `tick`.
    pub now: u64,
}

impl<S: Source> Host<S> {
    pub fn new(config: Config, source: S) -> Host<S> {
        Host {
            loader: Loader::new(config).expect("a valid config"),
            source,
            reads: VecDeque::new(),
            held: HashMap::new(),
            next_acquisition: 1,
            max_held: 0,
            now: 0,
        }
    }

    /// Takes the loader's effects: queues the reads it issues, and drops the acquisitions it
    /// releases, each of which must be held.
    pub fn effects(&mut self) {
        self.max_held = self.max_held.max(self.held.len());
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(read) => self.reads.push_back(read),
                Effect::Release { acquisition } => {
                    assert!(
                        self.held.remove(&acquisition).is_some(),
                        "acquisition {acquisition} released twice or never handed over"
                    );
                }
                // A cancelled read is answered (or failed) anyway: the loader finds it stale.
                Effect::Cancel { .. } | Effect::Changed => {}
            }
        }
    }

    /// Answers `read` from the source under a new acquisition, held while it has items.
    /// Returns the items it handed over.
    pub fn settle(&mut self, read: Read) -> u32 {
        let (items, count, next, end) = self.source.answer(&read);
        let acquisition = self.next_acquisition;
        self.next_acquisition += 1;
        self.loader
            .settle(read.read_id, acquisition, count, &next, end)
            .expect("the loader accepts a well-formed answer");
        if count > 0 {
            self.held.insert(acquisition, items);
        }
        self.effects();
        count
    }

    pub fn fail(&mut self, read: Read) {
        self.loader.fail(read.read_id, -1).expect("fail");
        self.effects();
    }

    /// Answers every read, in order, until none is left.
    pub fn run(&mut self) {
        self.effects();
        while let Some(read) = self.reads.pop_front() {
            self.settle(read);
        }
    }

    /// A quiet loader, holding exactly the acquisitions it shows: every other one went back.
    pub fn check_quiet(&self, case: &str) -> Result<(), String> {
        let l = &self.loader;
        if l.revalidating() || l.outstanding_reads() > 0 {
            return Err(format!("{case}: not quiescent"));
        }
        if self.held.len() != l.page_count() {
            return Err(format!(
                "{case}: {} acquisitions held, {} pages shown",
                self.held.len(),
                l.page_count()
            ));
        }
        Ok(())
    }

    /// Nothing outstanding: lets time pass to the next deadline, or retries when the
    /// automatic retries are spent. Returns false when the loader is quiescent.
    pub fn idle(&mut self) -> bool {
        if let Some(d) = self.loader.next_deadline() {
            self.now = self.now.max(d);
            self.loader.tick(self.now).expect("tick");
        } else if self.loader.ledger().retry_enabled() {
            self.loader.retry().expect("retry");
        } else {
            return false;
        }
        self.effects();
        true
    }
}
