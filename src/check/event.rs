//! The host events the loader checker explores, and how each is applied to a state: the
//! enabled events of a state, in a fixed order, so that a trace replays exactly.

use super::props::{self, Property};
use super::{HostFault, Settings, State};
use crate::loader::{Effect, LoaderError};
use crate::sim::{encode_cursor, Op, Source};

/// One host event. Reads are named by the loader's read id, items by their index in the
/// source as it is when the event runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// Answer the read honestly, from the source as it is now.
    Answer {
        /// The read.
        read: u64,
    },
    /// Fail the read.
    Fail {
        /// The read.
        read: u64,
    },
    /// Answer the read with no items, its own cursor and no end flag (a stalled source).
    Empty {
        /// The read.
        read: u64,
    },
    /// Answer the read with its items but its own cursor (a repeated cursor).
    Repeat {
        /// The read.
        read: u64,
    },
    /// Give up on the read (`abandon`).
    Abandon {
        /// The read.
        read: u64,
    },
    /// Insert an item with `key`, then invalidate: the whole source, or only the new item.
    Insert {
        /// The new item's key.
        key: u32,
        /// Report it with `invalidate_range` instead of `invalidate`.
        ranged: bool,
    },
    /// Delete the item at `index`, then invalidate (whole, or ranged).
    Delete {
        /// The item's index.
        index: usize,
        /// Report it with `invalidate_range`.
        ranged: bool,
    },
    /// Move the window.
    Window {
        /// Its first position.
        start: u64,
        /// Its length.
        len: u64,
    },
    /// Move the window with the host's `locate`, which answers right (`answer` 0), unknown
    /// (1) or wrong (2: the cursor three items on).
    WindowLocated {
        /// Its first position.
        start: u64,
        /// Its length.
        len: u64,
        /// How `locate` answers.
        answer: u8,
    },
    /// Jump to the item at `index` (the cursor before it), at its own position.
    Jump {
        /// The item's index.
        index: usize,
    },
    /// Jump to the source's start (the empty cursor), naming `position` for its first item.
    JumpStart {
        /// The position given.
        position: u64,
    },
    /// Every item updated in place (keys unchanged), reported as one range from the source's
    /// start to its last item (`wide` configurations).
    Touch,
    /// An explicit retry (offered when one is enabled).
    Retry,
    /// Let time pass to the next deadline (offered when one is armed).
    Tick,
}

/// The events enabled in `st`, within the budgets of `settings`.
pub(super) fn enabled(st: &State, s: &Settings) -> Vec<Event> {
    let mut v = Vec::new();
    let h = &st.host;
    for (read, cancelled, abandoned) in h.pending_flags() {
        v.push(Event::Answer { read });
        if st.faults < s.faults {
            v.push(Event::Fail { read });
            v.push(Event::Empty { read });
            v.push(Event::Repeat { read });
        }
        if !abandoned && (cancelled || st.faults < s.faults) {
            v.push(Event::Abandon { read });
        }
    }
    if st.changes < s.changes {
        let n = h.source.len();
        let last_key = h.source.items().last().map_or(0, |i| i.0);
        for ranged in [false, true] {
            for key in [0, last_key + 1] {
                v.push(Event::Insert { key, ranged });
            }
            if n > 0 {
                for index in [0, n - 1] {
                    v.push(Event::Delete { index, ranged });
                }
            }
        }
        if s.wide && n > 0 {
            v.push(Event::Touch);
        }
        v.dedup();
    }
    if st.moves < s.moves {
        let (start, len) = h.loader.window();
        for to in s.window_starts() {
            if to != start {
                v.push(Event::Window { start: to, len });
            }
        }
        if s.wide {
            let middle = s.source as u64 / 2;
            for (to, l) in [(start, 1), (middle, 1), (middle, len)] {
                if (to, l) != (start, len) && !v.contains(&Event::Window { start: to, len: l }) {
                    v.push(Event::Window { start: to, len: l });
                }
            }
        }
        // To the source's last item: far from a one-item window at the start; with two moves,
        // to its middle too (a far move made during another's reads).
        let last = (s.source as u64).saturating_sub(1);
        let targets = if s.moves >= 2 {
            vec![s.source as u64 / 2, last]
        } else {
            vec![last]
        };
        for to in targets.into_iter().filter(|_| s.locate) {
            if to != start {
                for answer in 0..3 {
                    v.push(Event::WindowLocated {
                        start: to,
                        len,
                        answer,
                    });
                }
            }
        }
        if st.jumps < 1 {
            let n = h.source.len();
            for index in [0, n / 2] {
                v.push(Event::Jump { index });
            }
            v.push(Event::JumpStart {
                position: s.source as u64 + 1,
            });
        }
    }
    if h.loader.ledger().retry_enabled() {
        v.push(Event::Retry);
    }
    // A tick also delivers effects still queued (a starting point's), as any call does.
    if h.loader.next_deadline().is_some() || !h.loader.queued_effects().is_empty() {
        v.push(Event::Tick);
    }
    v
}

