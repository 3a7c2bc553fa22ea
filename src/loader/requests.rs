//! The loader's side of each live ledger request ([`Work`]): the acquisitions its reads
//! produced, its outstanding read, the pages a chain or full read has staged, and how many
//! of its pages the view shows.

use super::cursor::CursorPool;
use super::outbox::Outbox;
use super::view::Page;
use super::{Cursor, Direction, Kind};
use rustc_hash::FxHashMap as HashMap;

/// A request's acquisitions, by slot; `None` once released early (its page was dropped).
/// A plain vector (pushed on every answer, where a one-entry inline vector's checks cost
/// more): a pooled record keeps its capacity, even one past the pools' bounds (see
/// `Pools::keep_bare`), so a burst of overtaken chains allocates nothing once warm.
pub(super) type Acqs = Vec<Option<u64>>;

/// The work of one live ledger request.
#[derive(Clone, Debug)]
pub(super) struct Work {
    pub(super) kind: Kind,
    pub(super) epoch: u64,
    /// Every acquisition accepted for this request.
    pub(super) acqs: Acqs,
    /// How many of this request's pages are in the view.
    pub(super) in_view: u32,
    /// The outstanding read, if any.
    pub(super) read: Option<u64>,
    /// Chain and full reads: pages read forward from the anchor so far, committed together
    /// with the last step.
    pub(super) staged: Vec<Page>,
    pub(super) staged_items: u64,
    /// Chain and full reads: pages read backward from the anchor so far, nearest first.
    pub(super) staged_back: Vec<Page>,
    pub(super) staged_back_items: u64,
    pub(super) step: u32,
    /// Which way the next read goes: a finite read's one way; a chain or full read goes
    /// forward from the anchor, then backward from it.
    pub(super) direction: Direction,
    /// Chain and full reads: how many items to cover forward from the anchor (the window's
    /// end plus prefetch), and backward from it (the prefetch before the window).
    pub(super) target: u64,
    pub(super) back_target: u64,
    /// The anchor: where the request's forward pages start, position and cursor. For a
    /// backward finite read, the position and cursor it reads before.
    pub(super) base_offset: u64,
    pub(super) base_cursor: Cursor,
    /// Chain and full reads: where the next backward read starts (the start of the farthest
    /// page staged backward, or the anchor).
    pub(super) back_cursor: Cursor,
    /// Chain and full reads: the last forward answer's `next_cursor` and `end_of_source`.
    pub(super) tail: Cursor,
    pub(super) reached_end: bool,
    /// Chain and full reads: a backward answer reached the source's start.
    pub(super) reached_start: bool,
    /// The request rebuilds the view around a jump's cursor.
    pub(super) jump: bool,
    /// Chain and full reads that failed: where the failed read started, so that a retry at
    /// the same epoch resumes there with the pages read so far (see `Loader::retire`).
    pub(super) resume_at: Option<Cursor>,
    /// A ranged repair: the run of held pages it replaces (`Some(None)`: nothing to re-read),
    /// and where its reads stop.
    pub(super) ranged: Option<Option<super::view::Run>>,
    pub(super) until: Option<Cursor>,
    /// It resumed pages read at an older epoch: its commit is followed by an invalidation.
    pub(super) resumed_stale: bool,
    /// Chain and full reads: the anchor item's position by the host's count
    /// (`Loader::settle_counted`), if it gave one.
    pub(super) counted: Option<u64>,
    /// Chain and full reads: pages past the window were let go while a read was out, so
    /// that read's page lies beyond them: its answer is let go too, and its direction is done.
    pub(super) overshot: bool,
    /// A ranged repair that read past the window plus prefetch (or lost its pages there to
    /// a window move): it stops, and its commit replaces the view from its run's first page
    /// to the view's end, which then ends where its last page kept ends.
    pub(super) truncated: bool,
    /// A ranged repair whose first pages lay wholly before the window plus prefetch (the
    /// window moved on while it ran) let them go: how many items, and where the first page
    /// it kept starts. Its commit replaces the view from its first page, which then starts
    /// there.
    pub(super) cut_items: u64,
    pub(super) cut_cursor: Option<Cursor>,
}

