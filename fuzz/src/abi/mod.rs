//! `fuzz_abi`: byte strings decoded into calls to the exported `loader_*` functions, checked.
//!
//! Up to [`SLOTS`] loaders are alive at once.
//! Handles, read ids, counts, cursors and window values are usually valid, sometimes one off,
//! sometimes garbage; frees, double frees and calls after free are part of the mix, and the
//! callbacks themselves answer, fail, invalidate, move the window or free their own loader
//! (see `script.rs`). Every call's result is checked against the code the header documents for
//! its arguments, in the order the library checks them; a refused call must change nothing
//! (state, requests, view, deadline) and run no callback.
//!
//! After every call, for each loader the call may have touched (and for all of them every 16
//! calls; an untouched loader cannot change), through `loader_state`, `loader_requests` and
//! `loader_view`: the module's invariants `ChainHeld`, `NoLeak`, `NoStrandedStaleFailure`,
//! and `NoLostInvalidation` when `recheck_full` is on; the counts agree with the request list
//! and with the host's own books (reads outstanding, acquisitions accepted and released); each
//! in-flight request has one outstanding read; the view is contiguous and every page's
//! acquisition is still held; an accepted call that changed the spec's state, the requests or
//! the view ran `changed`. The callbacks check that read ids are consecutive, that a cancel
//! names a read issued and not answered, that no callback runs nested inside another (except
//! under `loader_free`) or after `loader_free` returned. At the end every loader is freed, and
//! every acquisition the loader accepted must have been released exactly once, none it
//! refused, and every read outstanding at a free cancelled.
//!
//! `LOADER_FUZZ_TRACE=1` prints every call and callback as it happens.
//!
//! Files: `world.rs` (slots, hosts, handle choice), `ops.rs` (the op byte), one file per kind
//! of call (`lifecycle.rs`, `events.rs`, `positions.rs`, `answers.rs`, `pointers.rs`), `observe.rs`,
//! `oracle.rs` and `sweep.rs` (the checks), `host.rs`, `callbacks.rs` and `script.rs` (the
//! host), `calls.rs` (the only `unsafe`), `report.rs` (trace, failure, tally).

mod answers;
mod callbacks;
mod calls;
mod events;
mod host;
mod lifecycle;
mod observe;
mod ops;
mod oracle;
mod pointers;
mod positions;
mod report;
mod script;
mod sweep;
mod world;

use crate::input::Input;
use loader::ffi::loader_result;
use report::quiet_deliberate_panics;
use world::World;

pub use report::print_stats;

/// Loaders alive at once.
pub const SLOTS: usize = 3;
/// Calls per run.
pub const MAX_OPS: usize = 1500;

type R = loader_result;

/// Decodes `data` into calls and runs them, checking after each; panics on a violation.
pub fn run(data: &[u8]) {
    quiet_deliberate_panics();
    let mut input = Input::new(data);
    let mut w = World::new();
    let mut ops = 0;
    while !input.is_empty() && ops < MAX_OPS {
        w.op(&mut input);
        w.sweep();
        ops += 1;
    }
    w.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_input_runs() {
        run(&[]);
    }

    #[test]
    fn a_loader_loads_and_is_freed() {
        // new (slot 0, page 4, source 20), set_window(0, 10), settles, free.
        let mut data = vec![0, 0, 7, 3, 0, 2, 2, 2, 0, 0, 0, 0, 0, 20, 3, 0];
        data.extend([5, 0, 0, 0, 10, 0, 10]);
        for _ in 0..6 {
            data.extend([10, 0, 0, 0, 0, 0, 0, 1]);
        }
        data.extend([0, 0, 0, 0]);
        run(&data);
    }
}
