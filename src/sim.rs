//! A deterministic simulation of a host: an in-memory ordered source, out-of-order answers,
//! injected failures, source mutations and window moves, with the loader's properties checked
//! after every step.
//!
//! The source is keyed by `(key, id)` with many equal keys, so cursors must encode the
//! tiebreaker for keyset pagination to be exact. A cursor is the 8 bytes `key ++ id` (big
//! endian) of the last item read; empty is the source's start.
//!
//! A source may filter keys out, as a query with a `WHERE` clause does: a read scans up to
//! `limit` items after its cursor and returns the ones the filter keeps, so a filtered stretch
//! answers empty pages whose cursor still advances.
//!
//! Everything is driven by [`Op`]s, so a run is replayable from its op list (or from a seed,
//! through [`random_ops`]), and a property-testing framework can shrink a failing list.

use crate::loader::{Config, Direction, Effect, Kind, Loader, LoaderError, Read};
use std::collections::HashMap;

/// An item of the source: its key and a unique id (the tiebreaker).
pub type Item = (u32, u32);

/// The ordered source.
#[derive(Clone, Debug, Default)]
pub struct Source {
    items: Vec<Item>,
    next_id: u32,
    /// Bit `k` set: items with key `k` are filtered out of every read.
    hidden_keys: u32,
}

/// The cursor after `item`: its key and id, 8 bytes big endian.
pub fn encode_cursor(item: Item) -> Vec<u8> {
    let mut c = item.0.to_be_bytes().to_vec();
    c.extend_from_slice(&item.1.to_be_bytes());
    c
}

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
        }
    }

    /// Filters out every item whose key has its bit set in `mask` (keys 0..32).
    pub fn with_hidden_keys(mut self, mask: u32) -> Source {
        self.hidden_keys = mask;
        self
    }

    /// Every item, the filtered ones included.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    fn visible(&self, item: &Item) -> bool {
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
    /// `limit` means it reached `until` or the source's end.
    pub fn read_until(&self, cursor: &[u8], until: &[u8], limit: u32) -> Answer {
        let at = self.position(cursor);
        let stop = self.position(until);
        let mut items = Vec::new();
        let mut scanned = at;
        while scanned < stop.min(self.items.len()) && items.len() < limit as usize {
            let item = self.items[scanned];
            if self.visible(&item) {
                items.push(item);
            }
            scanned += 1;
        }
        Answer {
            items,
            next_cursor: if scanned == at {
                cursor.to_vec()
            } else {
                encode_cursor(self.items[scanned - 1])
            },
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

/// One step of a simulated run. Indices are taken modulo what they index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Answer a pending read with success; `fresh` reads the source now rather than using
    /// the answer computed when the read was issued.
    Deliver {
        /// Which pending read.
        index: u16,
        /// Read the source now instead of using the prepared answer.
        fresh: bool,
    },
    /// Answer a pending read with a failure.
    Fail {
        /// Which pending read.
        index: u16,
    },
    /// Insert an item with this key, then invalidate.
    Insert {
        /// The new item's key (modulo 16).
        key: u8,
    },
    /// Delete an item, then invalidate.
    Delete {
        /// Which item.
        index: u16,
    },
    /// Move the window.
    Window {
        /// The window's first item.
        start: u16,
        /// How many items it shows.
        len: u16,
    },
    /// Let time pass.
    Tick {
        /// How much time passes.
        ms: u16,
    },
    /// An explicit retry.
    Retry,
    /// An invalidation with no change (allowed, and must be harmless).
    Invalidate,
    /// Answer a pending read with items but an unmoved cursor: a host bug.
    Stall {
        /// Which pending read.
        index: u16,
    },
    /// Answer a pending read with no items, an unmoved cursor and no end flag: the same bug
    /// on an empty page.
    StallEmpty {
        /// Which pending read.
        index: u16,
    },
    /// Change the source's filter to hide the keys whose bit is set (keys 0..8), then
    /// invalidate: a filtered stretch appears or goes.
    Hide {
        /// The keys to hide.
        mask: u8,
    },
    /// Insert an item with this key, then invalidate exactly the range it changed.
    InsertRanged {
        /// The new item's key (modulo 16).
        key: u8,
    },
    /// Delete an item, then invalidate exactly the range it changed.
    DeleteRanged {
        /// Which item.
        index: u16,
    },
    /// A host that lies: delete an item, then invalidate a range that misses it.
    DeleteLying {
        /// Which item.
        index: u16,
    },
    /// The host gives up on a pending read (`Loader::abandon`) but answers it later anyway.
    Abandon {
        /// Which pending read.
        index: u16,
    },
    /// The host drops a pending read it was told to cancel, and never answers it.
    Drop {
        /// Which pending read (among the cancelled ones).
        index: u16,
    },
    /// Jump to the item at `index` (modulo the length, plus one): the cursor before it, and
    /// its own position among the visible items, so positions stay the source's.
    Jump {
        /// Which item.
        index: u16,
    },
}

/// How [`Host::deliver`] shapes an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// As the source answered.
    AsRead,
    /// Its items, with the read's own cursor.
    Stall,
    /// No items, the read's own cursor, no end flag.
    StallEmpty,
}

