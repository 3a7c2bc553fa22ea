//! The loader checker's properties: each a name, what it checks, and where.
//!
//! After every event: the sim host's checks (the ledger's invariants, a contiguous view, the
//! view against the source whenever nothing is being revalidated, positions that are the
//! source's own at its start, `changed` once and last in each call), plus accounting, the
//! memory bound, unique items and the retry count. From every state: progress.

use super::{Settings, State};
use crate::loader::{Direction, Holder, Loader, Read};
use std::collections::HashSet;

/// A named property of the loader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Property {
    /// The ledger's five invariants hold.
    Ledger,
    /// Every acquisition is released exactly once, and the loader holds exactly the
    /// acquisitions it accepted and has not released.
    Accounting,
    /// Every held acquisition is in the view, in a running repair, or in a failed read kept
    /// for its retry.
    HeldAccounted,
    /// The acquisitions held are within the header's bound, at every state.
    Bound,
    /// The view's pages are contiguous, and so are each repair's staged pages from its anchor.
    Contiguous,
    /// No item appears twice in the view.
    Unique,
    /// When nothing is being revalidated (an honest host), the view is the source's items.
    QuietView,
    /// Positions are the source's own whenever `start_of_source` is set.
    OwnPositions,
    /// `changed` at most once per call, after the call's other effects.
    ChangedOnceLast,
    /// Once the source stops changing and reads stop failing, quiescence with the window
    /// covered, within a bound of answers; with a host that repeats a cursor with items or
    /// whose cursor is gone for good (`HostFault::RepeatsWithItems`, `CursorGone`), waiting
    /// for the host or quiescence within `Settings::fault_bound` answers.
    Progress,
    /// A ranged invalidation outside the held pages and every read in flight issues no read
    /// and supersedes nothing.
    RangedUntouched,
    /// After a successful answer, the automatic retry count starts again.
    RetryReset,
    /// The loader refused a call an honest host made.
    Refused,
    /// `explain` says `quiescent` exactly when the loader is, and otherwise names every read
    /// the host holds, the backoff deadline armed, and `loader_retry` when only the host can
    /// retry.
    Explained,
    /// No call panics (an arithmetic overflow, an index out of range, a broken expectation).
    NoPanic,
    /// A move or jump with a known cursor (`locate` answered, a jump's cursor) reads at most
    /// window + 2·prefetch + 2·page items before the view is fresh again (plus a walk up to
    /// `jump_threshold`, and a page for each read in flight when it was made), whatever was in
    /// flight: checked along the explored events and along every progress walk.
    FarMoveCost,
    /// A cost: a ranged change (an item inserted or deleted, or every item updated) made when
    /// the loader was quiescent issues at most the held pages it touches that meet the window
    /// plus prefetch, plus one read, before the view is fresh again (changed pages wholly
    /// outside it are let go, not re-read): checked along the explored events and every
    /// progress walk.
    RangedCost,
    /// A retry counted in `retries_page` reads the failed page read again: its cursor,
    /// direction and `until`.
    PageRetry,
    /// A far move that starts at the cursor `locate` gave issues a read there in the same
    /// call, whatever was in flight or failed before it.
    FarStart,
}

impl Property {
    /// Every property, in the order the report lists them.
    pub const ALL: [Property; 19] = [
        Property::Ledger,
        Property::Accounting,
        Property::HeldAccounted,
        Property::Bound,
        Property::Contiguous,
        Property::Unique,
        Property::QuietView,
        Property::OwnPositions,
        Property::ChangedOnceLast,
        Property::Progress,
        Property::RangedUntouched,
        Property::RetryReset,
        Property::Refused,
        Property::Explained,
        Property::NoPanic,
        Property::FarMoveCost,
        Property::RangedCost,
        Property::PageRetry,
        Property::FarStart,
    ];

