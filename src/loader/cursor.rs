//! Cursor bytes, shared between the loader's records and the reads it issues, and recycled so
//! that the steady state allocates nothing.
//!
//! A cursor is copied from the host once, when an answer is accepted. From then on the page
//! that ends there, the next read that starts there, and that read's record all hold the same
//! buffer. When the loader lets go of a buffer it goes back to a pool, and is reused as soon as
//! nobody else (a read effect still on its way to the host) holds it.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Opaque cursor bytes; empty is the source's start.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Cursor(Option<Arc<Vec<u8>>>);

impl Deref for Cursor {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl fmt::Debug for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cursor({:02x?})", &**self)
    }
}

impl PartialEq<[u8]> for Cursor {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<u8>> for Cursor {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl PartialEq<&[u8]> for Cursor {
    fn eq(&self, other: &&[u8]) -> bool {
        **self == **other
    }
}

/// Buffers the loader let go of.
#[derive(Clone, Debug, Default)]
pub(super) struct CursorPool {
    free: Vec<Arc<Vec<u8>>>,
}

impl CursorPool {
    /// A cursor holding a copy of `bytes`, in a recycled buffer when one is free.
    pub(super) fn make(&mut self, bytes: &[u8]) -> Cursor {
        if bytes.is_empty() {
            return Cursor(None);
        }
        while let Some(mut buf) = self.free.pop() {
            if let Some(v) = Arc::get_mut(&mut buf) {
                v.clear();
                v.extend_from_slice(bytes);
                return Cursor(Some(buf));
            }
            // Still shared with a read on its way out: the other holder frees it.
        }
        Cursor(Some(Arc::new(bytes.to_vec())))
    }

    /// Keeps `c`'s buffer for reuse. The pool is not capped: it never holds more buffers than
    /// the loader once held at the same time (a whole view being replaced by a repair's), so
    /// its memory is bounded by the largest view, and a capped pool would free and
    /// reallocate most of a big view at every commit.
    pub(super) fn recycle(&mut self, c: Cursor) {
        if let Some(buf) = c.0 {
            self.free.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_once_unshared() {
        let mut pool = CursorPool::default();
        let a = pool.make(b"abc");
        let ptr = a.as_ptr();
        let shared = a.clone();
        pool.recycle(a);
        // Shared: not reused.
        let b = pool.make(b"xyz");
        assert_ne!(b.as_ptr(), ptr);
        assert_eq!(shared, b"abc".to_vec());
        drop(shared);
        pool.recycle(b);
        let c = pool.make(b"q");
        assert_eq!(c, b"q".to_vec());
        assert!(pool.make(b"").is_empty());
    }
}
