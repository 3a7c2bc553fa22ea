//! The driver's state ([`World`]): slots and their hosts, and what a call's handle names.
//!
//! It also holds the hosts of freed loaders, and picks each call's handle and expected gate.

use super::host::Host;
use super::observe::{observe, Obs};
use super::{R, SLOTS};
use crate::input::Input;
use loader::ffi::*;
use std::cell::Cell;

/// What a handle value names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    Live(usize),
    Stale,
    Invalid,
    /// Forged: invalid, or stale if it matches a slot generation freed in an earlier run.
    Unknown,
}

/// Whose books a call keeps.
#[derive(Clone, Copy, Debug)]
pub(super) enum Books {
    Slot(usize),
    Retired(usize),
    Stray,
}

/// Every loader of a run, its host, and what the sweep after a call must check.
pub(super) struct World {
    pub(super) slots: [Option<Box<Host>>; SLOTS],
    /// Hosts of freed loaders, kept for answers after free and for the final checks.
    /// Boxed: each `Host`'s address is its loader's userdata, so it must not move.
    #[allow(clippy::vec_box)]
    pub(super) retired: Vec<Box<Host>>,
    /// Books for calls on handles that name no loader.
    pub(super) stray: Box<Host>,
    pub(super) recheck: [bool; SLOTS],
    pub(super) now: [u64; SLOTS],
    pub(super) tags: usize,
    pub(super) trace: Vec<String>,
    /// Slots a call may have changed since the last sweep.
    pub(super) touched: [bool; SLOTS],
    /// After an accepted event call: the slot, its abstract state and `changed` count before,
    /// and the call; the sweep checks that a change was announced.
    pub(super) told: Option<(usize, Vec<u64>, u64, String)>,
    /// A refused call on a live loader, for the sweep: slot, observation and callback count
    /// before, the call and its result.
    pub(super) refused: Option<(usize, Obs, u64, String, R)>,
    /// Each live slot's observation from the last sweep that looked at it.
    pub(super) cache: [Option<Obs>; SLOTS],
    /// The target's `changed` count when [`World::before`] observed it.
    pub(super) changes_before: Cell<u64>,
    pub(super) ops: usize,
}

/// The target's observation before a call: its slot, what the ABI showed, and its callback
/// count; `None` unless the target is a live, healthy loader.
pub(super) type Before = Option<(usize, Obs, u64)>;

impl World {
    /// No loader yet; every slot to be checked at the first sweep.
    pub(super) fn new() -> World {
        World {
            slots: Default::default(),
            retired: Vec::new(),
            stray: Box::new(Host::new(0, 1, 0, false)),
            recheck: [true; SLOTS],
            now: [0; SLOTS],
            tags: 0,
            trace: Vec::new(),
            touched: [true; SLOTS],
            told: None,
            refused: None,
            cache: Default::default(),
            changes_before: Cell::new(0),
            ops: 0,
        }
    }

    /// The host whose books `b` names.
    pub(super) fn host(&self, b: Books) -> &Host {
        match b {
            Books::Slot(i) => self.slots[i].as_deref().expect("occupied"),
            Books::Retired(i) => &self.retired[i],
            Books::Stray => &self.stray,
        }
    }

    /// What handle value `h` names in this run.
    pub(super) fn resolve(&self, h: loader_handle) -> Target {
        if h == 0 {
            return Target::Invalid;
        }
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(host) = s {
                if host.handle.get() == h {
                    return if host.books.borrow().freed {
                        Target::Stale
                    } else {
                        Target::Live(i)
                    };
                }
            }
        }
        if self.retired.iter().any(|r| r.handle.get() == h) {
            Target::Stale
        } else {
            Target::Unknown
        }
    }

    /// A handle value for the next call, and whose books it keeps.
    pub(super) fn choose(&mut self, input: &mut Input) -> (loader_handle, Target, Books) {
        let slot = input.below(SLOTS);
        let (base, books) = match &self.slots[slot] {
            Some(h) => (h.handle.get(), Books::Slot(slot)),
            None if !self.retired.is_empty() => {
                let i = input.below(self.retired.len().min(256));
                (self.retired[i].handle.get(), Books::Retired(i))
            }
            None => (0, Books::Stray),
        };
        let h = match input.byte() % 16 {
            0..=11 => base,
            12 => 0,
            13 => base ^ (1 << 40),
            14 => base & 0xffff_ffff,
            _ => input.u64(),
        };
        let t = self.resolve(h);
        if let Target::Live(i) = t {
            self.touched[i] = true;
        }
        let books = match t {
            Target::Live(i) => Books::Slot(i),
            _ if h == base => books,
            _ => Books::Stray,
        };
        (h, t, books)
    }

    /// The codes a call on `t` returns before it looks at its arguments, or `None` to go on.
    pub(super) fn gate(&self, t: Target) -> Option<Vec<R>> {
        match t {
            Target::Invalid => Some(vec![R::InvalidHandle]),
            Target::Stale => Some(vec![R::StaleHandle]),
            Target::Unknown => Some(vec![R::InvalidHandle, R::StaleHandle]),
            Target::Live(i) if self.slots[i].as_ref().expect("live").poisoned.get() => {
                Some(vec![R::Poisoned])
            }
            Target::Live(_) => None,
        }
    }

    /// The codes a call on `t` may return: the gate's, else what `live` says of the loader as
    /// [`World::before`] observed it.
    pub(super) fn want(
        &self,
        t: Target,
        before: &Before,
        live: impl FnOnce(&Obs) -> Vec<R>,
    ) -> Vec<R> {
        match (self.gate(t), before) {
            (Some(w), _) => w,
            (None, Some((_, o, _))) => live(o),
            (None, None) => unreachable!("a live target is observed"),
        }
    }

    /// Observes the target before a call, if it is a live, healthy loader.
    pub(super) fn before(&self, t: Target) -> Before {
        match t {
            Target::Live(i) if self.gate(t).is_none() => {
                let host = self.slots[i].as_ref().expect("live");
                // The sweep after the last call observed every slot that call touched, and an
                // untouched loader does not change: its cached observation is current.
                let obs = match &self.cache[i] {
                    Some(o) => o.clone(),
                    None => observe(host.handle.get())
                        .unwrap_or_else(|e| self.fail(format!("observing slot {i}: {e}"))),
                };
                let b = host.books.borrow();
                self.changes_before.set(b.changes);
                Some((i, obs, b.callbacks))
            }
            _ => None,
        }
    }
}
