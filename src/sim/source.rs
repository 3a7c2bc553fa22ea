//! The simulated ordered source, and its keyset pagination.
//!
//! Items ordered by `(key, id)`, a key filter, and reads over 8-byte cursors: forward,
//! backward and bounded.

use crate::loader::{Direction, Read};

/// An item of the source: its key and a unique id (the tiebreaker).
pub type Item = (u32, u32);

/// The ordered source.
#[derive(Clone, Debug, Default)]
pub struct Source {
    items: Vec<Item>,
    next_id: u32,
    /// Bit `k` set: items with key `k` are filtered out of every read.
    pub(super) hidden_keys: u32,
    /// How a bounded read is answered.
    bounded: Bounded,
}

/// How the source answers a bounded read (one with `until`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bounded {
    /// As the header asks: it scans past filtered items until it has `limit` of them or
    /// reaches `until`, so only the bound or the source's end makes a page short.
    #[default]
    Contract,
    /// Like an unbounded read, it scans a fixed number of items (`limit`, stopping at
    /// `until`); when the filter keeps none of them and the scan stopped short of `until`, it
    /// answers an empty page whose cursor moved (the last item scanned), which the loader
    /// reads on from. Otherwise it answers as [`Bounded::Contract`] does.
    Naive,
}

/// The cursor after `item`: its key and id, 8 bytes big endian.
pub fn encode_cursor(item: Item) -> Vec<u8> {
    let mut c = item.0.to_be_bytes().to_vec();
    c.extend_from_slice(&item.1.to_be_bytes());
    c
}

/// The keys of appended items start here, above every other key the simulation makes.
const APPENDED: u32 = 1 << 30;

fn decode_cursor(c: &[u8]) -> Option<Item> {
    if c.len() != 8 {
        return None;
    }
    let key = u32::from_be_bytes(c[..4].try_into().ok()?);
    let id = u32::from_be_bytes(c[4..].try_into().ok()?);
    Some((key, id))
}

/// The answer to a read, as the host computed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The items returned, in source order.
    pub items: Vec<Item>,
    /// The cursor after the last item scanned.
    pub next_cursor: Vec<u8>,
    /// Whether the scan reached the source's end.
    pub end_of_source: bool,
}

impl Source {
    /// A source of `n` items with keys spread over `0..keys`, so equal keys abound.
    pub fn with_items(n: usize, keys: u32) -> Source {
        let mut s = Source::default();
        for i in 0..n {
            s.insert((i as u32 * 7) % keys.max(1));
        }
        s
    }

    /// A source of `n` items in order, four to a key (so ties abound), built in one pass:
    /// for long sources, where [`Source::with_items`] (one sorted insert per item) is
    /// quadratic.
    pub fn numbered(n: usize) -> Source {
        let items: Vec<Item> = (0..n as u32).map(|i| (i / 4, i)).collect();
        Source {
            items,
            next_id: n as u32,
            hidden_keys: 0,
            bounded: Bounded::Contract,
        }
    }

    /// Filters out every item whose key has its bit set in `mask` (keys 0..32).
    pub fn with_hidden_keys(mut self, mask: u32) -> Source {
        self.hidden_keys = mask;
        self
    }

    /// Answers bounded reads as `bounded` says.
    pub fn with_bounded(mut self, bounded: Bounded) -> Source {
        self.bounded = bounded;
        self
    }

    /// Every item, the filtered ones included.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Whether `item` passes the filter.
    pub(super) fn visible(&self, item: &Item) -> bool {
        item.0 >= 32 || self.hidden_keys & (1 << item.0) == 0
    }

