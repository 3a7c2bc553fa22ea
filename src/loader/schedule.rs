//! Scheduling: the window the host asked for, how far the view should reach for it, and the
//! pump that carries out the ledger's effects (start, release, supersede) and asks the ledger
//! for more until nothing more is enabled.

use super::{Kind, Loader};
use crate::ledger;

/// The items the host wants shown.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Window {
    pub(super) start: u64,
    pub(super) len: u64,
}

impl Window {
    /// How far the view should reach: the window's end plus `prefetch` items. `set_window`
    /// refused a window whose end overflows.
    #[inline]
    pub(super) fn want(&self, prefetch: u64) -> u64 {
        (self.start + self.len).saturating_add(prefetch)
    }
}

impl Loader {
    /// Carries out the ledger's effects, then refills, until nothing more is enabled; then
    /// announces a change, if there was one.
    pub(super) fn pump(&mut self) {
        // Nothing below moves the window: how far to read is the same for every step.
        let want = self.window.want(self.config.prefetch_distance);
        loop {
            let mut out = std::mem::take(&mut self.scratch);
            for e in out.drain(..) {
                match e {
                    ledger::Effect::Start { id, kind, epoch } => self.start(id, kind, epoch, want),
                    ledger::Effect::Release { id } => self.retire(id),
                    ledger::Effect::Superseded { id } => self.supersede(id),
                }
            }
            self.scratch = out;
            if !self.view.short_of(want) {
                break;
            }
            match self.ledger.issue_finite(&mut self.scratch) {
                Ok(Some(_)) => continue,
                // Nothing enabled, or no request id left: the window waits.
                _ => break,
            }
        }
        let view_changed = self.view.take_changed();
        self.out.announce(view_changed, self.ledger.changes());
    }

    /// The ledger started request `id`: give it a record and issue its first read, for a view
    /// that should reach `want`.
    #[inline]
    fn start(&mut self, id: u64, kind: Kind, epoch: u64, want: u64) {
        let origin = self.view.origin(kind, want);
        let mut w = self.pools.work(kind, epoch);
        w.target = origin.target;
        w.base_offset = origin.base_offset;
        w.base_cursor = origin.base_cursor;
        self.requests.insert(id, w);
        let w = self.requests.live(id);
        let limit = self.config.page_size;
        self.reads.issue(id, w, origin.cursor, limit, &mut self.out);
    }

    /// The ledger retired a request: hand back everything it acquired.
    #[inline]
    fn retire(&mut self, id: u64) {
        let Some(w) = self.requests.remove(id) else {
            return;
        };
        self.out.release_all(&w.acqs);
        let shown = w.in_view > 0;
        self.pools.recycle_work(w);
        if shown {
            self.view.close_gap(id);
        }
    }

    /// The ledger superseded a request: its outstanding read's answer is no longer needed.
    #[inline]
    fn supersede(&mut self, id: u64) {
        if let Some(read_id) = self.requests.get(id).and_then(|w| w.read) {
            self.reads.cancel(read_id, &mut self.out);
        }
    }
}
