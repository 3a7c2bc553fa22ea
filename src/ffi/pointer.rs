//! Checked conversions between what C passes and what Rust uses: input pointers to references
//! and slices, out-parameters, output arrays, and the integer widths of the two sides.
//!
//! Every pointer an exported function receives goes through one of these helpers, so the NULL
//! checks and the rules below are written once:
//! - an out-parameter is written only when the call succeeds ([`finish`]); on an error the
//!   caller's memory is untouched;
//! - an output array is filled only when it is large enough ([`OutArray::fill`]), and its
//!   length slot then says how many entries are needed.

use super::result::loader_result;
use crate::loader::MAX_CURSOR_LEN;
use std::ptr::NonNull;

// `usize` values (acquisition tokens, lengths) are stored as `u64` by the loader; this is what
// makes `widen` lossless and lets `token` give back exactly what the host passed in.
const _: () = assert!(usize::BITS <= u64::BITS);

/// A host `usize` (an acquisition token or a count) as the loader's `u64`. Lossless.
pub(crate) fn widen(n: usize) -> u64 {
    // Cannot truncate: checked at compile time above.
    n as u64
}

/// An acquisition token as the host gave it. Every token the loader holds came from a `usize`
/// (see [`widen`]), so the fallback never happens.
pub(crate) fn token(acquisition: u64) -> usize {
    usize::try_from(acquisition).unwrap_or(usize::MAX)
}

/// `p` as a reference; NULL is `LOADER_RESULT_NULL_POINTER`.
///
/// # Safety
/// `p` is NULL or valid for reads of `T`, unchanged for the returned lifetime.
pub(crate) unsafe fn try_ref<'a, T>(p: *const T) -> Result<&'a T, loader_result> {
    // SAFETY: by this function's contract.
    unsafe { p.as_ref() }.ok_or(loader_result::NullPointer)
}

/// `bytes, len` as a slice: NULL is allowed only with length 0; longer than the maximum is
/// refused before the pointer is touched.
///
/// # Safety
/// When `p` is not NULL and `len <= LOADER_MAX_CURSOR_LEN`, `p` must point to `len` readable
/// bytes that stay unchanged for the returned lifetime.
pub(crate) unsafe fn cursor<'a>(p: *const u8, len: usize) -> Result<&'a [u8], loader_result> {
    if len > MAX_CURSOR_LEN {
        return Err(loader_result::CursorTooLong);
    }
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(loader_result::NullCursor);
    }
    // SAFETY: non-NULL and, by this function's contract, valid for `len` bytes.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// An out-parameter: where a successful call writes one value. Either required (checked
/// non-NULL when made) or optional (NULL means the caller does not want the value).
pub(crate) struct Out<T>(Option<NonNull<T>>);

impl<T> Out<T> {
    /// An out-parameter the caller may pass as NULL.
    ///
    /// # Safety
    /// `p` is NULL or valid for a write of `T` until the exported call returns.
    pub(crate) unsafe fn optional(p: *mut T) -> Out<T> {
        Out(NonNull::new(p))
    }

    /// An out-parameter the caller must pass: NULL is `LOADER_RESULT_NULL_POINTER`.
    ///
    /// # Safety
    /// As [`Out::optional`].
    pub(crate) unsafe fn required(p: *mut T) -> Result<Out<T>, loader_result> {
        NonNull::new(p)
            .map(|p| Out(Some(p)))
            .ok_or(loader_result::NullPointer)
    }

    fn write(self, value: T) {
        if let Some(p) = self.0 {
            // SAFETY: valid for a write of `T` by the contract under which `self` was made; a
            // plain write, because the caller's memory may hold no valid `T` yet.
            unsafe { p.as_ptr().write(value) };
        }
    }
}

/// Where a successful call's result goes: one out-parameter, or a pair of sinks (nested
/// pairs for more).
pub(crate) trait Sink<T> {
    /// Writes `value` to every out-parameter the caller passed.
    fn put(self, value: T);
}

impl<T> Sink<T> for Out<T> {
    fn put(self, value: T) {
        self.write(value);
    }
}

impl<A, B, X: Sink<A>, Y: Sink<B>> Sink<(A, B)> for (X, Y) {
    fn put(self, (a, b): (A, B)) {
        self.0.put(a);
        self.1.put(b);
    }
}

