//! The supervisor thread: the feed's clock (it ticks the loader when its deadline is due:
//! backoff retries, read timeouts), and the workers a load ended (their reads failed, their
//! threads joined and replaced).

use super::{Feed, Source};
use std::time::Duration;

impl<S: Source> Feed<S> {
    /// The supervisor's life: until the feed closes.
    pub(super) fn supervise(self: std::sync::Arc<Self>) {
        loop {
            let (lost, bad) = {
                let mut st = self.state();
                if st.closing {
                    return;
                }
                st.wake = false;
                let lost = std::mem::take(&mut st.lost);
                let threads: Vec<_> = lost
                    .iter()
                    .filter_map(|(w, _)| {
                        let at = st.workers.iter().position(|x| x.id == *w)?;
                        st.workers.remove(at).thread
                    })
                    .collect();
                (
                    (lost, threads),
                    st.problem.is_some(),
                )
            };
            let (lost, threads) = lost;
            for t in threads {
                t.join();
            }
            let Some(ledger) = self.ledger() else { return };
            for (_, read) in &lost {
                if !self.spawn_worker() {
                    // No thread: the feed runs on with fewer workers.
                }
                if let Some(id) = read {
                    ledger.tick(self.now_ms());
                    ledger.fail(*id);
                }
            }
            if !lost.is_empty() {
                self.on_changed();
            }
            // A bug in the load is not retried until the host acts.
            let deadline = if bad { None } else { ledger.next_deadline() };
            let now = self.now_ms();
            if let Some(d) = deadline {
                if d <= now {
                    ledger.tick(now);
                    self.on_changed();
                    continue;
                }
            }
            let wait = deadline.map_or(super::HORIZON, |d| {
                Duration::from_millis(d - now + 1).min(super::HORIZON)
            });
            let st = self.state();
            if !st.closing && !st.wake {
                drop(
                    self.timer
                        .wait_timeout(st, wait)
                        .unwrap_or_else(|e| e.into_inner()),
                );
            }
        }
    }
}
