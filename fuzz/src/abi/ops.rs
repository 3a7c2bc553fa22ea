//! The op byte's dispatch, and the calls too small for a file of their own.
//!
//! Those are the test hooks `loader_floor` and `loader_test_panic`, script bytes, and the
//! result strings.

use super::calls;
use super::world::{Target, World};
use super::{R, SLOTS};
use crate::input::Input;
use loader::ffi::*;

impl World {
    /// Decodes one op byte and makes that call, its arguments decoded from what follows.
    pub(super) fn op(&mut self, input: &mut Input) {
        match input.byte() % 32 {
            0 | 1 => self.op_lifecycle(input),
            2 | 3 => self.op_invalidate(input),
            4 => self.op_positions(input),
            5..=7 => self.op_window(input),
            8 => self.op_tick(input),
            9 => self.op_retry(input),
            10..=17 | 27..=31 => self.op_settle(input),
            18..=20 => self.op_fail(input),
            21 => self.op_pointers(input),
            22 => self.op_floor(input),
            23 => self.op_panic(input),
            24 | 25 => self.op_script(input),
            _ => self.op_strings(input),
        }
    }

    /// `loader_floor` (a test hook), on any handle.
    fn op_floor(&mut self, input: &mut Input) {
        let (h, t, _) = self.choose(input);
        let want = self.gate(t).unwrap_or_else(|| vec![R::Ok]);
        let r = loader_floor(h);
        self.log(format!("floor({h:#x}) -> {r:?}"));
        self.check("loader_floor", "floor", r, &want);
    }

    /// `loader_test_panic` (a test hook), behind a magic byte so that few runs poison a loader.
    fn op_panic(&mut self, input: &mut Input) {
        if input.byte() != 0x5a {
            return;
        }
        let (h, t, _) = self.choose(input);
        let want = self.gate(t).unwrap_or_else(|| vec![R::Panic]);
        let r = loader_test_panic(h);
        self.log(format!("test_panic({h:#x}) -> {r:?}"));
        self.check("loader_test_panic", "test_panic", r, &want);
        if let (R::Panic, Target::Live(i)) = (r, t) {
            self.slots[i].as_ref().expect("live").poisoned.set(true);
        }
    }

    /// Appends bytes to a slot's callback script.
    fn op_script(&mut self, input: &mut Input) {
        let slot = input.below(SLOTS);
        let n = input.below(24);
        let bytes = input.take(n);
        if let Some(host) = &self.slots[slot] {
            host.books.borrow_mut().script.extend(bytes.iter().copied());
        }
    }

    /// `loader_result_str` on known and unknown codes, and `loader_version`.
    fn op_strings(&mut self, input: &mut Input) {
        let code = match input.byte() % 4 {
            0 => input.u32() as i32,
            _ => i32::from(input.byte() % 34) - 1,
        };
        let msg = calls::result_str(code);
        // The codes `loader_result` defines: 0 ..= LOADER_RESULT_FEED_OWNED (31).
        let known = (0..=31).contains(&code);
        if known == (msg == "unknown result code") || msg.is_empty() {
            self.fail(format!("loader_result_str({code}) = {msg:?}"));
        }
        if !calls::version().contains('.') {
            self.fail(format!("loader_version is {:?}", calls::version()));
        }
    }
}
