//! A worker: takes the next read, runs the host's load on it, and answers it; and what
//! happens when the load ends the worker's thread instead of returning.

use super::counts::Back;
use super::sync::{mutant, thread_local, Instant, Mutant};
use super::{port, Feed, Gone, Job, Loaded, Outcome, Problem, Source, Took};
use std::cell::Cell;
use std::sync::atomic::Ordering;

thread_local! {
    /// The feed whose load this thread is running (its address), or 0.
    static IN_LOAD: Cell<usize> = const { Cell::new(0) };
    /// The feed whose read this worker is answering (its address), or 0, and the first read
    /// that answer issued: kept for this worker, which loads it next, with no hand-off to
    /// another thread (the loader issues most reads one after another, each from the answer
    /// before it).
    static CHAIN: Cell<(usize, Option<u64>)> = const { Cell::new((0, None)) };
    /// The feed whose worker this thread is (its address) and the worker's id, or 0.
    static WORKER: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
    /// The feed whose read this worker is answering (its address; counted in `answering`),
    /// or 0. The host's `release` and `changed` run inside that answer.
    static ANSWERING: Cell<usize> = const { Cell::new(0) };
    /// The feed a host's action on this thread is for (its address), and how deep: the reads
    /// it issues are queued, and announced to the workers once it ends ([`Feed::acted`]).
    static ACTING: Cell<(usize, u32)> = const { Cell::new((0, 0)) };
}

/// A host's action on `feed` begins on this thread ([`Feed::will_act`]). Inside another
/// feed's action (one feed's callback acting on another), nothing is kept: its reads go at
/// once.
pub(super) fn act_begins<S: Source>(feed: &Feed<S>) {
    let me = feed as *const Feed<S> as usize;
    ACTING.with(|c| match c.get() {
        (0, _) => c.set((me, 1)),
        (f, n) if f == me => c.set((f, n + 1)),
        _ => {}
    });
}

/// A host's action on `feed` ends on this thread: true when the thread is in none of its
/// actions any more (the reads they queued are to be announced).
pub(super) fn act_ends<S: Source>(feed: &Feed<S>) -> bool {
    let me = feed as *const Feed<S> as usize;
    ACTING.with(|c| match c.get() {
        (f, n) if f == me && n > 1 => {
            c.set((f, n - 1));
            false
        }
        (f, _) if f == me => {
            c.set((0, 0));
            true
        }
        _ => true,
    })
}

/// Whether the calling thread is inside a host's action on `feed`.
pub(super) fn acting<S: Source>(feed: &Feed<S>) -> bool {
    ACTING.with(|c| c.get().0 == feed as *const Feed<S> as usize)
}

/// The worker of `feed` the calling thread is, if it is one.
pub(super) fn worker_of<S: Source>(feed: &Feed<S>) -> Option<u64> {
    match WORKER.with(|c| c.get()) {
        (f, id) if f == feed as *const Feed<S> as usize => Some(id),
        _ => None,
    }
}

/// How many of `feed`'s running loads and answers the calling thread is in (0 or 1): a
/// close made from inside one cannot wait for it.
pub(super) fn own_share<S: Source>(feed: &Feed<S>) -> usize {
    let me = feed as *const Feed<S> as usize;
    usize::from(IN_LOAD.with(|c| c.get()) == me || ANSWERING.with(|c| c.get()) == me)
}

/// Whether the calling thread is giving one of `feed`'s answers (0 or 1): a wait for
/// quiescence made from inside one does not wait for it.
pub(super) fn own_answer<S: Source>(feed: &Feed<S>) -> usize {
    usize::from(ANSWERING.with(|c| c.get()) == feed as *const Feed<S> as usize)
}

/// Keeps read `id`, just issued on this thread, for this worker if it is answering one of
/// `feed`'s reads and keeps none yet; false otherwise (it goes to the queue).
pub(super) fn chain<S: Source>(feed: &Feed<S>, id: u64) -> bool {
    CHAIN.with(|c| match c.get() {
        (f, None) if f == feed as *const Feed<S> as usize => {
            c.set((f, Some(id)));
            true
        }
        _ => false,
    })
}

/// This thread's chain, as [`open_chain`] found it: [`close_chain`] puts it back.
pub(super) type Chain = (usize, Option<u64>);

/// No chain open.
pub(super) const NO_CHAIN: Chain = (0, None);

/// Opens this thread's chain for an answer to one of `feed`'s reads: the first read that
/// answer issues is kept for this thread ([`chain`]). Returns the chain it replaces (another
/// feed's answer this one is nested in: a hosted-mode answer given from inside a callback).
pub(super) fn open_chain<S: Source>(feed: &Feed<S>) -> Chain {
    CHAIN.with(|c| c.replace((feed as *const Feed<S> as usize, None)))
}

