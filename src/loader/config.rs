//! The loader's settings, each validated, each with a documented default.

use thiserror::Error;

/// The longest cursor the loader accepts from a host, in bytes.
///
/// A cursor is a position in the source (a keyset pagination key, a log offset, an API page
/// token). The bound keeps a buggy host from making the loader copy unbounded data.
pub const MAX_CURSOR_LEN: usize = 4096;

/// The largest position a jump may give (2^62): positions count items on from there, so
/// they keep room to grow without overflowing.
pub const MAX_POSITION: u64 = 1 << 62;

/// The largest `page_size` accepted.
pub const MAX_PAGE_SIZE: u32 = 1 << 20;

/// The default `max_pages`: a loader made with the default config holds a bounded number
/// of pages whatever the host does (see [`Config::max_pages`]).
pub const DEFAULT_MAX_PAGES: u32 = 64;

/// `jump_threshold`'s default: the window's length plus twice the prefetch.
pub const JUMP_THRESHOLD_AUTO: u64 = u64::MAX;

/// What one cursor memo entry is charged, besides a long cursor's bytes.
pub use super::view::MEMO_ENTRY_BYTES;

/// Loader settings. [`Config::default`] gives the documented defaults; [`Config::validate`]
/// says what is wrong with a bad one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Items per read (`limit`). Default 50; 1..=[`MAX_PAGE_SIZE`].
    pub page_size: u32,
    /// How many items to keep loaded on each side of the window: before its start and past
    /// its end. Default 50.
    pub prefetch_distance: u64,
    /// A page lying wholly more than this many items before the window start (and before the
    /// prefetch) is released. 0 (the default) drops no page for this reason.
    pub drop_margin: u64,
    /// The most pages the view holds, on both sides of the window. Over it, the pages
    /// farthest from the window are released first; pages the window plus prefetch needs are
    /// never released, so a window wider than the bound holds what it needs. Default
    /// [`DEFAULT_MAX_PAGES`]; 0 asks for no bound. The acquisitions held at every instant are
    /// at most max(this bound, the pages the window plus prefetch overlaps), plus one while a
    /// finite read is in flight, plus one running repair's staged pages,
    /// ceil((window + 2 prefetch) / page_size) + 2 with full pages, however far it walks.
    pub max_pages: u32,
    /// A window moved more than this many items beyond the held pages (its prefetch
    /// included) does not walk there page by page: it starts at the nearest cursor the loader
    /// knows for it (the cursor memo, the source's start while positions are the source's
    /// own, or the host's `locate`), as a jump does. [`JUMP_THRESHOLD_AUTO`] (the default):
    /// the window's length plus twice `prefetch_distance`. 0: always walk.
    pub jump_threshold: u64,
    /// The cursor memo's budget, in bytes: where pages read and let go started, by
    /// position, so that a far move back starts near its target. Each cursor is charged
    /// [`MEMO_ENTRY_BYTES`] plus its length when longer than 14 bytes; when full, every other
    /// cursor is forgotten (an even grid remains). Default 4 MiB (87,381 short cursors:
    /// every page of 4.3 million items at 50 a page); 0 keeps none.
    pub cursor_memo_bytes: u64,
    /// The first backoff delay after an own failure, in ms. Default 100; at least 1.
    pub backoff_initial_ms: u64,
    /// The cap on the backoff delay, in ms. Default 30,000; at least `backoff_initial_ms`.
    pub backoff_max_ms: u64,
    /// The factor between consecutive delays. Default 2.0; finite, 1.0..=16.0.
    pub backoff_multiplier: f64,
    /// Automatic retries after consecutive own failures before the loader waits for an
    /// explicit retry. Any successful answer starts the count again, as does a repair that
    /// commits without an answer (nothing to re-read). Default 5; 0 turns automatic retry
    /// off.
    pub max_auto_retries: u32,
    /// Seeds the backoff jitter, so runs are reproducible. Default 0. After `k` automatic
    /// retries since the last success, the next delay is drawn from `d / 2..=d` ms, where `d`
    /// is `backoff_initial_ms · backoff_multiplier^k` capped at `backoff_max_ms`.
    pub jitter_seed: u64,
    /// How long, in ms of the host's clock (`tick`), a superseded read's answer is awaited
    /// before the loader lets it go as if the host had abandoned it (`Loader::abandon`): a
    /// host that never answers a superseded read does not block new reads. Default 10,000;
    /// 0 never lets go.
    pub read_timeout_ms: u64,
    /// A full read an invalidation overtook is followed by a repair, so no invalidation is
    /// lost. Default on; off restores the model's exact `unifiedMin` rules, which lose it.
    pub recheck_full: bool,
    /// A repair an invalidation overtook runs to its end and commits, since its data is newer
    /// than the view's, and a new repair starts at once; so the view keeps committing however
    /// often the source changes. Default on; off settles an overtaken repair stale and starts
    /// a replacement, so under invalidations faster than a repair the view never refreshes.
    /// Takes effect with `recheck_full` on (the model's `unifiedMinChurn`). The page retry
    /// (a page read's failure with nothing else owed read again as that page) needs both on.
    pub commit_overtaken: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            page_size: 50,
            prefetch_distance: 50,
            drop_margin: 0,
            max_pages: DEFAULT_MAX_PAGES,
            backoff_initial_ms: 100,
            backoff_max_ms: 30_000,
            backoff_multiplier: 2.0,
            max_auto_retries: 5,
            jitter_seed: 0,
            read_timeout_ms: 10_000,
            recheck_full: true,
            commit_overtaken: true,
            jump_threshold: JUMP_THRESHOLD_AUTO,
            cursor_memo_bytes: 4 << 20,
        }
    }
}

