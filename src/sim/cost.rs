//! The simulation's cost properties: what a move with a known cursor, a ranged change, a
//! failed page and an append may read, as budgets those events open, checked after every
//! event until the view is fresh again.
//!
//! The budgets are the loader checker's ([`crate::check::props::far_move_budget`],
//! [`crate::check::props::ranged_budget`], [`crate::check::props::pages_touching`]), so the
//! two check the same sentences of the header; the checker on sources of a few items, this on
//! sources of 10^5 with reads in flight.
//!
//! What is counted: the items of every answer the loader accepts (`Stats::items_read`,
//! answers to reads let go of included) and the reads it issues (`Stats::issued`), from the
//! event that opens a budget (its own call included) until the view is fresh (nothing in
//! flight, owed or failed: [`crate::check::props::fresh`]).
//!
//! Overlapping budgets add up, rather than the property speaking only while exactly one is
//! open: in a run with reads in flight a second change or a failure almost always comes
//! before the view is fresh, and a property silenced by every overlap would rarely speak. The
//! sum stays a property that can fail: each event adds only what the header promises it
//! costs, so a defect in any one of them (a far move that walks, a ranged repair that reads
//! past the window, a failed page retried by a full read) overspends the sum.
//!
//! Two budgets run side by side: one in items (opened by a move with a known cursor, a
//! ranged change or an append on a fresh view) and one in reads (opened by a ranged change
//! or an append on a fresh view). A fresh view, for opening, is also what the source is
//! ([`crate::check::props::fresh_view`]): not one a lie, or an invalidation `recheck_full`
//! off lost, left stale. Reads are not counted while the source filters items out:
//! over a filtered stretch a read scans up to its limit and may return nothing short of the
//! end, which the header counts as a read per `limit` rows scanned. A move with a known
//! cursor opens the items budget afresh and closes the reads budget: it lets go of whatever
//! was in flight, and its own promise ("whatever was in flight when it was made") counts a
//! page for each read still out. An event the header promises no cost for (a move that
//! walks, a whole invalidation, a filter change, a host bug, a lie and the stale view it
//! leaves, a failure that is not a page read's, a stalled cursor, a read timed out, a ranged
//! change while a failure is recorded, whose retry is then a full read) closes both
//! unjudged: what follows is not the budgeted events' alone.

use crate::check::props::{self, Property};
use crate::loader::Loader;

/// An append after a view that holds the source's end reads only the new items.
pub const APPEND_COST: &str = "append_cost";
/// A failed page costs one page read: its retry reads that page again and nothing else, and
/// within a budget a page failure adds one read of a page.
pub const PAGE_FAILURE_COST: &str = "page_failure_cost";

/// What an op was, for the budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cost {
    /// A move or jump that started at a known cursor at its target (`locate`'s right answer,
    /// or the memo's within a page of it; a jump's cursor): its window's length after the
    /// move, and the items between where it started and the window, at most.
    KnownMove { window: u64, walk: u64 },
    /// A ranged change (an item inserted or deleted and reported with its exact range), and
    /// the pages it touches.
    Ranged { touched: u64 },
    /// A page read's own failure, recorded as a page failure.
    PageFailure,
    /// Items appended after the source's last one, reported with `appended`; whether the
    /// view held the source's end.
    Append { items: u64, at_end: bool },
    /// An answer, a tick, a retry, a read dropped: it spends what is open.
    Spend,
    /// Anything the header promises no cost for: the budgets close unjudged.
    Unpromised,
}

/// What the loader had read and issued, and what was in flight, before an op.
#[derive(Clone, Copy, Debug)]
pub(super) struct Before {
    pub(super) items: u64,
    pub(super) reads: u64,
    pub(super) in_flight: usize,
    pub(super) fresh: bool,
    /// The source filters items out: a read scans up to its limit and may return fewer, or
    /// none, without reaching the end, so reads are not counted (items still are).
    pub(super) filtered: bool,
}

impl Before {
    pub(super) fn of(h: &super::Host, in_flight: usize, filtered: bool) -> Before {
        let l = &h.loader;
        Before {
            items: l.stats().items_read,
            reads: props::issued(l),
            in_flight,
            fresh: props::fresh_view(h),
            filtered,
        }
    }
}

/// One budget: what opened it, what was added, what is left.
#[derive(Clone, Debug)]
struct Budget {
    /// The property named when it is overspent: the one of the event that opened it.
    name: &'static str,
    total: u64,
    spent: u64,
    /// The events that added to it after it opened.
    added: Vec<&'static str>,
}

impl Budget {
    fn new(name: &'static str, total: u64) -> Budget {
        Budget {
            name,
            total,
            spent: 0,
            added: Vec::new(),
        }
    }
}