    /// Its name, as `loader-check --loader` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Property::Ledger => "ledger",
            Property::Accounting => "accounting",
            Property::HeldAccounted => "held_accounted",
            Property::Bound => "bound",
            Property::Contiguous => "contiguous",
            Property::Unique => "unique",
            Property::QuietView => "quiet_view",
            Property::OwnPositions => "own_positions",
            Property::ChangedOnceLast => "changed_once_last",
            Property::Progress => "progress",
            Property::RangedUntouched => "ranged_untouched",
            Property::RetryReset => "retry_reset",
            Property::Refused => "refused",
            Property::Explained => "explained",
            Property::NoPanic => "no_panic",
            Property::FarMoveCost => "far_move_cost",
            Property::RangedCost => "ranged_cost",
            Property::PageRetry => "page_retry",
            Property::FarStart => "far_start",
        }
    }

    /// The property a sim host's message reports.
    pub(super) fn from_message(m: &str) -> Property {
        let has = |s: &str| m.contains(s);
        if has("changed_once_last") {
            Property::ChangedOnceLast
        } else if has("appears twice") {
            Property::Unique
        } else if has("ledger ") {
            Property::Ledger
        } else if has("released but not held") || has("after close") {
            Property::Accounting
        } else if has("max_pages") || has("over the bound") {
            Property::Bound
        } else if has("starts at the source's start") || has("claims the source's start") {
            Property::OwnPositions
        } else if has("page starts at") || has("covered end") || has("was released") {
            Property::Contiguous
        } else if has("refused") {
            Property::Refused
        } else if has("page_retry_reads_the_failed_read") {
            Property::PageRetry
        } else if has("far_start_reads_at_its_cursor") {
            Property::FarStart
        } else {
            Property::QuietView
        }
    }
}

/// The properties checked after every event, beyond the sim host's own.
pub(super) fn after_event(st: &State, answered: bool) -> Result<(), (Property, String)> {
    let h = &st.host;
    let theirs: HashSet<u64, rustc_hash::FxBuildHasher> = h.held.keys().copied().collect();
    // Contiguity and unique items are the sim host's own checks (`Host::check`).
    loader_props(&h.loader, &theirs, &h.pending_reads(), answered, 0)
}

/// The properties of one loader after an event that need nothing of the host but the
/// acquisitions it handed over and has not had back (`theirs`) and the reads it was asked for
/// and has not answered (`pending`): accounting, every held acquisition accounted for, the
/// memory bound, and the retry count after a successful answer (`answered`). A recorded run's
/// replay checks them too; its window may have been wider when the running repair started
/// (`repair_window`, the widest since the loader was last quiescent; 0 for the current one),
/// and a repair stages pages for the window it started with.
pub(crate) fn loader_props<S: std::hash::BuildHasher>(
    l: &Loader,
    theirs: &HashSet<u64, S>,
    pending: &[Read],
    answered: bool,
    repair_window: u64,
) -> Result<(), (Property, String)> {
    let holders = l.holders();
    // Accounting: the loader's holders are exactly the host's outstanding acquisitions.
    let mut mine: smallvec::SmallVec<[u64; 16]> = holders.iter().map(|x| x.0).collect();
    mine.sort_unstable();
    if mine.windows(2).any(|w| w[0] == w[1]) {
        return Err((
            Property::Accounting,
            format!("an acquisition is held twice: {holders:?}"),
        ));
    }
    if mine.len() != theirs.len() || !mine.iter().all(|a| theirs.contains(a)) {
        return Err((
            Property::Accounting,
            format!("the loader holds {mine:?}, the host has given and not had back {theirs:?}"),
        ));
    }
    if let Some(x) = holders.iter().find(|x| matches!(x.1, Holder::Idle { .. })) {
        return Err((
            Property::HeldAccounted,
            format!(
                "acquisition {} is held by no view, repair or retry: {:?}",
                x.0, x.1
            ),
        ));
    }
    bound(l, pending, &holders, repair_window)?;
    retry_reset(l, answered)?;
    explained(l, pending, &l.explain()).map_err(|m| (Property::Explained, m))
}

/// After a successful answer (`answered`), the automatic retry count starts again, unless a
/// stalled cursor holds it (the steps before the stall succeed every time: only a commit or a
/// current page starts it again, so a source that repeats its cursor costs a bounded number
/// of reads).
pub(crate) fn retry_reset(l: &Loader, answered: bool) -> Result<(), (Property, String)> {
    if answered && l.auto_retries_spent() != 0 && !l.stall_held() {
        return Err((
            Property::RetryReset,
            format!(
                "a successful answer left {} automatic retries counted",
                l.auto_retries_spent()
            ),
        ));
    }
    Ok(())
}

