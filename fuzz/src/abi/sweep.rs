//! The checks after every call and at the end of a run, scheduled over the slots.
//!
//! Each touched loader is observed and checked; a refused call changed nothing, an accepted
//! one announced its change; at the end, every loader is freed and every acquisition's fate
//! checked.

use super::calls;
use super::observe::{blank_snapshot, observe, Obs};
use super::oracle::{books_disagree, check_invariants};
use super::world::{Before, World};
use super::{R, SLOTS};

impl World {
    /// Books the checks the sweep makes after a call on a live loader: a refused call changed
    /// nothing and ran no callback; an accepted one that changed something announced it.
    pub(super) fn unchanged(&mut self, got: R, before: &Before, what: &str) {
        let Some((i, obs, callbacks)) = before else {
            return;
        };
        if got == R::Ok {
            let changes = self.changes_before.get();
            self.told = Some((*i, obs.abstract_key(), changes, what.to_string()));
        } else {
            self.refused = Some((*i, obs.clone(), *callbacks, what.to_string(), got));
        }
    }

    /// The sweep's half of [`World::unchanged`] for a refused call on slot `i`.
    fn check_refused(&self, i: usize, after: &Obs) {
        let Some((_, obs, callbacks, what, got)) = self.refused.as_ref().filter(|r| r.0 == i)
        else {
            return;
        };
        let host = self.slots[i].as_ref().expect("live");
        let ran = host.books.borrow().callbacks != *callbacks;
        if after.key() != obs.key() || ran {
            self.fail(format!(
                "{what} returned {got:?} but changed the loader (callbacks ran: {ran})\n  before {obs:?}\n  after  {after:?}"
            ));
        }
    }

    /// Moves loaders freed inside callbacks out of their slots, checks every live one, and
    /// raises any violation a callback recorded.
    pub(super) fn sweep(&mut self) {
        for i in 0..SLOTS {
            if self.slots[i]
                .as_ref()
                .is_some_and(|h| h.books.borrow().freed)
            {
                let host = self.slots[i].take().expect("occupied");
                self.cache[i] = None;
                self.trace
                    .push(format!("slot {i} ({:#x}) was freed", host.handle.get()));
                self.retired.push(host);
            }
        }
        self.ops += 1;
        let all = self.ops.is_multiple_of(16);
        let told = self.told.take();
        for i in 0..SLOTS {
            if self.slots[i].as_ref().is_some_and(|h| h.poisoned.get()) {
                self.cache[i] = None;
            }
            let Some(host) = &self.slots[i] else { continue };
            if !(all || std::mem::take(&mut self.touched[i])) {
                continue;
            }
            let h = host.handle.get();
            if host.poisoned.get() {
                let r = calls::state(h, Some(&mut blank_snapshot()));
                if r != R::Poisoned {
                    self.fail(format!("a poisoned loader's state returned {r:?}"));
                }
                continue;
            }
            let o = observe(h).unwrap_or_else(|e| self.fail(format!("observing slot {i}: {e}")));
            if let Err(inv) = check_invariants(&o, self.recheck[i]) {
                self.fail(format!("slot {i}: {inv} violated: {o:?}"));
            }
            let mut problems = books_disagree(&o, host);
            if let Some((_, key, changes, what)) = told.as_ref().filter(|t| t.0 == i) {
                let announced = host.books.borrow().changes != *changes;
                if host.has_changed && !announced && o.abstract_key() != *key {
                    problems.push(format!(
                        "{what} changed the state or the view, and no `changed` callback ran"
                    ));
                }
            }
            if !problems.is_empty() {
                self.fail(format!("slot {i}: {}\n  {o:?}", problems.join("; ")));
            }
            self.check_refused(i, &o);
            self.cache[i] = Some(o);
        }
        self.refused = None;
        let hosts = self
            .slots
            .iter()
            .flatten()
            .chain(self.retired.iter())
            .chain(std::iter::once(&self.stray));
        let violations: Vec<String> = hosts
            .flat_map(|h| {
                h.books
                    .borrow_mut()
                    .violations
                    .drain(..)
                    .collect::<Vec<_>>()
            })
            .collect();
        if !violations.is_empty() {
            self.fail(format!("callbacks recorded: {}", violations.join("; ")));
        }
    }

    /// Frees every loader left and checks every acquisition's fate.
    pub(super) fn finish(mut self) {
        for i in 0..SLOTS {
            if let Some(host) = &self.slots[i] {
                let r = host.free();
                self.log(format!("final free of slot {i} -> {r:?}"));
            }
        }
        self.sweep();
        for host in &self.retired {
            let b = host.books.borrow();
            for (acq, n) in &b.released {
                if *n != 1 || !b.accepted.contains(acq) {
                    self.fail(format!(
                        "acquisition {acq:#x} released {n} times (accepted: {})",
                        b.accepted.contains(acq)
                    ));
                }
            }
            if let Some(a) = b.accepted.iter().find(|a| !b.released.contains_key(a)) {
                self.fail(format!(
                    "acquisition {a:#x} was accepted and never released"
                ));
            }
            if !b.offering.is_empty() {
                self.fail("a settle is still offering an acquisition".into());
            }
        }
        if !self.stray.books.borrow().released.is_empty() {
            self.fail("an acquisition offered to no loader was released".into());
        }
    }
}
