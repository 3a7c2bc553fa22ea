//! The exogenous events of the streams: invalidations and window moves, 5% each.
//!
//! They arrive at random (a seeded splitmix64, so every run is the same) and queue until the
//! host may deliver them, so that an invalidation can land while a read is pending, which is
//! how a read turns stale. A fixed period would lock them into step with the repairs and no
//! read would ever be overtaken.
#![allow(dead_code)]

#[derive(Clone, Debug)]
pub struct Arrivals {
    rng: u64,
    pub invalidations: u64,
    pub moves: u64,
}

impl Arrivals {
    pub fn new(seed: u64) -> Arrivals {
        Arrivals {
            rng: seed,
            invalidations: 0,
            moves: 0,
        }
    }

    fn next(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// One event's worth of time passes.
    #[inline]
    pub fn tick(&mut self) {
        match self.next() % 100 {
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
