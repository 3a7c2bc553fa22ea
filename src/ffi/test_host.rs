//! A loader made through the C ABI for the layer's own unit tests: the config's defaults with
//! changes, and a host's `issue` and `release` (no optional callback).

use super::instance::loader_handle;
use super::lifecycle::{loader_config_default, loader_new};
use super::result::loader_result;
use super::types::{loader_acquisition, loader_callbacks, loader_config, loader_read};
use std::ffi::c_void;
use std::mem::MaybeUninit;

/// A host's required callbacks.
pub(super) type Issue = unsafe extern "C-unwind" fn(*mut c_void, *const loader_read);
/// See [`Issue`].
pub(super) type Release = unsafe extern "C-unwind" fn(*mut c_void, loader_acquisition);

/// `loader_config_default`'s config, changed by `change`.
pub(super) fn config(change: impl FnOnce(&mut loader_config)) -> loader_config {
    let mut config = MaybeUninit::<loader_config>::zeroed();
    // SAFETY: `config` is valid for writes, and its first field is `struct_size`, a `u32`
    // (`src/ffi/sized.rs` checks the layout): the host sets it before the call.
    unsafe {
        config
            .as_mut_ptr()
            .cast::<u32>()
            .write(std::mem::size_of::<loader_config>() as u32)
    };
    // SAFETY: `config` is valid for a write.
    let r = unsafe { loader_config_default(config.as_mut_ptr()) };
    assert_eq!(r, loader_result::Ok);
    // SAFETY: written by `loader_config_default` above.
    let mut config = unsafe { config.assume_init() };
    change(&mut config);
    config
}

/// A new loader with `config` and only the required callbacks. `userdata` must outlive it.
pub(super) fn new_loader(
    config: &loader_config,
    userdata: *mut c_void,
    issue: Issue,
    release: Release,
) -> loader_handle {
    let callbacks = loader_callbacks {
        struct_size: std::mem::size_of::<loader_callbacks>() as u32,
        userdata,
        issue: Some(issue),
        release: Some(release),
        changed: None,
        cancel: None,
        compare: None,
        locate: None,
    };
    let mut handle = 0;
    // SAFETY: every pointer is to a live local; the caller keeps `userdata` alive.
    let r = unsafe { loader_new(config, &callbacks, &mut handle) };
    assert_eq!(r, loader_result::Ok);
    handle
}