/// The open budgets of a simulated run, and what they judged.
#[derive(Clone, Debug, Default)]
pub struct Costs {
    items: Option<Budget>,
    reads: Option<Budget>,
    /// Budgets that closed judged, when the view was fresh again, by the property of the event
    /// that opened them.
    pub met: std::collections::BTreeMap<&'static str, u64>,
    /// What was added to the budgets that closed judged, by the property of the event that
    /// added it (a change, a failed page, an append during another's reads).
    pub added: std::collections::BTreeMap<&'static str, u64>,
    /// Budgets opened while reads were in flight (a move with a known cursor), or added to
    /// while open (a change, a failure or an append during another's reads).
    pub overlapped: u64,
    /// Retries of a recorded page failure that `page_failure_cost` judged on its own.
    pub page_retries_judged: u64,
    /// The highest read id issued so far, and the highest issued before the last event that
    /// was not an answer, a failure, time or a retry: a read issued before a move, a change
    /// or an append may no longer be the one the window needs, and the retry of its failure
    /// may read from the anchor.
    pub(super) last_read: u64,
    pub(super) last_read_before_change: u64,
}

fn add(b: &mut Option<Budget>, name: &'static str, n: u64, overlapped: &mut u64) {
    if let Some(b) = b.as_mut() {
        b.total = b.total.saturating_add(n);
        b.added.push(name);
        *overlapped += 1;
    }
}

fn spend(b: &mut Option<Budget>, n: u64, unit: &str) -> Result<(), String> {
    let Some(b) = b.as_mut() else { return Ok(()) };
    b.spent += n;
    if b.spent > b.total {
        return Err(format!(
            "{}: {} {unit} since it opened, over its budget of {} (added to by {:?})",
            b.name, b.spent, b.total, b.added
        ));
    }
    Ok(())
}

impl Costs {
    /// Judges op `cost`, made after `before`, on the loader as it left it; `Err` names the
    /// property it broke.
    pub(super) fn after(&mut self, cost: Cost, before: Before, l: &Loader) -> Result<(), String> {
        let page = u64::from(l.config().page_size);
        let out = page * before.in_flight as u64;
        let far = Property::FarMoveCost.name();
        let ranged = Property::RangedCost.name();
        match cost {
            Cost::KnownMove { window, walk } => {
                let n = props::far_move_budget(l.config(), window, walk, before.in_flight);
                self.overlapped += u64::from(before.in_flight > 0);
                self.items = Some(Budget::new(far, n));
                self.reads = None;
            }
            Cost::Ranged { touched } => {
                let n = props::ranged_budget(touched);
                if before.fresh {
                    self.items = Some(Budget::new(ranged, n * page + out));
                    self.reads = Some(Budget::new(ranged, n));
                } else {
                    add(&mut self.items, ranged, n * page, &mut self.overlapped);
                    add(&mut self.reads, ranged, n, &mut self.overlapped);
                }
            }
            Cost::PageFailure => {
                add(
                    &mut self.items,
                    PAGE_FAILURE_COST,
                    page,
                    &mut self.overlapped,
                );
                add(&mut self.reads, PAGE_FAILURE_COST, 1, &mut self.overlapped);
            }
            Cost::Append { items, at_end } => {
                // The new items, a page at a time, and the read that finds the end.
                let reads = items.div_ceil(page) + 1;
                if before.fresh && at_end {
                    self.items = Some(Budget::new(APPEND_COST, items + out));
                    self.reads = Some(Budget::new(APPEND_COST, reads));
                } else if before.fresh {
                    // Nothing held the end: nothing is owed for it, and the move that
                    // reaches it later is its own.
                } else {
                    // A read in flight across the append may claim the end: one more read
                    // (an empty one) looks again.
                    add(&mut self.items, APPEND_COST, items, &mut self.overlapped);
                    add(
                        &mut self.reads,
                        APPEND_COST,
                        reads + 1,
                        &mut self.overlapped,
                    );
                }
            }
            Cost::Spend => {}
            Cost::Unpromised => {
                self.items = None;
                self.reads = None;
            }
        }
        if before.filtered {
            self.reads = None;
        }
        spend(
            &mut self.items,
            l.stats().items_read - before.items,
            "items read",
        )?;
        spend(
            &mut self.reads,
            props::issued(l) - before.reads,
            "reads issued",
        )?;
        if props::fresh(l) {
            let (items, reads) = (self.items.take(), self.reads.take());
            let mut names = std::collections::BTreeSet::new();
            for b in [&items, &reads].into_iter().flatten() {
                names.insert(b.name);
            }
            for name in names {
                *self.met.entry(name).or_default() += 1;
            }
            // An event added to both budgets counts once.
            let added = items.as_ref().or(reads.as_ref());
            for name in added.map(|b| b.added.as_slice()).unwrap_or(&[]) {
                *self.added.entry(name).or_default() += 1;
            }
        }
        Ok(())
    }
}
