//! A loader's life: default settings, creation, freeing, and the library's static strings.

use super::delivery::{run, withdraw};
use super::instance::{loader_handle, register, unregister};
use super::panic::boundary;
use super::pointer::{cursor, finish, Out};
use super::result::{self, code, loader_result};
use super::sized::{fill_whole, read_in};
use super::types::{loader_callbacks, loader_config};
use crate::loader::{Config, Effect, Loader, LoaderError};
use std::ffi::c_char;

/// Checks a config and callbacks, creates a loader from them with `make`, jumps to the
/// config's starting point if it has one, and writes its handle to `*out_handle`.
///
/// # Safety
/// Each pointer is NULL or valid for reads of its `struct_size` bytes (a write of a handle, for
/// `out_handle`); `config->initial_cursor` is NULL or valid for `config->initial_cursor_len`
/// bytes.
pub(crate) unsafe fn create(
    config: *const loader_config,
    callbacks: *const loader_callbacks,
    out_handle: *mut loader_handle,
    make: impl FnOnce(Config) -> Result<Loader, LoaderError>,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let args = unsafe {
            (
                read_in(config),
                read_in(callbacks),
                Out::required(out_handle),
            )
        };
        let (config, callbacks, out) = match args {
            (Ok(config), Ok(callbacks), Ok(out)) => (config, callbacks, out),
            // A NULL pointer first, then the first struct refused, in argument order.
            (config, callbacks, out) => {
                let errors = [config.err(), callbacks.err(), out.err()];
                if errors.contains(&Some(loader_result::NullPointer)) {
                    return loader_result::NullPointer;
                }
                return errors
                    .into_iter()
                    .flatten()
                    .next()
                    .unwrap_or(loader_result::Panic);
            }
        };
        if callbacks.issue.is_none() || callbacks.release.is_none() {
            return loader_result::MissingCallback;
        }
        // SAFETY: by this function's contract, `config` (valid) says its cursor is NULL or
        // valid for its length during this call; the loader copies the bytes.
        let start = match unsafe { cursor(config.initial_cursor, config.initial_cursor_len) } {
            Ok(start) => start,
            Err(e) => return e,
        };
        let position = config.initial_position;
        let handle = make((&config).into())
            .and_then(|mut loader| {
                // The creation's calls are kept for a recording asked for before the first
                // event call (`loader_record`), or written at once under `LOADER_RECORD`.
                loader.hold_prelude();
                super::record::from_environment(&mut loader);
                // Without a `cancel` callback the host is told of no cancel hint.
                loader.set_cancel_hints_heard(callbacks.cancel.is_some());
                // A starting point. Its effects (the first reads, `changed`) stay queued in
                // the loader: no callback runs before the host has the handle, and the first
                // event call delivers them before its own.
                if !start.is_empty() || position > 0 {
                    loader.jump(start, position)?;
                }
                loader.seal_prelude();
                Ok(loader)
            })
            .map_err(loader_result::from)
            .and_then(|loader| register(loader, callbacks));
        finish(handle, out)
    })
}

/// Fills `*out` with the default settings. Set `out->struct_size` first (to
/// `sizeof(loader_config)`); it is kept, and the fields this library does not know (a host
/// built against a newer header) are set to zero. `LOADER_RESULT_NULL_POINTER` if `out` is
/// NULL, `LOADER_RESULT_INVALID_STRUCT_SIZE` for a bad `struct_size`. The caller owns `*out`.
///
/// # Safety
/// `out` is NULL or valid for reads and writes of its `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn loader_config_default(out: *mut loader_config) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        code(unsafe { fill_whole(out, Config::default().into()) })
    })
}

/// Creates a loader and writes its handle to `*out_handle`.
///
/// `config` and `callbacks` are copied; the caller keeps ownership of both structs.
/// `callbacks->issue` and `callbacks->release` must not be NULL (else
/// `LOADER_RESULT_MISSING_CALLBACK`); `changed` and `cancel` may be. `callbacks->userdata`
/// must stay valid as `loader_callbacks` says. NULL `config`, `callbacks` or `out_handle`
/// returns `LOADER_RESULT_NULL_POINTER`; a `struct_size` not set returns
/// `LOADER_RESULT_INVALID_STRUCT_SIZE`, a field this library does not know set (a newer
/// header's) `LOADER_RESULT_UNKNOWN_FIELD`; a bad setting returns the code naming it. The
/// caller owns the handle and must pass it to `loader_free`.
///
/// A starting point in `config` (`initial_cursor`, `initial_position`) is applied as
/// `loader_jump` would; its cursor is copied, and need only be valid during this call. No
/// callback runs here: the starting point's reads are issued by the loader's first event call.
///
/// # Safety
/// Each pointer is NULL or valid for its type (`config` and `callbacks` for their
/// `struct_size` bytes); `config->initial_cursor` is NULL or valid for
/// `config->initial_cursor_len` bytes; the callbacks follow their documented contract.
#[no_mangle]
pub unsafe extern "C" fn loader_new(
    config: *const loader_config,
    callbacks: *const loader_callbacks,
    out_handle: *mut loader_handle,
) -> loader_result {
    // SAFETY: forwarded contract.
    unsafe { create(config, callbacks, out_handle, Loader::new) }
}

