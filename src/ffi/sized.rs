//! The structs that may grow: how a `struct_size` first field lets hosts built against an
//! older or a newer `loader.h` than the library's share `loader_config`, `loader_callbacks`,
//! `loader_snapshot` and `loader_counts` with it.
//!
//! The host sets `struct_size` to `sizeof` the struct as its header declares it. Fields are
//! only ever appended, and a field's zero value means the behaviour from before it existed, so:
//! - a struct the host passes in ([`read_in`]) that is shorter than the library's (an older
//!   header) reads as if its missing fields were zero; one that is longer (a newer header) is
//!   accepted when every byte past the library's struct is zero, and refused with
//!   `LOADER_RESULT_UNKNOWN_FIELD` otherwise: the host set a field this library does not know;
//! - a struct the library fills ([`SizedOut`]) gets the first min(its size, the library's)
//!   bytes and nothing past them, and its `struct_size` is set to the bytes filled, so a host
//!   built against a newer header sees which fields the library knew.
//!
//! A `struct_size` below the struct's first release (0, a host that never set it) or above
//! [`MAX_STRUCT_SIZE`] is `LOADER_RESULT_INVALID_STRUCT_SIZE`, checked before anything is read
//! past the field or written.

use super::pointer::Sink;
use super::result::loader_result;
use std::mem::size_of;

/// The largest `struct_size` accepted: far more than any of the structs will grow to, and small
/// enough that a garbage size is refused before the library reads that far.
pub(crate) const MAX_STRUCT_SIZE: usize = 4096;

/// A struct that may grow.
///
/// # Safety
/// The implementing type is `#[repr(C)]`, its first field is `struct_size: u32` (at offset 0),
/// and `FIRST_SIZE` is at most its size.
pub(crate) unsafe trait Growable: Copy {
    /// The end of the last field of the struct's first release: the smallest `struct_size`
    /// accepted, whatever fields later releases append.
    const FIRST_SIZE: usize;

    /// The library's own size, which `struct_size` is set to when the library makes one.
    fn own_size() -> u32 {
        // Never truncates: checked by `sizes_fit_the_field` below.
        size_of::<Self>() as u32
    }
}

/// A struct the host passes in, which the library reads from the host's bytes.
///
/// # Safety
/// Every bit pattern, all zeros included, is a valid value of the type (integers, floats, raw
/// pointers, `Option`s of function pointers; no `bool` and no enum).
pub(crate) unsafe trait GrowableIn: Growable {}

/// The `struct_size` the host set, checked.
///
/// # Safety
/// `p` is not NULL and valid for reads of at least the first field, a `u32`.
unsafe fn declared<T: Growable>(p: *const T) -> Result<usize, loader_result> {
    // SAFETY: by this function's contract; `struct_size` is the first field (trait `Growable`).
    let size = unsafe { p.cast::<u32>().read() } as usize;
    if size < T::FIRST_SIZE || size > MAX_STRUCT_SIZE {
        return Err(loader_result::InvalidStructSize);
    }
    Ok(size)
}

/// Reads a struct the host passed: NULL is `LOADER_RESULT_NULL_POINTER`, a bad `struct_size`
/// `LOADER_RESULT_INVALID_STRUCT_SIZE`, a non-zero byte past the library's struct
/// `LOADER_RESULT_UNKNOWN_FIELD`. Fields the host's struct is too short to hold are zero. The
/// copy returned has the library's own `struct_size`.
///
/// # Safety
/// `p` is NULL or valid for reads of `struct_size` bytes (its first field), unchanged during
/// the call.
pub(crate) unsafe fn read_in<T: GrowableIn>(p: *const T) -> Result<T, loader_result> {
    if p.is_null() {
        return Err(loader_result::NullPointer);
    }
    // SAFETY: not NULL, and valid for at least the first field by this function's contract.
    let size = unsafe { declared(p) }?;
    let own = size_of::<T>();
    if size > own {
        // SAFETY: the host's struct is `size` bytes long, by this function's contract.
        let tail = unsafe { std::slice::from_raw_parts(p.cast::<u8>().add(own), size - own) };
        if tail.iter().any(|&b| b != 0) {
            return Err(loader_result::UnknownField);
        }
    }
    let mut value = std::mem::MaybeUninit::<T>::zeroed();
    // SAFETY: `p` is valid for `size` bytes and `value` holds `own`, so min of the two can be
    // copied; they cannot overlap (`value` is a local). Zero bytes and any bytes copied over
    // them make a valid `T` (trait `GrowableIn`).
    let mut value = unsafe {
        std::ptr::copy_nonoverlapping(
            p.cast::<u8>(),
            value.as_mut_ptr().cast::<u8>(),
            size.min(own),
        );
        value.assume_init()
    };
    // SAFETY: `struct_size` is the first field (trait `Growable`); `value` is a local `T`.
    unsafe {
        std::ptr::addr_of_mut!(value)
            .cast::<u32>()
            .write(T::own_size())
    };
    Ok(value)
}

