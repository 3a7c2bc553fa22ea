//! `loader_explain`: why a loader waits, as text the host can log or show.

use super::instance::{loader_handle, lookup};
use super::panic::boundary;
use super::pointer::{Out, Sink};
use super::result::loader_result;

/// Writes why the loader waits into `buf`: plain sentences, one a line (separated by `\n`),
/// NUL-terminated. The first line is `quiescent` exactly when `loader_snapshot.quiescent` is
/// true; otherwise the lines name each thing the loader waits for: the reads it waits to have
/// answered (id, direction, cursor, how long ago they were issued, on the `loader_tick`
/// clock; a feed's, on the feed's clock now), a repair or full read running (pages read of those it needs), a failure recorded
/// and its cause (a read that failed, or whose answer repeated its cursor), what retries it
/// (a backoff deadline, or the host: "retry budget spent after 5 failures: call loader_retry
/// or move the window"), the reads let go of, and the releases pinned views hold back. On a
/// feed's handle, lines starting `feed:` follow: the loads running and where the pages went
/// (`loader_feed_stats`), the value the last failing load returned and its read, and the
/// result code of the last page refused. The text is for people: its wording may change
/// between releases; decide with `loader_state`.
///
/// `*out_len` (required) gets the text's length in bytes, without the NUL. If `capacity` is
/// more than that, the text and its NUL are copied and the result is `LOADER_RESULT_OK`.
/// Otherwise the result is `LOADER_RESULT_BUFFER_TOO_SMALL`, and (unlike the arrays of
/// `loader_requests`) `buf` still gets what fits: the text cut to at most `capacity - 1`
/// bytes (never inside a UTF-8 sequence) and a NUL, so a fixed buffer always holds a
/// readable line; call again with `*out_len + 1` bytes for all of it. `capacity` 0 writes
/// nothing to `buf`, which may then be NULL. The caller owns `buf`. No callback runs.
///
/// # Safety
/// `buf` is NULL or valid for `capacity` byte writes; `out_len` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn loader_explain(
    handle: loader_handle,
    buf: *mut core::ffi::c_char,
    capacity: usize,
    out_len: *mut usize,
) -> loader_result {
    boundary(loader_result::Panic, || {
        // SAFETY: by this function's contract.
        let Ok(len_out) = (unsafe { Out::required(out_len) }) else {
            return loader_result::NullPointer;
        };
        if capacity > 0 && buf.is_null() {
            return loader_result::NullPointer;
        }
        let now = super::feed::clock_now(handle);
        let mut text = match lookup(handle).and_then(|i| i.explain(now)) {
            Ok(text) => text,
            Err(e) => return e,
        };
        if let Some(feed) = super::feed::explain_lines(handle) {
            text.push('\n');
            text.push_str(&feed);
        }
        let fits = capacity > text.len();
        if capacity > 0 {
            let mut n = text.len().min(capacity - 1);
            while !text.is_char_boundary(n) {
                n -= 1;
            }
            // SAFETY: `buf` is non-NULL (checked above) and valid for `capacity > n` bytes by
            // this function's contract; `text` is the library's own, so they cannot overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
                buf.add(n).write(0);
            }
        }
        len_out.put(text.len());
        if fits {
            loader_result::Ok
        } else {
            loader_result::BufferTooSmall
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{loader_free, loader_set_window};

    extern "C-unwind" fn issue(_: *mut core::ffi::c_void, _: *const crate::ffi::loader_read) {}
    extern "C-unwind" fn release(_: *mut core::ffi::c_void, _: usize) {}

    fn new_loader() -> loader_handle {
        let config = crate::ffi::test_host::config(|_| {});
        crate::ffi::test_host::new_loader(&config, std::ptr::null_mut(), issue, release)
    }

    #[test]
    fn the_text_fits_or_is_cut_at_a_nul_and_its_length_says_how_much_is_needed() {
        let h = new_loader();
        let mut buf = [0x55 as core::ffi::c_char; 64];
        let mut len = 0usize;
        // SAFETY: `buf` holds 64 bytes and `len` one usize, both live.
        unsafe {
            assert_eq!(
                loader_explain(h, buf.as_mut_ptr(), 64, &mut len),
                loader_result::Ok
            );
            assert_eq!(len, "quiescent".len());
            assert_eq!(
                std::ffi::CStr::from_ptr(buf.as_ptr()).to_str(),
                Ok("quiescent")
            );
            assert_eq!(loader_set_window(h, 0, 10), loader_result::Ok);
            let r = loader_explain(h, buf.as_mut_ptr(), 8, &mut len);
            assert_eq!(r, loader_result::BufferTooSmall);
            assert!(len > 8);
            assert_eq!(
                std::ffi::CStr::from_ptr(buf.as_ptr()).to_str(),
                Ok("waiting")
            );
            let mut big = vec![0 as core::ffi::c_char; len + 1];
            assert_eq!(
                loader_explain(h, big.as_mut_ptr(), len + 1, &mut len),
                loader_result::Ok
            );
            let text = std::ffi::CStr::from_ptr(big.as_ptr()).to_str().unwrap();
            assert!(
                text.starts_with("waiting for read 1 (a page, forward"),
                "{text}"
            );
            assert_eq!(text.len(), len);
            // Capacity 0: only the length; NULL is fine there, and refused with a capacity.
            let mut n = 0usize;
            let r = loader_explain(h, std::ptr::null_mut(), 0, &mut n);
            assert_eq!((r, n), (loader_result::BufferTooSmall, len));
            assert_eq!(
                loader_explain(h, std::ptr::null_mut(), 4, &mut n),
                loader_result::NullPointer
            );
            assert_eq!(
                loader_explain(h, buf.as_mut_ptr(), 64, std::ptr::null_mut()),
                loader_result::NullPointer
            );
            assert_eq!(loader_free(h), loader_result::Ok);
            assert_eq!(
                loader_explain(h, buf.as_mut_ptr(), 64, &mut n),
                loader_result::StaleHandle
            );
        }
    }
}