#[derive(Clone, Debug)]
struct Pending {
    read: Read,
    prepared: Answer,
    /// The loader hinted that it no longer needs the answer.
    cancelled: bool,
    /// The host told the loader it gave up on it (it may still answer).
    abandoned: bool,
}

/// The simulated host.
#[derive(Clone, Debug)]
pub struct Host {
    /// The loader under test.
    pub loader: Loader,
    /// The source it reads.
    pub source: Source,
    pending: Vec<Pending>,
    /// Acquisitions the loader owns now, with the items each holds.
    held: HashMap<u64, Vec<Item>>,
    next_acq: u64,
    /// Acquisitions the loader accepted.
    pub accepted: u64,
    /// Acquisitions the loader released.
    pub released: u64,
    /// The host's clock, in ms.
    pub now: u64,
    /// Ops applied so far.
    pub steps: u64,
    /// A ranged invalidation lied (named a range that missed the change): the view may
    /// differ from the source until a whole invalidation.
    pub lied: bool,
}

/// What a run found wrong.
pub type Violation = String;

impl Host {
    /// A host over `source`, with a loader built from `config`.
    pub fn new(config: Config, source: Source) -> Host {
        Host {
            loader: Loader::new(config).expect("valid config"),
            source,
            pending: Vec::new(),
            held: HashMap::new(),
            next_acq: 1,
            accepted: 0,
            released: 0,
            now: 0,
            steps: 0,
            lied: false,
        }
    }

    /// How many reads are pending.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The reads issued and not yet answered, in the order [`Op`] indices count them.
    pub fn pending_reads(&self) -> Vec<Read> {
        self.pending.iter().map(|p| p.read.clone()).collect()
    }

    /// The pending reads with what the host knows of each: whether the loader hinted that
    /// it no longer needs it (`Effect::Cancel`), and whether the host abandoned it.
    pub fn pending_flags(&self) -> Vec<(u64, bool, bool)> {
        self.pending
            .iter()
            .map(|p| (p.read.read_id, p.cancelled, p.abandoned))
            .collect()
    }

    /// The [`Op`] index of a pending read.
    pub fn index_of(&self, read_id: u64) -> u16 {
        self.pending
            .iter()
            .position(|p| p.read.read_id == read_id)
            .expect("the read is pending") as u16
    }