/// Closes this thread's chain, putting `outer` back: the read kept for it, if any.
pub(super) fn close_chain(outer: Chain) -> Option<u64> {
    CHAIN.with(|c| c.replace(outer)).1
}

/// Armed while a load runs: dropped armed, the load ended its thread (a forced unwind runs
/// this on its way out) and the read must be answered by someone else.
struct InLoad<'a, S: Source> {
    feed: &'a Feed<S>,
    worker: u64,
    read_id: u64,
    armed: bool,
}

impl<S: Source> Drop for InLoad<'_, S> {
    fn drop(&mut self) {
        IN_LOAD.with(|c| c.set(0));
        if !self.armed {
            return;
        }
        self.feed.tally.load_ended();
        self.feed.tally.failed();
        let mut st = self.feed.state();
        st.running -= 1;
        // Its read, still unanswered, is failed by the supervisor, which also joins this
        // thread and starts another.
        let read = st.slots.remove(&self.read_id).map(|_| self.read_id);
        st.hinted.remove(&self.read_id);
        if let Some(w) = st.workers.iter_mut().find(|w| w.id == self.worker) {
            w.done = true;
        }
        st.surplus.remove(&self.worker);
        st.lost.push(Gone {
            worker: self.worker,
            read,
            replace: true,
        });
        st.wake = true;
        drop(st);
        self.feed.timer.notify_all();
        self.feed.changed.notify_all();
    }
}

/// Marks worker `me` as holding a read (from taking one until it asks for the next).
fn set_busy<R>(st: &mut super::State<R>, me: u64, busy: bool) {
    if let Some(w) = st.workers.iter_mut().find(|w| w.id == me) {
        w.busy = busy;
    }
}

impl<S: Source> Feed<S> {
    /// A worker thread's life: loads until the feed closes.
    pub(super) fn work(&self, me: u64) {
        WORKER.with(|c| c.set((self as *const Feed<S> as usize, me)));
        while let Some(read) = self.next_read(me) {
            let id = read.read_id();
            let mut guard = InLoad {
                feed: self,
                worker: me,
                read_id: id,
                armed: true,
            };
            IN_LOAD.with(|c| c.set(self as *const Feed<S> as usize));
            let loaded = self.source.load(&read);
            IN_LOAD.with(|c| c.set(0));
            self.count_outcome(&loaded);
            guard.armed = false;
            drop(guard);
            open_chain(self);
            self.answer(&read, loaded);
        }
    }

    /// The next read to load, or `None` once the feed closes (the worker is then done).
    fn next_read(&self, me: u64) -> Option<S::Read> {
        let chained = close_chain(NO_CHAIN);
        let mut st = self.state();
        set_busy(&mut st, me, false);
        if let Some(id) = chained {
            if !st.closing && !st.surplus.contains(&me) {
                if let Some(slot) = st.slots.get_mut(&id) {
                    if let Some(read) = slot.read.take() {
                        let now = Instant::now();
                        slot.started = Some((now, me));
                        st.running += 1;
                        self.tally.load_started();
                        set_busy(&mut st, me, true);
                        self.started_load(st, now);
                        return Some(read);
                    }
                }
            } else if st.slots.contains_key(&id) {
                // Not for this worker after all: to the queue.
                st.queue.push_back(id);
                self.work.notify_one();
            }
        }
        let mut woke = false;
        loop {
            if st.closing {
                if let Some(w) = st.workers.iter_mut().find(|w| w.id == me) {
                    w.done = true;
                }
                return None;
            }
            if st.surplus.remove(&me) {
                // Its load outlived the timeout and another worker took its place: it leaves.
                if let Some(w) = st.workers.iter_mut().find(|w| w.id == me) {
                    w.done = true;
                }
                st.lost.push(Gone {
                    worker: me,
                    read: None,
                    replace: false,
                });
                st.wake = true;
                drop(st);
                self.timer.notify_all();
                return None;
            }
            while let Some(id) = st.queue.pop_front() {
                // A read cancelled while queued has no slot (or no read) left.
                if let Some(slot) = st.slots.get_mut(&id) {
                    if let Some(read) = slot.read.take() {
                        let now = Instant::now();
                        slot.started = Some((now, me));
                        st.running += 1;
                        self.tally.load_started();
                        set_busy(&mut st, me, true);
                        self.started_load(st, now);
                        return Some(read);
                    }
                }
            }
            if woke {
                st.futile_wakes += 1;
            }
            st = self.work.wait(st).unwrap_or_else(|e| e.into_inner());
            woke = true;
        }
    }