/// Whether `text` (the loader's `explain`) tells the truth about `l`: its first line is
/// `quiescent` exactly when the loader is (nothing in flight, nothing owed, no failure); it
/// names every read the host holds unanswered (`pending`: waited for, superseded, or let go of), the
/// backoff deadline when one is armed, and `loader_retry` when nothing but the host can retry.
pub(crate) fn explained(l: &Loader, pending: &[Read], text: &str) -> Result<(), String> {
    if l.is_closed() {
        // Closed: it says so, and waits for nothing (the reads still out were cancelled).
        return if text.starts_with("closed") {
            Ok(())
        } else {
            Err(format!("explain of a closed loader: {text:?}"))
        };
    }
    let s = l.ledger().snapshot();
    let quiet = l.ledger().is_quiescent()
        && !l.revalidating()
        && s.failure == crate::ledger::Failure::None
        && l.outstanding_reads() == 0;
    let first = text.lines().next().unwrap_or("");
    if quiet != (first == "quiescent") {
        return Err(format!(
            "explain says {first:?} of a loader that is {}quiescent ({:?}, {} reads outstanding): {text:?}",
            if quiet { "" } else { "not " },
            s,
            l.outstanding_reads()
        ));
    }
    let named = named_reads(text);
    for r in pending {
        let mut buf = [0u8; 20];
        let digits = decimal(r.read_id, &mut buf);
        if !named.contains(&digits) {
            return Err(format!(
                "explain does not name read {}, which the host holds: {text:?}",
                r.read_id
            ));
        }
    }
    if let Some(d) = l.next_deadline() {
        if !names_deadline(text, d) {
            return Err(format!(
                "explain does not name the deadline {d} ms: {text:?}"
            ));
        }
    }
    if l.ledger().retry_enabled()
        && l.outstanding_reads() == 0
        && l.next_deadline().is_none()
        && !text.contains("loader_retry")
    {
        return Err(format!(
            "only the host can retry, and explain does not say loader_retry: {text:?}"
        ));
    }
    Ok(())
}

/// The numbers `text` names as reads: each whole run of digits after `read ` (one pass over
/// the text, whatever the number of reads asked about).
fn named_reads(text: &str) -> smallvec::SmallVec<[&[u8]; 8]> {
    static READ: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"read "));
    let b = text.as_bytes();
    READ.find_iter(b)
        .filter_map(|p| {
            let from = p + b"read ".len();
            let to = from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
            (to > from).then(|| &b[from..to])
        })
        .collect()
}

/// Whether `text` says `read {id}`, not the start of a longer number.
#[cfg(test)]
fn names_read(text: &str, id: u64) -> bool {
    let mut buf = [0u8; 20];
    let digits = decimal(id, &mut buf);
    named_reads(text).contains(&digits)
}

/// `n` in decimal, written at the end of `buf` (no allocation: this runs after every event).
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

/// Whether `text` says `{d} ms` (as a substring, as `contains` finds it).
fn names_deadline(text: &str, d: u64) -> bool {
    let mut buf = [0u8; 20];
    let digits = decimal(d, &mut buf);
    let b = text.as_bytes();
    memchr::memmem::find_iter(b, b" ms").any(|at| b[..at].ends_with(digits))
}

