//! The feed in hosted mode ([`Feed::take`], [`Feed::give_and_take`]): the test's own threads
//! are the feed's workers, the read an answer issues goes to the answering thread, and the
//! feed's rules hold as with its own workers: every page released once (late ones and those
//! answered after close), read timeouts, at most `workers` reads held, exact counters; and a
//! host woken by the `ready` hook alone, as an event loop is ([`Feed::set_ready`]).

use super::{close, feed_built, feed_configured, page, Fake, Feed, Items, Src};
use crate::feed::{NoJob, Outcome, Problem};
use crate::loader::Config;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

fn hosted(workers: u32, load_timeout: Option<Duration>) -> (Arc<Feed<Src>>, Arc<Fake>, Arc<Items>) {
    feed_built(Arc::new(Items::default()), workers, load_timeout, true)
}

/// `n` host threads looping take -> load -> give_and_take until the feed closes; each load
/// records the thread it ran on.
fn hosts(
    n: usize,
    f: &Arc<Feed<Src>>,
    items: &Arc<Items>,
) -> (Vec<JoinHandle<()>>, Arc<Mutex<Vec<ThreadId>>>) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let threads = (0..n)
        .map(|_| {
            let (f, items, ran) = (Arc::clone(f), Arc::clone(items), Arc::clone(&ran));
            std::thread::spawn(move || loop {
                match f.take(Some(Duration::from_millis(20))) {
                    Ok(mut read) => loop {
                        ran.lock().unwrap().push(std::thread::current().id());
                        let loaded = page(&items, &read.0);
                        match f.give_and_take(&read, loaded, Some(Duration::ZERO)) {
                            Ok(next) => read = next,
                            Err(_) => break,
                        }
                    },
                    Err(NoJob::TimedOut) => {}
                    Err(NoJob::Closed) => return,
                }
            })
        })
        .collect();
    (threads, ran)
}

fn wait_for(what: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !what() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(what());
}

#[test]
fn hosted_reads_run_on_the_hosts_threads_and_every_page_goes_back() {
    let (f, fake, items) = hosted(3, None);
    // The feed started no worker of its own.
    assert!(f.state().workers.is_empty());
    let (threads, ran) = hosts(3, &f, &items);
    fake.call(|l| l.set_window(0, 200)).unwrap();
    f.wait_quiescent(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 200));
    close(&f, &fake);
    let ids: Vec<ThreadId> = threads.iter().map(|t| t.thread().id()).collect();
    for t in threads {
        t.join().unwrap();
    }
    let ran = ran.lock().unwrap();
    assert_eq!(ran.len(), 20);
    assert!(ran.iter().all(|t| ids.contains(t)));
    let made = items.made.load(Ordering::Relaxed);
    assert_eq!(made, 20);
    assert_eq!(items.released.load(Ordering::Relaxed), made);
    let c = f.tally().read();
    assert_eq!(
        (c.handed_out, c.accepted, c.given_back, c.running),
        (20, 20, 0, 0)
    );
}

#[test]
fn the_read_an_answer_issues_goes_to_the_answering_thread() {
    // Rounds: a read that joined the queue would reach the other thread in some of them.
    for _ in 0..8 {
        answering_thread_takes_the_stream();
    }
}

