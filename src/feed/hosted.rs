//! Hosted mode: the host's own threads are the feed's workers. The feed starts no worker (its
//! supervisor, the clock, stays its own thread); a host thread takes a read as a worker does
//! ([`Feed::take`]), runs the load itself, and answers it on its own thread ([`Feed::give`]);
//! the first read that answer issues is kept for that same thread, which takes it at once
//! ([`Feed::give_and_take`]): a steady stream of reads costs no thread switch.
//!
//! Every rule is the worker's: a read taken is a load running (`running`, the counters, the
//! read timeout: one held past it is let go of, and the read issued in its place goes to
//! another host thread), a let-go read's late page goes back to the host, and a close waits
//! for, or lets go of, the reads the host's threads hold. This file owns only taking and giving,
//! and the `ready` hook that tells an event loop a read is there to take.

use super::sync::{mutant, Instant, Mutant};
use super::{
    wait_at_most, wait_on, work, Feed, NoJob, Outcome, Source, Spawn, StartError, State, HORIZON,
    POLL,
};
use std::sync::Arc;
use std::time::Duration;

/// The worker id a hosted read runs on: the host's threads have none (the feed's own workers
/// are numbered from 1), and none is replaced when its read is let go of.
const HOST: u64 = 0;

/// Starts the load of read `id` if it is still to load: its read, counted running.
/// Its read, and when its load started.
fn start<R>(st: &mut State<R>, id: u64) -> Option<(R, Instant)> {
    let slot = st.slots.get_mut(&id)?;
    let read = slot.read.take()?;
    let now = Instant::now();
    slot.started = Some((now, HOST));
    st.running += 1;
    Some((read, now))
}

/// How many reads the host's threads hold whose read is still needed (one let go of, by a
/// cancel hint or the read timeout, no longer counts: another may be taken in its place).
fn held<R>(st: &State<R>) -> usize {
    if mutant(Mutant::HeldCountsLetGo) {
        return st.running;
    }
    st.slots.values().filter(|s| s.started.is_some()).count()
}

impl<S: Source> Feed<S> {
    /// A feed in hosted mode over `source`: at most `workers` reads are taken at once (reads
    /// let go of not counted), each let go of after `load_timeout`. Nothing runs until
    /// [`Feed::start`], after [`Feed::attach`]; `spawner` starts only the supervisor.
    pub fn new_hosted(
        source: S,
        spawner: Box<dyn Spawn>,
        workers: u32,
        load_timeout: Option<Duration>,
    ) -> Result<Arc<Self>, StartError> {
        Self::make(source, spawner, workers, load_timeout, true)
    }

    /// Hosted mode: `ready` is called after a read is queued for the host's threads, and after
    /// a place to take one frees up (a held read let go of, by a cancel hint or its read
    /// timeout), on the thread that did it, with no lock of the feed's held: a host that
    /// waits on an event loop, rather than in [`Feed::take`], is told to take (without
    /// waiting: [`Feed::take`] with a zero timeout). It may be called when nothing is left to
    /// take (another thread took it first). Set it before [`Feed::start`]; false, and
    /// nothing changes, if it was set already or the feed is not in hosted mode.
    pub fn set_ready(&self, ready: Box<dyn Fn() + Send + Sync>) -> bool {
        self.hosted && self.ready.set(ready).is_ok()
    }

    /// Tells the host a read may be ready to take (hosted mode, with a `ready` hook).
    pub(super) fn wake_host(&self) {
        if let Some(ready) = self.ready.get() {
            ready();
        }
    }

    /// Hosted mode: whether read `read_id`, taken by a host thread and not yet answered, was
    /// let go of by a cancel hint (the loader no longer needs its answer: a host that can stop
    /// its load may; a page it still makes goes back to the source when answered). False for
    /// a read still needed, one let go of at its read timeout (its load may be the only one
    /// left to return), and after the close.
    pub fn hinted(&self, read_id: u64) -> bool {
        let st = self.state();
        !st.closing && st.hinted.contains_key(&read_id)
    }

    /// Whether the feed is in hosted mode.
    pub fn is_hosted(&self) -> bool {
        self.hosted
    }

    /// Hosted mode: the next read to load, waiting up to `timeout` (`None`: as long as it
    /// takes) for one. The calling thread runs its load and must answer it, exactly once,
    /// with [`Feed::give`] or [`Feed::give_and_take`], whatever the load came to.
    /// [`NoJob::Closed`] once the feed is closing, and on a feed not in hosted mode.
    pub fn take(&self, timeout: Option<Duration>) -> Result<S::Read, NoJob> {
        let end = timeout.map(|t| Instant::now() + t);
        let mut st = self.state();
        loop {
            if st.closing || !self.hosted {
                return Err(NoJob::Closed);
            }
            if held(&st) < self.workers as usize {
                while let Some(id) = st.queue.pop_front() {
                    // A read cancelled while queued has no slot (or no read) left.
                    if let Some((read, now)) = start(&mut st, id) {
                        self.tally.load_started();
                        self.started_load(st, now);
                        return Ok(read);
                    }
                }
            }
            // Every read queued, and every place freed, is announced on `work`: a thread with
            // a place waits for the announcement (a read a host's action issues is announced
            // when the action ends; a poll would take it before). Waiting for a place, it
            // looks every poll as well, a safety net for the supervisor's letting go.
            let most = if held(&st) < self.workers as usize {
                HORIZON
            } else {
                POLL
            };
            let Some(wait) = wait_at_most(end, most) else {
                return Err(NoJob::TimedOut);
            };
            st = wait_on(&self.work, st, wait);
        }
    }

    /// Hosted mode: answers `read` (taken with [`Feed::take`]) with what its load came to, on
    /// the calling thread: the loader takes the page, or, if the read was let go of meanwhile
    /// (a cancel hint, the read timeout, the close), the page goes to the source's `release`
    /// here. The read that answer issues goes to the queue, for any host thread.
    pub fn give(&self, read: &S::Read, loaded: Outcome) {
        let chained = self.give_here(read, loaded);
        let mut st = self.state();
        if let Some(id) = chained {
            if st.slots.contains_key(&id) {
                st.queue.push_back(id);
            }
        }
        // A place is free: a thread waiting for one takes what is queued.
        let wake = !st.queue.is_empty();
        drop(st);
        if wake {
            self.work.notify_one();
            self.wake_host();
        }
    }

    /// Hosted mode: [`Feed::give`], then the next read for this thread: the first one its
    /// answer issued, at once, or else [`Feed::take`]'s.
    pub fn give_and_take(
        &self,
        read: &S::Read,
        loaded: Outcome,
        timeout: Option<Duration>,
    ) -> Result<S::Read, NoJob> {
        if let Some(id) = self.give_here(read, loaded) {
            let mut st = self.state();
            if !st.closing {
                if let Some((read, now)) = start(&mut st, id) {
                    self.tally.load_started();
                    self.started_load(st, now);
                    return Ok(read);
                }
            }
        }
        self.take(timeout)
    }

    /// Answers `read` on this thread; the first read the answer issued, kept for this thread.
    fn give_here(&self, read: &S::Read, loaded: Outcome) -> Option<u64> {
        self.count_outcome(&loaded);
        let outer = work::open_chain(self);
        self.answer(read, loaded);
        work::close_chain(outer)
    }
}
