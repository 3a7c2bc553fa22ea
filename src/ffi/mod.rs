//! The C ABI: every exported `loader_*` function and every type it names.
//!
//! This is the only module with `unsafe`. It knows nothing of the rules: each entry point
//! resolves its handle, runs one loader call under the handle's lock inside the panic
//! boundary, and then runs the callbacks the call produced, outside every lock and outside the
//! boundary, on the calling thread.
//!
//! One file per concept:
//! - `handle`: the generation-checked handle table;
//! - `instance`: the registry of loaders, and what a handle names;
//! - `delivery`: the per-thread callback queue, and what happens when a callback ends its
//!   thread;
//! - `pins`: the acquisitions pinned views list, and the releases they hold back;
//! - `panic`: the panic boundary;
//! - `pointer`: checked conversions of every pointer and integer C passes;
//! - `sized`: the structs that may grow, read and written by their `struct_size`;
//! - `result`, `types`: the C types;
//! - `lifecycle`, `events`, `introspection`, `view`, `explain`: the exported functions, by
//!   what they do;
//! - `follow`: appends, and the window pinned to the source's end;
//! - `record`: recording a loader's run to a file (`loader_record`, `LOADER_RECORD`);
//! - `feed`: the feed's exports (`loader_feed_*`), its loader's callbacks and its threads;
//! - `feed_jobs`: the feed in job mode (`loader_feed_new_jobs`, `loader_feed_next_job`,
//!   `loader_feed_complete_job`) and in hosted mode (`loader_feed_new_hosted`,
//!   `loader_feed_complete_next_job`): its loads run on the host's threads;
//! - `testing`: the test ABI, only with the `testing` cargo feature;
//! - `unwinding_issue`: tests of an `issue` callback that unwinds, through the C ABI.

// The C boundary is the one place `unsafe` is allowed (see Cargo.toml's [lints]).
#![allow(unsafe_code)]

// The plumbing, then the types, then the exports in the header's order.
mod delivery;
mod handle;
mod instance;
mod panic;
mod pins;
mod pointer;
mod sized;

mod result;
mod types;

mod lifecycle;

mod events;
mod follow;

mod introspection;

mod view;

mod explain;
mod feed;
mod feed_counts;
mod feed_jobs;
mod record;

#[cfg(feature = "testing")]
mod testing;

#[cfg(test)]
mod test_host;
#[cfg(test)]
mod unwinding_issue;

pub use events::*;
pub use explain::*;
pub use feed::*;
pub use feed_counts::*;
pub use feed_jobs::*;
pub use follow::*;
pub use instance::loader_handle;
pub use introspection::*;
pub use lifecycle::*;
pub use record::*;
pub use result::loader_result;
#[cfg(feature = "testing")]
pub use testing::*;
pub use types::*;
pub use view::*;

/// The longest cursor accepted, in bytes.
pub const LOADER_MAX_CURSOR_LEN: usize = 4096;

/// The largest position `loader_jump` (or a config's `initial_position`) accepts, 2^62:
/// positions count items on from there, so they keep room to grow.
pub const LOADER_MAX_POSITION: u64 = 4_611_686_018_427_387_904;
/// The largest `page_size` accepted.
pub const LOADER_MAX_PAGE_SIZE: u32 = 1048576;
/// `loader_config.max_pages` as `loader_config_default` sets it.
pub const LOADER_DEFAULT_MAX_PAGES: u32 = 64;
/// `loader_config.jump_threshold` as `loader_config_default` sets it: the window's length
/// plus twice `prefetch_distance`.
pub const LOADER_JUMP_THRESHOLD_AUTO: u64 = u64::MAX;
/// What one cursor in the memo costs against `loader_config.cursor_memo_bytes`, besides the
/// bytes of a cursor longer than 14.
pub const LOADER_MEMO_ENTRY_BYTES: u64 = 48;
/// `loader_locate_fn` found the cursor.
pub const LOADER_LOCATE_FOUND: i32 = 1;
/// `loader_locate_fn` cannot tell.
pub const LOADER_LOCATE_UNKNOWN: i32 = 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_the_loader() {
        assert_eq!(LOADER_MAX_CURSOR_LEN, crate::loader::MAX_CURSOR_LEN);
        assert_eq!(LOADER_MAX_POSITION, crate::loader::MAX_POSITION);
        assert_eq!(LOADER_MAX_PAGE_SIZE, crate::loader::MAX_PAGE_SIZE);
        assert_eq!(LOADER_DEFAULT_MAX_PAGES, crate::loader::DEFAULT_MAX_PAGES);
        assert_eq!(
            LOADER_JUMP_THRESHOLD_AUTO,
            crate::loader::JUMP_THRESHOLD_AUTO
        );
        assert_eq!(LOADER_MEMO_ENTRY_BYTES, crate::loader::MEMO_ENTRY_BYTES);
    }
}
