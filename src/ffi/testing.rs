//! The test ABI: hooks the C, Python and fuzz suites and the ABI benchmark need, compiled only
//! with the `testing` cargo feature. In `include/loader.h` they sit under
//! `#if defined(LOADER_TESTING)`; a host defines `LOADER_TESTING` only when it links a library
//! built with the feature. The default library exports none of them.

use super::delivery::{event, event_with};
use super::instance::loader_handle;
use super::lifecycle::create;
use super::result::{code, loader_result};
use super::types::{loader_callbacks, loader_config};
use crate::loader::{Effect, Loader};

/// As `loader_new`, with the epoch and the first request id starting at the given values.
/// For testing counter exhaustion near `UINT64_MAX`; hosts use `loader_new`.
///
/// # Safety
/// As `loader_new`.
#[no_mangle]
pub unsafe extern "C" fn loader_new_with_counters(
    config: *const loader_config,
    callbacks: *const loader_callbacks,
    epoch: u64,
    next_request_id: u64,
    out_handle: *mut loader_handle,
) -> loader_result {
    // SAFETY: forwarded contract.
    unsafe {
        create(config, callbacks, out_handle, |c| {
            Loader::with_counters(c, epoch, next_request_id)
        })
    }
}

/// Does only what every event call does around the rules: the handle lookup, the lock, and
/// one callback (`changed`, if set). The benchmarks' floor for the ABI's per-event cost.
#[no_mangle]
pub extern "C-unwind" fn loader_floor(handle: loader_handle) -> loader_result {
    // Delivered as every call's callbacks are, so nesting behaves the same.
    code(event_with(handle, |_, effects| {
        effects.push(Effect::Changed);
        Ok(())
    }))
}

/// Panics inside the library, under the handle's lock, to test the panic boundary: returns
/// `LOADER_RESULT_PANIC`, and the handle is poisoned from then on (every call but
/// `loader_free` returns `LOADER_RESULT_POISONED`).
#[no_mangle]
pub extern "C-unwind" fn loader_test_panic(handle: loader_handle) -> loader_result {
    code(event(handle, |_| -> Result<(), _> {
        panic!("loader_test_panic: a deliberate panic")
    }))
}