    /// The items a reader sees from position `at` on: the filter applied.
    pub fn visible_from(&self, at: usize) -> impl Iterator<Item = Item> + '_ {
        self.items[at.min(self.items.len())..]
            .iter()
            .copied()
            .filter(|i| self.visible(i))
    }

    /// How many items, filtered ones included.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the source holds no item at all.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Inserts a new item with `key`, in order; returns it.
    pub fn insert(&mut self, key: u32) -> Item {
        let item = (key, self.next_id);
        self.next_id += 1;
        let at = self.items.partition_point(|&x| x < item);
        self.items.insert(at, item);
        item
    }

    /// Appends an item after every item there is or was (a key above all others, growing
    /// with each append, as a log's sequence number does: no cursor the host gave out, a
    /// deleted item's included, lies after it); returns it. Its key is past the filter's.
    pub fn append(&mut self) -> Item {
        let item = (APPENDED + self.next_id, self.next_id);
        self.next_id += 1;
        self.items.push(item);
        item
    }

    /// Deletes the item at `index` (modulo the length); nothing when empty. Returns it.
    pub fn delete(&mut self, index: usize) -> Option<Item> {
        if self.items.is_empty() {
            None
        } else {
            Some(self.items.remove(index % self.items.len()))
        }
    }

    /// The position of the first item after `cursor`.
    pub fn position(&self, cursor: &[u8]) -> usize {
        match decode_cursor(cursor) {
            None => 0,
            Some(c) => self.items.partition_point(|&x| x <= c),
        }
    }

    /// The cursor just before the item at `index`: after the item before it, or the
    /// source's start.
    pub fn cursor_before(&self, index: usize) -> Vec<u8> {
        match index.min(self.items.len()) {
            0 => Vec::new(),
            i => encode_cursor(self.items[i - 1]),
        }
    }

    /// Answers `read` in its direction (and within its bound).
    pub fn answer(&self, read: &Read) -> Answer {
        match (read.direction, &read.until) {
            (Direction::Forward, Some(until)) => self.read_until(&read.cursor, until, read.limit),
            (Direction::Forward, None) => self.read(&read.cursor, read.limit),
            (Direction::Backward, _) => self.read_backward(&read.cursor, read.limit),
        }
    }

    /// Orders two cursors as the source does (by item; both non-empty).
    pub fn compare(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        decode_cursor(a).cmp(&decode_cursor(b))
    }

    /// A bounded read: the visible items after `cursor` and at or before `until` (the position
    /// after an item), at most `limit` of them, scanning past filtered items; fewer than
    /// `limit` means it reached `until` or the source's end. An empty page that reached
    /// `until` (past `cursor`) answers `until` as its next cursor. A [`Bounded::Naive`] source first scans
    /// only `limit` items, and answers an empty page short of `until` when all are filtered.
    pub fn read_until(&self, cursor: &[u8], until: &[u8], limit: u32) -> Answer {
        let at = self.position(cursor);
        let stop = self.position(until).min(self.items.len());
        if self.bounded == Bounded::Naive {
            let end = (at + limit as usize).min(stop);
            if at < end && end < stop && !self.items[at..end].iter().any(|i| self.visible(i)) {
                return Answer {
                    items: Vec::new(),
                    next_cursor: encode_cursor(self.items[end - 1]),
                    end_of_source: false,
                };
            }
        }
        let mut items = Vec::new();
        let mut scanned = at;
        while scanned < stop && items.len() < limit as usize {
            let item = self.items[scanned];
            if self.visible(&item) {
                items.push(item);
            }
            scanned += 1;
        }
        let reached_until = scanned == stop && Source::compare(until, cursor).is_gt();
        let next_cursor = if items.is_empty() && reached_until {
            until.to_vec()
        } else if scanned == at {
            cursor.to_vec()
        } else {
            encode_cursor(self.items[scanned - 1])
        };
        Answer {
            items,
            next_cursor,
            end_of_source: scanned == self.items.len(),
        }
    }

    /// Keyset pagination backward: scans up to `limit` items just before `cursor` and
    /// returns those the filter keeps, in source order; the next cursor is the position
    /// before the first item scanned, and the end flag says the source's start was reached.
    pub fn read_backward(&self, cursor: &[u8], limit: u32) -> Answer {
        let at = self.position(cursor);
        let from = at.saturating_sub(limit as usize);
        let items = self.items[from..at]
            .iter()
            .copied()
            .filter(|i| self.visible(i))
            .collect();
        Answer {
            items,
            next_cursor: self.cursor_before(from),
            end_of_source: from == 0,
        }
    }

    /// Keyset pagination: scans up to `limit` items after `cursor` and returns those the
    /// filter keeps; the next cursor is the last item scanned.
    pub fn read(&self, cursor: &[u8], limit: u32) -> Answer {
        let at = self.position(cursor);
        let end = (at + limit as usize).min(self.items.len());
        let scanned = &self.items[at..end];
        let items = scanned
            .iter()
            .copied()
            .filter(|i| self.visible(i))
            .collect();
        let next_cursor = scanned
            .last()
            .map_or_else(|| cursor.to_vec(), |&i| encode_cursor(i));
        Answer {
            items,
            next_cursor,
            end_of_source: end == self.items.len(),
        }
    }
}

/// The checker's canonical form: the items and the next id, the filter and how bounded
/// reads are answered.
impl crate::check::canon::Canon for Source {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        let Source {
            items,
            next_id,
            hidden_keys,
            bounded,
        } = self;
        items.canon(e);
        next_id.canon(e);
        hidden_keys.canon(e);
        e.num(*bounded as u64);
    }
}

impl crate::check::canon::Canon for Answer {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        let Answer {
            items,
            next_cursor,
            end_of_source,
        } = self;
        items.canon(e);
        e.bytes(next_cursor);
        end_of_source.canon(e);
    }
}