/// The one way an exported function ends: on `Ok` the value goes to `out` and the code is
/// `LOADER_RESULT_OK`; on an error nothing is written and the error is the code.
pub(crate) fn finish<T>(r: Result<T, loader_result>, out: impl Sink<T>) -> loader_result {
    match r {
        Ok(value) => {
            out.put(value);
            loader_result::Ok
        }
        Err(e) => e,
    }
}

/// An output array with its capacity and its required length slot, as `loader_requests` and
/// `loader_view` take them.
pub(crate) struct OutArray<T> {
    array: *mut T,
    capacity: usize,
    len: *mut usize,
}

impl<T: Copy> OutArray<T> {
    /// Nothing is checked until [`OutArray::fill`].
    ///
    /// # Safety
    /// `array` is NULL or valid for `capacity` writes of `T`; `len` is NULL or valid for a
    /// write; both until the exported call returns.
    pub(crate) unsafe fn new(array: *mut T, capacity: usize, len: *mut usize) -> OutArray<T> {
        OutArray {
            array,
            capacity,
            len,
        }
    }

    /// Copies `items` if they fit and writes their count; if they do not fit, copies nothing
    /// and writes the count needed (`LOADER_RESULT_BUFFER_TOO_SMALL`). A NULL length slot, or
    /// a NULL array for a non-empty list, is `LOADER_RESULT_NULL_POINTER`.
    pub(crate) fn fill(self, items: &[T]) -> Result<(), loader_result> {
        // SAFETY: NULL or valid for a write, by the contract of `new`.
        let len = unsafe { Out::required(self.len) }?;
        if items.len() > self.capacity {
            len.write(items.len());
            return Err(loader_result::BufferTooSmall);
        }
        if !items.is_empty() {
            if self.array.is_null() {
                return Err(loader_result::NullPointer);
            }
            // SAFETY: `array` holds `capacity >= items.len()` elements by the contract of
            // `new`, and cannot overlap `items`, which the library owns.
            unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), self.array, items.len()) };
        }
        len.write(items.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_out_parameter_is_written_only_on_success() {
        let mut slot = 7u64;
        // SAFETY: `slot` is valid for writes for the whole test.
        let r = finish(Err(loader_result::UnknownRead), unsafe {
            Out::optional(&mut slot)
        });
        assert_eq!((r, slot), (loader_result::UnknownRead, 7));
        // SAFETY: as above.
        let r = finish(Ok(9), unsafe { Out::optional(&mut slot) });
        assert_eq!((r, slot), (loader_result::Ok, 9));
        // SAFETY: NULL is allowed for an optional out-parameter.
        let r = finish(Ok(1), unsafe { Out::<u64>::optional(std::ptr::null_mut()) });
        assert_eq!(r, loader_result::Ok);
    }

    #[test]
    fn a_required_out_parameter_refuses_null() {
        // SAFETY: NULL is checked, never written.
        let r = unsafe { Out::<u64>::required(std::ptr::null_mut()) };
        assert_eq!(r.err(), Some(loader_result::NullPointer));
    }

    #[test]
    fn an_array_too_small_reports_the_length_needed_and_copies_nothing() {
        let mut array = [0u32; 2];
        let mut len = 0usize;
        // SAFETY: `array` holds 2 entries and `len` one, valid for the whole test.
        let out = unsafe { OutArray::new(array.as_mut_ptr(), 2, &mut len) };
        assert_eq!(out.fill(&[1, 2, 3]), Err(loader_result::BufferTooSmall));
        assert_eq!((array, len), ([0, 0], 3));
        // SAFETY: as above.
        let out = unsafe { OutArray::new(array.as_mut_ptr(), 2, &mut len) };
        assert_eq!(out.fill(&[4, 5]), Ok(()));
        assert_eq!((array, len), ([4, 5], 2));
    }

    #[test]
    fn cursors_are_checked_before_they_are_read() {
        // SAFETY: every pointer here is NULL or a live slice of at least the length given.
        unsafe {
            assert_eq!(cursor(std::ptr::null(), 0), Ok(&[][..]));
            assert_eq!(cursor(std::ptr::null(), 1), Err(loader_result::NullCursor));
            assert_eq!(
                cursor(std::ptr::null(), MAX_CURSOR_LEN + 1),
                Err(loader_result::CursorTooLong)
            );
            assert_eq!(cursor(b"ab".as_ptr(), 2), Ok(&b"ab"[..]));
        }
    }

    #[test]
    fn tokens_round_trip() {
        for t in [0, 1, usize::MAX] {
            assert_eq!(token(widen(t)), t);
        }
    }
}
