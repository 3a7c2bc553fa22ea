//! Cursor bytes, kept by the loader's records and the reads it issues, without allocating in
//! the steady state.
//!
//! A cursor is copied from the host once, when an answer is accepted. A short one (the usual
//! case: a key or an offset) is stored inline and copied with the page that ends there, the
//! next read that starts there and that read's record. A long one lives in one shared buffer
//! that all of them hold; when the loader lets go of it, the buffer goes back to a pool and is
//! reused as soon as nobody else (a read effect still on its way to the host) holds it.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Cursors up to this many bytes are stored inline, in the record itself: no allocation, no
/// reference count, no pointer to chase. Keyset and offset cursors are usually this short.
pub const INLINE_CURSOR_LEN: usize = 14;

/// Opaque cursor bytes; empty is the source's start.
///
/// A short cursor (at most 14 bytes, `INLINE_CURSOR_LEN`) is held inline and copied with its
/// record; a longer one lives in a shared buffer.
#[derive(Clone)]
pub struct Cursor(Repr);

#[derive(Clone)]
enum Repr {
    Inline {
        len: u8,
        bytes: [u8; INLINE_CURSOR_LEN],
    },
    Shared(Arc<Vec<u8>>),
}

impl Default for Cursor {
    fn default() -> Cursor {
        Cursor(Repr::Inline {
            len: 0,
            bytes: [0; INLINE_CURSOR_LEN],
        })
    }
}

impl Cursor {
    /// An inline cursor holding `bytes`, if they fit.
    #[inline]
    fn inline(bytes: &[u8]) -> Option<Cursor> {
        let mut buf = [0; INLINE_CURSOR_LEN];
        if bytes.len() == 8 {
            // The common case (an offset or an integer key), without a variable-length copy.
            buf[..8].copy_from_slice(bytes);
        } else {
            buf.get_mut(..bytes.len())?.copy_from_slice(bytes);
        }
        Some(Cursor(Repr::Inline {
            len: bytes.len() as u8,
            bytes: buf,
        }))
    }
}

impl Deref for Cursor {
    type Target = [u8];
    // Inlined across crates: a host reads an issued read's cursor through it on every read.
    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Shared(v) => v,
        }
    }
}

impl PartialEq for Cursor {
    #[inline]
    fn eq(&self, other: &Cursor) -> bool {
        *self == **other
    }
}

impl Eq for Cursor {}

impl fmt::Debug for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cursor({:02x?})", &**self)
    }
}

impl PartialEq<[u8]> for Cursor {
    /// Compared on every answer (did the cursor move?): an inline cursor of the usual eight
    /// bytes is one word compared, without a call to `memcmp`.
    #[inline]
    fn eq(&self, other: &[u8]) -> bool {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                if usize::from(*len) != other.len() {
                    false
                } else if let (Ok(a), Ok(b)) =
                    (<[u8; 8]>::try_from(&bytes[..8]), <[u8; 8]>::try_from(other))
                {
                    u64::from_ne_bytes(a) == u64::from_ne_bytes(b)
                } else {
                    bytes[..other.len()] == *other
                }
            }
            Repr::Shared(v) => v[..] == *other,
        }
    }
}

impl PartialEq<Vec<u8>> for Cursor {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl PartialEq<&[u8]> for Cursor {
    #[inline]
    fn eq(&self, other: &&[u8]) -> bool {
        *self == **other
    }
}

/// `a <= b` in the source's order, the empty cursor being its start (before every other);
/// `cmp` orders two non-empty cursors as the source does.
/// The host's order of two non-empty cursors, as [`Loader::invalidate_range`](super::Loader::invalidate_range)
/// and [`Loader::settle_ordered`](super::Loader::settle_ordered) take it.
pub type Order<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> std::cmp::Ordering;

/// `a <= b` in an [`Order`], the empty cursor first.
pub(super) type Le<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> bool;

pub(super) fn cursor_le(
    cmp: &mut dyn FnMut(&[u8], &[u8]) -> std::cmp::Ordering,
    a: &[u8],
    b: &[u8],
) -> bool {
    a.is_empty() || (!b.is_empty() && cmp(a, b) != std::cmp::Ordering::Greater)
}

/// Shared buffers of long cursors the loader let go of.
#[derive(Clone, Debug, Default)]
pub(super) struct CursorPool {
    free: Vec<Arc<Vec<u8>>>,
}

impl CursorPool {
    /// A cursor holding a copy of `bytes`: inline when short, else in a recycled buffer when
    /// one is free.
    #[inline]
    pub(super) fn make(&mut self, bytes: &[u8]) -> Cursor {
        if let Some(c) = Cursor::inline(bytes) {
            return c;
        }
        self.make_shared(bytes)
    }