/// Applies `e` to `st`, checking every property that holds after any event; returns the
/// violated property with a message.
pub(super) fn apply(st: &mut State, s: &Settings, e: Event) -> Result<(), (Property, String)> {
    let answered = apply_unjudged(st, s, e)?;
    props::after_event(st, answered)
}

/// Applies `e` to `st`, checking the properties of the event itself (the sim host's checks,
/// `changed` once and last, a ranged change that touches nothing) but not those of the state
/// it reaches ([`props::after_event`]), which the explorer checks once per canonical state;
/// returns whether a read was answered current.
pub(super) fn apply_unjudged(
    st: &mut State,
    s: &Settings,
    e: Event,
) -> Result<bool, (Property, String)> {
    let before = Before::of(&st.host);
    let touched = apply_event(st, s, e)?;
    account(st, s, e, before, touched)
}

/// [`apply_unjudged`] for an event whose host op (`host_op`) `st.host` has had applied
/// already (a progress walk took that step from the same state: [`props::First`]); `pre` is
/// the host before it.
pub(super) fn apply_prepared(
    st: &mut State,
    s: &Settings,
    e: Event,
    pre: &crate::sim::Host,
) -> Result<bool, (Property, String)> {
    debug_assert!(host_op(pre, s, e).is_some());
    account(st, s, e, Before::of(pre), None)
}

/// The host's op that an event is, alone (no budget spent, no loader call beside it): an
/// answer, a tick, a retry.
pub(super) fn host_op(h: &crate::sim::Host, s: &Settings, e: Event) -> Option<Op> {
    match e {
        Event::Answer { read } => {
            let index = h.index_of(read);
            Some(match s.fault {
                Some(HostFault::BackwardAfter) => Op::MisreadBackward { index },
                _ => Op::Deliver { index, fresh: true },
            })
        }
        Event::Retry => Some(Op::Retry),
        Event::Tick => {
            let d = h.loader.next_deadline().unwrap_or(h.now);
            let ms = d.saturating_sub(h.now).max(1);
            Some(Op::Tick { ms: ms as u16 })
        }
        _ => None,
    }
}

/// What [`account`] needs of the host before an event.
struct Before {
    current: u64,
    items: u64,
    reads: u64,
    in_flight: usize,
    quiet: bool,
}

impl Before {
    fn of(h: &crate::sim::Host) -> Before {
        Before {
            current: h.loader.stats().answered_current,
            items: h.loader.stats().items_read,
            reads: props::issued(&h.loader),
            in_flight: h.pending_ids().count(),
            quiet: props::fresh_view(h),
        }
    }
}