/// An out-parameter for a struct that may grow: the host's `struct_size` is checked when it is
/// made; a successful call fills the first min(host's, library's) bytes and sets `struct_size`
/// to that. Nothing is written on an error, nor past the bytes filled.
pub(crate) struct SizedOut<T> {
    p: std::ptr::NonNull<T>,
    size: usize,
}

impl<T: Growable> SizedOut<T> {
    /// NULL is `LOADER_RESULT_NULL_POINTER`, a bad `struct_size`
    /// `LOADER_RESULT_INVALID_STRUCT_SIZE`.
    ///
    /// # Safety
    /// `p` is NULL or valid for reads and writes of `struct_size` bytes (its first field)
    /// until the exported call returns.
    pub(crate) unsafe fn required(p: *mut T) -> Result<SizedOut<T>, loader_result> {
        let p = std::ptr::NonNull::new(p).ok_or(loader_result::NullPointer)?;
        // SAFETY: not NULL, and valid for the first field by this function's contract.
        let size = unsafe { declared(p.as_ptr().cast_const()) }?;
        Ok(SizedOut { p, size })
    }

    /// Writes `value`'s first min(host's, library's) bytes over the host's struct, and that
    /// count to its `struct_size`. A larger host struct keeps its bytes past them.
    fn write(self, value: T) {
        let n = self.size.min(size_of::<T>());
        let dst = self.p.as_ptr().cast::<u8>();
        // SAFETY: the host's struct is valid for `self.size >= n` bytes (contract of
        // `required`) and `value` holds `size_of::<T>() >= n`; a local cannot overlap it. The
        // copy is untyped, so `value`'s padding bytes may be copied as they are.
        unsafe {
            std::ptr::copy_nonoverlapping(std::ptr::addr_of!(value).cast::<u8>(), dst, n);
            // `n` fits in a u32: it is at most MAX_STRUCT_SIZE.
            dst.cast::<u32>().write(n as u32);
        }
    }
}

impl<T: Growable> Sink<T> for SizedOut<T> {
    fn put(self, value: T) {
        self.write(value);
    }
}

