//! The feed over the Rust loader, with `std` threads: a fake host of numbered items, no C.
//! What the C tests (c-tests/feed.c) cannot reach from outside: a cancel hint that arrives
//! before its read's `issue`.

use super::{Feed, Job, Ledger, Loaded, Outcome, Source, Spawn, Status, Thread, Took};
use crate::ledger::Failure;
use crate::loader::{Answer, Config, Effect, Loader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

mod hosted;
mod jobs;

const ITEMS: u64 = 500;

/// A read, as the fake ledger hands it over.
struct R(Read);

impl Job for R {
    fn read_id(&self) -> u64 {
        self.0.read_id
    }
    fn limit(&self) -> u32 {
        self.0.limit
    }
}

#[derive(Default)]
struct Items {
    loads: AtomicU64,
    made: AtomicU64,
    released: AtomicU64,
    /// The threads loads ran on, by read id.
    threads: Mutex<Vec<(u64, std::thread::ThreadId)>>,
    /// The next load blocks until `unblock`.
    block_next: std::sync::atomic::AtomicBool,
    unblock: std::sync::atomic::AtomicBool,
    /// Job mode: loads are queued here for the test's own threads (`tests/jobs.rs`).
    hub: std::sync::OnceLock<Arc<super::Hub<Read>>>,
    /// Each load takes this many ms.
    slow_ms: AtomicU64,
    /// Run by the next `release`, on its thread (`tests/hosted.rs`).
    on_release: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

struct Src(Arc<Items>);

impl Source for Src {
    type Read = R;
    fn load(&self, read: &R) -> Outcome {
        if let Some(hub) = self.0.hub.get() {
            return hub.load(read.0.clone());
        }
        self.0.loads.fetch_add(1, Ordering::Relaxed);
        let mut threads = self.0.threads.lock().unwrap();
        threads.push((read.0.read_id, std::thread::current().id()));
        drop(threads);
        let slow = self.0.slow_ms.load(Ordering::Relaxed);
        if slow > 0 {
            std::thread::sleep(Duration::from_millis(slow));
        }
        if self.0.block_next.swap(false, Ordering::SeqCst) {
            while !self.0.unblock.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        page(&self.0, &read.0)
    }
    fn release(&self, _: u64) {
        self.0.released.fetch_add(1, Ordering::Relaxed);
        let hook = self.0.on_release.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
    }
}

/// The page a load of `read` returns: items numbered from the cursor's byte times 10.
fn page(items: &Items, read: &Read) -> Outcome {
    let at = read.cursor.first().map_or(0, |&b| u64::from(b)) * 10;
    let n = (ITEMS - at).min(u64::from(read.limit));
    items.made.fetch_add(1, Ordering::Relaxed);
    Outcome::Page(Loaded {
        acquisition: at,
        count: n as u32,
        next_cursor: vec![((at + n) / 10) as u8],
        end_of_source: at + n == ITEMS,
    })
}

/// The loader behind a lock; effects delivered after it is let go, to the feed.
struct Fake {
    loader: Mutex<Loader>,
    feed: Mutex<Weak<Feed<Src>>>,
    items: Arc<Items>,
}

impl Fake {
    fn call<T>(&self, f: impl FnOnce(&mut Loader) -> T) -> T {
        let (out, effects) = {
            let mut l = self.loader.lock().unwrap();
            let out = f(&mut l);
            (out, l.take_effects())
        };
        let feed = self.feed.lock().unwrap().upgrade();
        for e in effects {
            match (e, &feed) {
                (Effect::Issue(r), Some(feed)) => feed.on_issue(R(r)),
                (Effect::Cancel { read_id }, Some(feed)) => feed.on_cancel(read_id),
                (Effect::Changed, Some(feed)) => feed.on_changed(),
                (Effect::Release { .. }, _) => {
                    self.items.released.fetch_add(1, Ordering::Relaxed);
                }
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

struct StdThread(Option<std::thread::JoinHandle<()>>);
impl Thread for StdThread {
    fn join(mut self: Box<Self>) {
        if let Some(t) = self.0.take() {
            let _ = t.join();
        }
    }
    fn detach(self: Box<Self>) {}
}
struct StdSpawn;
impl Spawn for StdSpawn {
    fn spawn(&self, run: Box<dyn FnOnce() + Send>) -> Option<Box<dyn Thread>> {
        Some(Box::new(StdThread(Some(std::thread::spawn(run)))))
    }
}

fn feed(workers: u32) -> (Arc<Feed<Src>>, Arc<Fake>, Arc<Items>) {
    feed_timed(workers, None)
}

fn feed_timed(
    workers: u32,
    load_timeout: Option<Duration>,
) -> (Arc<Feed<Src>>, Arc<Fake>, Arc<Items>) {
    feed_over(Arc::new(Items::default()), workers, load_timeout)
}

/// A started feed over `items` (in job mode when its `hub` is set).
fn feed_over(
    items: Arc<Items>,
    workers: u32,
    load_timeout: Option<Duration>,
) -> (Arc<Feed<Src>>, Arc<Fake>, Arc<Items>) {
    feed_built(items, workers, load_timeout, false)
}

/// A started feed over `items`; in hosted mode when `hosted` (`tests/hosted.rs`).
fn feed_built(
    items: Arc<Items>,
    workers: u32,
    load_timeout: Option<Duration>,
    hosted: bool,
) -> (Arc<Feed<Src>>, Arc<Fake>, Arc<Items>) {
    let config = Config {
        page_size: 10,
        prefetch_distance: 0,
        ..Config::default()
    };
    feed_configured(items, workers, load_timeout, hosted, config)
}

/// [`feed_built`] over a loader of `config`.
fn feed_configured(
    items: Arc<Items>,
    workers: u32,
    load_timeout: Option<Duration>,
    hosted: bool,
    config: Config,
) -> (Arc<Feed<Src>>, Arc<Fake>, Arc<Items>) {
    let fake = Arc::new(Fake {
        loader: Mutex::new(Loader::new(config).unwrap()),
        feed: Mutex::new(Weak::new()),
        items: Arc::clone(&items),
    });
    let make = if hosted { Feed::new_hosted } else { Feed::new };
    let f = make(
        Src(Arc::clone(&items)),
        Box::new(StdSpawn),
        workers,
        load_timeout,
    )
    .unwrap();
    *fake.feed.lock().unwrap() = Arc::downgrade(&f);
    f.attach(Box::new(L(Arc::clone(&fake))));
    f.start().unwrap();
    (f, fake, items)
}

fn close(f: &Feed<Src>, fake: &Fake) {
    f.shut();
    fake.call(|l| l.close());
    assert_eq!(f.finish(None), 0);
}

#[test]
fn a_window_loads_and_every_page_goes_back() {
    let (f, fake, items) = feed(3);
    fake.call(|l| l.set_window(0, 200)).unwrap();
    f.wait_quiescent(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 200));
    close(&f, &fake);
    let made = items.made.load(Ordering::Relaxed);
    assert_eq!(made, 20);
    assert_eq!(items.released.load(Ordering::Relaxed), made);
}

/// A window of 20 pages is a chain of 20 loads, each issued by the answer before it. A
/// thread waiting for quiescence meanwhile sleeps through the chain: it is woken by the last
/// answer (and a change with no read held), not by each one, which cost every answer a
/// thread switch (2.8x a bare loop's CPU for the Python feed's worker threads).
#[test]
fn a_chain_of_answers_does_not_wake_a_waiter_at_each() {
    let (f, fake, items) = feed(1);
    items.slow_ms.store(2, Ordering::Relaxed);
    fake.call(|l| l.set_window(0, 200)).unwrap();
    f.wait_quiescent(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 200));
    let sleeps = f.settle_sleeps();
    close(&f, &fake);
    assert_eq!(items.made.load(Ordering::Relaxed), 20);
    // Once at the start, and at most a few times for a change seen between a look at the
    // loader and the sleep; 20 when each answer wakes it.
    assert!(
        sleeps <= 4,
        "the waiter slept {sleeps} times over a chain of 20 answers"
    );
}

/// A host's action (here a window move) issues a read: no idle worker is woken for it while
/// the action runs (its `release` callbacks still being delivered, each taking a Python
/// host's interpreter lock in turn with the woken worker's load), and the action's end wakes
/// them.
#[test]
fn the_reads_an_action_issues_start_when_it_ends() {
    let (f, fake, items) = feed(2);
    // The workers, just started, wait for a read.
    std::thread::sleep(Duration::from_millis(50));
    f.will_act();
    fake.call(|l| l.set_window(0, 30)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let during = items.loads.load(Ordering::Relaxed);
    f.acted();
    f.wait_quiescent(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 30));
    close(&f, &fake);
    assert_eq!(during, 0, "{during} loads started inside the action");
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
}

/// An action that issues one read wakes one of the idle workers, not all of them: each
/// worker woken for nothing is a thread switch (for the Python feed, a thread taking the
/// interpreter's lock) per window move.
#[test]
fn an_action_wakes_one_worker_per_read_it_issues() {
    let (f, fake, items) = feed(4);
    // The workers, just started, wait for a read.
    std::thread::sleep(Duration::from_millis(50));
    for m in 0..10u64 {
        f.will_act();
        fake.call(|l| l.set_window(m * 10, 10)).unwrap();
        f.acted();
        f.wait_quiescent(Some(Duration::from_secs(20))).unwrap();
        // Every worker back asleep: none is on its way back for a read when the next move
        // issues one.
        std::thread::sleep(Duration::from_millis(5));
    }
    let futile = f.futile_wakes();
    close(&f, &fake);
    assert_eq!(items.made.load(Ordering::Relaxed), 10);
    // 3 per move when every idle worker is woken; 1 allowed for a spurious wake.
    assert!(
        futile <= 1,
        "workers woke {futile} times over 10 moves for a read another worker took"
    );
}

/// A load that hangs is let go of at its timeout, though the supervisor was asleep for
/// longer (nothing else was due) when it started: the load's start tells it. An action no
/// longer wakes the supervisor at each window move, and a read's start was never one of the
/// wakes.
#[test]
fn a_hung_load_is_let_go_at_its_timeout_though_the_clock_slept() {
    let (f, fake, items) = feed_timed(1, Some(Duration::from_millis(150)));
    // The supervisor, with nothing due, sleeps for its horizon (1 s).
    std::thread::sleep(Duration::from_millis(100));
    items.block_next.store(true, Ordering::SeqCst);
    let t0 = std::time::Instant::now();
    f.will_act();
    fake.call(|l| l.set_window(0, 10)).unwrap();
    f.acted();
    while f.tally().read().timed_out == 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let after = t0.elapsed();
    items.unblock.store(true, Ordering::SeqCst);
    f.wait_quiescent(Some(Duration::from_secs(20))).unwrap();
    close(&f, &fake);
    assert!(
        after < Duration::from_millis(600),
        "the hung load was let go of {after:?} after its start, for a timeout of 150 ms"
    );
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
}

#[test]
fn a_cancel_before_its_issue_lets_the_read_go_unloaded() {
    let (f, fake, items) = feed(1);
    // The read issued, its `issue` held back: the hint for it is delivered first.
    let read = {
        let mut l = fake.loader.lock().unwrap();
        l.set_window(0, 10).unwrap();
        let effects = l.take_effects();
        effects
            .into_iter()
            .find_map(|e| match e {
                Effect::Issue(r) => Some(r),
                _ => None,
            })
            .unwrap()
    };
    f.on_cancel(read.read_id);
    f.on_issue(R(read.clone()));
    // Not loaded: the hint came first, and the read was let go (the loader then fails it, as
    // it was still needed, and its backoff retries it: that retry is loaded).
    std::thread::sleep(Duration::from_millis(50));
    assert!(items
        .threads
        .lock()
        .unwrap()
        .iter()
        .all(|(id, _)| *id != read.read_id));
    f.wait_quiescent(Some(Duration::from_secs(20))).unwrap();
    close(&f, &fake);
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
    assert!(items.loads.load(Ordering::Relaxed) >= 1);
}

#[test]
fn a_page_for_a_read_the_loader_answered_already_goes_back_and_is_no_problem() {
    let (f, fake, items) = feed(1);
    // The read issued, then answered through the loader itself before the feed's load ends
    // (as at its read timeout, forgotten since): the feed's settle is refused as answered.
    let read = {
        let mut l = fake.loader.lock().unwrap();
        l.set_window(0, 10).unwrap();
        let read = l
            .take_effects()
            .into_iter()
            .find_map(|e| match e {
                Effect::Issue(r) => Some(r),
                _ => None,
            })
            .unwrap();
        l.settle(read.read_id, 1000, 10, &[1], false).unwrap();
        drop(l.take_effects());
        read
    };
    f.on_issue(R(read));
    // Until the feed's load ran and its answer was given.
    for _ in 0..20_000 {
        let st = f.state();
        if items.made.load(Ordering::Relaxed) == 1 && st.running == 0 && st.answering == 0 {
            break;
        }
        drop(st);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(items.made.load(Ordering::Relaxed), 1);
    // The next read outstanding, its `issue` held back: the wait sees no problem, only time
    // running out (the refusal was reported as a bug of the load: `Refused(5)`).
    let next = {
        let mut l = fake.loader.lock().unwrap();
        l.set_window(0, 20).unwrap();
        l.take_effects()
            .into_iter()
            .find_map(|e| match e {
                Effect::Issue(r) => Some(r),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        f.wait_quiescent(Some(Duration::from_millis(100))),
        Err(super::Problem::TimedOut)
    );
    f.on_issue(R(next));
    assert_eq!(f.wait_quiescent(Some(Duration::from_secs(20))), Ok(()));
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 20));
    close(&f, &fake);
    // The feed's two pages, and the loader's own answer at close.
    assert_eq!(items.made.load(Ordering::Relaxed), 2);
    assert_eq!(items.released.load(Ordering::Relaxed), 3);
    // The counters say so: the page refused as answered already was handed back, late.
    let c = f.tally().read();
    assert_eq!(
        (c.handed_out, c.accepted, c.given_back, c.late),
        (2, 1, 1, 1)
    );
    assert_eq!((c.refused_other, c.last_refused_code, c.running), (0, 0, 0));
}

#[test]
fn a_hinted_load_that_hangs_gives_its_worker_up_at_the_load_timeout() {
    // One worker, its load hung; the loader hints the read (a jump, a far move): the read is
    // let go of, and the next read must not wait for the hung load to return.
    let (f, fake, items) = feed_timed(1, Some(Duration::from_millis(50)));
    items.block_next.store(true, Ordering::SeqCst);
    fake.call(|l| l.set_window(0, 10)).unwrap();
    for _ in 0..5_000 {
        if items.loads.load(Ordering::SeqCst) == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let hung = items.threads.lock().unwrap()[0].0;
    f.on_cancel(hung);
    // The read, still needed, failed when let go of; its retry is loaded by a worker that
    // took the hung one's place.
    assert_eq!(f.wait_quiescent(Some(Duration::from_secs(10))), Ok(()));
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 10));
    items.unblock.store(true, Ordering::SeqCst);
    close(&f, &fake);
    // The hung load's late page went back too.
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
    // Counted: every page handed out is accepted or given back, the hung one late; the
    // worker it held was given up at the load timeout.
    let c = f.tally().read();
    assert_eq!(c.handed_out, items.made.load(Ordering::Relaxed));
    assert_eq!(c.handed_out, c.accepted + c.given_back);
    assert_eq!((c.late, c.given_back, c.timed_out, c.running), (1, 1, 1, 0));
}
