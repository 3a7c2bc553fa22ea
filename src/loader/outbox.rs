//! What goes out to the host: the [`Effect`]s queued for it, in order, and the [`Stats`]
//! that tally them and the answers.

use super::reads::Read;
use super::requests::Acqs;

/// What the loader asks of its host, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Perform this read and answer it once.
    Issue(Read),
    /// The loader is done with this acquisition: free it. Sent exactly once per accepted one.
    Release {
        /// The host's token, as it was given to `settle`.
        acquisition: u64,
    },
    /// This read's answer is no longer needed (it was superseded, a far start let it go, or
    /// the loader closed); the host may abort it. Answering it anyway is fine: the answer is
    /// classified stale.
    Cancel {
        /// The read to abort.
        read_id: u64,
    },
    /// The view or the ledger state changed.
    Changed,
}

/// Counters for reports and demos.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Reads issued, by kind: finite, chain, full.
    pub issued: [u64; 3],
    /// Answers classified [`Answer::Current`](super::Answer::Current).
    pub answered_current: u64,
    /// Answers classified [`Answer::Stale`](super::Answer::Stale).
    pub answered_stale: u64,
    /// Failures of the loader's own reads (recorded, waiting for a retry).
    pub failed_own: u64,
    /// Failures of superseded reads (they only raised the debt).
    pub failed_stale: u64,
    /// Answers whose cursor did not advance.
    pub cursor_stalls: u64,
    /// Retries the backoff timer started.
    pub retries_auto: u64,
    /// Retries the host started (`retry`, or a window move or a jump with a failure
    /// recorded).
    pub retries_explicit: u64,
    /// Answers accepted: acquisitions the loader took ownership of.
    pub accepted: u64,
    /// Acquisitions handed back through [`Effect::Release`].
    pub released: u64,
    /// [`Effect::Cancel`]s sent.
    pub cancels: u64,
    /// Reads issued backward (also counted in `issued`).
    pub issued_backward: u64,
    /// Items the accepted answers held, in every direction.
    pub items_read: u64,
    /// Times the view was renumbered and the window moved with it (see `Loader::window`).
    pub renumbered: u64,
    /// Jumps (`Loader::jump`).
    pub jumps: u64,
    /// Retries that resumed a failed chain or full read at its failed step, keeping the
    /// steps that succeeded.
    pub resumed: u64,
    /// Reads let go of: abandoned by the host (`Loader::abandon`, or `fail` on a hinted
    /// read), timed out (`read_timeout_ms`), or a repair's read in flight that a far move
    /// or a jump made unneeded.
    pub abandoned: u64,
    /// Of those, the ones that timed out.
    pub timed_out: u64,
    /// Answers to reads already let go of: stale, their acquisitions released at once.
    pub late_answers: u64,
    /// Ranged invalidations (`Loader::invalidate_range`).
    pub ranged_invalidations: u64,
    /// Ranged repairs that committed, rejoining the pages kept around what they re-read
    /// (those that re-read nothing included).
    pub ranged_repairs: u64,
    /// Retries that read a failed page again (a finite read) instead of the full source: a
    /// page read's own failure with nothing else owed, retried with the window where it was
    /// and while that read is still the one the window needs (no window move or jump since
    /// its issue).
    /// Each is counted in `retries_auto` or `retries_explicit` too.
    pub retries_page: u64,
    /// Window moves far from the held pages that started at a known cursor (the memo, the
    /// source's start, or `locate`) instead of walking.
    pub far_jumps: u64,
    /// `locate` answers that gave a cursor.
    pub located: u64,
    /// `locate` answers that said unknown (or gave a cursor too long).
    pub locate_unknown: u64,
}

/// The effects queued for the host, the counters, and what was last announced.
#[derive(Clone, Debug, Default)]
pub(super) struct Outbox {
    effects: Vec<Effect>,
    pub(super) stats: Stats,
    /// The ledger's change count when `Changed` was last announced.
    announced: u64,
    /// Whether a `Changed` is among the queued effects: an announcement looks for it in the
    /// queue only then, not on every one.
    changed_queued: bool,
}

impl Outbox {
    /// Asks the host to perform `read`.
    #[inline(always)]
    pub(super) fn issue(&mut self, read: Read) {
        self.stats.issued[read.kind as usize] += 1;
        self.stats.issued_backward += u64::from(read.direction == super::Direction::Backward);
        self.effects.push(Effect::Issue(read));
    }

    /// Hands `acquisition` back to the host.
    #[inline]
    pub(super) fn release(&mut self, acquisition: u64) {
        super::pools::push_in_place(&mut self.effects, || Effect::Release { acquisition });
        self.stats.released += 1;
    }

    /// Hands back every acquisition a request still holds, in the order they were accepted.
    #[inline]
    pub(super) fn release_all(&mut self, acqs: &Acqs) {
        for acq in acqs.iter().flatten() {
            self.release(*acq);
        }
    }

    /// Tells the host that read `read_id`'s answer is no longer needed.
    #[inline]
    pub(super) fn cancel(&mut self, read_id: u64) {
        self.effects.push(Effect::Cancel { read_id });
        self.stats.cancels += 1;
    }

    /// Announces `Changed` if the view changed or the ledger moved since the last
    /// announcement. Compared with the last announcement, not with the start of the event:
    /// the event's own ledger call ran before the pump.
    #[inline]
    pub(super) fn announce(&mut self, view_changed: bool, ledger_changes: u64) {
        if view_changed || ledger_changes != self.announced {
            self.announced = ledger_changes;
            self.changed();
        }
    }

    /// Announces `Changed` unconditionally (at close). The effects a host receives in one
    /// call hold at most one `Changed`, after the others: one still queued from an earlier
    /// call (a starting point's, queued before the host had a handle) moves to the end.
    pub(super) fn changed(&mut self) {
        if self.changed_queued {
            if let Some(at) = self.effects.iter().position(|e| *e == Effect::Changed) {
                self.effects.remove(at);
            }
        }
        self.effects.push(Effect::Changed);
        self.changed_queued = true;
    }

    /// The queued effects, still queued.
    pub(super) fn queued(&self) -> &[Effect] {
        &self.effects
    }

    /// The queued effects, handed over.
    pub(super) fn take(&mut self) -> Vec<Effect> {
        self.changed_queued = false;
        std::mem::take(&mut self.effects)
    }

    /// Moves the queued effects into `out`; see [`Loader::drain_effects_into`](super::Loader::drain_effects_into).
    #[inline]
    pub(super) fn drain_into(&mut self, out: &mut Vec<Effect>) {
        self.changed_queued = false;
        if out.is_empty() {
            std::mem::swap(out, &mut self.effects);
        } else {
            self.append_to(out);
        }
    }

    /// [`Outbox::drain_into`] for a host that still holds effects: out of the host's loop,
    /// which `drain_into` is inlined into.
    #[cold]
    #[inline(never)]
    fn append_to(&mut self, out: &mut Vec<Effect>) {
        out.append(&mut self.effects);
    }
}

/// The checker's canonical form: nothing but how many effects are queued (between calls the
/// host has taken them all, but a starting point's wait for the first call). The counters
/// and the change count last announced only report; whether a `Changed` is queued follows
/// from the effects.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Outbox {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        let Outbox {
            effects,
            stats: _,
            announced: _,
            changed_queued: _,
        } = self;
        if e.form() == crate::check::canon::Form::Fields {
            e.num(effects.len() as u64);
        }
    }
}
