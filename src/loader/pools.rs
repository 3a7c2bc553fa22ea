//! Recycled buffers: long cursors' buffers and retired request records, kept so that the
//! steady state allocates nothing, and the sizing of a repair's vectors.
//!
//! A request's record is boxed: it is a few hundred bytes, and a start, a retire and the
//! pools move it as one pointer instead of copying it whole (about eight copies per request
//! when it was held by value).

use super::cursor::CursorPool;
use super::requests::{Acqs, Work};
use super::{Direction, Kind};

/// Retired finite records kept for reuse.
const SPARE_FINITE: usize = 64;
/// Retired chain and full records kept for reuse, besides the roomy one.
const SPARE_STEPS: usize = 32;
/// The most acquisitions' room a bare record keeps (see `Pools::keep_bare`).
const BARE_ACQS: usize = 4;

/// The loader's pools.
// Boxed records in vectors on purpose (`clippy::vec_box`): a record moves between the pools,
// the request map and `Loader::resume` as a pointer, not as a few hundred bytes.
#[allow(clippy::vec_box)]
#[derive(Clone, Debug, Default)]
pub(super) struct Pools {
    /// Buffers of long cursors.
    pub(super) cursors: CursorPool,
    /// Records of retired finite requests (small: one page each).
    finite: Vec<Box<Work>>,
    /// Records of retired chain and full requests (most of them were overtaken at their
    /// first step and are small).
    steps: Vec<Box<Work>>,
    /// Retired records past the two lists' bounds, emptied (their vectors let go): only the
    /// box is kept, so that a burst of requests as large as an earlier one allocates no
    /// record. As many as were ever live at once, as the request map's own table keeps.
    bare: Vec<Box<Work>>,
    /// The roomiest retired chain or full record: its vectors keep the capacity a repair of
    /// the whole view needed, so the next repair of the same view allocates nothing. Kept
    /// apart, so chain starts never take it and recycling never scans for it.
    roomy: Option<Box<Work>>,
}

impl Pools {
    /// A record for a new request, with nothing read yet: a retired one when one is pooled.
    #[inline]
    pub(super) fn work(&mut self, kind: Kind, epoch: u64) -> Box<Work> {
        let spare = if kind == Kind::Finite {
            self.finite.pop()
        } else {
            // Never the roomy record: in a burst of invalidations most chains are overtaken
            // at their first step and stay live until the next commit, and each would lock
            // the roomy record away from the chain that survives. That one takes the roomy
            // vectors when its first step is answered (`size_for_steps`).
            self.steps.pop()
        };
        match spare.or_else(|| self.bare.pop()) {
            Some(mut w) => {
                w.kind = kind;
                w.epoch = epoch;
                w
            }
            None => Box::new(Work::new(kind, epoch)),
        }
    }

    /// Gives a chain or full read that survived its first step room for `steps` pages, with
    /// the roomy record's vectors when they are roomier (no-op for a record that already
    /// fits). Not at the start: in a burst of invalidations most chains are overtaken at
    /// their first step, and sizing each of them for a 100,000-page view allocated megabytes
    /// per event.
    #[inline]
    pub(super) fn size_for_steps(&mut self, w: &mut Work, steps: usize) {
        if w.room() < steps {
            self.take_roomy(w);
        }
        size_for(&mut w.staged, steps);
        size_acqs_for(&mut w.acqs, steps);
    }

    /// Gives `w` the vectors of the roomy pooled record, if they have more room than `w`'s
    /// own, moving what `w` holds so far into them; the record, with `w`'s smaller vectors,
    /// joins the small ones. A repair of a big view thus reuses the vectors of the last one
    /// instead of allocating (and faulting in) fresh ones.
    fn take_roomy(&mut self, w: &mut Work) {
        let Some(spare) = self.roomy.as_mut() else {
            return;
        };
        if spare.room() <= w.room() {
            return;
        }
        debug_assert!(spare.staged.is_empty() && spare.acqs.is_empty());
        spare.staged.append(&mut w.staged);
        spare.acqs.append(&mut w.acqs);
        std::mem::swap(&mut spare.staged, &mut w.staged);
        std::mem::swap(&mut spare.acqs, &mut w.acqs);
        let spare = self.roomy.take().expect("checked");
        if self.steps.len() < SPARE_STEPS {
            self.steps.push(spare);
        } else {
            self.keep_bare(spare);
        }
    }

