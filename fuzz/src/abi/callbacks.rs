//! The callbacks a [`Host`] gives its loader, and the checks each makes.
//!
//! Read ids are consecutive, a cancel names an outstanding read, a release an accepted
//! acquisition; no callback runs nested inside another or after `loader_free` returned.
//! Callbacks never panic (an unwind out of an `extern "C"` function aborts): they record
//! violations, which the driver raises after the call that ran them returns. Each one ends
//! with a step of the host's script (`script.rs`).

use super::calls;
use super::host::{Host, Read};
use loader::ffi::*;
use std::ffi::c_void;

/// Which callback a script step runs in.
#[derive(Clone, Copy, Debug)]
pub(super) enum Ctx {
    Issue(u64),
    Release,
    Changed,
    Cancel(u64),
}

impl Host {
    /// The callbacks that keep these books; `changed` and `cancel` only if the host has them.
    pub fn callbacks(&self) -> loader_callbacks {
        loader_callbacks {
            struct_size: std::mem::size_of::<loader_callbacks>() as u32,
            userdata: self as *const Host as *mut c_void,
            issue: Some(on_issue),
            release: Some(on_release),
            changed: if self.has_changed {
                Some(on_changed)
            } else {
                None
            },
            cancel: if self.has_cancel {
                Some(on_cancel)
            } else {
                None
            },
            compare: if self.has_compare {
                Some(on_compare)
            } else {
                None
            },
            locate: if self.has_locate {
                Some(on_locate)
            } else {
                None
            },
        }
    }

    /// A callback returns: its script step, then the depth count.
    fn leave(&self, ctx: Ctx) {
        self.script(ctx);
        self.books.borrow_mut().depth -= 1;
    }

    /// Counts a callback and flags it if the loader was already freed.
    fn enter(&self, name: &str) {
        if super::report::tracing() {
            eprintln!("    callback {name} of {:#x}", self.handle.get());
        }
        let mut b = self.books.borrow_mut();
        b.callbacks += 1;
        // A call made from a callback has its callbacks queued until the running one returns;
        // only `loader_free` runs its releases and cancels at once (they must precede its return).
        if b.depth > 0 && !b.free_started {
            b.violations.push(format!(
                "{name} callback ran nested inside another callback"
            ));
        }
        b.depth += 1;
        if b.freed {
            b.violations
                .push(format!("{name} callback after loader_free returned"));
        }
    }
}

unsafe extern "C-unwind" fn on_issue(userdata: *mut c_void, read: *const loader_read) {
    // SAFETY: userdata is the `Host` registered with this loader; it lives until the run ends,
    // after the loader was freed.
    let host: &Host = unsafe { calls::host_of(userdata) };
    // SAFETY: `read` is the pointer passed to this running `issue` callback.
    let (r, cursor) = unsafe { calls::read_in_callback(read) };
    // SAFETY: as above.
    let until = unsafe { calls::until_in_callback(r) };
    host.enter(&format!("issue(read {}, {:?})", r.read_id, r.direction));
    let Some(cursor) = cursor else {
        host.violation(format!(
            "read {} has a NULL cursor of length {}",
            r.read_id, r.cursor_len
        ));
        host.books.borrow_mut().depth -= 1;
        return;
    };
    {
        let b = &mut *host.books.borrow_mut();
        if b.free_started {
            b.violations
                .push(format!("issue of read {} during or after free", r.read_id));
        }
        if r.read_id != b.max_read + 1 {
            b.violations.push(format!(
                "read {} issued after read {}: ids must be consecutive",
                r.read_id, b.max_read
            ));
        }
        if r.limit != host.page_size || cursor.len() > LOADER_MAX_CURSOR_LEN {
            b.violations.push(format!(
                "read {}: limit {} (page size {}), cursor of {} bytes",
                r.read_id,
                r.limit,
                host.page_size,
                cursor.len()
            ));
        }
        if let Some(u) = until {
            // Only a ranged repair bounds its reads, and it reads forward.
            if r.direction != loader_direction::Forward
                || r.kind != loader_kind::Chain
                || u.len() > LOADER_MAX_CURSOR_LEN
            {
                b.violations.push(format!(
                    "read {}: bounded ({} bytes) but {:?} {:?}",
                    r.read_id,
                    u.len(),
                    r.kind,
                    r.direction
                ));
            }
        } else if r.until_len != 0 {
            b.violations.push(format!(
                "read {}: NULL until of length {}",
                r.read_id, r.until_len
            ));
        }
        super::report::tally("issue bounded", until.is_some());
        super::report::tally("issue direction", r.direction);
        b.max_read = b.max_read.max(r.read_id);
        b.pending.push(Read {
            id: r.read_id,
            cursor: cursor.to_vec(),
            limit: r.limit,
            direction: r.direction,
            until: until.map(<[u8]>::to_vec),
            issued_at: b.now,
            repair: r.kind != loader_kind::Finite,
        });
    }
    host.leave(Ctx::Issue(r.read_id));
}