    /// Counts what a load returned: a page handed out, or a failure.
    pub(super) fn count_outcome(&self, loaded: &Outcome) {
        match loaded {
            Outcome::Page(_) | Outcome::Refused { .. } => self.tally.handed_out(),
            Outcome::Failed => self.tally.failed(),
        }
    }

    /// Answers `read` with what its load returned, unless a cancel hint answered it first
    /// (then the page goes back to the host).
    pub(super) fn answer(&self, read: &S::Read, loaded: Outcome) {
        let id = read.read_id();
        let mine = {
            let mut st = self.state();
            st.running -= 1;
            let mine = st.slots.remove(&id).is_some();
            st.hinted.remove(&id);
            // Counted until the answer is given, or the page handed back (the host's
            // `release` runs in both): a close waits for it, whether or not the read was mine.
            st.answering += 1;
            mine
        };
        // Another feed's answer this one is nested in (a hosted-mode answer given from inside
        // a callback) is that feed's again once this one is given.
        let outer = ANSWERING.with(|c| c.replace(self as *const Feed<S> as usize));
        let urgent = match (mine, self.ledger()) {
            (true, Some(ledger)) => match loaded {
                Outcome::Refused { acquisition, code } => {
                    self.source.release(acquisition);
                    self.tally.given_back(Back::Refused(code));
                    self.state().problem = Some(Problem::Refused(code));
                    ledger.fail(id);
                    true
                }
                Outcome::Failed => {
                    // The backoff is timed from the loader's clock: bring it up to now.
                    ledger.tick(self.now_ms());
                    ledger.fail(id);
                    true
                }
                Outcome::Page(page) if page.count > read.limit() => {
                    self.source.release(page.acquisition);
                    self.tally.given_back(Back::OverLimit);
                    self.state().problem = Some(Problem::CountOverLimit);
                    ledger.fail(id);
                    true
                }
                Outcome::Page(page) => match ledger.settle(
                    id,
                    page.acquisition,
                    page.count,
                    &page.next_cursor,
                    page.end_of_source,
                ) {
                    Ok(took) => {
                        let stalled = took == Took::CursorStalled;
                        self.tally.accepted(stalled);
                        if stalled || took == Took::Current {
                            self.stalled.store(stalled, Ordering::Relaxed);
                        }
                        stalled
                    }
                    Err(code) => {
                        self.source.release(page.acquisition);
                        // A read the loader answered already needs nothing more: the page
                        // goes back, and nothing is wrong with the load.
                        let closing = self.state().closing;
                        self.tally
                            .given_back(if port::answered_elsewhere(code) || closing {
                                Back::Late
                            } else {
                                Back::Refused(code)
                            });
                        if !port::answered_elsewhere(code) && !closing {
                            self.state().problem = Some(Problem::Refused(code));
                            ledger.fail(id);
                        }
                        true
                    }
                },
            },
            _ => {
                match loaded {
                    Outcome::Page(Loaded { acquisition, .. })
                    | Outcome::Refused { acquisition, .. } => {
                        if !mutant(Mutant::DropLatePage) {
                            self.source.release(acquisition);
                        }
                        self.tally.given_back(Back::Late);
                    }
                    Outcome::Failed => {}
                }
                false
            }
        };
        ANSWERING.with(|c| c.set(outer));
        // Counted running until its page is accounted for (accepted or given back), and
        // before a close waiting for this answer can return.
        self.tally.load_ended();
        let mut st = self.state();
        st.answering -= 1;
        if let Some(me) = worker_of(self) {
            // Done with this read: from here to its next one, the worker holds nothing.
            set_busy(&mut st, me, false);
        }
        let closing = st.closing;
        // The last answer given, and no read held (none issued by this answer, say): the
        // loader may be quiescent now, so the generation moves (a waiter between its look at
        // the loader and its sleep sees it) and the waiters are woken. While a read is held
        // the loader is not quiescent: waking them on every answer of a chain cost each
        // answer a thread switch (as for the loader's `changed`: [`Feed::on_changed`]).
        let last = st.answering == 0 && st.slots.is_empty();
        if urgent || last {
            st.wake |= urgent;
            st.generation += 1;
        }
        let settled = last && st.settle_waiters > 0;
        drop(st);
        // Waiters for quiescence hear the loader's `changed` and the last answer given; a
        // closer and the clock hear this.
        if urgent || closing || settled {
            self.changed.notify_all();
        }
        if urgent {
            self.timer.notify_all();
        }
    }
}
