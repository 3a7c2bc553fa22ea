//! Scheduling: the window the host asked for, how far the view should reach for it, and the
//! pump that carries out the ledger's effects (start, release, supersede) and asks the ledger
//! for more until nothing more is enabled.

use super::view::Want;
use super::{requests, Direction, Kind, Loader};
use crate::ledger;

/// The items the host wants shown.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Window {
    pub(super) start: u64,
    pub(super) len: u64,
}

impl Window {
    /// What the view should cover: the window widened by `prefetch` items on both sides.
    /// `set_window` refused a window whose end overflows.
    #[inline]
    pub(super) fn want(&self, prefetch: u64) -> Want {
        Want {
            start: self.start.saturating_sub(prefetch),
            end: (self.start + self.len).saturating_add(prefetch),
            window_start: self.start,
            below_zero: self.start < prefetch,
        }
    }

    /// Moves the window by `by` positions (the view was renumbered), keeping it on the same
    /// items; it stays at or after 0 and its end does not overflow.
    pub(super) fn shift(&mut self, by: i128) {
        let start = (self.start as i128 + by).clamp(0, (u64::MAX - self.len) as i128);
        self.start = start as u64;
    }
}

impl Loader {
    /// Carries out the ledger's effects, then refills (after the last page first, then
    /// before the first), until nothing more is enabled; then releases the pages the window no
    /// longer needs and announces a change, if there was one. Every call ends with it but an
    /// answer whose step reads on (`Step::ReadOn`), after which it would find nothing to do.
    pub(super) fn pump(&mut self) {
        loop {
            self.follow_shift();
            self.pin_to_end();
            let want = self.want();
            // An effect may cause more (a repair with nothing to read settles at once): carry
            // them out too, in order.
            while !self.scratch.is_empty() {
                let mut out = std::mem::take(&mut self.scratch);
                for e in out.drain(..) {
                    match e {
                        ledger::Effect::Start { id, kind, epoch } => {
                            self.start(id, kind, epoch, &want)
                        }
                        ledger::Effect::Release { id } => self.retire(id),
                        ledger::Effect::Superseded { id } => self.supersede(id),
                    }
                }
                let more = std::mem::replace(&mut self.scratch, out);
                self.scratch.extend(more);
            }
            self.finite_direction = if self.view.short_after(&want) || self.wants_tail() {
                Direction::Forward
            } else if self.view.short_before(&want) {
                Direction::Backward
            } else {
                break;
            };
            match self.ledger.issue_finite(&mut self.scratch) {
                Ok(Some(_)) => continue,
                // Nothing enabled, or no request id left: the window waits.
                _ => break,
            }
        }
        self.pin_to_end();
        self.note_end();
        self.trim();
        let view_changed = self.view.take_changed();
        self.out.announce(view_changed, self.ledger.changes());
    }

    /// What the view should cover now (the window widened by the prefetch), kept up to date
    /// by `window_moved` at each change of the window rather than computed on every call.
    #[inline]
    pub(super) fn want(&self) -> Want {
        // Checked in test builds (the loader checker's included): a change of the window
        // that missed `window_moved` fails here.
        #[cfg(any(test, feature = "testing"))]
        assert!(
            self.reach == self.window.want(self.config.prefetch_distance),
            "the window moved without window_moved"
        );
        self.reach
    }

    /// The window changed: what the view should cover follows.
    #[inline]
    pub(super) fn window_moved(&mut self) {
        self.reach = self.window.want(self.config.prefetch_distance);
    }

    /// A test build's guard of the calls that skip the pump (`Step::ReadOn`): the pump, run
    /// now on a copy, would change nothing (no effect, no counter, the same state).
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn assert_pumped(&self) {
        use crate::check::canon::{Canon, Enc, Form};
        let hash = |l: &Loader, e: &mut Enc| {
            e.reset(l.now, Form::Fields);
            l.canon(e);
            e.finish()
        };
        super::guard::SEEN.with_borrow_mut(|seen| {
            let before = hash(self, &mut seen.enc);
            // Checked once per canonical state: the pump is a function of it.
            if seen.idle(&self.config, before) {
                return;
            }
            let mut twin = self.clone();
            twin.pump();
            assert!(
                twin.out.queued() == self.out.queued()
                    && twin.out.stats == self.out.stats
                    && hash(&twin, &mut seen.enc) == before,
                "an answer that skipped the pump left it something to do"
            );
            seen.found_idle(before);
        });
    }

    /// The view was renumbered: the window follows, so it stays on the same items.
    #[inline]
    fn follow_shift(&mut self) {
        let by = self.view.take_shift();
        if by != 0 {
            self.window.shift(by);
            self.window_moved();
            self.follow.shift(by);
            self.out.stats.renumbered += 1;
        }
    }