/// The header's bound (`loader_config.max_pages`): the view holds at most max(`max_pages`,
/// the pages overlapping the window ± prefetch); each running repair or full read (and a
/// failed one kept for its retry) stages at most ceil((window + 2 prefetch) / page) + 2.
pub(crate) fn bound(
    l: &Loader,
    pending: &[Read],
    holders: &[(u64, Holder)],
    repair_window: u64,
) -> Result<(), (Property, String)> {
    let c = l.config();
    let (ws, wl) = l.window();
    let pf = c.prefetch_distance;
    let (from, to) = (ws.saturating_sub(pf), (ws + wl).saturating_add(pf));
    let full_max = (wl.max(repair_window) + 2 * pf).div_ceil(u64::from(c.page_size)) as usize + 2;
    // Small maps by holder (a repair's request, or `None`: a failed read kept for its
    // retry), kept as vectors: a state holds a few.
    fn bump(m: &mut smallvec::SmallVec<[(Option<u64>, usize); 8]>, who: Option<u64>) {
        match m.iter_mut().find(|x| x.0 == who) {
            Some(x) => x.1 += 1,
            None => m.push((who, 1)),
        }
    }
    let mut per = smallvec::SmallVec::<[(Option<u64>, usize); 8]>::new();
    for x in holders {
        match x.1 {
            Holder::Repair { request } => bump(&mut per, Some(request)),
            Holder::Resume => bump(&mut per, None),
            _ => {}
        }
    }
    // Short pages (a filtered source, a host that lies) may need more pages to cover the
    // window: the pages overlapping it are needed, and at most two others may be held (the
    // anchor's, and the one just read on the way).
    let mut overlapping = smallvec::SmallVec::<[(Option<u64>, usize); 8]>::new();
    for (who, start, count) in l.staged_spans() {
        if start < to && start + u64::from(count) > from {
            bump(&mut overlapping, who);
        }
    }
    let allowed = |who: &Option<u64>| {
        let n = overlapping.iter().find(|x| x.0 == *who).map_or(0, |x| x.1);
        full_max.max(n + 2)
    };
    let staged_max = per.iter().map(|x| allowed(&x.0)).max().unwrap_or(full_max);
    if let Some((who, n)) = per.iter().find(|x| x.1 > allowed(&x.0)) {
        return Err((
            Property::Bound,
            format!(
                "{} holds {n} staged pages, over the bound {} (window {ws}+{wl}, prefetch {pf})",
                who.map_or("a failed read kept for its retry".to_string(), |r| format!(
                    "repair {r}"
                )),
                allowed(who)
            ),
        ));
    }
    if c.max_pages > 0 {
        let overlapping = l
            .pages()
            .filter(|p| p.start < to && p.start + u64::from(p.count) > from)
            .count();
        let view_max = (c.max_pages as usize).max(overlapping);
        // A finite read in flight keeps the pages on its side (the header says so).
        let reading = |d: Direction| {
            pending
                .iter()
                .any(|r| r.kind == crate::loader::Kind::Finite && r.direction == d)
        };
        let slack = usize::from(reading(Direction::Forward) || reading(Direction::Backward));
        // In all: the view's share, and one running repair's (or a failed one kept).
        if holders.len() > view_max + slack + staged_max {
            return Err((
                Property::Bound,
                format!(
                    "{} acquisitions held, over max({}, {overlapping}) + {slack} + {staged_max}",
                    holders.len(),
                    c.max_pages
                ),
            ));
        }
        if l.page_count() > view_max + slack {
            return Err((
                Property::Bound,
                format!(
                    "the view holds {} pages, over max({}, {overlapping} overlapping the window) + {slack}",
                    l.page_count(),
                    c.max_pages
                ),
            ));
        }
    }
    Ok(())
}

/// What progress walks found, by the canonical key of each host state they passed through
/// and the order reads were answered in (oldest first, newest first): the answers, calls and
/// items read from there to quiescence. A walk is a function of the canonical state (the host's own
/// answers, its clock's deadlines as offsets, reads chosen by the order of their ids, which
/// ranking keeps), so a walk that reaches a state another walk passed through ends there.
#[derive(Default)]
pub(super) struct Walks {
    known: [rustc_hash::FxHashMap<u128, (u32, u32, u64, u64)>; 2],
    enc: Option<super::canon::Enc>,
}

impl Walks {
    fn key(&mut self, h: &crate::sim::Host) -> u128 {
        use super::canon::{Canon, Enc, Form};
        let e = self.enc.get_or_insert_with(|| Enc::new(0, Form::Fields));
        e.reset(h.now, Form::Fields);
        h.canon(e);
        e.finish()
    }
}