impl Work {
    /// A record with nothing read yet.
    pub(super) fn new(kind: Kind, epoch: u64) -> Work {
        Work {
            kind,
            epoch,
            acqs: Acqs::new(),
            in_view: 0,
            read: None,
            staged: Vec::new(),
            staged_items: 0,
            staged_back: Vec::new(),
            staged_back_items: 0,
            step: 0,
            direction: Direction::Forward,
            target: 0,
            back_target: 0,
            base_offset: 0,
            base_cursor: Cursor::default(),
            back_cursor: Cursor::default(),
            tail: Cursor::default(),
            reached_end: false,
            reached_start: false,
            jump: false,
            resume_at: None,
            ranged: None,
            until: None,
            resumed_stale: false,
            counted: None,
            overshot: false,
            truncated: false,
            cut_items: 0,
            cut_cursor: None,
        }
    }

    /// Takes `acquisition` from the answer to this request's outstanding read; returns where
    /// it sits in the request's list. An empty page is never shown and nothing reads it, so
    /// its acquisition is not kept: `Loader::settle` releases it at once.
    #[inline]
    pub(super) fn accept(&mut self, acquisition: u64, count: u32) -> u32 {
        self.read = None;
        let slot = self.acqs.len() as u32;
        self.acqs.push((count > 0).then_some(acquisition));
        slot
    }

    /// Stages a chain's or full read's page read forward, after those staged so far; it
    /// enters the view when the request commits.
    #[inline]
    pub(super) fn stage(
        &mut self,
        request: u64,
        slot: u32,
        acquisition: u64,
        count: u32,
        end_cursor: Cursor,
    ) {
        let start = self.base_offset + self.staged_items;
        self.staged.push(Page {
            acquisition,
            count,
            epoch: self.epoch,
            start,
            end_cursor,
            request,
            slot,
            dirty: false,
        });
        self.staged_items += count as u64;
    }

    /// Stages a page read backward, before those staged backward so far. Its items end where
    /// the farthest staged page (or the anchor) starts; its position is set at the commit.
    #[inline]
    pub(super) fn stage_back(&mut self, request: u64, slot: u32, acquisition: u64, count: u32) {
        self.staged_back.push(Page {
            acquisition,
            count,
            epoch: self.epoch,
            start: 0,
            end_cursor: self.back_cursor.clone(),
            request,
            slot,
            dirty: false,
        });
        self.staged_back_items += count as u64;
    }

    /// Drops the staged pages (their acquisitions stay with the request).
    #[inline]
    pub(super) fn clear_staged(&mut self, cursors: &mut CursorPool) {
        self.staged_items = 0;
        self.staged_back_items = 0;
        // Most records come here with nothing staged (a commit took the pages, an overtaken
        // chain staged none): no drain is set up for an empty list.
        if !self.staged.is_empty() {
            for p in self.staged.drain(..) {
                cursors.recycle(p.end_cursor);
            }
        }
        if !self.staged_back.is_empty() {
            for p in self.staged_back.drain(..) {
                cursors.recycle(p.end_cursor);
            }
        }
    }

    /// The request settled and none of its pages will be shown (stale, overtaken and
    /// abandoned, or a ranged repair that could not rejoin): drops what it staged and hands
    /// back every acquisition it holds now, not when the ledger retires it, so that no page
    /// is held outside the view, a running repair and a failed read kept for its retry.
    #[inline]
    pub(super) fn discard(&mut self, cursors: &mut CursorPool, out: &mut Outbox) {
        self.clear_staged(cursors);
        for acq in self.acqs.iter_mut() {
            if let Some(a) = acq.take() {
                out.release(a);
            }
        }
    }

    /// How many pages fit before either vector grows.
    #[inline]
    pub(super) fn room(&self) -> usize {
        self.staged.capacity().min(self.acqs.capacity())
    }
}