/// What is wrong with a [`Config`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// `page_size` is 0 or over [`MAX_PAGE_SIZE`].
    #[error("page_size must be between 1 and {MAX_PAGE_SIZE}")]
    PageSize,
    /// `backoff_initial_ms` is 0.
    #[error("backoff_initial_ms must be at least 1")]
    BackoffInitial,
    /// `backoff_max_ms` is below `backoff_initial_ms`.
    #[error("backoff_max_ms must be at least backoff_initial_ms")]
    BackoffMax,
    /// `backoff_multiplier` is not finite, or outside 1.0..=16.0.
    #[error("backoff_multiplier must be a finite number between 1.0 and 16.0")]
    BackoffMultiplier,
}

impl Config {
    /// Checks every field's range; the first field out of range is named.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.page_size == 0 || self.page_size > MAX_PAGE_SIZE {
            return Err(ConfigError::PageSize);
        }
        if self.backoff_initial_ms == 0 {
            return Err(ConfigError::BackoffInitial);
        }
        if self.backoff_max_ms < self.backoff_initial_ms {
            return Err(ConfigError::BackoffMax);
        }
        if !(self.backoff_multiplier.is_finite() && (1.0..=16.0).contains(&self.backoff_multiplier))
        {
            return Err(ConfigError::BackoffMultiplier);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_each_bad_field_is_named() {
        assert_eq!(Config::default().validate(), Ok(()));
        let bad = [
            (
                Config {
                    page_size: 0,
                    ..Config::default()
                },
                ConfigError::PageSize,
            ),
            (
                Config {
                    page_size: MAX_PAGE_SIZE + 1,
                    ..Config::default()
                },
                ConfigError::PageSize,
            ),
            (
                Config {
                    backoff_initial_ms: 0,
                    ..Config::default()
                },
                ConfigError::BackoffInitial,
            ),
            (
                Config {
                    backoff_initial_ms: 500,
                    backoff_max_ms: 499,
                    ..Config::default()
                },
                ConfigError::BackoffMax,
            ),
            (
                Config {
                    backoff_multiplier: f64::NAN,
                    ..Config::default()
                },
                ConfigError::BackoffMultiplier,
            ),
            (
                Config {
                    backoff_multiplier: 0.5,
                    ..Config::default()
                },
                ConfigError::BackoffMultiplier,
            ),
        ];
        for (c, e) in bad {
            assert_eq!(c.validate(), Err(e));
        }
    }
}
