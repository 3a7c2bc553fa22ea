//! The loader's read-only queries: what the host may ask between events.
//!
//! Its config, ledger, pages, coverage, window, counters and next deadline. Nothing here
//! changes state.

use super::{Config, Debt, Ledger, Loader, Page, Phase, Stats};

impl Loader {
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
}