/// The live requests' records, by ledger request id.
#[derive(Clone, Debug, Default)]
pub(super) struct Requests {
    map: HashMap<u64, Box<Work>>,
    /// The newest chain or full read's record, kept out of the map: it is the one a steady
    /// stream's answers step (about 85% of them at 100 pages), and finding it is one compare
    /// of its id instead of a hash lookup. An older one moves into the map when a newer one
    /// starts (a pointer: records are boxed).
    hot: Option<(u64, Box<Work>)>,
    /// The chain and full reads a window move may still trim, so that it looks at them
    /// without walking every live request: the one running, and those an invalidation
    /// overtook that still stage more than one page. Kept loosely: retired and committed
    /// ids leave it when it is next walked (`trim_repairs`) or when it has doubled since
    /// (`insert`), so neither retiring nor inserting walks it each time.
    repairs: Vec<u64>,
    /// The length at which `insert` next prunes `repairs`.
    prune_at: usize,
}

impl Requests {
    /// The record of `request`, which the ledger holds live.
    #[inline]
    pub(super) fn live(&mut self, request: u64) -> &mut Work {
        self.get_mut(request).expect("a read's request is live")
    }

    /// The record of `request`, if it is live.
    #[inline]
    pub(super) fn get(&self, request: u64) -> Option<&Work> {
        find(&self.map, &self.hot, request)
    }

    /// The record of `request`, if it is live, to change.
    #[inline]
    pub(super) fn get_mut(&mut self, request: u64) -> Option<&mut Work> {
        find_mut(&mut self.map, &mut self.hot, request)
    }

    /// Every live record, with its request id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &Work)> + '_ {
        self.map
            .iter()
            .map(|(&id, w)| (id, &**w))
            .chain(self.hot.iter().map(|(id, w)| (*id, &**w)))
    }

    /// Records a new request (its id is fresh: the ledger never reuses one), and returns its
    /// record where the map keeps it, so that the caller fills it in place (no second lookup).
    #[inline]
    pub(super) fn insert(&mut self, request: u64, w: Box<Work>) -> &mut Work {
        if w.kind != super::Kind::Finite {
            if self.repairs.len() + 1 >= self.prune_at {
                // Pruned before the new id joins, which is judged by the same rule.
                let (map, hot) = (&self.map, &self.hot);
                self.repairs
                    .retain(|id| find(map, hot, *id).is_some_and(|w| w.in_view == 0));
                if w.in_view == 0 {
                    self.repairs.push(request);
                }
                self.prune_at = (2 * self.repairs.len()).max(16);
            } else {
                self.repairs.push(request);
            }
            if let Some((old, w)) = self.hot.take() {
                self.map.insert(old, w);
            }
            return &mut self.hot.insert((request, w)).1;
        }
        match self.map.entry(request) {
            std::collections::hash_map::Entry::Vacant(v) => v.insert(w),
            std::collections::hash_map::Entry::Occupied(o) => {
                let slot = o.into_mut();
                *slot = w;
                slot
            }
        }
    }

    /// Runs `trim` on each chain or full read a window move may still trim; `trim` returns
    /// whether the read may need trimming at a later move (ids it says no to, and retired
    /// ones, are forgotten).
    pub(super) fn trim_repairs(&mut self, mut trim: impl FnMut(&mut Work) -> bool) {
        let (map, hot) = (&mut self.map, &mut self.hot);
        self.repairs
            .retain(|id| find_mut(map, hot, *id).is_some_and(&mut trim));
        self.prune_at = (2 * self.repairs.len()).max(16);
    }

    #[inline]
    pub(super) fn remove(&mut self, request: u64) -> Option<Box<Work>> {
        match &self.hot {
            Some((id, _)) if *id == request => self.hot.take().map(|(_, w)| w),
            _ => self.map.remove(&request),
        }
    }

    /// The pages in `slots` of `request` left the view: their acquisitions are handed back
    /// now (nothing shows them), not when the request retires.
    #[inline]
    pub(super) fn release_pages(
        &mut self,
        request: u64,
        slots: impl Iterator<Item = u32>,
        out: &mut Outbox,
    ) {
        if let Some(w) = self.get_mut(request) {
            for slot in slots {
                w.in_view -= 1;
                if let Some(acq) = w.acqs[slot as usize].take() {
                    out.release(acq);
                }
            }
        }
    }

    /// Page `p` was dropped from the view: its acquisition is handed back now, not when its
    /// request retires.
    #[inline]
    pub(super) fn drop_page(&mut self, p: &Page, out: &mut Outbox) {
        if let Some(w) = self.get_mut(p.request) {
            w.in_view -= 1;
            if let Some(acq) = w.acqs[p.slot as usize].take() {
                out.release(acq);
            }
        }
    }

    /// Takes the acquisition in `slot` of `request`'s list for a page that moves to another
    /// request (a ranged repair adopting the pages it keeps); `None` if it is gone.
    pub(super) fn take_for(&mut self, request: u64, slot: u32) -> Option<u64> {
        let w = self.get_mut(request)?;
        w.in_view = w.in_view.saturating_sub(1);
        w.acqs.get_mut(slot as usize).and_then(Option::take)
    }

    /// Hands back every acquisition, request by request in id order, and forgets the records.
    pub(super) fn release_all(&mut self, out: &mut Outbox) {
        let mut ids: Vec<u64> = self.iter().map(|(id, _)| id).collect();
        ids.sort_unstable();
        for id in ids {
            let w = self.remove(id).expect("listed");
            out.release_all(&w.acqs);
        }
        self.repairs.clear();
    }
}

