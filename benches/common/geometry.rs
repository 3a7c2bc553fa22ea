//! The view geometry the counting benches (depth, liveness) share: page 50, prefetch 50, a
//! window of 100 items.
#![allow(dead_code)]

use loader::Config;

pub const PAGE: u32 = 50;
pub const PREFETCH: u64 = 50;
pub const WINDOW: u64 = 100;

/// The loader's config at this geometry, keeping at most `max_pages` pages (0: no bound).
pub fn config(max_pages: u32) -> Config {
    Config {
        page_size: PAGE,
        prefetch_distance: PREFETCH,
        max_pages,
        ..Config::default()
    }
}