/// Applies `e` to `st`'s host and budgets: the held pages a ranged change touches, if it is
/// one.
fn apply_event(st: &mut State, s: &Settings, e: Event) -> Result<Option<u64>, (Property, String)> {
    let h = &mut st.host;
    let index = |h: &crate::sim::Host, read: u64| h.index_of(read);
    let mut touched = None;
    let view_err = |m: String| (Property::from_message(&m), m);
    if let Some(op) = host_op(h, s, e) {
        h.apply(op).map_err(view_err)?;
        return Ok(touched);
    }
    match e {
        Event::Answer { .. } | Event::Retry | Event::Tick => unreachable!("a host op"),
        Event::Fail { read } => {
            st.faults += 1;
            h.apply(Op::Fail {
                index: index(h, read),
            })
            .map_err(view_err)?
        }
        Event::Empty { read } => {
            st.faults += 1;
            h.apply(Op::StallEmpty {
                index: index(h, read),
            })
            .map_err(view_err)?
        }
        Event::Repeat { read } => {
            st.faults += 1;
            h.apply(Op::Stall {
                index: index(h, read),
            })
            .map_err(view_err)?
        }
        Event::Abandon { read } => {
            let flags = h.pending_flags();
            if !flags.iter().any(|f| f.0 == read && f.1) {
                st.faults += 1;
            }
            let open: Vec<u64> = flags.iter().filter(|f| !f.2).map(|f| f.0).collect();
            let at = open.iter().position(|&r| r == read).expect("open read") as u16;
            h.apply(Op::Abandon { index: at }).map_err(view_err)?
        }
        Event::Insert { key, ranged } => {
            st.changes += 1;
            if s.fault == Some(HostFault::Unreported) {
                h.apply(Op::InsertSilently { key: key as u8 })
                    .map_err(view_err)?
            } else if ranged {
                let item = h.source.insert(key);
                touched = Some(props::pages_touching(&h.loader, &encode_cursor(item)));
                ranged_change(st, encode_cursor(item))?;
            } else {
                h.source.insert(key);
                call(h, |l| l.invalidate())?;
            }
        }
        Event::Delete { index, ranged } => {
            st.changes += 1;
            let item = h.source.delete(index).expect("an item");
            if ranged {
                touched = Some(props::pages_touching(&h.loader, &encode_cursor(item)));
                ranged_change(st, encode_cursor(item))?;
            } else {
                call(h, |l| l.invalidate())?;
            }
        }
        Event::Window { start, len } => {
            st.moves += 1;
            h.apply(Op::Window {
                start: start as u16,
                len: len as u16,
            })
            .map_err(view_err)?
        }
        Event::WindowLocated { start, len, answer } => {
            st.moves += 1;
            h.apply(Op::WindowLocated {
                start: start as u32,
                len: len as u16,
                answer,
            })
            .map_err(view_err)?
        }
        Event::Jump { index } => {
            st.moves += 1;
            st.jumps += 1;
            h.apply(Op::Jump {
                index: index as u32,
            })
            .map_err(view_err)?
        }
        Event::JumpStart { position } => {
            st.moves += 1;
            st.jumps += 1;
            call(h, |l| l.jump(&[], position))?;
        }
        Event::Touch => {
            st.changes += 1;
            let last = *h.source.items().last().expect("an item");
            touched = Some(
                h.loader
                    .pages()
                    .filter(|p| props::wanted(&h.loader, p))
                    .count() as u64,
            );
            h.lied = false;
            h.loader
                .invalidate_range(&[], Some(&encode_cursor(last)), &mut Source::compare)
                .map_err(|e| (Property::Refused, format!("refused: {e}")))?;
            h.collect().map_err(view_err)?;
            h.check().map_err(view_err)?
        }
    }
    Ok(touched)
}

