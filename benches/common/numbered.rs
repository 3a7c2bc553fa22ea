//! The numbered source of the depth and liveness benches: items `0..len`, a cursor the index
//! of the next item as 8 big-endian bytes (empty: the source's start), read forward and
//! backward.
#![allow(dead_code)]

use super::host::Source;
use loader::{Direction, Read};

/// The cursor before item `index`.
pub fn cursor_at(index: u64) -> Vec<u8> {
    match index {
        0 => Vec::new(),
        i => i.to_be_bytes().to_vec(),
    }
}

pub fn index_of(cursor: &[u8]) -> u64 {
    match cursor.len() {
        0 => 0,
        _ => u64::from_be_bytes(cursor.try_into().expect("an 8-byte cursor")),
    }
}

/// Items `0..len`; an acquisition holds the index of its first item and its count.
pub struct Numbered {
    pub len: u64,
}

impl Source for Numbered {
    type Held = (u64, u32);

    fn answer(&mut self, read: &Read) -> ((u64, u32), u32, Vec<u8>, bool) {
        let at = index_of(&read.cursor);
        let limit = u64::from(read.limit);
        let (first, count, next, end) = match read.direction {
            Direction::Forward => {
                let end = (at + limit).min(self.len);
                (at, (end - at) as u32, cursor_at(end), end == self.len)
            }
            Direction::Backward => {
                let from = at.saturating_sub(limit);
                (from, (at - from) as u32, cursor_at(from), from == 0)
            }
        };
        ((first, count), count, next, end)
    }
}
