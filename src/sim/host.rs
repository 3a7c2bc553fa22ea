//! The simulated host: it applies [`Op`]s and carries out the loader's effects.
//!
//! It holds the loader under test, the source, the reads it was asked for and the
//! acquisitions it handed over.

use super::cost::Cost;
use super::source::{encode_cursor, Answer, Item, Source};
use super::Op;
use crate::loader::{Config, Effect, Loader, LoaderError, Read};
use std::collections::HashMap;

/// How [`Host::deliver`] shapes an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// As the source answered.
    AsRead,
    /// As the source answered, with the count of the items before its first one.
    Counted,
    /// Its items, with the read's own cursor.
    Stall,
    /// No items, the read's own cursor, no end flag.
    StallEmpty,
    /// A backward read answered as a forward one.
    Misread,
}

#[derive(Clone, Debug)]
pub(super) struct Pending {
    pub(super) read: Read,
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
    pub(super) pending: Vec<Pending>,
    /// Acquisitions the loader owns now, with the items each holds.
    pub(crate) held: HashMap<u64, Vec<Item>>,
    next_acq: u64,
    /// Acquisitions the loader accepted.
    pub accepted: u64,
    /// Acquisitions the loader released.
    pub released: u64,
    /// Bounded reads answered with an empty page whose cursor moved, short of `until` (as a
    /// [`super::Bounded::Naive`] source answers a filtered stretch).
    pub empty_bounded_moved: u64,
    /// The host's clock, in ms.
    pub now: u64,
    /// Ops applied so far.
    pub steps: u64,
    /// A ranged invalidation lied (named a range that missed the change): the view may
    /// differ from the source until a whole invalidation.
    pub lied: bool,
    /// The checker knows the view may be stale when quiet: with `recheck_full` off (the
    /// model's exact `unifiedMin`), an invalidation that overtook a full read is lost, as
    /// documented, and nothing shows it. The view is then not compared with the source.
    pub lossy: bool,
    /// Own failures that came after a successful answer since the one before.
    pub interleaved_failures: u64,
    current_at_failure: u64,
    /// Ranged changes outside the held pages and every read in flight, made while a read
    /// was in flight.
    pub far_changes: u64,
    /// Window moves of three pages or more beyond what the view held.
    pub long_moves: u64,
    /// Far moves that started at a known cursor (the memo, the source's start, `locate`),
    /// in `WindowLocated` steps.
    pub far_jumps: u64,
    /// `locate` calls, in `WindowLocated` steps.
    pub located: u64,
    /// Reads whose `issue` threw (`Op::IssueThrows`), let go of as the C layer does.
    pub thrown_issues: u64,
    throw_next: bool,
    /// The reads the loader issued during the op being applied.
    issued_now: Vec<Read>,
    /// The page read whose failure the ledger records as a page failure, if one is.
    page_failed: Option<Read>,
    /// The cursor `locate` gave during the op being applied, if it gave one.
    located_now: Option<Vec<u8>>,
    /// The cost properties' budgets, when checked ([`Host::with_costs`]).
    costs: Option<super::cost::Costs>,
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
            empty_bounded_moved: 0,
            now: 0,
            steps: 0,
            lied: false,
            lossy: false,
            interleaved_failures: 0,
            current_at_failure: 0,
            far_changes: 0,
            long_moves: 0,
            far_jumps: 0,
            located: 0,
            thrown_issues: 0,
            throw_next: false,
            issued_now: Vec::new(),
            page_failed: None,
            located_now: None,
            costs: None,
        }
    }

    /// This host, checking the cost properties after every op too (`sim::cost`): the
    /// budgets of moves with a known cursor, ranged changes, failed pages and appends.
    pub fn with_costs(mut self) -> Host {
        self.costs = Some(Default::default());
        self
    }

    /// The cost properties' record, when they are checked: the budgets met, by property.
    pub fn costs(&self) -> Option<&super::cost::Costs> {
        self.costs.as_ref()
    }

    /// How many reads are pending.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The reads issued and not yet answered, in the order [`Op`] indices count them.
    pub fn pending_reads(&self) -> Vec<Read> {
        self.pending.iter().map(|p| p.read.clone()).collect()
    }

    /// The ids of the reads pending, without copying them.
    pub fn pending_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.pending.iter().map(|p| p.read.read_id)
    }

    /// The pending reads with what the host knows of each: whether the loader hinted that
    /// it no longer needs it (`Effect::Cancel`), and whether the host abandoned it.
    pub fn pending_flags(&self) -> Vec<(u64, bool, bool)> {
        self.pending
            .iter()
            .map(|p| (p.read.read_id, p.cancelled, p.abandoned))
            .collect()
    }

    /// The pending read `read_id`, if it is pending.
    pub fn pending_read(&self, read_id: u64) -> Option<&Read> {
        self.pending
            .iter()
            .map(|p| &p.read)
            .find(|r| r.read_id == read_id)
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
        self.issued_now.clear();
        self.located_now = None;
        let before = self.loader.stats();
        let filtered = self.source.hidden_keys != 0 || matches!(op, Op::Hide { .. });
        let cost_before = super::cost::Before::of(self, self.pending.len(), filtered);
        let failure_before = self.loader.ledger().failure();
        let page_failed_before = failure_before == crate::ledger::Failure::Page;
        let mut cost = Cost::Spend;
        let r = match op {
            Op::Deliver { index, fresh } => self.deliver(index as usize, fresh, Shape::AsRead),
            Op::DeliverCounted { index } => self.deliver(index as usize, true, Shape::Counted),
            Op::Stall { index } => {
                cost = Cost::Unpromised;
                self.deliver(index as usize, false, Shape::Stall)
            }
            Op::Repeat { index } => {
                cost = Cost::Unpromised;
                self.deliver(index as usize, true, Shape::Stall)
            }
            Op::StallEmpty { index } => {
                cost = Cost::Unpromised;
                self.deliver(index as usize, false, Shape::StallEmpty)
            }
            Op::MisreadBackward { index } => {
                cost = Cost::Unpromised;
                self.deliver(index as usize, true, Shape::Misread)
            }
            Op::InsertSilently { key } => {
                cost = Cost::Unpromised;
                self.source.insert(key as u32 % 16);
                Ok(())
            }
            Op::Fail { index } => {
                if self.pending.is_empty() {
                    Ok(())
                } else {
                    let p = self
                        .pending
                        .swap_remove(index as usize % self.pending.len());
                    let (own, current) = {
                        let s = self.loader.stats();
                        (s.failed_own, s.answered_current)
                    };
                    let r = self.loader.fail(p.read.read_id, 1).map(|_| ());
                    self.note_page_failure(&p.read, own);
                    // An own failure after successes since the last one: failures
                    // interleaved with successes, as over a long scroll.
                    if self.loader.stats().failed_own > own && current > self.current_at_failure {
                        self.interleaved_failures += 1;
                        self.current_at_failure = current;
                    }
                    r
                }
            }
            Op::Insert { key } => {
                cost = Cost::Unpromised;
                self.source.insert(key as u32 % 16);
                self.lied = false;
                self.loader.invalidate()
            }
            Op::Delete { index } => {
                cost = Cost::Unpromised;
                self.source.delete(index as usize);
                self.lied = false;
                self.loader.invalidate()
            }
            Op::Window { start, len } => {
                // A move of three pages or more beyond what the view holds.
                let (from, to) = self.loader.covered();
                let far = 3 * u64::from(self.loader.config().page_size);
                let start = start as u64;
                if start + far <= from || start >= to + far {
                    self.long_moves += 1;
                }
                // Far from the held pages it starts at the memo's nearest cursor, which may
                // lie far from the window (it walks the rest), or walks: the cost budget is
                // for a start at the target (`WindowLocated`, `Jump`).
                cost = Cost::Unpromised;
                self.loader.set_window(start, len as u64)
            }
            Op::WindowLocated { start, len, answer } => {
                let before = self.loader.stats();
                let source = &self.source;
                // The cursor before the visible item at `position` (one pass over the items).
                let cursor_at = |position: u64| {
                    let at = source
                        .items()
                        .iter()
                        .enumerate()
                        .filter(|(_, i)| source.visible(i))
                        .nth(position as usize)
                        .map_or(source.len(), |(at, _)| at);
                    source.cursor_before(at)
                };
                let mut given = None;
                let mut locate = |position: u64, out: &mut Vec<u8>| match answer % 3 {
                    0 => {
                        out.extend_from_slice(&cursor_at(position));
                        given = Some(out.clone());
                        true
                    }
                    1 => false,
                    _ => {
                        out.extend_from_slice(&cursor_at(position + 3));
                        given = Some(out.clone());
                        true
                    }
                };
                let r = self
                    .loader
                    .set_window_located(start as u64, len as u64, &mut locate);
                let after = self.loader.stats();
                if after.located > before.located {
                    self.located_now = given;
                }
                self.far_jumps += after.far_jumps - before.far_jumps;
                // A far start with `locate` answering right starts at the target: at
                // `locate`'s cursor, or at the memo's when it lies within a page of it. A move
                // that was not far walks from the held pages, and repairs what is owed on the
                // way: the header promises it the pages missing, not this budget; and after
                // `locate`'s unknown or wrong answer the start is the memo's nearest, or wrong.
                let far_start = after.far_jumps > before.far_jumps;
                cost = if far_start && answer % 3 == 0 {
                    Cost::KnownMove {
                        window: len as u64,
                        walk: u64::from(self.loader.config().page_size),
                    }
                } else {
                    Cost::Unpromised
                };
                self.located +=
                    after.located + after.locate_unknown - before.located - before.locate_unknown;
                r
            }
            Op::Tick { ms } => {
                self.now += ms as u64;
                self.loader.tick(self.now)
            }
            Op::Retry => self.loader.retry().map(|_| ()),
            Op::Invalidate => {
                cost = Cost::Unpromised;
                self.lied = false;
                self.loader.invalidate()
            }
            Op::Hide { mask } => {
                cost = Cost::Unpromised;
                self.lied = false;
                self.source.hidden_keys = u32::from(mask);
                self.loader.invalidate()
            }
            Op::InsertRanged { key } => {
                let item = self.source.insert(key as u32 % 16);
                let at = encode_cursor(item);
                self.count_far_change(&at);
                cost = self.ranged_cost(&at);
                self.loader
                    .invalidate_range(&at, Some(&at), &mut Source::compare)
            }
            Op::DeleteRanged { index } => match self.source.delete(index as usize) {
                Some(item) => {
                    let at = encode_cursor(item);
                    self.count_far_change(&at);
                    cost = self.ranged_cost(&at);
                    self.loader
                        .invalidate_range(&at, Some(&at), &mut Source::compare)
                }
                None => Ok(()),
            },
            Op::IssueThrows => {
                self.throw_next = true;
                Ok(())
            }
            Op::DeleteLying { index } => match self.source.delete(index as usize) {
                Some(item) => {
                    cost = Cost::Unpromised;
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
                    let read = p.read.clone();
                    let own = self.loader.stats().failed_own;
                    let r = self.loader.abandon(read.read_id).map(|_| ());
                    self.note_page_failure(&read, own);
                    r
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
                let r = self.loader.jump(&cursor, position as u64);
                cost = Cost::KnownMove {
                    window: self.loader.window().1,
                    walk: 0,
                };
                r
            }
            Op::Append { items } => {
                cost = Cost::Append {
                    items: u64::from(items),
                    at_end: self.loader.end_of_source(),
                };
                for _ in 0..items {
                    self.source.append();
                }
                self.loader.appended()
            }
        };
        r.map_err(|e| format!("step {}: {op:?} refused: {e}", self.steps))?;
        self.collect()?;
        self.check_retries_and_far_starts(&before)?;
        self.check()?;
        self.check_costs(op, cost, cost_before, &before, failure_before)?;
        if matches!(op, Op::Tick { .. } | Op::Retry) && page_failed_before {
            self.check_page_retry_cost(&before)?;
        }
        Ok(())
    }

    /// What a ranged change at `at` costs, by the checker's count of the pages it touches
    /// (`props::pages_touching`, made before it is reported). On a view that is not fresh, a
    /// change that touches anything (`untouched`: a held page or a read in flight may hold
    /// it) also touches what may have to be read again: each read in flight (the change
    /// takes an epoch, and a read in flight may be superseded and issued again), and a
    /// running repair (a chain or full read, which always counts as touching) every page it
    /// stages, before the change and after: at most its share of the memory bound,
    /// ceil((window + 2·prefetch) / page) + 2.
    fn ranged_cost(&self, at: &[u8]) -> Cost {
        let mut touched = crate::check::props::pages_touching(&self.loader, at);
        if !crate::check::props::fresh(&self.loader) && !self.untouched(at) {
            touched += self.pending.len() as u64;
            let repair = !self.loader.staged_spans().is_empty()
                || self
                    .pending
                    .iter()
                    .any(|p| p.read.kind != crate::loader::Kind::Finite);
            if repair {
                let c = self.loader.config();
                let span = self.loader.window().1 + 2 * c.prefetch_distance;
                touched += span.div_ceil(u64::from(c.page_size)) + 2;
            }
        }
        Cost::Ranged { touched }
    }

    /// The cost properties after op `cost`, made with the stats `before` and the failure
    /// `failure_before` recorded: a failure that is not a page read's, a stalled cursor, a
    /// read timed out, a view a lie left stale, or a ranged change made while a failure is
    /// recorded (its retry is then a full read, as the header's `LOADER_FAILURE_OWN` says)
    /// makes it an event with no cost promised; a page read's own failure (recorded as the
    /// page failure) adds a page read. Then the budgets judge it (`sim::cost`).
    fn check_costs(
        &mut self,
        op: Op,
        mut cost: Cost,
        cost_before: super::cost::Before,
        before: &crate::loader::Stats,
        failure_before: crate::ledger::Failure,
    ) -> Result<(), Violation> {
        let Some(costs) = self.costs.as_mut() else {
            return Ok(());
        };
        if failure_before != crate::ledger::Failure::None && matches!(cost, Cost::Ranged { .. }) {
            cost = Cost::Unpromised;
        }
        let after = self.loader.stats();
        if after.failed_own > before.failed_own {
            let page = self.loader.ledger().failure() == crate::ledger::Failure::Page;
            cost = match cost {
                Cost::Spend if page => Cost::PageFailure,
                _ => Cost::Unpromised,
            };
        }
        // After a lie (a range that missed its change) the view may be stale until a whole
        // invalidation, and a repair over it may read what the lie hid: no cost is promised.
        if after.cursor_stalls > before.cursor_stalls
            || after.timed_out > before.timed_out
            || self.lied
        {
            cost = Cost::Unpromised;
        }
        // Anything but answers, failures, time and retries may change the read the window
        // needs: a move, a jump, a change, an append, a host bug.
        let answering = matches!(
            op,
            Op::Deliver { .. }
                | Op::DeliverCounted { .. }
                | Op::Fail { .. }
                | Op::Abandon { .. }
                | Op::Drop { .. }
                | Op::Tick { .. }
                | Op::Retry
        );
        if !answering {
            costs.last_read_before_change = costs.last_read;
        }
        for r in &self.issued_now {
            costs.last_read = costs.last_read.max(r.read_id);
        }
        let steps = self.steps;
        costs
            .after(cost, cost_before, &self.loader)
            .map_err(|m| format!("step {steps}: {m}"))?;
        Ok(())
    }

    /// [`super::cost::PAGE_FAILURE_COST`], on its own: a retry (the timer's, or `retry`) made
    /// while a page failure is recorded reads that page again, and only it, when nothing but
    /// answers, failures, time and retries came since the failed read was issued (after a
    /// move, a jump, a change or an append it may no longer be the read the window needs,
    /// and the header says the retry then reads from the anchor).
    fn check_page_retry_cost(&mut self, before: &crate::loader::Stats) -> Result<(), Violation> {
        let (Some(c), Some(f)) = (self.costs.as_mut(), self.page_failed.as_ref()) else {
            return Ok(());
        };
        if f.read_id <= c.last_read_before_change {
            return Ok(());
        }
        let after = self.loader.stats();
        let retried = after.retries_auto + after.retries_explicit
            > before.retries_auto + before.retries_explicit;
        let page_again = after.retries_page > before.retries_page;
        c.page_retries_judged += u64::from(retried);
        if retried && (!page_again || self.issued_now.len() != 1) {
            return Err(format!(
                "step {}: {}: a retry of a failed page issued {:?} (read the page again: {page_again})",
                self.steps,
                super::cost::PAGE_FAILURE_COST,
                self.issued_now
            ));
        }
        Ok(())
    }

    /// Remembers `read` as the page read that failed, if its failure (the call made with
    /// `own` own failures counted before it) is the page failure the ledger now records: the
    /// read was the loader's own and nothing else was owed. A late or stale answer to another
    /// read while a page failure is recorded is not it.
    fn note_page_failure(&mut self, read: &Read, own: u64) {
        if self.loader.stats().failed_own > own
            && self.loader.ledger().failure() == crate::ledger::Failure::Page
        {
            self.page_failed = Some(read.clone());
        }
    }

    /// What the op's retries and far starts read: a retry counted in `retries_page` reads
    /// the failed read again (its cursor, direction and `until`), and a far move that
    /// started at the cursor `locate` gave issues a read there in the same call, whatever
    /// was in flight or failed before it (not the failed read resumed, not a walk from an
    /// older anchor).
    fn check_retries_and_far_starts(
        &mut self,
        before: &crate::loader::Stats,
    ) -> Result<(), Violation> {
        let after = self.loader.stats();
        if after.retries_page > before.retries_page {
            let same = |r: &Read, f: &Read| {
                r.kind == crate::loader::Kind::Finite
                    && (&r.cursor, r.direction, &r.until) == (&f.cursor, f.direction, &f.until)
            };
            // Kept, not taken: a retried read that fails again (or whose `issue` throws) is the
            // page failure next, and its retry reads the same.
            match &self.page_failed {
                Some(f) if self.issued_now.iter().any(|r| same(r, f)) => {}
                f => {
                    return Err(format!(
                        "step {}: page_retry_reads_the_failed_read: a retry counted in retries_page read {:?}, the failed page read was {f:?}",
                        self.steps, self.issued_now
                    ))
                }
            }
        }
        if let Some(c) = self.located_now.take() {
            if !self.issued_now.iter().any(|r| r.cursor[..] == c[..]) {
                return Err(format!(
                    "step {}: far_start_reads_at_its_cursor: a far move started at the cursor locate gave ({c:?}) and read {:?}",
                    self.steps, self.issued_now
                ));
            }
        }
        Ok(())
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
        let mut items_before = None;
        match shape {
            Shape::AsRead => {}
            Shape::Counted => {
                // The source's own count, now: the visible items before the page's first.
                if let Some(first) = a.items.first() {
                    items_before = self
                        .source
                        .visible_from(0)
                        .position(|v| v == *first)
                        .map(|n| n as u64);
                }
            }
            Shape::Stall if a.items.is_empty() => {}
            Shape::Stall => a.next_cursor = p.read.cursor.to_vec(),
            Shape::Misread if p.read.direction == crate::loader::Direction::Backward => {
                a = self.source.read(&p.read.cursor, p.read.limit);
            }
            Shape::Misread => {}
            Shape::StallEmpty => {
                a.items.clear();
                a.next_cursor = p.read.cursor.to_vec();
                a.end_of_source = false;
            }
        }
        let acq = self.next_acq;
        self.next_acq += 1;
        self.loader.settle_ordered(
            p.read.read_id,
            acq,
            a.items.len() as u32,
            &a.next_cursor,
            a.end_of_source,
            items_before,
            Some(&mut Source::compare),
        )?;
        self.accepted += 1;
        if a.items.is_empty()
            && a.next_cursor != p.read.cursor.to_vec()
            && p.read
                .until
                .as_deref()
                .is_some_and(|u| u != a.next_cursor.as_slice())
        {
            self.empty_bounded_moved += 1;
        }
        self.held.insert(acq, a.items);
        Ok(())
    }

    /// Carries out the loader's effects as a host would.
    pub fn collect(&mut self) -> Result<(), Violation> {
        let effects = self.loader.take_effects();
        self.collect_from(effects)
    }

    /// Carries out `effects`, one call's, taken from the loader by the caller.
    pub(crate) fn collect_from(&mut self, effects: Vec<Effect>) -> Result<(), Violation> {
        // One call's callbacks: `changed` at most once, and after the others.
        let changed = effects.iter().filter(|e| **e == Effect::Changed).count();
        if changed > 1 || (changed == 1 && effects.last() != Some(&Effect::Changed)) {
            return Err(format!(
                "step {}: changed_once_last: one call's effects were {effects:?}",
                self.steps
            ));
        }
        let mut thrown = Vec::new();
        for e in &effects {
            if let Effect::Issue(read) = e {
                self.issued_now.push(read.clone());
            }
        }
        for e in effects {
            match e {
                Effect::Issue(read) if self.throw_next => {
                    // The host's `issue` threw for this read: it never saw it. The C layer
                    // lets it go at once (as `loader_abandon`), after the call's effects.
                    self.throw_next = false;
                    self.thrown_issues += 1;
                    thrown.push(read);
                }
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
        for read in thrown {
            let own = self.loader.stats().failed_own;
            self.loader
                .abandon(read.read_id)
                .map_err(|e| format!("step {}: letting go of a thrown read: {e}", self.steps))?;
            self.note_page_failure(&read, own);
            self.collect()?;
        }
        Ok(())
    }

    /// Counts a ranged change at `at` made while a read is in flight that lies outside the
    /// held pages and every read in flight.
    fn count_far_change(&mut self, at: &[u8]) {
        if !self.pending.is_empty() && self.untouched(at) {
            self.far_changes += 1;
        }
    }
}

/// The checker's canonical form (`check::canon`): the loader, the source, the reads pending
/// (in read id order: their order in `pending` carries no meaning), the acquisitions held.
/// Counters that only report are left out; so were the prepared answers by the `Debug`-text
/// form, though a repeated cursor answers with them.
impl crate::check::canon::Canon for Host {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        use crate::check::canon::{Class, Form};
        let Host {
            loader,
            source,
            pending,
            held,
            next_acq,
            accepted: _,
            released: _,
            empty_bounded_moved: _,
            now,
            steps: _,
            lied,
            lossy,
            interleaved_failures,
            current_at_failure,
            far_changes,
            long_moves,
            far_jumps: _,
            located: _,
            thrown_issues,
            throw_next,
            // What the op being applied issued and located: its own checks read them, and
            // the next op starts them again.
            issued_now: _,
            located_now: _,
            page_failed,
            // The checker keeps its own budgets (`check::State`), and its hosts leave these
            // off.
            costs: _,
        } = self;
        loader.canon(e);
        source.canon(e);
        let with_prepared = e.form() == Form::Fields;
        e.id_map(
            Class::Read,
            pending.iter().map(|p| (p.read.read_id, p)),
            |e, p| {
                let Pending {
                    read,
                    prepared,
                    cancelled,
                    abandoned,
                } = p;
                read.canon(e);
                if with_prepared {
                    prepared.canon(e);
                }
                cancelled.canon(e);
                abandoned.canon(e);
            },
        );
        e.id_map(
            Class::Acquisition,
            held.iter().map(|(k, v)| (*k, v)),
            |e, items| items.canon(e),
        );
        e.id(Class::Acquisition, *next_acq);
        e.time(*now);
        lied.canon(e);
        lossy.canon(e);
        for n in [
            interleaved_failures,
            current_at_failure,
            far_changes,
            long_moves,
            thrown_issues,
        ] {
            e.num(*n);
        }
        throw_next.canon(e);
        page_failed.canon(e);
    }
}
