//! The `GlobalAlloc` shell of an allocation counter: every call goes to the system allocator
//! unchanged, after the counter's own `note(layout)` for each allocation and growth. Shared
//! by the allocation bench and the repair-allocation test, which count in different ways.

/// Implements `GlobalAlloc` for `$t`, a type with `fn note(&self, layout: Layout)`.
macro_rules! counting_global_alloc {
    ($t:ty) => {
        // SAFETY: every method forwards to the system allocator unchanged; `note` only counts
        // (it must not allocate through this allocator, or guard against re-entry if it does).
        unsafe impl std::alloc::GlobalAlloc for $t {
            unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
                self.note(layout);
                // SAFETY: the caller's contract for `alloc` is passed on as is.
                unsafe { std::alloc::System.alloc(layout) }
            }
            unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
                self.note(layout);
                // SAFETY: as for `alloc`.
                unsafe { std::alloc::System.alloc_zeroed(layout) }
            }
            unsafe fn realloc(
                &self,
                ptr: *mut u8,
                layout: std::alloc::Layout,
                new_size: usize,
            ) -> *mut u8 {
                // A growth is a trip to the allocator like any other.
                self.note(layout);
                // SAFETY: `ptr` and `layout` come from this allocator, which got them from
                // `System`.
                unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
            }
            unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
                // SAFETY: as for `realloc`.
                unsafe { std::alloc::System.dealloc(ptr, layout) }
            }
        }
    };
}
