//! Tests of an `issue` callback that does not return normally, through the C ABI: a Rust host
//! whose `issue` panics (an `extern "C-unwind"` callback, so the panic unwinds through the
//! library, as a C++ exception does). The read it was given must be let go of, so that the
//! retry rules recover it and the loader becomes quiescent again.

use super::events::{loader_next_deadline, loader_set_window, loader_settle, loader_tick};
use super::instance::loader_handle;
use super::introspection::{loader_state, loader_stats};
use super::lifecycle::loader_free;
use super::result::loader_result;
use super::types::{
    loader_acquisition, loader_answer, loader_counts, loader_failure, loader_read, loader_snapshot,
};
use parking_lot::Mutex;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Items in the source; a cursor is the next item's index as 8 big-endian bytes.
const SOURCE_LEN: u64 = 100;

/// When the host's `issue` panics, if at all.
#[derive(Clone, Copy, PartialEq)]
enum Panic {
    Never,
    /// Before it took the read: the host never saw it.
    BeforeTaking,
    /// After it queued the read: the host answers it later anyway.
    AfterTaking,
}

/// A host answering reads from a queue, on the test's thread.
struct Host {
    panic_next: Mutex<Panic>,
    /// (read_id, cursor index, limit) of each read taken and not answered.
    reads: Mutex<Vec<(u64, u64, u32)>>,
    released: Mutex<Vec<loader_acquisition>>,
}

unsafe extern "C-unwind" fn on_issue(userdata: *mut c_void, read: *const loader_read) {
    // SAFETY: `userdata` is the `Host` the test passed, alive until after `loader_free`; `read`
    // is valid during this call.
    let (host, read) = unsafe { (&*userdata.cast::<Host>(), &*read) };
    let at = if read.cursor_len == 0 {
        0
    } else {
        // SAFETY: the loader's cursor bytes, valid during this call; the test's are 8 long.
        let bytes = unsafe { std::slice::from_raw_parts(read.cursor, read.cursor_len) };
        u64::from_be_bytes(bytes.try_into().expect("8-byte cursor"))
    };
    let mode = std::mem::replace(&mut *host.panic_next.lock(), Panic::Never);
    if mode == Panic::BeforeTaking {
        panic!("the host could not take read {}", read.read_id);
    }
    host.reads.lock().push((read.read_id, at, read.limit));
    if mode == Panic::AfterTaking {
        panic!("the host took read {} and then failed", read.read_id);
    }
}

unsafe extern "C-unwind" fn on_release(userdata: *mut c_void, acquisition: loader_acquisition) {
    // SAFETY: as in `on_issue`.
    let host = unsafe { &*userdata.cast::<Host>() };
    host.released.lock().push(acquisition);
}

struct Fixture {
    host: Box<Host>,
    handle: loader_handle,
    next_acquisition: loader_acquisition,
}

impl Fixture {
    fn new() -> Fixture {
        let host = Box::new(Host {
            panic_next: Mutex::new(Panic::Never),
            reads: Mutex::new(Vec::new()),
            released: Mutex::new(Vec::new()),
        });
        let config = super::test_host::config(|c| {
            c.page_size = 10;
            c.prefetch_distance = 0;
        });
        let userdata = std::ptr::from_ref::<Host>(&host).cast_mut().cast();
        // `userdata` outlives the loader (freed in `drop`).
        let handle = super::test_host::new_loader(&config, userdata, on_issue, on_release);
        assert_eq!(loader_tick(handle, 0), loader_result::Ok);
        Fixture {
            host,
            handle,
            next_acquisition: 1,
        }
    }

    fn state(&self) -> loader_snapshot {
        let mut s = MaybeUninit::<loader_snapshot>::zeroed();
        // SAFETY: `s` is valid for writes, and its first field is `struct_size`, a `u32`
        // (`src/ffi/sized.rs` checks the layout): the host sets it before the call.
        unsafe {
            s.as_mut_ptr()
                .cast::<u32>()
                .write(std::mem::size_of::<loader_snapshot>() as u32)
        };
        // SAFETY: `s` is valid for a write.
        let r = unsafe { loader_state(self.handle, s.as_mut_ptr()) };
        assert_eq!(r, loader_result::Ok);
        // SAFETY: written by `loader_state`.
        unsafe { s.assume_init() }
    }

    fn stats(&self) -> loader_counts {
        let mut c = MaybeUninit::<loader_counts>::zeroed();
        // SAFETY: `c` is valid for writes, and its first field is `struct_size`, a `u32`
        // (`src/ffi/sized.rs` checks the layout): the host sets it before the call.
        unsafe {
            c.as_mut_ptr()
                .cast::<u32>()
                .write(std::mem::size_of::<loader_counts>() as u32)
        };
        // SAFETY: `c` is valid for a write.
        let r = unsafe { loader_stats(self.handle, c.as_mut_ptr()) };
        assert_eq!(r, loader_result::Ok);
        // SAFETY: written by `loader_stats`.
        unsafe { c.assume_init() }
    }

