//! The feed: a layer above the sans-IO [`crate::loader`] that runs the host's load function
//! itself. The loader stays free of threads and clocks; the feed owns both.
//!
//! A feed drives one loader (through a [`Ledger`]) on behalf of a host that gives only a
//! synchronous load ([`Source::load`]) and a release. It runs loads on worker threads of its
//! own, answers every read the loader issues exactly once (with the page, with a failure, or
//! by letting a cancelled read go), drives the backoff retries and read timeouts from a
//! monotonic clock, and says why it cannot settle when the host must act ([`Problem`]).
//!
//! The rules it follows are those of the Python `Feed`:
//! - a load that fails fails its read; the loader's backoff retries it (the supervisor ticks
//!   the loader when its deadline is due);
//! - a load that returns more items than its limit is a bug in the load: its page is released,
//!   the read failed, and no automatic retry follows until the host acts (a window move, a
//!   jump, an invalidation, a retry);
//! - a cursor that does not advance is the loader's `CursorStalled`: reported, retried by the
//!   backoff;
//! - the automatic retries spent with nothing in flight is reported as such;
//! - a cancel hint lets the read go at once (queued or running); a running load finishes and
//!   its page goes back to the host;
//! - a worker thread that ends inside a load (the host's `pthread_exit`) fails that read, and
//!   the supervisor joins the thread and starts another in its place.
//!
//! One file per concept: `port` (what the feed is plugged into), `work` (a worker: a load and
//! its answer), `hints` (issue and cancel from the loader), `supervise` (the clock, and
//! workers lost mid-load), `jobs` (job mode: the load handed to a thread the host owns),
//! `hosted` (hosted mode: the host's threads are the workers), this file (the shared state,
//! waiting, closing).

mod counts;
#[cfg(all(test, feature = "shuttle"))]
mod explore;
mod hints;
mod hosted;
mod jobs;
mod port;
mod supervise;
mod sync;
// The unit tests run on `std` threads: not under the `shuttle` build.
#[cfg(all(test, not(feature = "shuttle")))]
mod tests;
mod work;

pub use counts::{Counts, Tally};
pub use jobs::{Completed, Hub, NoJob, Pending};
pub use port::{
    answered_elsewhere, Job, Ledger, Loaded, Outcome, Source, Spawn, Status, Thread, Took,
    ALREADY_ANSWERED, UNKNOWN_READ,
};

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
/// The feed's clock: `std`'s, but for the `shuttle` build's virtual one.
pub(crate) use sync::Instant;
use sync::{mutant, Condvar, Mutant, Mutex, MutexGuard};

/// The most worker threads a feed runs.
pub const MAX_WORKERS: u32 = 256;

/// Why a feed cannot settle, or a wait ended without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A load returned more items than its read's limit: a bug in the load, not retried
    /// until the host acts.
    CountOverLimit,
    /// The loader refused a load's page with this result code (a cursor too long, say): a bug
    /// in the load, not retried until the host acts.
    Refused(i32),
    /// A load answered with the cursor it was given: the backoff retries it, but the host
    /// must fix the load.
    CursorStalled,
    /// Loads kept failing and the automatic retries are spent: nothing loads until the host
    /// acts.
    RetriesSpent,
    /// The wait's time ran out first.
    TimedOut,
    /// The feed is closed.
    Closed,
}

/// What a feed did not get to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// `workers` is 0 or above [`MAX_WORKERS`].
    Workers,
    /// A thread could not be started.
    Thread,
}

/// A worker thread, as the feed keeps it.
struct Worker {
    id: u64,
    thread: Option<Box<dyn Thread>>,
    /// Its loop ended: joining it does not wait for a load.
    done: bool,
    /// It took a read and has not come back for another: inside a load, or answering.
    busy: bool,
}

/// A read the loader issued that the feed has not answered.
struct Slot<R> {
    /// The read, until a worker takes it to load.
    read: Option<R>,
    /// When its load started, and on which worker.
    started: Option<(Instant, u64)>,
}

/// A worker that left the pool, for the supervisor to join.
struct Gone {
    worker: u64,
    /// The read it was loading when its thread ended, still to fail.
    read: Option<u64>,
    /// Start another worker in its place (not for one that left because a replacement
    /// already took its place).
    replace: bool,
}

