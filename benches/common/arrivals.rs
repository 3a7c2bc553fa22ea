//! The exogenous events of the streams: invalidations and window moves, 5% each.
//!
//! They arrive at random (a seeded splitmix64, so every run is the same) and queue until the
//! host may deliver them, so that an invalidation can land while a read is pending, which is
//! how a read turns stale. A fixed period would lock them into step with the repairs and no
//! read would ever be overtaken.
#![allow(dead_code)]

use super::rng::Rng;

#[derive(Clone, Debug)]
pub struct Arrivals {
    rng: Rng,
    pub invalidations: u64,
    pub moves: u64,
}

impl Arrivals {
    pub fn new(seed: u64) -> Arrivals {
        Arrivals {
            rng: Rng(seed),
            invalidations: 0,
            moves: 0,
        }
    }

    /// One event's worth of time passes.
    #[inline]
    pub fn tick(&mut self) {
        match self.rng.next() % 100 {
            0..=4 => self.invalidations += 1,
            5..=9 => self.moves += 1,
            _ => {}
        }
    }

    /// Time passes until something arrives: the host had nothing else to do.
    pub fn wait(&mut self) {
        while self.invalidations + self.moves == 0 {
            self.tick();
        }
    }
}
