//! Host events that name no read: invalidate, set_window, tick and retry, and their codes.

use super::calls;
use super::world::{Target, World};
use super::R;
use crate::input::Input;
use loader::ffi::*;

impl World {
    /// `loader_invalidate`.
    pub(super) fn op_invalidate(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let want = self.want(t, &before, |o| {
            if o.snap.epoch == u64::MAX {
                vec![R::EpochOverflow]
            } else if o.ids_spent() {
                vec![R::IdOverflow]
            } else {
                vec![R::Ok]
            }
        });
        let r = loader_invalidate(h);
        self.log(format!("invalidate({h:#x}) -> {r:?}"));
        self.check("loader_invalidate", "invalidate", r, &want);
        self.unchanged(r, &before, "invalidate");
    }

    /// `loader_set_window`, near the coverage or the current window, or anywhere.
    pub(super) fn op_window(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let (cs, ce, ws, wl) = before.as_ref().map_or((0, 0, 0, 0), |(_, o, _)| {
            let s = &o.snap;
            (s.covered_start, s.covered_end, s.window_start, s.window_len)
        });
        let start = match input.byte() % 4 {
            0 => u64::from(input.byte() % 64),
            1 => input.near(ce),
            2 => input.near(ws),
            _ => input.near(cs),
        };
        let len = match input.byte() % 4 {
            0 | 1 => u64::from(input.byte() % 64),
            2 => input.near(wl),
            _ => input.u64(),
        };
        let want = self.want(t, &before, |o| {
            if start.checked_add(len).is_none() {
                return vec![R::WindowOverflow];
            }
            let mut w = vec![R::Ok];
            if o.snap.epoch == u64::MAX {
                w.push(R::EpochOverflow);
            }
            if o.snap.next_request_id >= u64::MAX - 1 {
                w.push(R::IdOverflow);
            }
            w
        });
        // The window is set before the callbacks run, and one of them may move it again:
        // book it first, and put the old one back if the call is refused.
        let old = match t {
            Target::Live(i) => {
                let host = self.slots[i].as_ref().expect("live");
                host.window_read_at.set(host.books.borrow().changes);
                Some((i, host.window.replace((start, len))))
            }
            _ => None,
        };
        let r = loader_set_window(h, start, len);
        self.log(format!("set_window({h:#x}, {start}, {len}) -> {r:?}"));
        self.check("loader_set_window", "set_window", r, &want);
        if let (Some((i, old)), true) = (old, r != R::Ok) {
            if let Some(host) = &self.slots[i] {
                host.window.set(old);
            }
        }
        self.unchanged(r, &before, "set_window");
    }

    /// `loader_tick`, at, near or past the deadline.
    pub(super) fn op_tick(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let slot_now = match t {
            Target::Live(i) => self.now[i],
            _ => 0,
        };
        let deadline = before.as_ref().and_then(|(_, o, _)| o.deadline);
        let at = match input.byte() % 8 {
            0..=3 => slot_now.saturating_add(u64::from(input.u16())),
            4 | 5 => input.near(deadline.unwrap_or(slot_now)),
            6 => u64::MAX,
            _ => input.u64(),
        };
        let want = self.want(t, &before, |o| {
            let due = o.deadline.is_some_and(|d| d <= slot_now.max(at));
            if due && o.retry_enabled() && o.ids_spent() {
                vec![R::IdOverflow]
            } else {
                vec![R::Ok]
            }
        });
        let r = loader_tick(h, at);
        self.log(format!("tick({h:#x}, {at}) -> {r:?}"));
        self.check("loader_tick", "tick", r, &want);
        if let Target::Live(i) = t {
            self.now[i] = self.now[i].max(at);
            if let Some(host) = &self.slots[i] {
                host.books.borrow_mut().now = self.now[i];
            }
        }
        self.unchanged(r, &before, "tick");
    }

    /// `loader_retry`, checking `started` against `ExplicitRetry`'s guard.
    pub(super) fn op_retry(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let before = self.before(t);
        let want_out = input.bool();
        let enabled = before.as_ref().is_some_and(|(_, o, _)| o.retry_enabled());
        let want = self.want(t, &before, |o| {
            if o.retry_enabled() && o.ids_spent() {
                vec![R::IdOverflow]
            } else {
                vec![R::Ok]
            }
        });
        let mut started = !enabled;
        let r = calls::retry(h, want_out.then_some(&mut started));
        self.log(format!("retry({h:#x}) -> {r:?} {started}"));
        self.check("loader_retry", "retry", r, &want);
        if r == R::Ok && want_out && started != enabled {
            self.fail(format!(
                "retry said started = {started}, its guard says {enabled}"
            ));
        }
        self.unchanged(r, &before, "retry");
    }
}
