//! The feed in job mode ([`super::super::Hub`]): loads run on threads the test owns, and the
//! feed's rules hold as when it runs them itself: every page released once (late ones and
//! those answered after close), read timeouts, close withdrawing the jobs nobody took.

use super::{close, feed_over, page, Fake, Feed, Items, Src};
use crate::feed::{Completed, Hub, NoJob, Outcome};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

type Started = (
    Arc<Feed<Src>>,
    Arc<Fake>,
    Arc<Items>,
    Arc<Hub<crate::loader::Read>>,
);

fn job_feed(workers: u32, load_timeout: Option<Duration>) -> Started {
    let items = Arc::new(Items::default());
    let hub = Arc::new(Hub::new(None));
    assert!(items.hub.set(Arc::clone(&hub)).is_ok());
    let (f, fake, items) = feed_over(items, workers, load_timeout);
    (f, fake, items, hub)
}

/// `n` host threads taking jobs until the hub closes; each records the thread it ran on.
fn executors(
    n: usize,
    hub: &Arc<Hub<crate::loader::Read>>,
    items: &Arc<Items>,
) -> (Vec<JoinHandle<()>>, Arc<Mutex<Vec<ThreadId>>>) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let threads = (0..n)
        .map(|_| {
            let (hub, items, ran) = (Arc::clone(hub), Arc::clone(items), Arc::clone(&ran));
            std::thread::spawn(move || loop {
                match hub.next(Some(Duration::from_millis(20))) {
                    Ok(job) => {
                        ran.lock().unwrap().push(std::thread::current().id());
                        job.complete(page(&items, job.read())).unwrap();
                    }
                    Err(NoJob::TimedOut) => {}
                    Err(NoJob::Closed) => return,
                }
            })
        })
        .collect();
    (threads, ran)
}

fn close_jobs(f: &Feed<Src>, fake: &Fake, hub: &Hub<crate::loader::Read>) {
    f.shut();
    hub.close();
    close(f, fake);
}

#[test]
fn jobs_run_on_the_hosts_threads_and_every_page_goes_back() {
    let (f, fake, items, hub) = job_feed(3, None);
    let (threads, ran) = executors(3, &hub, &items);
    fake.call(|l| l.set_window(0, 200)).unwrap();
    f.wait_quiescent(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 200));
    close_jobs(&f, &fake, &hub);
    // Every load ran on one of the host's threads.
    let hosts: Vec<ThreadId> = threads.iter().map(|t| t.thread().id()).collect();
    assert!(ran.lock().unwrap().iter().all(|t| hosts.contains(t)));
    for t in threads {
        t.join().unwrap();
    }
    let made = items.made.load(Ordering::Relaxed);
    assert_eq!(made, 20);
    assert_eq!(items.released.load(Ordering::Relaxed), made);
}

#[test]
fn a_job_held_past_the_load_timeout_is_let_go_and_its_late_page_released() {
    let (f, fake, items, hub) = job_feed(1, Some(Duration::from_millis(50)));
    fake.call(|l| l.set_window(0, 10)).unwrap();
    // The first job is taken and held, as by a hung load.
    let held = hub.next(Some(Duration::from_secs(10))).unwrap();
    // The feed lets its read go and queues the retry in its place, which another host
    // thread answers.
    let (threads, _) = executors(1, &hub, &items);
    assert_eq!(f.wait_quiescent(Some(Duration::from_secs(10))), Ok(()));
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 10));
    // The late answer: its page goes back.
    let released = items.released.load(Ordering::SeqCst);
    held.complete(page(&items, held.read())).unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while items.released.load(Ordering::SeqCst) == released && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(items.released.load(Ordering::SeqCst), released + 1);
    close_jobs(&f, &fake, &hub);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
}

#[test]
fn close_withdraws_the_jobs_nobody_took() {
    let (f, fake, items, hub) = job_feed(2, None);
    fake.call(|l| l.set_window(0, 50)).unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while hub.queued() == 0 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(hub.queued(), 1);
    f.shut();
    assert!(hub.close());
    fake.call(|l| l.close());
    // No load runs: close waits for nothing.
    let t = Instant::now();
    assert_eq!(f.finish(Some(Instant::now() + Duration::from_secs(5))), 0);
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(hub.next(Some(Duration::ZERO)).err(), Some(NoJob::Closed));
    assert_eq!(items.made.load(Ordering::Relaxed), 0);
}

#[test]
fn a_job_answered_after_close_has_its_page_released_once() {
    let (f, fake, items, hub) = job_feed(1, None);
    fake.call(|l| l.set_window(0, 10)).unwrap();
    let held = hub.next(Some(Duration::from_secs(10))).unwrap();
    f.shut();
    hub.close();
    fake.call(|l| l.close());
    // The taken job is a load still running: close lets it go at its timeout.
    assert_eq!(
        f.finish(Some(Instant::now() + Duration::from_millis(50))),
        1
    );
    held.complete(page(&items, held.read())).unwrap();
    assert_eq!(
        held.complete(Outcome::Failed),
        Err(Completed::Twice),
        "a job is answered once"
    );
    let end = Instant::now() + Duration::from_secs(10);
    while items.released.load(Ordering::SeqCst) < 1 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(items.made.load(Ordering::SeqCst), 1);
    assert_eq!(items.released.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failed_job_is_retried_by_the_feeds_backoff() {
    let (f, fake, items, hub) = job_feed(1, None);
    fake.call(|l| l.set_window(0, 10)).unwrap();
    let first = hub.next(Some(Duration::from_secs(10))).unwrap();
    first.complete(Outcome::Failed).unwrap();
    // The retry comes as a new job, on the feed's clock: nobody asked for it.
    let retry = hub.next(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(retry.read().cursor, first.read().cursor);
    retry.complete(page(&items, retry.read())).unwrap();
    assert_eq!(f.wait_quiescent(Some(Duration::from_secs(10))), Ok(()));
    close_jobs(&f, &fake, &hub);
    assert_eq!(items.released.load(Ordering::Relaxed), 1);
}