/// Progress: from `st`, with the source left alone and every read answered honestly (oldest
/// first, then newest first), timers run and retries made when nothing else is armed, the
/// loader reaches quiescence with the window covered within `bound` answers. `walks`, when
/// given, remembers the walks' states, so that no state's walk is taken twice. After a move
/// with a known cursor (`st.far`), the items the walk reads must be within its budget
/// ([`Property::FarMoveCost`]). With a host of issue 35's faults
/// ([`super::HostFault::RepeatsWithItems`], [`super::HostFault::CursorGone`]) the walk
/// answers as that host does, retries for the host only while a page failure is recorded,
/// and may end with the loader waiting for the host (nothing in flight, no timer armed,
/// `explain` saying so); its bound is [`Settings::fault_bound`], and it promises no cost.
/// `host_key`, when given, is the canonical key of `st.host` (`canon::Form::Fields`).
/// `firsts`, when given (with `walks`), receives each walk's first step from `st` (the
/// explorer's events of the same op from `st` reach the same host: [`First`]), and a walk
/// whose first step is one already there takes its host instead of applying it again.
pub(super) fn progress(
    st: &State,
    s: &Settings,
    mut walks: Option<&mut Walks>,
    host_key: Option<u128>,
    mut firsts: Option<&mut Vec<First>>,
) -> Result<usize, (Property, String)> {
    let mut worst = 0;
    let bound = s.fault_bound();
    let max_calls = 4 * bound + 16;
    // A host of issue 35's faults: each walk chooses its cursor as it goes, so walks are not
    // functions of the host state alone; they are taken whole, and promise no cost.
    let fault = s.fault.filter(|f| {
        matches!(
            f,
            super::HostFault::RepeatsWithItems | super::HostFault::CursorGone
        )
    });
    if fault.is_some() {
        walks = None;
    }
    // The start's key, for both walks (when no effects wait: else after they are carried out).
    let start = match walks.as_deref_mut() {
        Some(w) if st.host.loader.queued_effects().is_empty() => {
            Some(host_key.unwrap_or_else(|| w.key(&st.host)))
        }
        _ => None,
    };
    for newest_first in [false, true] {
        let dir = usize::from(newest_first);
        if let (Some(k), Some(w)) = (start, walks.as_deref()) {
            if let Some(&(a, _, items, reads)) = w.known[dir].get(&k) {
                // Walked before from this very state, within the bounds, and settled.
                far_cost(st, items)?;
                ranged_cost(st, reads)?;
                worst = worst.max(a as usize);
                continue;
            }
        }
        // The walk's host, copied at its first step (a quiescent state's walk takes none).
        let mut h = std::borrow::Cow::Borrowed(&st.host);
        // Effects still queued (a starting point's) reach the host with its first call.
        if !h.loader.queued_effects().is_empty() {
            h.to_mut()
                .collect()
                .map_err(|m| (Property::from_message(&m), m))?;
        }
        let mut answers = 0;
        let mut calls = 0;
        let items_at = |h: &crate::sim::Host| h.loader.stats().items_read;
        let items_from = items_at(&h);
        let reads_from = issued(&h.loader);
        // The states passed, with the answers, calls, items read and reads issued before each.
        let mut path: Vec<(u128, usize, usize, u64, u64)> = Vec::new();
        let mut known = None;
        let mut first = start;
        // The cursor the faulty host repeats, or whose reads fail, once chosen.
        let mut at: Option<Vec<u8>> = None;
        // The walk ended with the loader waiting for the host (a faulty host's walk only).
        let mut waits = false;
        // The first step is shared (with the other walk and the explorer) only from the state
        // itself: not after effects still queued were carried out.
        let mut share = start.is_some();
        // The first step's host, when it is the one in `firsts[i]` (moved out, not copied):
        // copied back before the walk changes it, moved back when the walk ends without.
        let mut lent: Option<usize> = None;
        loop {
            if let Some(w) = walks.as_deref_mut() {
                let k = match first.take() {
                    Some(k) => k,
                    None => w.key(&h),
                };
                if let Some(&(a, c, items, reads)) = w.known[dir].get(&k) {
                    known = Some((a as usize, c as usize, items, reads));
                    break;
                }
                path.push((
                    k,
                    answers,
                    calls,
                    items_at(&h) - items_from,
                    issued(&h.loader) - reads_from,
                ));
            }
            let ids = h.pending_ids();
            let step = if let Some(read_id) = if newest_first { ids.max() } else { ids.min() } {
                answers += 1;
                if answers > bound {
                    return Err((Property::Progress, not_settled(s, bound)));
                }
                let index = h.index_of(read_id);
                match s.fault {
                    Some(super::HostFault::Stalling) => crate::sim::Op::Stall { index },
                    Some(f) if fault.is_some() => {
                        give_back(&mut firsts, &mut lent, &h);
                        faulty_answer(h.to_mut(), read_id, f, &mut at)
                    }
                    _ => crate::sim::Op::Deliver { index, fresh: true },
                }
            } else if let Some(d) = h.loader.next_deadline() {
                crate::sim::Op::Tick {
                    ms: d.saturating_sub(h.now).clamp(1, u64::from(u16::MAX)) as u16,
                }
            } else if h.loader.ledger().retry_enabled() {
                if fault.is_some() && h.loader.ledger().failure() != crate::ledger::Failure::Page {
                    // Nothing in flight, no timer armed: the loader waits for the host. (While
                    // a page failure is recorded the host retries: that reads the page again,
                    // once, and its failing again reads from the anchor.)
                    waits = true;
                    break;
                }
                crate::sim::Op::Retry
            } else {
                break;
            };
            calls += 1;
            if calls > max_calls {
                return Err((
                    Property::Progress,
                    format!("not quiescent after {calls} calls ({answers} answers)"),
                ));
            }
            if let (true, Some(firsts), Some(w)) = (
                std::mem::take(&mut share),
                firsts.as_deref_mut(),
                walks.as_deref_mut(),
            ) {
                if let Some(i) = firsts.iter().position(|f| f.op == step) {
                    // The other walk took this step from this state already: its host, lent.
                    let f = &mut firsts[i];
                    h = std::borrow::Cow::Owned(f.host.take().expect("not yet taken"));
                    first = Some(f.key);
                    lent = Some(i);
                } else {
                    h.to_mut()
                        .apply(step)
                        .map_err(|m| (Property::from_message(&m), m))?;
                    let k = w.key(&h);
                    firsts.push(First {
                        op: step,
                        host: None,
                        key: k,
                    });
                    first = Some(k);
                    lent = Some(firsts.len() - 1);
                }
                continue;
            }
            give_back(&mut firsts, &mut lent, &h);
            h.to_mut()
                .apply(step)
                .map_err(|m| (Property::from_message(&m), m))?;
        }
        let mut items = items_at(&h) - items_from;
        let mut reads = issued(&h.loader) - reads_from;
        match known {
            // The rest of this walk was walked before, and ended settled.
            Some((a, c, rest, rest_reads)) => {
                items += rest;
                reads += rest_reads;
                if answers + a > bound {
                    return Err((Property::Progress, not_settled(s, bound)));
                }
                if calls + c > max_calls {
                    return Err((
                        Property::Progress,
                        format!(
                            "not quiescent after {} calls ({} answers)",
                            max_calls + 1,
                            answers + a
                        ),
                    ));
                }
                answers += a;
                calls += c;
            }
            // Waiting for the host: and `explain` says so (`loader_retry`).
            None if waits => explained(&h.loader, &h.pending_reads(), &h.loader.explain())
                .map_err(|m| (Property::Explained, m))?,
            None => h.check_settled().map_err(|m| (Property::Progress, m))?,
        }
        if fault.is_none() {
            far_cost(st, items)?;
            ranged_cost(st, reads)?;
        }
        if let (Some(i), Some(firsts)) = (lent, firsts.as_deref_mut()) {
            // The walk ended on its first step's host, unchanged: moved back.
            firsts[i].host = Some(h.into_owned());
        }
        if let Some(w) = walks.as_deref_mut() {
            let known = &mut w.known[dir];
            for (k, a, c, i, r) in path {
                known.insert(
                    k,
                    (
                        (answers - a) as u32,
                        (calls - c) as u32,
                        items - i,
                        reads - r,
                    ),
                );
            }
        }
        worst = worst.max(answers);
    }
    Ok(worst)
}