unsafe extern "C-unwind" fn on_release(userdata: *mut c_void, acquisition: usize) {
    // SAFETY: as in `on_issue`.
    let host: &Host = unsafe { calls::host_of(userdata) };
    host.enter(&format!("release({acquisition:#x})"));
    {
        let b = &mut *host.books.borrow_mut();
        let known = b.accepted.contains(&acquisition) || b.offering.contains(&acquisition);
        if b.refused.contains(&acquisition) || !known {
            b.violations.push(format!(
                "release of acquisition {acquisition:#x}, which the loader never accepted"
            ));
        }
        let n = b.released.entry(acquisition).or_insert(0);
        *n += 1;
        let n = *n;
        if n > 1 {
            b.violations
                .push(format!("acquisition {acquisition:#x} released {n} times"));
        }
    }
    host.leave(Ctx::Release);
}

unsafe extern "C-unwind" fn on_changed(userdata: *mut c_void) {
    // SAFETY: as in `on_issue`.
    let host: &Host = unsafe { calls::host_of(userdata) };
    host.enter("changed");
    host.books.borrow_mut().changes += 1;
    if host.books.borrow().free_started {
        host.violation("changed callback during or after free".into());
    }
    host.leave(Ctx::Changed);
}

unsafe extern "C-unwind" fn on_cancel(userdata: *mut c_void, read_id: u64) {
    // SAFETY: as in `on_issue`.
    let host: &Host = unsafe { calls::host_of(userdata) };
    host.enter(&format!("cancel({read_id})"));
    {
        let b = &mut *host.books.borrow_mut();
        // Finding 2 (fixed in bfe75f1): a read whose `issue` never ran is not cancelled.
        if read_id == 0
            || read_id > b.max_read
            || (b.answered.contains(&read_id) && !b.answered_in_callback.contains(&read_id))
        {
            b.violations.push(format!(
                "cancel of read {read_id}, which is not outstanding (max issued {})",
                b.max_read
            ));
        }
        // Documented: once, when superseded or, if never superseded, at free
        // (`Host::free` checks that one).
        let freeing = b.free_started;
        // The hint was decided before the host's failure of this read, and queued behind the
        // callback the failure was made from: that failure let the read go (loader_fail's
        // "after its cancel hint" counts from the call that superseded the read).
        if b.failed_unhinted.remove(&read_id) {
            b.let_go.insert(read_id);
        }
        let n = b.cancels.entry(read_id).or_insert(0);
        *n += 1;
        let n = *n;
        if n > 1 && !freeing {
            b.violations
                .push(format!("read {read_id} cancelled {n} times before free"));
        }
    }
    host.leave(Ctx::Cancel(read_id));
}

/// Orders cursors as bytes (big-endian positions order so). Runs inside the loader's state
/// change: it records what it finds wrong and calls nothing; it is no callback in the books'
/// count (a refused `loader_invalidate_range` may have run it).
unsafe extern "C" fn on_compare(
    userdata: *mut c_void,
    a: *const u8,
    a_len: usize,
    b: *const u8,
    b_len: usize,
) -> i32 {
    // SAFETY: as in `on_issue`.
    let host: &Host = unsafe { calls::host_of(userdata) };
    // SAFETY: the library passes two cursors valid for their lengths during the call.
    match unsafe { calls::compared(a, a_len, b, b_len) } {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => a.cmp(b) as i32,
        _ => {
            host.violation(format!(
                "compare called with an empty or NULL cursor ({a_len}, {b_len})"
            ));
            0
        }
    }
}

/// Finds the cursor before `position` as the host's answers write cursors (a big-endian
/// position), and sometimes cannot: every third position is unknown, every seventh claims
/// more bytes than the buffer holds (the loader must take that as unknown). Runs inside the
/// loader's state change, so it calls nothing; it is no callback in the books' count.
unsafe extern "C" fn on_locate(
    userdata: *mut c_void,
    position: u64,
    cursor: *mut u8,
    capacity: usize,
    cursor_len: *mut usize,
) -> i32 {
    // SAFETY: as in `on_issue`.
    let host: &Host = unsafe { calls::host_of(userdata) };
    if cursor.is_null() || cursor_len.is_null() || capacity < 8 {
        host.violation(format!(
            "locate called with a NULL buffer or {capacity} bytes of room"
        ));
        return LOADER_LOCATE_UNKNOWN;
    }
    let bytes = position.to_be_bytes();
    // SAFETY: the library passes a buffer of `capacity` (at least 8) writable bytes and a
    // live `cursor_len`, both valid for this call.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), cursor, bytes.len());
        *cursor_len = if position % 7 == 0 {
            capacity + 1
        } else if position == 0 {
            0
        } else {
            bytes.len()
        };
    }
    if position % 3 == 0 {
        LOADER_LOCATE_UNKNOWN
    } else {
        LOADER_LOCATE_FOUND
    }
}
