//! The properties a simulated run checks: after every step, once it settles, at close.
//!
//! After every step: the ledger's invariants, the view against the source, the memory bound.

use super::host::{Host, Violation};
use super::source::Item;
use super::Op;
use crate::loader::LoaderError;

impl Host {
    /// What the window shows, and the source's visible items at the window's positions (the
    /// source's own numbering): equal when the window shows the source where it says.
    pub fn window_against_source(&self) -> Result<(Vec<Item>, Vec<Item>), Violation> {
        let (ws, wl) = self.loader.window();
        let (from, _) = self.loader.covered();
        let view = self.view_items()?;
        let at = (ws - from) as usize;
        let shown = view[at..(at + wl as usize).min(view.len())].to_vec();
        let truth = self
            .source
            .visible_from(0)
            .skip(ws as usize)
            .take(wl as usize)
            .collect();
        Ok((shown, truth))
    }

    /// The items the view shows, in order.
    pub fn view_items(&self) -> Result<Vec<Item>, Violation> {
        let mut out = Vec::new();
        let mut at = self.loader.covered().0;
        for p in self.loader.pages() {
            if p.start != at {
                return Err(format!(
                    "page starts at {} but the previous ended at {at}",
                    p.start
                ));
            }
            let items = self
                .held
                .get(&p.acquisition)
                .ok_or_else(|| format!("view page {} was released", p.acquisition))?;
            if items.len() != p.count as usize {
                return Err("page count differs from its acquisition".into());
            }
            out.extend_from_slice(items);
            at += p.count as u64;
        }
        if at != self.loader.covered().1 {
            return Err("covered end differs from the pages".into());
        }
        Ok(out)
    }

    /// The properties that hold after every event.
    pub fn check(&self) -> Result<(), Violation> {
        let at = |what: String| format!("step {}: {what}", self.steps);
        self.loader
            .ledger()
            .check_invariants()
            .map_err(|inv| at(format!("ledger {inv} violated")))?;
        let view = self.view_items().map_err(at)?;
        let distinct: rustc_hash::FxHashSet<&Item> = view.iter().collect();
        if distinct.len() != view.len() {
            return Err(at(format!("an item appears twice in the view: {view:?}")));
        }
        if let Some(acq) = self
            .held
            .iter()
            .find_map(|(a, v)| v.is_empty().then_some(a))
        {
            return Err(at(format!(
                "acquisition {acq} of an empty page is still held"
            )));
        }
        self.check_bound().map_err(at)?;
        if let Some(gap) = self.loader.staged_gap() {
            return Err(at(gap));
        }
        let l = self.loader.ledger();
        if !self.loader.revalidating()
            && l.failure() == crate::ledger::Failure::None
            && !self.lied
            && !self.lossy
        {
            self.view_agrees(&view).map_err(at)?;
        }
        Ok(())
    }

    /// Whether `view` (the items the view holds, [`Host::view_items`]) is the source's content
    /// for the covered range, from the first held page's start cursor, with the source's
    /// start and end claimed only where they are: what a quiet view shows, unless a lie or an
    /// invalidation `recheck_full` off lost left it stale.
    pub(crate) fn view_agrees(&self, view: &[Item]) -> Result<(), String> {
        let from = self.source.position(self.loader.base_cursor());
        let (start, end) = self.loader.covered();
        let n = (end - start) as usize;
        let truth: Vec<Item> = self.source.visible_from(from).take(n + 1).collect();
        let follows = truth.len() > n;
        let truth = &truth[..truth.len().min(n)];
        if view != truth {
            return Err(format!(
                "quiet view differs from the source: view {view:?}, source {truth:?}"
            ));
        }
        if self.loader.end_of_source() && follows {
            return Err("view claims the end of the source but items follow".into());
        }
        // At the source's start the positions are the source's own.
        if self.loader.start_of_source() && start != 0 {
            return Err(format!(
                "the view starts at the source's start but its first position is {start}"
            ));
        }
        if self.loader.start_of_source() && from != 0 {
            return Err(format!(
                "the view claims the source's start but starts at item {from}"
            ));
        }
        Ok(())
    }

    /// The memory bound, whole, as the header states it (`loader_config.max_pages`): every
    /// acquisition the loader holds counted (the view's pages, a finite read's page in
    /// flight, a repair's or retry's staged pages), the property the loader checker explores.
    fn check_bound(&self) -> Result<(), Violation> {
        let holders = self.loader.holders();
        crate::check::props::bound(&self.loader, &self.pending_reads(), &holders, 0)
            .map_err(|(_, why)| why)
    }