    /// [`CursorPool::make`] for a cursor too long to hold inline: out of the answer path's
    /// way, which copies a short one in a few instructions.
    #[inline(never)]
    fn make_shared(&mut self, bytes: &[u8]) -> Cursor {
        while let Some(mut buf) = self.free.pop() {
            if let Some(v) = Arc::get_mut(&mut buf) {
                v.clear();
                v.extend_from_slice(bytes);
                return Cursor(Repr::Shared(buf));
            }
            // Still shared with a read on its way out: the other holder frees it.
        }
        Cursor(Repr::Shared(Arc::new(bytes.to_vec())))
    }

    /// [`CursorPool::recycle`] of a cursor left in a record about to be dropped: its buffer,
    /// if it has one, is taken (an empty cursor left in its place); an inline one is left.
    #[inline]
    pub(super) fn recycle_in(&mut self, c: &mut Cursor) {
        if let Repr::Shared(_) = c.0 {
            self.recycle(std::mem::take(c));
        }
    }

    /// Keeps `c`'s buffer for reuse, if it has one. The pool is not capped: it never holds
    /// more buffers than the loader once held at the same time (a whole view being replaced
    /// by a repair's), so its memory is bounded by the largest view, and a capped pool would
    /// free and reallocate most of a big view at every commit.
    pub(super) fn recycle(&mut self, c: Cursor) {
        if let Repr::Shared(buf) = c.0 {
            self.free.push(buf);
        }
    }
}

/// The checker's canonical form: the bytes.
#[cfg(any(test, feature = "testing"))]
impl crate::check::canon::Canon for Cursor {
    fn canon(&self, e: &mut crate::check::canon::Enc) {
        e.bytes(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_once_unshared() {
        let mut pool = CursorPool::default();
        let long = [7u8; INLINE_CURSOR_LEN + 1];
        let a = pool.make(&long);
        let ptr = a.as_ptr();
        let shared = a.clone();
        pool.recycle(a);
        // Shared: not reused.
        let b = pool.make(&[8u8; INLINE_CURSOR_LEN + 2]);
        assert_ne!(b.as_ptr(), ptr);
        assert_eq!(shared, long.to_vec());
        drop(shared);
        pool.recycle(b);
        let c = pool.make(&[9u8; 40]);
        assert_eq!(c, vec![9u8; 40]);
        assert!(pool.make(b"").is_empty());
        assert_eq!(Cursor::default(), pool.make(b""));
    }

    #[test]
    fn short_cursors_are_inline_and_long_ones_shared() {
        let mut pool = CursorPool::default();
        for len in [0, 1, 8, INLINE_CURSOR_LEN] {
            let bytes: Vec<u8> = (0..len as u8).collect();
            let c = pool.make(&bytes);
            assert!(matches!(c.0, Repr::Inline { .. }), "{len} bytes");
            assert_eq!(c, bytes);
            assert_eq!(c.clone(), c);
            pool.recycle(c);
        }
        assert!(pool.free.is_empty(), "inline cursors are not pooled");
        let bytes: Vec<u8> = (0..=INLINE_CURSOR_LEN as u8).collect();
        let c = pool.make(&bytes);
        assert!(matches!(c.0, Repr::Shared(_)));
        assert_eq!(c, bytes);
        // Equal bytes are equal cursors, whatever the storage.
        assert_eq!(pool.make(&bytes[..3]), Cursor::inline(&bytes[..3]).unwrap());
        assert_eq!(std::mem::size_of::<Cursor>(), 16);
    }

    #[test]
    fn equality_with_bytes_is_byte_equality_at_every_length() {
        // The answer path compares the read's cursor with `next_cursor` word-wise when both
        // hold eight bytes; every other length, and a shared cursor, compares the bytes.
        let mut pool = CursorPool::default();
        for len in 0..=INLINE_CURSOR_LEN + 3 {
            let bytes: Vec<u8> = (1..=len as u8).collect();
            let c = pool.make(&bytes);
            assert!(c == bytes[..], "{len} bytes");
            let slice: &[u8] = &bytes;
            assert!(c == slice, "{len} bytes");
            assert_eq!(c, pool.make(&bytes), "{len} bytes");
            for at in 0..len {
                let mut other = bytes.clone();
                other[at] ^= 0x80;
                assert!(c != other[..], "{len} bytes, differing at {at}");
                assert_ne!(c, pool.make(&other), "{len} bytes, differing at {at}");
            }
            // A prefix or an extension is another cursor, zero bytes included.
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(c != longer[..], "{len} bytes against {}", len + 1);
            if len > 0 {
                assert!(c != bytes[..len - 1], "{len} bytes against {}", len - 1);
            }
        }
    }
}