/// One round of [`the_read_an_answer_issues_goes_to_the_answering_thread`].
fn answering_thread_takes_the_stream() {
    let (f, fake, items) = hosted(2, None);
    fake.call(|l| l.set_window(0, 500)).unwrap();
    let mut read = f.take(Some(Duration::from_secs(10))).unwrap();
    // Another host thread asks for reads all along, without pause: none reaches it, each read
    // the answer issues is this thread's at once (it never joins the queue).
    let stop = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let other = {
        let (f, items, stop) = (Arc::clone(&f), Arc::clone(&items), Arc::clone(&stop));
        let asked = Arc::clone(&asked);
        std::thread::spawn(move || {
            let mut took = 0;
            while !stop.load(Ordering::SeqCst) {
                asked.fetch_add(1, Ordering::SeqCst);
                if let Ok(r) = f.take(Some(Duration::ZERO)) {
                    took += 1;
                    f.give(&r, page(&items, &r.0));
                }
            }
            took
        })
    };
    wait_for(|| asked.load(Ordering::SeqCst) > 1000);
    let mut mine = 1;
    loop {
        let loaded = page(&items, &read.0);
        match f.give_and_take(&read, loaded, Some(Duration::ZERO)) {
            Ok(next) => {
                mine += 1;
                read = next;
            }
            Err(e) => {
                assert_eq!(e, NoJob::TimedOut);
                break;
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    assert_eq!(other.join().unwrap(), 0);
    assert_eq!(mine, 50);
    assert_eq!(f.wait_quiescent(Some(Duration::from_secs(10))), Ok(()));
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 500));
    close(&f, &fake);
    assert_eq!(items.released.load(Ordering::Relaxed), 50);
}

#[test]
fn a_read_held_past_the_load_timeout_is_let_go_and_another_host_thread_takes_its_retry() {
    let (f, fake, items) = hosted(1, Some(Duration::from_millis(50)));
    fake.call(|l| l.set_window(0, 10)).unwrap();
    // Taken and held, as by a hung load: with one place, nothing else could be taken.
    let held = f.take(Some(Duration::from_secs(10))).unwrap();
    let (threads, _) = hosts(1, &f, &items);
    assert_eq!(f.wait_quiescent(Some(Duration::from_secs(10))), Ok(()));
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 10));
    // The late answer: its page goes back, on this thread.
    let released = items.released.load(Ordering::SeqCst);
    f.give(&held, page(&items, &held.0));
    assert_eq!(items.released.load(Ordering::SeqCst), released + 1);
    close(&f, &fake);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
    let c = f.tally().read();
    assert_eq!(c.handed_out, c.accepted + c.given_back);
    assert_eq!((c.late, c.timed_out, c.running), (1, 1, 0));
}

#[test]
fn close_lets_go_of_held_reads_and_their_late_pages_are_released_once() {
    let (f, fake, items) = hosted(1, None);
    fake.call(|l| l.set_window(0, 10)).unwrap();
    let held = f.take(Some(Duration::from_secs(10))).unwrap();
    f.shut();
    fake.call(|l| l.close());
    // The held read is a load still running: the close lets it go at its timeout.
    let t = Instant::now();
    assert_eq!(
        f.finish(Some(Instant::now() + Duration::from_millis(50))),
        1
    );
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(f.take(Some(Duration::ZERO)).err(), Some(NoJob::Closed));
    f.give(&held, page(&items, &held.0));
    assert_eq!(items.made.load(Ordering::SeqCst), 1);
    assert_eq!(items.released.load(Ordering::SeqCst), 1);
    let c = f.tally().read();
    assert_eq!(
        (c.handed_out, c.given_back, c.late, c.running),
        (1, 1, 1, 0)
    );
}