/// Fills a host's struct with `value` as [`SizedOut`] does, then zeroes the bytes past the
/// library's struct up to the host's `struct_size`, and leaves `struct_size` as the host set
/// it: a config made by `loader_config_default` from a library older than the host's header
/// has every field that library does not know at zero, so `loader_new` accepts it.
///
/// # Safety
/// As [`SizedOut::required`].
pub(crate) unsafe fn fill_whole<T: Growable>(p: *mut T, value: T) -> Result<(), loader_result> {
    // SAFETY: forwarded contract.
    let out = unsafe { SizedOut::required(p) }?;
    let (size, dst) = (out.size, out.p.as_ptr().cast::<u8>());
    out.write(value);
    let own = size_of::<T>();
    // SAFETY: the host's struct is valid for `size` bytes (contract of `required`); both
    // writes stay inside them.
    unsafe {
        if size > own {
            std::ptr::write_bytes(dst.add(own), 0, size - own);
        }
        dst.cast::<u32>().write(size as u32);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::types::{loader_callbacks, loader_config, loader_counts, loader_snapshot};
    use std::mem::offset_of;

    /// A struct as a newer header declares it: the library's, then a field it does not know.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Newer<T> {
        known: T,
        added: u64,
    }

    fn default_config() -> loader_config {
        // SAFETY: all zeros is a valid config (trait `GrowableIn`).
        let mut c: loader_config = unsafe { std::mem::zeroed() };
        c.struct_size = loader_config::own_size();
        // SAFETY: `c` is a live config.
        let r = unsafe { fill_whole(&mut c, crate::loader::Config::default().into()) };
        assert_eq!(r, Ok(()));
        c
    }

    #[test]
    fn sizes_fit_the_field_and_first_sizes_fit_the_structs() {
        fn check<T: Growable>() {
            assert!(size_of::<T>() <= MAX_STRUCT_SIZE);
            assert!(T::FIRST_SIZE <= size_of::<T>());
        }
        check::<loader_config>();
        check::<loader_callbacks>();
        check::<loader_snapshot>();
        check::<loader_counts>();
        check::<crate::ffi::feed_counts::loader_feed_counts>();
    }

    /// STRUCTS THAT GROW in the header names every growable struct with its first release's
    /// size on 64-bit targets: the smallest `struct_size` accepted, here `FIRST_SIZE`.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn the_header_states_each_growable_structs_first_size() {
        let header = include_str!("../../include/loader.h");
        let at = header.find(" * STRUCTS THAT GROW").expect("the section");
        let section = &header[at..at + header[at..].find(" * HELPERS NOT PROVIDED").unwrap()];
        let text: String = section.split_whitespace().collect::<Vec<_>>().join(" ");
        let sizes = [
            ("loader_config", loader_config::FIRST_SIZE),
            ("loader_callbacks", loader_callbacks::FIRST_SIZE),
            ("loader_snapshot", loader_snapshot::FIRST_SIZE),
            ("loader_counts", loader_counts::FIRST_SIZE),
            (
                "loader_feed_config",
                <crate::ffi::feed::loader_feed_config as Growable>::FIRST_SIZE,
            ),
            (
                "loader_feed_counts",
                <crate::ffi::feed_counts::loader_feed_counts as Growable>::FIRST_SIZE,
            ),
        ];
        for (name, size) in sizes {
            let stated = format!("{name} ({size} bytes)");
            assert!(
                text.contains(&stated),
                "STRUCTS THAT GROW does not say \"{stated}\""
            );
        }
    }

    /// A field appended to a struct with tail padding could fit in that padding and leave
    /// `sizeof` unchanged: a library could not tell the two headers apart. None has any, on
    /// the 64-bit targets the project builds and tests on.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn no_struct_ends_in_padding() {
        assert_eq!(
            size_of::<loader_config>(),
            offset_of!(loader_config, cursor_memo_bytes) + 8
        );
        assert_eq!(
            size_of::<loader_callbacks>(),
            offset_of!(loader_callbacks, locate) + 8
        );
        assert_eq!(
            size_of::<loader_snapshot>(),
            offset_of!(loader_snapshot, failed) + 8
        );
        assert_eq!(
            size_of::<loader_counts>(),
            offset_of!(loader_counts, locate_unknown) + 8
        );
        assert_eq!(
            size_of::<crate::ffi::feed_counts::loader_feed_counts>(),
            offset_of!(crate::ffi::feed_counts::loader_feed_counts, timed_out) + 8
        );
    }

    /// A struct whose first release ended after `a`, and whose next release added `b`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Grown {
        struct_size: u32,
        a: u32,
        b: u64,
    }

    // SAFETY: `#[repr(C)]`, `struct_size` first, FIRST_SIZE within it; integers only.
    unsafe impl Growable for Grown {
        const FIRST_SIZE: usize = 8;
    }
    // SAFETY: integers only.
    unsafe impl GrowableIn for Grown {}

    /// Four words, aligned as `Grown` is.
    #[repr(C, align(8))]
    struct Words([u32; 4]);

    #[test]
    fn an_older_hosts_struct_reads_as_zero_past_its_end() {
        // The host's header ends the struct after `a`; the word after it is not the host's.
        let older = Words([8, 5, 0xdead, 0xbeef]);
        // SAFETY: `older` is live for more than the 8 bytes it declares.
        let g = unsafe { read_in(std::ptr::addr_of!(older).cast::<Grown>()) }.unwrap();
        assert_eq!((g.struct_size, g.a, g.b), (16, 5, 0));
        // A library built before `b` existed writes only what it knows into a newer struct.
        let value = Grown {
            struct_size: 16,
            a: 9,
            b: 3,
        };
        let mut newer = Grown {
            struct_size: 16,
            a: 0,
            b: 0xdead,
        };
        // SAFETY: `newer` is live for the 16 bytes it declares.
        let out = unsafe { SizedOut::required(std::ptr::addr_of_mut!(newer)) }.unwrap();
        out.put(value);
        assert_eq!((newer.struct_size, newer.a, newer.b), (16, 9, 3));
        // An older host's struct gets its own 8 bytes, and nothing after them.
        let mut older = Words([16, 0, 0xdead, 0xbeef]);
        older.0[0] = 8;
        // SAFETY: `older` is live for the 8 bytes it declares.
        let out = unsafe { SizedOut::<Grown>::required(std::ptr::addr_of_mut!(older).cast()) };
        out.unwrap().put(value);
        assert_eq!(older.0, [8, 9, 0xdead, 0xbeef]);
    }

    #[test]
    fn a_newer_hosts_struct_is_accepted_when_its_new_fields_are_zero() {
        let mut newer = Newer {
            known: default_config(),
            added: 0,
        };
        newer.known.struct_size = size_of::<Newer<loader_config>>() as u32;
        // SAFETY: `newer` is live for its whole declared size.
        let c = unsafe { read_in(std::ptr::addr_of!(newer).cast::<loader_config>()) }.unwrap();
        assert_eq!(c.struct_size, loader_config::own_size());
        assert_eq!(c.page_size, default_config().page_size);
        newer.added = 1;
        // SAFETY: as above.
        let r = unsafe { read_in(std::ptr::addr_of!(newer).cast::<loader_config>()) };
        assert_eq!(r.err(), Some(loader_result::UnknownField));
    }

    #[test]
    fn sizes_out_of_range_are_refused_before_anything_else_is_read() {
        for size in [
            0,
            4,
            loader_config::FIRST_SIZE - 1,
            MAX_STRUCT_SIZE + 1,
            u32::MAX as usize,
        ] {
            let mut c = default_config();
            c.struct_size = size as u32;
            // SAFETY: only the first field is read before the size is refused.
            let r = unsafe { read_in(&c) };
            assert_eq!(r.err(), Some(loader_result::InvalidStructSize), "{size}");
        }
        // SAFETY: NULL is checked first.
        let r = unsafe { read_in::<loader_config>(std::ptr::null()) };
        assert_eq!(r.err(), Some(loader_result::NullPointer));
    }

    #[test]
    fn an_output_fills_no_more_than_the_host_declared_and_says_how_much() {
        // SAFETY: all zeros is a valid snapshot (integers, bools false, enums at 0).
        let mut value: loader_snapshot = unsafe { std::mem::zeroed() };
        value.struct_size = loader_snapshot::own_size();
        value.window_start = 7;
        // A newer host: its added field keeps what it held.
        // SAFETY: as above.
        let mut newer: Newer<loader_snapshot> = unsafe { std::mem::zeroed() };
        newer.known.struct_size = size_of::<Newer<loader_snapshot>>() as u32;
        newer.added = 0xfeed;
        // SAFETY: `newer` is live for its declared size.
        let out = unsafe { SizedOut::required(std::ptr::addr_of_mut!(newer).cast()) }.unwrap();
        out.put(value);
        assert_eq!(newer.known.struct_size, loader_snapshot::own_size());
        assert_eq!((newer.known.window_start, newer.added), (7, 0xfeed));
        // A size shorter than the first release's is refused, and nothing is written.
        let short = loader_snapshot::FIRST_SIZE - 8;
        let mut older = vec![0xabu8; size_of::<loader_snapshot>()];
        older[..4].copy_from_slice(&(short as u32).to_ne_bytes());
        // SAFETY: `older` is live for the library's whole size, more than it declares.
        let out = unsafe { SizedOut::<loader_snapshot>::required(older.as_mut_ptr().cast()) };
        assert_eq!(out.err(), Some(loader_result::InvalidStructSize));
        assert!(older[4..].iter().all(|&b| b == 0xab));
    }

    #[test]
    fn a_default_config_for_a_newer_host_zeroes_what_the_library_does_not_know() {
        let mut newer = Newer {
            known: default_config(),
            added: u64::MAX,
        };
        newer.known.struct_size = size_of::<Newer<loader_config>>() as u32;
        // SAFETY: `newer` is live for its declared size.
        let r = unsafe {
            fill_whole(
                std::ptr::addr_of_mut!(newer).cast::<loader_config>(),
                crate::loader::Config::default().into(),
            )
        };
        assert_eq!(r, Ok(()));
        assert_eq!(newer.added, 0);
        assert_eq!(
            newer.known.struct_size as usize,
            size_of::<Newer<loader_config>>()
        );
        // So loader_new reads it back.
        // SAFETY: as above.
        assert!(unsafe { read_in(std::ptr::addr_of!(newer).cast::<loader_config>()) }.is_ok());
    }
}