    /// Keeps a retired request's buffers for the next request.
    pub(super) fn recycle_work(&mut self, mut w: Box<Work>) {
        w.clear_staged(&mut self.cursors);
        self.cursors.recycle(std::mem::take(&mut w.base_cursor));
        self.cursors.recycle(std::mem::take(&mut w.back_cursor));
        self.cursors.recycle(std::mem::take(&mut w.tail));
        w.acqs.clear();
        w.in_view = 0;
        w.read = None;
        w.step = 0;
        w.direction = Direction::Forward;
        w.target = 0;
        w.back_target = 0;
        w.reached_end = false;
        w.reached_start = false;
        w.jump = false;
        w.resumed_stale = false;
        w.counted = None;
        w.overshot = false;
        w.truncated = false;
        w.cut_items = 0;
        if let Some(c) = w.cut_cursor.take() {
            self.cursors.recycle(c);
        }
        w.ranged = None;
        if let Some(c) = w.until.take() {
            self.cursors.recycle(c);
        }
        if let Some(c) = w.resume_at.take() {
            self.cursors.recycle(c);
        }
        if w.kind == Kind::Finite {
            if self.finite.len() < SPARE_FINITE {
                self.finite.push(w);
            } else {
                self.keep_bare(w);
            }
            return;
        }
        // The roomier of this record and the roomy one stays roomy; the other joins the
        // small ones, while there is room for it.
        let w = match &mut self.roomy {
            Some(r) if r.room() >= w.room() => w,
            roomy => match roomy.replace(w) {
                Some(old) => old,
                None => return,
            },
        };
        if self.steps.len() < SPARE_STEPS {
            self.steps.push(w);
        } else {
            self.keep_bare(w);
        }
    }

    /// Keeps a retired record past the lists' bounds as an empty box: its vectors go.
    #[cold]
    fn keep_bare(&mut self, mut w: Box<Work>) {
        // A few acquisitions' room stays: a finite read or a chain overtaken at its first
        // step accepts one.
        let acqs = if w.acqs.capacity() <= BARE_ACQS {
            std::mem::take(&mut w.acqs)
        } else {
            Acqs::new()
        };
        *w = Work::new(Kind::Finite, 0);
        w.acqs = acqs;
        self.bare.push(w);
    }
}

/// Gives a chain's or full read's vector, at its first step (a page or so in it), room for
/// `steps` entries. One that is too small is replaced, not grown: growing reallocates, and a
/// reallocation copies the whole old buffer, which for a record recycled from a slightly
/// smaller view is megabytes to keep one entry. The new one has an eighth to spare, so a view
/// that breathes around its size is not resized at every repair.
fn size_for<T>(v: &mut Vec<T>, steps: usize) {
    if v.capacity() < steps {
        let mut roomy = Vec::with_capacity(steps + steps / 8);
        roomy.append(v);
        *v = roomy;
    }
}

/// [`size_for`], for a request's acquisitions.
fn size_acqs_for(v: &mut Acqs, steps: usize) {
    if v.capacity() < steps {
        let mut roomy = Acqs::with_capacity(steps + steps / 8);
        roomy.append(v);
        *v = roomy;
    }
}

/// Pushes the value `make` builds onto `v`, growing `v` first (out of line) when it is full.
/// The value is built only once there is room for it, so the code generator can write it
/// straight into the vector's buffer: `Vec::push` builds it on the stack and copies it in,
/// since the buffer may move when it grows (for an `Effect::Release`, 72 bytes copied for
/// the 16 it uses).
#[inline(always)]
pub(super) fn push_in_place<T>(v: &mut Vec<T>, make: impl FnOnce() -> T) {
    if v.len() == v.capacity() {
        grow_one(v);
    }
    if v.len() < v.capacity() {
        v.push(make());
    } else {
        unreachable!("a vector grown by one has room for one");
    }
}

/// Room for one more in `v`: the rare case of [`push_in_place`].
#[cold]
#[inline(never)]
fn grow_one<T>(v: &mut Vec<T>) {
    v.reserve(1);
}