/// What a progress walk that ran out of answers says.
fn not_settled(s: &Settings, bound: usize) -> String {
    match s.fault {
        Some(super::HostFault::RepeatsWithItems) => format!(
            "neither waiting for the host nor quiescent after {bound} answers from a host that repeats a cursor with items"
        ),
        Some(super::HostFault::CursorGone) => format!(
            "neither waiting for the host nor quiescent after {bound} answers from a host whose cursor is gone for good (the host retrying a page failure)"
        ),
        _ => format!("not quiescent after {bound} honest answers"),
    }
}

/// The faulty host's answer to pending read `read_id` in a progress walk (`at`: the cursor
/// it repeats, or whose reads fail, once the walk chose it). [`super::HostFault::RepeatsWithItems`]:
/// the first forward read whose page has items names the cursor; a forward read there with
/// items is answered with them and its own cursor. [`super::HostFault::CursorGone`]: the first
/// page read (`Kind::Finite`) at a cursor that names an item of the source names the cursor,
/// and its item is deleted (unreported: the view may be stale, `lied`); every read there, of
/// any kind, fails. Other reads are answered honestly, from the source as it is.
fn faulty_answer(
    h: &mut crate::sim::Host,
    read_id: u64,
    fault: super::HostFault,
    at: &mut Option<Vec<u8>>,
) -> crate::sim::Op {
    use crate::sim::Op;
    let index = h.index_of(read_id);
    let read = h.pending_read(read_id).expect("the read is pending");
    let cursor = read.cursor.to_vec();
    match fault {
        super::HostFault::RepeatsWithItems => {
            let repeats = read.direction == Direction::Forward
                && !h.source.answer(read).items.is_empty()
                && *at.get_or_insert_with(|| cursor.clone()) == cursor;
            if repeats {
                return Op::Repeat { index };
            }
        }
        _ => {
            let page = read.kind == crate::loader::Kind::Finite;
            if at.is_none() && page && !cursor.is_empty() {
                let named = h
                    .source
                    .items()
                    .iter()
                    .position(|&i| crate::sim::encode_cursor(i) == cursor);
                if let Some(i) = named {
                    h.source.delete(i);
                    h.lied = true;
                    *at = Some(cursor.clone());
                }
            }
            if at.as_deref() == Some(&cursor[..]) {
                return Op::Fail { index };
            }
        }
    }
    Op::Deliver { index, fresh: true }
}

