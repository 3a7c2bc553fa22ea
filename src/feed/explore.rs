//! The feed engine explored under shuttle's schedulers (feature `shuttle`): small
//! configurations over the real loader, each execution checked against the feed's five
//! properties, and each property shown able to fail on a mutant of the engine
//! ([`Mutant`](super::sync::Mutant)).
//!
//! `FEED_EXPLORE_ITERATIONS` sets the executions per configuration and scheduler (default
//! 500, as `make feed-explore` in `make test`); `make feed-explore-long` runs 10,000.
//!
//! Hosted mode ([`Feed::new_hosted`]) is explored by the plans with `hosts`: the run's own
//! threads are the workers, each looping take -> load -> give_and_take, with the same five
//! properties (property 2 then counts the supervisor, the only feed thread).
//!
//! Time is the facade's virtual clock (`sync.rs`): it moves only when every thread waits, so a
//! load is late only by hanging, on a gate the execution opens after the host's close.

use super::sync::{
    blocking, set_mutant, thread_ended, thread_started, Condvar, Instant, Mutant, Mutex,
};
use super::{Feed, Job, Ledger, Loaded, Outcome, Problem, Source, Spawn, Status, Thread, Took};
use crate::ledger::Failure;
use crate::loader::{Answer, Config, Effect, Loader, Read};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// A wait's polling period in the engine: how far past its timeout a close may return.
const SLACK: Duration = super::POLL;

/// Cancel hints delivered to the feed, over every execution (reported: the plans do reach
/// them).
static HINTS: AtomicUsize = AtomicUsize::new(0);

/// One small configuration: what the loads do, and how the host closes.
#[derive(Clone, Copy, Debug)]
struct Plan {
    workers: u32,
    /// The first `fails` loads fail.
    fails: u32,
    /// The load of this index (from 0) hangs until the run opens its gate, after the close.
    hang: Option<u32>,
    load_timeout: Option<Duration>,
    /// Another host thread jumps (the loader's cancel hints), moves the window there, and acts.
    mover: bool,
    /// The first load returns more items than its limit (its page goes back through the
    /// host's `release`), and that `release` closes the feed with this timeout.
    close_in_release: Option<Option<Duration>>,
    /// The host's close, from outside.
    close_timeout: Option<Duration>,
    /// The host closes without waiting for quiescence first: loads may be running and
    /// answers being given when the close starts.
    close_at_once: bool,
    /// Hosted mode with this many host threads as the workers (0: the feed's own workers).
    hosts: u32,
}

/// What the host's load and release did, shared by the run's threads.
#[derive(Default)]
struct Host {
    loads: AtomicUsize,
    next_acquisition: AtomicUsize,
    /// Every page a load returned, by acquisition: how many times it was released (by the
    /// feed, or by the loader's `release`).
    pages: std::sync::Mutex<HashMap<u64, u32>>,
    /// Releases of an acquisition no load returned.
    stray: AtomicUsize,
    /// A close from inside `release`: how long it took, what it left, the feed threads alive
    /// when it returned.
    closed_inside: std::sync::Mutex<Option<(Duration, usize, usize)>>,
    feed: OnceLock<Weak<Feed<Src>>>,
    alive: Arc<AtomicUsize>,
}

struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

struct R(Read);

impl Job for R {
    fn read_id(&self) -> u64 {
        self.0.read_id
    }
    fn limit(&self) -> u32 {
        self.0.limit
    }
}

struct Src {
    host: Arc<Host>,
    gate: Arc<Gate>,
    plan: Plan,
}