/// The record of `request` in `map` or `hot`.
#[inline]
fn find<'a>(
    map: &'a HashMap<u64, Box<Work>>,
    hot: &'a Option<(u64, Box<Work>)>,
    request: u64,
) -> Option<&'a Work> {
    match hot {
        Some((id, w)) if *id == request => Some(w),
        _ => map.get(&request).map(|w| &**w),
    }
}

/// [`find`], to change.
#[inline]
fn find_mut<'a>(
    map: &'a mut HashMap<u64, Box<Work>>,
    hot: &'a mut Option<(u64, Box<Work>)>,
    request: u64,
) -> Option<&'a mut Work> {
    match hot {
        Some((id, w)) if *id == request => Some(w),
        _ => map.get_mut(&request).map(|w| &mut **w),
    }
}

/// The checker's canonical form: every field, ids by class.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Work {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::Class;
        let Work {
            kind,
            epoch,
            acqs,
            in_view,
            read,
            staged,
            staged_items,
            staged_back,
            staged_back_items,
            step,
            direction,
            target,
            back_target,
            base_offset,
            base_cursor,
            back_cursor,
            tail,
            reached_end,
            reached_start,
            jump,
            resume_at,
            ranged,
            until,
            resumed_stale,
            counted,
            overshot,
            truncated,
            cut_items,
            cut_cursor,
        } = self;
        kind.canon(e);
        e.id(Class::Epoch, *epoch);
        e.seq(acqs, |e, a| e.opt(a, |e, a| e.id(Class::Acquisition, *a)));
        in_view.canon(e);
        e.opt(read, |e, r| e.id(Class::Read, *r));
        staged.canon(e);
        e.num(*staged_items);
        staged_back.canon(e);
        e.num(*staged_back_items);
        step.canon(e);
        direction.canon(e);
        for n in [target, back_target, base_offset] {
            e.num(*n);
        }
        for c in [base_cursor, back_cursor, tail] {
            c.canon(e);
        }
        for b in [reached_end, reached_start, jump] {
            b.canon(e);
        }
        resume_at.canon(e);
        ranged.canon(e);
        until.canon(e);
        resumed_stale.canon(e);
        e.opt(counted, |e, n| e.num(*n));
        overshot.canon(e);
        truncated.canon(e);
        e.num(*cut_items);
        cut_cursor.canon(e);
    }
}

/// The checker's canonical form: the records by request id, and the repairs a window move
/// may trim (kept loosely, as the loader keeps them).
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Requests {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::Class;
        let Requests {
            map: _,
            hot: _,
            repairs,
            prune_at,
        } = self;
        // Where a record is kept (the map or `hot`) is not state: by id, as one map.
        e.id_map(Class::Request, self.iter(), |e, w| w.canon(e));
        e.seq(repairs, |e, r| e.id(Class::Request, *r));
        prune_at.canon(e);
    }
}