/// Frees a loader. Before it returns, `release` has been called exactly once for every
/// acquisition the loader still held that no pinned view lists, and `cancel` (if set) for
/// every read still outstanding that was not hinted before (each read gets one hint), except
/// the reads whose `issue` is still queued on this thread: a free from inside a callback drops
/// the `issue` callbacks still queued here, and sends no cancel for those reads. A read whose
/// `issue` is still queued on another thread (a call there made it and has not delivered it
/// yet) gets a `cancel` and never its `issue`: the host may be sent a `cancel` for a read id it
/// never saw, and must ignore it. No `issue` or `changed` callback starts for this loader
/// afterwards, but the one another thread was already about to make (at most one per thread:
/// see CALLBACKS). Answers to its reads then return `LOADER_RESULT_STALE_HANDLE`: no read needs
/// an answer after the free.
///
/// An acquisition that a pinned view (`loader_view_acquire`) lists is released when the last
/// view listing it is released (`loader_view_release`), with the same callbacks and
/// `userdata`: keep `userdata` valid until every view of the loader is released. Calls on
/// other threads that overlap the free: see CALLBACKS at the top of this header.
///
/// It may be called from inside any of this loader's callbacks. A handle that is 0 or forged
/// returns `LOADER_RESULT_INVALID_HANDLE`; a second free returns `LOADER_RESULT_STALE_HANDLE`.
/// A feed's handle (which is also its loader's) returns `LOADER_RESULT_FEED_OWNED` and frees
/// nothing: the feed frees its loader in `loader_feed_free`.
/// A poisoned loader is freed too, releasing what it can.
///
/// If one of these `release` or `cancel` callbacks ends its thread or throws, the handle is
/// already freed and the callbacks after it are not made.
#[no_mangle]
pub extern "C-unwind" fn loader_free(handle: loader_handle) -> loader_result {
    let step = boundary(Err(loader_result::Panic), || {
        if super::feed::is_feed(handle) {
            return Err(loader_result::FeedOwned);
        }
        let inst = unregister(handle)?;
        let closing = inst.close();
        // This loader's effects still queued (free called from a callback) or stranded go
        // first, then the close's; all of them now, so userdata may go once this returns.
        let mut mine = withdraw(&inst);
        // A read whose `issue` was still queued never reached the host: no cancel for it.
        // That includes the reads of a starting point `loader_new` queued in the loader
        // and no event delivered yet (closing hands them over with its own effects).
        let unissued: Vec<u64> = mine
            .iter()
            .chain(closing.iter())
            .filter_map(|e| match e {
                Effect::Issue(r) => Some(r.read_id),
                _ => None,
            })
            .collect();
        // Nor for one whose hint was queued behind its `issue` (a nested call superseded
        // it): both are dropped.
        mine.extend(closing);
        mine.retain(|e| !matches!(e, Effect::Cancel { read_id } if unissued.contains(read_id)));
        Ok((inst, mine))
    });
    match step {
        Ok((inst, effects)) => {
            for e in effects {
                run(&inst, e);
            }
            loader_result::Ok
        }
        Err(e) => e,
    }
}

/// The library's version, e.g. "0.1.0": a static NUL-terminated string the caller must not
/// free.
#[no_mangle]
pub extern "C" fn loader_version() -> *const c_char {
    boundary(std::ptr::null(), || {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    })
}

/// The static NUL-terminated message for a result code; "unknown result code" for a value
/// that is not one. The caller must not free it.
#[no_mangle]
pub extern "C" fn loader_result_str(code: i32) -> *const c_char {
    boundary(std::ptr::null(), || result::result_str(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_codes_have_a_message() {
        // SAFETY: result_str returns a static NUL-terminated string.
        let unknown = unsafe { std::ffi::CStr::from_ptr(loader_result_str(999)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown result code");
    }

    #[test]
    fn version_is_the_crate_version() {
        // SAFETY: a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(loader_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