    /// Acquisitions the loader owns now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Applies one op, then checks every property that must hold after any event.
    pub fn apply(&mut self, op: Op) -> Result<(), Violation> {
        self.steps += 1;
        let r = match op {
            Op::Deliver { index, fresh } => self.deliver(index as usize, fresh, Shape::AsRead),
            Op::Stall { index } => self.deliver(index as usize, false, Shape::Stall),
            Op::StallEmpty { index } => self.deliver(index as usize, false, Shape::StallEmpty),
            Op::Fail { index } => {
                if self.pending.is_empty() {
                    Ok(())
                } else {
                    let p = self
                        .pending
                        .swap_remove(index as usize % self.pending.len());
                    self.loader.fail(p.read.read_id, 1).map(|_| ())
                }
            }
            Op::Insert { key } => {
                self.source.insert(key as u32 % 16);
                self.lied = false;
                self.loader.invalidate()
            }
            Op::Delete { index } => {
                self.source.delete(index as usize);
                self.lied = false;
                self.loader.invalidate()
            }
            Op::Window { start, len } => self.loader.set_window(start as u64, len as u64),
            Op::Tick { ms } => {
                self.now += ms as u64;
                self.loader.tick(self.now)
            }
            Op::Retry => self.loader.retry().map(|_| ()),
            Op::Invalidate => {
                self.lied = false;
                self.loader.invalidate()
            }
            Op::Hide { mask } => {
                self.lied = false;
                self.source.hidden_keys = u32::from(mask);
                self.loader.invalidate()
            }
            Op::InsertRanged { key } => {
                let item = self.source.insert(key as u32 % 16);
                let at = encode_cursor(item);
                self.loader
                    .invalidate_range(&at, Some(&at), &mut Source::compare)
            }
            Op::DeleteRanged { index } => match self.source.delete(index as usize) {
                Some(item) => {
                    let at = encode_cursor(item);
                    self.loader
                        .invalidate_range(&at, Some(&at), &mut Source::compare)
                }
                None => Ok(()),
            },
            Op::DeleteLying { index } => match self.source.delete(index as usize) {
                Some(item) => {
                    // The range names the item after the deleted one: too narrow.
                    self.lied = true;
                    let next = (item.0, item.1.wrapping_add(1_000_000));
                    let at = encode_cursor(next);
                    self.loader
                        .invalidate_range(&at, Some(&at), &mut Source::compare)
                }
                None => Ok(()),
            },
            Op::Abandon { index } => {
                let open: Vec<usize> = (0..self.pending.len())
                    .filter(|&i| !self.pending[i].abandoned)
                    .collect();
                if open.is_empty() {
                    Ok(())
                } else {
                    let p = &mut self.pending[open[index as usize % open.len()]];
                    p.abandoned = true;
                    self.loader.abandon(p.read.read_id).map(|_| ())
                }
            }
            Op::Drop { index } => {
                let hinted: Vec<usize> = (0..self.pending.len())
                    .filter(|&i| self.pending[i].cancelled)
                    .collect();
                if !hinted.is_empty() {
                    self.pending.remove(hinted[index as usize % hinted.len()]);
                }
                Ok(())
            }
            Op::Jump { index } => {
                let at = index as usize % (self.source.len() + 1);
                let position =
                    self.source.visible_from(0).count() - self.source.visible_from(at).count();
                let cursor = self.source.cursor_before(at);
                self.lied = false;
                self.loader.jump(&cursor, position as u64)
            }
        };
        r.map_err(|e| format!("step {}: {op:?} refused: {e}", self.steps))?;
        self.collect()?;
        self.check()
    }