    /// Answers everything with success, retrying own failures, with the source left alone;
    /// then checks that the loader is quiescent with the window covered.
    pub fn settle_down(&mut self) -> Result<(), Violation> {
        for _ in 0..100_000 {
            if !self.pending.is_empty() {
                self.apply(Op::Deliver {
                    index: 0,
                    fresh: false,
                })?;
            } else if self.loader.ledger().retry_enabled() {
                self.apply(Op::Retry)?;
            } else if let Some(d) = self.loader.next_deadline() {
                // A dropped read waits for its timeout.
                let ms = d.saturating_sub(self.now).clamp(1, u64::from(u16::MAX));
                self.apply(Op::Tick { ms: ms as u16 })?;
            } else {
                break;
            }
        }
        self.check_settled()
    }

    /// The properties of a settled loader: quiescent, current, with the window covered, and
    /// every property that holds after any event.
    pub fn check_settled(&self) -> Result<(), Violation> {
        let l = self.loader.ledger();
        if !l.is_quiescent() || self.loader.revalidating() {
            return Err(format!("stuck: {:?}", l.snapshot()));
        }
        if l.cover_epoch() != l.epoch() && self.loader.config().recheck_full {
            return Err("quiescent with coverEpoch < epoch".into());
        }
        let (ws, wl) = self.loader.window();
        let pf = self.loader.config().prefetch_distance;
        let want = (ws + wl).saturating_add(pf);
        if !self.loader.end_of_source() && self.loader.covered().1 < want {
            return Err(format!(
                "the window is not covered: covered {:?}, want up to {want}",
                self.loader.covered()
            ));
        }
        let from = ws.saturating_sub(pf);
        if !self.loader.start_of_source() && self.loader.covered().0 > from {
            return Err(format!(
                "the window is not covered: covered {:?}, want from {from}",
                self.loader.covered()
            ));
        }
        self.check()
    }

    /// Closes the loader and checks that every acquisition came back exactly once, and that
    /// answers after the close are refused.
    pub fn close(&mut self) -> Result<(), Violation> {
        self.loader.close();
        self.collect()?;
        if !self.held.is_empty() || self.accepted != self.released {
            return Err(format!(
                "after close: accepted {}, released {}, still held {}",
                self.accepted,
                self.released,
                self.held.len()
            ));
        }
        if let Some(p) = self.pending.first() {
            let r = self.loader.settle(p.read.read_id, 0, 0, &[], true);
            if r != Err(LoaderError::Closed) {
                return Err(format!("an answer after close was not refused: {r:?}"));
            }
        }
        Ok(())
    }

    /// Whether a change at cursor `at` lies outside the held pages (and what the view knows past
    /// them: the source's end, empty pages skipped) and outside every read in flight.
    pub fn untouched(&self, at: &[u8]) -> bool {
        let l = &self.loader;
        if l.page_count() > 0 {
            let base = l.base_cursor();
            let end = l.pages().last().map(|p| p.end_cursor()).unwrap_or(base);
            let inside = lt(base, at) && le(at, end);
            let past = lt(end, at) && (l.end_of_source() || l.tail_known());
            let before = l.start_of_source() && le(at, base);
            if inside || past || before {
                return false;
            }
        } else if l.end_of_source() || l.tail_known() {
            return false;
        }
        self.reads_touching(at) == 0
    }

    /// How many reads in flight (the host's, and those still queued for it: a starting
    /// point's) may hold a change at cursor `at`: a finite read forward reads what follows its
    /// cursor (up to its `until`), backward what precedes it; a chain or full read (a running
    /// repair, which may have staged pages the change hits) always may.
    pub(crate) fn reads_touching(&self, at: &[u8]) -> u64 {
        use crate::loader::{Direction, Effect, Kind};
        let mut reads = self.pending_reads();
        reads.extend(self.loader.queued_effects().iter().filter_map(|e| match e {
            Effect::Issue(r) => Some(r.clone()),
            _ => None,
        }));
        reads
            .iter()
            .filter(|r| {
                r.kind != Kind::Finite
                    || match r.direction {
                        Direction::Forward => {
                            lt(&r.cursor, at) && r.until.as_deref().is_none_or(|u| le(at, u))
                        }
                        Direction::Backward => le(at, &r.cursor),
                    }
            })
            .count() as u64
    }
}

/// Cursor order, with the empty cursor the source's start.
fn lt(a: &[u8], b: &[u8]) -> bool {
    match (a.is_empty(), b.is_empty()) {
        (true, b_empty) => !b_empty,
        (false, true) => false,
        (false, false) => super::source::Source::compare(a, b) == std::cmp::Ordering::Less,
    }
}

fn le(a: &[u8], b: &[u8]) -> bool {
    !lt(b, a)
}