    fn deadline(&self) -> Option<u64> {
        let (mut armed, mut at) = (false, 0);
        // SAFETY: both pointers are valid for writes.
        let r = unsafe { loader_next_deadline(self.handle, &mut armed, &mut at) };
        assert_eq!(r, loader_result::Ok);
        armed.then_some(at)
    }

    /// Answers read `(read_id, at, limit)` from the source; returns the answer's class.
    fn answer(&mut self, (read_id, at, limit): (u64, u64, u32)) -> loader_answer {
        let end = (at + u64::from(limit)).min(SOURCE_LEN);
        let next = end.to_be_bytes();
        let acquisition = self.next_acquisition;
        self.next_acquisition += 1;
        let count = u32::try_from(end - at).expect("a page");
        let mut answer = loader_answer::Current;
        // SAFETY: `next` is valid for its 8 bytes; `answer` for a write.
        let r = unsafe {
            loader_settle(
                self.handle,
                read_id,
                acquisition,
                count,
                next.as_ptr(),
                next.len(),
                end == SOURCE_LEN,
                &mut answer,
            )
        };
        assert_eq!(r, loader_result::Ok);
        answer
    }

    /// Answers every read taken, and those they lead to, until none is left.
    fn drain(&mut self) {
        loop {
            let next = {
                let mut reads = self.host.reads.lock();
                (!reads.is_empty()).then(|| reads.remove(0))
            };
            let Some(read) = next else { break };
            assert_eq!(self.answer(read), loader_answer::Current);
        }
    }

    /// Ticks at the backoff deadline (the retry's read comes through `issue`), then answers.
    fn retry_at_deadline(&mut self) {
        let at = self.deadline().expect("the failure armed a backoff retry");
        assert_eq!(loader_tick(self.handle, at), loader_result::Ok);
        self.drain();
    }

    /// Moves the window with the host's next `issue` panicking as `mode` says; the panic must
    /// reach the caller.
    fn set_window_panicking(&self, mode: Panic, len: u64) {
        *self.host.panic_next.lock() = mode;
        let handle = self.handle;
        let r = catch_unwind(AssertUnwindSafe(|| loader_set_window(handle, 0, len)));
        assert!(r.is_err(), "the issue callback's panic reaches the caller");
        assert!(*self.host.panic_next.lock() == Panic::Never, "issue ran");
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        assert_eq!(loader_free(self.handle), loader_result::Ok);
        // Every acquisition accepted was released exactly once.
        let mut released = self.host.released.lock().clone();
        released.sort_unstable();
        let accepted: Vec<loader_acquisition> = (1..self.next_acquisition).collect();
        assert_eq!(released, accepted);
    }
}

#[test]
fn a_read_whose_issue_panicked_is_failed_and_the_backoff_retry_recovers_it() {
    let mut f = Fixture::new();
    f.set_window_panicking(Panic::BeforeTaking, 30);

    // Not outstanding: an own failure, with a backoff retry armed.
    let s = f.state();
    assert_eq!(s.outstanding_reads, 0);
    assert_eq!(s.failure, loader_failure::Own);
    assert!(!s.quiescent);
    assert_eq!(f.stats().failed_own, 1);

    f.retry_at_deadline();
    let s = f.state();
    assert!(s.quiescent, "the retry recovered the read");
    assert_eq!((s.covered_start, s.covered_end), (0, 30));
}

#[test]
fn a_read_taken_before_its_issue_panicked_is_answered_stale_later() {
    let mut f = Fixture::new();
    f.set_window_panicking(Panic::AfterTaking, 30);
    assert_eq!(f.state().outstanding_reads, 0);

    // The host answers the read it took anyway: stale, its acquisition released at once.
    let taken = f.host.reads.lock().remove(0);
    let released = f.host.released.lock().len();
    assert_eq!(f.answer(taken), loader_answer::Stale);
    assert_eq!(f.host.released.lock().len(), released + 1);
    assert_eq!(f.stats().late_answers, 1);

    f.retry_at_deadline();
    let s = f.state();
    assert!(s.quiescent, "the retry recovered the read");
    assert_eq!((s.covered_start, s.covered_end), (0, 30));
}

#[test]
fn a_panic_after_the_first_page_leaves_the_view_and_recovers() {
    let mut f = Fixture::new();
    assert_eq!(loader_set_window(f.handle, 0, 10), loader_result::Ok);
    f.drain();
    assert!(f.state().quiescent);

    // The window grows; the finite read for it cannot be taken.
    f.set_window_panicking(Panic::BeforeTaking, 30);
    let s = f.state();
    assert_eq!(s.outstanding_reads, 0);
    assert_eq!(s.covered_end, 10, "the page held is kept");

    f.retry_at_deadline();
    let s = f.state();
    assert!(s.quiescent);
    assert_eq!((s.covered_start, s.covered_end), (0, 30));
}