/// What the feed's threads and callers share, under one lock.
struct State<R> {
    slots: HashMap<u64, Slot<R>>,
    queue: VecDeque<u64>,
    /// Cancel hints that came before their read's `issue`.
    early_cancels: HashSet<u64>,
    closing: bool,
    /// Loads running, and answers being given.
    running: usize,
    answering: usize,
    workers: Vec<Worker>,
    next_worker: u64,
    /// Workers that left: ended inside a load, or surplus after a load that outlived its
    /// timeout (a replacement took their place).
    lost: Vec<Gone>,
    /// Workers whose load was let go of: they leave when it returns.
    surplus: HashSet<u64>,
    /// Loads still running whose read a cancel hint let go of (by read id): when their load
    /// started, and on which worker. Past the load timeout, another worker takes the stuck
    /// one's place, as for a read still needed: hinted loads that never return must not hold
    /// every worker.
    hinted: HashMap<u64, (Instant, u64)>,
    problem: Option<Problem>,
    /// The supervisor is to look at the deadline again before it waits.
    wake: bool,
    /// When the supervisor, asleep, wakes by itself; `None` while it is awake (it looks at
    /// `wake` before it sleeps). What falls due before then wakes it
    /// ([`State::clock_needed`]); what falls due later does not cost it a thread switch.
    timer_until: Option<Instant>,
    /// Moves at every change that may end a wait for quiescence (the last answer given, a
    /// change with no read held, a failure, a host's act): a waiter looks again when it moved.
    generation: u64,
    /// Threads in `wait_quiescent`: woken by a change only while no read is unanswered (the
    /// loader cannot be quiescent before), and by a failure or a stall.
    settle_waiters: usize,
    /// Reads queued by a host's action not yet announced to the workers: [`Feed::acted`]
    /// announces them.
    deferred: bool,
    /// How many times a waiter for quiescence went to sleep: a chain of answers must not
    /// wake it at each one (`tests::a_chain_of_answers_does_not_wake_a_waiter_at_each`).
    settle_sleeps: u64,
    /// How many times a worker woke for a read and found none to take: an action wakes one
    /// worker per read it issued (`tests::an_action_wakes_one_worker_per_read_it_issues`).
    futile_wakes: u64,
}

impl<R> State<R> {
    /// Something falls due at `due` (a load's timeout): whether the supervisor, asleep past
    /// it, must be woken. An awake one is told to look again before it sleeps.
    fn clock_needed(&mut self, due: Instant) -> bool {
        match self.timer_until {
            None => {
                self.wake = true;
                false
            }
            Some(until) => due < until,
        }
    }
}

impl<S: Source> Feed<S> {
    /// A load started at `now`, under `st` (dropped here): the supervisor is woken if the
    /// load's timeout falls before it would wake by itself ([`State::clock_needed`]).
    fn started_load(&self, mut st: MutexGuard<'_, State<S::Read>>, now: Instant) {
        let late = self
            .load_timeout
            .is_some_and(|limit| st.clock_needed(now + limit));
        drop(st);
        if late {
            self.timer.notify_all();
        }
    }
}

/// A feed: the host's [`Source`], the loader's [`Ledger`], the threads, and their state.
pub struct Feed<S: Source> {
    source: S,
    ledger: OnceLock<Box<dyn Ledger>>,
    spawner: Box<dyn Spawn>,
    workers: u32,
    /// How long a load may run before its read is let go of (as the loader lets go of a
    /// superseded read the host never answers); `None`: as long as it takes.
    load_timeout: Option<Duration>,
    t0: Instant,
    state: Mutex<State<S::Read>>,
    /// Workers wait here for reads.
    work: Condvar,
    /// Waiters (quiescence, close) wait here for answers and changes.
    changed: Condvar,
    /// The supervisor waits here for its deadline.
    timer: Condvar,
    supervisor: Mutex<Option<Box<dyn Thread>>>,
    /// The latest answer was a stalled cursor (cleared by a current one, or the host acting).
    stalled: AtomicBool,
    /// The counters: shared, so that they outlive the feed.
    tally: Arc<Tally>,
    /// Hosted mode ([`Feed::new_hosted`]): the feed starts no worker; the host's threads take
    /// its reads ([`Feed::take`]) and answer them ([`Feed::give`]).
    hosted: bool,
    /// Hosted mode: called after a read is queued for the host's threads, or a place to take
    /// one frees up ([`Feed::set_ready`]), so a host that waits on an event loop rather than
    /// in [`Feed::take`] knows to take.
    ready: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

/// How long a waiter sleeps before it looks at the loader again, woken or not.
const POLL: Duration = Duration::from_millis(50);
/// How long the supervisor sleeps before it looks at the loader's deadline again.
const HORIZON: Duration = Duration::from_secs(1);

impl<S: Source> Feed<S> {
    /// A feed of `workers` threads over `source`, whose loads are let go of after
    /// `load_timeout`; nothing runs until [`Feed::start`], after [`Feed::attach`].
    pub fn new(
        source: S,
        spawner: Box<dyn Spawn>,
        workers: u32,
        load_timeout: Option<Duration>,
    ) -> Result<Arc<Self>, StartError> {
        Self::make(source, spawner, workers, load_timeout, false)
    }

