//! Backoff after own failures: exponential, capped, with deterministic seeded jitter.

use super::Config;

#[derive(Clone, Debug)]
pub(super) struct Backoff {
    /// Own failures since the last success.
    pub(super) failures: u32,
    /// Automatic retries spent since the last success.
    pub(super) retries: u32,
    /// When the next automatic retry is due, if one is armed.
    pub(super) deadline: Option<u64>,
    /// What the last own failure since the last success was: only `explain` reads it.
    pub(super) cause: Option<Cause>,
    /// A stalled cursor is among the failures in a row: reading the same source again stalls
    /// again, so the successful steps on the way to it (a full read's first pages) do not
    /// start the count again; only a commit or a current page does ([`Backoff::reset`]).
    pub(super) stall_held: bool,
    rng: u64,
}

/// What made an own failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cause {
    /// The host failed (or abandoned, still needed) read `read_id`.
    Failed {
        /// The read.
        read_id: u64,
    },
    /// Read `read_id`'s answer repeated its cursor (a stalled cursor), with `count` items.
    Stalled {
        /// The read.
        read_id: u64,
        /// The items its answer carried.
        count: u32,
    },
}

impl Backoff {
    pub(super) fn new(seed: u64) -> Backoff {
        Backoff {
            failures: 0,
            retries: 0,
            deadline: None,
            cause: None,
            stall_held: false,
            rng: seed,
        }
    }

    /// A success: the count starts again.
    pub(super) fn reset(&mut self) {
        self.failures = 0;
        self.retries = 0;
        self.deadline = None;
        self.cause = None;
        self.stall_held = false;
    }

    /// A successful answer (a page, or a step of a repair or retry): the count of failures
    /// and automatic retries in a row starts again. A deadline already armed stays.
    pub(super) fn succeeded(&mut self) {
        if self.stall_held && !super::mutant::on(super::mutant::Mutant::RetryResetBySuccess) {
            // A stall is no transient failure: the steps before it succeed every time.
            return;
        }
        self.failures = 0;
        self.retries = 0;
        self.cause = None;
    }

    /// Read `read_id`'s answer repeated its cursor, with `count` items: an own failure (see
    /// [`Backoff::failed`]) that holds the count until a commit or a current page.
    pub(super) fn stalled(&mut self, read_id: u64, count: u32) {
        self.cause = Some(Cause::Stalled { read_id, count });
        self.stall_held = true;
    }

    /// An own failure at `now`: arms the timer unless the automatic retries are spent.
    pub(super) fn failed(&mut self, config: &Config, now: u64) {
        self.failures = self.failures.saturating_add(1);
        self.deadline = if self.retries < config.max_auto_retries {
            Some(now.saturating_add(self.delay(config)))
        } else {
            None
        };
    }

    /// The delay before retry number `self.retries + 1`: `initial * multiplier^retries`, capped,
    /// then drawn from its upper half so that many loaders do not retry in step.
    pub(super) fn delay(&mut self, config: &Config) -> u64 {
        let exp = config
            .backoff_multiplier
            .powi(self.retries.min(1024) as i32);
        let raw = (config.backoff_initial_ms as f64 * exp).min(config.backoff_max_ms as f64);
        let d = raw as u64;
        let half = d / 2;
        half + self.next_random() % (d - half + 1)
    }

    fn next_random(&mut self) -> u64 {
        // splitmix64: one state word, full period, good enough for jitter.
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The checker's canonical form: the cause of the last failure is left out (only `explain`
/// reads it).
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Backoff {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        let Backoff {
            failures,
            retries,
            deadline,
            cause: _,
            stall_held,
            rng,
        } = self;
        failures.canon(e);
        retries.canon(e);
        e.opt(deadline, |e, t| e.time(*t));
        stall_held.canon(e);
        e.num(*rng);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_exponentially_are_capped_and_jitter_is_seeded() {
        let c = Config {
            backoff_initial_ms: 100,
            backoff_max_ms: 1000,
            backoff_multiplier: 2.0,
            ..Config::default()
        };
        let mut a = Backoff::new(7);
        let mut b = Backoff::new(7);
        let mut prev_cap = 0;
        for retries in 0..8 {
            a.retries = retries;
            b.retries = retries;
            let cap = (100u64 << retries).min(1000);
            let d = a.delay(&c);
            assert!(
                d >= cap / 2 && d <= cap,
                "retry {retries}: {d} not in [{}, {cap}]",
                cap / 2
            );
            assert_eq!(d, b.delay(&c), "same seed, same jitter");
            assert!(cap >= prev_cap);
            prev_cap = cap;
        }
        let mut other = Backoff::new(8);
        let draws: Vec<u64> = (0..8).map(|_| other.delay(&c)).collect();
        let mut same = Backoff::new(7);
        assert_ne!(draws, (0..8).map(|_| same.delay(&c)).collect::<Vec<_>>());
    }

    #[test]
    fn spent_retries_disarm_the_timer_and_success_resets() {
        let c = Config {
            max_auto_retries: 2,
            ..Config::default()
        };
        let mut b = Backoff::new(0);
        b.failed(&c, 0);
        assert!(b.deadline.is_some());
        b.retries = 2;
        b.failed(&c, 0);
        assert_eq!(b.deadline, None);
        b.reset();
        b.failed(&c, 10);
        assert!(b.deadline.unwrap() >= 10 + 50);
    }
}