impl Source for Src {
    type Read = R;
    fn load(&self, read: &R) -> Outcome {
        let n = u32::try_from(self.host.loads.fetch_add(1, Ordering::SeqCst)).unwrap();
        shuttle::thread::yield_now();
        if self.plan.hang == Some(n) {
            let mut open = self.gate.open.lock().unwrap();
            while !*open {
                open = self.gate.opened.wait(open).unwrap();
            }
        }
        if n < self.plan.fails {
            return Outcome::Failed;
        }
        let acquisition = self.host.next_acquisition.fetch_add(1, Ordering::SeqCst) as u64 + 1;
        self.host.pages.lock().unwrap().insert(acquisition, 0);
        let at = read.0.cursor.first().map_or(0, |&b| u32::from(b)) * 10;
        let over = n == 0 && self.plan.close_in_release.is_some();
        let count = if over { read.0.limit + 1 } else { read.0.limit };
        Outcome::Page(Loaded {
            acquisition,
            count,
            next_cursor: vec![u8::try_from((at + read.0.limit) / 10).unwrap()],
            end_of_source: false,
        })
    }
    fn release(&self, acquisition: u64) {
        self.host.release(acquisition);
        if let Some(timeout) = self.plan.close_in_release {
            let feed = self.host.feed.get().and_then(Weak::upgrade);
            if let Some(feed) = feed {
                let t0 = Instant::now();
                let left = feed.close(timeout);
                let alive = self.host.alive.load(Ordering::SeqCst);
                *self.host.closed_inside.lock().unwrap() = Some((t0.elapsed(), left, alive));
            }
        }
    }
}

