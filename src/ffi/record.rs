//! Recording a loader's run to a file, for `loader-check --replay`: `loader_record`, and the
//! `LOADER_RECORD` environment variable that records every loader a process creates.

use super::instance::{loader_handle, lookup};
use super::panic::boundary;
use super::result::{code, loader_result};
use crate::loader::{Loader, Sink};
use std::ffi::{c_char, CStr};
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the file every loader of the process records to.
pub(crate) const RECORD_ENV: &str = "LOADER_RECORD";

/// Loaders recorded through `LOADER_RECORD` so far in this process.
static RECORDED: AtomicU64 = AtomicU64::new(0);

/// A file for a recording (the recorder buffers what it writes).
fn open(path: &std::path::Path) -> Result<Sink, loader_result> {
    File::create(path)
        .map(|f| Box::new(f) as Sink)
        .map_err(|_| loader_result::RecordFailed)
}

/// Starts recording a loader being created when `LOADER_RECORD` names a file: the process's
/// first loader writes to that path, the n-th to the path with `.n` appended. A file that
/// cannot be created leaves the loader unrecorded (the host's code is not to fail for it).
pub(crate) fn from_environment(loader: &mut Loader) {
    let Some(path) = std::env::var_os(RECORD_ENV).filter(|p| !p.is_empty()) else {
        return;
    };
    let n = RECORDED.fetch_add(1, Ordering::Relaxed) + 1;
    let mut path = std::path::PathBuf::from(path);
    if n > 1 {
        let mut name = path.clone().into_os_string();
        name.push(format!(".{n}"));
        path = name.into();
    }
    if let Ok(sink) = open(&path) {
        let _ = loader.record_to(sink);
    }
}

/// Records this loader's run to the file at `path` (a NUL-terminated path, created or
/// truncated): every call into the loader with its arguments and result, and every callback
/// out of it, one line each, for `loader-check --replay` (docs/RECORDING.md). Items are not
/// recorded: only their tokens, the cursors' bytes, the times given to `loader_tick` and the
/// answers of `compare`.
///
/// Call it right after `loader_new`, before any other call on the handle: the log must start
/// where the loader started. Otherwise, or when the file cannot be created, or the loader
/// already records (`LOADER_RECORD` set), it returns `LOADER_RESULT_RECORD_FAILED` and changes
/// nothing. NULL `path` is `LOADER_RESULT_NULL_POINTER`. The file is written as the loader
/// runs, through a buffer, and complete once `loader_free` returns. When off (the default),
/// recording costs each call one branch.
///
/// For a host whose code cannot change, set the environment variable `LOADER_RECORD` to a
/// path: every loader the process creates records, the first to that path, the n-th to the
/// path with `.n` appended.
///
/// # Safety
/// `path` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn loader_record(
    handle: loader_handle,
    path: *const c_char,
) -> loader_result {
    boundary(loader_result::Panic, || {
        if path.is_null() {
            return loader_result::NullPointer;
        }
        // SAFETY: non-NULL and, by this function's contract, NUL-terminated and valid.
        let path = unsafe { CStr::from_ptr(path) };
        #[cfg(unix)]
        let path = {
            use std::os::unix::ffi::OsStrExt;
            std::path::PathBuf::from(std::ffi::OsStr::from_bytes(path.to_bytes()))
        };
        #[cfg(not(unix))]
        let path = match path.to_str() {
            Ok(p) => std::path::PathBuf::from(p),
            Err(_) => return loader_result::RecordFailed,
        };
        code(lookup(handle).and_then(|inst| {
            // Refuse a loader already called before creating (and truncating) the file.
            if !inst.read(Loader::may_record)? {
                return Err(loader_result::RecordFailed);
            }
            let sink = open(&path)?;
            inst.record_to(sink)
        }))
    })
}