/// A progress walk's first step from a state: the op, the host it reached (until the explorer
/// takes it: its event of the same op from the same state reaches the same host, the sim
/// host being a function of its state and the op), and that host's canonical key
/// ([`super::canon::Form::Fields`]).
pub(super) struct First {
    pub(super) op: crate::sim::Op,
    pub(super) host: Option<crate::sim::Host>,
    pub(super) key: u128,
}

/// Before a walk changes the host it was lent by `firsts` (its first step's), a copy of it
/// goes back there: the explorer's event of the same op takes it.
fn give_back(firsts: &mut Option<&mut Vec<First>>, lent: &mut Option<usize>, h: &crate::sim::Host) {
    if let (Some(i), Some(firsts)) = (lent.take(), firsts.as_deref_mut()) {
        firsts[i].host = Some(h.clone());
    }
}

/// The reads `l` has issued.
pub(crate) fn issued(l: &Loader) -> u64 {
    l.stats().issued.iter().sum()
}

/// After a ranged change (`st.ranged`: the reads it may still issue), `reads` more issued
/// before the view is fresh are within its budget.
pub(super) fn ranged_cost(st: &State, reads: u64) -> Result<(), (Property, String)> {
    match st.ranged {
        Some(left) if reads > left => Err((
            Property::RangedCost,
            format!(
                "a ranged change issued {reads} reads more before the view was fresh, over the {left} left of its budget (the pages it touched plus one)"
            ),
        )),
        _ => Ok(()),
    }
}

/// After a move with a known cursor (`st.far`: the items it may still read), `items` more
/// read before the view is fresh are within its budget.
pub(super) fn far_cost(st: &State, items: u64) -> Result<(), (Property, String)> {
    match st.far {
        Some(left) if items > left => Err((
            Property::FarMoveCost,
            format!(
                "a move with a known cursor read {items} items more before the view was fresh, over the {left} left of its budget"
            ),
        )),
        _ => Ok(()),
    }
}

/// The view is fresh: nothing in flight, owed or failed. A cost budget (the checker's and the
/// simulation's) closes here: what is read after it is not the budgeted event's.
pub(crate) fn fresh(l: &Loader) -> bool {
    l.ledger().is_quiescent()
        && !l.revalidating()
        && l.outstanding_reads() == 0
        && l.ledger().snapshot().failure == crate::ledger::Failure::None
}

/// A cost budget opens on a fresh view ([`fresh`]) that is also what the source is: after a
/// lie, or with `recheck_full` off after an invalidation that overtook a full read was lost
/// (as the header documents), the loader's books may be quiet while the view is stale, and a
/// change made then reads again what the lost one changed too. The checker's and the
/// simulation's budgets open here, so the two exempt the same views.
pub(crate) fn fresh_view(h: &crate::sim::Host) -> bool {
    fresh(&h.loader)
        && (!(h.lied || h.lossy) || h.view_items().is_ok_and(|v| h.view_agrees(&v).is_ok()))
}