impl Host {
    fn release(&self, acquisition: u64) {
        match self.pages.lock().unwrap().get_mut(&acquisition) {
            Some(n) => *n += 1,
            None => {
                self.stray.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

/// The loader behind a lock (shuttle's: a scheduling point, like the FFI layer's), its
/// effects delivered to the feed once the lock is let go.
struct Fake {
    loader: Mutex<Loader>,
    feed: Weak<Feed<Src>>,
    host: Arc<Host>,
}

impl Fake {
    fn call<T>(&self, f: impl FnOnce(&mut Loader) -> T) -> T {
        let (out, effects) = {
            let mut l = self.loader.lock().unwrap();
            let out = f(&mut l);
            (out, l.take_effects())
        };
        let feed = self.feed.upgrade();
        for e in effects {
            match (e, &feed) {
                (Effect::Issue(r), Some(feed)) => feed.on_issue(R(r)),
                (Effect::Cancel { read_id }, Some(feed)) => {
                    HINTS.fetch_add(1, Ordering::Relaxed);
                    feed.on_cancel(read_id);
                }
                (Effect::Changed, Some(feed)) => feed.on_changed(),
                (Effect::Release { acquisition }, _) => self.host.release(acquisition),
                _ => {}
            }
        }
        out
    }
}

struct L(Arc<Fake>);

impl Ledger for L {
    fn settle(&self, id: u64, acq: u64, count: u32, next: &[u8], end: bool) -> Result<Took, i32> {
        match self.0.call(|l| l.settle(id, acq, count, next, end)) {
            Ok(Answer::Current) => Ok(Took::Current),
            Ok(Answer::Stale) => Ok(Took::Stale),
            Ok(Answer::CursorStalled) => Ok(Took::CursorStalled),
            Err(crate::loader::LoaderError::AlreadyAnswered(_)) => {
                Err(super::port::ALREADY_ANSWERED)
            }
            Err(crate::loader::LoaderError::UnknownRead(_)) => Err(super::port::UNKNOWN_READ),
            Err(_) => Err(1),
        }
    }
    fn fail(&self, id: u64) {
        let _ = self.0.call(|l| l.fail(id, 1));
    }
    fn abandon(&self, id: u64) {
        let _ = self.0.call(|l| l.abandon(id));
    }
    fn tick(&self, now: u64) {
        let _ = self.0.call(|l| l.tick(now));
    }
    fn next_deadline(&self) -> Option<u64> {
        self.0.loader.lock().unwrap().next_deadline()
    }
    fn status(&self) -> Status {
        let l = self.0.loader.lock().unwrap();
        let failure = l.ledger().failure();
        Status {
            quiescent: l.ledger().is_quiescent()
                && !l.revalidating()
                && failure == Failure::None
                && l.outstanding_reads() == 0,
            revalidating: l.revalidating(),
            own_failure: failure == Failure::Own,
            outstanding: l.outstanding_reads() as u64,
            armed: l.next_deadline().is_some(),
            gone: l.is_closed(),
        }
    }
}

/// Shuttle's threads, counted alive until their body returns.
struct ShuttleSpawn(Arc<AtomicUsize>);

struct ShuttleThread(shuttle::thread::JoinHandle<()>);

impl Thread for ShuttleThread {
    fn join(self: Box<Self>) {
        let _ = blocking(|| self.0.join());
    }
    fn detach(self: Box<Self>) {}
}

impl Spawn for ShuttleSpawn {
    fn spawn(&self, run: Box<dyn FnOnce() + Send>) -> Option<Box<dyn Thread>> {
        let alive = Arc::clone(&self.0);
        alive.fetch_add(1, Ordering::SeqCst);
        Some(Box::new(ShuttleThread(spawn(move || {
            run();
            alive.fetch_sub(1, Ordering::SeqCst);
        }))))
    }
}

/// A shuttle thread, counted live by the clock until its body returns.
fn spawn(run: impl FnOnce() + Send + 'static) -> shuttle::thread::JoinHandle<()> {
    thread_started();
    shuttle::thread::spawn(move || {
        run();
        thread_ended();
    })
}

/// Whether problem `p` holds in `plan`: the one the load's bug causes, or the feed closed
/// under the wait. No plan spends its retries (fewer failures than the budget) or stalls.
fn holds(plan: &Plan, p: Problem) -> bool {
    match p {
        Problem::TimedOut => true,
        Problem::Closed => plan.close_in_release.is_some(),
        Problem::CountOverLimit => plan.close_in_release.is_some(),
        Problem::RetriesSpent | Problem::CursorStalled | Problem::Refused(_) => false,
    }
}

/// One execution of `plan`, its properties asserted.
fn run(plan: Plan) {
    Instant::reset();
    let host = Arc::new(Host::default());
    let gate = Arc::new(Gate {
        open: Mutex::new(false),
        opened: Condvar::new(),
    });
    let src = Src {
        host: Arc::clone(&host),
        gate: Arc::clone(&gate),
        plan,
    };
    let make = if plan.hosts > 0 {
        Feed::new_hosted
    } else {
        Feed::new
    };
    let feed = make(
        src,
        Box::new(ShuttleSpawn(Arc::clone(&host.alive))),
        plan.workers,
        plan.load_timeout,
    )
    .unwrap();
    let _ = host.feed.set(Arc::downgrade(&feed));
    let config = Config {
        page_size: 10,
        prefetch_distance: 0,
        backoff_initial_ms: 10,
        backoff_max_ms: 40,
        max_auto_retries: 5,
        ..Config::default()
    };
    let fake = Arc::new(Fake {
        loader: Mutex::new(Loader::new(config).unwrap()),
        feed: Arc::downgrade(&feed),
        host: Arc::clone(&host),
    });
    feed.attach(Box::new(L(Arc::clone(&fake))));
    feed.start().unwrap();
    // Hosted mode: the host's threads, each the worker loading what it takes, until the close.
    let hosts: Vec<_> = (0..plan.hosts)
        .map(|_| {
            let feed = Arc::clone(&feed);
            spawn(move || {
                let mut next = feed.take(None);
                while let Ok(read) = next {
                    let loaded = feed.source().load(&read);
                    next = feed.give_and_take(&read, loaded, None);
                }
            })
        })
        .collect();
    fake.call(|l| l.set_window(0, 20)).unwrap();
    let mover = plan.mover.then(|| {
        let (fake, feed) = (Arc::clone(&fake), Arc::clone(&feed));
        spawn(move || {
            // A jump lets the reads in flight go (the loader's cancel hints), then the window
            // follows it.
            feed.will_act();
            let _ = fake.call(|l| l.jump(&[10], 100));
            let _ = fake.call(|l| l.set_window(100, 20));
            feed.acted();
        })
    });

    // Without a timeout where the plan settles: a load may take any time (virtual time moves
    // whenever a timed wait expires, loads or not), so a bounded wait may rightly time out.
    // The bound is shuttle's step limit: a wait that never returns fails the execution.
    let settles = plan.close_in_release.is_none()
        && (plan.hang.is_none() || plan.load_timeout.is_some())
        && !plan.close_at_once;
    let waited = if plan.close_at_once {
        Ok(())
    } else {
        feed.wait_quiescent((!settles).then(|| Duration::from_secs(10)))
    };
    // Property (4): a problem is reported only when it holds.
    if let Err(p) = waited {
        assert!(
            holds(&plan, p),
            "property 4: {p:?} reported, not holding ({plan:?})"
        );
    }
    // Property (5): the source stops failing after `fails` loads, within the retry budget;
    // a hung load is let go of at its timeout: the feed reaches quiescence.
    if settles {
        assert_eq!(waited, Ok(()), "property 5: no quiescence ({plan:?})");
    }

    if plan.close_in_release.is_some() {
        // The feed is closed from inside `release`: the host waits for that close to return,
        // then closes again from outside (a no-op that finds nothing left to wait for).
        blocking(|| {
            while host.closed_inside.lock().unwrap().is_none() {
                shuttle::thread::yield_now();
            }
        });
        feed.close(plan.close_timeout);
    } else {
        let t0 = Instant::now();
        let left = feed.close(plan.close_timeout);
        let took = t0.elapsed();
        let alive = host.alive.load(Ordering::SeqCst);
        // Property (3): close honours its timeout, from outside.
        if let Some(t) = plan.close_timeout {
            assert!(
                took <= t + SLACK,
                "property 3: close took {took:?} of {t:?}"
            );
        }
        // Property (2): no feed thread alive after close, except loads still running.
        assert!(
            alive <= left,
            "property 2: {alive} threads alive, {left} left running"
        );
    }
    if let Some((took, left, alive)) = *host.closed_inside.lock().unwrap() {
        // (3) from inside the host's `release`; (2) there, the calling thread excepted.
        if let Some(Some(t)) = plan.close_in_release {
            assert!(
                took <= t + SLACK,
                "property 3: close in release took {took:?} of {t:?}"
            );
        }
        assert!(
            alive <= left + 1,
            "property 2: {alive} alive, {left} left (in release)"
        );
    }

    // The host frees the loader, the hung load returns, every thread ends.
    fake.call(|l| l.close());
    *gate.open.lock().unwrap() = true;
    gate.opened.notify_all();
    if let Some(m) = mover {
        blocking(|| m.join()).unwrap();
    }
    for h in hosts {
        blocking(|| h.join()).unwrap();
    }
    blocking(|| {
        while host.alive.load(Ordering::SeqCst) > 0 {
            shuttle::thread::yield_now();
        }
    });
    // Property (1): every page a load returned was released exactly once (by the feed, or
    // by the loader for the pages it accepted), and the counters say so.
    let pages = host.pages.lock().unwrap();
    let twice: Vec<_> = pages.iter().filter(|(_, &n)| n != 1).collect();
    assert!(twice.is_empty(), "property 1: released not once: {twice:?}");
    assert_eq!(
        host.stray.load(Ordering::SeqCst),
        0,
        "property 1: stray releases"
    );
    let c = feed.tally().read();
    assert_eq!(c.handed_out, pages.len() as u64, "property 1: handed out");
    assert_eq!(
        c.handed_out,
        c.accepted + c.given_back,
        "property 1: accepted + given back"
    );
    assert_eq!(c.running, 0);
}

/// The explored configurations.
fn plans() -> Vec<(&'static str, Plan)> {
    let base = Plan {
        workers: 1,
        fails: 0,
        hang: None,
        load_timeout: None,
        mover: false,
        close_in_release: None,
        close_timeout: Some(Duration::from_millis(100)),
        close_at_once: false,
        hosts: 0,
    };
    let ms = Duration::from_millis;
    vec![
        (
            "two workers, a jump",
            Plan {
                workers: 2,
                mover: true,
                ..base
            },
        ),
        (
            "two workers, a jump, closed at once",
            Plan {
                workers: 2,
                mover: true,
                close_at_once: true,
                close_timeout: None,
                ..base
            },
        ),
        (
            "failures, retried",
            Plan {
                workers: 2,
                fails: 2,
                ..base
            },
        ),
        (
            "one worker, failures and a jump",
            Plan {
                fails: 1,
                mover: true,
                ..base
            },
        ),
        (
            "a hung load, let go of at its timeout",
            Plan {
                workers: 1,
                hang: Some(0),
                load_timeout: Some(ms(100)),
                mover: true,
                ..base
            },
        ),
        (
            "a hung load, close times out",
            Plan {
                workers: 2,
                hang: Some(1),
                load_timeout: Some(ms(300)),
                ..base
            },
        ),
        (
            "one worker hung, no load timeout, close times out",
            Plan {
                hang: Some(0),
                mover: true,
                ..base
            },
        ),
        (
            "close without timeout inside release",
            Plan {
                workers: 2,
                close_in_release: Some(None),
                close_timeout: None,
                ..base
            },
        ),
        (
            "close with timeout inside release, a hung load",
            Plan {
                workers: 2,
                hang: Some(1),
                close_in_release: Some(Some(ms(100))),
                ..base
            },
        ),
        (
            "hosted: two host threads, a jump, closed at once",
            Plan {
                workers: 2,
                hosts: 2,
                mover: true,
                close_at_once: true,
                ..base
            },
        ),
        (
            "hosted: failures, retried",
            Plan {
                fails: 2,
                hosts: 1,
                ..base
            },
        ),
        (
            "hosted: a hung load, let go of at its timeout, another host thread takes over",
            Plan {
                hang: Some(0),
                load_timeout: Some(ms(100)),
                mover: true,
                hosts: 2,
                ..base
            },
        ),
        (
            "hosted: close with timeout inside release, a hung load",
            Plan {
                workers: 2,
                hosts: 2,
                hang: Some(1),
                close_in_release: Some(Some(ms(100))),
                ..base
            },
        ),
    ]
}

fn iterations() -> usize {
    std::env::var("FEED_EXPLORE_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn config() -> shuttle::Config {
    let mut c = shuttle::Config::new();
    // A close or a wait that never returns shows as a run that never ends.
    c.max_steps = shuttle::MaxSteps::FailAfter(200_000);
    c
}

/// Runs `plan` under the random scheduler then PCT (depth 3), `n` executions each: the
/// number of the execution that failed, and its message, if one did.
fn explore(plan: Plan, n: usize, seed: u64) -> Option<(usize, String)> {
    let count = Arc::new(AtomicUsize::new(0));
    let schedulers: [Box<dyn FnOnce() -> Box<dyn shuttle::scheduler::Scheduler + Send>>; 2] = [
        Box::new(move || Box::new(shuttle::scheduler::RandomScheduler::new_from_seed(seed, n))),
        Box::new(move || Box::new(shuttle::scheduler::PctScheduler::new_from_seed(seed, 3, n))),
    ];
    for make in schedulers {
        let counted = Arc::clone(&count);
        let runner = shuttle::Runner::new(make(), config());
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runner.run(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                run(plan);
            })
        }));
        if let Err(e) = outcome {
            let message = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            return Some((count.load(Ordering::SeqCst), message));
        }
    }
    None
}

#[test]
fn every_plan_keeps_the_five_properties() {
    set_mutant(Mutant::None);
    let n = iterations();
    let start = std::time::Instant::now();
    for (i, (name, plan)) in plans().into_iter().enumerate() {
        let failed = explore(plan, n, 0x5eed + i as u64);
        assert_eq!(failed, None, "{name}: failed at execution {failed:?}");
    }
    eprintln!(
        "feed explored: {} plans x {n} executions x 2 schedulers in {:.1?}, {} cancel hints",
        plans().len(),
        start.elapsed(),
        HINTS.load(Ordering::Relaxed)
    );
}

/// Each mutant, and the plan that shows its property failing, within the executions: by
/// its named assertion, or (a close or a wait that never returns) by the step bound.
#[test]
fn every_property_fails_on_its_mutant() {
    let plans = plans();
    let by_name = |n: &str| plans.iter().find(|(name, _)| *name == n).unwrap().1;
    const NEVER_RETURNS: &str = "max_steps";
    let cases = [
        (
            Mutant::DropLatePage,
            "a hung load, let go of at its timeout",
            "property 1",
        ),
        (
            Mutant::DropLatePage,
            "hosted: a hung load, let go of at its timeout, another host thread takes over",
            "property 1",
        ),
        (Mutant::DetachIdle, "two workers, a jump", "property 2"),
        (
            Mutant::NoAnsweringWait,
            "two workers, a jump, closed at once",
            "property 2",
        ),
        (
            Mutant::IgnoreCloseTimeout,
            "a hung load, close times out",
            NEVER_RETURNS,
        ),
        (
            Mutant::WaitForOwnThread,
            "close without timeout inside release",
            NEVER_RETURNS,
        ),
        (Mutant::SpentWhileArmed, "failures, retried", "property 4"),
        (Mutant::NoTick, "failures, retried", NEVER_RETURNS),
        (
            Mutant::HeldCountsLetGo,
            "hosted: a hung load, let go of at its timeout, another host thread takes over",
            NEVER_RETURNS,
        ),
        (
            Mutant::AnnounceInAction,
            "two workers, a jump",
            NEVER_RETURNS,
        ),
    ];
    let n = iterations();
    let mut found = Vec::new();
    for (m, name, caught_by) in cases {
        set_mutant(m);
        let failed = explore(by_name(name), n, 0x5eed);
        set_mutant(Mutant::None);
        let (at, message) =
            failed.unwrap_or_else(|| panic!("{m:?} survived {n} executions of {name}"));
        assert!(
            message.contains(caught_by),
            "{m:?} failed {name} otherwise than by {caught_by}: {message}"
        );
        found.push(format!("{m:?} ({name}): execution {at}"));
    }
    eprintln!("mutants found: {}", found.join("; "));
}

/// Replays a failing schedule printed by a run: `FEED_EXPLORE_REPLAY=<plan name>` and
/// `FEED_EXPLORE_SCHEDULE=<schedule>` (`FEED_EXPLORE_MUTANT` names a mutant, by its `Debug`
/// form). Without them, it does nothing.
#[test]
fn replay_a_schedule() {
    let (Ok(name), Ok(schedule)) = (
        std::env::var("FEED_EXPLORE_REPLAY"),
        std::env::var("FEED_EXPLORE_SCHEDULE"),
    ) else {
        return;
    };
    let plan = plans()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no plan {name}"))
        .1;
    let mutant = std::env::var("FEED_EXPLORE_MUTANT").unwrap_or_default();
    let m = [
        Mutant::DropLatePage,
        Mutant::DetachIdle,
        Mutant::NoAnsweringWait,
        Mutant::IgnoreCloseTimeout,
        Mutant::WaitForOwnThread,
        Mutant::SpentWhileArmed,
        Mutant::NoTick,
        Mutant::HeldCountsLetGo,
        Mutant::AnnounceInAction,
    ]
    .into_iter()
    .find(|m| format!("{m:?}") == mutant)
    .unwrap_or(Mutant::None);
    set_mutant(m);
    let scheduler = shuttle::scheduler::ReplayScheduler::new_from_encoded(&schedule);
    shuttle::Runner::new(scheduler, config()).run(move || run(plan));
}