/// The budgets after `e`, and whether a read was answered current: `before`, the host before
/// it; `touched`, the held pages a ranged change touched.
fn account(
    st: &mut State,
    s: &Settings,
    e: Event,
    before: Before,
    touched: Option<u64>,
) -> Result<bool, (Property, String)> {
    let Before {
        current: current_before,
        items: items_before,
        reads: reads_before,
        in_flight,
        quiet: quiet_before,
    } = before;
    // The cost of a move with a known cursor: its clock starts at the move, counts the items
    // answered after it, and stops when the view is fresh again; a change, a fault or
    // another move without a known cursor stops it too (what follows is not the move's).
    let read = st.host.loader.stats().items_read - items_before;
    st.far = match e {
        Event::WindowLocated { answer: 0, .. } | Event::Jump { .. } | Event::JumpStart { .. } => {
            Some(s.far_move_budget(in_flight))
        }
        Event::Answer { .. } | Event::Tick | Event::Retry => match st.far {
            Some(left) if read > left => {
                return Err((
                    Property::FarMoveCost,
                    format!("a move with a known cursor read {read} items more, over the {left} left of its budget"),
                ))
            }
            far => far.map(|left| left - read),
        },
        _ => None,
    };
    // The cost of a ranged change made on a fresh view: the held pages it touches plus one
    // read (the reads it issued in its own call count too).
    let issued = props::issued(&st.host.loader) - reads_before;
    st.ranged = match e {
        Event::Insert { ranged: true, .. } | Event::Delete { ranged: true, .. } | Event::Touch
            if quiet_before && touched.is_some() =>
        {
            let budget = props::ranged_budget(touched.unwrap_or(0));
            if issued > budget {
                return Err((
                    Property::RangedCost,
                    format!("a ranged change touching {} held pages issued {issued} reads at once", budget - 1),
                ));
            }
            Some(budget - issued)
        }
        Event::Answer { .. } | Event::Tick | Event::Retry => match st.ranged {
            Some(left) if issued > left => {
                return Err((
                    Property::RangedCost,
                    format!("a ranged change issued {issued} reads more, over the {left} left of its budget (the pages it touched plus one)"),
                ))
            }
            ranged => ranged.map(|left| left - issued),
        },
        _ => None,
    };
    if props::fresh(&st.host.loader) {
        st.far = None;
        st.ranged = None;
    }
    Ok(st.host.loader.stats().answered_current > current_before)
}

/// A loader call the sim's ops do not cover, then the host's effects and checks.
fn call(
    h: &mut crate::sim::Host,
    f: impl FnOnce(&mut crate::loader::Loader) -> Result<(), LoaderError>,
) -> Result<(), (Property, String)> {
    h.lied = false;
    f(&mut h.loader).map_err(|e| (Property::Refused, format!("refused: {e}")))?;
    h.collect().map_err(|m| (Property::from_message(&m), m))?;
    h.check().map_err(|m| (Property::from_message(&m), m))
}

/// The source changed at `at` only (an item inserted or deleted): report it with a range
/// of that one cursor, and check that a change nothing held or read can contain issues and
/// supersedes nothing.
fn ranged_change(st: &mut State, at: Vec<u8>) -> Result<(), (Property, String)> {
    let h = &mut st.host;
    let untouched = h.untouched(&at);
    // Effects queued before this call (a starting point's) are not its own.
    let reads_or_cancels = |e: &[Effect]| {
        e.iter()
            .filter(|e| matches!(e, Effect::Issue(_) | Effect::Cancel { .. }))
            .count()
    };
    let before = reads_or_cancels(h.loader.queued_effects());
    h.lied = false;
    h.loader
        .invalidate_range(&at, Some(&at), &mut Source::compare)
        .map_err(|e| (Property::Refused, format!("refused: {e}")))?;
    let effects = h.loader.take_effects();
    if untouched && reads_or_cancels(&effects) > before {
        return Err((
            Property::RangedUntouched,
            format!("a change outside the held pages and every read in flight caused {effects:?}"),
        ));
    }
    h.collect_from(effects)
        .map_err(|m| (Property::from_message(&m), m))?;
    h.check().map_err(|m| (Property::from_message(&m), m))
}