#[test]
fn a_failed_read_is_retried_by_the_backoff_as_a_new_take() {
    let (f, fake, items) = hosted(1, None);
    fake.call(|l| l.set_window(0, 10)).unwrap();
    let first = f.take(Some(Duration::from_secs(10))).unwrap();
    f.give(&first, Outcome::Failed);
    // The retry comes on the feed's clock: nobody asked for it.
    let retry = f.take(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(retry.0.cursor, first.0.cursor);
    let loaded = page(&items, &retry.0);
    assert_eq!(
        f.give_and_take(&retry, loaded, Some(Duration::ZERO)).err(),
        Some(NoJob::TimedOut)
    );
    assert_eq!(f.wait_quiescent(Some(Duration::from_secs(10))), Ok(()));
    close(&f, &fake);
    assert_eq!(items.released.load(Ordering::Relaxed), 1);
    let c = f.tally().read();
    assert_eq!(
        (c.failed, c.handed_out, c.accepted, c.running),
        (1, 1, 1, 0)
    );
}

#[test]
fn a_cancel_hint_lets_a_held_read_go_and_its_late_page_goes_back() {
    let (f, fake, items) = hosted(1, None);
    fake.call(|l| l.set_window(0, 10)).unwrap();
    let held = f.take(Some(Duration::from_secs(10))).unwrap();
    f.on_cancel(held.0.read_id);
    // Still needed: the read let go of fails, and its retry is another read to take, though
    // the hinted one is still held (it no longer counts against the one place).
    let (threads, _) = hosts(1, &f, &items);
    assert_eq!(f.wait_quiescent(Some(Duration::from_secs(10))), Ok(()));
    f.give(&held, page(&items, &held.0));
    close(&f, &fake);
    for t in threads {
        t.join().unwrap();
    }
    wait_for(|| items.released.load(Ordering::SeqCst) == items.made.load(Ordering::SeqCst));
    let c = f.tally().read();
    assert_eq!(c.handed_out, c.accepted + c.given_back);
    assert_eq!((c.late, c.running), (1, 0));
}

#[test]
fn at_most_workers_reads_are_held_at_once() {
    let (f, fake, items) = hosted(1, None);
    fake.call(|l| l.set_window(0, 10)).unwrap();
    let first = f.take(Some(Duration::from_secs(10))).unwrap();
    // A second read queued (as the loader issues one beside the first): not taken while the
    // one place is held.
    let mut second = first.0.clone();
    second.read_id = 1_000_000;
    f.on_issue(super::R(second));
    assert_eq!(
        f.take(Some(Duration::from_millis(100))).err(),
        Some(NoJob::TimedOut)
    );
    let loaded = page(&items, &first.0);
    f.give(&first, loaded);
    let next = f.take(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(next.0.read_id, 1_000_000);
    f.give(&next, Outcome::Failed);
    close(&f, &fake);
}

#[test]
fn an_answer_given_inside_another_feeds_answer_leaves_that_answer_its_own() {
    // A host thread answering feed A's read runs A's `release` (the page over its limit), and
    // from there answers feed B's read, then closes A: the close does not wait for the answer
    // this very thread is giving to A (B's answer, nested, must not make A's answer look like
    // another thread's).
    let (fa, fake_a, items_a) = hosted(1, None);
    let (fb, fake_b, items_b) = hosted(1, None);
    fake_a.call(|l| l.set_window(0, 10)).unwrap();
    fake_b.call(|l| l.set_window(0, 10)).unwrap();
    let ra = fa.take(Some(Duration::from_secs(10))).unwrap();
    let rb = fb.take(Some(Duration::from_secs(10))).unwrap();
    let closed = Arc::new(Mutex::new(None));
    {
        let (fa, fb, items_b, closed) = (
            Arc::clone(&fa),
            Arc::clone(&fb),
            Arc::clone(&items_b),
            Arc::clone(&closed),
        );
        *items_a.on_release.lock().unwrap() = Some(Box::new(move || {
            fb.give(&rb, page(&items_b, &rb.0));
            let t = Instant::now();
            let left = fa.close(Some(Duration::from_secs(3)));
            *closed.lock().unwrap() = Some((left, t.elapsed()));
        }));
    }
    let Outcome::Page(mut over) = page(&items_a, &ra.0) else {
        unreachable!()
    };
    over.count = ra.0.limit + 1;
    fa.give(&ra, Outcome::Page(over));
    let (left, took) = closed
        .lock()
        .unwrap()
        .take()
        .expect("closed inside release");
    assert_eq!(left, 0);
    assert!(took < Duration::from_secs(1), "the close waited {took:?}");
    fake_a.call(|l| l.close());
    close(&fb, &fake_b);
    assert_eq!(items_b.released.load(Ordering::SeqCst), 1);
}

#[test]
fn a_problem_found_while_the_host_acts_is_not_cleared_when_the_action_ends() {
    // Hosted mode: the read a window move issues may be taken and answered by a host thread
    // before the move returns; a bug in that answer is the move's to report, not to clear.
    let (f, fake, items) = hosted(1, None);
    f.will_act();
    fake.call(|l| l.set_window(0, 10)).unwrap();
    let read = f.take(Some(Duration::from_secs(10))).unwrap();
    let Outcome::Page(mut over) = page(&items, &read.0) else {
        unreachable!("page() returns a page")
    };
    over.count = read.0.limit + 1;
    f.give(&read, Outcome::Page(over));
    f.acted();
    assert_eq!(
        f.wait_quiescent(Some(Duration::from_millis(300))),
        Err(Problem::CountOverLimit)
    );
    close(&f, &fake);
    assert_eq!(items.released.load(Ordering::Relaxed), 1);
}

/// A `ready` hook that sends on a channel, as an event loop's wake-up does.
fn ready_hook(f: &Feed<Src>) -> Receiver<()> {
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    assert!(f.set_ready(Box::new(move || {
        let _ = tx.lock().unwrap().send(());
    })));
    assert!(!f.set_ready(Box::new(|| {})), "set once");
    rx
}

/// Takes every read ready now, without waiting, as an event loop's pump does.
fn take_ready(f: &Feed<Src>) -> Vec<super::R> {
    std::iter::from_fn(|| f.take(Some(Duration::ZERO)).ok()).collect()
}

/// A read a host's action issues is announced by the `ready` hook once the action ends, not
/// while it runs (an event loop's host would be woken for a read while its own call still
/// delivers the action's `release` callbacks).
#[test]
fn the_ready_hook_announces_an_actions_reads_when_it_ends() {
    let (f, fake, items) = hosted(4, None);
    let woken = ready_hook(&f);
    f.will_act();
    fake.call(|l| l.set_window(0, 10)).unwrap();
    assert!(
        woken.try_recv().is_err(),
        "the hook fired inside the action"
    );
    f.acted();
    woken
        .recv_timeout(Duration::from_secs(10))
        .expect("the action's end did not fire the hook");
    while f.wait_quiescent(Some(Duration::ZERO)).is_err() {
        for read in take_ready(&f) {
            f.give(&read, page(&items, &read.0));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 10));
    close(&f, &fake);
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
}

#[test]
fn a_host_woken_only_by_the_ready_hook_loads_every_read_the_feed_issues() {
    let (f, fake, items) = hosted(4, None);
    let woken = ready_hook(&f);
    fake.call(|l| l.set_window(0, 40)).unwrap();
    let mut failed_once = false;
    // The host never waits in take: only the hook tells it a read is there. The reads come
    // from its own call (the first), from each answer (given with `give`: the next read is
    // queued, not chained) and from the feed's clock (the retry of the failed one).
    while f.wait_quiescent(Some(Duration::ZERO)).is_err() {
        woken
            .recv_timeout(Duration::from_secs(10))
            .expect("a read was left queued and the host was not told");
        for read in take_ready(&f) {
            let loaded = if failed_once {
                page(&items, &read.0)
            } else {
                failed_once = true;
                Outcome::Failed
            };
            f.give(&read, loaded);
        }
    }
    assert_eq!(fake.loader.lock().unwrap().covered(), (0, 40));
    close(&f, &fake);
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
    let c = f.tally().read();
    assert_eq!((c.failed, c.running), (1, 0));
    assert_eq!(c.handed_out, c.accepted + c.given_back);
}

#[test]
fn the_ready_hook_tells_the_host_when_a_read_let_go_at_its_timeout_frees_a_place() {
    let config = Config {
        page_size: 10,
        prefetch_distance: 0,
        // No automatic retry: the only news after the timeout is the place it frees.
        max_auto_retries: 0,
        ..Config::default()
    };
    let items = Arc::new(Items::default());
    let (f, fake, items) = feed_configured(items, 1, Some(Duration::from_millis(50)), true, config);
    let woken = ready_hook(&f);
    fake.call(|l| l.set_window(0, 10)).unwrap();
    woken.recv_timeout(Duration::from_secs(10)).unwrap();
    let held = f.take(Some(Duration::ZERO)).unwrap();
    // A second read queued behind the one place, held as by a hung load.
    let mut second = held.0.clone();
    second.read_id = 1_000_000;
    f.on_issue(super::R(second));
    woken.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(take_ready(&f).is_empty());
    while woken.try_recv().is_ok() {}
    // The supervisor lets the held read go at its timeout: the host is told, and takes.
    woken
        .recv_timeout(Duration::from_secs(10))
        .expect("the place freed at the read timeout was not told");
    let next = take_ready(&f);
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].0.read_id, 1_000_000);
    f.give(&next[0], Outcome::Failed);
    f.give(&held, page(&items, &held.0));
    close(&f, &fake);
    assert_eq!(items.released.load(Ordering::Relaxed), 1);
    let c = f.tally().read();
    assert_eq!((c.timed_out, c.late, c.running), (1, 1, 0));
}

#[test]
fn a_held_read_reports_a_cancel_hint_and_not_its_read_timeout() {
    let (f, fake, items) = hosted(2, Some(Duration::from_millis(50)));
    fake.call(|l| l.set_window(0, 10)).unwrap();
    let held = f.take(Some(Duration::from_secs(10))).unwrap();
    let id = held.0.read_id;
    assert!(!f.hinted(id), "still needed");
    f.on_cancel(id);
    assert!(f.hinted(id), "let go of by the hint: its load may stop");
    f.give(&held, page(&items, &held.0));
    assert!(!f.hinted(id), "answered");
    // A read let go of at its read timeout is not a hint: its load may be the only one left.
    let retry = f.take(Some(Duration::from_secs(10))).unwrap();
    wait_for(|| f.tally().read().timed_out == 1);
    assert!(!f.hinted(retry.0.read_id));
    f.give(&retry, page(&items, &retry.0));
    close(&f, &fake);
    assert_eq!(
        items.released.load(Ordering::Relaxed),
        items.made.load(Ordering::Relaxed)
    );
}