    /// A feed of `workers` threads, or in hosted mode (`hosted`) of at most `workers` reads
    /// taken at once by the host's threads.
    fn make(
        source: S,
        spawner: Box<dyn Spawn>,
        workers: u32,
        load_timeout: Option<Duration>,
        hosted: bool,
    ) -> Result<Arc<Self>, StartError> {
        if workers == 0 || workers > MAX_WORKERS {
            return Err(StartError::Workers);
        }
        Ok(Arc::new(Feed {
            source,
            ledger: OnceLock::new(),
            spawner,
            workers,
            load_timeout,
            t0: Instant::now(),
            state: Mutex::new(State {
                slots: HashMap::new(),
                queue: VecDeque::new(),
                early_cancels: HashSet::new(),
                closing: false,
                running: 0,
                answering: 0,
                workers: Vec::new(),
                next_worker: 0,
                lost: Vec::new(),
                surplus: HashSet::new(),
                hinted: HashMap::new(),
                problem: None,
                wake: false,
                timer_until: None,
                generation: 0,
                settle_waiters: 0,
                settle_sleeps: 0,
                futile_wakes: 0,
                deferred: false,
            }),
            work: Condvar::new(),
            changed: Condvar::new(),
            timer: Condvar::new(),
            supervisor: Mutex::new(None),
            stalled: AtomicBool::new(false),
            tally: Arc::default(),
            hosted,
            ready: OnceLock::new(),
        }))
    }

    /// Plugs in the loader. Its callbacks may already reach the feed ([`Feed::on_issue`]):
    /// reads queue until [`Feed::start`].
    pub fn attach(&self, ledger: Box<dyn Ledger>) {
        let _ = self.ledger.set(ledger);
    }

    /// Starts the workers and the supervisor (in hosted mode, the supervisor only). On an error
    /// the threads started are stopped.
    pub fn start(self: &Arc<Self>) -> Result<(), StartError> {
        let own = if self.hosted { 0 } else { self.workers };
        for _ in 0..own {
            if !self.spawn_worker() {
                self.close(Some(Duration::ZERO));
                return Err(StartError::Thread);
            }
        }
        let me = Arc::clone(self);
        match self.spawner.spawn(Box::new(move || me.supervise())) {
            Some(t) => {
                *lock(&self.supervisor) = Some(t);
                Ok(())
            }
            None => {
                self.close(Some(Duration::ZERO));
                Err(StartError::Thread)
            }
        }
    }

    /// The feed's counters ([`Counts`]), shared: they stay readable after the feed is gone,
    /// and the loader's `release` counts into them too ([`Tally::released_by_loader`]).
    pub fn tally(&self) -> Arc<Tally> {
        Arc::clone(&self.tally)
    }

    /// The source the feed loads from.
    pub fn source(&self) -> &S {
        &self.source
    }

    fn ledger(&self) -> Option<&dyn Ledger> {
        self.ledger.get().map(|l| &**l)
    }

    fn state(&self) -> MutexGuard<'_, State<S::Read>> {
        lock(&self.state)
    }

