//! The panic boundary: no unwind may cross an `extern "C"` function.
//!
//! Since Rust 1.81 an unwind reaching an `extern "C"` frame aborts the process; before that it
//! was undefined behaviour. Either way the host loses, so every entry point runs its body through
//! [`boundary`] and returns an error value instead. This needs the default `panic = "unwind"`:
//! under `panic = "abort"` the process ends at the panic, before any boundary.

use std::panic::{self, AssertUnwindSafe};

/// Runs `f`, returning `on_panic` if it panics.
///
/// `AssertUnwindSafe` is sound here because nothing `f` touched is used again by this call, and
/// shared state must already survive a panic on its own: a `Mutex` poisons, and the handle table
/// recovers. Whatever a panic leaves half-updated behind its lock is for the caller's recovery
/// policy, not for this function to hide.
pub(crate) fn boundary<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => {
            // The payload is arbitrary and its destructor could panic too; that second unwind
            // would escape from here. Contain it, and leak its payload rather than risk a third.
            if let Err(nested) = panic::catch_unwind(AssertUnwindSafe(|| drop(payload))) {
                std::mem::forget(nested);
            }
            on_panic
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_normal_return_passes_through() {
        assert_eq!(boundary(-1, || 7), 7);
    }

    #[test]
    fn a_panic_becomes_the_error_value() {
        assert_eq!(boundary(-1, || panic!("inside the boundary")), -1);
    }

    #[test]
    fn a_payload_whose_destructor_panics_is_contained() {
        struct PanicsOnDrop;
        impl Drop for PanicsOnDrop {
            fn drop(&mut self) {
                panic!("while dropping the payload");
            }
        }
        let result = boundary(-1, || -> i32 { std::panic::panic_any(PanicsOnDrop) });
        assert_eq!(result, -1);
    }

    #[test]
    fn a_panic_leaves_later_calls_working() {
        assert!(!boundary(false, || panic!("first")));
        assert!(boundary(false, || true));
    }
}
