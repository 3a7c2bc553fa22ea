//! The loader's `issue` and `cancel` callbacks, as the feed takes them: a read joins the
//! queue; a hinted read is let go at once, queued or running.

use super::{Feed, Job, Slot, Source};

/// Cancel hints remembered for reads whose `issue` has not come: past this many (hints for
/// reads answered meanwhile), the memory is cleared; a read whose early hint was forgotten is
/// loaded, and its late answer is stale.
const EARLY_CANCELS: usize = 1024;

impl<S: Source> Feed<S> {
    /// The loader issued `read`: it waits for a worker.
    pub fn on_issue(&self, read: S::Read) {
        let id = read.read_id();
        let mut st = self.state();
        if st.closing {
            return; // the loader is being freed: no read needs an answer
        }
        if st.early_cancels.remove(&id) {
            drop(st);
            if let Some(l) = self.ledger() {
                l.abandon(id);
            }
            return;
        }
        st.slots.insert(
            id,
            Slot {
                read: Some(read),
                started: None,
            },
        );
        if super::work::chain(self, id) {
            return; // the worker answering on this thread loads it next
        }
        st.queue.push_back(id);
        if super::work::acting(self) {
            // Issued by a host's action on this thread: announced when it ends
            // ([`Feed::acted`]), so a worker's load does not start while the action still
            // delivers its effects (a Python host's `release` callbacks and a worker's load
            // took the interpreter's lock in turn, a thread switch each).
            st.deferred = true;
            return;
        }
        drop(st);
        self.work.notify_one();
        self.wake_host();
    }

    /// The loader no longer needs read `read_id`: it is let go now, free of cost. A load
    /// already running finishes, and its page goes back to the host.
    pub fn on_cancel(&self, read_id: u64) {
        let mut st = self.state();
        if st.closing {
            return;
        }
        let Some(slot) = st.slots.remove(&read_id) else {
            // Its issue is still on its way (or it was answered meanwhile).
            if st.early_cancels.len() >= EARLY_CANCELS {
                st.early_cancels.clear();
            }
            st.early_cancels.insert(read_id);
            return;
        };
        let freed = slot.started.is_some();
        if let Some(started) = slot.started {
            // Running: its worker is still the load's until it returns (or its timeout).
            st.hinted.insert(read_id, started);
            st.wake = true;
        }
        st.generation += 1;
        // Hosted mode: a read let go of no longer counts as held, so a queued one may be taken.
        let place = freed && self.hosted && !st.queue.is_empty();
        drop(st);
        if place {
            self.work.notify_one();
            self.wake_host();
        }
        if let Some(l) = self.ledger() {
            l.abandon(read_id);
        }
        self.changed.notify_all();
    }
}