    fn deliver(&mut self, index: usize, fresh: bool, shape: Shape) -> Result<(), LoaderError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let p = self.pending.swap_remove(index % self.pending.len());
        let mut a = if fresh {
            self.source.answer(&p.read)
        } else {
            p.prepared
        };
        match shape {
            Shape::AsRead => {}
            Shape::Stall if a.items.is_empty() => {}
            Shape::Stall => a.next_cursor = p.read.cursor.to_vec(),
            Shape::StallEmpty => {
                a.items.clear();
                a.next_cursor = p.read.cursor.to_vec();
                a.end_of_source = false;
            }
        }
        let acq = self.next_acq;
        self.next_acq += 1;
        self.loader.settle(
            p.read.read_id,
            acq,
            a.items.len() as u32,
            &a.next_cursor,
            a.end_of_source,
        )?;
        self.accepted += 1;
        self.held.insert(acq, a.items);
        Ok(())
    }

    /// Carries out the loader's effects as a host would.
    fn collect(&mut self) -> Result<(), Violation> {
        for e in self.loader.take_effects() {
            match e {
                Effect::Issue(read) => {
                    if self.pending.iter().any(|p| p.read.read_id == read.read_id) {
                        return Err(format!("read {} issued twice", read.read_id));
                    }
                    let prepared = self.source.answer(&read);
                    self.pending.push(Pending {
                        read,
                        prepared,
                        cancelled: false,
                        abandoned: false,
                    });
                }
                Effect::Release { acquisition } => {
                    if self.held.remove(&acquisition).is_none() {
                        return Err(format!(
                            "step {}: acquisition {acquisition} released but not held (twice, or never accepted)",
                            self.steps
                        ));
                    }
                    self.released += 1;
                }
                Effect::Cancel { read_id } => {
                    if let Some(p) = self.pending.iter_mut().find(|p| p.read.read_id == read_id) {
                        p.cancelled = true;
                    }
                }
                Effect::Changed => {}
            }
        }
        Ok(())
    }

    /// The items the view shows, in order.
    pub fn view_items(&self) -> Result<Vec<Item>, Violation> {
        let mut out = Vec::new();
        let mut at = self.loader.covered().0;
        for p in self.loader.pages() {
            if p.start != at {
                return Err(format!(
                    "page starts at {} but the previous ended at {at}",
                    p.start
                ));
            }
            let items = self
                .held
                .get(&p.acquisition)
                .ok_or_else(|| format!("view page {} was released", p.acquisition))?;
            if items.len() != p.count as usize {
                return Err("page count differs from its acquisition".into());
            }
            out.extend_from_slice(items);
            at += p.count as u64;
        }
        if at != self.loader.covered().1 {
            return Err("covered end differs from the pages".into());
        }
        Ok(out)
    }

    /// The properties that hold after every event.
    pub fn check(&self) -> Result<(), Violation> {
        let at = |what: String| format!("step {}: {what}", self.steps);
        self.loader
            .ledger()
            .check_invariants()
            .map_err(|inv| at(format!("ledger {inv} violated")))?;
        let view = self.view_items().map_err(at)?;
        if let Some(acq) = self
            .held
            .iter()
            .find_map(|(a, v)| v.is_empty().then_some(a))
        {
            return Err(at(format!(
                "acquisition {acq} of an empty page is still held"
            )));
        }
        self.check_bound().map_err(at)?;
        let l = self.loader.ledger();
        if !self.loader.revalidating() && l.failure() == crate::ledger::Failure::None && !self.lied
        {
            // Quiet: the view is the source's content for the covered range, from the first
            // held page's start cursor.
            let from = self.source.position(self.loader.base_cursor());
            let (start, end) = self.loader.covered();
            let n = (end - start) as usize;
            let truth: Vec<Item> = self.source.visible_from(from).take(n + 1).collect();
            let follows = truth.len() > n;
            let truth = &truth[..truth.len().min(n)];
            if view != truth {
                return Err(at(format!(
                    "quiet view differs from the source: view {view:?}, source {truth:?}"
                )));
            }
            if self.loader.end_of_source() && follows {
                return Err(at(
                    "view claims the end of the source but items follow".into()
                ));
            }
            // At the source's start the positions are the source's own.
            if self.loader.start_of_source() && start != 0 {
                return Err(at(format!(
                    "the view starts at the source's start but its first position is {start}"
                )));
            }
            if self.loader.start_of_source() && from != 0 {
                return Err(at(format!(
                    "the view claims the source's start but starts at item {from}"
                )));
            }
        }
        Ok(())
    }

    /// The memory bound (`max_pages`): over it, every held page overlaps the window plus
    /// prefetch, or lies on the side a finite read still in flight continues from.
    fn check_bound(&self) -> Result<(), Violation> {
        let max = self.loader.config().max_pages as usize;
        let n = self.loader.page_count();
        if max == 0 || n <= max {
            return Ok(());
        }
        let (ws, wl) = self.loader.window();
        let pf = self.loader.config().prefetch_distance;
        let (from, to) = (ws.saturating_sub(pf), (ws + wl).saturating_add(pf));
        let in_flight = |d: Direction| {
            self.pending
                .iter()
                .any(|p| p.read.kind == Kind::Finite && p.read.direction == d)
        };
        let (before, after) = (
            in_flight(Direction::Backward),
            in_flight(Direction::Forward),
        );
        for p in self.loader.pages() {
            let end = p.start + p.count as u64;
            let outside = (end <= from && !before) || (p.start >= to && !after);
            if outside {
                return Err(format!(
                    "{n} pages held over max_pages {max}, and the page at {} lies outside [{from}, {to})",
                    p.start
                ));
            }
        }
        Ok(())
    }

    /// Answers everything with success, retrying own failures, with the source left alone;
    /// then checks that the loader is quiescent with the window covered.
    pub fn settle_down(&mut self) -> Result<(), Violation> {
        for _ in 0..100_000 {
            if !self.pending.is_empty() {
                self.apply(Op::Deliver {
                    index: 0,
                    fresh: false,
                })?;
            } else if self.loader.ledger().retry_enabled() {
                self.apply(Op::Retry)?;
            } else if let Some(d) = self.loader.next_deadline() {
                // A dropped read waits for its timeout.
                let ms = d.saturating_sub(self.now).clamp(1, u64::from(u16::MAX));
                self.apply(Op::Tick { ms: ms as u16 })?;
            } else {
                break;
            }
        }
        let l = self.loader.ledger();
        if !l.is_quiescent() || self.loader.revalidating() {
            return Err(format!("stuck: {:?}", l.snapshot()));
        }
        if l.cover_epoch() != l.epoch() && self.loader.config().recheck_full {
            return Err("quiescent with coverEpoch < epoch".into());
        }
        let (ws, wl) = self.loader.window();
        let pf = self.loader.config().prefetch_distance;
        let want = (ws + wl).saturating_add(pf);
        if !self.loader.end_of_source() && self.loader.covered().1 < want {
            return Err(format!(
                "the window is not covered: covered {:?}, want up to {want}",
                self.loader.covered()
            ));
        }
        let from = ws.saturating_sub(pf);
        if !self.loader.start_of_source() && self.loader.covered().0 > from {
            return Err(format!(
                "the window is not covered: covered {:?}, want from {from}",
                self.loader.covered()
            ));
        }
        self.check()
    }

    /// Closes the loader and checks that every acquisition came back exactly once, and that
    /// answers after the close are refused.
    pub fn close(&mut self) -> Result<(), Violation> {
        self.loader.close();
        self.collect()?;
        if !self.held.is_empty() || self.accepted != self.released {
            return Err(format!(
                "after close: accepted {}, released {}, still held {}",
                self.accepted,
                self.released,
                self.held.len()
            ));
        }
        if let Some(p) = self.pending.first() {
            let r = self.loader.settle(p.read.read_id, 0, 0, &[], true);
            if r != Err(LoaderError::Closed) {
                return Err(format!("an answer after close was not refused: {r:?}"));
            }
        }
        Ok(())
    }
}