/// [`Property::FarMoveCost`]'s budget, in items: what a move or jump with a known cursor may
/// read before the view is fresh again. The window (`window`, its length after the move),
/// twice the prefetch and two pages (the partial pages at its ends); plus `walk`, the items
/// between where it started and the window (0 for a start at the target: `locate`'s answer,
/// a jump's cursor); plus a page for each read in flight when it was made (`in_flight`),
/// whose answer may still come.
pub(crate) fn far_move_budget(
    c: &crate::loader::Config,
    window: u64,
    walk: u64,
    in_flight: usize,
) -> u64 {
    let page = u64::from(c.page_size);
    window
        .saturating_add(2 * c.prefetch_distance)
        .saturating_add(2 * page)
        .saturating_add(walk)
        .saturating_add(page * in_flight as u64)
}

/// The walk a move that may not have been a far one may make before [`far_move_budget`]'s
/// window: up to `jump_threshold` (by default the window plus twice the prefetch).
pub(crate) fn walk_allowance(c: &crate::loader::Config, window: u64) -> u64 {
    match c.jump_threshold {
        crate::loader::JUMP_THRESHOLD_AUTO => window.saturating_add(2 * c.prefetch_distance),
        t => t,
    }
}

/// [`Property::RangedCost`]'s budget, in reads: the pages a ranged change touches plus one.
pub(crate) fn ranged_budget(touched: u64) -> u64 {
    touched + 1
}

/// The held pages of `l` a change at cursor `at` may lie in (after a page's start cursor, at
/// or before its end cursor) that meet the window plus prefetch ([`wanted`]): the pages a
/// ranged change touches, by [`Property::RangedCost`]'s count.
pub(crate) fn pages_touching(l: &Loader, at: &[u8]) -> u64 {
    let lt = |a: &[u8], b: &[u8]| match (a.is_empty(), b.is_empty()) {
        (true, b_empty) => !b_empty,
        (false, true) => false,
        (false, false) => crate::sim::Source::compare(a, b) == std::cmp::Ordering::Less,
    };
    let mut start = l.base_cursor().to_vec();
    let mut n = 0;
    for p in l.pages() {
        if lt(&start, at) && !lt(p.end_cursor(), at) && wanted(l, p) {
            n += 1;
        }
        start = p.end_cursor().to_vec();
    }
    n
}

/// Whether held page `p` meets the window plus prefetch: a ranged repair re-reads only such
/// pages, and lets go of the changed pages wholly outside it (6a2cf4a).
pub(crate) fn wanted(l: &Loader, p: &crate::loader::Page) -> bool {
    let (start, len) = l.window();
    let prefetch = l.config().prefetch_distance;
    let lo = start.saturating_sub(prefetch);
    let hi = start.saturating_add(len).saturating_add(prefetch);
    p.start < hi && p.start + u64::from(p.count) > lo
}

#[cfg(test)]
mod tests {
    use super::{explained, names_deadline, names_read};

    #[test]
    fn a_read_and_a_deadline_are_named_as_words() {
        assert!(names_read("waiting for read 12 (forward)", 12));
        assert!(names_read("read 3, read 12", 12));
        assert!(!names_read("waiting for read 120", 12));
        assert!(!names_read("waiting for read 1", 12));
        assert!(!names_read("thread 12", 13));
        assert!(names_read("read 0", 0));
        assert!(names_deadline("backoff until 140 ms", 140));
        assert!(
            names_deadline("until 1140 ms", 140),
            "as `contains` found it"
        );
        assert!(!names_deadline("until 140ms", 140));
        assert!(!names_deadline("until 14 ms", 140));
    }

    use crate::loader::Config;
    use crate::sim::{Host, Source};

    #[test]
    fn explained_fails_a_sentence_that_lies() {
        let mut h = Host::new(Config::default(), Source::numbered(4));
        assert!(explained(&h.loader, &h.pending_reads(), "quiescent").is_ok());
        assert!(explained(&h.loader, &h.pending_reads(), "waiting for read 1").is_err());
        h.loader.set_window(0, 2).unwrap();
        h.collect().unwrap();
        let id = h.pending_reads()[0].read_id;
        assert!(explained(&h.loader, &h.pending_reads(), &h.loader.explain()).is_ok());
        assert!(
            explained(&h.loader, &h.pending_reads(), "quiescent").is_err(),
            "a read is outstanding"
        );
        assert!(explained(
            &h.loader,
            &h.pending_reads(),
            &format!("waiting for read {id}0")
        )
        .is_err());
        assert!(
            explained(&h.loader, &h.pending_reads(), "not quiescent").is_err(),
            "the read is not named"
        );
    }
}
