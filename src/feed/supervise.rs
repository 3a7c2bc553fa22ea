//! The supervisor thread: the feed's clock (it ticks the loader when its deadline is due:
//! backoff retries, read timeouts), loads that outlive their timeout (their reads let go of,
//! another worker started in their place), and the workers that left (joined; replaced when a
//! load ended the thread).

use super::sync::{mutant, thread_local, Instant, Mutant};
use super::{Feed, Source, HORIZON};
use std::sync::Arc;
use std::time::Duration;

thread_local! {
    /// The feed whose supervisor this thread is (its address), or 0.
    static SUPERVISING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether the calling thread is `feed`'s supervisor (the clock thread).
pub(super) fn supervisor_of<S: Source>(feed: &Feed<S>) -> bool {
    SUPERVISING.with(|c| c.get()) == feed as *const Feed<S> as usize
}

impl<S: Source> Feed<S> {
    /// The supervisor's life: until the feed closes.
    pub(super) fn supervise(self: Arc<Self>) {
        SUPERVISING.with(|c| c.set(&*self as *const Feed<S> as usize));
        loop {
            let now = Instant::now();
            let mut hinted_stuck = 0;
            let (gone, threads, overdue, next_overdue, bad) = {
                let mut st = self.state();
                if st.closing {
                    return;
                }
                st.wake = false;
                st.timer_until = None;
                let gone = std::mem::take(&mut st.lost);
                let threads: Vec<_> = gone
                    .iter()
                    .filter_map(|g| {
                        let at = st.workers.iter().position(|x| x.id == g.worker)?;
                        st.workers.remove(at).thread
                    })
                    .collect();
                // Loads running past their timeout: their reads are let go of.
                let mut overdue = Vec::new();
                let mut next_overdue: Option<Instant> = None;
                if let Some(limit) = self.load_timeout {
                    for (&id, slot) in &st.slots {
                        if let Some((started, worker)) = slot.started {
                            let due = started + limit;
                            if due <= now {
                                overdue.push((id, worker));
                            } else {
                                next_overdue = Some(next_overdue.map_or(due, |d| d.min(due)));
                            }
                        }
                    }
                    for &(id, worker) in &overdue {
                        st.slots.remove(&id);
                        // Hosted mode: the stuck thread is the host's; no worker replaces it.
                        if !self.hosted {
                            st.surplus.insert(worker);
                        }
                    }
                    // Hinted loads past their timeout: let go of already, their workers are
                    // replaced the same way.
                    let mut stuck = Vec::new();
                    for (&id, &(started, worker)) in &st.hinted {
                        let due = started + limit;
                        if due <= now {
                            stuck.push((id, worker));
                        } else {
                            next_overdue = Some(next_overdue.map_or(due, |d| d.min(due)));
                        }
                    }
                    for &(id, worker) in &stuck {
                        st.hinted.remove(&id);
                        if !self.hosted {
                            st.surplus.insert(worker);
                        }
                    }
                    hinted_stuck = stuck.len();
                }
                (gone, threads, overdue, next_overdue, st.problem.is_some())
            };
            for t in threads {
                t.join();
            }
            let Some(ledger) = self.ledger() else { return };
            self.tally.timed_out(overdue.len() + hinted_stuck);
            let replace = gone.iter().filter(|g| g.replace).count() + overdue.len() + hinted_stuck;
            // Hosted mode: the reads issued in the stuck ones' place go to another host thread.
            for _ in 0..if self.hosted { 0 } else { replace } {
                // Without a thread, the feed runs on with fewer workers.
                let _ = self.spawn_worker();
            }
            let failed: Vec<u64> = gone
                .iter()
                .filter_map(|g| g.read)
                .chain(overdue.iter().map(|&(id, _)| id))
                .collect();
            if !failed.is_empty() {
                ledger.tick(self.now_ms());
                for id in failed {
                    // A read still needed fails (the backoff retries it); one superseded is
                    // let go of at no cost. A late answer is stale.
                    ledger.abandon(id);
                }
            }
            if !gone.is_empty() || !overdue.is_empty() {
                self.on_changed();
            }
            if self.hosted && !overdue.is_empty() {
                // Places freed: a read queued behind the held ones may be taken now.
                self.work.notify_all();
                self.wake_host();
            }
            // A bug in the load is not retried until the host acts.
            let deadline = if bad || mutant(Mutant::NoTick) {
                None
            } else {
                ledger.next_deadline()
            };
            let now_ms = self.now_ms();
            if let Some(d) = deadline {
                if d <= now_ms {
                    ledger.tick(now_ms);
                    self.on_changed();
                    continue;
                }
            }
            let mut wait = deadline.map_or(HORIZON, |d| {
                Duration::from_millis(d - now_ms + 1).min(HORIZON)
            });
            if let Some(due) = next_overdue {
                wait = wait
                    .min(due.saturating_duration_since(Instant::now()) + Duration::from_millis(1));
            }
            let mut st = self.state();
            if !st.closing && !st.wake {
                // Asleep until then: what falls due sooner wakes it (`State::clock_needed`).
                st.timer_until = Some(Instant::now() + wait);
                let mut st = self
                    .timer
                    .wait_timeout(st, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                st.timer_until = None;
            }
        }
    }
}