    /// Releases the pages the window no longer needs (`drop_margin`, `max_pages`).
    pub(super) fn trim(&mut self) {
        let want = self.want();
        let keep_from = match self.config.drop_margin {
            0 => 0,
            m => self.window.start.saturating_sub(m),
        };
        let current = !self.revalidating();
        self.view.set_current(current);
        let max_pages = self.config.max_pages as usize;
        // Most events release nothing: decided before looking for a finite read in flight,
        // which can only hold pages back.
        if !self.view.needs_trim(&want, keep_from, max_pages, None) {
            return;
        }
        let hold = self.reads.finite_in_flight();
        if !self.view.needs_trim(&want, keep_from, max_pages, hold) {
            return;
        }
        let cut = self.view.trim(
            &want,
            keep_from,
            max_pages,
            hold,
            &mut self.requests,
            &mut self.pools.cursors,
            &mut self.out,
        );
        if cut.is_some() {
            self.overshoot_finite(cut);
        }
    }

    /// A finite read in flight continued from a page that went (on side `cut`): its answer
    /// goes back.
    fn overshoot_finite(&mut self, cut: Option<Direction>) {
        if let Some(d) = cut {
            let reading: Vec<u64> = self.reads.iter().map(|(_, o)| o.request).collect();
            for id in reading {
                if let Some(w) = self.requests.get_mut(id) {
                    if w.kind == Kind::Finite && w.read.is_some() && w.direction == d {
                        w.overshot = true;
                    }
                }
            }
        }
    }

    /// The ledger started request `id`: give it a record and issue its first read, for a view
    /// that should cover `want`.
    #[inline]
    fn start(&mut self, id: u64, kind: Kind, epoch: u64, want: &Want) {
        if let Some(w) = self.resume.take() {
            // A ranged repair resumes only as the repair again (a repair failure's retry):
            // a full read replaces every page, not its run.
            if kind == Kind::Chain || (kind == Kind::Full && w.ranged.is_none()) {
                self.resume_into(id, kind, epoch, w);
                return;
            }
            self.out.release_all(&w.acqs);
            self.pools.recycle_work(w);
        }
        if kind == Kind::Chain && !super::mutant::on(super::mutant::Mutant::RangedRereadsOutside) {
            // A ranged repair re-reads only what the window needs.
            let cut = self.view.drop_dirty_outside(
                want,
                self.reads.finite_in_flight(),
                &mut self.requests,
                &mut self.pools.cursors,
                &mut self.out,
            );
            self.overshoot_finite(cut);
        }
        let origin = self.view.origin(kind, self.finite_direction, want);
        // Filled in where the map keeps it: the record is not moved again after the insert.
        let w = self.requests.insert(id, self.pools.work(kind, epoch));
        w.direction = origin.direction;
        w.target = origin.target;
        w.back_target = origin.back_target;
        w.base_offset = origin.base_offset;
        w.back_cursor = origin.base_cursor.clone();
        w.base_cursor = origin.base_cursor;
        w.jump = origin.jump;
        w.ranged = origin.ranged;
        w.until = origin.until;
        if origin.ranged == Some(None) {
            // Nothing held changed: the repair reads nothing and commits now, keeping every
            // page (the view is current again).
            self.pools.cursors.recycle(origin.cursor);
            // Its only refusal is for want of request ids, when no call can do anything.
            let _ = self.settle_ranged(id, false);
            return;
        }
        let limit = self.config.page_size;
        self.reads
            .issue(id, w, origin.cursor, limit, self.now, &mut self.out);
    }

    /// Request `id` (at `epoch`) adopts the failed request `w`: its staged pages and
    /// acquisitions, its targets and anchor (a ranged repair's run and bound too), and the
    /// read that failed, which it issues again. In the model's terms the new chain or full
    /// request is fresh; only the loader's pages carry over. Read at the same epoch, they are
    /// as current as a re-read: a repair failure's retry (a chain, `unifiedMinRepairRetry`)
    /// is always at the same epoch. Read at an older one (invalidations came between the
    /// failure and a full read's retry), they may miss those changes: the request still
    /// resumes, so that every read that succeeded counts, but when it commits the loader
    /// invalidates once more, and a repair follows at once. A repair failure's retry that
    /// fails again at the read it resumed goes through the debt lattice (`repair_retried`).
    fn resume_into(&mut self, id: u64, kind: Kind, epoch: u64, mut w: Box<requests::Work>) {
        let from = w.resume_at.take().expect("a resumable record");
        w.resumed_stale |= w.epoch != epoch;
        w.epoch = epoch;
        w.kind = kind;
        for p in w.staged.iter_mut().chain(w.staged_back.iter_mut()) {
            p.request = id;
        }
        w.step += 1;
        self.out.stats.resumed += 1;
        let w = self.requests.insert(id, w);
        let limit = self.config.page_size;
        self.reads
            .issue(id, w, from, limit, self.now, &mut self.out);
        if kind == Kind::Chain {
            self.repair_retried = w.read;
        }
    }

    /// The ledger retired a request: hand back everything it acquired. A chain or full read
    /// that failed is kept instead, for the retry to resume.
    #[inline]
    fn retire(&mut self, id: u64) {
        let Some(w) = self.requests.remove(id) else {
            return;
        };
        if w.resume_at.is_some() {
            if let Some(old) = self.resume.replace(w) {
                self.out.release_all(&old.acqs);
                self.pools.recycle_work(old);
            }
            return;
        }
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
            self.reads.cancel(read_id, self.now, &mut self.out);
        }
    }
}

#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Window {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        let Window { start, len } = self;
        e.num(*start);
        e.num(*len);
    }
}