    /// The feed's clock, in ms since it was made: monotonic.
    fn now_ms(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Starts one worker thread; false if the thread could not start.
    fn spawn_worker(self: &Arc<Self>) -> bool {
        let id = {
            let mut st = self.state();
            if st.closing {
                return false;
            }
            st.next_worker += 1;
            let id = st.next_worker;
            st.workers.push(Worker {
                id,
                thread: None,
                done: false,
                busy: false,
            });
            id
        };
        let me = Arc::clone(self);
        match self.spawner.spawn(Box::new(move || me.work(id))) {
            Some(t) => {
                let mut st = self.state();
                match st.workers.iter_mut().find(|w| w.id == id) {
                    Some(w) => w.thread = Some(t),
                    // Already lost and reaped: nothing to join.
                    None => t.detach(),
                }
                true
            }
            None => {
                self.state().workers.retain(|w| w.id != id);
                false
            }
        }
    }

    /// The host is about to act (move the window, jump, invalidate, retry): what stopped the
    /// feed may be over. Cleared before the action, not after it: an answer a host thread
    /// gives while the action runs (hosted mode, the read it issued) may find a new problem,
    /// which the action's end must not clear.
    pub fn will_act(&self) {
        work::act_begins(self);
        self.state().problem = None;
        self.stalled.store(false, Ordering::Relaxed);
    }

    /// The feed's clock now (ms, the loader's time base: the supervisor ticks the loader
    /// with it), for what the loader explains ("issued ... ago", "... from now") to move
    /// while loads run and a retry waits: the loader's own clock moves only at a deadline
    /// or a failure, and explaining must not tick it (a tick acts: it may issue reads).
    pub fn clock_now(&self) -> u64 {
        self.now_ms()
    }

    /// The host acted ([`Feed::will_act`] before it): the loader's deadline may have moved.
    pub fn acted(&self) {
        let announce = work::act_ends(self);
        let mut st = self.state();
        st.generation += 1;
        let deferred =
            announce && std::mem::take(&mut st.deferred) && !mutant(Mutant::AnnounceInAction);
        let queued = if deferred { st.queue.len() } else { 0 };
        // The clock: an awake supervisor looks at the loader's deadline again before it
        // sleeps; an asleep one is woken only if the action brought the deadline nearer.
        let asleep_until = st.timer_until;
        if asleep_until.is_none() {
            st.wake = true;
        }
        drop(st);
        if deferred {
            // The reads the action issued: to the workers now, one worker woken per read
            // (a worker that finds no place to take one goes back to sleep; a place freed
            // later wakes another).
            for _ in 0..queued.min(self.workers as usize) {
                self.work.notify_one();
            }
            self.wake_host();
        }
        if asleep_until.is_some_and(|until| self.deadline_before(until)) {
            self.timer.notify_all();
        }
        self.changed.notify_all();
    }

    /// Whether the loader's next deadline falls before `until`, when the supervisor wakes by
    /// itself. It wakes 1 ms past a deadline (`supervise`): the deadline it sleeps for is not
    /// before its own wake, only a nearer one is.
    fn deadline_before(&self, until: Instant) -> bool {
        let Some(d) = self.ledger().and_then(|l| l.next_deadline()) else {
            return false;
        };
        let until_ns = until.saturating_duration_since(self.t0).as_nanos();
        u128::from(d) * 1_000_000 + 2_000_000 < until_ns
    }

    /// How many times a waiter for quiescence went to sleep, since the feed was made.
    #[cfg(all(test, not(feature = "shuttle")))]
    pub(super) fn settle_sleeps(&self) -> u64 {
        self.state().settle_sleeps
    }

    /// How many times a worker woke and found no read to take, since the feed was made.
    #[cfg(all(test, not(feature = "shuttle")))]
    pub(super) fn futile_wakes(&self) -> u64 {
        self.state().futile_wakes
    }

    /// The loader's `changed` callback: wakes the waiters.
    pub fn on_changed(&self) {
        let mut st = self.state();
        st.generation += 1;
        // Inside one of this feed's answers, the answer's end wakes them (once it is given, if
        // no read is held then): the change comes before the issue of the read that answer
        // makes next, and a wake here was one per answer of a chain.
        let wake = st.settle_waiters > 0 && st.slots.is_empty() && work::own_answer(self) == 0;
        drop(st);
        if wake {
            self.changed.notify_all();
        }
    }

    /// Waits until the loader is quiescent and not revalidating (`Ok`), or `timeout` passed
    /// (`TimedOut`; `None` waits as long as it takes), or something only the host can fix
    /// keeps it from settling (the [`Problem`]).
    pub fn wait_quiescent(&self, timeout: Option<Duration>) -> Result<(), Problem> {
        let end = timeout.map(|t| Instant::now() + t);
        loop {
            let seen = self.state().generation;
            let ledger = self.ledger().ok_or(Problem::Closed)?;
            let s = ledger.status();
            if s.gone || self.state().closing {
                return Err(Problem::Closed);
            }
            if s.quiescent && !s.revalidating {
                // Quiescent once the answers being given are given (their loads counted
                // ended): an answer that made the loader quiescent is still on its way out
                // of the worker. One this thread is giving cannot be waited for.
                let mut st = self.state();
                if st.answering <= work::own_answer(self) {
                    st.early_cancels.clear();
                    return Ok(());
                }
            }
            if let Some(p) = self.state().problem {
                return Err(p);
            }
            if s.own_failure {
                if self.stalled.load(Ordering::Relaxed) {
                    return Err(Problem::CursorStalled);
                }
                if s.outstanding == 0 && (!s.armed || mutant(Mutant::SpentWhileArmed)) {
                    return Err(Problem::RetriesSpent);
                }
            }
            let mut wait = POLL;
            if let Some(end) = end {
                let now = Instant::now();
                if now >= end {
                    return Err(Problem::TimedOut);
                }
                wait = wait.min(end - now);
            }
            let mut st = self.state();
            if st.generation == seen {
                st.settle_waiters += 1;
                st.settle_sleeps += 1;
                let (mut st, _) = self
                    .changed
                    .wait_timeout(st, wait)
                    .unwrap_or_else(|e| e.into_inner());
                st.settle_waiters -= 1;
            }
        }
    }

    /// Stops the feed ([`Feed::shut`], then [`Feed::finish`] within `timeout`). Returns how
    /// many loads it left running.
    pub fn close(&self, timeout: Option<Duration>) -> usize {
        let end = timeout
            .filter(|_| !mutant(Mutant::IgnoreCloseTimeout))
            .map(|t| Instant::now() + t);
        self.shut();
        self.finish(end)
    }

    /// The first half of closing: no read starts from now on; the reads not started are
    /// dropped (the caller then frees the loader, which lets them go), idle workers end.
    /// False if the feed was closed already.
    pub fn shut(&self) -> bool {
        let mut st = self.state();
        if st.closing {
            return false;
        }
        st.closing = true;
        st.queue.clear();
        st.slots.clear();
        drop(st);
        self.work.notify_all();
        self.timer.notify_all();
        self.changed.notify_all();
        true
    }

    /// The second half: waits until `end` (`None`: as long as it takes) for the loads still
    /// running, joins every thread that is not inside a load (idle workers end at once: they
    /// were woken by [`Feed::shut`]), and lets the others go (each ends when its load
    /// returns, after handing the page back to the host). Returns how many loads it left
    /// running. Called from one of this feed's own threads (inside a load, or inside the
    /// host's `release` or `changed` while a worker answers or the clock ticks), it does not
    /// wait for that thread's own work, nor join that thread: it ends when the callback
    /// returns.
    pub fn finish(&self, end: Option<Instant>) -> usize {
        self.finish_holding(end, 0)
    }

    /// [`Feed::finish`] called by a thread that holds `held` of this feed's jobs (job mode:
    /// taken, not answered): it does not wait for those loads either, which it counts as left
    /// running.
    pub fn finish_holding(&self, end: Option<Instant>, held: usize) -> usize {
        let own = if mutant(Mutant::WaitForOwnThread) {
            held
        } else {
            work::own_share(self) + held
        };
        let me = work::worker_of(self);
        let answers = !mutant(Mutant::NoAnsweringWait);
        let mut st = self.state();
        while st.running + if answers { st.answering } else { 0 } > own {
            let Some(wait) = poll_wait(end) else { break };
            st = wait_on(&self.changed, st, wait);
        }
        let left = st.running;
        let workers = std::mem::take(&mut st.workers);
        st.lost.clear();
        drop(st);
        if let Some(t) = lock(&self.supervisor).take() {
            if supervise::supervisor_of(self) {
                t.detach();
            } else {
                t.join();
            }
        }
        for w in workers {
            if let Some(t) = w.thread {
                // A worker inside a load is let go (counted in `left`); every other one ends
                // at once, and is joined, so no idle thread outlives the close. The calling
                // thread's own worker ends when its callback returns.
                if Some(w.id) == me || (w.busy && !w.done) || mutant(Mutant::DetachIdle) {
                    t.detach();
                } else {
                    t.join();
                }
            }
        }
        left
    }
}

/// How long a waiter polling until `end` (`None`: no end) waits next: at most [`POLL`], and
/// `None` once `end` has passed.
fn poll_wait(end: Option<Instant>) -> Option<Duration> {
    wait_at_most(end, POLL)
}

/// How long to wait for `end` (`None`: no end), `most` at a time; `None` once it passed.
fn wait_at_most(end: Option<Instant>, most: Duration) -> Option<Duration> {
    match end {
        None => Some(most),
        Some(end) => {
            let now = Instant::now();
            (now < end).then(|| (end - now).min(most))
        }
    }
}

/// Waits on `cv` with `st` for up to `wait`, through a poisoning.
fn wait_on<'a, R>(
    cv: &Condvar,
    st: MutexGuard<'a, State<R>>,
    wait: Duration,
) -> MutexGuard<'a, State<R>> {
    cv.wait_timeout(st, wait)
        .map(|(g, _)| g)
        .unwrap_or_else(|e| e.into_inner().0)
}

/// Locks `m`, through a poisoning (the feed's state stays consistent: no code panics while
/// it holds a lock).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