/// A seeded op list: the same seed gives the same run.
pub fn random_ops(seed: u64, n: usize, failures: bool) -> Vec<Op> {
    let mut rng = seed;
    let mut next = move || {
        rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| {
            let r = next();
            let a = (r >> 8) as u16;
            let b = (r >> 24) as u16;
            match r % 100 {
                0..=46 => Op::Deliver {
                    index: a,
                    fresh: b.is_multiple_of(2),
                },
                47 => Op::Abandon { index: a },
                48..=49 => Op::Drop { index: a },
                50..=57 if failures => Op::Fail { index: a },
                50..=61 => Op::InsertRanged { key: a as u8 },
                62..=64 => Op::Insert { key: a as u8 },
                65..=70 => Op::DeleteRanged { index: a },
                71..=74 => Op::Delete { index: a },
                75..=86 => Op::Window {
                    start: a % 120,
                    len: 1 + b % 60,
                },
                87..=93 => Op::Tick { ms: a % 6000 },
                94..=96 => Op::Retry,
                97 => Op::Invalidate,
                98 => Op::DeleteLying { index: a },
                _ => Op::Jump { index: a },
            }
        })
        .collect()
}

/// Runs `ops`, then settles down and closes, checking every property on the way.
pub fn run(config: Config, source: Source, ops: &[Op]) -> Result<Host, Violation> {
    let mut h = Host::new(config, source);
    h.apply(Op::Window { start: 0, len: 20 })?;
    for &op in ops {
        h.apply(op)?;
    }
    h.settle_down()?;
    let ended = h.clone();
    h.close()?;
    Ok(ended)
}
